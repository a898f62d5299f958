//! Message identity and dispatch: the header constants of a message ([`MessageType`]),
//! what a codec needs to put a value in a frame ([`Frameable`]), and sets of messages a
//! frame payload is decoded into ([`MessageSet`], [`DispatchError`]).
//!
//! These sit one layer above [`wire`](crate::wire), which only knows how values are
//! encoded and decoded. The catalog of the protocol's messages, and the enums that
//! implement these traits for them, are in [`messages`](crate::messages)
//! ([`CATALOG`](crate::messages::CATALOG), [`lookup`](crate::messages::lookup)).

use bytes::BufMut;

use crate::error::DecodeError;
use crate::header::{Header, PayloadTooLarge};
use crate::wire::{Encode, Wire, from_bytes_ref};

// ===== messages =====

/// The header constants of a message, known at compile time (spec §2.1, §3.0).
///
/// Implemented by every derived message, owned and borrowed, by
/// `#[sv2(msg_type = …, extension_type = …, channel_msg)]`.
pub trait MessageType {
    /// The extension that defined the message, **without** the channel bit (0 for core).
    const EXTENSION_TYPE: u16;
    /// The message id within its extension.
    const MSG_TYPE: u8;
    /// Whether the header's `channel_msg` bit (0x8000) is set; the payload then starts
    /// with a `U32` channel id.
    const CHANNEL_MSG: bool;
    /// The message name, e.g. `"SubmitSharesStandard"`.
    const NAME: &'static str;

    /// The header's `extension_type` field: the extension id with the channel bit applied.
    fn wire_extension_type() -> u16 {
        Self::EXTENSION_TYPE | if Self::CHANNEL_MSG { CHANNEL_BIT } else { 0 }
    }
}

pub use crate::header::CHANNEL_BIT;

// Beside `Frameable` (not in `header`, which the traits here use): the header of a value
// that says its own identity.
impl Header {
    /// The header for a message: its extension type, channel bit and msg type, with
    /// `msg_length` = its encoded length.
    ///
    /// # Errors
    /// [`PayloadTooLarge`] if the message encodes to more than 2^24 − 1 bytes.
    pub fn for_message<M: Frameable + ?Sized>(msg: &M) -> Result<Self, PayloadTooLarge> {
        Self::new(msg.wire_extension_type(), msg.msg_type(), msg.encoded_len())
    }
}

/// An owned message type: a [`Wire`] value with header constants ([`MessageType`]).
///
/// Implemented for every such type; use it as a bound. (Not to be confused with
/// [`messages::Message`](crate::messages::Message), the enum of every message.)
pub trait OwnedMessage: Wire + MessageType {}
impl<T: Wire + MessageType> OwnedMessage for T {}

// ===== message sets =====

/// Something that can be put in a frame: it knows its header fields and encodes its
/// payload. Every derived message (owned or borrowed) is one, and so are the dispatch
/// enums and references to any of them.
pub trait Frameable: Encode {
    /// The header's `extension_type`, **with** the channel bit (0x8000) when it applies.
    fn wire_extension_type(&self) -> u16;
    /// The header's `msg_type`.
    fn msg_type(&self) -> u8;

    /// Writes the frame: computes the header, hands it to `put_header` (which checks it
    /// against a limit, reserves room and writes it), then encodes the payload after it.
    ///
    /// What [`encode_frame_into`](crate::messages::encode_frame_into) and the codecs call.
    /// The message enums override it with one `match` whose arms are this body for the
    /// variant's type (a constant header for a fixed-size message).
    ///
    /// # Errors
    /// [`PayloadTooLarge`] (converted into `E`) if the payload is longer than
    /// [`MAX_PAYLOAD_LEN`](crate::MAX_PAYLOAD_LEN), or what `put_header` returns; nothing
    /// is written after an error of either.
    #[inline]
    fn put_frame<B, E, F>(&self, buf: &mut B, put_header: F) -> Result<(), E>
    where
        B: BufMut + ?Sized,
        E: From<PayloadTooLarge>,
        F: FnOnce(Header, &mut B) -> Result<(), E>,
    {
        let header = Header::new(
            self.wire_extension_type(),
            self.msg_type(),
            self.encoded_len(),
        )?;
        put_header(header, buf)?;
        self.encode(buf);
        Ok(())
    }
}

impl<T: Frameable + ?Sized> Frameable for &T {
    #[inline]
    fn wire_extension_type(&self) -> u16 {
        (**self).wire_extension_type()
    }
    #[inline]
    fn msg_type(&self) -> u8 {
        (**self).msg_type()
    }
    #[inline]
    fn put_frame<B, E, F>(&self, buf: &mut B, put_header: F) -> Result<(), E>
    where
        B: BufMut + ?Sized,
        E: From<PayloadTooLarge>,
        F: FnOnce(Header, &mut B) -> Result<(), E>,
    {
        (**self).put_frame(buf, put_header)
    }
}

/// Writes one message's frame ([`Frameable::put_frame`]), kept out of line. What the
/// `put_frame` of a message set calls in each arm of its `match`: the `match` is then a
/// jump table of tail calls, and each message's encoder saves only the registers it uses
/// (docs/adr/0014-generated-codecs.md). Public for the derive, hidden from the docs.
#[doc(hidden)]
#[inline(never)]
pub fn put_variant_frame<T, B, E, F>(m: &T, buf: &mut B, put_header: F) -> Result<(), E>
where
    T: Frameable + ?Sized,
    B: BufMut + ?Sized,
    E: From<PayloadTooLarge>,
    F: FnOnce(Header, &mut B) -> Result<(), E>,
{
    m.put_frame(buf, put_header)
}

