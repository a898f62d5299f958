//! Sequences: `SEQ0_255[T]` and `SEQ0_64K[T]` (spec §1.1).
//!
//! The prefix counts **elements**. Both forms keep the elements in their encoded form:
//! the borrowed form points at them in the input, the owned form shares them in one
//! [`SharedBytes`]. Elements are decoded lazily while iterating; they were validated once,
//! when the sequence was decoded or built. Sequences of fixed-size elements (e.g. `U256`)
//! are checked by length alone and give O(1) [`get`](Seq064KRef::get).

use alloc::vec::Vec;
use bytes::BufMut;
use core::fmt;
use core::marker::PhantomData;

use crate::backing::{Backing, ToOwnedIn};
use crate::error::{DecodeError, LengthError};
use crate::shared::SharedBytes;
use crate::types::U256;
use crate::{Decode, Encode, Reader, Wire, WireRef};

/// Iterator over the elements of a borrowed sequence, yielding `T::Ref<'a>`.
pub struct SeqIter<'a, T: Wire> {
    reader: Reader<'a>,
    left: usize,
    _t: PhantomData<fn() -> T>,
}

impl<'a, T: Wire> SeqIter<'a, T> {
    fn new(data: &'a [u8], count: usize) -> Self {
        SeqIter {
            reader: Reader::new(data),
            left: count,
            _t: PhantomData,
        }
    }
}

impl<'a, T: Wire> Iterator for SeqIter<'a, T> {
    type Item = T::Ref<'a>;
    #[inline]
    fn next(&mut self) -> Option<T::Ref<'a>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // Elements were validated when the sequence was decoded or built; should that
        // ever be violated, iteration ends instead of panicking.
        match <T::Ref<'a> as Decode<'a>>::decode(&mut self.reader) {
            Ok(v) => Some(v),
            Err(_) => {
                self.left = 0;
                None
            }
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.left))
    }
}

impl<T: Wire> fmt::Debug for SeqIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeqIter").field("left", &self.left).finish()
    }
}

/// Iterator over the elements of an owned sequence, yielding owned `T` (variable-length
/// elements share the sequence's storage: no allocation).
pub struct SeqOwnedIter<'s, T: Wire> {
    inner: SeqIter<'s, T>,
    backing: Backing<'s>,
}

impl<T: Wire> Iterator for SeqOwnedIter<'_, T> {
    type Item = T;
    #[inline]
    fn next(&mut self) -> Option<T> {
        self.inner.next().map(|r| r.to_owned_in(&self.backing))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<T: Wire> fmt::Debug for SeqOwnedIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeqOwnedIter")
            .field("left", &self.inner.left)
            .finish()
    }
}

/// Walks `count` elements from the reader, returning the bytes they cover.
#[inline]
fn take_elements<'a, T: Wire>(
    r: &mut Reader<'a>,
    count: usize,
    prefix_len: usize,
    ty: &'static str,
) -> Result<&'a [u8], DecodeError> {
    if let Some(size) = T::FIXED_LEN {
        let start = r.position() - prefix_len;
        let needed = count * size;
        return r.take(needed, ty).map_err(|_| {
            DecodeError::truncated(ty, start, prefix_len + needed, prefix_len + r.remaining())
        });
    }
    let input = r.input();
    let start = r.position();
    for _ in 0..count {
        <T::Ref<'a> as Decode<'a>>::decode(r)?;
    }
    Ok(input.get(start..r.position()).unwrap_or(&[]))
}

/// `len` and `is_empty` of a sequence, written inside its `impl` block.
macro_rules! count_accessors {
    () => {
        /// Number of elements.
        #[inline]
        pub fn len(&self) -> usize {
            self.count as usize
        }

        /// `true` if there are no elements.
        #[inline]
        pub fn is_empty(&self) -> bool {
            self.count == 0
        }
    };
}

