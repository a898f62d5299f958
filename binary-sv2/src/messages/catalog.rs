//! The message catalog: one `macro_rules!` table lists every message once, and generates
//! the per-protocol enums, the all-messages [`Message`]/[`MessageRef`], their conversions,
//! codecs and [`MessageSet`] implementations, and the [`CATALOG`]. Message ids come from
//! each type's derived [`MessageType`] constants; the table does not repeat them.

use bytes::BufMut;
use core::fmt;

use super::raw::{MessageOrRaw, RawMessage, RawMessageRef};
use super::{common, extensions, job_declaration, mining, template_distribution};
use crate::error::DecodeError;
use crate::header::{Header, PayloadTooLarge};
use crate::tlv::{TlvTail, TlvTailBuf};
use crate::{
    CHANNEL_BIT, DispatchError, Encode, Frameable, MessageSet, MessageType, Wire, WireRef,
    from_bytes_ref_with_rest,
};

/// Which part of the catalog a message belongs to (the vectors' `protocol` key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageProtocol {
    /// Common messages (spec §3.1), used by every sub-protocol.
    Common,
    /// The Mining protocol (spec §3.2).
    Mining,
    /// The Job Declaration protocol (spec §3.3).
    JobDeclaration,
    /// The Template Distribution protocol (spec §3.4).
    TemplateDistribution,
    /// Extension 0x0001, Extensions Negotiation (spec §3.5).
    Extensions,
}

impl MessageProtocol {
    /// Every value, in catalog order.
    pub const ALL: [MessageProtocol; 5] = [
        MessageProtocol::Common,
        MessageProtocol::Mining,
        MessageProtocol::JobDeclaration,
        MessageProtocol::TemplateDistribution,
        MessageProtocol::Extensions,
    ];

    /// The snake-case name: `common`, `mining`, `job_declaration`, `template_distribution`
    /// or `extensions`.
    pub const fn name(self) -> &'static str {
        match self {
            MessageProtocol::Common => "common",
            MessageProtocol::Mining => "mining",
            MessageProtocol::JobDeclaration => "job_declaration",
            MessageProtocol::TemplateDistribution => "template_distribution",
            MessageProtocol::Extensions => "extensions",
        }
    }

    /// The value whose [`name`](Self::name) is `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

impl fmt::Display for MessageProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the catalog knows about one message type: its name and header constants.
///
/// `Debug` shows the ids in hex, as [`Header`]'s does.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct MessageInfo {
    /// The message name, e.g. `"SubmitSharesStandard"` (the spec name without the dot).
    pub name: &'static str,
    /// The protocol it belongs to.
    pub protocol: MessageProtocol,
    /// The defining extension, **without** the channel bit (0 for core messages).
    pub extension_type: u16,
    /// The message id within that extension.
    pub msg_type: u8,
    /// Whether frames of it set the `channel_msg` bit.
    pub channel_msg: bool,
}

impl fmt::Debug for MessageInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageInfo")
            .field("name", &self.name)
            .field("protocol", &self.protocol)
            .field(
                "extension_type",
                &format_args!("{:#06x}", self.extension_type),
            )
            .field("msg_type", &format_args!("{:#04x}", self.msg_type))
            .field("channel_msg", &self.channel_msg)
            .finish()
    }
}

impl MessageInfo {
    /// The entry for a message type.
    pub const fn of<T: MessageType>(protocol: MessageProtocol) -> Self {
        MessageInfo {
            name: T::NAME,
            protocol,
            extension_type: T::EXTENSION_TYPE,
            msg_type: T::MSG_TYPE,
            channel_msg: T::CHANNEL_MSG,
        }
    }

    /// The header's `extension_type` field: the extension id with the channel bit applied.
    pub const fn wire_extension_type(&self) -> u16 {
        if self.channel_msg {
            self.extension_type | CHANNEL_BIT
        } else {
            self.extension_type
        }
    }
}

