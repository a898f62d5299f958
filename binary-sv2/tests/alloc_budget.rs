//! The allocation budget, counted by a global allocator that records the current
//! thread's allocations (tests run in parallel threads; each counts only its own):
//!
//! * borrowed decode: 0 allocations, even with strings and sequences;
//! * owned decode: 0 when every variable-length value is at most `SharedBytes::INLINE_CAP`
//!   bytes long (short values are stored inline) and for a fixed-size message; 1 for a
//!   single long value at the end of the message (its own copy); otherwise 2: one copy of
//!   the payload from the first long value on, and the shared header `bytes` allocates the
//!   first time that copy is sliced;
//! * `Ref::to_owned_value()`: one allocation per long value;
//! * encoding into a reused buffer or a slice: 0;
//! * hostile length prefixes: nothing is allocated before the input is validated.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::{Kitchen, KitchenRef, Shares, SharesExt};
use sv2c_binary::{
    B016M, B032, B064K, B0255, Decode, Encode, Seq064K, Seq0255, SharedBytes, Str0255, U24, U256,
    Wire, WireRef, from_bytes, from_bytes_ref,
};

const CAP: usize = SharedBytes::INLINE_CAP;

/// A message of short and long variable-length values, depending on the lengths chosen.
#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(extension_type = 0x4001, msg_type = 0x02)]
struct Mixed {
    id: u32,
    host: Str0255,
    script: B064K,
    names: Seq0255<Str0255>,
    memo: B0255,
}

/// `script` is `script_len` bytes long, `memo` `memo_len`; the other values are short.
fn mixed(script_len: usize, memo_len: usize) -> Mixed {
    Mixed {
        id: 9,
        host: Str0255::try_from("pool.example.com").unwrap(),
        script: B064K::try_from(vec![0x51; script_len]).unwrap(),
        names: Seq0255::from_slice(&[
            Str0255::try_from("a").unwrap(),
            Str0255::try_from("bc").unwrap(),
        ])
        .unwrap(),
        memo: B0255::try_from(vec![0x77; memo_len]).unwrap(),
    }
}

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the thread-local may be gone while a thread shuts down.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
    let _ = BYTES.try_with(|c| c.set(c.get() + size));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// const-initialised thread-locals, so counting never allocates or recurses.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns (its result, allocations, bytes allocated) on this thread.
fn count<R>(f: impl FnOnce() -> R) -> (R, usize, usize) {
    let (a0, b0) = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    let r = f();
    let (a1, b1) = (ALLOCS.with(Cell::get), BYTES.with(Cell::get));
    (r, a1 - a0, b1 - b0)
}

fn kitchen() -> Kitchen {
    Kitchen {
        flag: true,
        small: 7,
        port: 3333,
        len24: U24::try_from(99u32).unwrap(),
        id: 1,
        total: 2,
        rate: 1.5,
        hash: U256([7; 32]),
        prefix: B032::try_from(&[1, 2, 3][..]).unwrap(),
        name: Str0255::try_from("worker-1").unwrap(),
        token: B0255::try_from(vec![9; 40]).unwrap(),
        script: B064K::try_from(vec![8; 300]).unwrap(),
        blob: B016M::try_from(vec![6; 1000]).unwrap(),
        maybe: Some(5),
        maybe_name: Some(Str0255::try_from("alt").unwrap()),
        path: Seq0255::from_slice(&[U256([1; 32]), U256([2; 32])]).unwrap(),
        positions: Seq064K::from_slice(&[1u16, 2, 3]).unwrap(),
        ids: Seq064K::from_slice(&[10u32, 20]).unwrap(),
        txs: Seq064K::from_slice(&[
            B016M::try_from(vec![1; 10]).unwrap(),
            B016M::try_from(vec![2; 20]).unwrap(),
        ])
        .unwrap(),
        names: Seq0255::from_slice(&[
            Str0255::try_from("a").unwrap(),
            Str0255::try_from("bc").unwrap(),
        ])
        .unwrap(),
    }
}

