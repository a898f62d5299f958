//! A short length-prefixed value written into the buffer's spare capacity without a call to
//! `memcpy` (ADR 0018).

use bytes::BufMut;
use bytes::buf::UninitSlice;

/// The longest value [`put_short`] writes itself: what an overlapping pair of 32-byte
/// copies covers.
pub(crate) const SHORT_MAX: usize = 64;

/// Writes `PREFIX` bytes of `bytes.len()` (little-endian) and then `bytes`, if `bytes` is at
/// most `MAX` (at most [`SHORT_MAX`]) long and the buffer's current spare chunk has room for
/// both; returns whether it did (otherwise nothing was written). A caller that knows its
/// value is short (an inline `SharedBytes`) passes a smaller `MAX`, which leaves out the
/// longer copies' test.
#[inline(always)]
pub(crate) fn put_short<const PREFIX: usize, const MAX: usize, B: BufMut + ?Sized>(
    buf: &mut B,
    bytes: &[u8],
) -> bool {
    const { assert!(MAX <= SHORT_MAX) };
    let len = bytes.len();
    let total = PREFIX + len;
    if len > MAX {
        return false;
    }
    let dst = buf.chunk_mut();
    if dst.len() < total {
        return false;
    }
    let len_bytes = (len as u32).to_le_bytes();
    dst[..PREFIX].copy_from_slice(&len_bytes[..PREFIX]);
    copy_short::<MAX>(&mut dst[PREFIX..total], bytes);
    // SAFETY: the `total` bytes at the start of the chunk `chunk_mut` returned were all
    // written just above (the prefix, then every byte of the value: `copy_short` writes
    // each index of its destination at least once), and `total <= dst.len()`, the
    // chunk's length, was checked.
    unsafe { buf.advance_mut(total) };
    true
}

/// The length's `PREFIX` low bytes, then `bytes`, through `BufMut::put_slice` (one
/// `memcpy` call for the value): the path for values longer than [`SHORT_MAX`].
#[inline(always)]
pub(crate) fn put_long<const PREFIX: usize, B: BufMut + ?Sized>(buf: &mut B, bytes: &[u8]) {
    let len = (bytes.len() as u32).to_le_bytes();
    buf.put_slice(&len[..PREFIX]);
    buf.put_slice(bytes);
}

/// [`put_short`] if `bytes` is at most `MAX` long and fits the spare chunk, else
/// [`put_long`].
#[inline(always)]
pub(crate) fn put_prefixed<const PREFIX: usize, const MAX: usize, B: BufMut + ?Sized>(
    buf: &mut B,
    bytes: &[u8],
) {
    if !put_short::<PREFIX, MAX, B>(buf, bytes) {
        put_long::<PREFIX, B>(buf, bytes);
    }
}

/// Copies `src` (at most `MAX` bytes) into `dst` (the same length) with at most
/// two fixed-size copies that overlap in the middle, as `memcpy` does for short lengths,
/// but inline.
#[inline(always)]
fn copy_short<const MAX: usize>(dst: &mut UninitSlice, src: &[u8]) {
    let n = src.len();
    debug_assert!(n == dst.len() && n <= MAX);
    if MAX > 32 && n >= 32 {
        copy_ends::<32>(dst, src);
    } else if n >= 16 {
        copy_ends::<16>(dst, src);
    } else if n >= 8 {
        copy_ends::<8>(dst, src);
    } else if n >= 4 {
        copy_ends::<4>(dst, src);
    } else if n >= 2 {
        copy_ends::<2>(dst, src);
    } else if n == 1 {
        dst.write_byte(0, src[0]);
    }
}

