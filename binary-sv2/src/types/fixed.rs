//! Fixed-size types: integers, BOOL, F32, U24, the byte arrays, and the inline B0_32.

use bytes::BufMut;
use core::fmt;

use crate::backing::{Backing, ToOwnedIn};
use crate::error::{DecodeError, DecodeErrorKind, LengthError};
use crate::{Decode, Encode, Reader, Wire, WireRef};

/// `Encode`, `Decode` and `Wire` for a `Copy` type of `$len` bytes that is its own
/// borrowed form: `$put` writes `$v` (a reference to the value) into `$buf`, `$read`
/// reads one from `$r`.
macro_rules! fixed_wire {
    (
        $(#[$doc:meta])*
        $t:ty, $len:literal, |$v:ident, $buf:ident| $put:expr, |$r:ident| $read:expr
    ) => {
        $(#[$doc])*
        impl Encode for $t {
            #[inline]
            fn encoded_len(&self) -> usize {
                $len
            }
            #[inline]
            fn encode<B: BufMut + ?Sized>(&self, $buf: &mut B) {
                let $v = self;
                $put
            }
        }
        impl<'a> Decode<'a> for $t {
            #[inline]
            fn decode($r: &mut Reader<'a>) -> Result<Self, DecodeError> {
                $read
            }
        }
        self_ref_wire!($t, Some($len));
    };
}

fixed_wire!(u8, 1, |v, buf| buf.put_u8(*v), |r| r.read_u8("U8"));
fixed_wire!(u16, 2, |v, buf| buf.put_u16_le(*v), |r| r.read_u16("U16"));
fixed_wire!(u32, 4, |v, buf| buf.put_u32_le(*v), |r| r.read_u32("U32"));
fixed_wire!(u64, 8, |v, buf| buf.put_u64_le(*v), |r| r.read_u64("U64"));
fixed_wire!(
    /// `F32`: IEEE-754 binary32, little-endian (spec §1.1, §7 D10). NaN and infinities are
    /// carried as they are.
    f32,
    4,
    |v, buf| buf.put_u32_le(v.to_bits()),
    |r| r.read_u32("F32").map(f32::from_bits)
);
fixed_wire!(
    /// `BOOL`: one byte, **only bit 0 carries the value**; bits 1–7 are reserved and
    /// ignored on receive (spec §1.1). Written as `0x00`/`0x01`.
    ///
    /// ```
    /// use sv2c_binary::from_bytes_ref;
    /// assert_eq!(from_bytes_ref::<bool>(&[0xfe]), Ok(false));
    /// assert_eq!(from_bytes_ref::<bool>(&[0x03]), Ok(true));
    /// ```
    bool,
    1,
    |v, buf| buf.put_u8(u8::from(*v)),
    |r| r.read_u8("BOOL").map(|b| b & 1 == 1)
);

// ===== U24 =====

/// `U24`: a 24-bit unsigned integer, 3 bytes little-endian (0 ..= 16 777 215).
///
/// ```
/// use sv2c_binary::{U24, from_bytes_ref};
/// assert_eq!(from_bytes_ref::<U24>(&[0x01, 0x02, 0x03]).unwrap().get(), 0x030201);
/// assert!(U24::try_from(1u32 << 24).is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct U24(u32);

impl U24 {
    /// The largest value, 2^24 − 1.
    pub const MAX: U24 = U24((1 << 24) - 1);

    /// The value as a `u32`.
    #[inline]
    pub const fn get(self) -> u32 {
        self.0
    }
}

impl TryFrom<u32> for U24 {
    type Error = LengthError;
    fn try_from(v: u32) -> Result<Self, LengthError> {
        LengthError::check("U24", "value", v as usize, Self::MAX.0 as usize)?;
        Ok(U24(v))
    }
}

impl From<u16> for U24 {
    fn from(v: u16) -> Self {
        U24(v.into())
    }
}

impl From<U24> for u32 {
    fn from(v: U24) -> u32 {
        v.0
    }
}

impl fmt::Debug for U24 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

impl fmt::Display for U24 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

fixed_wire!(
    U24,
    3,
    |v, buf| {
        let [a, b, c, _] = v.0.to_le_bytes();
        buf.put_slice(&[a, b, c])
    },
    |r| r.read_u24("U24").map(U24)
);

// ===== byte arrays =====

/// A string is not the hex form of a fixed-size byte type (see the types' `FromStr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseHexError {
    /// Wrong number of hex digits.
    #[error("{ty}: expected {expected} hex digits, got {actual}")]
    Length {
        /// The wire type, e.g. `"U256"`.
        ty: &'static str,
        /// Digits needed.
        expected: usize,
        /// Digits given.
        actual: usize,
    },
    /// A character that is not a hex digit.
    #[error("{ty}: not a hex digit at position {position}")]
    Digit {
        /// The wire type.
        ty: &'static str,
        /// Byte offset of the bad character (after any `0x`).
        position: usize,
    },
}

/// The value of a hex digit of either case.
pub(crate) fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn parse_hex<const N: usize>(s: &str, ty: &'static str) -> Result<[u8; N], ParseHexError> {
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let digits = s.as_bytes();
    if digits.len() != 2 * N {
        return Err(ParseHexError::Length {
            ty,
            expected: 2 * N,
            actual: digits.len(),
        });
    }
    let nibble = |i: usize| {
        let c = digits.get(i).copied().unwrap_or(b'?');
        hex_digit(c).ok_or(ParseHexError::Digit { ty, position: i })
    };
    let mut out = [0u8; N];
    for (k, b) in out.iter_mut().enumerate() {
        *b = (nibble(2 * k)? << 4) | nibble(2 * k + 1)?;
    }
    Ok(out)
}

macro_rules! byte_array {
    ($(#[$doc:meta])* $name:ident, $n:literal, $wire:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub [u8; $n]);

        impl $name {
            /// Size on the wire.
            pub const LEN: usize = $n;

            /// The bytes, in wire order.
            #[inline]
            pub const fn as_bytes(&self) -> &[u8; $n] {
                &self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                $name([0; $n])
            }
        }

        impl From<[u8; $n]> for $name {
            fn from(a: [u8; $n]) -> Self {
                $name(a)
            }
        }

        impl From<$name> for [u8; $n] {
            fn from(v: $name) -> Self {
                v.0
            }
        }

        impl TryFrom<&[u8]> for $name {
            type Error = LengthError;
            fn try_from(s: &[u8]) -> Result<Self, LengthError> {
                <[u8; $n]>::try_from(s).map($name).map_err(|_| LengthError {
                    ty: $wire,
                    what: "length",
                    actual: s.len() as u64,
                    max: $n,
                })
            }
        }

        impl AsRef<[u8]> for $name {
            fn as_ref(&self) -> &[u8] {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                crate::shared::fmt_hex(&self.0, f)
            }
        }

        /// Lower-case hex of the bytes in wire order (as `Debug`); parsed back by
        /// [`FromStr`](core::str::FromStr). For [`U256`] wire order is little-endian:
        /// the least significant byte first ([`U256::to_be_hex`] prints the integer as
        /// people write it).
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                crate::shared::fmt_hex(&self.0, f)
            }
        }

        /// Parses exactly `2 × LEN` hex digits (either case, optional `0x` prefix), bytes
        /// in wire order: the inverse of `Display`.
        impl core::str::FromStr for $name {
            type Err = ParseHexError;
            fn from_str(s: &str) -> Result<Self, ParseHexError> {
                parse_hex::<$n>(s, $wire).map($name)
            }
        }

        fixed_wire!($name, $n, |v, buf| buf.put_slice(&v.0), |r| r.array($wire).map($name));
    };
}