#[test]
fn borrowed_decode_allocates_nothing() {
    let bytes = kitchen().encode_to_vec();
    let (r, allocs, _) = count(|| KitchenRef::decode_ref(&bytes).unwrap());
    assert_eq!(allocs, 0);
    // Walking the borrowed sequences allocates nothing either.
    let (n, allocs, _) = count(|| {
        r.txs.iter().map(|t| t.len()).sum::<usize>()
            + r.names.iter().map(|s| s.len()).sum::<usize>()
            + r.path.as_arrays().len()
    });
    assert_eq!((n, allocs), (10 + 20 + 1 + 2 + 2, 0));
}

#[test]
fn owned_decode_allocates_once_for_all_variable_fields() {
    let k = kitchen();
    let bytes = k.encode_to_vec();
    let (owned, allocs, alloc_bytes) = count(|| Kitchen::decode_owned(&bytes).unwrap());
    assert_eq!(allocs, 2, "one shared copy of the payload and its header");
    assert!(
        alloc_bytes <= bytes.len() + 64,
        "{alloc_bytes} bytes for a {}-byte payload",
        bytes.len()
    );
    assert_eq!(owned, k);
    // Iterating owned sequences of variable-length elements shares that copy.
    let (lens, allocs, _) = count(|| owned.txs.iter().map(|t| t.len()).collect::<Vec<_>>());
    assert_eq!(lens, [10, 20]);
    assert_eq!(allocs, 1, "only the Vec collected here");
}

#[test]
fn ref_to_owned_allocates_once_per_long_value() {
    let bytes = kitchen().encode_to_vec();
    let r = KitchenRef::decode_ref(&bytes).unwrap();
    // Long (over 32 bytes): token (40), script (300), blob (1 000), path (2 × 32) and txs
    // (two length prefixes and 30 bytes); the other variable-length values are short.
    let (owned, allocs, alloc_bytes) = count(|| r.to_owned_value());
    assert_eq!(allocs, 5);
    assert_eq!(alloc_bytes, 40 + 300 + 1000 + 2 * 32 + (2 * 3 + 30));
    assert_eq!(owned, kitchen());
    // Clones share those copies: the first clone of each gives it the shared header of
    // `bytes` (one small allocation per value, none of the data copied), later ones
    // allocate nothing.
    let clone_all = || {
        (
            owned.token.clone(),
            owned.script.clone(),
            owned.blob.clone(),
            owned.path.clone(),
            owned.txs.clone(),
        )
    };
    let (copies, allocs, alloc_bytes) = count(clone_all);
    assert_eq!(allocs, 5);
    assert!(
        alloc_bytes <= 5 * 64,
        "{alloc_bytes} bytes for five headers"
    );
    assert_eq!(copies.2, kitchen().blob);
    let (_, allocs, _) = count(clone_all);
    assert_eq!(allocs, 0);
}

#[test]
fn short_values_decode_owned_without_allocating() {
    for (script_len, memo_len) in [(0, 0), (1, 0), (CAP, CAP), (CAP, 1)] {
        let m = mixed(script_len, memo_len);
        let bytes = m.encode_to_vec();
        let (owned, allocs, _) = count(|| Mixed::decode_owned(&bytes).unwrap());
        assert_eq!(allocs, 0, "lengths {script_len}, {memo_len}");
        assert_eq!(owned, m);
        // Cloning, walking the owned sequence and dropping allocate nothing either.
        let (n, allocs, _) = count(|| {
            let copy = owned.clone();
            let n = copy.names.iter().map(|s| s.len()).sum::<usize>();
            drop(copy);
            n
        });
        assert_eq!((n, allocs), (3, 0));
        // `Ref::to_owned_value()`: short values are inline, no allocation.
        let r = MixedRef::decode_ref(&bytes).unwrap();
        let (again, allocs, _) = count(|| r.to_owned_value());
        assert_eq!((allocs, &again), (0, &m));
    }
}

