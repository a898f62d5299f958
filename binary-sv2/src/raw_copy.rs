//! The crate's only `unsafe` code: two ways of writing bytes that the compiler, left to
//! itself, writes in a shape the processor handles slowly. Both are tested under Miri
//! (`.ci/steps/miri.sh`).
//!
//! # Hand-over of a decoded message
//!
//! A decoded message handed to its caller in whole 16-byte stores (ADR 0004).
//!
//! A decoder writes a message field by field: a tag of 8 bytes, a `u32`, a 32-byte string
//! window, and so on. The caller then moves the result (`?`, `expect`, a `match` by value,
//! `FramedRead` wrapping it in `Poll`), and the compiler copies it in 16-byte loads from
//! offset 0. On x86-64 a load that spans two stores still in the store buffer cannot take
//! its bytes from them: it waits until they reach the cache. That wait was half the time of
//! a small message's owned decode (BENCHMARKS.md, `move_cost`).
//!
//! [`hand_over`] moves a value through 16-byte chunks: the compiler assembles each chunk in
//! a vector register from the fields it already holds in registers, and writes it with one
//! 16-byte store. Every later 16-byte load of the value at a multiple of 16 bytes then reads
//! exactly one store, which the processor forwards. The value is unchanged: every byte,
//! initialised or not, is copied as it is.
//!
//! Only values aligned to 16 bytes take this path (the crate's message enums are, ADR 0004);
//! others, and every target but x86-64, are returned as they are.
//!
//! # Short writes
//!
//! A short length-prefixed value written into the buffer's spare capacity without a call to
//! `memcpy` (ADR 0001).

use bytes::BufMut;
use bytes::buf::UninitSlice;
use core::mem::{MaybeUninit, align_of, size_of};

/// Returns `value` itself, its bytes written in whole 16-byte chunks when `O` is aligned to
/// 16 bytes on x86-64 (see the module documentation): [`hand_over_live`] with every chunk
/// live, what the tests check it against.
#[cfg(test)]
fn hand_over<O>(value: O) -> O {
    hand_over_live(value, size_of::<O>())
}

/// [`hand_over`] for a value whose bytes from `live` on are expected to be uninitialised
/// (an enum variant shorter than its enum): the chunks that start at or after `live` are
/// copied with plain stores, which the compiler leaves out for uninitialised bytes, instead
/// of volatile ones, which it must keep. `live` only steers the code generated: the value
/// returned is `value`, whatever `live` is.
#[inline(always)]
pub(crate) fn hand_over_live<O>(value: O, live: usize) -> O {
    #[cfg(target_arch = "x86_64")]
    if align_of::<O>() >= 16 {
        use core::arch::x86_64::__m128i;
        // `MaybeUninit` chunks: a value's padding, and the bytes of an enum beyond its
        // variant, are uninitialised, and they are copied as such.
        type Chunk = MaybeUninit<__m128i>;
        let src = MaybeUninit::new(value);
        let mut out = MaybeUninit::<O>::uninit();
        let from = src.as_ptr().cast::<Chunk>();
        let to = out.as_mut_ptr().cast::<Chunk>();
        // A type's size is a multiple of its alignment, here of 16: the chunks cover every
        // byte of `O` and none past it.
        for k in 0..size_of::<O>() / 16 {
            // SAFETY: `src` and `out` are `O`s, aligned to at least 16 bytes, so chunk `k`
            // (bytes `16 k .. 16 k + 16`, within `size_of::<O>()`) of each is in bounds and
            // aligned for a `Chunk`. Reading a `MaybeUninit` accepts any bytes. A store
            // within `live` is volatile so that it stays one 16-byte store: the compiler
            // would otherwise split it back into the fields' own widths, which is what this
            // avoids. Past `live` a plain store copies the same bytes.
            unsafe {
                let chunk = from.add(k).read();
                if k * 16 < live {
                    to.add(k).write_volatile(chunk);
                } else {
                    to.add(k).write(chunk);
                }
            }
        }
        // SAFETY: every byte of `out` is now the corresponding byte of `value` (chunk types
        // are `MaybeUninit`, so uninitialised bytes and pointer provenance are carried
        // over), so `out` holds `value`. `src` is a `MaybeUninit` and is never dropped:
        // `value` has exactly one owner again.
        return unsafe { out.assume_init() };
    }
    let _ = live;
    value
}

