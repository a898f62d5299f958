//! `cargo bench pool_lifecycle` (from the repository root; every id starts with `pool_lifecycle/`): where pooled zero-copy pays and where it stops.
//!
//! Three strategies turn received frames into messages the application keeps (see
//! `sv2c_benches::strategy`): `zc_hold` (borrowed decode, frame kept, slot pinned),
//! `owned_release` (owned decode from a pooled frame, frame dropped at once) and
//! `owned_direct` (owned decode straight from the read buffer, like `Sv2Codec`). Each copies
//! the frame's bytes once, as the socket read would. The pools have 8 slots.
//!
//! For context, two lines measure the reference implementation (SRI) the same way:
//! `sri_zc_hold` (its `buffer_sv2` pool filled the way `codec_sv2`'s decoder fills it,
//! header then payload, and `binary_sv2::from_bytes` borrowed decode; the pool slice is
//! kept) and `sri_owned_release` (the same, then `into_owned()`, slice dropped).
//!
//! Time is the benchmark thread's CPU time (`sv2c_benches::clock`; `SV2C_BENCH_CLOCK=wall`
//! for wall time). Groups (per-message costs are criterion's median divided by the
//! messages per iteration; `scripts/bench_tables.py medians` prints the medians to divide):
//! * `exhaustion_boundary`: the n-th decode while n − 1 earlier ones are kept,
//!   n = 1 … 12. 128 independent lanes (each with its own pool) do their n-th decode in
//!   one timed batch, so the clock is read once per 128 decodes (its own cost subtracted);
//!   only the decode is timed, not the release.
//! * `latency_vs_held`: one decode and its release while k others are kept.
//! * `throughput`: decode N messages and keep them all, then release them; time per
//!   message, for the seed message and two real ones. Bursts of fewer than 64 messages
//!   are repeated within an iteration (criterion's throughput is the messages per
//!   iteration).
//! * `sliding_window`: 200 messages through a window of the last k kept.
//! * `copy_overhead`: borrowed decode vs owned decode (decode + one copy) of a payload,
//!   16 B … 1 KiB and 1 MiB, beside a bare `memcpy` and an allocation + copy.
//! * `alloc_amplification`: allocations and bytes per message for each strategy and N,
//!   counted by the counting allocator and written to
//!   `<target>/sv2c-bench-reports/pool_lifecycle_allocs.{csv,md}`.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Duration;

use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use sv2c_benches::alloc::count;
use sv2c_benches::clock::BenchClock;
use sv2c_benches::messages::{
    SeedMsg, SeedMsgLarge, SeedMsgLargeRef, SeedMsgRef, frame_of, new_extended_mining_job,
    payload_of, seed_msg, seed_msg_large, submit_shares_extended,
};
use sv2c_benches::report::{Table, criterion_config, emit, num};
use sv2c_benches::strategy::{Lane, OwnedDirect, OwnedRelease, POOL_CAPACITY, Strategy, ZcHold};
use sv2c_binary::messages::{NewExtendedMiningJob, SubmitSharesExtended};
use sv2c_binary::{Decode, Wire};

sv2c_benches::install_counting_allocator!();

const BENCH: &str = "pool_lifecycle";

/// A group id under the suite's prefix: every id of this suite starts with
/// `pool_lifecycle/`, so `cargo bench pool_lifecycle` at the workspace root runs exactly
/// this suite (the other targets get the filter too and match nothing).
fn group(name: &str) -> String {
    format!("{BENCH}/{name}")
}

