//! Round trip of one buffer (acquire, optionally write, freeze, drop): the
//! pool against a plain heap `Vec` and against a pool design without
//! `unsafe` (`safe_arc_queue` below), on one thread and across two.
//!
//! ```text
//! cargo bench -p sv2c-buffer-pool --bench pool -- --warm-up-time 1 --measurement-time 3
//! ```
//!
//! Pools have 8 slots, as in the reference implementation's experiments.

#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use std::hint::black_box;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use sv2c_buffer_pool::BufferPool;

const CAPACITY: usize = 8;
const SLOT_SIZE: usize = 65_600;

/// The design the crate docs compare against: boxed slots in `Arc`s, kept in
/// a lock-free queue, taken on acquire and pushed back by the last drop.
/// Written the cheapest way that is still safe code, so the comparison
/// favours it (its last-drop check ignores the race of two clones dropped at
/// once, which a real implementation would have to handle).
mod safe_arc_queue {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Weak};

    use crossbeam_queue::ArrayQueue;

    struct Shared {
        free: ArrayQueue<Arc<Slot>>,
        slot_size: usize,
        pooled: AtomicU64,
        fallbacks: AtomicU64,
    }

    pub(crate) struct Slot {
        data: Box<[u8]>,
        home: Weak<Shared>,
    }

    pub(crate) struct Pool(Arc<Shared>);

    pub(crate) enum BufMut {
        Pooled(Arc<Slot>, usize),
        Heap(Vec<u8>),
    }

    pub(crate) enum Buf {
        Pooled(Option<Arc<Slot>>, usize),
        Heap(Vec<u8>),
    }

    impl Pool {
        pub(crate) fn new(capacity: usize, slot_size: usize) -> Self {
            let shared = Arc::new_cyclic(|weak: &Weak<Shared>| {
                let free = ArrayQueue::new(capacity);
                for _ in 0..capacity {
                    let slot = Arc::new(Slot {
                        data: vec![0; slot_size].into_boxed_slice(),
                        home: weak.clone(),
                    });
                    assert!(free.push(slot).is_ok());
                }
                Shared {
                    free,
                    slot_size,
                    pooled: AtomicU64::new(0),
                    fallbacks: AtomicU64::new(0),
                }
            });
            Self(shared)
        }

        pub(crate) fn acquire(&self, len: usize) -> BufMut {
            if len <= self.0.slot_size
                && let Some(slot) = self.0.free.pop()
            {
                self.0.pooled.fetch_add(1, Ordering::Relaxed);
                return BufMut::Pooled(slot, len);
            }
            self.0.fallbacks.fetch_add(1, Ordering::Relaxed);
            BufMut::Heap(vec![0; len])
        }
    }

    impl BufMut {
        pub(crate) fn as_mut(&mut self) -> &mut [u8] {
            match self {
                Self::Pooled(slot, len) => match Arc::get_mut(slot) {
                    Some(s) => &mut s.data[..*len],
                    None => &mut [],
                },
                Self::Heap(v) => v,
            }
        }

        pub(crate) fn freeze(self) -> Buf {
            match self {
                Self::Pooled(slot, len) => Buf::Pooled(Some(slot), len),
                Self::Heap(v) => Buf::Heap(v),
            }
        }
    }

    impl Buf {
        pub(crate) fn as_slice(&self) -> &[u8] {
            match self {
                Self::Pooled(Some(slot), len) => &slot.data[..*len],
                Self::Pooled(None, _) => &[],
                Self::Heap(v) => v,
            }
        }
    }

    impl Drop for Buf {
        fn drop(&mut self) {
            if let Self::Pooled(slot, _) = self
                && let Some(slot) = slot.take()
                && Arc::strong_count(&slot) == 1
                && let Some(home) = slot.home.upgrade()
            {
                let _ = home.free.push(slot);
            }
        }
    }
}