/// The catalog entry for `(extension_type, msg_type)`; the channel bit of `extension_type`
/// is ignored.
///
/// ```
/// use sv2c_binary::messages::{lookup, MessageProtocol};
/// let info = lookup(0x8000, 0x1a).unwrap();
/// assert_eq!((info.name, info.protocol, info.channel_msg), ("SubmitSharesStandard", MessageProtocol::Mining, true));
/// assert_eq!(lookup(0, 0x1e), None); // reserved
/// ```
pub fn lookup(extension_type: u16, msg_type: u8) -> Option<MessageInfo> {
    Message::info_of(extension_type, msg_type)
}

/// The catalog entry of the message called `name` in `protocol` (names are only unique
/// within a protocol: both Mining and Template Distribution have a `SetNewPrevHash`).
pub fn lookup_name(protocol: MessageProtocol, name: &str) -> Option<MessageInfo> {
    CATALOG
        .iter()
        .find(|m| m.protocol == protocol && m.name == name)
        .copied()
}

/// Owned decode of one message into `S`, the message itself or its box, kept out of line
/// so that the dispatch `match` stays a jump table of tail calls. `ok` wraps the message in its enum variant and the caller's
/// result type, so the value is built once, in the caller's return slot, and written there
/// in whole 16-byte stores (`raw_copy`; docs/adr/0004-message-enum-layout.md).
#[inline(never)]
fn decode_variant_with<T: Wire, S: From<T>, O>(
    payload: &[u8],
    ok: impl FnOnce(S) -> O,
    err: impl FnOnce(DispatchError) -> O,
) -> O {
    crate::wire::decode_owned_then(
        payload,
        |v: T| {
            crate::raw_copy::hand_over_live(ok(S::from(v)), crate::raw_copy::variant_live::<S>())
        },
        |e| err(DispatchError::Decode(e)),
    )
}

/// Borrowed decode of one message into its enum variant: as [`decode_variant_with`],
/// built in the caller's return slot and handed over in whole 16-byte stores. The codec's
/// borrowed loops, which never move the message, use [`decode_ref_variant_with`] instead.
#[inline(never)]
fn decode_ref_variant<'a, R: WireRef<'a>, M>(
    payload: &'a [u8],
    wrap: impl FnOnce(R) -> M,
) -> Result<M, DispatchError> {
    match crate::wire::decode_ref_front::<R>(payload) {
        Ok(v) => crate::raw_copy::hand_over_live(Ok(wrap(v)), crate::raw_copy::variant_live::<R>()),
        Err(e) => Err(DispatchError::Decode(e)),
    }
}

/// Borrowed decode of one message, handed to `ok` (which wraps it in its enum variant) or
/// `err`, for `MessageSet::decode_message_ref_with`.
#[inline(never)]
fn decode_ref_variant_with<'a, R: WireRef<'a>, O>(
    payload: &'a [u8],
    ok: impl FnOnce(R) -> O,
    err: impl FnOnce(DispatchError) -> O,
) -> O {
    match crate::wire::decode_ref_front::<R>(payload) {
        Ok(v) => ok(v),
        Err(e) => err(DispatchError::Decode(e)),
    }
}

