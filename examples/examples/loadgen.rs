//! `loadgen`: simulated miners against a Stratum V2 pool or proxy, written on the `sv2c`
//! facade like any client program, with the server's memory and CPU read from `/proc`.
//!
//! ```text
//! loadgen connect|shares|sv1-connect|sv1-shares --target HOST:PORT [--authority-key KEY] [--pid PID]
//!         [--miners N] [--in-flight K] [--rate R] [--seconds S] [--waves W]
//!         [--fanout B] [--no-channel] [--tp HOST:PORT] [--threads T] [--label NAME] [-- COMMAND ARGS...]
//! ```
//!
//! Every miner connects over TCP, runs the Noise NX handshake (the server's certificate
//! checked against `KEY`), sends `SetupConnection`, opens one standard channel and waits
//! for its job and previous hash. All `N` start at once (a handshake storm). In `connect`
//! mode they then stay idle; in `shares` mode each keeps `K` shares in flight for `S`
//! seconds (a new one for every answer); with `--rate R` each instead sends `R` shares per
//! second at a steady pace (at most `K` unanswered), and the time from each share to its
//! answer is recorded (p50, p99) with the server's CPU use. With `--waves 2` every miner
//! leaves after the first wave and a second wave of `N` connects, to see whether memory is
//! reused.
//!
//! `sv1-connect` and `sv1-shares` are the same two loads with plain-TCP Stratum V1 miners
//! (`mining_proxy --aggregate --sv1-listen`, SRI's `translator_sv2`): see the `sv1`
//! module (`loadgen/sv1.rs`), its shares meeting `--pool-bits B` leading zero bits
//! (default 8, the `pool` program's).
//!
//! `--no-channel` (`connect` mode): miners stop after `SetupConnection`, so the server's
//! memory per miner is the connection's alone, without a channel and its jobs.
//!
//! `--fanout B` (`connect` mode): once the miners are idle, wait for `B` new blocks and
//! record when each miner receives each block's `SetNewPrevHash`: the job fan-out, p50 /
//! p99 / last, from the moment the Template Provider sent the block (`--tp`) or else from
//! the first miner's arrival (a pool that makes its own blocks, such as `pool
//! --job-interval 2 --jobs-per-prev-hash 1`). With `--tp`, `loadgen` sends a new block
//! every 3 s while it waits.
//!
//! The server is `--pid PID`, or the `COMMAND` after `--`, which `loadgen` starts (and
//! stops at the end); the storm begins once it listens and, from 1 s on, uses under a
//! tenth of a core; without `--authority-key` the key is read from the first line of its
//! output containing `authority public key`. `--tp HOST:PORT` also serves a minimal
//! Template Provider there (for SRI's `pool_sv2`, which needs one).
//!
//! It prints one table: memory per idle miner (server RSS and the kernel's TCP socket
//! memory, both ends, from `/proc/net/sockstat`), handshakes per second and server CPU per
//! handshake (over the storm, and with the 2 s after it, in which a server that makes its
//! handshake keys ahead makes them again), time until all miners were open, shares per second and server CPU per share,
//! and, measured in the same process, the floors: ring's ChaCha20-Poly1305 open and seal
//! of a share's and an answer's frames, secp256k1 ElligatorSwift key generation and
//! ECDH, and (`shares` without `--rate`) the transport alone: as many loopback
//! connections writing `K` share-sized frames at once and reading one answer-sized frame
//! back, served by one thread of `loadgen`'s that only reads and writes.
//!
//! ```text
//! cargo run --release --example loadgen -- connect --miners 1000 --target 127.0.0.1:34254 \
//!     -- target/release/examples/pool --noise
//! ```

use std::collections::{HashMap, VecDeque};
use std::error::Error;
use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use sv2c::noise::{
    self, AuthorityKeypair, AuthorityPublicKey, Initiator, Responder, StaticKeypair,
};
use sv2c::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

#[path = "loadgen/sv1.rs"]
mod sv1;

type BoxError = Box<dyn Error + Send + Sync>;

const USAGE: &str = "usage:
  loadgen connect|shares|sv1-connect|sv1-shares --target HOST:PORT [--authority-key KEY]
          [--pid PID] [--pool-bits B] [--miners N] [--in-flight K] [--rate R] [--seconds S] [--waves W]
          [--fanout B] [--no-channel] [--tp HOST:PORT] [--threads T] [--label NAME]
          [--max-cpu-per-share-us X] [--max-kib-per-miner Y] [--max-kib-left-per-miner Z]
          [-- COMMAND ARGS...]
      N simulated Noise miners (default 1000) against the pool or proxy at --target.
      sv1-connect, sv1-shares: the same with plain-TCP Stratum V1 miners (shares meeting
      --pool-bits B leading zero bits, default 8). connect: they stay idle; shares: K shares in flight each (default 32) for S
      seconds (default 5), or with --rate R shares per second each (share-to-answer
      p50/p99 and server CPU %). --fanout B (connect): time B new blocks' prev-hashes
      reaching every miner. --no-channel (connect): no channel, only the connection. --pid: the server process to measure; or COMMAND, started
      here. --tp: serve a Template Provider at that address (for SRI's pool_sv2).
      --max-*: exit 1 if the measured value is above (for CI); Z: the server's RSS after
      every miner left, above its RSS before they came, per miner.";

/// `SetupConnection` flag: the miner wants standard jobs only.
const REQUIRES_STANDARD_JOBS: u32 = 0x1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Connect,
    Shares,
    /// `connect` with Stratum V1 miners (`loadgen/sv1.rs`).
    Sv1Connect,
    /// `shares` with Stratum V1 miners.
    Sv1Shares,
}