macro_rules! seq {
    (
        $(#[$odoc:meta])* owned $owned:ident,
        $(#[$rdoc:meta])* borrowed $borrowed:ident,
        wire $wire:literal, prefix $prefix:literal, max $max:expr
    ) => {
        $(#[$odoc])*
        pub struct $owned<T: Wire> {
            count: u16,
            data: SharedBytes,
            _t: PhantomData<fn() -> T>,
        }

        $(#[$rdoc])*
        pub struct $borrowed<'a, T: Wire> {
            count: u16,
            data: &'a [u8],
            _t: PhantomData<fn() -> T>,
        }

        impl<T: Wire> $owned<T> {
            /// The largest element count.
            pub const MAX_LEN: usize = $max;

            /// Empty (no allocation).
            pub const fn new() -> Self {
                $owned {
                    count: 0,
                    data: SharedBytes::new(),
                    _t: PhantomData,
                }
            }

            /// Builds a sequence from its elements (one allocation for all of them).
            ///
            /// # Errors
            /// [`LengthError`] if there are more than [`MAX_LEN`](Self::MAX_LEN) elements.
            pub fn from_slice(items: &[T]) -> Result<Self, LengthError> {
                LengthError::check($wire, "count", items.len(), $max)?;
                let len = items.iter().map(Encode::encoded_len).sum();
                let mut buf = Vec::with_capacity(len);
                for item in items {
                    item.encode(&mut buf);
                }
                Ok($owned {
                    count: items.len() as u16,
                    data: SharedBytes::from(buf),
                    _t: PhantomData,
                })
            }

            count_accessors!();

            /// Iterates over the elements as owned values (no allocation).
            pub fn iter(&self) -> SeqOwnedIter<'_, T> {
                SeqOwnedIter {
                    inner: SeqIter::new(self.data.as_slice(), self.len()),
                    backing: Backing::mirror(self.data.as_slice(), &self.data),
                }
            }

            /// Iterates over the elements in their borrowed form.
            pub fn iter_ref(&self) -> SeqIter<'_, T> {
                SeqIter::new(self.data.as_slice(), self.len())
            }

            /// The element at `index` (O(1) for fixed-size elements, O(index) otherwise).
            pub fn get(&self, index: usize) -> Option<T> {
                self.to_ref()
                    .get(index)
                    .map(|r| r.to_owned_in(&Backing::mirror(self.data.as_slice(), &self.data)))
            }

            /// Collects the elements into a `Vec`.
            pub fn to_vec(&self) -> Vec<T> {
                self.iter().collect()
            }

            /// The encoded elements, without the count prefix.
            pub fn encoded_elements(&self) -> &[u8] {
                self.data.as_slice()
            }
        }

        impl<'a, T: Wire> $borrowed<'a, T> {
            /// The largest element count.
            pub const MAX_LEN: usize = $max;

            /// A sequence over already-encoded elements; they are validated here.
            ///
            /// # Errors
            /// [`DecodeError`] if `bytes` is not exactly `count` valid elements, or `count`
            /// is above [`MAX_LEN`](Self::MAX_LEN).
            pub fn from_encoded(count: usize, bytes: &'a [u8]) -> Result<Self, DecodeError> {
                if count > $max {
                    return Err(DecodeError::new(
                        crate::error::DecodeErrorKind::TooLong { len: count, max: $max },
                        $wire,
                        0,
                    ));
                }
                let mut r = Reader::new(bytes);
                let data = take_elements::<T>(&mut r, count, 0, $wire)?;
                if r.remaining() != 0 {
                    return Err(DecodeError::new(
                        crate::error::DecodeErrorKind::TrailingBytes { len: r.remaining() },
                        $wire,
                        r.position(),
                    ));
                }
                Ok($borrowed {
                    count: count as u16,
                    data,
                    _t: PhantomData,
                })
            }

            count_accessors!();

            /// Iterates over the elements (decoded lazily, no allocation).
            pub fn iter(&self) -> SeqIter<'a, T> {
                SeqIter::new(self.data, self.len())
            }

            /// The element at `index` (O(1) for fixed-size elements, O(index) otherwise).
            pub fn get(&self, index: usize) -> Option<T::Ref<'a>> {
                if index >= self.len() {
                    return None;
                }
                match T::FIXED_LEN {
                    Some(size) => {
                        let bytes = self.data.get(index * size..)?;
                        <T::Ref<'a> as Decode<'a>>::decode(&mut Reader::new(bytes)).ok()
                    }
                    None => self.iter().nth(index),
                }
            }

            /// The encoded elements, without the count prefix.
            pub fn encoded_elements(&self) -> &'a [u8] {
                self.data
            }
        }

        impl<T: Wire> TryFrom<&[T]> for $owned<T> {
            type Error = LengthError;
            fn try_from(items: &[T]) -> Result<Self, LengthError> {
                Self::from_slice(items)
            }
        }

        impl<T: Wire> TryFrom<Vec<T>> for $owned<T> {
            type Error = LengthError;
            fn try_from(items: Vec<T>) -> Result<Self, LengthError> {
                Self::from_slice(&items)
            }
        }

        impl<T: Wire> Clone for $owned<T> {
            fn clone(&self) -> Self {
                $owned {
                    count: self.count,
                    data: self.data.clone(),
                    _t: PhantomData,
                }
            }
        }

        impl<T: Wire> Clone for $borrowed<'_, T> {
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<T: Wire> Copy for $borrowed<'_, T> {}

        impl<T: Wire> Default for $owned<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T: Wire> Default for $borrowed<'_, T> {
            fn default() -> Self {
                $borrowed {
                    count: 0,
                    data: &[],
                    _t: PhantomData,
                }
            }
        }

        impl<T: Wire> PartialEq for $owned<T> {
            fn eq(&self, other: &Self) -> bool {
                self.count == other.count && self.data == other.data
            }
        }
        impl<T: Wire> Eq for $owned<T> {}

        impl<T: Wire> PartialEq for $borrowed<'_, T> {
            fn eq(&self, other: &Self) -> bool {
                self.count == other.count && self.data == other.data
            }
        }
        impl<T: Wire> Eq for $borrowed<'_, T> {}

        impl<T: Wire> PartialEq<$borrowed<'_, T>> for $owned<T> {
            fn eq(&self, other: &$borrowed<'_, T>) -> bool {
                self.count == other.count && self.data.as_slice() == other.data
            }
        }

        impl<T: Wire> core::hash::Hash for $owned<T> {
            fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
                self.count.hash(state);
                self.data.hash(state);
            }
        }

        impl<T: Wire + fmt::Debug> fmt::Debug for $owned<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list().entries(self.iter()).finish()
            }
        }

        impl<'a, T: Wire> fmt::Debug for $borrowed<'a, T>
        where
            T::Ref<'a>: fmt::Debug,
        {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_list().entries(self.iter()).finish()
            }
        }

        impl<T: Wire> Encode for $owned<T> {
            #[inline]
            fn encoded_len(&self) -> usize {
                $prefix + self.data.len()
            }
            #[inline]
            fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
                buf.put_slice(&self.count.to_le_bytes()[..$prefix]);
                buf.put_slice(self.data.as_slice());
            }
        }

        impl<T: Wire> Encode for $borrowed<'_, T> {
            #[inline]
            fn encoded_len(&self) -> usize {
                $prefix + self.data.len()
            }
            #[inline]
            fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
                buf.put_slice(&self.count.to_le_bytes()[..$prefix]);
                buf.put_slice(self.data);
            }
        }

        impl<'a, T: Wire> Decode<'a> for $borrowed<'a, T> {
            #[inline]
            fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
                let count = if $prefix == 1 {
                    u16::from(r.read_u8($wire)?)
                } else {
                    r.read_u16($wire)?
                };
                let data = take_elements::<T>(r, count as usize, $prefix, $wire)?;
                Ok($borrowed {
                    count,
                    data,
                    _t: PhantomData,
                })
            }
        }

        impl<T: Wire> Wire for $owned<T> {
            type Ref<'a> = $borrowed<'a, T>;
            const INLINE: bool = false;
            const FIXED_LEN: Option<usize> = None;
            #[inline]
            fn to_ref(&self) -> $borrowed<'_, T> {
                $borrowed {
                    count: self.count,
                    data: self.data.as_slice(),
                    _t: PhantomData,
                }
            }
        }

        impl<'a, T: Wire> WireRef<'a> for $borrowed<'a, T> {
            type Owned = $owned<T>;
        }
        impl<'a, T: Wire> ToOwnedIn<$owned<T>> for $borrowed<'a, T> {
            #[inline]
            fn to_owned_in(&self, backing: &Backing<'_>) -> $owned<T> {
                $owned {
                    count: self.count,
                    data: backing.share(self.data),
                    _t: PhantomData,
                }
            }
        }

        impl<'a, T: Wire> IntoIterator for $borrowed<'a, T> {
            type Item = T::Ref<'a>;
            type IntoIter = SeqIter<'a, T>;
            fn into_iter(self) -> SeqIter<'a, T> {
                self.iter()
            }
        }

        impl<'s, T: Wire> IntoIterator for &'s $owned<T> {
            type Item = T;
            type IntoIter = SeqOwnedIter<'s, T>;
            fn into_iter(self) -> SeqOwnedIter<'s, T> {
                self.iter()
            }
        }

        impl $owned<U256> {
            /// The elements as 32-byte arrays, without copying.
            pub fn as_arrays(&self) -> &[[u8; 32]] {
                as_u256_arrays(self.data.as_slice())
            }
        }

        impl<'a> $borrowed<'a, U256> {
            /// The elements as 32-byte arrays, without copying.
            pub fn as_arrays(&self) -> &'a [[u8; 32]] {
                as_u256_arrays(self.data)
            }

            /// A borrowed sequence over 32-byte arrays, without copying.
            ///
            /// # Errors
            /// [`LengthError`] if there are more than [`MAX_LEN`](Self::MAX_LEN) elements.
            pub fn from_arrays(items: &'a [[u8; 32]]) -> Result<Self, LengthError> {
                LengthError::check($wire, "count", items.len(), $max)?;
                Ok($borrowed {
                    count: items.len() as u16,
                    data: items.as_flattened(),
                    _t: PhantomData,
                })
            }
        }
    };
}

