//! The Stratum V2 message catalog (spec §3): all 44 messages of the Common, Mining, Job
//! Declaration and Template Distribution protocols and of extension 0x0001 (Extensions
//! Negotiation), and the enums that dispatch among them.
//!
//! Each message is a struct written once with [`derive@Wire`](crate::Wire): the owned
//! form (e.g. [`SubmitSharesExtended`]) and its generated borrowed twin
//! (`SubmitSharesExtendedRef<'a>`, zero-copy; for messages of fixed-size fields only, an
//! alias of the owned type). Field names are those of the reference implementation (and
//! of the golden vectors), which differ from the spec text in five places (e.g.
//! `SetCustomMiningJob.token` for the spec's `mining_job_token`).
//!
//! | module | messages | dispatch enums |
//! |---|---|---|
//! | [`common`] | 5 | [`CommonMessage`], [`CommonMessageRef`] |
//! | [`mining`] | 21 | [`MiningMessage`], [`MiningMessageRef`] |
//! | [`job_declaration`] | 8 | [`JobDeclarationMessage`], [`JobDeclarationMessageRef`] |
//! | [`template_distribution`] | 7 | [`TemplateDistributionMessage`], [`TemplateDistributionMessageRef`] |
//! | [`extensions`] | 3 | [`ExtensionsMessage`], [`ExtensionsMessageRef`] |
//! | all of them | 44 | [`Message`], [`MessageRef`] |
//!
//! Every message type is re-exported here. Both Mining and Template Distribution define a
//! `SetNewPrevHash`: [`SetNewPrevHash`] here is the Mining one, the Template Distribution
//! one is re-exported as [`SetNewPrevHashTdp`] (and [`SetNewPrevHashTdpRef`]).
//!
//! # Dispatch
//! The enums implement [`MessageSet`](crate::MessageSet): they decode a frame's payload
//! from `(extension_type, msg_type, payload)`. The channel bit of `extension_type` is
//! masked off; core messages (extension 0) are selected by `msg_type`, extension messages
//! by both. An unknown message is [`DispatchError::UnknownMessage`](crate::DispatchError)
//! (including the reserved Mining id 0x1e), or, through `decode_or_raw`, a
//! [`RawMessage`] that keeps its bytes so a proxy can forward it. Bytes after a message's
//! last field are never an error: they are its TLV tail ([`crate::tlv`]).
//!
//! # JSON (feature `serde`, on by default)
//! Every owned message implements `Serialize`/`Deserialize` as a JSON object of its fields
//! in wire order, with the mapping of the golden vectors (`tests-data/sv2-vectors.jsonl`):
//!
//! | Sv2 type | JSON |
//! |---|---|
//! | BOOL, U8 … U64, PROTOCOL (`SetupConnection.protocol`) | `true`/`false`, number |
//! | F32 | number (the exact value of the f32); non-finite: `"inf"`, `"-inf"`, `"NaN"` or `"NaN:0x7fc00001"` (other NaN bits) |
//! | U256 (and PUBKEY, SIGNATURE, MAC) | lowercase hex of the bytes in wire order |
//! | B0_32, B0_255, B0_64K, B0_16M | lowercase hex of the content (no length prefix) |
//! | STR0_255 | a JSON string when the bytes are UTF-8; **otherwise `{"hex": "<lowercase hex>"}`** |
//! | SEQ0_255, SEQ0_64K | array of the mapped elements |
//! | OPTION | `null` or the mapped value |
//!
//! The spec requires no encoding for STR0_255, so a non-UTF-8 value decodes fine and its
//! `{"hex": …}` form keeps every byte: both forms are accepted when deserializing, and
//! every value round-trips. Deserializing checks every bound (lengths, counts, hex digits,
//! ranges, unknown fields) and fails with a serde error, never a panic. The dispatch enums
//! serialize their message's fields, and deserialize them by message id with
//! `deserialize_fields` (e.g. `Message::deserialize_fields`). TLV records
//! ([`TlvBuf`](crate::tlv::TlvBuf)) serialize as
//! `{"extension_type": 2, "field_type": 1, "value": "<hex>"}`.
//!
//! # Example
//! ```
//! use sv2c_binary::messages::{frame_parts, encode_frame, Message, MessageRef};
//! use sv2c_binary::MessageSet;
//!
//! // The spec's worked example (SV2-WIRE §2.1): a SubmitSharesStandard frame.
//! let hex = "00801a180000010000000200000003000000efbeadde0000506600000020";
//! let frame: Vec<u8> = (0..hex.len())
//!     .step_by(2)
//!     .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
//!     .collect();
//! let (ext, msg_type, payload) = frame_parts(&frame).unwrap();
//!
//! // Borrowed: no allocation.
//! let MessageRef::SubmitSharesStandard(share) = MessageRef::decode(ext, msg_type, payload).unwrap()
//! else { panic!("not a SubmitSharesStandard") };
//! assert_eq!((share.channel_id, share.sequence_number, share.job_id), (1, 2, 3));
//! assert_eq!((share.nonce, share.ntime, share.version), (0xdead_beef, 0x6650_0000, 0x2000_0000));
//!
//! // Owned, and back into an identical frame.
//! let msg = Message::decode_message(ext, msg_type, payload).unwrap();
//! assert_eq!(msg.name(), "SubmitSharesStandard");
//! assert_eq!(encode_frame(&msg).unwrap(), frame);
//! ```

/// Defines message structs, each with the derives every message has besides its own
/// `#[derive]`: `arbitrary::Arbitrary` (feature `arbitrary`) and serde's `Serialize` and
/// `Deserialize` with unknown fields denied (feature `serde`).
macro_rules! messages {
    ($( $(#[$attr:meta])* pub struct $name:ident $body:tt )*) => {$(
        $(#[$attr])*
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        #[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
        #[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
        pub struct $name $body
    )*};
}

pub mod common;
pub mod extensions;
pub mod job_declaration;
pub mod mining;
pub mod template_distribution;

mod catalog;
mod frame;
mod raw;

pub use common::*;
pub use extensions::*;
pub use job_declaration::*;
pub use mining::*;
pub use template_distribution::*;
// Both protocols define `SetNewPrevHash`: the plain name is the Mining one.
pub use mining::{SetNewPrevHash, SetNewPrevHashRef};
/// The Template Distribution `SetNewPrevHash` (0x72), renamed here because the Mining
/// protocol's `SetNewPrevHash` (0x20) takes the plain name.
pub use template_distribution::SetNewPrevHash as SetNewPrevHashTdp;
/// Borrowed form of [`SetNewPrevHashTdp`] (the Template Distribution `SetNewPrevHash`).
pub use template_distribution::SetNewPrevHashRef as SetNewPrevHashTdpRef;

pub use catalog::{
    CATALOG, CommonMessage, CommonMessageRef, ExtensionsMessage, ExtensionsMessageRef,
    JobDeclarationMessage, JobDeclarationMessageRef, Message, MessageInfo, MessageProtocol,
    MessageRef, MiningMessage, MiningMessageRef, TemplateDistributionMessage,
    TemplateDistributionMessageRef, lookup, lookup_name,
};
pub use frame::{
    HEADER_LEN, MAX_PAYLOAD_LEN, encode_frame, encode_frame_into, frame_parts, split_frame,
};
pub use raw::{MessageOrRaw, RawMessage, RawMessageRef};