#[derive(Debug)]
struct Args {
    mode: Mode,
    target: SocketAddr,
    key: Option<AuthorityPublicKey>,
    pid: Option<u32>,
    miners: usize,
    in_flight: u32,
    /// Leading zero bits an SV1 share's hash meets (the pool's target).
    pool_bits: u32,
    rate: Option<f64>,
    seconds: f64,
    fanout: usize,
    no_channel: bool,
    waves: usize,
    tp: Option<SocketAddr>,
    threads: Option<usize>,
    label: String,
    max_cpu_per_share_us: Option<f64>,
    max_kib_per_miner: Option<f64>,
    max_kib_left_per_miner: Option<f64>,
    command: Vec<String>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let (ours, command) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let mut it = ours.iter();
    let mode = match it.next().map(String::as_str) {
        Some("connect") => Mode::Connect,
        Some("shares") => Mode::Shares,
        Some("sv1-connect") => Mode::Sv1Connect,
        Some("sv1-shares") => Mode::Sv1Shares,
        _ => return Err("the first argument is connect, shares, sv1-connect or sv1-shares".into()),
    };
    let mut a = Args {
        mode,
        target: "127.0.0.1:34254".parse().map_err(|e| format!("{e}"))?,
        key: None,
        pid: None,
        miners: 1000,
        in_flight: 32,
        pool_bits: 8,
        rate: None,
        seconds: 5.0,
        fanout: 0,
        no_channel: false,
        waves: 1,
        tp: None,
        threads: None,
        label: String::new(),
        max_cpu_per_share_us: None,
        max_kib_per_miner: None,
        max_kib_left_per_miner: None,
        command,
    };
    while let Some(flag) = it.next() {
        if flag == "--no-channel" {
            a.no_channel = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let bad = format!("bad value for {flag}: {value}");
        match flag.as_str() {
            "--target" => a.target = value.parse().map_err(|_| bad.clone())?,
            "--authority-key" => {
                a.key = Some(value.parse().map_err(|e| format!("{flag}: {e}"))?);
            }
            "--pid" => a.pid = Some(value.parse().map_err(|_| bad.clone())?),
            "--miners" => a.miners = value.parse().map_err(|_| bad.clone())?,
            "--pool-bits" => a.pool_bits = value.parse().map_err(|_| bad.clone())?,
            "--in-flight" => a.in_flight = value.parse().map_err(|_| bad.clone())?,
            "--seconds" => a.seconds = value.parse().map_err(|_| bad.clone())?,
            "--rate" => {
                let r: f64 = value.parse().map_err(|_| bad.clone())?;
                if !(r > 0.0 && r <= 1000.0) {
                    return Err(format!(
                        "--rate is shares per second per miner, in (0, 1000]: {value}"
                    ));
                }
                a.rate = Some(r);
            }
            "--fanout" => a.fanout = value.parse().map_err(|_| bad.clone())?,
            "--waves" => a.waves = value.parse().map_err(|_| bad.clone())?,
            "--tp" => a.tp = Some(value.parse().map_err(|_| bad.clone())?),
            "--threads" => a.threads = Some(value.parse().map_err(|_| bad.clone())?),
            "--label" => a.label = value.clone(),
            "--max-cpu-per-share-us" => {
                a.max_cpu_per_share_us = Some(value.parse().map_err(|_| bad.clone())?)
            }
            "--max-kib-per-miner" => {
                a.max_kib_per_miner = Some(value.parse().map_err(|_| bad.clone())?)
            }
            "--max-kib-left-per-miner" => {
                a.max_kib_left_per_miner = Some(value.parse().map_err(|_| bad.clone())?)
            }
            _ => return Err(format!("unknown argument {flag:?}")),
        }
    }
    if a.pid.is_none() && a.command.is_empty() {
        return Err("give --pid PID or a COMMAND after --".into());
    }
    if a.miners == 0 || a.in_flight == 0 || a.waves == 0 {
        return Err("--miners, --in-flight and --waves must be positive".into());
    }
    if a.fanout > 0 && a.mode != Mode::Connect {
        return Err("--fanout is for connect mode".into());
    }
    if a.no_channel && (a.mode != Mode::Connect || a.fanout > 0) {
        return Err("--no-channel is for connect mode without --fanout".into());
    }
    if a.rate.is_some() && a.mode != Mode::Shares {
        return Err("--rate is for shares mode".into());
    }
    if a.label.is_empty() {
        a.label = a
            .command
            .first()
            .and_then(|c| c.rsplit('/').next())
            .unwrap_or("server")
            .to_owned();
    }
    Ok(a)
}

// ===== the server, seen from /proc =====

/// Resident set size of `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU time of `pid` (all its threads, user + system) in nanoseconds, and the number of
/// context switches of its threads (voluntary + involuntary). Threads that already exited
/// are not counted (the servers measured here keep theirs).
fn cpu(pid: u32) -> (u64, u64) {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return (0, 0);
    };
    tasks.flatten().fold((0, 0), |(ns, switches), task| {
        let (n, s) = task_cpu(&task.path());
        (ns + n, switches + s)
    })
}

/// CPU time (ns) and context switches of one thread, `/proc/PID/task/TID`.
fn task_cpu(task: &std::path::Path) -> (u64, u64) {
    let ns = std::fs::read_to_string(task.join("schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
    let switches = status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| l.strip_prefix("nonvoluntary_ctxt_switches:"))
        })
        .filter_map(|v| v.trim().parse::<u64>().ok())
        .sum();
    (ns, switches)
}

/// The kernel's TCP socket memory (`/proc/net/sockstat`, `TCP: … mem PAGES`), in KiB.
fn tcp_mem_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/net/sockstat").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("TCP:"))
        .and_then(|l| {
            let mut w = l.split_whitespace();
            w.position(|x| x == "mem")?;
            w.next()?.parse::<u64>().ok()
        })
        .map_or(0, |pages| pages * 4)
}

/// Raises this process's open-files limit to its hard limit (every miner is a socket).
fn raise_nofile() -> u64 {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.maximum.is_some() && limit.current != limit.maximum {
        limit.current = limit.maximum;
        let _ = setrlimit(Resource::Nofile, limit);
    }
    getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX)
}

