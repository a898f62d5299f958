//! `mining.submit` decode, this crate beside SRI's `sv1_api` 6.0.0: time per line
//! (criterion) and heap allocations per line (counted before the timed runs, printed).
//!
//! `cargo bench -p sv2c-sv1 --bench submit`

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::BytesMut;
use criterion::{Criterion, criterion_group, criterion_main};
use sv2c_sv1::{Body, SubmitRef, Sv1Codec, Sv1Item, Sv1Message};
use tokio_util::codec::Decoder;

/// A share as bmminer sends it, with rolled version bits.
const LINE: &str = r#"{"params": ["acct.s19", "5f2a", "0000000000000001", "6650ab12", "1d2b3c4d", "00c00000"], "id": 2197, "method": "mining.submit"}"#;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded to `System` unchanged; the counter is a relaxed atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Heap allocations per call of `f`, over 1000 calls.
fn allocations_per_call(mut f: impl FnMut()) -> f64 {
    const N: u64 = 1000;
    let before = ALLOCATIONS.load(Relaxed);
    for _ in 0..N {
        f();
    }
    (ALLOCATIONS.load(Relaxed) - before) as f64 / N as f64
}

fn submit_ref() -> u32 {
    let share = SubmitRef::parse(LINE.as_bytes()).expect("a share");
    share.nonce
}

fn owned() -> u32 {
    match Sv1Message::from_line(LINE.as_bytes())
        .expect("a share")
        .body
    {
        Body::Submit(s) => s.nonce,
        _ => unreachable!("a share"),
    }
}

/// The line through `Sv1Codec::decode`, as `Framed` calls it (copying the line into the
/// read buffer is part of the case; `BytesMut` keeps its capacity).
fn codec(codec: &mut Sv1Codec, buf: &mut BytesMut) -> u32 {
    buf.extend_from_slice(LINE.as_bytes());
    buf.extend_from_slice(b"\n");
    match codec.decode(buf) {
        Ok(Some(Sv1Item::Message(Sv1Message {
            body: Body::Submit(s),
            ..
        }))) => s.nonce,
        _ => unreachable!("a share"),
    }
}

fn sv1_api() -> u32 {
    use sv1_api::methods::{Client2Server, Method};
    let msg: sv1_api::Message = serde_json::from_str(LINE).expect("JSON-RPC");
    match Method::try_from(msg) {
        Ok(Method::Client2Server(Client2Server::Submit(s))) => s.nonce.0,
        _ => unreachable!("a share"),
    }
}

fn bench(c: &mut Criterion) {
    let mut cod = Sv1Codec::new();
    let mut buf = BytesMut::with_capacity(4096);
    assert_eq!(submit_ref(), owned());
    assert_eq!(owned(), sv1_api());
    assert_eq!(codec(&mut cod, &mut buf), sv1_api());
    println!("allocations per mining.submit line:");
    println!(
        "  sv2c_sv1 SubmitRef::parse      {:>5.1}",
        allocations_per_call(|| {
            black_box(submit_ref());
        })
    );
    println!(
        "  sv2c_sv1 Sv1Message::from_line {:>5.1}",
        allocations_per_call(|| {
            black_box(owned());
        })
    );
    println!(
        "  sv2c_sv1 Sv1Codec::decode      {:>5.1}",
        allocations_per_call(|| {
            black_box(codec(&mut cod, &mut buf));
        })
    );
    println!(
        "  sv1_api  Message + Method      {:>5.1}",
        allocations_per_call(|| {
            black_box(sv1_api());
        })
    );

    let mut g = c.benchmark_group("sv1_submit_decode");
    g.bench_function("sv2c_sv1/SubmitRef::parse", |b| {
        b.iter(|| black_box(submit_ref()))
    });
    g.bench_function("sv2c_sv1/Sv1Message::from_line", |b| {
        b.iter(|| black_box(owned()))
    });
    g.bench_function("sv2c_sv1/Sv1Codec::decode", |b| {
        b.iter(|| black_box(codec(&mut cod, &mut buf)))
    });
    g.bench_function("sv1_api/Message+Method::try_from", |b| {
        b.iter(|| black_box(sv1_api()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
