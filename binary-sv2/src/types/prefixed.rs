//! Length-prefixed byte strings: STR0_255, B0_255, B0_64K, B0_16M.
//!
//! Owned forms hold a [`SharedBytes`]; borrowed forms hold a slice of the input. Both check
//! the maximum length when built, so encoding cannot fail.

use alloc::string::String;
use alloc::vec::Vec;
use bytes::{BufMut, Bytes};
use core::fmt;

use crate::backing::{Backing, ToOwnedIn};
use crate::error::{DecodeError, LengthError};
use crate::shared::SharedBytes;
use crate::{Decode, Encode, Reader, Wire, WireRef};

macro_rules! prefixed {
    (
        $(#[$odoc:meta])* owned $owned:ident,
        $(#[$rdoc:meta])* borrowed $borrowed:ident,
        wire $wire:literal, prefix $prefix:literal, max $max:expr, debug $debug:path
    ) => {
        $(#[$odoc])*
        #[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $owned(SharedBytes);

        $(#[$rdoc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $borrowed<'a>(&'a [u8]);

        impl $owned {
            /// The largest length allowed.
            pub const MAX_LEN: usize = $max;

            /// Empty (no allocation).
            pub const fn new() -> Self {
                $owned(SharedBytes::new())
            }

            /// Wraps static bytes without copying or allocating.
            ///
            /// # Errors
            /// [`LengthError`] if longer than [`MAX_LEN`](Self::MAX_LEN).
            pub fn from_static(bytes: &'static [u8]) -> Result<Self, LengthError> {
                LengthError::check($wire, "length", bytes.len(), $max)?;
                Ok($owned(SharedBytes::from_static(bytes)))
            }

            /// The bytes.
            #[inline]
            pub fn as_bytes(&self) -> &[u8] {
                self.0.as_slice()
            }

            len_accessors!();

            /// The underlying shared storage.
            pub fn into_inner(self) -> SharedBytes {
                self.0
            }

            /// The bytes as a [`Bytes`], without copying them.
            pub fn into_bytes(self) -> Bytes {
                self.0.into_bytes()
            }
        }

        borrowed_bytes!($borrowed, $owned, $max, $wire, $debug);

        impl TryFrom<SharedBytes> for $owned {
            type Error = LengthError;
            fn try_from(b: SharedBytes) -> Result<Self, LengthError> {
                LengthError::check($wire, "length", b.len(), $max)?;
                Ok($owned(b))
            }
        }

        impl TryFrom<&[u8]> for $owned {
            type Error = LengthError;
            /// Copies the bytes.
            fn try_from(b: &[u8]) -> Result<Self, LengthError> {
                LengthError::check($wire, "length", b.len(), $max)?;
                Ok($owned(SharedBytes::copy_from_slice(b)))
            }
        }

        impl TryFrom<Vec<u8>> for $owned {
            type Error = LengthError;
            /// Takes the vector without copying.
            fn try_from(b: Vec<u8>) -> Result<Self, LengthError> {
                LengthError::check($wire, "length", b.len(), $max)?;
                Ok($owned(SharedBytes::from(b)))
            }
        }

        impl TryFrom<Bytes> for $owned {
            type Error = LengthError;
            fn try_from(b: Bytes) -> Result<Self, LengthError> {
                LengthError::check($wire, "length", b.len(), $max)?;
                Ok($owned(SharedBytes::from(b)))
            }
        }

        impl AsRef<[u8]> for $owned {
            fn as_ref(&self) -> &[u8] {
                self.as_bytes()
            }
        }

        impl fmt::Debug for $owned {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                $debug(self.as_bytes(), f)
            }
        }

        impl Encode for $owned {
            #[inline]
            fn encoded_len(&self) -> usize {
                $prefix + self.len()
            }
            #[inline]
            fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
                self.0.put_prefixed::<$prefix, B>(buf)
            }
        }

        impl Encode for $borrowed<'_> {
            #[inline]
            fn encoded_len(&self) -> usize {
                $prefix + self.0.len()
            }
            #[inline]
            fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
                crate::raw_copy::put_prefixed::<$prefix, { crate::raw_copy::SHORT_MAX }, B>(buf, self.0)
            }
        }

        impl<'a> Decode<'a> for $borrowed<'a> {
            #[inline]
            fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
                r.length_prefixed($prefix, $max, $wire).map($borrowed)
            }
        }

        impl Wire for $owned {
            type Ref<'a> = $borrowed<'a>;
            const INLINE: bool = false;
            const FIXED_LEN: Option<usize> = None;
            #[inline]
            fn to_ref(&self) -> $borrowed<'_> {
                $borrowed(self.as_bytes())
            }
        }

        impl<'a> WireRef<'a> for $borrowed<'a> {
            type Owned = $owned;
        }
        impl ToOwnedIn<$owned> for $borrowed<'_> {
            #[inline]
            fn to_owned_in(&self, backing: &Backing<'_>) -> $owned {
                $owned(backing.share(self.0))
            }
        }
    };
}