/// The bytes at the start of a message enum that its variant holding a `P` can occupy: the
/// 8-byte tag, then `P` at the next multiple of its alignment (ADR 0004's
/// `#[repr(u64, align(16))]`). What [`hand_over_live`] is given when the enum is the start
/// of the value handed over (the enum itself, or a `Result`/`Option` around it, which keep
/// their tags in the enum's).
#[inline(always)]
pub(crate) const fn variant_live<P>() -> usize {
    let align = align_of::<P>();
    let offset = if align > 8 { align } else { 8 };
    offset + size_of::<P>()
}

#[cfg(test)]
mod handoff_tests {
    use super::{hand_over, hand_over_live, variant_live};
    use alloc::boxed::Box;
    use alloc::rc::Rc;
    use alloc::string::String;
    use alloc::vec;
    use alloc::vec::Vec;
    use core::cell::Cell;

    /// Padding between and after fields, heap pointers, and a drop that counts itself.
    #[derive(Debug)]
    #[repr(align(16))]
    struct Mixed {
        a: u8,
        b: u32,
        text: String,
        boxed: Box<[u16; 3]>,
        drops: Rc<Cell<u32>>,
        tail: [u8; 5],
    }

    impl Drop for Mixed {
        fn drop(&mut self) {
            self.drops.set(self.drops.get() + 1);
        }
    }

    #[test]
    fn hand_over_keeps_every_field_and_drops_once() {
        let drops = Rc::new(Cell::new(0));
        let m = hand_over(Mixed {
            a: 7,
            b: 0xdead_beef,
            text: String::from("a string long enough to live on the heap"),
            boxed: Box::new([1, 2, 3]),
            drops: drops.clone(),
            tail: [9, 8, 7, 6, 5],
        });
        assert_eq!(core::mem::align_of::<Mixed>(), 16);
        assert_eq!(
            (m.a, m.b, m.text.as_str(), *m.boxed, m.tail),
            (
                7,
                0xdead_beef,
                "a string long enough to live on the heap",
                [1, 2, 3],
                [9, 8, 7, 6, 5]
            )
        );
        assert_eq!(drops.get(), 0, "the value handed over was not dropped");
        drop(m);
        assert_eq!(drops.get(), 1);
    }

    #[derive(Debug, PartialEq)]
    #[repr(u64, align(16))]
    enum Set {
        Small(u32),
        Large([u64; 5], Vec<u8>),
        Nothing,
    }

    #[test]
    fn hand_over_keeps_each_variant() {
        // The bytes past a short variant are uninitialised; Miri checks none is read as a
        // value.
        for v in [
            Set::Small(42),
            Set::Large([1, 2, 3, 4, 5], vec![6; 40]),
            Set::Nothing,
        ] {
            let expected = match &v {
                Set::Small(x) => Set::Small(*x),
                Set::Large(a, b) => Set::Large(*a, b.clone()),
                Set::Nothing => Set::Nothing,
            };
            assert_eq!(hand_over(v), expected);
        }
        // Wrapped in `Option` and `Result`, as a codec returns it.
        let r: Result<Option<Set>, u8> = Ok(Some(Set::Small(1)));
        assert_eq!(hand_over(r), Ok(Some(Set::Small(1))));
        assert_eq!(hand_over(Err::<Option<Set>, u8>(3)), Err(3));
    }