/// Coinbase suffix of the seed message in every group but `copy_overhead`.
const SEED_SUFFIX: usize = 64;
/// Independent lanes of `exhaustion_boundary` (decodes per clock reading).
const LANES: usize = 128;
const HELD: &[usize] = &[0, 1, 2, 4, 6, 7, 8, 9, 12, 16, 32, 64];
const THROUGHPUT_N: &[usize] = &[1, 4, 8, 9, 16, 32, 64, 100, 200, 1000];
/// Fewest messages per `throughput` iteration (bursts smaller than this are repeated).
const BURST_MIN: usize = 64;
const WINDOWS: &[usize] = &[1, 4, 7, 8, 9, 16];
const WINDOW_MESSAGES: usize = 200;
const COPY_SIZES: &[usize] = &[16, 64, 256, 1024];
const LARGE: usize = 1 << 20;

/// The reference implementation's side: the seed message and its pooled decode paths.
mod sri {
    #![allow(
        missing_docs,
        missing_debug_implementations,
        unreachable_pub,
        dead_code
    )]
    #![allow(clippy::all)]

    use std::hint::black_box;

    use binary_sv2::{B064K, Deserialize, Serialize, U256};
    use buffer_sv2::{Buffer, BufferFromSystemMemory, BufferPool, Slice};
    use framing_sv2::framing::{SerializedFrame, SizeHint};
    use framing_sv2::header::Header;
    use sv2c_buffer_pool::BufferPool as OurPool;

    use sv2c_benches::strategy::Strategy;

    /// The seed message, as SRI code defines it.
    #[derive(Serialize, Deserialize, Debug, Clone)]
    pub struct SriSeed<'decoder> {
        pub channel_id: u32,
        pub merkle_root: U256<'decoder>,
        pub coinbase_suffix: B064K<'decoder>,
    }

    /// Size of the pool `codec_sv2` 7 gives each decoder (its `DEFAULT_POOL_BUFFER_SIZE`,
    /// which is crate-private): 5 × 64 KiB.
    const SRI_POOL_BYTES: usize = 5 * 65_536;

    fn new_pool() -> BufferPool<BufferFromSystemMemory> {
        BufferPool::new(SRI_POOL_BYTES)
    }

    /// Reads one frame into the pool as `codec_sv2`'s `Decoder` does with its
    /// `with_buffer_pool` feature: the 6 header bytes, then the missing payload bytes after
    /// them, then the whole frame handed out as a pool `Slice`.
    fn read_frame(
        pool: &mut BufferPool<BufferFromSystemMemory>,
        frame: &[u8],
    ) -> SerializedFrame<Slice> {
        pool.get_writable(Header::SIZE)
            .copy_from_slice(&frame[..Header::SIZE]);
        let len = pool.len();
        let missing = match SerializedFrame::<Slice>::parse_header(pool.get_data_by_ref(len)) {
            Err(SizeHint::Missing(m)) => m,
            _ => 0,
        };
        pool.get_writable(missing)
            .copy_from_slice(&frame[Header::SIZE..Header::SIZE + missing]);
        let len = pool.len();
        let header = SerializedFrame::<Slice>::parse_header(pool.get_data_by_ref(len))
            .expect("one whole frame");
        SerializedFrame::from_parts(header, pool.get_data_owned())
    }

    /// SRI zero-copy: borrowed decode from the pooled frame, frame kept.
    pub struct SriZcHold {
        pool: BufferPool<BufferFromSystemMemory>,
    }

    impl SriZcHold {
        pub fn new() -> Self {
            SriZcHold { pool: new_pool() }
        }
    }

    impl Strategy for SriZcHold {
        type Held = SerializedFrame<Slice>;
        const NAME: &'static str = "sri_zc_hold";

        fn decode_one(&mut self, frame: &[u8]) -> Self::Held {
            let mut frame = read_frame(&mut self.pool, frame);
            {
                let msg: SriSeed<'_> =
                    binary_sv2::from_bytes(frame.payload()).expect("a valid payload");
                black_box(&msg);
            }
            frame
        }

        fn pool(&self) -> Option<&OurPool> {
            None
        }
    }

    /// SRI owned: borrowed decode from the pooled frame, `into_owned()`, frame dropped.
    pub struct SriOwnedRelease {
        pool: BufferPool<BufferFromSystemMemory>,
    }

    impl SriOwnedRelease {
        pub fn new() -> Self {
            SriOwnedRelease { pool: new_pool() }
        }
    }

    impl Strategy for SriOwnedRelease {
        type Held = SriSeedOwned;
        const NAME: &'static str = "sri_owned_release";

        fn decode_one(&mut self, frame: &[u8]) -> SriSeedOwned {
            let mut frame = read_frame(&mut self.pool, frame);
            let msg: SriSeed<'_> =
                binary_sv2::from_bytes(frame.payload()).expect("a valid payload");
            msg.into_owned()
        }

        fn pool(&self) -> Option<&OurPool> {
            None
        }
    }
}