fn single_thread(c: &mut Criterion) {
    let pool = BufferPool::new(CAPACITY, SLOT_SIZE).expect("pool");
    let safe = safe_arc_queue::Pool::new(CAPACITY, SLOT_SIZE);

    let mut group = c.benchmark_group("round_trip");
    for len in [64usize, 1024, 16 * 1024, 64 * 1024] {
        group.bench_with_input(BenchmarkId::new("pool", len), &len, |b, &len| {
            b.iter(|| drop(black_box(pool.acquire(black_box(len)).freeze())));
        });
        group.bench_with_input(BenchmarkId::new("vec", len), &len, |b, &len| {
            b.iter(|| drop(black_box(Vec::<u8>::with_capacity(black_box(len)))));
        });
        group.bench_with_input(BenchmarkId::new("safe_arc_queue", len), &len, |b, &len| {
            b.iter(|| drop(black_box(safe.acquire(black_box(len)).freeze())));
        });
    }
    group.finish();
    assert_eq!(
        pool.stats().fallbacks(),
        0,
        "the pooled runs must stay pooled"
    );

    // Acquire, fill with a 64-byte payload, freeze, read one byte, drop.
    // (`black_box` is applied to the array reference, not to a slice: a fat
    // pointer forced through the stack between the pool's two atomic
    // instructions costs about 8 ns on the benchmark machine by itself,
    // which a real caller's slice argument does not.)
    let payload = [0x5Au8; 64];
    let mut group = c.benchmark_group("round_trip_write_64");
    group.throughput(Throughput::Bytes(64));
    group.bench_function("pool", |b| {
        b.iter(|| {
            let mut buf = pool.acquire(payload.len());
            buf.copy_from_slice(black_box(&payload).as_slice());
            let frozen = buf.freeze();
            black_box(frozen[63])
        });
    });
    group.bench_function("vec", |b| {
        b.iter(|| {
            let mut buf = Vec::with_capacity(payload.len());
            buf.extend_from_slice(black_box(&payload).as_slice());
            black_box(buf[63])
        });
    });
    group.bench_function("safe_arc_queue", |b| {
        b.iter(|| {
            let mut buf = safe.acquire(payload.len());
            buf.as_mut().copy_from_slice(black_box(&payload).as_slice());
            let frozen = buf.freeze();
            black_box(frozen.as_slice()[63])
        });
    });
    group.finish();

    // What zeroing costs, to choose `acquire` as the default.
    let mut group = c.benchmark_group("acquire_zeroing");
    for len in [1024usize, 64 * 1024] {
        group.bench_with_input(BenchmarkId::new("acquire", len), &len, |b, &len| {
            b.iter(|| drop(black_box(pool.acquire(black_box(len)))));
        });
        group.bench_with_input(BenchmarkId::new("acquire_zeroed", len), &len, |b, &len| {
            b.iter(|| drop(black_box(pool.acquire_zeroed(black_box(len)))));
        });
        group.bench_with_input(BenchmarkId::new("vec_zeroed", len), &len, |b, &len| {
            b.iter(|| drop(black_box(vec![0u8; black_box(len)])));
        });
    }
    group.finish();
    assert_eq!(
        pool.stats().fallbacks(),
        0,
        "the pooled runs must stay pooled"
    );
}

/// Acquires `iters` items on this thread and drops them on another, in
/// rounds of `batch`: this thread makes `batch` items, hands them over, and
/// the other thread drops them all. Only the making and the dropping are
/// timed, not the hand-over, and the two threads never run at the same time,
/// so the result does not depend on having two idle cores. Every item is
/// still made on one thread and dropped on the other, with the cache-line
/// transfers that implies.
fn acquire_here_drop_there<T: Send>(iters: u64, batch: usize, make: impl Fn() -> T) -> Duration {
    let (to_dropper, dropper_rx) = sync_channel::<Vec<T>>(1);
    let (to_maker, maker_rx) = sync_channel::<(Vec<T>, Duration)>(1);
    let rounds = iters.div_ceil(batch as u64).max(1);
    std::thread::scope(|s| {
        s.spawn(move || {
            for mut items in dropper_rx {
                let start = Instant::now();
                items.clear();
                let elapsed = start.elapsed();
                if to_maker.send((items, elapsed)).is_err() {
                    break;
                }
            }
        });
        let mut items = Vec::with_capacity(batch);
        let mut total = Duration::ZERO;
        for _ in 0..rounds {
            let start = Instant::now();
            for _ in 0..batch {
                items.push(make());
            }
            total += start.elapsed();
            to_dropper.send(items).expect("dropper alive");
            let (back, dropping) = maker_rx.recv().expect("dropper alive");
            items = back;
            total += dropping;
        }
        drop(to_dropper);
        // Scale to exactly `iters` items.
        total.mul_f64(iters as f64 / (rounds * batch as u64) as f64)
    })
}

/// Acquired on the benchmark thread, dropped on a second one, in batches as
/// large as the pool: 8 slots (as everywhere here) and 64 (where the two
/// `Instant::now()` calls per batch weigh less).
fn cross_thread(c: &mut Criterion) {
    let len = 1024usize;
    for capacity in [CAPACITY, 64] {
        let pool = BufferPool::new(capacity, SLOT_SIZE).expect("pool");
        let safe = safe_arc_queue::Pool::new(capacity, SLOT_SIZE);
        let mut group = c.benchmark_group(format!("cross_thread_1024/batch_{capacity}"));
        group.bench_function("pool", |b| {
            b.iter_custom(|iters| {
                acquire_here_drop_there(iters, capacity, || pool.acquire(len).freeze())
            });
        });
        group.bench_function("vec", |b| {
            b.iter_custom(|iters| {
                acquire_here_drop_there(iters, capacity, || {
                    Vec::<u8>::with_capacity(black_box(len))
                })
            });
        });
        group.bench_function("safe_arc_queue", |b| {
            b.iter_custom(|iters| {
                acquire_here_drop_there(iters, capacity, || safe.acquire(len).freeze())
            });
        });
        group.finish();
        let stats = pool.stats();
        assert_eq!(stats.fallbacks(), 0, "cross-thread runs must stay pooled");
        assert_eq!(stats.in_use, 0);
    }
}

criterion_group!(benches, single_thread, cross_thread);
criterion_main!(benches);
