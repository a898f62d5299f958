//! Hex fields: [`Extranonce`] (up to 32 bytes, inline) and the 32-bit words of SV1
//! (`ntime`, `nonce`, `version`, `nbits`, masks), written as 8 big-endian hex digits.

use core::fmt;

use bytes::{BufMut, BytesMut};

use crate::error::ParamsError;

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// The value of one hex digit, or `None`.
#[inline]
fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes an even number of hex digits into `out`, which must be exactly half as long.
pub(crate) fn decode_into(hex: &[u8], out: &mut [u8]) -> Option<()> {
    if hex.len() != out.len() * 2 {
        return None;
    }
    for (pair, byte) in hex.chunks_exact(2).zip(out.iter_mut()) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(())
}

/// Decodes an even number of hex digits into a new vector.
pub(crate) fn decode_vec(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    let mut out = vec![0; hex.len() / 2];
    decode_into(hex.as_bytes(), &mut out)?;
    Some(out)
}

/// Decodes a fixed-size hex field (`prevhash`, a merkle branch node).
pub(crate) fn decode_array<const N: usize>(hex: &str) -> Option<[u8; N]> {
    let mut out = [0; N];
    decode_into(hex.as_bytes(), &mut out)?;
    Some(out)
}

/// Reads a 32-bit word written as 1 to 8 hex digits, big-endian (`"6650ab12"`); fewer than
/// 8 digits are read as if padded with zeros on the left, as most servers do.
#[inline]
pub fn parse_u32(hex: &str) -> Option<u32> {
    if hex.is_empty() || hex.len() > 8 {
        return None;
    }
    hex.bytes()
        .try_fold(0u32, |acc, c| Some((acc << 4) | u32::from(nibble(c)?)))
}

/// Appends lowercase hex digits of `bytes` to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut BytesMut) {
    out.reserve(bytes.len() * 2);
    for b in bytes {
        out.put_u8(DIGITS[usize::from(b >> 4)]);
        out.put_u8(DIGITS[usize::from(b & 0x0f)]);
    }
}

/// Lowercase hex digits of `bytes`.
pub(crate) fn encode_string(bytes: &[u8]) -> String {
    let mut out = BytesMut::with_capacity(bytes.len() * 2);
    encode_into(bytes, &mut out);
    // Only ASCII digits were written.
    String::from_utf8_lossy(&out).into_owned()
}

/// A 32-bit word as the 8 lowercase hex digits SV1 sends.
pub(crate) fn u32_digits(v: u32) -> [u8; 8] {
    let mut out = [0; 8];
    for (i, d) in out.iter_mut().enumerate() {
        *d = DIGITS[((v >> (28 - 4 * i)) & 0xf) as usize];
    }
    out
}

// ===== Extranonce =====

/// An extranonce (`extranonce1` or `extranonce2`): 0 to 32 bytes, stored inline, sent as
/// hex. 32 bytes is Stratum V2's limit for the whole extranonce, so every SV1 extranonce a
/// proxy can map onto a Stratum V2 channel fits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Extranonce {
    len: u8,
    bytes: [u8; Extranonce::MAX_LEN],
}

impl Extranonce {
    /// The longest extranonce, in bytes.
    pub const MAX_LEN: usize = 32;

    /// An extranonce of these bytes, or `None` if there are more than
    /// [`MAX_LEN`](Self::MAX_LEN).
    pub fn new(bytes: &[u8]) -> Option<Self> {
        let mut e = Extranonce::default();
        e.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        e.len = bytes.len() as u8; // at most 32: checked by `get_mut` above
        Some(e)
    }

    /// Decodes an even number of hex digits (at most 64), without allocating.
    pub fn from_hex(hex: &str) -> Option<Self> {
        if hex.len() % 2 != 0 || hex.len() > 2 * Self::MAX_LEN {
            return None;
        }
        let mut e = Extranonce {
            len: (hex.len() / 2) as u8, // at most 32: checked above
            ..Default::default()
        };
        decode_into(hex.as_bytes(), &mut e.bytes[..hex.len() / 2])?;
        Some(e)
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// `true` for the empty extranonce.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl fmt::Debug for Extranonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Extranonce({self})")
    }
}

/// Lowercase hex, as sent.
impl fmt::Display for Extranonce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_bytes()
            .iter()
            .try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// A hex field of a message, or the [`ParamsError`] that names it.
pub(crate) fn field<T>(v: Option<T>, field: &'static str) -> Result<T, ParamsError> {
    v.ok_or(ParamsError::Field {
        field,
        expected: "hex digits",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(parse_u32("6650ab12"), Some(0x6650_ab12));
        assert_eq!(parse_u32("1FFFE000"), Some(0x1fff_e000));
        assert_eq!(parse_u32("2"), Some(2));
        assert_eq!(parse_u32(""), None);
        assert_eq!(parse_u32("123456789"), None);
        assert_eq!(parse_u32("12g4"), None);
        assert_eq!(&u32_digits(0x0000_ab12), b"0000ab12");
    }

    #[test]
    fn extranonce() {
        let e = Extranonce::from_hex("00ff10").unwrap();
        assert_eq!(e.as_bytes(), &[0, 0xff, 0x10]);
        assert_eq!(e.to_string(), "00ff10");
        assert!(Extranonce::from_hex("0").is_none());
        assert!(Extranonce::from_hex(&"00".repeat(33)).is_none());
        assert!(Extranonce::new(&[0; 33]).is_none());
        assert_eq!(Extranonce::new(&[]).unwrap().len(), 0);
    }
}