use sri::{SriOwnedRelease, SriZcHold};

// ===== exhaustion_boundary =====

/// Times the n-th decode in each of [`LANES`] lanes that keep n − 1 earlier results.
fn nth_decode<S: Strategy>(
    g: &mut BenchmarkGroup<'_, BenchClock>,
    clock: BenchClock,
    frame: &[u8],
    n: usize,
    make: impl Fn() -> S,
) {
    let mut lanes: Vec<Lane<S>> = (0..LANES)
        .map(|_| {
            let mut lane = Lane::new(make(), n);
            lane.hold(frame, n - 1);
            lane
        })
        .collect();
    // Declared after `lanes`, so dropped before them.
    let mut nth: Vec<S::Held> = Vec::with_capacity(LANES);
    let overhead = clock.overhead();
    g.bench_function(BenchmarkId::new(S::NAME, n), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let batch = left.min(LANES as u64) as usize;
                let start = clock.now();
                for lane in &mut lanes[..batch] {
                    nth.push(lane.strategy.decode_one(black_box(frame)));
                }
                total += clock.since(start).saturating_sub(overhead);
                // Back to n − 1 kept per lane, untimed.
                nth.clear();
                left -= batch as u64;
            }
            total
        })
    });
}

fn exhaustion_boundary(c: &mut Criterion<BenchClock>) {
    let frame = frame_of(&seed_msg(SEED_SUFFIX));
    let clock = BenchClock::from_env();
    let mut g = c.benchmark_group(group("exhaustion_boundary"));
    for n in 1..=POOL_CAPACITY + 4 {
        nth_decode(&mut g, clock, &frame, n, ZcHold::<SeedMsg>::new);
        nth_decode(&mut g, clock, &frame, n, OwnedRelease::<SeedMsg>::new);
        nth_decode(&mut g, clock, &frame, n, OwnedDirect::<SeedMsg>::new);
        nth_decode(&mut g, clock, &frame, n, SriZcHold::new);
    }
    g.finish();
}

// ===== latency_vs_held =====

fn one_decode<S: Strategy>(g: &mut BenchmarkGroup<'_, BenchClock>, frame: &[u8], k: usize, s: S) {
    let mut lane = Lane::new(s, k);
    lane.hold(frame, k);
    g.bench_function(BenchmarkId::new(S::NAME, k), |b| {
        // The result is dropped inside the timed loop: decode and release.
        b.iter(|| lane.strategy.decode_one(black_box(frame)))
    });
}

fn latency_vs_held(c: &mut Criterion<BenchClock>) {
    let frame = frame_of(&seed_msg(SEED_SUFFIX));
    let mut g = c.benchmark_group(group("latency_vs_held"));
    for &k in HELD {
        one_decode(&mut g, &frame, k, ZcHold::<SeedMsg>::new());
        one_decode(&mut g, &frame, k, OwnedRelease::<SeedMsg>::new());
        one_decode(&mut g, &frame, k, OwnedDirect::<SeedMsg>::new());
        one_decode(&mut g, &frame, k, SriZcHold::new());
    }
    g.finish();
}

// ===== throughput =====

