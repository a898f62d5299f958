//! Stratum V2 data types, the [`Encode`]/[`Decode`] traits, and the derive that turns one
//! message definition into an owned type, its borrowed twin and their codecs.
//!
//! Owned messages are the default: plain values with no lifetime that pin no buffer.
//! Decoding one costs **no allocation** when every variable-length value in it is at most
//! [`SharedBytes::INLINE_CAP`] (32) bytes long — such values are stored inline — and
//! **exactly one** otherwise (the consumed bytes are copied once, and every longer value is
//! a range of that copy). Borrowed `Ref` twins are the opt-in: they decode with no allocation and no
//! copy of variable-length data, and point into the input for as long as they live.
//!
//! ```
//! use sv2c_binary::{Decode, Encode, Wire, WireRef, Str0255, Seq0255, U256, B032};
//!
//! /// A message of our own, in wire order.
//! #[derive(Debug, Clone, PartialEq, Wire)]
//! #[sv2(extension_type = 0x4001, msg_type = 0x01, channel_msg)]
//! pub struct WorkerReport {
//!     pub channel_id: u32,
//!     pub worker: Str0255,
//!     pub best_share: U256,
//!     pub path: Seq0255<U256>,
//!     pub tag: B032,
//! }
//!
//! let msg = WorkerReport {
//!     channel_id: 7,
//!     worker: Str0255::try_from("rig-01").unwrap(),
//!     best_share: U256([0xab; 32]),
//!     path: Seq0255::from_slice(&[U256([1; 32])]).unwrap(),
//!     tag: B032::try_from(&b"x"[..]).unwrap(),
//! };
//! let bytes = msg.encode_to_vec();
//! assert_eq!(bytes.len(), msg.encoded_len());
//!
//! // Borrowed: zero-copy view into `bytes`.
//! let view = WorkerReportRef::decode_ref(&bytes).unwrap();
//! assert_eq!(view.worker.as_str(), Ok("rig-01"));
//!
//! // Owned: no lifetime, and no allocation here (every variable-length value is short
//! // enough to be stored inline).
//! let owned = WorkerReport::decode_owned(&bytes).unwrap();
//! assert_eq!(owned, msg);
//! assert_eq!(view.to_owned_value(), msg);
//!
//! use sv2c_binary::MessageType;
//! assert_eq!(WorkerReport::wire_extension_type(), 0xc001); // channel bit set
//! ```
//!
//! # Crate features
//! * `std` (default): `std::error::Error` for the error types. Without it the crate is
//!   `no_std` + `alloc`.
//! * `serde` (default): `Serialize`/`Deserialize` for the data types and every owned
//!   message, with the JSON mapping of the golden vectors (see
//!   [`messages`](crate::messages#json-feature-serde-on-by-default)); needs only `alloc`.
//!
//! # Layout
//! * [`messages`]: all 44 messages of the protocol (spec §3), each with its borrowed
//!   twin, and the dispatch enums ([`messages::Message`], [`messages::MessageRef`]) that
//!   decode a frame payload by `(extension_type, msg_type)`.
//! * [`tlv`]: TLV tails after a message's last field (spec §3.6), and the extension
//!   0x0002 `user_identity` helper.
//! * [`types`]: every Sv2 data type (spec §1), owned and borrowed.
//! * [`wire`]: how values are encoded and decoded — [`Encode`], [`Decode`], [`Wire`],
//!   [`WireRef`], the [`Reader`] cursor and the `from_bytes*` helpers.
//! * [`dispatch`]: message identity, one layer up — [`MessageType`] (header constants),
//!   [`Frameable`] (what a codec needs to frame a value), [`MessageSet`] and
//!   [`DispatchError`] (decoding a payload into one of a set of messages).
//!
//! Everything in [`wire`] and [`dispatch`] is re-exported at the crate root.
//! * [`DecodeError`]: what failed, at which byte offset, in which field.
//! * [`derive@Wire`]: the derive (see its docs for the attributes).
//!
//! Modules depend on those below them only, never the other way (checked by
//! `scripts/module_cycles.py`): the primitives (errors, the frame [`Header`],
//! [`SharedBytes`] and hex formatting) at the bottom; then the owned storage that decoded
//! values share, the [`wire`] traits, the data [`types`] (with [`Protocol`]); then
//! [`dispatch`] and [`tlv`]; then the message definitions; then the message catalog and
//! its enums, which the protocol modules of [`messages`] re-export.

