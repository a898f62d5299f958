//! Template Distribution protocol messages (spec §3.4): a template provider (e.g. a
//! Bitcoin node) sends block templates and new previous hashes; the client sends back
//! constraints and solutions. None of them is a channel message.
//!
//! | msg_type | message | direction |
//! |---|---|---|
//! | 0x70 | [`CoinbaseOutputConstraints`] | client → server |
//! | 0x71 | [`NewTemplate`] | server → client |
//! | 0x72 | [`SetNewPrevHash`] | server → client |
//! | 0x73 | [`RequestTransactionData`] | client → server |
//! | 0x74 | [`RequestTransactionDataSuccess`] | server → client |
//! | 0x75 | [`RequestTransactionDataError`] | server → client |
//! | 0x76 | [`SubmitSolution`] | client → server |
//!
//! This module's [`SetNewPrevHash`] is re-exported from [`messages`](crate::messages) as
//! [`SetNewPrevHashTdp`](crate::messages::SetNewPrevHashTdp), since the Mining protocol has
//! a message of the same name.
//!
//! ```
//! use sv2c_binary::messages::template_distribution::{RequestTransactionData, TemplateDistributionMessage};
//! use sv2c_binary::MessageSet;
//!
//! let payload = 42u64.to_le_bytes();
//! let msg = TemplateDistributionMessage::decode_message(0, 0x73, &payload).unwrap();
//! assert_eq!(msg, RequestTransactionData { template_id: 42 }.into());
//! ```

// The definitions sit below the catalog, which builds this protocol's enum from them.
mod defs;

pub use super::catalog::{TemplateDistributionMessage, TemplateDistributionMessageRef};
pub use defs::*;
