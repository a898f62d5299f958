//! [`Tailed`]: a message set whose messages keep the bytes after their last field (the
//! TLV tail, SV2-WIRE §3.6), so that a server reading through `Sv2Codec` sees the
//! `user_identity` of extension 0x0002.

use bytes::BufMut;
use sv2c_binary::tlv::{TlvTail, TlvTailBuf};
use sv2c_binary::{DispatchError, Encode, Frameable, MessageSet};

/// A message of the set `M` and its TLV tail (owned). Encoding writes the message, then
/// the tail unchanged.
///
/// ```
/// use sv2c_binary::messages::{frame_parts, encode_frame, Message, SubmitSharesExtended};
/// use sv2c_binary::tlv::{UserIdentity, WithTlvs};
/// use sv2c_binary::MessageSet;
/// use sv2c_channels::tailed::Tailed;
///
/// let share = SubmitSharesExtended::default();
/// let user = UserIdentity::try_from("rig7").unwrap();
/// let frame = encode_frame(&WithTlvs::new(share).with(user.to_tlv().to_buf())).unwrap();
/// let (ext, ty, payload) = frame_parts(&frame).unwrap();
/// let got = Tailed::<Message>::decode_message(ext, ty, payload).unwrap();
/// assert_eq!(got.tail.as_tail().user_identity().unwrap(), Some(user));
/// ```
#[derive(Debug, Clone)]
pub struct Tailed<M> {
    /// The message.
    pub message: M,
    /// The bytes after its last field.
    pub tail: TlvTailBuf,
}

/// The borrowed form of [`Tailed`]: a borrowed message and its tail.
#[derive(Debug, Clone)]
pub struct TailedRef<'a, R> {
    /// The message.
    pub message: R,
    /// The bytes after its last field.
    pub tail: TlvTail<'a>,
}

impl<M: Encode> Encode for Tailed<M> {
    fn encoded_len(&self) -> usize {
        self.message.encoded_len() + self.tail.as_bytes().len()
    }
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        self.message.encode(buf);
        buf.put_slice(self.tail.as_bytes());
    }
}

impl<M: Frameable> Frameable for Tailed<M> {
    fn wire_extension_type(&self) -> u16 {
        self.message.wire_extension_type()
    }
    fn msg_type(&self) -> u8 {
        self.message.msg_type()
    }
}

impl<R: Encode> Encode for TailedRef<'_, R> {
    fn encoded_len(&self) -> usize {
        self.message.encoded_len() + self.tail.len()
    }
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        self.message.encode(buf);
        buf.put_slice(self.tail.as_bytes());
    }
}

impl<R: Frameable> Frameable for TailedRef<'_, R> {
    fn wire_extension_type(&self) -> u16 {
        self.message.wire_extension_type()
    }
    fn msg_type(&self) -> u8 {
        self.message.msg_type()
    }
}

/// The bytes of `payload` after the first `used` (none if `used` is past the end).
fn rest(payload: &[u8], used: usize) -> &[u8] {
    payload.get(used..).unwrap_or(&[])
}

impl<M: MessageSet> MessageSet for Tailed<M> {
    type Ref<'a> = TailedRef<'a, M::Ref<'a>>;

    const IDS: &'static [(u16, u8)] = M::IDS;

    fn decode_message(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self, DispatchError> {
        let message = M::decode_message(extension_type, msg_type, payload)?;
        // Encoding preserves lengths: this is the number of bytes the fields took.
        let used = message.encoded_len();
        let tail = TlvTailBuf::copy_from_slice(rest(payload, used));
        Ok(Tailed { message, tail })
    }

    fn decode_message_ref(
        extension_type: u16,
        msg_type: u8,
        payload: &[u8],
    ) -> Result<Self::Ref<'_>, DispatchError> {
        let message = M::decode_message_ref(extension_type, msg_type, payload)?;
        let used = message.encoded_len();
        Ok(TailedRef {
            message,
            tail: TlvTail::new(rest(payload, used)),
        })
    }
}