#![cfg_attr(not(feature = "std"), no_std)]
#![deny(unsafe_code)]
#![deny(rustdoc::broken_intra_doc_links)]
#![doc(test(attr(deny(warnings))))]

extern crate alloc;
// Lets the derive's absolute paths (`::sv2c_binary::…`) resolve inside this crate too.
#[allow(unused_extern_crates)]
extern crate self as sv2c_binary;

#[cfg(feature = "arbitrary")]
mod arbitrary_impls;
mod backing;
pub mod dispatch;
mod error;
mod header;
pub mod messages;
#[cfg(feature = "serde")]
mod serde_impls;
mod shared;
// The crate's only `unsafe` code: a decoded message moved to its caller in whole 16-byte
// stores, and a short value written into the buffer's spare capacity, then committed with
// `BufMut::advance_mut`; tested under Miri.
#[allow(unsafe_code)]
mod raw_copy;
pub mod tlv;
pub mod types;
pub mod wire;

pub use dispatch::{CHANNEL_BIT, DispatchError, Frameable, MessageSet, MessageType, OwnedMessage};
pub use error::{BufferTooSmall, DecodeError, DecodeErrorKind, LengthError};
pub use header::{HEADER_LEN, Header, MAX_PAYLOAD_LEN, PayloadTooLarge};
pub use shared::SharedBytes;
pub use types::*;
pub use wire::{
    Decode, Encode, Reader, Wire, WireRef, from_bytes, from_bytes_ref, from_bytes_ref_with_rest,
};

