//! Mining protocol messages (spec §3.2): opening and managing channels, distributing jobs
//! and collecting shares.
//!
//! | msg_type | message | channel_msg |
//! |---|---|---|
//! | 0x10 | [`OpenStandardMiningChannel`] | no |
//! | 0x11 | [`OpenStandardMiningChannelSuccess`] | no |
//! | 0x12 | [`OpenMiningChannelError`] | no |
//! | 0x13 | [`OpenExtendedMiningChannel`] | no |
//! | 0x14 | [`OpenExtendedMiningChannelSuccess`] | no |
//! | 0x15 | [`NewMiningJob`] | yes |
//! | 0x16 | [`UpdateChannel`] | yes |
//! | 0x17 | [`UpdateChannelError`] | yes |
//! | 0x18 | [`CloseChannel`] | yes |
//! | 0x19 | [`SetExtranoncePrefix`] | yes |
//! | 0x1a | [`SubmitSharesStandard`] | yes |
//! | 0x1b | [`SubmitSharesExtended`] | yes |
//! | 0x1c | [`SubmitSharesSuccess`] | yes |
//! | 0x1d | [`SubmitSharesError`] | yes |
//! | 0x1e | *reserved: no message* | |
//! | 0x1f | [`NewExtendedMiningJob`] | yes |
//! | 0x20 | [`SetNewPrevHash`] | yes |
//! | 0x21 | [`SetTarget`] | yes |
//! | 0x22 | [`SetCustomMiningJob`] | yes |
//! | 0x23 | [`SetCustomMiningJobSuccess`] | yes |
//! | 0x24 | [`SetCustomMiningJobError`] | yes |
//! | 0x25 | [`SetGroupChannel`] | no |
//!
//! Every channel message starts with its `channel_id` (the first four payload bytes, spec
//! §2.2). [`MiningMessage`] dispatches among them.
//!
//! ```
//! use sv2c_binary::messages::mining::{MiningMessage, NewExtendedMiningJobRef};
//! use sv2c_binary::{Decode, MessageSet};
//!
//! // The spec's NewExtendedMiningJob example (SV2-WIRE §3.2), payload only.
//! let mut payload = vec![7, 0, 0, 0, 9, 0, 0, 0, 0x00, 0, 0, 0, 0x20, 0x01, 0x01];
//! payload.extend([0x11; 32]);
//! payload.extend([3, 0, 1, 2, 3, 2, 0, 4, 5]);
//! let job = NewExtendedMiningJobRef::decode_ref(&payload).unwrap();
//! assert_eq!((job.channel_id, job.job_id, job.min_ntime), (7, 9, None));
//! assert!(job.version_rolling_allowed);
//! assert_eq!(job.merkle_path.as_arrays(), [[0x11; 32]]);
//! assert_eq!(job.coinbase_tx_prefix.as_bytes(), [1, 2, 3]);
//!
//! let msg = MiningMessage::decode_message(0x8000, 0x1f, &payload).unwrap();
//! assert_eq!(msg.name(), "NewExtendedMiningJob");
//! ```

mod channels;
mod custom_job;
mod jobs;
mod shares;

pub use channels::*;
pub use custom_job::*;
pub use jobs::*;
pub use shares::*;

pub use super::catalog::{MiningMessage, MiningMessageRef};