seq!(
    /// `SEQ0_255[T]`: up to 255 elements with a `U8` count prefix (owned; see the module
    /// docs for the storage).
    ///
    /// ```
    /// use sv2c_binary::{Seq0255, U256, Encode, from_bytes};
    /// let path = Seq0255::from_slice(&[U256([0x11; 32]), U256([0x22; 32])]).unwrap();
    /// let bytes = path.encode_to_vec();
    /// assert_eq!((bytes[0], bytes.len()), (2, 65));
    /// let back: Seq0255<U256> = from_bytes(&bytes).unwrap();
    /// assert_eq!(back.get(1), Some(U256([0x22; 32])));
    /// ```
    owned Seq0255,
    /// Borrowed `SEQ0_255[T]` (see [`Seq0255`]).
    borrowed Seq0255Ref,
    wire "SEQ0_255", prefix 1, max 255
);
seq!(
    /// `SEQ0_64K[T]`: up to 65 535 elements with a `U16` count prefix (owned; see the
    /// module docs for the storage).
    ///
    /// ```
    /// use sv2c_binary::{Seq064K, B016M, Encode, from_bytes};
    /// let txs = Seq064K::from_slice(&[
    ///     B016M::try_from(vec![1, 2, 3]).unwrap(),
    ///     B016M::try_from(vec![]).unwrap(),
    /// ]).unwrap();
    /// assert_eq!(txs.encode_to_vec(), [0x02, 0x00, 0x03, 0x00, 0x00, 1, 2, 3, 0x00, 0x00, 0x00]);
    /// let back: Seq064K<B016M> = from_bytes(&txs.encode_to_vec()).unwrap();
    /// assert_eq!(back.iter().map(|t| t.len()).collect::<Vec<_>>(), [3, 0]);
    /// ```
    owned Seq064K,
    /// Borrowed `SEQ0_64K[T]` (see [`Seq064K`]).
    borrowed Seq064KRef,
    wire "SEQ0_64K", prefix 2, max 65_535
);

/// `bytes` as 32-byte arrays. A sequence of `U256` always holds a multiple of 32 bytes; a
/// trailing partial element (which no constructor makes) would be left out.
fn as_u256_arrays(bytes: &[u8]) -> &[[u8; 32]] {
    let whole = bytes.len() - bytes.len() % 32;
    bytemuck::try_cast_slice(&bytes[..whole]).unwrap_or_default()
}
