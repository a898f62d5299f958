//! Every Sv2 data type (spec §1), owned and borrowed.
//!
//! | Sv2 type | owned | borrowed (`Ref`) |
//! |---|---|---|
//! | BOOL, U8, U16, U32, U64, F32 | `bool`, `u8`, `u16`, `u32`, `u64`, `f32` | same |
//! | U24 | [`U24`] | same |
//! | U256, PUBKEY, SIGNATURE, MAC | [`U256`], [`PubKey`], [`Signature`], [`Mac`] (inline arrays) | same (`&[u8; N]` into the input for a field marked `#[sv2(borrow)]`) |
//! | B0_32 | [`B032`] (inline, ≤ 32 bytes) | same ([`B032Ref`], a slice, for a field marked `#[sv2(borrow)]`) |
//! | STR0_255 | [`Str0255`] | [`Str0255Ref`] |
//! | B0_255, B0_64K, B0_16M | [`B0255`], [`B064K`], [`B016M`] | [`B0255Ref`], [`B064KRef`], [`B016MRef`] |
//! | OPTION\[T\] | `Option<T>` | `Option<T::Ref>` |
//! | SEQ0_255\[T\], SEQ0_64K\[T\] | [`Seq0255<T>`], [`Seq064K<T>`] | [`Seq0255Ref<T>`], [`Seq064KRef<T>`] |
//!
//! Fixed-size values are read by value in both forms (they are at most 64 bytes), except
//! the byte arrays and `B0_32` of a field marked `#[sv2(borrow)]`, which the `Ref` form
//! points to in the input (see [`Wire`](macro@crate::Wire)); every variable-length value
//! borrows the input in its `Ref` form and shares the message's one backing buffer in its
//! owned form.

/// What every borrowed length-prefixed byte type (`B032Ref`, `B0255Ref`, ...) has: a tuple
/// struct over `&'a [u8]` of at most `$max` bytes, the borrowed form of `$owned`, shown by
/// `$debug`.
macro_rules! borrowed_bytes {
    ($borrowed:ident, $owned:ident, $max:expr, $wire:literal, $debug:path) => {
        impl<'a> $borrowed<'a> {
            /// The largest length allowed.
            pub const MAX_LEN: usize = $max;

            /// The borrowed bytes.
            #[inline]
            pub fn as_bytes(&self) -> &'a [u8] {
                self.0
            }

            len_accessors!();
        }

        impl<'a> TryFrom<&'a [u8]> for $borrowed<'a> {
            type Error = LengthError;
            fn try_from(b: &'a [u8]) -> Result<Self, LengthError> {
                LengthError::check($wire, "length", b.len(), $max)?;
                Ok($borrowed(b))
            }
        }

        impl AsRef<[u8]> for $borrowed<'_> {
            fn as_ref(&self) -> &[u8] {
                self.0
            }
        }

        impl PartialEq<$borrowed<'_>> for $owned {
            fn eq(&self, other: &$borrowed<'_>) -> bool {
                AsRef::<[u8]>::as_ref(self) == other.0
            }
        }

        impl PartialEq<$owned> for $borrowed<'_> {
            fn eq(&self, other: &$owned) -> bool {
                self.0 == AsRef::<[u8]>::as_ref(other)
            }
        }

        impl fmt::Debug for $borrowed<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                $debug(self.0, f)
            }
        }
    };
}

/// `len` and `is_empty` of a byte type that wraps its bytes as `self.0` (a slice or a
/// `SharedBytes`), written inside its `impl` block.
macro_rules! len_accessors {
    () => {
        /// Number of bytes (without the length prefix).
        #[inline]
        pub fn len(&self) -> usize {
            self.0.len()
        }

        /// `true` if empty.
        #[inline]
        pub fn is_empty(&self) -> bool {
            self.0.is_empty()
        }
    };
}

/// Implements `Wire`/`WireRef` for a `Copy` type that is its own borrowed form.
macro_rules! self_ref_wire {
    ($t:ty, $fixed:expr) => {
        impl Wire for $t {
            type Ref<'a> = $t;
            const INLINE: bool = true;
            const FIXED_LEN: Option<usize> = $fixed;
            #[inline]
            fn to_ref(&self) -> $t {
                *self
            }
        }
        impl<'a> WireRef<'a> for $t {
            type Owned = $t;
        }
        impl ToOwnedIn<$t> for $t {
            #[inline]
            fn to_owned_in(&self, _: &Backing<'_>) -> $t {
                *self
            }
        }
    };
}

mod fixed;
mod option;
mod prefixed;
mod protocol;
mod seq;

#[cfg(feature = "serde")]
pub(crate) use fixed::hex_digit;
pub use fixed::{B032, B032Ref, Mac, ParseHexError, PubKey, Signature, U24, U256};
pub use prefixed::{B016M, B016MRef, B064K, B064KRef, B0255, B0255Ref, Str0255, Str0255Ref};
pub use protocol::{Protocol, UnknownProtocol};
pub use seq::{Seq064K, Seq064KRef, Seq0255, Seq0255Ref, SeqIter, SeqOwnedIter};
