//! `loadgen faults`: miners that mine through a proxy at a steady, low share rate and come
//! back by themselves after a fault, with the time of every accepted share kept per miner.
//! A script (scripts/faults.sh) injects the faults and tells `loadgen` when, on stdin.
//!
//! Each miner dials the target (Noise, `SetupConnection`, one standard channel), sends a
//! share as soon as it has work and then `--rate R` shares a second (at most `--in-flight
//! K` unanswered). When the connection closes or the server sends `Reconnect` (empty host,
//! port 0: the same server; otherwise the endpoint named, if it is an IP address), the
//! miner dials again at once, and after a failed dial or setup waits 50 ms doubling to 1 s
//! (each miner scaled by its own factor in [0.5, 1), so that they do not dial in step)
//! before the next. A miner that stays connected keeps mining on the jobs it is sent.
//!
//! Stdin, one command a line; stdout, one answer a line (diagnostics go to stderr):
//!
//! - at the start, once every miner has had a share accepted (or after 60 s):
//!   `ready miners=N accepted_miners=M`
//! - `pause`: no new shares; once none is unanswered (or after 5 s):
//!   `counts accepted=A rejected=R unanswered=U in_flight=F connections_lost=C`, totals
//!   since the start (`unanswered`: shares whose connection ended before their answer).
//! - `resume`: shares again.
//! - `fault NAME`: the fault happens now. Each miner's recovery is the time from now to
//!   the first accepted share it sent after its last connection loss since now (after now
//!   if it lost none).
//! - `switch NAME`: the fault is a move the server makes later (a return to a preferred
//!   pool): it starts at the first connection loss of any miner after now, and the
//!   recoveries are counted from there.
//!
//!   Both answer once every miner has recovered and no miner lost a connection for 1 s, or
//!   at the deadline (`--deadline S`, default 30 s, after the start of the fault):
//!   `recovered NAME miners=N p50_ms=… p99_ms=… max_ms=… lost=L connections_lost=C
//!   unanswered=U start_ms=T` — `lost`: miners without an accepted share within the
//!   deadline; `connections_lost` and `unanswered` since the command; `start_ms`: when the
//!   fault started, after the command (0 for `fault`; `-1` if a `switch` saw no loss).
//! - `quit` or the end of stdin: the miners close and `loadgen` exits.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sv2c::noise::AuthorityPublicKey;
use sv2c::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::watch;

use super::BoxError;
use super::args::Args;
use super::miners::{Work, open_miner};
use super::wave::quantile;

/// The first wait after a failed dial, and the longest.
const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(1);
/// Quiet (no connection lost) needed before a fault's recoveries are read.
const SETTLE: Duration = Duration::from_secs(1);

/// What one miner did, in milliseconds since `loadgen` started.
#[derive(Debug, Default)]
struct Log {
    /// Every accepted share: when it was sent and when its acceptance arrived.
    accepted: Vec<(u32, u32)>,
    /// When each of its connections ended (closed, failed or `Reconnect`).
    losses: Vec<u32>,
}

#[derive(Debug)]
struct Shared {
    start: Instant,
    logs: Vec<Mutex<Log>>,
    paused: AtomicBool,
    accepted: AtomicU64,
    rejected: AtomicU64,
    /// Shares whose connection ended before their answer came.
    unanswered: AtomicU64,
    connections_lost: AtomicU64,
    in_flight: AtomicI64,
    /// Miners with at least one accepted share.
    mining: AtomicU64,
}

impl Shared {
    fn now_ms(&self) -> u32 {
        self.start.elapsed().as_millis().min(u128::from(u32::MAX)) as u32
    }

