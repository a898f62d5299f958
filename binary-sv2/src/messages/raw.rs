//! Messages kept as raw bytes: what a proxy forwards without understanding it.

use bytes::BufMut;
use core::fmt;

use crate::shared::SharedBytes;
use crate::{CHANNEL_BIT, DispatchError, Encode, Frameable, Header, MessageSet, PayloadTooLarge};

/// A message this codec does not know (or was not asked to decode), kept as its header
/// fields and payload bytes so that it can be forwarded unchanged (spec §2.4).
///
/// Owned: the payload is a [`SharedBytes`] (cheap to clone). See [`RawMessageRef`] for the
/// borrowed form.
///
/// `extension_type` is the header field as received, channel bit included (as
/// [`Header::wire_extension_type`]); [`extension_id`](Self::extension_id) is it without the
/// bit (as [`Header::extension_id`]). `Debug` shows the ids in hex and the payload's
/// length:
///
/// ```
/// use sv2c_binary::messages::RawMessage;
/// let raw = RawMessage::new(0xc0de, 0x05, &[7, 0, 0, 0]);
/// assert_eq!(
///     format!("{raw:?}"),
///     "RawMessage { extension_type: 0xc0de, extension_id: 0x40de, channel_msg: true, msg_type: 0x05, payload_len: 4 }",
/// );
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RawMessage {
    /// The header's `extension_type` as received, **including** the channel bit.
    pub extension_type: u16,
    /// The header's `msg_type`.
    pub msg_type: u8,
    /// The payload bytes (for a channel message, the first four are the channel id).
    pub payload: SharedBytes,
}

/// Borrowed form of [`RawMessage`]: the payload points into the frame.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawMessageRef<'a> {
    /// The header's `extension_type` as received, **including** the channel bit.
    pub extension_type: u16,
    /// The header's `msg_type`.
    pub msg_type: u8,
    /// The payload bytes.
    pub payload: &'a [u8],
}

impl RawMessage {
    /// A raw message with a copy of `payload`.
    pub fn new(extension_type: u16, msg_type: u8, payload: &[u8]) -> Self {
        RawMessage {
            extension_type,
            msg_type,
            payload: SharedBytes::copy_from_slice(payload),
        }
    }

    /// The borrowed view.
    pub fn as_ref(&self) -> RawMessageRef<'_> {
        RawMessageRef {
            extension_type: self.extension_type,
            msg_type: self.msg_type,
            payload: self.payload.as_slice(),
        }
    }

    /// Whether the `channel_msg` bit is set.
    pub fn channel_msg(&self) -> bool {
        self.as_ref().channel_msg()
    }

    /// The extension id, without the channel bit.
    pub fn extension_id(&self) -> u16 {
        self.as_ref().extension_id()
    }

    /// The channel id (the first four payload bytes) of a channel message; `None` if the
    /// channel bit is clear or the payload is shorter than four bytes.
    pub fn channel_id(&self) -> Option<u32> {
        self.as_ref().channel_id()
    }
}

impl<'a> RawMessageRef<'a> {
    /// A raw message borrowing `payload`.
    pub fn new(extension_type: u16, msg_type: u8, payload: &'a [u8]) -> Self {
        RawMessageRef {
            extension_type,
            msg_type,
            payload,
        }
    }

    /// The owned form (the payload is copied once).
    pub fn to_owned_value(&self) -> RawMessage {
        RawMessage::new(self.extension_type, self.msg_type, self.payload)
    }

    /// Whether the `channel_msg` bit is set.
    pub fn channel_msg(&self) -> bool {
        self.extension_type & CHANNEL_BIT != 0
    }

    /// The extension id, without the channel bit.
    pub fn extension_id(&self) -> u16 {
        self.extension_type & !CHANNEL_BIT
    }

    /// The channel id (the first four payload bytes, spec §2.2) of a channel message;
    /// `None` if the channel bit is clear or the payload is shorter than four bytes.
    pub fn channel_id(&self) -> Option<u32> {
        if !self.channel_msg() {
            return None;
        }
        self.payload
            .first_chunk::<4>()
            .map(|b| u32::from_le_bytes(*b))
    }
}

impl fmt::Debug for RawMessage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_raw(f, "RawMessage", self.as_ref())
    }
}

impl fmt::Debug for RawMessageRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_raw(f, "RawMessageRef", *self)
    }
}

/// Ids in hex, as in [`Header`]'s `Debug`; the payload by its length.
fn debug_raw(f: &mut fmt::Formatter<'_>, name: &str, m: RawMessageRef<'_>) -> fmt::Result {
    f.debug_struct(name)
        .field("extension_type", &format_args!("{:#06x}", m.extension_type))
        .field("extension_id", &format_args!("{:#06x}", m.extension_id()))
        .field("channel_msg", &m.channel_msg())
        .field("msg_type", &format_args!("{:#04x}", m.msg_type))
        .field("payload_len", &m.payload.len())
        .finish()
}

/// The payload as received and the header fields as received, for both forms.
macro_rules! raw_codec {
    ($($t:ty),*) => {$(
        impl Encode for $t {
            fn encoded_len(&self) -> usize {
                self.payload.len()
            }
            fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
                buf.put_slice(&self.payload)
            }
        }

        impl Frameable for $t {
            fn wire_extension_type(&self) -> u16 {
                self.extension_type
            }
            fn msg_type(&self) -> u8 {
                self.msg_type
            }
        }
    )*};
}