/// Decoding a frame's payload into one of a set of messages failed.
#[derive(Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DispatchError {
    /// No message of the set has this `(extension_id, msg_type)`: the header's
    /// `extension_type` without the channel bit, as [`Header::extension_id`].
    #[error("unknown message: extension id {extension_id:#06x}, msg_type {msg_type:#04x}")]
    UnknownMessage {
        /// The extension id (channel bit masked off).
        extension_id: u16,
        /// The message id.
        msg_type: u8,
    },
    /// The message is known but its payload does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}

/// Ids in hex, as in the `Display` text and [`Header`]'s `Debug`.
impl core::fmt::Debug for DispatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            DispatchError::UnknownMessage {
                extension_id,
                msg_type,
            } => f
                .debug_struct("UnknownMessage")
                .field("extension_id", &format_args!("{extension_id:#06x}"))
                .field("msg_type", &format_args!("{msg_type:#04x}"))
                .finish(),
            DispatchError::Decode(e) => f.debug_tuple("Decode").field(e).finish(),
        }
    }
}

/// A set of messages a codec can decode frames into: the protocol's dispatch enums, or a
/// single derived message type (blanket implementation).
///
/// `extension_type` arguments are the header field as received; implementations mask
/// the channel bit off before dispatching (spec §2.4).
pub trait MessageSet: Frameable + Sized + 'static {
    /// The borrowed form, pointing into the payload.
    type Ref<'a>: Frameable;

    /// Every `(extension_type, msg_type)` the set decodes (extension id without the
    /// channel bit). `#[derive(MessageSet)]` checks at compile time that its variants'
    /// lists do not overlap.
    const IDS: &'static [(u16, u8)];

    /// The message names of [`IDS`](Self::IDS), in the same order, for diagnostics (the
    /// derive's error for an id claimed twice names both messages). Empty when the set does
    /// not list them (the default).
    const NAMES: &'static [&'static str] = &[];

    /// Decodes an owned message from a frame payload (trailing bytes are allowed; they may
    /// be TLVs).
    ///
    /// # Errors
    /// [`DispatchError::UnknownMessage`] if the set has no such message, otherwise the
    /// payload's [`DecodeError`].
    fn decode_message(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self, DispatchError>;

    /// Decodes the borrowed form from a frame payload.
    ///
    /// # Errors
    /// As [`decode_message`](MessageSet::decode_message).
    fn decode_message_ref(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self::Ref<'_>, DispatchError>;

    /// [`decode_message`](MessageSet::decode_message) with the result handed to `ok` or
    /// `err`, whose value is returned: a codec that returns its own type (such as
    /// `Result<Option<Self>, CodecError>`) gets the message built in its return slot.
    ///
    /// `ok` is `Fn` because a set may call it from either path:
    /// [`MessageOrRaw`](crate::messages::MessageOrRaw) hands an unknown frame to it as
    /// `Raw` from its inner set's error path.
    ///
    /// The message enums override it so that each variant's decoder calls `ok` itself,
    /// out of line, and the value is written once, where the caller returns it, instead
    /// of moved into a differently shaped result (ADR 0004).
    #[doc(hidden)]
    #[inline]
    fn decode_message_with<O>(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
        ok: impl Fn(Self) -> O,
        err: impl FnOnce(DispatchError) -> O,
    ) -> O {
        match Self::decode_message(extension_type, msg_type, payload) {
            Ok(m) => ok(m),
            Err(e) => err(e),
        }
    }

    /// [`decode_message_ref`](MessageSet::decode_message_ref) with the result handed to
    /// `ok` or `err`, as [`decode_message_with`](MessageSet::decode_message_with) does for
    /// the owned form: the message enums override it so that each variant's borrowed
    /// decoder calls `ok` itself, and [`MessageOrRaw`](crate::messages::MessageOrRaw)'s
    /// borrowed decode uses it to build `Known` where it returns it.
    #[doc(hidden)]
    #[inline]
    fn decode_message_ref_with<'a, O>(
        extension_type: u16,
        msg_type: u8,
        payload: &'a [u8],
        ok: impl Fn(Self::Ref<'a>) -> O,
        err: impl FnOnce(DispatchError) -> O,
    ) -> O {
        match Self::decode_message_ref(extension_type, msg_type, payload) {
            Ok(m) => ok(m),
            Err(e) => err(e),
        }
    }
}

impl<T: OwnedMessage + Frameable> MessageSet for T
where
    for<'a> T::Ref<'a>: Frameable,
{
    type Ref<'a> = <T as Wire>::Ref<'a>;

    const IDS: &'static [(u16, u8)] = &[(T::EXTENSION_TYPE, T::MSG_TYPE)];
    const NAMES: &'static [&'static str] = &[T::NAME];

    fn decode_message(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self, DispatchError> {
        check_header::<T>(extension_type, msg_type)?;
        Ok(T::decode_owned(payload)?)
    }

    fn decode_message_ref(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self::Ref<'_>, DispatchError> {
        check_header::<T>(extension_type, msg_type)?;
        Ok(from_bytes_ref(payload)?)
    }
}

fn check_header<T: MessageType>(extension_type: u16, msg_type: u8) -> Result<(), DispatchError> {
    let ext = extension_type & !CHANNEL_BIT;
    if ext == T::EXTENSION_TYPE && msg_type == T::MSG_TYPE {
        Ok(())
    } else {
        Err(DispatchError::UnknownMessage {
            extension_id: ext,
            msg_type,
        })
    }
}