    #[test]
    fn hand_over_live_copies_every_byte_whatever_live_says() {
        // `live` steers only which stores are volatile: too small, too large, and a guess
        // that is wrong because the enum does not start the value (it is at offset 16 of
        // `Wrapped`) all return the value itself. Miri checks the bytes past a short
        // variant are not read as a value.
        #[derive(Debug, PartialEq)]
        #[repr(C)]
        struct Wrapped {
            head: u64,
            set: Set,
        }
        let make = |i: u8| match i {
            0 => Set::Small(42),
            1 => Set::Large([1, 2, 3, 4, 5], vec![6; 40]),
            _ => Set::Nothing,
        };
        let size = core::mem::size_of::<Set>();
        for i in 0..3 {
            for live in [0, 8, 12, 16, 24, 48, size, size + 16, usize::MAX] {
                assert_eq!(
                    hand_over_live(make(i), live),
                    make(i),
                    "variant {i} live {live}"
                );
                let w = Wrapped {
                    head: 7,
                    set: make(i),
                };
                let expected = Wrapped {
                    head: 7,
                    set: make(i),
                };
                assert_eq!(hand_over_live(w, live), expected, "wrapped {i} live {live}");
            }
        }
        assert_eq!(core::mem::offset_of!(Wrapped, set), 16);
    }

    #[test]
    fn variant_live_is_the_tag_then_the_payload_at_its_alignment() {
        assert_eq!(variant_live::<u32>(), 12);
        assert_eq!(variant_live::<[u32; 6]>(), 32);
        assert_eq!(variant_live::<[u64; 5]>(), 48);
        assert_eq!(variant_live::<u128>(), 32);
        assert_eq!(variant_live::<()>(), 8);
        // Against the layout of an enum like the message sets: the payload of `Small`
        // ends where `variant_live` says.
        assert!(variant_live::<u32>() <= core::mem::size_of::<Set>());
    }

    #[test]
    fn messages_decoded_through_the_enums_are_the_messages_sent() {
        // The decoders that hand their result over (owned and borrowed, and the proxy's
        // `MessageOrRaw`), on a fixed message, one with a value in the shared copy, and a
        // boxed one whose long values share a copy too.
        use crate::MessageSet;
        use crate::messages::common::SetupConnection;
        use crate::messages::mining::{SubmitSharesStandard, UpdateChannelError};
        use crate::messages::{Message, MessageOrRaw, MessageRef, encode_frame_into, frame_parts};
        use crate::{Protocol, Str0255};
        let long = |c: char| Str0255::try_from(core::iter::repeat_n(c, 45).collect::<String>());
        let sent: [Message; 3] = [
            SubmitSharesStandard {
                channel_id: 1,
                sequence_number: 2,
                job_id: 3,
                nonce: 4,
                ntime: 5,
                version: 6,
            }
            .into(),
            UpdateChannelError {
                channel_id: 9,
                error_code: long('e').expect("45 bytes"),
            }
            .into(),
            SetupConnection {
                protocol: Protocol::Mining,
                min_version: 2,
                max_version: 2,
                flags: 1,
                endpoint_host: long('h').expect("45 bytes"),
                endpoint_port: 3333,
                vendor: Str0255::try_from("v").expect("1 byte"),
                hardware_version: long('w').expect("45 bytes"),
                firmware: Str0255::default(),
                device_id: long('d').expect("45 bytes"),
            }
            .into(),
        ];
        assert_eq!(core::mem::align_of::<Message>(), 16);
        assert_eq!(core::mem::align_of::<MessageRef<'_>>(), 16);
        for m in &sent {
            let mut frame = Vec::new();
            encode_frame_into(m, &mut frame).expect("encodes");
            let (ext, ty, payload) = frame_parts(&frame).expect("a frame");
            let owned = Message::decode_message(ext, ty, payload).expect("decodes");
            assert_eq!(&owned, m);
            let borrowed = MessageRef::decode(ext, ty, payload).expect("decodes");
            assert_eq!(&borrowed.to_owned_value(), m);
            match MessageOrRaw::<Message>::decode_message(ext, ty, payload) {
                Ok(MessageOrRaw::Known(k)) => assert_eq!(&k, m),
                other => panic!("{other:?}"),
            }
            drop((owned, borrowed));
        }
    }

    #[test]
    fn hand_over_returns_values_of_lower_alignment_as_they_are() {
        assert_eq!(hand_over(5u8), 5);
        assert_eq!(hand_over([1u64, 2, 3]), [1, 2, 3]);
        assert_eq!(hand_over(()), ());
        let s = hand_over(String::from("kept"));
        assert_eq!(s, "kept");
    }
}

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
mod short_put_tests {
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
