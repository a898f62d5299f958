//! Job Declaration protocol messages (spec §3.3): a miner-side Job Declarator Client (JDC)
//! obtains tokens from the pool's Job Declarator Server (JDS) and declares the jobs it
//! built. None of them is a channel message.
//!
//! | msg_type | message | direction |
//! |---|---|---|
//! | 0x50 | [`AllocateMiningJobToken`] | JDC → JDS |
//! | 0x51 | [`AllocateMiningJobTokenSuccess`] | JDS → JDC |
//! | 0x55 | [`ProvideMissingTransactions`] | JDS → JDC |
//! | 0x56 | [`ProvideMissingTransactionsSuccess`] | JDC → JDS |
//! | 0x57 | [`DeclareMiningJob`] | JDC → JDS |
//! | 0x58 | [`DeclareMiningJobSuccess`] | JDS → JDC |
//! | 0x59 | [`DeclareMiningJobError`] | JDS → JDC |
//! | 0x60 | [`PushSolution`] | JDC → JDS |
//!
//! ```
//! use sv2c_binary::messages::job_declaration::{ProvideMissingTransactionsSuccess, JobDeclarationMessage};
//! use sv2c_binary::{B016M, Encode, MessageSet, Seq064K};
//!
//! let msg = ProvideMissingTransactionsSuccess {
//!     request_id: 5,
//!     transaction_list: Seq064K::from_slice(&[B016M::try_from(vec![0xab; 3]).unwrap()]).unwrap(),
//! };
//! let payload = msg.encode_to_vec();
//! assert_eq!(payload, [5, 0, 0, 0, 1, 0, 3, 0, 0, 0xab, 0xab, 0xab]);
//! let back = JobDeclarationMessage::decode_message(0, 0x56, &payload).unwrap();
//! assert_eq!(back, JobDeclarationMessage::ProvideMissingTransactionsSuccess(msg));
//! ```

// The definitions sit below the catalog, which builds this protocol's enum from them.
mod defs;

pub use super::catalog::{JobDeclarationMessage, JobDeclarationMessageRef};
pub use defs::*;
