//! Multi-threaded stress test: producers acquire, fill and freeze buffers
//! and hand them (or clones of them) to consumer threads, which verify each
//! buffer's canary and drop it. Some buffers are cloned to two consumers
//! that drop their clones concurrently, some are dropped unfrozen by the
//! producer, and now and then a producer holds more buffers than the pool
//! has slots, so the heap fallback runs concurrently with the pool too.
//!
//! `SV2C_POOL_STRESS_OPS` overrides the number of acquisitions (default
//! 1 000 000), e.g. to run a shorter version under valgrind.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use bytes::BufMut;
use sv2c_buffer_pool::{BufferPool, PoolBuf, PoolBufMut};

const PRODUCERS: u64 = 2;
const CONSUMERS: usize = 2;
const CAPACITY: usize = 32;
/// Smaller under Miri, where the test's time goes mostly into filling and
/// checking canaries byte by byte (every byte access is checked for races
/// and borrow violations): a pooled buffer's bytes are still written by one
/// thread and read by another before the slot is reused, which is what Miri
/// checks the pool's synchronisation with, and the number of slot handoffs
/// is unchanged.
const SLOT_SIZE: usize = if cfg!(miri) { 24 } else { 192 };
/// Lengths of the buffers not held for a burst are below this: about a quarter
/// of them exceed the slot size and fall back to the heap.
const MAX_LEN: u64 = if cfg!(miri) { 33 } else { 257 };
/// Bound of each consumer's channel: small enough that buffers in flight
/// usually fit the pool.
const CHANNEL: usize = 16;
/// Every `BURST_EVERY` acquisitions a producer holds `CAPACITY + 1` buffers
/// at once, which is guaranteed to exhaust the pool.
const BURST_EVERY: u64 = 4096;

fn total_ops() -> u64 {
    std::env::var("SV2C_POOL_STRESS_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        // Miri interprets every instruction: a few thousand operations still cross
        // threads, exhaust the pool and clone to two consumers.
        .unwrap_or(if cfg!(miri) { 1_000 } else { 1_000_000 })
}

/// splitmix64: a different 64-bit value for every seed.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn canary_byte(key: u64, i: usize) -> u8 {
    ((key >> ((i % 8) * 8)) as u8) ^ ((i / 8) as u8)
}

fn fill(buf: &mut PoolBufMut, seed: u64, via_buf_mut: bool) {
    let key = mix(seed);
    if via_buf_mut {
        for i in 0..buf.len() {
            buf.put_u8(canary_byte(key, i));
        }
    } else {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = canary_byte(key, i);
        }
    }
}

#[track_caller]
fn verify(bytes: &[u8], seed: u64) {
    let key = mix(seed);
    let bad = bytes
        .iter()
        .enumerate()
        .find(|&(i, &b)| b != canary_byte(key, i));
    assert!(
        bad.is_none(),
        "canary of buffer {seed:#x} (len {}) broken at {bad:?}",
        bytes.len()
    );
}

struct Msg {
    buf: PoolBuf,
    seed: u64,
}

fn consume(rx: Receiver<Msg>) -> u64 {
    let mut n = 0;
    for msg in rx {
        verify(&msg.buf, msg.seed);
        drop(msg);
        n += 1;
    }
    n
}