fn burst<S: Strategy>(
    g: &mut BenchmarkGroup<'_, BenchClock>,
    msg: &str,
    frame: &[u8],
    n: usize,
    s: S,
) {
    let mut lane = Lane::new(s, n);
    // Small bursts are repeated so that every iteration decodes at least BURST_MIN
    // messages: the loop's own cost is then spread alike over every N.
    let rounds = BURST_MIN.div_ceil(n);
    g.throughput(Throughput::Elements((rounds * n) as u64));
    g.bench_function(BenchmarkId::new(format!("{msg}/{}", S::NAME), n), |b| {
        b.iter(|| {
            for _ in 0..rounds {
                lane.hold(black_box(frame), n);
                black_box(&lane.held);
                lane.release();
            }
        })
    });
}

fn throughput(c: &mut Criterion<BenchClock>) {
    let seed = frame_of(&seed_msg(SEED_SUFFIX));
    let sse = frame_of(&submit_shares_extended());
    let nemj = frame_of(&new_extended_mining_job());
    let mut g = c.benchmark_group(group("throughput"));
    for &n in THROUGHPUT_N {
        burst(&mut g, "seed", &seed, n, ZcHold::<SeedMsg>::new());
        burst(&mut g, "seed", &seed, n, OwnedRelease::<SeedMsg>::new());
        burst(&mut g, "seed", &seed, n, OwnedDirect::<SeedMsg>::new());
        burst(&mut g, "seed", &seed, n, SriZcHold::new());
        burst(&mut g, "seed", &seed, n, SriOwnedRelease::new());
    }
    for &n in THROUGHPUT_N {
        let name = "SubmitSharesExtended";
        burst(&mut g, name, &sse, n, ZcHold::<SubmitSharesExtended>::new());
        burst(
            &mut g,
            name,
            &sse,
            n,
            OwnedRelease::<SubmitSharesExtended>::new(),
        );
        burst(
            &mut g,
            name,
            &sse,
            n,
            OwnedDirect::<SubmitSharesExtended>::new(),
        );
    }
    for &n in THROUGHPUT_N {
        let name = "NewExtendedMiningJob";
        burst(
            &mut g,
            name,
            &nemj,
            n,
            ZcHold::<NewExtendedMiningJob>::new(),
        );
        burst(
            &mut g,
            name,
            &nemj,
            n,
            OwnedRelease::<NewExtendedMiningJob>::new(),
        );
        burst(
            &mut g,
            name,
            &nemj,
            n,
            OwnedDirect::<NewExtendedMiningJob>::new(),
        );
    }
    g.finish();
}

// ===== sliding_window =====

fn window<S: Strategy>(g: &mut BenchmarkGroup<'_, BenchClock>, frame: &[u8], k: usize, s: S) {
    let mut s = s;
    // Declared after `s`, so dropped before it (SRI's pool waits for its buffers on drop).
    let mut live: VecDeque<S::Held> = VecDeque::with_capacity(k);
    g.throughput(Throughput::Elements(WINDOW_MESSAGES as u64));
    g.bench_function(BenchmarkId::new(S::NAME, k), |b| {
        b.iter(|| {
            for _ in 0..WINDOW_MESSAGES {
                if live.len() == k {
                    drop(live.pop_front());
                }
                live.push_back(s.decode_one(black_box(frame)));
            }
            live.clear();
        })
    });
}

fn sliding_window(c: &mut Criterion<BenchClock>) {
    let frame = frame_of(&seed_msg(SEED_SUFFIX));
    let mut g = c.benchmark_group(group("sliding_window"));
    for &k in WINDOWS {
        window(&mut g, &frame, k, ZcHold::<SeedMsg>::new());
        window(&mut g, &frame, k, OwnedRelease::<SeedMsg>::new());
        window(&mut g, &frame, k, OwnedDirect::<SeedMsg>::new());
    }
    g.finish();
}