#[test]
fn long_values_cost_at_most_two_allocations() {
    for (script_len, memo_len) in [(CAP + 1, 0), (0, CAP + 1), (CAP + 1, CAP + 1), (300, 255)] {
        let m = mixed(script_len, memo_len);
        let bytes = m.encode_to_vec();
        let long = usize::from(script_len > CAP) + usize::from(memo_len > CAP);
        let (owned, allocs, alloc_bytes) = count(|| Mixed::decode_owned(&bytes).unwrap());
        // One long value is copied on its own; several share one copy and its header.
        let want = if long <= 1 { 1 } else { 2 };
        assert_eq!(allocs, want, "lengths {script_len}, {memo_len}");
        assert!(
            alloc_bytes <= bytes.len() + 64,
            "{alloc_bytes} bytes for a {}-byte payload",
            bytes.len()
        );
        assert_eq!(owned, m);
        // Clones share those allocations: a value copied on its own gets the shared header
        // of `bytes` on its first clone (no data copied); a shared copy has it already.
        let (copy, allocs, _) = count(|| owned.clone());
        assert_eq!((allocs, &copy), (usize::from(long == 1), &m));
        let (copy, allocs, _) = count(|| owned.clone());
        assert_eq!((allocs, &copy), (0, &m));
        let r = MixedRef::decode_ref(&bytes).unwrap();
        let (again, allocs, _) = count(|| r.to_owned_value());
        assert_eq!((allocs, &again), (long, &m));
    }
}

#[test]
fn catalog_messages_with_short_strings_decode_owned_without_allocating() {
    use sv2c_binary::messages::{Protocol, SetupConnection};
    let m = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: 1,
        endpoint_host: Str0255::try_from("pool.example.com").unwrap(),
        endpoint_port: 3333,
        vendor: Str0255::try_from("Bitmain").unwrap(),
        hardware_version: Str0255::try_from("S21").unwrap(),
        firmware: Str0255::try_from("braiins-os-2024.1").unwrap(),
        device_id: Str0255::try_from("rig-0042").unwrap(),
    };
    let bytes = m.encode_to_vec();
    let (owned, allocs, _) = count(|| SetupConnection::decode_owned(&bytes).unwrap());
    assert_eq!((allocs, &owned), (0, &m));
}

#[test]
fn fixed_size_messages_decode_owned_without_allocating() {
    let shares = Shares {
        channel_id: 1,
        sequence_number: 2,
        job_id: 3,
        nonce: 4,
        ntime: 5,
        version: 6,
    };
    let bytes = shares.encode_to_vec();
    let (m, allocs, _) = count(|| Shares::decode_owned(&bytes).unwrap());
    assert_eq!((m, allocs), (shares, 0));

    // B0_32 is inline, so SubmitSharesExtended's layout is allocation-free too.
    let ext = SharesExt {
        channel_id: 1,
        sequence_number: 2,
        job_id: 3,
        nonce: 4,
        ntime: 5,
        version: 6,
        extranonce: B032::try_from(&[1u8; 8][..]).unwrap(),
    };
    let bytes = ext.encode_to_vec();
    let (m, allocs, _) = count(|| <SharesExt as Wire>::decode_owned(&bytes).unwrap());
    assert_eq!((m, allocs), (ext, 0));
}

#[test]
fn encoding_into_a_reused_buffer_allocates_nothing() {
    let k = kitchen();
    let mut buf = Vec::with_capacity(k.encoded_len());
    let ((), allocs, _) = count(|| {
        for _ in 0..100 {
            buf.clear();
            k.encode(&mut buf);
        }
    });
    assert_eq!(allocs, 0);
    assert_eq!(buf, k.encode_to_vec());

    let mut slice = vec![0u8; k.encoded_len()];
    let (n, allocs, _) = count(|| k.encode_to_slice(&mut slice).unwrap());
    assert_eq!((n, allocs), (slice.len(), 0));

    let bytes = k.encode_to_vec();
    let r = KitchenRef::decode_ref(&bytes).unwrap();
    buf.clear();
    let ((), allocs, _) = count(|| r.encode(&mut buf));
    assert_eq!(allocs, 0);
    assert_eq!(buf, bytes);
}