/// Derives [`Wire`] (owned form, `Encode`, the borrowed twin `NameRef<'a>` with `Decode`,
/// and conversions both ways) for a struct written in wire order.
///
/// # Attributes
/// On the struct, `#[sv2(...)]` with:
/// * `msg_type = N` (0..=255): makes it a message ([`MessageType`] constants).
/// * `extension_type = N` (0..=0x7FFF, default 0): the defining extension.
/// * `channel_msg`: sets the header's channel bit; the first field must be
///   `channel_id: u32` (spec §2.2).
/// * `name = "..."`: the message name (default: the struct name).
/// * `crate = "path"`: where this crate is, if not `::sv2c_binary`.
///
/// On a field, `#[sv2(borrow)]` (fields of type [`U256`], [`PubKey`], [`Signature`],
/// [`Mac`] or [`B032`] only): the borrowed twin holds a view into the input instead of a
/// copy of the bytes, `&'a [u8; N]` for the arrays and [`B032Ref<'a>`](B032Ref) for a
/// `B032`. The owned form and the wire format are unchanged. Use it when the copy costs:
/// a borrowed message enum is as large as its largest variant and every borrowed decode
/// returns the whole enum (`SetCustomMiningJob::prev_hash`), and a `B032` is copied with
/// a `memset` and a `memcpy` (`SetExtranoncePrefix::extranonce_prefix`).
///
/// ```
/// use sv2c_binary::{Decode, U256, Wire};
///
/// #[derive(Debug, Clone, PartialEq, Wire)]
/// #[sv2(extension_type = 0x4a11, msg_type = 0x03)]
/// pub struct BlockFound {
///     pub height: u32,
///     #[sv2(borrow)]
///     pub hash: U256,
/// }
///
/// let bytes = [[7, 0, 0, 0].as_slice(), &[0xab; 32]].concat();
/// let view = BlockFoundRef::decode_ref(&bytes).unwrap();
/// let hash: &[u8; 32] = view.hash; // points into `bytes`
/// assert_eq!(hash, &[0xab; 32]);
/// assert_eq!(BlockFound::decode_owned(&bytes).unwrap().hash, U256([0xab; 32]));
/// ```
///
/// # What it generates
/// * `pub struct NameRef<'a>`: the same fields, each of its type's borrowed form
///   `<T as Wire>::Ref<'a>` (`Str0255` → `Str0255Ref<'a>`, `Seq064K<T>` →
///   `Seq064KRef<'a, T>`, a type alias or a type from another crate → its own `Ref`),
///   with `Debug`, `Clone`, `Copy` and `PartialEq` wherever every field's borrowed form
///   has them.
/// * [`Encode`] for both, [`Decode`] for the borrowed form, [`Wire`]/[`WireRef`], and for
///   a message [`MessageType`] and [`Frameable`] for both.
///
/// No inherent methods: decode with [`Wire::decode_owned`] (owned) or
/// [`Decode::decode_ref`] (borrowed), convert with [`Wire::to_ref`] and
/// [`WireRef::to_owned_value`] (`use sv2c::prelude::*` brings the traits into scope).
///
/// # How field types are read
/// Field types are used through the traits, so any [`Wire`] type works, whatever it is
/// called. Two things are taken from how a field type is *spelled* (bare, or through
/// `sv2c_binary::` / `sv2c::`), because the traits cannot give them, and each is checked
/// by the compiler:
/// * When every field type is spelled as one of this crate's fixed-size types (`u8`,
///   `u16`, `u32`, `u64`, `f32`, `bool`, [`U24`], [`U256`], [`PubKey`], [`Signature`],
///   [`Mac`], [`B032`], [`Protocol`], or an `Option` of one), `NameRef<'a>` is a type
///   alias of `Name` itself (decoding it borrows nothing): that must be decided before
///   types are resolved.
/// * A field spelled as one of this crate's types gets that type's borrowed twin by
///   name, which keeps `NameRef<'a>` covariant in `'a` (a view can be passed where a
///   shorter-lived one is expected). A field read through `<T as Wire>::Ref<'a>` makes
///   `NameRef` invariant in `'a`, because the compiler cannot see through the projection.
///
/// A type of your own that only shares a name with one of this crate's types is a compile
/// error saying so, at the field; written as a path (`self::U256`) or through an alias
/// with another name, it is read through its `Wire` impl like any other type.
///
/// # Errors
/// Every mistake in the input is reported at once, and the derive still emits stub impls
/// of the traits, so code using the type does not add errors of its own.
pub use sv2c_derive::Wire;

/// Derives [`MessageSet`] for an enum whose variants each hold one message set (a dispatch
/// enum such as [`messages::Message`], or another derived set) or one derived message:
/// one connection then carries all of them.
///
/// Generated: the borrowed enum `NameRef<'a>` (each variant holding its set's `Ref`, with
/// `Debug`/`Clone`/`PartialEq` where those have them), [`Encode`] and [`Frameable`] for
/// both, `From<Variant type>`, and [`MessageSet`] (dispatch tries the variants in order;
/// `IDS` is the concatenation of theirs). A message id decoded by two variants is a
/// **compile error** (a const assertion naming the two variants). Attribute:
/// `#[sv2(crate = "path")]` if this crate is not reachable as `::sv2c_binary` (through the
/// `sv2c` facade it is not needed).
///
/// ```
/// use sv2c_binary::messages::{Message, SetupConnectionSuccess};
/// use sv2c_binary::{Frameable, MessageSet, Str0255, Wire};
///
/// #[derive(Debug, Clone, PartialEq, Wire)]
/// #[sv2(extension_type = 0x4a11, msg_type = 0x02)]
/// pub struct WorkerReport {
///     pub worker: Str0255,
///     pub shares: u32,
/// }
///
/// #[derive(Debug, Clone, PartialEq, MessageSet)]
/// pub enum MyProtocol {
///     Std(Message),
///     Report(WorkerReport),
/// }
///
/// let payload = [2, 0, 1, 0, 0, 0];
/// let m = MyProtocol::decode_message(0, 0x01, &payload).unwrap();
/// assert_eq!(m, MyProtocol::Std(Message::SetupConnectionSuccess(
///     SetupConnectionSuccess { used_version: 2, flags: 1 })));
/// let r = MyProtocol::decode_message_ref(0x4a11, 0x02, &[1, b'w', 5, 0, 0, 0]).unwrap();
/// assert!(matches!(r, MyProtocolRef::Report(ref w) if w.shares == 5));
/// assert_eq!(r.wire_extension_type(), 0x4a11);
/// assert!(MyProtocol::IDS.contains(&(0x4a11, 0x02)));
/// ```
pub use sv2c_derive::MessageSet;