// ===== copy_overhead =====

fn copy_overhead(c: &mut Criterion<BenchClock>) {
    let mut g = c.benchmark_group(group("copy_overhead"));
    let mut scratch: Vec<u8> = Vec::with_capacity(LARGE + 64);
    for &size in COPY_SIZES {
        let payload = payload_of(&seed_msg(size));
        g.throughput(Throughput::Bytes(payload.len() as u64));
        g.bench_function(BenchmarkId::new("decode_ref", size), |b| {
            b.iter(|| {
                let m = SeedMsgRef::decode_ref(black_box(&payload)).expect("valid");
                black_box(&m);
            })
        });
        g.bench_function(BenchmarkId::new("decode_owned", size), |b| {
            b.iter(|| SeedMsg::decode_owned(black_box(&payload)).expect("valid"))
        });
        g.bench_function(BenchmarkId::new("memcpy", size), |b| {
            b.iter(|| {
                scratch.clear();
                scratch.extend_from_slice(black_box(&payload));
                black_box(&scratch);
            })
        });
        g.bench_function(BenchmarkId::new("alloc_copy", size), |b| {
            b.iter(|| Box::<[u8]>::from(black_box(&payload[..])))
        });
    }
    // One payload far beyond a pool slot: B0_16M of 1 MiB.
    let payload = payload_of(&seed_msg_large(LARGE));
    g.throughput(Throughput::Bytes(payload.len() as u64));
    g.bench_function(BenchmarkId::new("decode_ref", LARGE), |b| {
        b.iter(|| {
            let m = SeedMsgLargeRef::decode_ref(black_box(&payload)).expect("valid");
            black_box(&m);
        })
    });
    g.bench_function(BenchmarkId::new("decode_owned", LARGE), |b| {
        b.iter(|| SeedMsgLarge::decode_owned(black_box(&payload)).expect("valid"))
    });
    g.bench_function(BenchmarkId::new("memcpy", LARGE), |b| {
        b.iter(|| {
            scratch.clear();
            scratch.extend_from_slice(black_box(&payload));
            black_box(&scratch);
        })
    });
    g.bench_function(BenchmarkId::new("alloc_copy", LARGE), |b| {
        b.iter(|| Box::<[u8]>::from(black_box(&payload[..])))
    });
    g.finish();
}

// ===== alloc_amplification =====

/// Allocations of one burst of `n` decodes kept together (after one warm-up burst that
/// sizes the reusable buffers), and the pool's fallbacks during it.
fn burst_allocs<S: Strategy>(s: S, frame: &[u8], n: usize) -> (f64, f64, u64) {
    let mut lane = Lane::new(s, n);
    lane.hold(frame, n);
    lane.release();
    let fallbacks = |l: &Lane<S>| l.strategy.pool().map_or(0, |p| p.stats().fallbacks());
    let before = fallbacks(&lane);
    let ((), allocs) = count(|| lane.hold(frame, n));
    let during = fallbacks(&lane) - before;
    lane.release();
    (
        allocs.per_op(n as u64),
        allocs.bytes_per_op(n as u64),
        during,
    )
}

fn alloc_rows<S: Strategy>(table: &mut Table, msg: &str, frame: &[u8], make: impl Fn() -> S) {
    for &n in THROUGHPUT_N {
        let (per_msg, bytes, fallbacks) = burst_allocs(make(), frame, n);
        table.push(vec![
            msg.to_string(),
            S::NAME.to_string(),
            n.to_string(),
            num(per_msg * n as f64, 0),
            num(per_msg, 3),
            num(bytes, 1),
            if S::NAME.starts_with("sri") {
                "-".to_string()
            } else {
                fallbacks.to_string()
            },
        ]);
    }
}

