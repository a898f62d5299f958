//! `OPTION[T]`: a `U8` count of 0 or 1, then that many elements (spec §1.1).
//!
//! Mapped to Rust's `Option<T>` in both forms. A count of 2..=255 is rejected.
//!
//! ```
//! use sv2c_binary::{Encode, from_bytes_ref, DecodeErrorKind};
//! assert_eq!(Some(0x6650_0000u32).encode_to_vec(), [0x01, 0x00, 0x00, 0x50, 0x66]);
//! assert_eq!(None::<u32>.encode_to_vec(), [0x00]);
//! let err = from_bytes_ref::<Option<u32>>(&[2, 0, 0, 0, 0]).unwrap_err();
//! assert_eq!(err.kind(), DecodeErrorKind::InvalidOptionCount { count: 2 });
//! ```

use bytes::BufMut;

use crate::backing::{Backing, ToOwnedIn};
use crate::error::{DecodeError, DecodeErrorKind};
use crate::{Decode, Encode, Reader, Wire, WireRef};

impl<T: Encode> Encode for Option<T> {
    #[inline]
    fn encoded_len(&self) -> usize {
        1 + self.as_ref().map_or(0, Encode::encoded_len)
    }
    #[inline]
    fn encode<B: BufMut + ?Sized>(&self, buf: &mut B) {
        match self {
            None => buf.put_u8(0),
            Some(v) => {
                buf.put_u8(1);
                v.encode(buf);
            }
        }
    }
}

impl<'a, T: Decode<'a>> Decode<'a> for Option<T> {
    #[inline]
    fn decode(r: &mut Reader<'a>) -> Result<Self, DecodeError> {
        let start = r.position();
        match r.read_u8("OPTION")? {
            0 => Ok(None),
            1 => T::decode(r).map(Some),
            count => Err(DecodeError::new(
                DecodeErrorKind::InvalidOptionCount { count },
                "OPTION",
                start,
            )),
        }
    }
}

impl<T: Wire> Wire for Option<T> {
    type Ref<'a> = Option<T::Ref<'a>>;
    const INLINE: bool = T::INLINE;
    const FIXED_LEN: Option<usize> = None;
    #[inline]
    fn to_ref(&self) -> Self::Ref<'_> {
        self.as_ref().map(T::to_ref)
    }
}

impl<'a, R: WireRef<'a>> WireRef<'a> for Option<R> {
    type Owned = Option<R::Owned>;
}
impl<'a, R: WireRef<'a>> ToOwnedIn<Option<R::Owned>> for Option<R> {
    #[inline]
    fn to_owned_in(&self, backing: &Backing<'_>) -> Option<R::Owned> {
        self.as_ref().map(|v| v.to_owned_in(backing))
    }
}