byte_array!(
    /// `U256`: 32 raw bytes, a 256-bit unsigned integer in little-endian order. Hashes are
    /// the raw SHA-256 bytes (Bitcoin's internal byte order); targets are LE integers.
    ///
    /// `Debug` and `Display` print the bytes **in wire order, little-endian** (least
    /// significant byte first), so a target reads backwards: 2^248 − 1 prints as
    /// `ffff…ff00`. [`to_be_hex`](U256::to_be_hex) prints it most significant byte first,
    /// as block explorers and pool dashboards show targets and hashes.
    ///
    /// ```
    /// use sv2c_binary::U256;
    /// let mut le = [0xff; 32];
    /// le[31] = 0x00; // the most significant byte, last on the wire
    /// let target = U256(le);
    /// assert!(target.to_string().ends_with("ff00"));
    /// assert!(target.to_be_hex().starts_with("00ff"));
    /// assert_eq!(U256::from_be_hex(&target.to_be_hex()), Ok(target));
    /// ```
    U256,
    32,
    "U256"
);
impl U256 {
    /// Lower-case hex of the integer, most significant byte first: the reverse of
    /// `Display`, which prints wire (little-endian) order.
    pub fn to_be_hex(&self) -> alloc::string::String {
        use core::fmt::Write;
        let mut s = alloc::string::String::with_capacity(64);
        for b in self.0.iter().rev() {
            let _ = write!(s, "{b:02x}");
        }
        s
    }