#[test]
fn hostile_prefixes_allocate_nothing() {
    // A B0_16M announcing 16 MiB with 6 bytes present.
    let bytes = [0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6];
    let (r, allocs, _) = count(|| from_bytes::<B016M>(&bytes));
    assert!(r.is_err());
    assert_eq!(allocs, 0);
    // A SEQ0_64K[U256] claiming 65535 elements.
    let bytes = [0xff, 0xff, 0, 0, 0, 0];
    let (r, allocs, _) = count(|| from_bytes::<Seq064K<U256>>(&bytes));
    assert!(r.is_err());
    assert_eq!(allocs, 0);
    // A SEQ0_64K[B0_16M] claiming 65535 elements of which the first is huge.
    let bytes = [0xff, 0xff, 0xff, 0xff, 0xff, 0];
    let (r, allocs, _) = count(|| from_bytes_ref::<sv2c_binary::Seq064KRef<'_, B016M>>(&bytes));
    assert!(r.is_err());
    assert_eq!(allocs, 0);
}

// ===== the enum path: frame → Message / MessageRef → frame =====

/// The variants of `Message` that hold their message in a `Box` (see docs/adr/0004): the
/// box is one allocation on top of the message's own budget.
const BOXED: &[&str] = &[
    "SetupConnection",
    "NewExtendedMiningJob",
    "SetCustomMiningJob",
    "DeclareMiningJob",
    "NewTemplate",
];

/// Every golden vector: its message name and its frame.
fn golden_frames() -> Vec<(String, Vec<u8>)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests-data/sv2-vectors.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("golden vectors");
    text.lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let frame = hex::decode(v["frame_hex"].as_str().expect("frame_hex")).expect("hex");
            (v["name"].as_str().expect("name").to_owned(), frame)
        })
        .collect()
}

#[test]
fn every_golden_vector_meets_the_budget_on_the_enum_path() {
    use sv2c_binary::MessageSet;
    use sv2c_binary::messages::{Message, MessageRef, encode_frame_into, frame_parts};

    let frames = golden_frames();
    common::assert_frames_cover_the_catalog(frames.iter().map(|(_, f)| f.as_slice()));
    for name in BOXED {
        assert!(
            sv2c_binary::messages::CATALOG
                .iter()
                .any(|m| m.name == *name),
            "BOXED names {name}, which is not a message of the catalog"
        );
    }
    let mut out = Vec::new();
    for (name, frame) in &frames {
        let name = name.as_str();
        let (ext, mt, payload) = frame_parts(frame).expect("a frame");

        let (r, allocs, _) = count(|| MessageRef::decode(ext, mt, payload).map(|m| m.name()));
        assert_eq!((r, allocs), (Ok(name), 0), "{name}: borrowed decode");

        let (m, allocs, _) = count(|| Message::decode_message(ext, mt, payload).unwrap());
        let boxed = usize::from(BOXED.contains(&name));
        assert!(
            allocs <= 2 + boxed,
            "{name}: owned decode made {allocs} allocations"
        );
        // The box is the only extra: with a Box the count is at least 1.
        assert!(allocs >= boxed, "{name}: boxed variant made no allocation");

        // Borrowed, then owned: one copy per long value (each longer than `CAP` bytes).
        let r = MessageRef::decode(ext, mt, payload).unwrap();
        let (kept, allocs, _) = count(|| r.to_owned_value());
        assert!(
            allocs >= boxed && allocs - boxed <= payload.len() / (CAP + 1),
            "{name}: to_owned_value made {allocs} allocations"
        );
        assert_eq!(kept, m, "{name}: to_owned");
        drop(kept);

        out.clear();
        out.reserve(frame.len()); // a reused buffer that has seen a frame this large
        let (r, allocs, _) = count(|| encode_frame_into(&m, &mut out));
        assert_eq!(
            (r.is_ok(), allocs),
            (true, 0),
            "{name}: encode into a reused buffer"
        );
    }
}