    fn log(&self, n: usize) -> std::sync::MutexGuard<'_, Log> {
        self.logs[n].lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(super) async fn run(args: Args) -> Result<bool, BoxError> {
    let nofile = super::measure::raise_nofile();
    let key = args
        .key
        .ok_or("faults mode needs --authority-key (the proxy's)")?;
    let rate = args.rate.unwrap_or(1.0);
    let shared = Arc::new(Shared {
        start: Instant::now(),
        logs: (0..args.miners).map(|_| Mutex::default()).collect(),
        paused: AtomicBool::new(false),
        accepted: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
        unanswered: AtomicU64::new(0),
        connections_lost: AtomicU64::new(0),
        in_flight: AtomicI64::new(0),
        mining: AtomicU64::new(0),
    });
    eprintln!(
        "loadgen: {} miners through {}, {rate} shares/s each; open-files limit {nofile}",
        args.miners, args.target
    );
    let (stop_tx, stop) = watch::channel(false);
    let mut tasks = Vec::with_capacity(args.miners);
    for n in 0..args.miners {
        let (shared, stop) = (shared.clone(), stop.clone());
        let (target, in_flight) = (args.target, args.in_flight as usize);
        tasks.push(tokio::spawn(async move {
            miner(target, key, n, rate, in_flight, &shared, stop).await;
        }));
    }
    let all = args.miners as u64;
    let ready_by = Instant::now() + Duration::from_secs(60);
    while shared.mining.load(Relaxed) < all && Instant::now() < ready_by {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!(
        "ready miners={} accepted_miners={}",
        args.miners,
        shared.mining.load(Relaxed)
    );

    let deadline = Duration::from_secs_f64(args.deadline);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut words = line.split_whitespace();
        match (words.next(), words.next()) {
            (Some("pause"), _) => {
                shared.paused.store(true, Relaxed);
                let by = Instant::now() + Duration::from_secs(5);
                while shared.in_flight.load(Relaxed) > 0 && Instant::now() < by {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                println!(
                    "counts accepted={} rejected={} unanswered={} in_flight={} connections_lost={}",
                    shared.accepted.load(Relaxed),
                    shared.rejected.load(Relaxed),
                    shared.unanswered.load(Relaxed),
                    shared.in_flight.load(Relaxed),
                    shared.connections_lost.load(Relaxed)
                );
            }
            (Some("resume"), _) => shared.paused.store(false, Relaxed),
            (Some(kind @ ("fault" | "switch")), Some(name)) => {
                let r = recovery(&shared, kind == "switch", deadline).await;
                println!("recovered {name} {r}");
            }
            (Some("quit"), _) => break,
            _ => eprintln!("loadgen: unknown command {line:?}"),
        }
    }
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = tokio::time::timeout(Duration::from_secs(2), t).await;
    }
    Ok(true)
}

/// One fault's recoveries, as the `recovered` line's fields.
async fn recovery(shared: &Shared, switch: bool, deadline: Duration) -> String {
    let mark = shared.now_ms();
    let deadline_ms = deadline.as_millis() as u32;
    let unanswered_before = shared.unanswered.load(Relaxed);
    let lost_before = shared.connections_lost.load(Relaxed);
    let miners = shared.logs.len();
    // A switch starts at the first loss after the mark (looked for until the deadline).
    let mut start = if switch { None } else { Some(mark) };
    let mut last_loss = mark;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = shared.now_ms();
        let mut first_loss = None::<u32>;
        for n in 0..miners {
            let log = shared.log(n);
            let i = log.losses.partition_point(|&t| t < mark);
            if let Some(&t) = log.losses.get(i) {
                first_loss = Some(first_loss.map_or(t, |f| f.min(t)));
            }
            if let Some(&t) = log.losses.last() {
                last_loss = last_loss.max(t);
            }
        }
        if start.is_none() {
            start = first_loss;
        }
        let Some(t0) = start else {
            if now.saturating_sub(mark) > deadline_ms {
                break;
            }
            continue;
        };
        let times = recoveries(shared, mark, t0);
        let all = times.iter().all(|t| t.is_some_and(|t| t <= deadline_ms));
        let quiet = now.saturating_sub(last_loss) >= SETTLE.as_millis() as u32;
        if (all && quiet) || now.saturating_sub(t0) > deadline_ms {
            break;
        }
    }
    let t0 = start.unwrap_or(mark);
    let times = recoveries(shared, mark, t0);
    let mut ok: Vec<u32> = times
        .iter()
        .filter_map(|&t| t.filter(|&t| t <= deadline_ms))
        .collect();
    ok.sort_unstable();
    let lost = miners - ok.len();
    let q = |p: f64| quantile(&ok, p).map_or("-".to_owned(), |v| v.to_string());
    format!(
        "miners={miners} p50_ms={} p99_ms={} max_ms={} lost={lost} connections_lost={} unanswered={} start_ms={}",
        q(0.5),
        q(0.99),
        ok.last().map_or("-".to_owned(), u32::to_string),
        shared.connections_lost.load(Relaxed) - lost_before,
        shared.unanswered.load(Relaxed) - unanswered_before,
        start.map_or(-1, |s| i64::from(s) - i64::from(mark)),
    )
}

/// Each miner's recovery in ms from `t0`: to the acceptance of the first share it sent
/// after its last connection loss since `mark` (after `t0` if it lost none).
fn recoveries(shared: &Shared, mark: u32, t0: u32) -> Vec<Option<u32>> {
    (0..shared.logs.len())
        .map(|n| {
            let log = shared.log(n);
            let from = match log.losses.last() {
                Some(&t) if t >= mark => t.max(t0),
                _ => t0,
            };
            let i = log.accepted.partition_point(|&(sent, _)| sent < from);
            log.accepted.get(i).map(|&(_, at)| at.saturating_sub(t0))
        })
        .collect()
}

/// How a connection ended.
enum End {
    Stop,
    /// Closed, failed, or `Reconnect` (to this endpoint).
    Lost(SocketAddr),
}