// ===== the miners =====

#[derive(Debug, Default)]
struct Counts {
    opened: AtomicU64,
    failed: AtomicU64,
    /// Shares answered (accepted + rejected).
    answered: AtomicU64,
    /// Answer messages (`SubmitShares.Success` may acknowledge several shares).
    answers: AtomicU64,
    accepted: AtomicU64,
    /// Nanoseconds from the start of the wave until each miner was open (the latest).
    last_open_ns: AtomicU64,
    /// Set while the fan-out or the share-to-answer times are being recorded.
    recording: AtomicBool,
    /// When each miner received each previous hash (keyed by its first 8 bytes), while
    /// recording.
    prev_hashes: Mutex<HashMap<u64, Vec<Instant>>>,
    /// Share-to-answer times in µs (`--rate`), while recording.
    latencies_us: Mutex<Vec<u32>>,
}

type Conn = Framed<TcpStream, noise::NoiseCodec<Sv2Codec<Message>>>;

/// Opens one miner: Noise, `SetupConnection`, one standard channel with its job and
/// previous hash. Returns the connection, the channel id and the work to submit for.
async fn open_miner(
    target: SocketAddr,
    key: AuthorityPublicKey,
    n: usize,
    channel: bool,
) -> Result<(Conn, u32, Work), BoxError> {
    let tcp = TcpStream::connect(target).await?;
    tcp.set_nodelay(true)?;
    let mut conn = noise::connect(tcp, Initiator::new(key)?, Sv2Codec::<Message>::new()).await?;
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        flags: REQUIRES_STANDARD_JOBS,
        endpoint_host: target.ip().to_string().parse()?,
        endpoint_port: target.port(),
        vendor: "sv2c-loadgen".parse()?,
        hardware_version: "sim".parse()?,
        firmware: "0".parse()?,
        device_id: format!("miner-{n}").parse()?,
    };
    conn.send(Message::from(setup)).await?;
    match conn.next().await.ok_or("closed during setup")?? {
        Message::SetupConnectionSuccess(_) => {}
        other => return Err(format!("setup refused: {other:?}").into()),
    }
    if !channel {
        return Ok((conn, 0, Work::default()));
    }
    let open = OpenStandardMiningChannel {
        request_id: 1,
        user_identity: format!("loadgen.{n}").parse()?,
        nominal_hash_rate: 1.0e12,
        max_target: U256([0xff; 32]),
    };
    conn.send(Message::from(open)).await?;
    let (mut channel, mut work) = (None, None);
    while work.is_none() {
        match conn.next().await.ok_or("closed while opening")?? {
            Message::OpenStandardMiningChannelSuccess(s) => channel = Some(s.channel_id),
            Message::SetNewPrevHash(p) => {
                work = Some(Work {
                    job_id: p.job_id,
                    ntime: p.min_ntime,
                })
            }
            Message::OpenMiningChannelError(e) => {
                return Err(format!("channel refused: {}", e.error_code).into());
            }
            _ => {}
        }
    }
    let channel = channel.ok_or("no channel id before the previous hash")?;
    Ok((conn, channel, work.unwrap_or_default()))
}

/// What a miner's shares are for: the active job, and the `ntime` they carry (the latest
/// `SetNewPrevHash.min_ntime`, or the job's own).
#[derive(Debug, Clone, Copy, Default)]
struct Work {
    job_id: u32,
    ntime: u32,
}

impl Work {
    /// Follows a new active job (not a future one) or previous hash.
    fn follow(&mut self, msg: &Message) {
        match msg {
            Message::NewMiningJob(j) => {
                if let Some(ntime) = j.min_ntime {
                    *self = Work {
                        job_id: j.job_id,
                        ntime,
                    };
                }
            }
            Message::SetNewPrevHash(p) => {
                *self = Work {
                    job_id: p.job_id,
                    ntime: p.min_ntime,
                }
            }
            _ => {}
        }
    }
}