    /// Parses 64 hex digits (either case, optional `0x` prefix) of the integer, most
    /// significant byte first: the inverse of [`to_be_hex`](Self::to_be_hex).
    ///
    /// # Errors
    /// [`ParseHexError`] for a wrong length or a character that is not a hex digit.
    pub fn from_be_hex(s: &str) -> Result<Self, ParseHexError> {
        let mut bytes = parse_hex::<32>(s, "U256")?;
        bytes.reverse();
        Ok(U256(bytes))
    }
}

byte_array!(
    /// `PUBKEY`: a 32-byte BIP340 x-only public key (certificates only).
    PubKey,
    32,
    "PUBKEY"
);
byte_array!(
    /// `SIGNATURE`: a 64-byte BIP340 Schnorr signature.
    Signature,
    64,
    "SIGNATURE"
);
byte_array!(
    /// `MAC`: a 16-byte Poly1305 tag (Noise layer).
    Mac,
    16,
    "MAC"
);

// ===== B0_32 =====

/// `B0_32`: 0 to 32 bytes with a `U8` length prefix, stored inline (no allocation in either
/// form). A prefix above 32 is rejected on decode (spec §1.2).
///
/// ```
/// use sv2c_binary::{B032, from_bytes_ref, DecodeErrorKind};
/// let v = B032::try_from(&[0xaa, 0xbb][..]).unwrap();
/// assert_eq!(v.as_slice(), [0xaa, 0xbb]);
/// let mut too_long = vec![33u8];
/// too_long.extend([0; 33]);
/// let err = from_bytes_ref::<B032>(&too_long).unwrap_err();
/// assert_eq!(err.kind(), DecodeErrorKind::TooLong { len: 33, max: 32 });
/// ```
#[derive(Clone, Copy, Default)]
// The bytes first, at an 8-byte aligned offset, and the length after them, so that a
// message holding a `B032` is moved in whole 16-byte words; the array is built from words
// in registers (`short_words`), with no `memset` or `memcpy` call (ADR 0004).
#[repr(C, align(8))]
pub struct B032 {
    buf: [u8; 32],
    len: u8,
}

impl B032 {
    /// The largest length.
    pub const MAX_LEN: usize = 32;

    /// Empty.
    pub const fn new() -> Self {
        B032 {
            len: 0,
            buf: [0; 32],
        }
    }

