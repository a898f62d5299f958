//! The cursor decoding reads from.

use crate::error::{DecodeError, DecodeErrorKind};

// ===== Reader =====

/// `Reader` methods that read a little-endian integer.
macro_rules! read_le {
    ($( $(#[$doc:meta])* $name:ident -> $t:ty; )*) => {$(
        $(#[$doc])*
        ///
        /// # Errors
        /// Truncated input.
        #[inline]
        pub fn $name(&mut self, ty: &'static str) -> Result<$t, DecodeError> {
            self.array(ty).map(<$t>::from_le_bytes)
        }
    )*};
}

/// A cursor over the bytes being decoded. Knows its position so errors can report offsets.
///
/// ```
/// use sv2c_binary::Reader;
/// let mut r = Reader::new(&[1, 0, 2, 0, 0]);
/// assert_eq!(r.read_u16("U16").unwrap(), 1);
/// assert_eq!(r.position(), 2);
/// assert!(r.read_u32("U32").is_err()); // only 3 bytes left
/// ```
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    /// The whole input, for positions and [`input`](Reader::input).
    data: &'a [u8],
    /// The bytes not read yet, a suffix of `data`: a read is one length comparison and a
    /// move of its start (ADR 0014).
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader at the start of `data`.
    #[inline]
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, rest: data }
    }

    /// Offset of the next byte to read, from the start of the input.
    #[inline]
    pub fn position(&self) -> usize {
        self.data.len() - self.rest.len()
    }

    /// Number of bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The bytes not read yet (does not advance).
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }

    /// The whole input, read and unread.
    #[inline]
    pub fn input(&self) -> &'a [u8] {
        self.data
    }

    /// Takes the next `n` bytes; `ty` names the wire type for the error.
    ///
    /// # Errors
    /// [`DecodeErrorKind::Truncated`] if fewer than `n` bytes are left (offset = current
    /// position). Nothing is consumed then.
    #[inline]
    pub fn take(&mut self, n: usize, ty: &'static str) -> Result<&'a [u8], DecodeError> {
        match self.rest.split_at_checked(n) {
            Some((bytes, tail)) => {
                self.rest = tail;
                Ok(bytes)
            }
            None => Err(DecodeError::truncated(
                ty,
                self.position(),
                n,
                self.remaining(),
            )),
        }
    }

    /// Takes the next `N` bytes as an array.
    ///
    /// # Errors
    /// As [`take`](Reader::take).
    // Same body as `array_ref` on purpose: `Ok(*self.array_ref(ty)?)` changes the code
    // generated for every integer read (checked with `sv2c-icount`).
    #[inline]
    pub fn array<const N: usize>(&mut self, ty: &'static str) -> Result<[u8; N], DecodeError> {
        match self.rest.split_first_chunk::<N>() {
            Some((a, tail)) => {
                self.rest = tail;
                Ok(*a)
            }
            None => Err(DecodeError::truncated(
                ty,
                self.position(),
                N,
                self.rest.len(),
            )),
        }
    }

    /// Takes the next `N` bytes as a reference to an array inside the input (no copy).
    ///
    /// # Errors
    /// As [`take`](Reader::take).
    #[inline]
    pub fn array_ref<const N: usize>(
        &mut self,
        ty: &'static str,
    ) -> Result<&'a [u8; N], DecodeError> {
        match self.rest.split_first_chunk::<N>() {
            Some((a, tail)) => {
                self.rest = tail;
                Ok(a)
            }
            None => Err(DecodeError::truncated(
                ty,
                self.position(),
                N,
                self.rest.len(),
            )),
        }
    }

    /// Reads a `U8`.
    ///
    /// # Errors
    /// Truncated input.
    #[inline]
    pub fn read_u8(&mut self, ty: &'static str) -> Result<u8, DecodeError> {
        self.array::<1>(ty).map(|[b]| b)
    }

    /// Reads a little-endian `U24` into the low 24 bits of a `u32`.
    ///
    /// # Errors
    /// Truncated input.
    #[inline]
    pub fn read_u24(&mut self, ty: &'static str) -> Result<u32, DecodeError> {
        self.array::<3>(ty)
            .map(|[a, b, c]| u32::from_le_bytes([a, b, c, 0]))
    }

    read_le! {
        /// Reads a little-endian `U16`.
        read_u16 -> u16;
        /// Reads a little-endian `U32`.
        read_u32 -> u32;
        /// Reads a little-endian `U64`.
        read_u64 -> u64;
    }

    /// Reads a length prefix of `prefix_len` bytes (1, 2 or 3), checks it against `max`
    /// and against the bytes left, and takes that many bytes.
    ///
    /// # Errors
    /// Truncated input or a prefix above `max`; offsets point at the prefix.
    #[inline]
    pub fn length_prefixed(
        &mut self,
        prefix_len: usize,
        max: usize,
        ty: &'static str,
    ) -> Result<&'a [u8], DecodeError> {
        let saved = self.rest;
        let start = self.position();
        let len = match prefix_len {
            1 => self.read_u8(ty)? as usize,
            2 => self.read_u16(ty)? as usize,
            _ => self.read_u24(ty)? as usize,
        };
        if len > max {
            self.rest = saved;
            return Err(DecodeError::new(
                DecodeErrorKind::TooLong { len, max },
                ty,
                start,
            ));
        }
        match self.take(len, ty) {
            Ok(b) => Ok(b),
            Err(_) => {
                let available = saved.len();
                self.rest = saved;
                Err(DecodeError::truncated(
                    ty,
                    start,
                    prefix_len + len,
                    available,
                ))
            }
        }
    }
}