prefixed!(
    /// `STR0_255`: up to 255 bytes of text with a `U8` length prefix.
    ///
    /// The spec requires no encoding, so the content is kept as bytes and decoding never
    /// fails because of it (spec §1.3); [`as_str`](Str0255::as_str) checks UTF-8 on demand.
    ///
    /// ```
    /// use sv2c_binary::{Str0255, Encode, from_bytes};
    /// let s = Str0255::try_from("pool.example").unwrap();
    /// let bytes = s.encode_to_vec();
    /// assert_eq!(bytes[0], 12);
    /// let back: Str0255 = from_bytes(&bytes).unwrap();
    /// assert_eq!(back.as_str(), Ok("pool.example"));
    /// ```
    owned Str0255,
    /// Borrowed `STR0_255` (see [`Str0255`]).
    borrowed Str0255Ref,
    wire "STR0_255", prefix 1, max 255, debug crate::shared::fmt_text
);
prefixed!(
    /// `B0_255`: up to 255 bytes with a `U8` length prefix.
    owned B0255,
    /// Borrowed `B0_255` (see [`B0255`]).
    borrowed B0255Ref,
    wire "B0_255", prefix 1, max 255, debug crate::shared::fmt_hex
);
prefixed!(
    /// `B0_64K`: up to 65 535 bytes with a `U16` length prefix.
    owned B064K,
    /// Borrowed `B0_64K` (see [`B064K`]).
    borrowed B064KRef,
    wire "B0_64K", prefix 2, max 65_535, debug crate::shared::fmt_hex
);
prefixed!(
    /// `B0_16M`: up to 16 777 215 bytes with a `U24` length prefix.
    owned B016M,
    /// Borrowed `B0_16M` (see [`B016M`]).
    borrowed B016MRef,
    wire "B0_16M", prefix 3, max 16_777_215, debug crate::shared::fmt_hex
);

impl Str0255 {
    /// The text, if it is valid UTF-8.
    ///
    /// # Errors
    /// The UTF-8 error if it is not.
    pub fn as_str(&self) -> Result<&str, core::str::Utf8Error> {
        core::str::from_utf8(self.as_bytes())
    }

    /// Wraps a static string without copying.
    ///
    /// # Errors
    /// [`LengthError`] if longer than 255 bytes.
    pub fn from_static_str(s: &'static str) -> Result<Self, LengthError> {
        Self::from_static(s.as_bytes())
    }
}

/// Writes `bytes` as text, each invalid UTF-8 sequence replaced by U+FFFD (no allocation).
fn fmt_lossy(bytes: &[u8], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    for chunk in bytes.utf8_chunks() {
        f.write_str(chunk.valid())?;
        if !chunk.invalid().is_empty() {
            f.write_str("\u{fffd}")?;
        }
    }
    Ok(())
}

/// The text, lossily: invalid UTF-8 is shown as U+FFFD (use
/// [`as_str`](Str0255::as_str) to detect it).
impl fmt::Display for Str0255 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_lossy(self.as_bytes(), f)
    }
}

/// The text, lossily (see [`Str0255`]'s `Display`).
impl fmt::Display for Str0255Ref<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_lossy(self.0, f)
    }
}

impl<'a> Str0255Ref<'a> {
    /// The text, if it is valid UTF-8.
    ///
    /// # Errors
    /// The UTF-8 error if it is not.
    pub fn as_str(&self) -> Result<&'a str, core::str::Utf8Error> {
        core::str::from_utf8(self.0)
    }
}

impl TryFrom<&str> for Str0255 {
    type Error = LengthError;
    /// Copies the text.
    fn try_from(s: &str) -> Result<Self, LengthError> {
        Self::try_from(s.as_bytes())
    }
}

/// Copies the text (`"pool.example".parse::<Str0255>()`).
impl core::str::FromStr for Str0255 {
    type Err = LengthError;
    fn from_str(s: &str) -> Result<Self, LengthError> {
        Self::try_from(s)
    }
}

impl TryFrom<String> for Str0255 {
    type Error = LengthError;
    /// Takes the string without copying.
    fn try_from(s: String) -> Result<Self, LengthError> {
        Self::try_from(s.into_bytes())
    }
}

impl<'a> TryFrom<&'a str> for Str0255Ref<'a> {
    type Error = LengthError;
    fn try_from(s: &'a str) -> Result<Self, LengthError> {
        Self::try_from(s.as_bytes())
    }
}