/// The boxed variants allocate their box before building the message in it (ADR 0001),
/// so the box must come only after the payload has been validated: a payload cut short
/// anywhere, or with a length prefix claiming more than is there, is an error with no
/// allocation at all.
#[test]
fn boxed_variants_allocate_nothing_for_a_payload_that_does_not_decode() {
    use sv2c_binary::MessageSet;
    use sv2c_binary::messages::{Message, frame_parts};

    let mut seen = 0;
    for (name, frame) in golden_frames() {
        let name = name.as_str();
        if !BOXED.contains(&name) {
            continue;
        }
        let (ext, mt, payload) = frame_parts(&frame).expect("a frame");
        let full = Message::decode_message(ext, mt, payload).expect("the vector decodes");
        // Every cut that leaves the message incomplete (past its end a cut only drops
        // trailing bytes, which decode).
        for cut in 0..payload.len() {
            let short = &payload[..cut];
            let (r, allocs, _) = count(|| Message::decode_message(ext, mt, short));
            match r {
                Err(_) => assert_eq!(allocs, 0, "{name} cut at {cut}: allocated for an error"),
                Ok(m) => assert_ne!(m, full, "{name} cut at {cut} decoded to the whole message"),
            }
        }
        seen += 1;
    }
    assert!(seen >= BOXED.len(), "{seen} boxed vectors");
}

#[test]
fn small_messages_through_the_enum_allocate_only_their_box() {
    use sv2c_binary::MessageSet;
    use sv2c_binary::messages::{Message, Protocol, SetupConnection, SubmitSharesStandard};

    let share = SubmitSharesStandard {
        channel_id: 1,
        sequence_number: 2,
        job_id: 3,
        nonce: 4,
        ntime: 5,
        version: 6,
    };
    let bytes = share.encode_to_vec();
    let (m, allocs, _) = count(|| Message::decode_message(0x8000, 0x1a, &bytes).unwrap());
    assert_eq!((m, allocs), (Message::SubmitSharesStandard(share), 0));

    // Short strings are inline: the box is the one allocation.
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: 1,
        endpoint_host: Str0255::try_from("pool.example.com").unwrap(),
        endpoint_port: 3333,
        vendor: Str0255::try_from("Bitmain").unwrap(),
        hardware_version: Str0255::try_from("S21").unwrap(),
        firmware: Str0255::try_from("braiins-os-2024.1").unwrap(),
        device_id: Str0255::try_from("rig-0042").unwrap(),
    };
    let bytes = setup.encode_to_vec();
    let (m, allocs, _) = count(|| Message::decode_message(0, 0x00, &bytes).unwrap());
    assert_eq!((m, allocs), (Message::from(setup), 1));
}

#[test]
fn message_stays_small_enough_to_move_without_a_memcpy_call() {
    // Moves of values up to 128 bytes are inlined as a few vector moves on x86-64; the
    // boxed variants keep `Message` under that (see docs/adr/0004).
    assert!(core::mem::size_of::<sv2c_binary::messages::Message>() <= 128);
}

#[test]
fn message_tag_leaves_room_for_result_and_option() {
    // `Message` is `#[repr(u64)]`: its tag is the first word, with 44 values used, so
    // `Result<Message, _>` and `Option<Message>` keep their own tags in that word and
    // are no larger than `Message` itself (moving them costs what moving a `Message` does).
    use core::mem::size_of;
    use sv2c_binary::messages::Message;
    use sv2c_binary::{DecodeError, DispatchError};
    assert_eq!(size_of::<Option<Message>>(), size_of::<Message>());
    assert_eq!(
        size_of::<Result<Message, DecodeError>>(),
        size_of::<Message>()
    );
    assert_eq!(
        size_of::<Result<Message, DispatchError>>(),
        size_of::<Message>()
    );
    // 112 bytes: the largest variant's 104 bytes (RequestExtensionsError, ADR 0004's
    // addendum) after the 8-byte tag (ADR 0004).
    assert!(size_of::<Message>() <= 112);
}

#[test]
fn message_ref_stays_small_enough_to_move_without_a_memcpy_call() {
    // The same limit for the borrowed enum. At 144 bytes (SetCustomMiningJobRef holding
    // its prev_hash by value) every borrowed decode paid a `memcpy` call when returned
    // (BENCHMARKS.md, "Ref"); `#[sv2(borrow)]` on that field keeps it under the limit.
    use sv2c_binary::messages::{MessageRef, SetCustomMiningJobRef};
    assert!(core::mem::size_of::<MessageRef<'static>>() <= 128);
    assert!(core::mem::size_of::<SetCustomMiningJobRef<'static>>() <= 120);
}