/// What the owned and the borrowed enum of a set both have: the catalog accessors,
/// [`Encode`] and [`Frameable`]. A variant holds (or boxes) a `$Held`.
macro_rules! enum_common {
    (impl<$($lt:lifetime)?> $Enum:ty; $( $Variant:ident: $Ty:ty, $Held:ty, $Proto:ident; )*) => {
        impl<$($lt)?> $Enum {
            /// Name and header constants of this message.
            pub fn info(&self) -> MessageInfo {
                match self {
                    $( Self::$Variant(_) => MessageInfo::of::<$Ty>(MessageProtocol::$Proto), )*
                }
            }

            /// The message name, e.g. `"SubmitSharesStandard"`.
            pub fn name(&self) -> &'static str {
                self.info().name
            }

            /// The protocol the message belongs to.
            pub fn protocol(&self) -> MessageProtocol {
                self.info().protocol
            }

            /// Whether frames of this message set the `channel_msg` bit.
            pub fn channel_msg(&self) -> bool {
                self.info().channel_msg
            }

            /// The defining extension, without the channel bit.
            pub fn extension_type(&self) -> u16 {
                self.info().extension_type
            }
        }

        impl<$($lt)?> Encode for $Enum {
            #[inline]
            fn encoded_len(&self) -> usize {
                match self {
                    $( Self::$Variant(m) => m.encoded_len(), )*
                }
            }
            #[inline]
            fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
                match self {
                    $( Self::$Variant(m) => m.encode(buf), )*
                }
            }
        }

        // One `match` of constants each (a table lookup once compiled), not the whole
        // `info()`: encoding a frame asks for both on every message.
        impl<$($lt)?> Frameable for $Enum {
            #[inline]
            fn wire_extension_type(&self) -> u16 {
                match self {
                    $( Self::$Variant(_) => const { MessageInfo::of::<$Ty>(MessageProtocol::$Proto).wire_extension_type() }, )*
                }
            }
            #[inline]
            fn msg_type(&self) -> u8 {
                match self {
                    $( Self::$Variant(_) => <$Ty as MessageType>::MSG_TYPE, )*
                }
            }
            // One `match`: each arm writes its variant's frame with the header and the
            // length known from the type (a constant for fixed-size messages).
            #[inline]
            fn put_frame<B, E, F>(&self, buf: &mut B, put_header: F) -> Result<(), E>
            where
                B: BufMut + ?Sized,
                E: From<PayloadTooLarge>,
                F: FnOnce(Header, &mut B) -> Result<(), E>,
            {
                match self {
                    $( Self::$Variant(m) => crate::dispatch::put_variant_frame::<$Held, B, E, F>(m, buf, put_header), )*
                }
            }
        }
    };
}

