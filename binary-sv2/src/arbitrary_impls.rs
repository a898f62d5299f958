//! `arbitrary::Arbitrary` for the data types (feature `arbitrary`), so that fuzzers and
//! property tests can build well-formed messages from unstructured bytes.
//!
//! Every value produced respects its type's bounds (B0_32 ≤ 32 bytes, STR0_255 and
//! B0_255 ≤ 255, B0_64K ≤ 65 535, B0_16M ≤ 2^24 − 1, sequence counts, U24 ≤ 2^24 − 1,
//! `SetupConnection.protocol` ∈ {0, 1, 2}), so it always encodes. Byte strings take
//! their length from [`Unstructured::arbitrary_len`], which never asks for more bytes
//! than are left; `STR0_255` content is any bytes, as the spec allows (§1.3). `f32`,
//! `bool`, the integers and `Option` use the `arbitrary` crate's own impls (`f32` from
//! its bits, NaN and infinities included).

use alloc::vec::Vec;
use arbitrary::{Arbitrary, Result, Unstructured};

use crate::Wire;
use crate::messages::Protocol;
use crate::types::{
    B016M, B032, B064K, B0255, Mac, PubKey, Seq064K, Seq0255, Signature, Str0255, U24, U256,
};

impl<'a> Arbitrary<'a> for U24 {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let v = u.int_in_range(0..=U24::MAX.get())?;
        U24::try_from(v).map_err(|_| arbitrary::Error::IncorrectFormat)
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (0, Some(3))
    }
}

/// The fixed-size byte arrays: `N` bytes taken as they are.
macro_rules! array_arbitrary {
    ($($t:ident: $n:literal),* $(,)?) => {$(
        impl<'a> Arbitrary<'a> for $t {
            fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
                <[u8; $n]>::arbitrary(u).map($t)
            }

            fn size_hint(_depth: usize) -> (usize, Option<usize>) {
                ($n, Some($n))
            }
        }
    )*};
}

array_arbitrary!(U256: 32, PubKey: 32, Signature: 64, Mac: 16);

/// Takes a byte string of at most `max` bytes.
fn bounded_bytes<'a>(u: &mut Unstructured<'a>, max: usize) -> Result<&'a [u8]> {
    let len = u.arbitrary_len::<u8>()?.min(max);
    u.bytes(len)
}

/// The length-prefixed byte strings, with their largest encoded length if small.
macro_rules! prefixed_arbitrary {
    ($($t:ident: $max_encoded:expr),* $(,)?) => {$(
        impl<'a> Arbitrary<'a> for $t {
            fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
                let bytes = bounded_bytes(u, $t::MAX_LEN)?;
                $t::try_from(bytes).map_err(|_| arbitrary::Error::IncorrectFormat)
            }

            fn size_hint(_depth: usize) -> (usize, Option<usize>) {
                (0, $max_encoded)
            }
        }
    )*};
}

prefixed_arbitrary!(B032: Some(1 + B032::MAX_LEN), Str0255: None, B0255: None, B064K: None, B016M: None);

/// Sequences: a count no larger than the type allows (and than the data can pay for),
/// then that many arbitrary elements.
macro_rules! seq_arbitrary {
    ($($t:ident),* $(,)?) => {$(
        impl<'a, T: Wire + Arbitrary<'a>> Arbitrary<'a> for $t<T> {
            fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
                let count = u.arbitrary_len::<T>()?.min($t::<T>::MAX_LEN);
                let items = (0..count)
                    .map(|_| T::arbitrary(u))
                    .collect::<Result<Vec<T>>>()?;
                $t::from_slice(&items).map_err(|_| arbitrary::Error::IncorrectFormat)
            }

            fn size_hint(_depth: usize) -> (usize, Option<usize>) {
                (0, None)
            }
        }
    )*};
}

seq_arbitrary!(Seq0255, Seq064K);

impl<'a> Arbitrary<'a> for Protocol {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        u.choose(&[
            Protocol::Mining,
            Protocol::JobDeclaration,
            Protocol::TemplateDistribution,
        ])
        .copied()
    }

    fn size_hint(_depth: usize) -> (usize, Option<usize>) {
        (1, Some(4))
    }
}
