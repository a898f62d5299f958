//! One wave of miners: the storm of connections, the idle or share-sending phase, the job
//! fan-out, and what it measured.

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::{Duration, Instant};
use sv2c::noise::AuthorityPublicKey;
use tokio::sync::watch;

use super::args::{Args, Mode};
use super::measure::{cpu, rss_kib, tcp_mem_kib};
use super::miners::{Counts, miner};

/// What one wave measured.
#[derive(Debug, Default)]
pub(super) struct Wave {
    pub(super) opened: u64,
    pub(super) failed: u64,
    pub(super) all_open_s: f64,
    pub(super) cpu_per_handshake_us: f64,
    /// Also counting the 2 s after the last miner opened (keys made again for a stock).
    pub(super) cpu_per_handshake_settled_us: f64,
    pub(super) rss_before_kib: u64,
    pub(super) rss_idle_kib: u64,
    pub(super) tcp_mem_before_kib: u64,
    pub(super) tcp_mem_idle_kib: u64,
    pub(super) shares_per_s: f64,
    pub(super) cpu_per_share_us: f64,
    pub(super) accepted: u64,
    pub(super) answered: u64,
    /// Answer messages per share answered.
    pub(super) answers_per_share: f64,
    pub(super) switches_per_share: f64,
    /// `--rate`: share-to-answer times (p50, p99) in ms and the server's CPU use in % of
    /// one core.
    pub(super) latency_ms: Option<(f64, f64)>,
    pub(super) cpu_pct: f64,
    /// `--fanout`: one entry per block.
    pub(super) fanout: Vec<FanOut>,
    /// RSS after the fan-out's blocks (their jobs held).
    pub(super) rss_after_fanout_kib: u64,
    /// `--rate`: RSS at the end of the shares, every miner still connected.
    pub(super) rss_after_shares_kib: u64,
}

/// How one new block reached the miners.
#[derive(Debug)]
pub(super) struct FanOut {
    pub(super) reached: usize,
    /// Milliseconds from the reference until half, 99 % and all of those reached had it.
    pub(super) p50_ms: f64,
    pub(super) p99_ms: f64,
    pub(super) last_ms: f64,
    /// `true`: from the Template Provider's send; `false`: from the first miner's arrival.
    pub(super) from_tp: bool,
}

/// The `q`-quantile of sorted `v` (nearest rank).
pub(super) fn quantile<T: Copy>(v: &[T], q: f64) -> Option<T> {
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    v.get(i).copied()
}

/// Waits for the next block whose previous hash reached all `want` miners (or the most of
/// them after `limit`); `t0` is when the Template Provider sent it, if it did.
pub(super) async fn next_block(
    counts: &Counts,
    done: &mut Vec<u64>,
    want: usize,
    t0: Option<Instant>,
    limit: Duration,
) -> Option<FanOut> {
    let deadline = Instant::now() + limit;
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let timed_out = Instant::now() >= deadline;
        let seen = counts.prev_hashes.lock().unwrap_or_else(|e| e.into_inner());
        let best = seen
            .iter()
            .filter(|(k, _)| !done.contains(k))
            .max_by_key(|(_, v)| v.len());
        let Some((&key, arrivals)) = best else {
            if timed_out {
                return None;
            }
            continue;
        };
        if arrivals.len() < want && !timed_out {
            continue;
        }
        // Let late arrivals of a complete block settle into the list first.
        done.push(key);
        let mut arrivals = arrivals.clone();
        drop(seen);
        arrivals.sort();
        let from = t0.unwrap_or(arrivals[0]);
        let ms: Vec<f64> = arrivals
            .iter()
            .map(|a| a.saturating_duration_since(from).as_secs_f64() * 1e3)
            .collect();
        return Some(FanOut {
            reached: ms.len(),
            p50_ms: quantile(&ms, 0.50).unwrap_or(f64::NAN),
            p99_ms: quantile(&ms, 0.99).unwrap_or(f64::NAN),
            last_ms: ms.last().copied().unwrap_or(f64::NAN),
            from_tp: t0.is_some(),
        });
    }
}