/// Generates one message set: an owned enum, its borrowed twin, and everything they need.
macro_rules! message_set {
    (
        $(#[$doc:meta])*
        owned $Enum:ident;
        $(#[$rdoc:meta])*
        borrowed $EnumRef:ident;
        $( $Variant:ident: $Ty:ty, $TyRef:ty, $Stored:ty, $Proto:ident; )*
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq)]
        #[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
        // An 8-byte tag, so that a move copies whole words from offset 0, and 16-byte
        // alignment, so that a decoder hands the value over in whole stores (ADR 0004).
        #[repr(u64, align(16))]
        pub enum $Enum {
            $(
                #[doc = concat!("[`", stringify!($Ty), "`]")]
                $Variant($Stored),
            )*
        }

        $(#[$rdoc])*
        #[derive(Debug, Clone, PartialEq)]
        // As the owned enum: `MessageRef::decode` hands its result over too (ADR 0004).
        #[repr(u64, align(16))]
        pub enum $EnumRef<'a> {
            $(
                #[doc = concat!("Borrowed [`", stringify!($Ty), "`]")]
                $Variant($TyRef),
            )*
        }

        impl $Enum {
            /// The catalog entry for `(extension_type, msg_type)` if this set has such a
            /// message (the channel bit is ignored).
            pub fn info_of(extension_type: u16, msg_type: u8) -> Option<MessageInfo> {
                match (extension_type & !CHANNEL_BIT, msg_type) {
                    $( (<$Ty as MessageType>::EXTENSION_TYPE, <$Ty as MessageType>::MSG_TYPE) => Some(MessageInfo::of::<$Ty>(MessageProtocol::$Proto)), )*
                    _ => None,
                }
            }

            /// The borrowed view (no allocation, no copy).
            pub fn as_ref(&self) -> $EnumRef<'_> {
                match self {
                    $( Self::$Variant(m) => $EnumRef::$Variant(<$Ty as Wire>::to_ref(m)), )*
                }
            }

            /// Decodes the payload of a frame as [`decode_message`](MessageSet::decode_message)
            /// does, but returns an unknown message as a [`RawMessage`] (payload copied once)
            /// instead of an error, so that it can be forwarded unchanged.
            ///
            /// # Errors
            /// The [`DecodeError`] of a known message whose payload does not decode.
            pub fn decode_or_raw(
                extension_type: u16,
                msg_type: u8,
                payload: &[u8],
            ) -> Result<MessageOrRaw<Self>, DecodeError> {
                match Self::decode_message(extension_type, msg_type, payload) {
                    Ok(m) => Ok(MessageOrRaw::Known(m)),
                    Err(DispatchError::Decode(e)) => Err(e),
                    Err(_) => Ok(MessageOrRaw::Raw(RawMessage::new(extension_type, msg_type, payload))),
                }
            }

            /// Decodes an owned message and returns, with it, the payload bytes after its last
            /// field (its TLV tail, spec §3.6), copied. The tail is not parsed here.
            ///
            /// # Errors
            /// As [`decode_message`](MessageSet::decode_message).
            pub fn decode_with_tail(
                extension_type: u16,
                msg_type: u8,
                payload: &[u8],
            ) -> Result<(Self, TlvTailBuf), DispatchError> {
                let msg = Self::decode_message(extension_type, msg_type, payload)?;
                // Encoding preserves lengths, so this is the number of bytes decoded.
                let used = msg.encoded_len();
                let tail = TlvTailBuf::copy_from_slice(payload.get(used..).unwrap_or(&[]));
                Ok((msg, tail))
            }

            /// Deserializes the message's fields (as produced by its `Serialize`) into the
            /// message `(extension_type, msg_type)` of this set.
            ///
            /// # Errors
            /// The deserializer's error, or a custom one if the set has no such message.
            #[cfg(feature = "serde")]
            pub fn deserialize_fields<'de, D: serde::Deserializer<'de>>(
                extension_type: u16,
                msg_type: u8,
                deserializer: D,
            ) -> Result<Self, D::Error> {
                match (extension_type & !CHANNEL_BIT, msg_type) {
                    $( (<$Ty as MessageType>::EXTENSION_TYPE, <$Ty as MessageType>::MSG_TYPE) => <$Ty as serde::Deserialize<'de>>::deserialize(deserializer).map(|m| Self::$Variant(m.into())), )*
                    (ext, mt) => Err(<D::Error as serde::de::Error>::custom(alloc::format!(
                        "unknown message: extension_type {ext:#06x}, msg_type {mt:#04x}"
                    ))),
                }
            }
        }

        impl<'a> $EnumRef<'a> {
            /// Decodes a frame payload into the borrowed form (no allocation, no copy of
            /// variable-length data). Bytes after the message's last field are ignored.
            ///
            /// # Errors
            /// [`DispatchError::UnknownMessage`] if the set has no message
            /// `(extension_type & 0x7FFF, msg_type)`, otherwise the payload's decode error.
            #[inline]
            pub fn decode(
                extension_type: u16,
                msg_type: u8,
                payload: &'a [u8],
            ) -> Result<Self, DispatchError> {
                match (extension_type & !CHANNEL_BIT, msg_type) {
                    $( (<$Ty as MessageType>::EXTENSION_TYPE, <$Ty as MessageType>::MSG_TYPE) => decode_ref_variant::<$TyRef, Self>(payload, Self::$Variant), )*
                    (extension_id, msg_type) => Err(DispatchError::UnknownMessage { extension_id, msg_type }),
                }
            }

            /// As [`decode`](Self::decode), and also returns the bytes after the message's
            /// last field: its TLV tail (spec §3.6), borrowed and not parsed yet.
            ///
            /// # Errors
            /// As [`decode`](Self::decode); the tail's content never causes an error here.
            pub fn decode_with_tail(
                extension_type: u16,
                msg_type: u8,
                payload: &'a [u8],
            ) -> Result<(Self, TlvTail<'a>), DispatchError> {
                match (extension_type & !CHANNEL_BIT, msg_type) {
                    $( (<$Ty as MessageType>::EXTENSION_TYPE, <$Ty as MessageType>::MSG_TYPE) => {
                        let (m, rest) = from_bytes_ref_with_rest::<$TyRef>(payload)?;
                        Ok((Self::$Variant(m), TlvTail::new(rest)))
                    } )*
                    (extension_id, msg_type) => Err(DispatchError::UnknownMessage { extension_id, msg_type }),
                }
            }

            /// As [`decode`](Self::decode), but an unknown message comes back as a
            /// [`RawMessageRef`] (borrowing the payload) so that it can be forwarded.
            ///
            /// # Errors
            /// The [`DecodeError`] of a known message whose payload does not decode.
            pub fn decode_or_raw(
                extension_type: u16,
                msg_type: u8,
                payload: &'a [u8],
            ) -> Result<MessageOrRaw<Self, RawMessageRef<'a>>, DecodeError> {
                match Self::decode(extension_type, msg_type, payload) {
                    Ok(m) => Ok(MessageOrRaw::Known(m)),
                    Err(DispatchError::Decode(e)) => Err(e),
                    Err(_) => Ok(MessageOrRaw::Raw(RawMessageRef::new(extension_type, msg_type, payload))),
                }
            }

            /// The owned form ([`WireRef::to_owned_value`] of the message; a boxed
            /// variant's box is one more allocation).
            pub fn to_owned_value(&self) -> $Enum {
                match self {
                    $( Self::$Variant(m) => $Enum::$Variant(WireRef::to_owned_value(m).into()), )*
                }
            }
        }

        enum_common!(impl<> $Enum; $( $Variant: $Ty, $Ty, $Proto; )*);
        enum_common!(impl<'a> $EnumRef<'a>; $( $Variant: $Ty, $TyRef, $Proto; )*);

        impl MessageSet for $Enum {
            type Ref<'a> = $EnumRef<'a>;

            const IDS: &'static [(u16, u8)] = &[ $( (<$Ty as MessageType>::EXTENSION_TYPE, <$Ty as MessageType>::MSG_TYPE), )* ];
            const NAMES: &'static [&'static str] = &[ $( <$Ty as MessageType>::NAME, )* ];

            fn decode_message(
                extension_type: u16,
                msg_type: u8,
                payload: &[u8],
            ) -> Result<Self, DispatchError> {
                Self::decode_message_with(extension_type, msg_type, payload, Ok, Err)
            }

            #[inline]
            fn decode_message_ref(
                extension_type: u16,
                msg_type: u8,
                payload: &[u8],
            ) -> Result<$EnumRef<'_>, DispatchError> {
                $EnumRef::decode(extension_type, msg_type, payload)
            }

            #[inline]
            fn decode_message_ref_with<'a, O>(
                extension_type: u16,
                msg_type: u8,
                payload: &'a [u8],
                ok: impl Fn($EnumRef<'a>) -> O,
                err: impl FnOnce(DispatchError) -> O,
            ) -> O {
                match (extension_type & !CHANNEL_BIT, msg_type) {
                    $( (<$Ty as MessageType>::EXTENSION_TYPE, <$Ty as MessageType>::MSG_TYPE) => decode_ref_variant_with::<$TyRef, O>(payload, |m| ok($EnumRef::$Variant(m)), err), )*
                    (extension_id, msg_type) => err(DispatchError::UnknownMessage { extension_id, msg_type }),
                }
            }

            #[inline]
            fn decode_message_with<O>(
                extension_type: u16,
                msg_type: u8,
                payload: &[u8],
                ok: impl Fn(Self) -> O,
                err: impl FnOnce(DispatchError) -> O,
            ) -> O {
                match (extension_type & !CHANNEL_BIT, msg_type) {
                    $( (<$Ty as MessageType>::EXTENSION_TYPE, <$Ty as MessageType>::MSG_TYPE) => decode_variant_with::<$Ty, $Stored, O>(payload, |m| ok(Self::$Variant(m)), err), )*
                    (extension_id, msg_type) => err(DispatchError::UnknownMessage { extension_id, msg_type }),
                }
            }
        }

        /// Serializes the message's fields only (as a struct); the message type is not
        /// written. Deserialize with [`deserialize_fields`](Self::deserialize_fields).
        #[cfg(feature = "serde")]
        impl serde::Serialize for $Enum {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$Variant(m) => m.serialize(serializer), )*
                }
            }
        }

        $(
            impl From<$Ty> for $Enum {
                fn from(m: $Ty) -> Self {
                    Self::$Variant(m.into())
                }
            }

            impl<'a> From<$TyRef> for $EnumRef<'a> {
                fn from(m: $TyRef) -> Self {
                    Self::$Variant(m)
                }
            }

            impl From<$Ty> for MessageOrRaw<$Enum> {
                fn from(m: $Ty) -> Self {
                    MessageOrRaw::Known(m.into())
                }
            }

            impl<'a> From<$TyRef> for MessageOrRaw<$EnumRef<'a>, RawMessageRef<'a>> {
                fn from(m: $TyRef) -> Self {
                    MessageOrRaw::Known(m.into())
                }
            }
        )*
    };
}

