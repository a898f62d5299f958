//! Extension 0x0001, Extensions Negotiation (spec §3.5): the client asks which optional
//! extensions the server supports, right after `SetupConnection.Success`. These messages
//! have `extension_type` 0x0001 and are never channel messages; their `request_id` is a
//! **U16**.
//!
//! | msg_type | message | direction |
//! |---|---|---|
//! | 0x00 | [`RequestExtensions`] | client → server |
//! | 0x01 | [`RequestExtensionsSuccess`] | server → client |
//! | 0x02 | [`RequestExtensionsError`] | server → client |
//!
//! Extension 0x0002 (worker-specific hashrate tracking) defines no message, only a TLV
//! field: see [`UserIdentity`](crate::tlv::UserIdentity).
//!
//! ```
//! use sv2c_binary::messages::extensions::{ExtensionsMessage, RequestExtensions};
//! use sv2c_binary::{MessageSet, Seq064K};
//!
//! // The spec's example (SV2-WIRE §3.5): request id 1, asking for extension 0x0002.
//! let msg = ExtensionsMessage::decode_message(0x0001, 0x00, &[1, 0, 1, 0, 2, 0]).unwrap();
//! let want = RequestExtensions { request_id: 1, requested_extensions: Seq064K::from_slice(&[0x0002]).unwrap() };
//! assert_eq!(msg, ExtensionsMessage::RequestExtensions(want));
//! ```

// The definitions sit below the catalog, which builds this protocol's enum from them.
mod defs;

pub use super::catalog::{ExtensionsMessage, ExtensionsMessageRef};
pub use defs::*;