/// One miner until `stop`: dials, mines, and dials again after every loss.
async fn miner(
    home: SocketAddr,
    key: AuthorityPublicKey,
    n: usize,
    rate: f64,
    in_flight: usize,
    shared: &Shared,
    mut stop: watch::Receiver<bool>,
) {
    // A fixed spread per miner (Weyl sequence), not a random one: runs repeat.
    let spread = (n as f64 * 0.618_033_988_75).fract();
    let mut target = home;
    let mut failures = 0u32;
    loop {
        if *stop.borrow() {
            return;
        }
        let opened = tokio::select! {
            o = open_miner(target, key, n, true) => o,
            _ = stop.wait_for(|s| *s) => return,
        };
        let (conn, channel_id, work) = match opened {
            Ok(o) => o,
            Err(_) => {
                // Back home after a failed dial elsewhere, as firmware does.
                target = home;
                let wait = BACKOFF_MIN
                    .saturating_mul(1 << failures.min(8))
                    .min(BACKOFF_MAX)
                    .mul_f64(0.5 + spread / 2.0);
                failures += 1;
                tokio::select! {
                    _ = tokio::time::sleep(wait) => continue,
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        };
        failures = 0;
        let end = mine(
            conn, target, channel_id, work, n, rate, spread, in_flight, shared, &mut stop,
        )
        .await;
        match end {
            End::Stop => return,
            End::Lost(next) => {
                target = next;
                shared.connections_lost.fetch_add(1, Relaxed);
                let now = shared.now_ms();
                shared.log(n).losses.push(now);
            }
        }
    }
}

/// Mines on one connection until it ends.
#[allow(clippy::too_many_arguments)]
async fn mine(
    mut conn: super::miners::Conn,
    here: SocketAddr,
    channel_id: u32,
    mut work: Work,
    n: usize,
    rate: f64,
    spread: f64,
    in_flight: usize,
    shared: &Shared,
    stop: &mut watch::Receiver<bool>,
) -> End {
    let period = Duration::from_secs_f64(1.0 / rate);
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + period.mul_f64(spread), period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Shares sent and not answered: sequence number, ms sent.
    let mut sent: std::collections::VecDeque<(u32, u32)> = Default::default();
    let mut sequence_number = 0u32;
    // The first share as soon as there is work.
    let mut send_now = true;
    let end = loop {
        if std::mem::take(&mut send_now) && !shared.paused.load(Relaxed) {
            let share = SubmitSharesStandard {
                channel_id,
                sequence_number,
                job_id: work.job_id,
                nonce: sequence_number.wrapping_mul(2_654_435_761) ^ n as u32,
                ntime: work.ntime,
                version: 0x2000_0000,
            };
            sent.push_back((sequence_number, shared.now_ms()));
            shared.in_flight.fetch_add(1, Relaxed);
            sequence_number = sequence_number.wrapping_add(1);
            if conn.send(Message::from(share)).await.is_err() {
                break End::Lost(here);
            }
        }
        tokio::select! {
            _ = ticker.tick() => send_now = sent.len() < in_flight,
            msg = conn.next() => match msg {
                Some(Ok(Message::SubmitSharesSuccess(s))) => {
                    let now = shared.now_ms();
                    shared
                        .accepted
                        .fetch_add(u64::from(s.new_submits_accepted_count), Relaxed);
                    let mut log = shared.log(n);
                    if log.accepted.is_empty() {
                        shared.mining.fetch_add(1, Relaxed);
                    }
                    // Every share up to `last_sequence_number` is answered.
                    while let Some(&(seq, at)) = sent.front() {
                        if s.last_sequence_number.wrapping_sub(seq) > u32::MAX / 2 {
                            break;
                        }
                        sent.pop_front();
                        shared.in_flight.fetch_sub(1, Relaxed);
                        log.accepted.push((at, now));
                    }
                }
                Some(Ok(Message::SubmitSharesError(e))) => {
                    if shared.rejected.fetch_add(1, Relaxed) < 5 {
                        eprintln!("loadgen: miner {n}: share rejected: {}", e.error_code);
                    }
                    if let Some(i) = sent.iter().position(|&(seq, _)| seq == e.sequence_number) {
                        sent.remove(i);
                        shared.in_flight.fetch_sub(1, Relaxed);
                    }
                }
                Some(Ok(Message::Reconnect(r))) => {
                    let named = format!("{}:{}", r.new_host, r.new_port).parse().ok();
                    let next = if r.new_port == 0 { None } else { named };
                    break End::Lost(next.unwrap_or(here));
                }
                Some(Ok(m)) => work.follow(&m),
                Some(Err(_)) | None => break End::Lost(here),
            },
            _ = stop.wait_for(|s| *s) => break End::Stop,
        }
    };
    let left = sent.len() as u64;
    shared.in_flight.fetch_sub(left as i64, Relaxed);
    if let End::Lost(_) = end {
        shared.unanswered.fetch_add(left, Relaxed);
    } else {
        let _ = conn.close_frames().await;
    }
    end
}