fn produce(id: u64, ops: u64, pool: BufferPool, txs: Vec<SyncSender<Msg>>) {
    let mut held: VecDeque<Msg> = VecDeque::with_capacity(CAPACITY + 1);
    for i in 0..ops {
        let seed = (id << 48) | i;
        let r = mix(!seed);
        let burst = i % BURST_EVERY < (CAPACITY as u64 + 1);
        let kind = if burst {
            1
        } else {
            [0, 2, 3][(i % 3) as usize]
        };
        // Held buffers always fit a slot, so holding `CAPACITY + 1` of them
        // exhausts the pool; the others sometimes do not fit.
        let len = if kind == 1 {
            (r % (SLOT_SIZE as u64 + 1)) as usize
        } else {
            (r % MAX_LEN) as usize
        };
        let mut buf = if r & (1 << 40) != 0 {
            pool.acquire_zeroed(len)
        } else {
            pool.acquire(len)
        };
        assert_eq!(buf.len(), len);
        fill(&mut buf, seed, r & (1 << 41) != 0);
        let to = (r >> 42) as usize % CONSUMERS;
        match kind {
            0 => {
                // Two consumers drop clones of one buffer concurrently.
                let buf = buf.freeze();
                let clone = Msg {
                    buf: buf.clone(),
                    seed,
                };
                txs[to].send(Msg { buf, seed }).expect("consumer alive");
                txs[(to + 1) % CONSUMERS]
                    .send(clone)
                    .expect("consumer alive");
            }
            1 => {
                held.push_back(Msg {
                    buf: buf.freeze(),
                    seed,
                });
                if held.len() > CAPACITY {
                    // End of the burst: dropped here or on the consumers.
                    for old in held.drain(..) {
                        verify(&old.buf, old.seed);
                        if mix(old.seed) & 1 != 0 {
                            txs[to].send(old).expect("consumer alive");
                        }
                    }
                }
            }
            2 => {
                // Dropped unfrozen, on this thread.
                verify(&buf, seed);
                drop(buf);
            }
            _ => {
                let buf = buf.freeze();
                txs[to].send(Msg { buf, seed }).expect("consumer alive");
            }
        }
    }
    for msg in held {
        verify(&msg.buf, msg.seed);
    }
}

#[test]
fn buffers_cross_threads_without_double_handout() {
    let ops = total_ops();
    let per_producer = ops.div_ceil(PRODUCERS);
    let pool = BufferPool::new(CAPACITY, SLOT_SIZE).expect("pool");

    let (txs, rxs): (Vec<_>, Vec<_>) = (0..CONSUMERS).map(|_| sync_channel::<Msg>(CHANNEL)).unzip();
    let received = crossbeam_utils::thread::scope(|s| {
        let consumers: Vec<_> = rxs
            .into_iter()
            .map(|rx| s.spawn(move |_| consume(rx)))
            .collect();
        for id in 0..PRODUCERS {
            let pool = pool.clone();
            let txs = txs.clone();
            s.spawn(move |_| produce(id, per_producer, pool, txs));
        }
        drop(txs);
        consumers
            .into_iter()
            .map(|c| c.join().expect("consumer panicked"))
            .sum::<u64>()
    })
    .expect("a thread panicked");

    let s = pool.stats();
    let acquisitions = per_producer * PRODUCERS;
    assert!(acquisitions >= ops);
    assert_eq!(s.in_use, 0, "every slot came back: {s:?}");
    assert_eq!(s.acquisitions(), acquisitions, "stats add up: {s:?}");
    assert!(s.high_water <= CAPACITY);
    assert!(s.pooled > 0 && s.fallback_exhausted > 0 && s.fallback_too_large > 0);
    assert!(received > 0);
    // All slots are free again, and distinct.
    let all: Vec<_> = (0..CAPACITY).map(|_| pool.acquire(SLOT_SIZE)).collect();
    assert!(all.iter().all(PoolBufMut::is_pooled));
    eprintln!("stress: {received} buffers received by consumers, {s:?}");
}

/// Pools whose handles are all dropped while other threads still use and
/// drop their buffers: the arena must be freed exactly once, by whichever
/// thread is last (checked for leaks and double frees under valgrind).
#[test]
fn pool_closes_while_buffers_are_in_flight() {
    for round in 0..if cfg!(miri) { 4u64 } else { 200 } {
        let pool = BufferPool::new(4, 64).expect("pool");
        let bufs: Vec<PoolBuf> = (0..6u64)
            .map(|i| {
                let mut b = pool.acquire(64);
                fill(&mut b, round << 8 | i, false);
                b.freeze()
            })
            .collect();
        let clones = bufs.clone();
        crossbeam_utils::thread::scope(|s| {
            s.spawn(move |_| {
                for (i, b) in bufs.into_iter().enumerate() {
                    verify(&b, round << 8 | i as u64);
                }
            });
            s.spawn(move |_| drop(pool));
            s.spawn(move |_| {
                for (i, b) in clones.into_iter().enumerate() {
                    verify(&b, round << 8 | i as u64);
                }
            });
        })
        .expect("a thread panicked");
    }
}
