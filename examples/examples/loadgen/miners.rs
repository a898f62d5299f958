//! The simulated Sv2 miners: the handshake, `SetupConnection` and a standard channel, then
//! idle, shares in flight, or shares at a steady rate.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use sv2c::noise::{self, AuthorityPublicKey, Initiator};
use sv2c::prelude::*;
use tokio::net::TcpStream;
use tokio::sync::watch;

use super::BoxError;
use super::args::{Args, Mode};

/// `SetupConnection` flag: the miner wants standard jobs only.
const REQUIRES_STANDARD_JOBS: u32 = 0x1;

#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) opened: AtomicU64,
    pub(super) failed: AtomicU64,
    /// Shares answered (accepted + rejected).
    pub(super) answered: AtomicU64,
    /// Answer messages (`SubmitShares.Success` may acknowledge several shares).
    pub(super) answers: AtomicU64,
    pub(super) accepted: AtomicU64,
    /// Nanoseconds from the start of the wave until each miner was open (the latest).
    pub(super) last_open_ns: AtomicU64,
    /// Set while the fan-out or the share-to-answer times are being recorded.
    pub(super) recording: AtomicBool,
    /// When each miner received each previous hash (keyed by its first 8 bytes), while
    /// recording.
    pub(super) prev_hashes: Mutex<HashMap<u64, Vec<Instant>>>,
    /// Share-to-answer times in µs (`--rate`), while recording.
    pub(super) latencies_us: Mutex<Vec<u32>>,
}

pub(super) type Conn = Framed<TcpStream, noise::NoiseCodec<Sv2Codec<Message>>>;

/// Opens one miner: Noise, `SetupConnection`, one standard channel with its job and
/// previous hash. Returns the connection, the channel id and the work to submit for.
pub(super) async fn open_miner(
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
pub(super) struct Work {
    pub(super) job_id: u32,
    pub(super) ntime: u32,
}

impl Work {
    /// Follows a new active job (not a future one) or previous hash.
    pub(super) fn follow(&mut self, msg: &Message) {
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
pub(super) async fn miner(
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
pub(super) fn record_prev_hash(counts: &Counts, prev_hash: &U256) {
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
pub(super) async fn paced(
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