raw_codec!(RawMessage, RawMessageRef<'_>);

/// A decoded message, or the raw bytes of one the message set does not know.
///
/// `MessageOrRaw<M>` is itself a [`MessageSet`] that knows every frame: a codec for it
/// (`Sv2Codec<MessageOrRaw<Message>>`) yields unknown frames as [`Raw`](MessageOrRaw::Raw)
/// items instead of skipping them, which is what a proxy forwarding unknown extensions
/// needs (spec §2.4). A known message whose payload does not decode is still an error.
///
/// Returned by the `decode_or_raw` functions of the dispatch enums (e.g.
/// [`Message::decode_or_raw`](crate::messages::Message::decode_or_raw)). Both variants
/// encode and frame themselves, so a proxy can forward either.
///
/// ```
/// use sv2c_binary::messages::{Message, MessageOrRaw, encode_frame};
///
/// // An experimental extension's channel message: unknown here, kept for forwarding.
/// let payload = [7, 0, 0, 0, 0xaa];
/// let msg = Message::decode_or_raw(0xc001, 0x05, &payload).unwrap();
/// let MessageOrRaw::Raw(raw) = &msg else { panic!("should be unknown") };
/// assert_eq!(raw.channel_id(), Some(7));
/// assert_eq!(encode_frame(&msg).unwrap(), [0x01, 0xc0, 0x05, 5, 0, 0, 7, 0, 0, 0, 0xaa]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum MessageOrRaw<M, R = RawMessage> {
    /// A message of the set, decoded.
    Known(M),
    /// A message the set does not know, as received.
    Raw(R),
}

/// A known message: `MessageOrRaw::from(msg)` or `msg.into()`. The catalog's sets also
/// convert each of their messages (`MessageOrRaw::<Message>::from(setup_connection)`).
impl<M, R> From<M> for MessageOrRaw<M, R> {
    fn from(m: M) -> Self {
        MessageOrRaw::Known(m)
    }
}

impl<M: Encode, R: Encode> Encode for MessageOrRaw<M, R> {
    fn encoded_len(&self) -> usize {
        match self {
            MessageOrRaw::Known(m) => m.encoded_len(),
            MessageOrRaw::Raw(r) => r.encoded_len(),
        }
    }
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        match self {
            MessageOrRaw::Known(m) => m.encode(buf),
            MessageOrRaw::Raw(r) => r.encode(buf),
        }
    }
}

impl<M: Frameable, R: Frameable> Frameable for MessageOrRaw<M, R> {
    fn wire_extension_type(&self) -> u16 {
        match self {
            MessageOrRaw::Known(m) => m.wire_extension_type(),
            MessageOrRaw::Raw(r) => r.wire_extension_type(),
        }
    }
    fn msg_type(&self) -> u8 {
        match self {
            MessageOrRaw::Known(m) => m.msg_type(),
            MessageOrRaw::Raw(r) => r.msg_type(),
        }
    }
    #[inline]
    fn put_frame<B, E, F>(&self, buf: &mut B, put_header: F) -> Result<(), E>
    where
        B: BufMut + ?Sized,
        E: From<PayloadTooLarge>,
        F: FnOnce(Header, &mut B) -> Result<(), E>,
    {
        match self {
            MessageOrRaw::Known(m) => m.put_frame(buf, put_header),
            MessageOrRaw::Raw(r) => r.put_frame(buf, put_header),
        }
    }
}

impl<M: MessageSet> MessageSet for MessageOrRaw<M> {
    type Ref<'a> = MessageOrRaw<M::Ref<'a>, RawMessageRef<'a>>;

    /// The ids `M` decodes; every other frame is accepted too, as [`MessageOrRaw::Raw`].
    const IDS: &'static [(u16, u8)] = M::IDS;
    const NAMES: &'static [&'static str] = M::NAMES;

    fn decode_message(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self, DispatchError> {
        Self::decode_message_with(extension_type, msg_type, payload, Ok, Err)
    }

    /// Through [`decode_message_ref_with`](MessageSet::decode_message_ref_with).
    #[inline]
    fn decode_message_ref(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self::Ref<'_>, DispatchError> {
        Self::decode_message_ref_with(extension_type, msg_type, payload, Ok, Err)
    }

    /// `M`'s own, with `ok` wrapping a known message in [`MessageOrRaw::Known`] inside
    /// `M`'s per-variant decoder, so that it is built where it is returned, and an unknown
    /// frame given to `ok` as [`MessageOrRaw::Raw`].
    #[inline]
    fn decode_message_ref_with<'a, O>(
        extension_type: u16,
        msg_type: u8,
        payload: &'a [u8],
        ok: impl Fn(Self::Ref<'a>) -> O,
        err: impl FnOnce(DispatchError) -> O,
    ) -> O {
        M::decode_message_ref_with(
            extension_type,
            msg_type,
            payload,
            |m| ok(MessageOrRaw::Known(m)),
            |e| match e {
                DispatchError::Decode(e) => err(DispatchError::Decode(e)),
                DispatchError::UnknownMessage { .. } => ok(MessageOrRaw::Raw(RawMessageRef::new(
                    extension_type,
                    msg_type,
                    payload,
                ))),
            },
        )
    }

    /// As [`decode_message_ref_with`](MessageSet::decode_message_ref_with), for the owned
    /// form (why `ok` is `Fn`: either path may call it).
    #[inline]
    fn decode_message_with<O>(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
        ok: impl Fn(Self) -> O,
        err: impl FnOnce(DispatchError) -> O,
    ) -> O {
        M::decode_message_with(
            extension_type,
            msg_type,
            payload,
            |m| ok(MessageOrRaw::Known(m)),
            |e| match e {
                DispatchError::Decode(e) => err(DispatchError::Decode(e)),
                DispatchError::UnknownMessage { .. } => ok(MessageOrRaw::Raw(RawMessage::new(
                    extension_type,
                    msg_type,
                    payload,
                ))),
            },
        )
    }
}