    /// The bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        self.buf.get(..self.len as usize).unwrap_or(&[])
    }

    /// Number of bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// `true` if empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl TryFrom<&[u8]> for B032 {
    type Error = LengthError;
    // Inlined into the decoders, so that the array is not read back from the callee's
    // stores.
    #[inline]
    fn try_from(s: &[u8]) -> Result<Self, LengthError> {
        match u8::try_from(s.len()) {
            Ok(len) if s.len() <= Self::MAX_LEN => Ok(B032 {
                buf: crate::shared::short_words(s),
                len,
            }),
            _ => Err(LengthError {
                ty: "B0_32",
                what: "length",
                actual: s.len() as u64,
                max: 32,
            }),
        }
    }
}

impl<const N: usize> TryFrom<[u8; N]> for B032 {
    type Error = LengthError;
    fn try_from(a: [u8; N]) -> Result<Self, LengthError> {
        Self::try_from(&a[..])
    }
}

impl TryFrom<alloc::vec::Vec<u8>> for B032 {
    type Error = LengthError;
    fn try_from(v: alloc::vec::Vec<u8>) -> Result<Self, LengthError> {
        Self::try_from(&v[..])
    }
}

impl AsRef<[u8]> for B032 {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl core::ops::Deref for B032 {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for B032 {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for B032 {}

impl core::hash::Hash for B032 {
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl fmt::Debug for B032 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::shared::fmt_hex(self.as_slice(), f)
    }
}

impl Encode for B032 {
    #[inline]
    fn encoded_len(&self) -> usize {
        1 + self.len as usize
    }
    #[inline]
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        buf.put_u8(self.len);
        buf.put_slice(self.as_slice());
    }
}

impl<'a> Decode<'a> for B032 {
    #[inline]
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let start = r.position();
        let bytes = r.length_prefixed(1, 32, "B0_32")?;
        B032::try_from(bytes).map_err(|e| {
            DecodeError::new(
                DecodeErrorKind::TooLong {
                    len: e.actual as usize,
                    max: 32,
                },
                "B0_32",
                start,
            )
        })
    }
}
self_ref_wire!(B032, None);

/// A `B0_32` borrowed from the input: what a field of type [`B032`] marked
/// `#[sv2(borrow)]` is in the borrowed twin (a slice of at most 32 bytes instead of the
/// 33-byte inline copy). Built only from at most 32 bytes, so it always converts back.
///
/// ```
/// use sv2c_binary::{B032, B032Ref, Decode, Encode, WireRef};
/// let bytes = [3, 0xaa, 0xbb, 0xcc];
/// let v = B032Ref::decode_ref(&bytes).unwrap();
/// assert_eq!(v.as_bytes(), [0xaa, 0xbb, 0xcc]);
/// assert_eq!(v.to_owned_value(), B032::try_from(&bytes[1..]).unwrap());
/// assert_eq!(v.encode_to_vec(), bytes);
/// assert!(B032Ref::try_from(&[0u8; 33][..]).is_err());
/// ```
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct B032Ref<'a>(&'a [u8]);

borrowed_bytes!(B032Ref, B032, 32, "B0_32", crate::shared::fmt_hex);

impl<'a> From<&'a B032> for B032Ref<'a> {
    fn from(v: &'a B032) -> Self {
        B032Ref(v.as_slice())
    }
}

impl Encode for B032Ref<'_> {
    #[inline]
    fn encoded_len(&self) -> usize {
        1 + self.0.len()
    }
    #[inline]
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        // At most 32 bytes (checked when built), so the length fits its `U8`.
        buf.put_u8(self.0.len() as u8);
        buf.put_slice(self.0);
    }
}

impl<'a> Decode<'a> for B032Ref<'a> {
    #[inline]
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        // The same check, and so the same errors, as `B032`'s decode.
        r.length_prefixed(1, 32, "B0_32").map(B032Ref)
    }
}

impl<'a> WireRef<'a> for B032Ref<'a> {
    type Owned = B032;
}
impl ToOwnedIn<B032> for B032Ref<'_> {
    #[inline]
    fn to_owned_in(&self, _: &Backing<'_>) -> B032 {
        // Never the default: a `B032Ref` holds at most 32 bytes.
        B032::try_from(self.0).unwrap_or_default()
    }
}