pub(super) async fn wave(
    args: &Arc<Args>,
    key: AuthorityPublicKey,
    pid: u32,
    blocks: Option<&watch::Sender<u32>>,
) -> Wave {
    let counts = Arc::new(Counts::default());
    let (go_tx, go) = watch::channel(false);
    let (stop_tx, stop) = watch::channel(false);
    let mut w = Wave {
        rss_before_kib: rss_kib(pid),
        tcp_mem_before_kib: tcp_mem_kib(),
        ..Wave::default()
    };
    let (cpu0, _) = cpu(pid);
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..args.miners {
        tasks.spawn(miner(
            args.clone(),
            key,
            n,
            started,
            counts.clone(),
            go.clone(),
            stop.clone(),
        ));
    }
    let deadline = started + Duration::from_secs(180);
    while counts.opened.load(Relaxed) + counts.failed.load(Relaxed) < args.miners as u64
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (cpu1, _) = cpu(pid);
    w.opened = counts.opened.load(Relaxed);
    w.failed = counts.failed.load(Relaxed);
    w.all_open_s = counts.last_open_ns.load(Relaxed) as f64 / 1e9;
    w.cpu_per_handshake_us = (cpu1 - cpu0) as f64 / 1e3 / w.opened.max(1) as f64;
    // Idle: let the server settle, then read its memory.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (cpu2, _) = cpu(pid);
    w.cpu_per_handshake_settled_us = (cpu2 - cpu0) as f64 / 1e3 / w.opened.max(1) as f64;
    w.rss_idle_kib = rss_kib(pid);
    w.tcp_mem_idle_kib = tcp_mem_kib();
    if args.fanout > 0 {
        counts.recording.store(true, Relaxed);
        let want = w.opened as usize;
        let mut done = Vec::new();
        for _ in 0..args.fanout {
            let t0 = blocks.map(|b| {
                let t0 = Instant::now();
                b.send_modify(|n| *n += 1);
                t0
            });
            match next_block(&counts, &mut done, want, t0, Duration::from_secs(60)).await {
                Some(f) => w.fanout.push(f),
                None => break,
            }
            if blocks.is_some() {
                tokio::time::sleep(Duration::from_secs(3)).await;
            }
        }
        counts.recording.store(false, Relaxed);
        w.rss_after_fanout_kib = rss_kib(pid);
    }
    if args.mode == Mode::Shares {
        let _ = go_tx.send(true);
        // Half a second to reach a steady rate, then the measured interval.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (a0, acc0) = (counts.answered.load(Relaxed), counts.accepted.load(Relaxed));
        let m0 = counts.answers.load(Relaxed);
        let (c0, s0) = cpu(pid);
        let t0 = Instant::now();
        counts.recording.store(true, Relaxed);
        tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
        counts.recording.store(false, Relaxed);
        let (c1, s1) = cpu(pid);
        let elapsed = t0.elapsed().as_secs_f64();
        w.cpu_pct = (c1 - c0) as f64 / 1e9 / elapsed * 100.0;
        if args.rate.is_some() {
            w.rss_after_shares_kib = rss_kib(pid);
            let mut l = std::mem::take(
                &mut *counts
                    .latencies_us
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()),
            );
            l.sort_unstable();
            if let (Some(p50), Some(p99)) = (quantile(&l, 0.50), quantile(&l, 0.99)) {
                w.latency_ms = Some((f64::from(p50) / 1e3, f64::from(p99) / 1e3));
            }
        }
        w.answered = counts.answered.load(Relaxed) - a0;
        w.accepted = counts.accepted.load(Relaxed) - acc0;
        w.answers_per_share = (counts.answers.load(Relaxed) - m0) as f64 / w.answered.max(1) as f64;
        w.shares_per_s = w.answered as f64 / elapsed;
        w.cpu_per_share_us = (c1 - c0) as f64 / 1e3 / w.answered.max(1) as f64;
        w.switches_per_share = (s1 - s0) as f64 / w.answered.max(1) as f64;
    }
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    w
}