/// One miner for one wave: opens, then idles or submits until `stop`.
async fn miner(
    args: Arc<Args>,
    key: AuthorityPublicKey,
    n: usize,
    started: Instant,
    counts: Arc<Counts>,
    mut go: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) {
    let (mut conn, channel_id, mut work) =
        match open_miner(args.target, key, n, !args.no_channel).await {
            Ok(opened) => opened,
            Err(e) => {
                if counts.failed.fetch_add(1, Relaxed) < 3 {
                    eprintln!("loadgen: miner {n}: {e}");
                }
                return;
            }
        };
    counts
        .last_open_ns
        .fetch_max(started.elapsed().as_nanos() as u64, Relaxed);
    counts.opened.fetch_add(1, Relaxed);
    if args.mode == Mode::Shares {
        tokio::select! {
            _ = go.wait_for(|g| *g) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
    if let Some(rate) = args.rate {
        return paced(&args, conn, channel_id, work, n, rate, &counts, stop).await;
    }
    let mut in_flight = 0u32;
    let mut sequence_number = 0u32;
    loop {
        if args.mode == Mode::Shares {
            while in_flight < args.in_flight {
                let share = SubmitSharesStandard {
                    channel_id,
                    sequence_number,
                    job_id: work.job_id,
                    nonce: sequence_number.wrapping_mul(2_654_435_761),
                    ntime: work.ntime,
                    version: 0x2000_0000,
                };
                sequence_number = sequence_number.wrapping_add(1);
                in_flight += 1;
                if conn.feed(Message::from(share)).await.is_err() {
                    return;
                }
            }
            if conn.flush_frames().await.is_err() {
                return;
            }
        }
        let msg = tokio::select! {
            msg = conn.next() => msg,
            _ = stop.wait_for(|s| *s) => break,
        };
        match msg {
            Some(Ok(Message::SubmitSharesSuccess(s))) => {
                counts.answers.fetch_add(1, Relaxed);
                let n = s.new_submits_accepted_count.min(in_flight).max(1);
                in_flight -= n.min(in_flight);
                counts.answered.fetch_add(u64::from(n), Relaxed);
                counts
                    .accepted
                    .fetch_add(u64::from(s.new_submits_accepted_count), Relaxed);
            }
            Some(Ok(Message::SubmitSharesError(_))) => {
                counts.answers.fetch_add(1, Relaxed);
                in_flight = in_flight.saturating_sub(1);
                counts.answered.fetch_add(1, Relaxed);
            }
            Some(Ok(m)) => {
                work.follow(&m);
                if let Message::SetNewPrevHash(p) = &m {
                    record_prev_hash(&counts, &p.prev_hash);
                }
            }
            Some(Err(_)) | None => return,
        }
    }
    let _ = conn.close_frames().await;
}

/// Notes when this miner received a previous hash (for `--fanout`).
fn record_prev_hash(counts: &Counts, prev_hash: &U256) {
    if counts.recording.load(Relaxed) {
        let now = Instant::now();
        let key = u64::from_le_bytes(prev_hash.0[..8].try_into().unwrap_or_default());
        let mut seen = counts.prev_hashes.lock().unwrap_or_else(|e| e.into_inner());
        seen.entry(key).or_default().push(now);
    }
}

/// `--rate`: one share every `1 / rate` seconds (the first at an offset that spreads the
/// miners over the interval), at most `in_flight` unanswered; the time from each share to
/// the answer that covers it is recorded.
#[allow(clippy::too_many_arguments)]
async fn paced(
    args: &Args,
    mut conn: Conn,
    channel_id: u32,
    mut work: Work,
    n: usize,
    rate: f64,
    counts: &Counts,
    mut stop: watch::Receiver<bool>,
) {
    let period = Duration::from_secs_f64(1.0 / rate);
    // A fixed spread (Weyl sequence over the period), not a random one: runs repeat.
    let offset = period.mul_f64((n as f64 * 0.618_033_988_75).fract());
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + offset, period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut sent: VecDeque<(u32, Instant)> = VecDeque::new();
    let mut sequence_number = 0u32;
    let answered = |sent_at: Instant| {
        counts.answered.fetch_add(1, Relaxed);
        if counts.recording.load(Relaxed) {
            let us = sent_at.elapsed().as_micros().min(u128::from(u32::MAX)) as u32;
            counts
                .latencies_us
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(us);
        }
    };
    loop {
        tokio::select! {
            _ = ticker.tick() => {
                if sent.len() >= args.in_flight as usize {
                    continue;
                }
                let share = SubmitSharesStandard {
                    channel_id,
                    sequence_number,
                    job_id: work.job_id,
                    nonce: sequence_number.wrapping_mul(2_654_435_761),
                    ntime: work.ntime,
                    version: 0x2000_0000,
                };
                sent.push_back((sequence_number, Instant::now()));
                sequence_number = sequence_number.wrapping_add(1);
                if conn.send(Message::from(share)).await.is_err() {
                    return;
                }
            }
            msg = conn.next() => match msg {
                Some(Ok(Message::SubmitSharesSuccess(s))) => {
                    counts.answers.fetch_add(1, Relaxed);
                    counts
                        .accepted
                        .fetch_add(u64::from(s.new_submits_accepted_count), Relaxed);
                    // Every share up to `last_sequence_number` is answered.
                    while let Some(&(seq, at)) = sent.front() {
                        if s.last_sequence_number.wrapping_sub(seq) > u32::MAX / 2 {
                            break;
                        }
                        sent.pop_front();
                        answered(at);
                    }
                }
                Some(Ok(Message::SubmitSharesError(e))) => {
                    counts.answers.fetch_add(1, Relaxed);
                    let i = sent.iter().position(|&(seq, _)| seq == e.sequence_number);
                    if let Some((_, at)) = i.and_then(|i| sent.remove(i)) {
                        answered(at);
                    }
                }
                Some(Ok(m)) => {
                    work.follow(&m);
                }
                Some(Err(_)) | None => return,
            },
            // `stop` only ever changes to `true`.
            _ = stop.changed() => break,
        }
    }
    let _ = conn.close_frames().await;
}

// ===== a Template Provider for SRI's pool =====

/// Serves Template Distribution to one pool at a time: one future template for an empty
/// block and the previous hash that activates it, once the pool states its coinbase
/// constraints; then a new block (template and previous hash) whenever `blocks` changes.
async fn template_provider(addr: SocketAddr, blocks: watch::Receiver<u32>) -> Result<(), BoxError> {
    let listener = TcpListener::bind(addr).await?;
    let authority = AuthorityKeypair::generate()?;
    let now = noise::unix_time_now();
    let responder = Arc::new(Responder::from_authority(
        StaticKeypair::generate()?,
        &authority,
        now,
        now + 86_400,
    )?);
    loop {
        let (tcp, _) = listener.accept().await?;
        let responder = responder.clone();
        let mut blocks = blocks.clone();
        tokio::spawn(async move {
            let Ok(mut conn) = noise::accept(tcp, &responder, Sv2Codec::<Message>::new()).await
            else {
                return;
            };
            let mut ready = false;
            loop {
                let block = tokio::select! {
                    msg = conn.next() => match msg {
                        Some(Ok(Message::SetupConnection(_))) => {
                            let ok = SetupConnectionSuccess { used_version: 2, flags: 0 };
                            if conn.send(Message::from(ok)).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        Some(Ok(Message::CoinbaseOutputConstraints(_))) if !ready => {
                            ready = true;
                            *blocks.borrow_and_update()
                        }
                        Some(Ok(_)) => continue,
                        Some(Err(_)) | None => return,
                    },
                    changed = blocks.changed(), if ready => match changed {
                        Ok(()) => *blocks.borrow_and_update(),
                        Err(_) => return,
                    },
                };
                if send_block(&mut conn, block).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Block `n` of the Template Provider: a future template and the previous hash that
/// activates it.
async fn send_block<T>(conn: &mut T, n: u32) -> Result<(), CodecError>
where
    T: futures::Sink<Message, Error = CodecError> + Unpin,
{
    let template_id = u64::from(n) + 1;
    let height = 840_000 + n;
    let template = NewTemplate {
        template_id,
        future_template: true,
        version: 0x2000_0000,
        coinbase_tx_version: 2,
        coinbase_prefix: B0255::try_from(vec![
            0x03,
            height as u8,
            (height >> 8) as u8,
            (height >> 16) as u8,
        ])
        .unwrap_or_default(),
        coinbase_tx_input_sequence: 0xffff_ffff,
        coinbase_tx_value_remaining: 625_000_000,
        coinbase_tx_outputs_count: 0,
        coinbase_tx_outputs: B064K::default(),
        coinbase_tx_locktime: 0,
        merkle_path: Seq0255::default(),
    };
    let mut prev_hash = [0x11; 32];
    prev_hash[..4].copy_from_slice(&n.to_le_bytes());
    let prev_hash = SetNewPrevHashTdp {
        template_id,
        prev_hash: U256(prev_hash),
        header_timestamp: noise::unix_time_now(),
        n_bits: 0x1d00_ffff,
        target: U256([0; 32]),
    };
    conn.feed(Message::from(template)).await?;
    conn.send(Message::from(prev_hash)).await
}

// ===== floors =====

/// Nanoseconds per call of `f`, run for about `budget`.
fn time_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    let mut n = 0u64;
    let start = Instant::now();
    while start.elapsed() < budget {
        for _ in 0..64 {
            f();
        }
        n += 64;
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// ring's ChaCha20-Poly1305 seal and open of `len` plaintext bytes, ns per call.
fn aead_ns(len: usize) -> (f64, f64) {
    use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
    let Ok(unbound) = UnboundKey::new(&CHACHA20_POLY1305, &[7u8; 32]) else {
        return (f64::NAN, f64::NAN);
    };
    let key = LessSafeKey::new(unbound);
    let nonce = |n: u64| {
        let mut b = [0u8; 12];
        b[4..].copy_from_slice(&n.to_le_bytes());
        Nonce::assume_unique_for_key(b)
    };
    let mut buf = Vec::with_capacity(len + 16);
    let mut counter = 0u64;
    let seal = time_per_call(Duration::from_millis(150), || {
        buf.clear();
        buf.resize(len, 0x5a);
        counter += 1;
        let _ = key.seal_in_place_append_tag(nonce(counter), Aad::empty(), &mut buf);
    });
    buf.clear();
    buf.resize(len, 0x5a);
    let _ = key.seal_in_place_append_tag(nonce(0), Aad::empty(), &mut buf);
    let sealed = buf.clone();
    let open = time_per_call(Duration::from_millis(150), || {
        buf.clear();
        buf.extend_from_slice(&sealed);
        let _ = key.open_in_place(nonce(0), Aad::empty(), &mut buf);
    });
    (seal, open)
}

/// secp256k1: ElligatorSwift key generation and ElligatorSwift ECDH, µs per call. The key
/// generation is a handshake's, `EphemeralKey::generate` (OS randomness, the generator
/// multiplication and the encoding; the context's blinding renewed every 64 keys, where
/// `secp256k1`'s own `ElligatorSwift::from_seckey` renews it after every key, at about
/// 19 µs more).
fn secp_us() -> (f64, f64) {
    use secp256k1::SecretKey;
    use secp256k1::ellswift::{ElligatorSwift, Party};
    let mut seed = 1u64;
    let mut next_secret = || {
        seed += 1;
        let mut b = [0x42u8; 32];
        b[24..].copy_from_slice(&seed.to_be_bytes());
        SecretKey::from_secret_bytes(b).ok()
    };
    let keygen = time_per_call(Duration::from_millis(200), || {
        std::hint::black_box(noise::sv2c_noise::EphemeralKey::generate().ok());
    });
    let (Some(a), Some(b)) = (next_secret(), next_secret()) else {
        return (keygen / 1e3, f64::NAN);
    };
    let (ea, eb) = (
        ElligatorSwift::from_seckey(a, None),
        ElligatorSwift::from_seckey(b, None),
    );
    let ecdh = time_per_call(Duration::from_millis(200), || {
        std::hint::black_box(ElligatorSwift::shared_secret(ea, eb, a, Party::Initiator));
    });
    (keygen / 1e3, ecdh / 1e3)
}

/// A share's frame on the wire: `SubmitSharesStandard`'s 24 bytes and a 6-byte header,
/// each sealed (16-byte tags).
const SHARE_FRAME: usize = 6 + 16 + 24 + 16;
/// An answer's frame: `SubmitShares.Success`'s 20 bytes and its header, sealed.
const ANSWER_FRAME: usize = 6 + 16 + 20 + 16;

/// The transport's part of a share, measured in this process: `connections` loopback
/// connections, each writing `in_flight` share-sized frames at once and waiting for one
/// answer-sized frame, served by one thread (a single-threaded tokio runtime) that reads
/// what arrived and writes one answer per complete batch: no protocol, no cipher. Returns
/// that thread's CPU per share in µs over `seconds`: its reads, its writes and, as for
/// the server measured (on loopback a write runs the receiving end's TCP input), the
/// delivery of its answers; the shares per second it served; its context switches per
/// share.
async fn transport_floor_us(
    connections: usize,
    in_flight: usize,
    seconds: f64,
) -> Result<(f64, f64, f64), BoxError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let batch = in_flight * SHARE_FRAME;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let (tid_tx, tid_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::Builder::new()
        .name("transport-floor".into())
        .spawn(move || -> std::io::Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()?;
            // "/proc/thread-self" links to "PID/task/TID".
            let tid = std::fs::read_link("/proc/thread-self")?;
            let _ = tid_tx.send(tid.file_name().map(|t| t.to_os_string()));
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener)?;
                let accept = async {
                    loop {
                        let (mut s, _) = listener.accept().await?;
                        s.set_nodelay(true)?;
                        tokio::spawn(async move {
                            let mut buf = vec![0u8; batch.max(4096)];
                            let answers = vec![0u8; ANSWER_FRAME * (buf.len() / batch + 1)];
                            let mut pending = 0;
                            loop {
                                match s.read(&mut buf).await {
                                    Ok(0) | Err(_) => return,
                                    Ok(n) => pending += n,
                                }
                                let complete = pending / batch;
                                pending %= batch;
                                if complete > 0
                                    && s.write_all(&answers[..complete * ANSWER_FRAME])
                                        .await
                                        .is_err()
                                {
                                    return;
                                }
                            }
                        });
                    }
                };
                tokio::select! {
                    r = accept => r,
                    _ = stop_rx => Ok(()),
                }
            })
        })?;
    let tid = tid_rx.await?.ok_or("no thread id")?;
    let task = std::path::Path::new("/proc/self/task").join(tid);
    let thread_cpu = || task_cpu(&task);
    let shares = Arc::new(AtomicU64::new(0));
    let (go_tx, go) = watch::channel(false);
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let mut s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        let (shares, mut go) = (shares.clone(), go.clone());
        clients.spawn(async move {
            let frames = vec![0x5au8; batch];
            let mut answer = [0u8; ANSWER_FRAME];
            if go.wait_for(|g| *g).await.is_err() {
                return;
            }
            while *go.borrow() {
                if s.write_all(&frames).await.is_err() || s.read_exact(&mut answer).await.is_err() {
                    return;
                }
                shares.fetch_add(in_flight as u64, Relaxed);
            }
        });
    }
    let _ = go_tx.send(true);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (n0, (c0, s0), t0) = (shares.load(Relaxed), thread_cpu(), Instant::now());
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let (n1, (c1, s1)) = (shares.load(Relaxed), thread_cpu());
    let elapsed = t0.elapsed().as_secs_f64();
    let _ = go_tx.send(false);
    clients.shutdown().await;
    let _ = stop_tx.send(());
    server
        .join()
        .map_err(|_| "the floor's server thread panicked")??;
    if n1 <= n0 {
        return Err("no share went through".into());
    }
    let n = (n1 - n0) as f64;
    Ok((
        c1.saturating_sub(c0) as f64 / 1e3 / n,
        n / elapsed,
        s1.saturating_sub(s0) as f64 / n,
    ))
}

// ===== the run =====

/// What one wave measured.
#[derive(Debug, Default)]
struct Wave {
    opened: u64,
    failed: u64,
    all_open_s: f64,
    cpu_per_handshake_us: f64,
    /// Also counting the 2 s after the last miner opened (keys made again for a stock).
    cpu_per_handshake_settled_us: f64,
    rss_before_kib: u64,
    rss_idle_kib: u64,
    tcp_mem_before_kib: u64,
    tcp_mem_idle_kib: u64,
    shares_per_s: f64,
    cpu_per_share_us: f64,
    accepted: u64,
    answered: u64,
    /// Answer messages per share answered.
    answers_per_share: f64,
    switches_per_share: f64,
    /// `--rate`: share-to-answer times (p50, p99) in ms and the server's CPU use in % of
    /// one core.
    latency_ms: Option<(f64, f64)>,
    cpu_pct: f64,
    /// `--fanout`: one entry per block.
    fanout: Vec<FanOut>,
    /// RSS after the fan-out's blocks (their jobs held).
    rss_after_fanout_kib: u64,
    /// `--rate`: RSS at the end of the shares, every miner still connected.
    rss_after_shares_kib: u64,
}

/// How one new block reached the miners.
#[derive(Debug)]
struct FanOut {
    reached: usize,
    /// Milliseconds from the reference until half, 99 % and all of those reached had it.
    p50_ms: f64,
    p99_ms: f64,
    last_ms: f64,
    /// `true`: from the Template Provider's send; `false`: from the first miner's arrival.
    from_tp: bool,
}

/// The `q`-quantile of sorted `v` (nearest rank).
fn quantile<T: Copy>(v: &[T], q: f64) -> Option<T> {
    let i = ((v.len() as f64 * q).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    v.get(i).copied()
}

/// Waits for the next block whose previous hash reached all `want` miners (or the most of
/// them after `limit`); `t0` is when the Template Provider sent it, if it did.
async fn next_block(
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

async fn wave(
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

/// Starts `command`, returns it and the authority key it prints (if asked to find one).
async fn spawn_target(
    command: &[String],
    want_key: bool,
) -> Result<(tokio::process::Child, Option<AuthorityPublicKey>), BoxError> {
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut key = None;
    if want_key {
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(k) = line.split("authority public key ").nth(1) {
                    return k.split_whitespace().next().map(str::to_owned);
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .ok_or("the command printed no `authority public key` line")?;
        key = Some(found.parse::<AuthorityPublicKey>()?);
    }
    // Keep draining its output so that it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, key))
}

/// Waits until something accepts connections at `addr`.
async fn wait_listening(addr: SocketAddr) -> Result<(), BoxError> {
    for _ in 0..400 {
        if TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("nothing listens at {addr}").into())
}

/// Waits until `pid` uses less than a tenth of a core over 200 ms (at most 30 s).
async fn wait_quiet(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let (before, _) = cpu(pid);
        tokio::time::sleep(Duration::from_millis(200)).await;
        if cpu(pid).0.saturating_sub(before) < 20_000_000 {
            return;
        }
    }
}

async fn run(args: Args) -> Result<bool, BoxError> {
    let nofile = raise_nofile();
    let args = Arc::new(args);
    let (blocks, blocks_rx) = watch::channel(0u32);
    if let Some(tp) = args.tp {
        tokio::spawn(async move {
            if let Err(e) = template_provider(tp, blocks_rx).await {
                eprintln!("loadgen: template provider: {e}");
            }
        });
    }
    let mut child = None;
    let mut key = args.key;
    let pid = match args.pid {
        Some(pid) => pid,
        None => {
            let (c, k) = spawn_target(&args.command, key.is_none()).await?;
            key = key.or(k);
            let pid = c.id().ok_or("the command exited")?;
            child = Some(c);
            pid
        }
    };
    let key = key.ok_or("no authority key: give --authority-key")?;
    wait_listening(args.target).await?;
    // Let the server finish starting (a pool_sv2 waits for its first template; ours make
    // their stock of handshake keys): from 1 s on, until it uses under a tenth of a core.
    tokio::time::sleep(Duration::from_secs(1)).await;
    wait_quiet(pid).await;

    println!(
        "loadgen: {} miners against {} ({}, pid {pid}); open-files limit {nofile}",
        args.miners, args.target, args.label
    );
    let mut waves = Vec::new();
    for i in 0..args.waves {
        let w = wave(&args, key, pid, args.tp.map(|_| &blocks)).await;
        eprintln!("loadgen: wave {}: {w:?}", i + 1);
        waves.push(w);
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let rss_after_kib = rss_kib(pid);

    let (seal_hdr, open_hdr) = aead_ns(6);
    let (seal_share, open_share) = aead_ns(24);
    let (seal_ans, _) = aead_ns(20);
    let (keygen_us, ecdh_us) = secp_us();
    let header = [0x5au8; 80];
    let sha256d_ns = time_per_call(Duration::from_millis(150), || {
        std::hint::black_box(sv2c::channels::pow::sha256d(std::hint::black_box(&header)));
    });
    let first = &waves[0];
    // The transport's part of a share at the same pace (not for `--rate`, whose reads
    // hold one share each): both ends of every connection are in this process.
    let transport = if args.mode == Mode::Shares && args.rate.is_none() {
        let connections = args
            .miners
            .min(
                usize::try_from(nofile / 2)
                    .unwrap_or(usize::MAX)
                    .saturating_sub(64),
            )
            .max(1);
        let seconds = args.seconds.clamp(1.0, 2.0);
        match transport_floor_us(connections, args.in_flight as usize, seconds).await {
            Ok((us, rate, switches)) => Some((connections, us, rate, switches)),
            Err(e) => {
                eprintln!("loadgen: transport floor: {e}");
                None
            }
        }
    } else {
        None
    };
    // The pool's share: open header + payload, and its part of an answer (the answer's
    // header and payload sealed, once per answer message).
    let share_floor_ns = open_hdr + open_share + first.answers_per_share * (seal_hdr + seal_ans);
    // The responder's handshake: one ephemeral key, three ECDH (es, ee computed by it: ee, es; certificate signed once).
    let handshake_floor_us = keygen_us + 2.0 * ecdh_us;

    let per_miner =
        |kib: u64, before: u64| (kib.saturating_sub(before)) as f64 / first.opened.max(1) as f64;
    let rss_per_miner = per_miner(first.rss_idle_kib, first.rss_before_kib);
    let tcp_per_miner = per_miner(first.tcp_mem_idle_kib, first.tcp_mem_before_kib);
    println!();
    println!("| {} | value |", args.label);
    println!("|---|---|");
    println!(
        "| miners open / failed | {} / {} (of {}) |",
        first.opened, first.failed, args.miners
    );
    println!("| time until all open | {:.2} s |", first.all_open_s);
    println!(
        "| handshakes/s (storm) | {:.0} |",
        first.opened as f64 / first.all_open_s.max(1e-9)
    );
    println!(
        "| server CPU per handshake + setup + channel | {:.0} µs (floor: keygen {:.1} + 2 ECDH {:.1} = {:.1} µs) |",
        first.cpu_per_handshake_us, keygen_us, ecdh_us, handshake_floor_us
    );
    println!(
        "| the same with the server's CPU in the 2 s after the storm (keys made ahead again) | {:.0} µs |",
        first.cpu_per_handshake_settled_us
    );
    println!(
        "| server RSS per idle miner | {:.2} KiB ({} → {} KiB) |",
        rss_per_miner, first.rss_before_kib, first.rss_idle_kib
    );
    println!(
        "| kernel TCP memory per idle miner (both ends) | {:.2} KiB |",
        tcp_per_miner
    );
    if args.mode == Mode::Shares {
        let pace = match args.rate {
            Some(r) => format!("{r} per second per miner"),
            None => format!("{} in flight each", args.in_flight),
        };
        println!(
            "| shares/s ({pace}) | {:.0} ({} accepted of {}) |",
            first.shares_per_s, first.accepted, first.answered
        );
        println!(
            "| server CPU per share | {:.2} µs (AEAD floor {:.2} µs: open {:.0}+{:.0} ns, seal {:.0}+{:.0} ns × {:.3} answers per share) |",
            first.cpu_per_share_us,
            share_floor_ns / 1e3,
            open_hdr,
            open_share,
            seal_hdr,
            seal_ans,
            first.answers_per_share
        );
        println!(
            "| a checking pool's floor per share (AEAD + double SHA-256 of the 80-byte header) | {:.2} µs (SHA-256d {:.0} ns) |",
            (share_floor_ns + sha256d_ns) / 1e3,
            sha256d_ns
        );
        if let Some((connections, us, rate, switches)) = transport {
            let floor = (share_floor_ns + sha256d_ns) / 1e3 + us;
            println!(
                "| the transport alone per share: the same reads and writes on loopback, no protocol ({connections} connections, one thread, {rate:.0} shares/s, {switches:.4} context switches per share) | {us:.2} µs |"
            );
            println!(
                "| a checking pool's floor with the transport | {floor:.2} µs (server CPU per share {:.2}× it) |",
                first.cpu_per_share_us / floor
            );
        }
        let proxy_floor_us = (open_hdr + open_share + seal_hdr + seal_share) / 1e3
            + first.answers_per_share * 2.0 * (seal_hdr + seal_ans) / 1e3;
        let with_hop = match transport {
            Some((_, us, ..)) => format!(
                "; with the miners' hop's transport {:.2} µs, server CPU per share {:.2}× it",
                proxy_floor_us + us,
                first.cpu_per_share_us / (proxy_floor_us + us)
            ),
            None => String::new(),
        };
        println!(
            "| a forwarding proxy's floor per share (the share opened and sealed again, each answer opened and sealed again) | {proxy_floor_us:.2} µs{with_hop} |"
        );
        println!(
            "| server context switches per share | {:.3} |",
            first.switches_per_share
        );
        println!("| server CPU | {:.1} % of one core |", first.cpu_pct);
        if let (Some(rate), Some((p50, p99))) = (args.rate, first.latency_ms) {
            println!(
                "| share → answer at {rate} shares/s per miner, p50 / p99 | {p50:.2} / {p99:.2} ms |"
            );
            println!(
                "| server RSS per miner at the end of the shares (all connected, between shares) | {:.2} KiB ({} KiB) |",
                per_miner(first.rss_after_shares_kib, first.rss_before_kib),
                first.rss_after_shares_kib
            );
        }
    }
    for (k, f) in first.fanout.iter().enumerate() {
        let from = if f.from_tp {
            "from the Template Provider's send"
        } else {
            "from the first miner's arrival"
        };
        println!(
            "| job fan-out, block {}: miners reached; p50 / p99 / last ({from}) | {} of {}; {:.1} / {:.1} / {:.1} ms |",
            k + 1,
            f.reached,
            first.opened,
            f.p50_ms,
            f.p99_ms,
            f.last_ms
        );
    }
    if !first.fanout.is_empty() {
        println!(
            "| server RSS per miner after the blocks' jobs | {:.2} KiB |",
            per_miner(first.rss_after_fanout_kib, first.rss_before_kib)
        );
    }
    for (i, w) in waves.iter().enumerate().skip(1) {
        println!(
            "| wave {}: open / failed, RSS idle | {} / {}, {} KiB ({:+.1} % vs wave 1) |",
            i + 1,
            w.opened,
            w.failed,
            w.rss_idle_kib,
            (w.rss_idle_kib as f64 / first.rss_idle_kib.max(1) as f64 - 1.0) * 100.0
        );
    }
    let left_per_miner = per_miner(rss_after_kib, first.rss_before_kib);
    println!(
        "| server RSS after every miner left | {rss_after_kib} KiB ({left_per_miner:.2} KiB per miner above the start) |"
    );
    println!(
        "| floors | ChaCha20-Poly1305 seal 24 B {seal_share:.0} ns, open 24 B {open_share:.0} ns; ElligatorSwift keygen {keygen_us:.1} µs, ECDH {ecdh_us:.1} µs |"
    );

    let mut ok = first.failed == 0 && first.opened == args.miners as u64;
    if args.fanout > 0 && first.fanout.len() < args.fanout {
        eprintln!(
            "loadgen: {} of {} blocks reached the miners in time",
            first.fanout.len(),
            args.fanout
        );
        ok = false;
    }
    if let Some(max) = args.max_cpu_per_share_us
        && args.mode == Mode::Shares
        && !(first.cpu_per_share_us <= max && first.answered > 0)
    {
        eprintln!(
            "loadgen: CPU per share {:.2} µs above {max}",
            first.cpu_per_share_us
        );
        ok = false;
    }
    if let Some(max) = args.max_kib_per_miner
        && rss_per_miner > max
    {
        eprintln!("loadgen: {rss_per_miner:.2} KiB per miner above {max}");
        ok = false;
    }
    if let Some(max) = args.max_kib_left_per_miner
        && left_per_miner > max
    {
        eprintln!(
            "loadgen: {left_per_miner:.2} KiB per miner kept after every miner left, above {max}"
        );
        ok = false;
    }
    if let Some(mut c) = child {
        let _ = c.start_kill();
        let _ = c.wait().await;
    }
    Ok(ok)
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("loadgen: {e}\n{USAGE}");
            return std::process::ExitCode::from(2);
        }
    };
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(t) = args.threads {
        builder.worker_threads(t.max(1));
    }
    let runtime = match builder.enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("loadgen: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    let result = match args.mode {
        Mode::Sv1Connect | Mode::Sv1Shares => runtime.block_on(sv1::run(args)),
        Mode::Connect | Mode::Shares => runtime.block_on(run(args)),
    };
    match result {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("loadgen: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Result<Args, String> {
        let v: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        parse(&v)
    }

    #[test]
    fn arguments_are_checked() {
        let a = args("shares --miners 10 --in-flight 4 --target 127.0.0.1:1 -- /bin/pool --noise")
            .unwrap();
        assert_eq!((a.mode, a.miners, a.in_flight), (Mode::Shares, 10, 4));
        assert_eq!(a.command, ["/bin/pool", "--noise"]);
        assert_eq!(a.label, "pool");
        assert!(args("shares --miners 10").is_err(), "no server");
        assert!(
            args("connect --rate 1 --pid 1").is_err(),
            "--rate is for shares"
        );
        assert!(args("shares --rate 0 --pid 1").is_err());
        assert!(args("shares --miners 0 --pid 1").is_err());
        assert!(args("connect --fanout 1 --no-channel --pid 1").is_err());
        assert!(args("idle --pid 1").is_err());
    }

    /// The transport floor's clients and server pass batches and answers: shares are
    /// counted, each costs the server's thread some CPU, and the thread ends with the
    /// measurement (the call returns).
    #[test]
    fn the_transport_floor_passes_batches_and_answers() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let (us, rate, switches) = runtime.block_on(transport_floor_us(8, 32, 0.3)).unwrap();
        assert!(us > 0.0 && us.is_finite(), "{us} µs per share");
        assert!(rate > 1000.0, "{rate} shares/s");
        assert!(switches.is_finite());
    }
}