mod ids;

#[doc(hidden)]
pub mod __private {
    pub use crate::backing::{Backing, ToOwnedIn};
    pub use crate::dispatch::put_variant_frame;
    pub use crate::ids::{Overlap, Side, ids_concat, ids_len, ids_overlap, names_concat};
    pub use bytes::BufMut;

    use crate::Wire;

    /// A fixed-size wire type that is its own borrowed form. `#[derive(Wire)]` asks for it
    /// on each field when every field type is *spelled* as one of this crate's fixed-size
    /// types, because it then makes `NameRef` an alias of the struct.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not one of sv2c's fixed-size wire types, but is named like one",
        label = "named like a fixed-size sv2c type",
        note = "`#[derive(Wire)]` makes `NameRef` an alias of the struct when every field type is spelled like a fixed-size sv2c type (u8, u16, u32, u64, f32, bool, U24, U256, PubKey, Signature, Mac, B032, Protocol, or an `Option` of one)",
        note = "for a type of your own with such a name, write it as a path (`self::{Self}`) or through an alias with another name: the derive then generates a `NameRef` struct"
    )]
    pub trait FixedWire: for<'a> Wire<Ref<'a> = Self> {}
    macro_rules! fixed_wire {
        ($($t:ty),*) => { $( impl FixedWire for $t {} )* };
    }
    fixed_wire! {
        u8, u16, u32, u64, f32, bool, crate::U24, crate::U256, crate::PubKey, crate::Signature,
        crate::Mac, crate::B032, crate::Protocol
    }
    impl<T: FixedWire> FixedWire for Option<T> {}

    /// Compiles only for a [`FixedWire`] type.
    pub fn fixed_wire<T: FixedWire>() {}

    /// The conversions between one of this crate's types and its borrowed twin `R`,
    /// implemented for exactly those pairs. `#[derive(Wire)]` names the twin of a field
    /// spelled as one of this crate's types directly (so the generated `NameRef` stays
    /// covariant in `'a`) and converts through this trait, so a type of the user's own
    /// that only shares the name fails here, with this message, at the field type.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is named like one of sv2c's wire types, but is not that type",
        label = "not sv2c's type of this name",
        note = "`#[derive(Wire)]` reads a field type spelled like one of sv2c's types (bare, or through `sv2c_binary::` / `sv2c::`) as that type, to name its borrowed twin",
        note = "for a type of your own with this name, write it as a path (`self::{Self}`) or through an alias with another name: it is then read through its `Wire` impl"
    )]
    pub trait Twin<'a, R>: Sized {
        /// [`Wire::to_ref`].
        fn to_twin(&'a self) -> R;
        /// [`ToOwnedIn::to_owned_in`].
        fn from_twin(r: &R, backing: &Backing<'_>) -> Self;
    }
    macro_rules! twin {
        (@one [$($g:tt)*] $t:ty => $r:ty) => {
            impl<'a, $($g)*> Twin<'a, $r> for $t {
                #[inline(always)]
                fn to_twin(&'a self) -> $r {
                    Wire::to_ref(self)
                }
                #[inline(always)]
                fn from_twin(r: &$r, backing: &Backing<'_>) -> Self {
                    ToOwnedIn::to_owned_in(r, backing)
                }
            }
        };
        ($($t:ty => $r:ty),* $(,)?) => { $( twin!(@one [] $t => $r); )* };
    }
    twin!(
        u8 => u8, u16 => u16, u32 => u32, u64 => u64, f32 => f32, bool => bool,
        crate::U24 => crate::U24, crate::U256 => crate::U256, crate::PubKey => crate::PubKey,
        crate::Signature => crate::Signature, crate::Mac => crate::Mac,
        crate::B032 => crate::B032, crate::Protocol => crate::Protocol,
        crate::Str0255 => crate::Str0255Ref<'a>, crate::B0255 => crate::B0255Ref<'a>,
        crate::B064K => crate::B064KRef<'a>, crate::B016M => crate::B016MRef<'a>,
    );
    twin!(@one [T: Wire] crate::Seq0255<T> => crate::Seq0255Ref<'a, T>);
    twin!(@one [T: Wire] crate::Seq064K<T> => crate::Seq064KRef<'a, T>);
    impl<'a, T: Twin<'a, R>, R> Twin<'a, Option<R>> for Option<T> {
        #[inline(always)]
        fn to_twin(&'a self) -> Option<R> {
            self.as_ref().map(T::to_twin)
        }
        #[inline(always)]
        fn from_twin(r: &Option<R>, backing: &Backing<'_>) -> Self {
            r.as_ref().map(|v| T::from_twin(v, backing))
        }
    }

    /// One of this crate's byte arrays, which a field marked `#[sv2(borrow)]` holds in the
    /// borrowed twin as `&'a [u8; N]` (its `Twin` impl converts).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is not one of sv2c's byte arrays, but is named like one",
        label = "`#[sv2(borrow)]` needs sv2c's U256, PubKey, Signature or Mac"
    )]
    pub trait ByteView<const N: usize> {
        /// The wire type's name, for errors.
        const WIRE: &'static str;
    }
    macro_rules! byte_view {
        ($($t:ty => $n:literal, $wire:literal);* $(;)?) => { $(
            impl ByteView<$n> for $t {
                const WIRE: &'static str = $wire;
            }
            impl<'a> Twin<'a, &'a [u8; $n]> for $t {
                #[inline(always)]
                fn to_twin(&'a self) -> &'a [u8; $n] {
                    &self.0
                }
                #[inline(always)]
                fn from_twin(r: &&'a [u8; $n], _: &Backing<'_>) -> Self {
                    Self(**r)
                }
            }
        )* };
    }
    byte_view!(
        crate::U256 => 32, "U256";
        crate::PubKey => 32, "PUBKEY";
        crate::Signature => 64, "SIGNATURE";
        crate::Mac => 16, "MAC";
    );

    impl<'a> Twin<'a, crate::B032Ref<'a>> for crate::B032 {
        #[inline(always)]
        fn to_twin(&'a self) -> crate::B032Ref<'a> {
            crate::B032Ref::from(self)
        }
        #[inline(always)]
        fn from_twin(r: &crate::B032Ref<'a>, backing: &Backing<'_>) -> Self {
            ToOwnedIn::to_owned_in(r, backing)
        }
    }

    /// Decodes a borrowed byte-array field: a reference into the input.
    #[inline(always)]
    pub fn decode_view<'a, T: ByteView<N>, const N: usize>(
        r: &mut crate::Reader<'a>,
    ) -> Result<&'a [u8; N], crate::DecodeError> {
        r.array_ref::<N>(T::WIRE)
    }

    /// Encodes a borrowed byte-array field.
    #[inline(always)]
    pub fn encode_view<B: BufMut + ?Sized, const N: usize>(v: &[u8; N], buf: &mut B) {
        buf.put_slice(v)
    }

    /// The type of a channel message's first field, `channel_id` (spec §2.2).
    #[diagnostic::on_unimplemented(
        message = "a `channel_msg` message's `channel_id` must be a `u32`, not `{Self}`",
        label = "must be `u32`",
        note = "spec §2.2: the first 4 payload bytes of a channel message are its channel id"
    )]
    pub trait ChannelId {}
    impl ChannelId for u32 {}

    /// Compiles only for `u32` (or an alias of it).
    pub fn channel_id<T: ChannelId>() {}

    /// Sum of two fixed lengths (None if either is variable).
    pub const fn add_fixed(a: Option<usize>, b: Option<usize>) -> Option<usize> {
        match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        }
    }
}

/// The crate README's code blocks, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