/// Copies the first `W` and the last `W` bytes of `src` (`W <= src.len() <= 2 W`, so the
/// two cover all of it) to the same places in `dst`.
#[inline(always)]
fn copy_ends<const W: usize>(dst: &mut UninitSlice, src: &[u8]) {
    let n = src.len();
    dst[..W].copy_from_slice(&src[..W]);
    dst[n - W..n].copy_from_slice(&src[n - W..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;
    use bytes::BytesMut;

    /// What `put_short` must write: the length's `prefix` low bytes, then the value.
    fn expected(prefix: usize, bytes: &[u8]) -> Vec<u8> {
        let mut out = (bytes.len() as u32).to_le_bytes()[..prefix].to_vec();
        out.extend_from_slice(bytes);
        out
    }

    /// A value whose every byte differs from its neighbours and from the filler, so that
    /// a byte copied from the wrong place or left unwritten shows.
    fn value(len: usize) -> Vec<u8> {
        (0..len).map(|i| 0x41 + i as u8).collect()
    }

    fn check_vec<const P: usize>() {
        for len in 0..=SHORT_MAX + 8 {
            let bytes = value(len);
            for spare in [0, 1, P + len - 1, P + len, P + len + 1, 64] {
                // A buffer with some content and exactly `spare` bytes of spare capacity
                // before `put_short` (a `Vec` may round capacity up; that only adds room).
                let mut buf: Vec<u8> = Vec::with_capacity(3 + spare);
                buf.extend_from_slice(&[0xee; 3]);
                let room = buf.capacity() - buf.len();
                let wrote = put_short::<P, SHORT_MAX, _>(&mut buf, &bytes);
                if len > SHORT_MAX || (room > 0 && room < P + len) {
                    // Too long, or too little room in the current chunk.
                    assert!(!wrote, "len {len} room {room}");
                } else if room >= P + len {
                    assert!(wrote, "len {len} room {room}");
                }
                // (With no room at all, a `Vec` grows by 64 bytes in `chunk_mut`, so what
                // happens depends on its growth: either outcome is checked below.)
                if wrote {
                    assert_eq!(&buf[..3], &[0xee; 3]);
                    assert_eq!(&buf[3..], expected(P, &bytes), "len {len} room {room}");
                } else {
                    assert_eq!(buf, [0xee; 3], "nothing written when it declines");
                }
            }
        }
    }

    #[test]
    fn every_short_length_and_prefix_into_a_vec() {
        check_vec::<1>();
        check_vec::<2>();
        check_vec::<3>();
    }

    #[test]
    fn into_bytes_mut_and_a_slice() {
        for len in 0..=SHORT_MAX {
            let bytes = value(len);
            let mut b = BytesMut::with_capacity(2 + len);
            assert!(put_short::<2, SHORT_MAX, _>(&mut b, &bytes));
            assert_eq!(&b[..], expected(2, &bytes));

            // A fixed slice: exactly enough room, then one byte short (declined, and the
            // slice is left as it was).
            let mut storage = [0xeeu8; 2 + SHORT_MAX];
            let mut dst: &mut [u8] = &mut storage[..1 + len];
            assert!(put_short::<1, SHORT_MAX, _>(&mut dst, &bytes));
            assert!(dst.is_empty());
            assert_eq!(&storage[..1 + len], expected(1, &bytes));
            if len > 0 {
                let mut storage = [0xeeu8; SHORT_MAX];
                let mut dst: &mut [u8] = &mut storage[..len];
                assert!(!put_short::<1, SHORT_MAX, _>(&mut dst, &bytes));
                assert_eq!(dst.len(), len);
                assert!(storage.iter().all(|&b| b == 0xee));
            }
        }
    }

    /// The same bytes as `value(len)`, for `from_static`.
    static DATA: [u8; 80] = {
        let mut a = [0u8; 80];
        let mut i = 0;
        while i < 80 {
            a[i] = 0x41 + i as u8;
            i += 1;
        }
        a
    };

    #[test]
    fn owned_values_of_every_representation_encode_as_their_bytes() {
        use crate::Encode;
        use crate::MessageSet;
        use crate::messages::{Message, encode_frame_into};
        use crate::types::B064K;
        use bytes::Bytes;

        for len in 0..=DATA.len() {
            let bytes = value(len);
            let want = expected(2, &bytes);
            // Copied (inline up to 32 bytes), static, and a `Bytes`: each into a `Vec`
            // with exactly enough room, one with too little (the `put_slice` path) and an
            // empty one.
            let values = [
                B064K::try_from(bytes.as_slice()).unwrap(),
                B064K::from_static(&DATA[..len]).unwrap(),
                B064K::try_from(Bytes::from(bytes.clone())).unwrap(),
            ];
            for v in &values {
                for cap in [2 + len, 1 + len, 0] {
                    let mut out = Vec::with_capacity(cap);
                    v.encode(&mut out);
                    assert_eq!(out, want, "len {len} cap {cap}");
                }
            }

            // Decoded: inline up to 32 bytes, a range of the message's shared copy above.
            if len <= 255 {
                let mut payload = 7u32.to_le_bytes().to_vec();
                payload.push(len as u8);
                payload.extend_from_slice(&bytes);
                let m = Message::decode_message(0x8000, 0x18, &payload).unwrap();
                let mut out = Vec::new();
                encode_frame_into(&m, &mut out).unwrap();
                assert_eq!(&out[6..], payload, "CloseChannel, reason of {len} bytes");
            }
        }
    }
}