/// The type a variant stores: the message, or with `boxed` the message in a `Box`.
macro_rules! stored {
    (boxed $($t:tt)*) => { alloc::boxed::Box<$($t)*> };
    ($($t:tt)*) => { $($t)* };
}

/// The table: every message once, by protocol. A block names the protocol's module and
/// its two enums; a row is `Variant / VariantInMessage: RefType`, with `, boxed` for a
/// message held in a `Box`. Generates the five protocol sets, the all-messages set,
/// conversions between them and [`CATALOG`]. The ids are not repeated here: every match
/// arm takes them from the type's [`MessageType`] constants, which
/// `#[sv2(msg_type = …, extension_type = …)]` generates, so the two cannot disagree (and
/// two rows with the same ids would be an unreachable-pattern warning, which CI denies).
macro_rules! catalog {
    (
        all: $(#[$doc:meta])* $All:ident, $(#[$rdoc:meta])* $AllRef:ident;
        $(
            $Proto:ident => $m:ident: $(#[$pdoc:meta])* $Enum:ident, $(#[$prdoc:meta])* $EnumRef:ident {
                $( $Variant:ident / $Global:ident: $Ref:ident $(, $boxed:ident)?; )*
            }
        )*
    ) => {
        $(
            message_set! {
                $(#[$pdoc])*
                owned $Enum;
                $(#[$prdoc])*
                borrowed $EnumRef;
                $( $Variant: $m::$Variant, $m::$Ref<'a>, stored!($($boxed)? $m::$Variant), $Proto; )*
            }

            impl From<$Enum> for $All {
                fn from(m: $Enum) -> Self {
                    match m {
                        $( $Enum::$Variant(v) => $All::$Global(v), )*
                    }
                }
            }

            impl<'a> From<$EnumRef<'a>> for $AllRef<'a> {
                fn from(m: $EnumRef<'a>) -> Self {
                    match m {
                        $( $EnumRef::$Variant(v) => $AllRef::$Global(v), )*
                    }
                }
            }

            /// Narrows a message to this protocol's set; gives the message back if it
            /// belongs to another protocol.
            impl TryFrom<$All> for $Enum {
                type Error = $All;
                fn try_from(m: $All) -> Result<Self, $All> {
                    match m {
                        $( $All::$Global(v) => Ok($Enum::$Variant(v)), )*
                        #[allow(unreachable_patterns)]
                        other => Err(other),
                    }
                }
            }
        )*

        message_set! {
            $(#[$doc])*
            owned $All;
            $(#[$rdoc])*
            borrowed $AllRef;
            $( $( $Global: $m::$Variant, $m::$Ref<'a>, stored!($($boxed)? $m::$Variant), $Proto; )* )*
        }

        /// Every message of the catalog, by protocol and then by message type.
        pub const CATALOG: &[MessageInfo] = &[
            $( $( MessageInfo::of::<$m::$Variant>(MessageProtocol::$Proto), )* )*
        ];
    };
}

catalog! {
    all:
    /// Every message of the catalog (owned): the five protocols' 44 messages.
    ///
    /// Decode one from a frame with [`MessageSet::decode_message`] (an unknown message is
    /// [`DispatchError::UnknownMessage`]) or [`Message::decode_or_raw`] (an unknown message
    /// is kept as a [`RawMessage`] for forwarding). It encodes its payload ([`Encode`]) and
    /// knows its header fields ([`Frameable`]).
    ///
    /// The five largest messages, which are also the rarest (`SetupConnection`,
    /// `NewExtendedMiningJob`, `SetCustomMiningJob`, `DeclareMiningJob`, `NewTemplate`),
    /// are held in a `Box`, so that `Message` stays small (112 bytes) and every move of a
    /// share costs a few register moves, not a `memcpy` (docs/adr/0004). Build them with
    /// `From` (`Message::from(setup)`); fields are reached through the box as usual.
    ///
    /// `Message` and [`MessageRef`] are aligned to 16 bytes: a decoder hands its result
    /// over in whole 16-byte stores, which the caller's moves of the value read back
    /// without waiting (docs/adr/0004-message-enum-layout.md).
    ///
    /// The Template Distribution `SetNewPrevHash` is the variant
    /// [`SetNewPrevHashTdp`](Message::SetNewPrevHashTdp); the Mining one is
    /// [`SetNewPrevHash`](Message::SetNewPrevHash).
    ///
    /// ```
    /// use sv2c_binary::messages::Message;
    /// use sv2c_binary::{Frameable, MessageSet};
    ///
    /// // SV2-WIRE §2.1: header 00 80 1a 18 00 00, then 24 payload bytes.
    /// let payload = [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xef, 0xbe, 0xad, 0xde,
    ///                0, 0, 0x50, 0x66, 0, 0, 0, 0x20];
    /// let msg = Message::decode_message(0x8000, 0x1a, &payload).unwrap();
    /// let Message::SubmitSharesStandard(share) = &msg else { panic!("wrong message") };
    /// assert_eq!(share.nonce, 0xdead_beef);
    /// assert_eq!((msg.wire_extension_type(), msg.msg_type()), (0x8000, 0x1a));
    /// assert_eq!(msg.as_ref().to_owned_value(), msg);
    /// ```
    Message,
    /// Borrowed form of [`Message`]: each variant holds the message's `Ref` form, pointing
    /// into the decoded payload.
    MessageRef;

    Common => common:
    /// The Common messages (spec §3.1), owned.
    CommonMessage,
    /// The Common messages, borrowed.
    CommonMessageRef {
        SetupConnection / SetupConnection: SetupConnectionRef, boxed;
        SetupConnectionSuccess / SetupConnectionSuccess: SetupConnectionSuccessRef;
        SetupConnectionError / SetupConnectionError: SetupConnectionErrorRef;
        ChannelEndpointChanged / ChannelEndpointChanged: ChannelEndpointChangedRef;
        Reconnect / Reconnect: ReconnectRef;
    }

    Mining => mining:
    /// The Mining protocol messages (spec §3.2), owned.
    MiningMessage,
    /// The Mining protocol messages, borrowed.
    MiningMessageRef {
        OpenStandardMiningChannel / OpenStandardMiningChannel: OpenStandardMiningChannelRef;
        OpenStandardMiningChannelSuccess / OpenStandardMiningChannelSuccess: OpenStandardMiningChannelSuccessRef;
        OpenMiningChannelError / OpenMiningChannelError: OpenMiningChannelErrorRef;
        OpenExtendedMiningChannel / OpenExtendedMiningChannel: OpenExtendedMiningChannelRef;
        OpenExtendedMiningChannelSuccess / OpenExtendedMiningChannelSuccess: OpenExtendedMiningChannelSuccessRef;
        NewMiningJob / NewMiningJob: NewMiningJobRef;
        UpdateChannel / UpdateChannel: UpdateChannelRef;
        UpdateChannelError / UpdateChannelError: UpdateChannelErrorRef;
        CloseChannel / CloseChannel: CloseChannelRef;
        SetExtranoncePrefix / SetExtranoncePrefix: SetExtranoncePrefixRef;
        SubmitSharesStandard / SubmitSharesStandard: SubmitSharesStandardRef;
        SubmitSharesExtended / SubmitSharesExtended: SubmitSharesExtendedRef;
        SubmitSharesSuccess / SubmitSharesSuccess: SubmitSharesSuccessRef;
        SubmitSharesError / SubmitSharesError: SubmitSharesErrorRef;
        NewExtendedMiningJob / NewExtendedMiningJob: NewExtendedMiningJobRef, boxed;
        SetNewPrevHash / SetNewPrevHash: SetNewPrevHashRef;
        SetTarget / SetTarget: SetTargetRef;
        SetCustomMiningJob / SetCustomMiningJob: SetCustomMiningJobRef, boxed;
        SetCustomMiningJobSuccess / SetCustomMiningJobSuccess: SetCustomMiningJobSuccessRef;
        SetCustomMiningJobError / SetCustomMiningJobError: SetCustomMiningJobErrorRef;
        SetGroupChannel / SetGroupChannel: SetGroupChannelRef;
    }

    JobDeclaration => job_declaration:
    /// The Job Declaration protocol messages (spec §3.3), owned.
    JobDeclarationMessage,
    /// The Job Declaration protocol messages, borrowed.
    JobDeclarationMessageRef {
        AllocateMiningJobToken / AllocateMiningJobToken: AllocateMiningJobTokenRef;
        AllocateMiningJobTokenSuccess / AllocateMiningJobTokenSuccess: AllocateMiningJobTokenSuccessRef;
        ProvideMissingTransactions / ProvideMissingTransactions: ProvideMissingTransactionsRef;
        ProvideMissingTransactionsSuccess / ProvideMissingTransactionsSuccess: ProvideMissingTransactionsSuccessRef;
        DeclareMiningJob / DeclareMiningJob: DeclareMiningJobRef, boxed;
        DeclareMiningJobSuccess / DeclareMiningJobSuccess: DeclareMiningJobSuccessRef;
        DeclareMiningJobError / DeclareMiningJobError: DeclareMiningJobErrorRef;
        PushSolution / PushSolution: PushSolutionRef;
    }

    TemplateDistribution => template_distribution:
    /// The Template Distribution protocol messages (spec §3.4), owned.
    TemplateDistributionMessage,
    /// The Template Distribution protocol messages, borrowed.
    TemplateDistributionMessageRef {
        CoinbaseOutputConstraints / CoinbaseOutputConstraints: CoinbaseOutputConstraintsRef;
        NewTemplate / NewTemplate: NewTemplateRef, boxed;
        SetNewPrevHash / SetNewPrevHashTdp: SetNewPrevHashRef;
        RequestTransactionData / RequestTransactionData: RequestTransactionDataRef;
        RequestTransactionDataSuccess / RequestTransactionDataSuccess: RequestTransactionDataSuccessRef;
        RequestTransactionDataError / RequestTransactionDataError: RequestTransactionDataErrorRef;
        SubmitSolution / SubmitSolution: SubmitSolutionRef;
    }

    Extensions => extensions:
    /// The Extensions Negotiation messages (extension 0x0001, spec §3.5), owned.
    ExtensionsMessage,
    /// The Extensions Negotiation messages, borrowed.
    ExtensionsMessageRef {
        RequestExtensions / RequestExtensions: RequestExtensionsRef;
        RequestExtensionsSuccess / RequestExtensionsSuccess: RequestExtensionsSuccessRef;
        RequestExtensionsError / RequestExtensionsError: RequestExtensionsErrorRef;
    }
}