fn alloc_amplification(_c: &mut Criterion<BenchClock>) {
    // `cargo bench vs_sri` at the root: no id here matches, skip the allocation tables.
    if sv2c_benches::report::filtered_to_other_suite(BENCH) {
        return;
    }
    let seed = frame_of(&seed_msg(SEED_SUFFIX));
    let sse = frame_of(&submit_shares_extended());
    let nemj = frame_of(&new_extended_mining_job());
    let mut t = Table::new(&[
        "message",
        "strategy",
        "N",
        "allocations",
        "allocs/msg",
        "bytes/msg",
        "pool fallbacks",
    ]);
    alloc_rows(&mut t, "seed", &seed, ZcHold::<SeedMsg>::new);
    alloc_rows(&mut t, "seed", &seed, OwnedRelease::<SeedMsg>::new);
    alloc_rows(&mut t, "seed", &seed, OwnedDirect::<SeedMsg>::new);
    alloc_rows(&mut t, "seed", &seed, SriZcHold::new);
    alloc_rows(&mut t, "seed", &seed, SriOwnedRelease::new);
    let name = "SubmitSharesExtended";
    alloc_rows(&mut t, name, &sse, ZcHold::<SubmitSharesExtended>::new);
    alloc_rows(
        &mut t,
        name,
        &sse,
        OwnedRelease::<SubmitSharesExtended>::new,
    );
    alloc_rows(&mut t, name, &sse, OwnedDirect::<SubmitSharesExtended>::new);
    let name = "NewExtendedMiningJob";
    alloc_rows(&mut t, name, &nemj, ZcHold::<NewExtendedMiningJob>::new);
    alloc_rows(
        &mut t,
        name,
        &nemj,
        OwnedRelease::<NewExtendedMiningJob>::new,
    );
    alloc_rows(
        &mut t,
        name,
        &nemj,
        OwnedDirect::<NewExtendedMiningJob>::new,
    );
    emit(
        &t,
        "pool_lifecycle_allocs",
        "Allocations per message (one burst of N decodes kept together, after a warm-up burst)",
    );
    // The copy_overhead payloads too: decode only vs decode + copy.
    let mut t = Table::new(&[
        "payload",
        "decode_ref allocs",
        "decode_owned allocs",
        "decode_owned bytes",
    ]);
    for &size in COPY_SIZES {
        let payload = payload_of(&seed_msg(size));
        let (_, r) = count(|| SeedMsgRef::decode_ref(&payload).map(|m| m.merkle_root));
        let (_, o) = count(|| SeedMsg::decode_owned(&payload).map(|m| m.channel_id));
        t.push(vec![
            format!("{size} B"),
            r.count.to_string(),
            o.count.to_string(),
            o.bytes.to_string(),
        ]);
    }
    let payload = payload_of(&seed_msg_large(LARGE));
    let (_, r) = count(|| SeedMsgLargeRef::decode_ref(&payload).map(|m| m.merkle_root));
    let (_, o) = count(|| SeedMsgLarge::decode_owned(&payload).map(|m| m.channel_id));
    t.push(vec![
        "1 MiB (B0_16M)".to_string(),
        r.count.to_string(),
        o.count.to_string(),
        o.bytes.to_string(),
    ]);
    emit(
        &t,
        "copy_overhead_allocs",
        "Allocations of one decode, by payload size",
    );
}

/// The shared settings with shorter warm-up and measurement (0.3 s + 0.7 s, 30 samples):
/// 244 benchmarks, and `cargo bench pool_lifecycle` (build included) must finish within
/// 10 minutes on a 2-core machine.
fn config() -> Criterion<BenchClock> {
    criterion_config(BENCH)
        .warm_up_time(std::time::Duration::from_millis(300))
        .measurement_time(std::time::Duration::from_millis(700))
}

/// `criterion_group!` makes a public function; it lives here, out of the crate root.
mod harness {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = exhaustion_boundary, latency_vs_held, throughput, sliding_window, copy_overhead,
            alloc_amplification
    }
}

criterion_main!(harness::benches);
