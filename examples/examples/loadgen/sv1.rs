//! `loadgen sv1-connect|sv1-shares`: plain-TCP Stratum V1 miners (written on `sv2c-sv1`)
//! against an SV1 server: `mining_proxy --aggregate --sv1-listen`, or SRI's
//! `translator_sv2`.
//!
//! All `N` miners connect at once; each sends `mining.subscribe` and `mining.authorize`
//! (`loadgen.I`) in one write and waits for its first `mining.notify`. `sv1-connect`: they
//! then stay idle for `S` seconds (the server's RSS per idle miner after them, the time
//! until every miner had a job, each miner's time from connect to its first job, p50 /
//! p99 / max). `sv1-shares`: for `S` seconds each keeps `K` shares in flight, each a real
//! double-SHA-256 share of the newest job meeting both the miner's difficulty and
//! `--pool-bits` leading zero bits (the pool's target: every share is forwarded; the
//! shares replacing the answers of one read go out in one write, or each alone with
//! `--share-per-write`), and the server's CPU per answered share is printed beside a
//! floor measured here: the server's share checks (the coinbase's, the
//! merkle path's and the header's double SHA-256), the upstream seal of a
//! `SubmitSharesExtended` frame (ChaCha20-Poly1305, header and payload) and the
//! loopback reads and writes of as many connections served by one thread of `loadgen`,
//! each writing `K` share-sized frames at once and answered in one write (batched, also
//! with `--share-per-write`: a floor, not a model of that load).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use sv2c::channels::pow as work;
use sv2c::channels::pow::{difficulty_to_target, harder};
use sv2c_binary::U256;
use sv2c_sv1::{Authorize, Body, Id, Notify, Submit, Subscribe, Sv1Codec, Sv1Item, Sv1Message};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_util::codec::{Decoder, Framed};

use super::{
    Args, BoxError, Mode, aead_ns, cpu, quantile, raise_nofile, rss_kib, spawn_target, tcp_mem_kib,
    time_per_call, transport_floor_us, wait_listening, wait_quiet,
};

/// What the miners saw, added up.
#[derive(Debug, Default)]
struct Counts {
    opened: AtomicU64,
    failed: AtomicU64,
    answered: AtomicU64,
    accepted: AtomicU64,
    /// Connect to first `mining.notify`, µs, one per miner.
    first_job_us: Mutex<Vec<u64>>,
}

/// One miner's session.
#[derive(Debug, Default)]
struct State {
    extranonce1: Vec<u8>,
    extranonce2_size: usize,
    target: Option<U256>,
    job: Option<Notify>,
    extranonce2: u64,
    next_id: u64,
}

/// A share of the newest job meeting the miner's target and `pool` (at most 2^24 tries).
fn mine(state: &mut State, name: &str, pool: &U256) -> Option<Submit> {
    let n = state.job.as_ref()?;
    let target = harder(&state.target?, pool);
    let mut prev_hash = [0u8; 32];
    for (word, out) in n.prevhash.chunks(4).zip(prev_hash.chunks_mut(4)) {
        out.copy_from_slice(&[word[3], word[2], word[1], word[0]]);
    }
    state.extranonce2 += 1;
    let en2 = state.extranonce2.to_le_bytes();
    let en2 = &en2[..state.extranonce2_size.min(8)];
    let coinbase = [&n.coinb1[..], &state.extranonce1, en2, &n.coinb2].concat();
    let root = work::merkle_root(work::sha256d(&coinbase), n.merkle_branch.iter());
    let nonce = (0u32..1 << 24).find(|&nonce| {
        let h = work::header(n.version, &prev_hash, &root, n.ntime, n.nbits, nonce);
        work::meets_target(&work::sha256d(&h), &target)
    })?;
    Some(Submit {
        worker: name.into(),
        job_id: n.job_id.clone(),
        extranonce2: sv2c_sv1::Extranonce::new(en2)?,
        ntime: n.ntime,
        nonce,
        version_bits: None,
    })
}

/// Applies a line from the server; `true` for the answer to a share.
fn on_line(state: &mut State, msg: Sv1Message) -> Result<Option<bool>, BoxError> {
    match (msg.id, msg.body) {
        (_, Body::SetDifficulty(d)) => state.target = Some(difficulty_to_target(d.difficulty)),
        (_, Body::Notify(n)) => state.job = Some(n),
        (Id::Num(1), Body::Response(r)) => {
            let s = r.subscribe_result()?;
            state.extranonce1 = s.extranonce1.as_bytes().to_vec();
            state.extranonce2_size = s.extranonce2_size;
        }
        (Id::Num(id), Body::Response(r)) if id >= 10 => return Ok(Some(r.as_bool() == Some(true))),
        _ => {}
    }
    Ok(None)
}

/// The next line already in `framed`'s read buffer, if a whole one is there (no read).
fn buffered_line(
    framed: &mut Framed<TcpStream, Sv1Codec>,
) -> Result<Option<Sv1Item>, sv2c_sv1::Sv1Error> {
    let mut buf = std::mem::take(framed.read_buffer_mut());
    let item = framed.codec_mut().decode(&mut buf);
    *framed.read_buffer_mut() = buf;
    item
}

/// One miner from connect to the end of the run (`stop`).
async fn miner(
    args: Arc<Args>,
    i: usize,
    counts: Arc<Counts>,
    mut go: watch::Receiver<bool>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), BoxError> {
    let started = Instant::now();
    let tcp = TcpStream::connect(args.target).await?;
    let mut framed = Framed::new(tcp, Sv1Codec::new());
    let name = format!("loadgen.{i}");
    let subscribe = Subscribe {
        user_agent: Some("sv2c-loadgen/1.0".into()),
        session_id: None,
    };
    let auth = Authorize {
        name: name.clone(),
        password: "x".into(),
    };
    framed
        .feed(Sv1Message::request(1u64, Body::Subscribe(subscribe)))
        .await?;
    framed
        .feed(Sv1Message::request(2u64, Body::Authorize(auth)))
        .await?;
    SinkExt::<Sv1Message>::flush(&mut framed).await?;
    let mut state = State {
        next_id: 10,
        ..State::default()
    };
    while state.job.is_none() {
        let line = framed.next().await.ok_or("closed before the first job")??;
        if let Sv1Item::Message(m) = line {
            on_line(&mut state, m)?;
        }
    }
    let us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    if let Ok(mut v) = counts.first_job_us.lock() {
        v.push(us);
    }
    counts.opened.fetch_add(1, Relaxed);
    if args.mode == Mode::Sv1Shares {
        let _ = go.wait_for(|g| *g).await;
    }
    let pool = work::target_with_zero_bits(args.pool_bits);
    let mut in_flight = 0;
    loop {
        // The shares that replace the answers of one read go out in one write (as the
        // Sv2 miners of `shares` and the floor's clients write theirs); with
        // `--share-per-write`, each in a write of its own.
        let mut fed = false;
        while args.mode == Mode::Sv1Shares && !*stop.borrow() && in_flight < args.in_flight {
            let Some(submit) = mine(&mut state, &name, &pool) else {
                break;
            };
            state.next_id += 1;
            let share = Sv1Message::request(state.next_id, Body::Submit(submit));
            if args.share_per_write {
                framed.send(share).await?;
            } else {
                framed.feed(share).await?;
                fed = true;
            }
            in_flight += 1;
        }
        if fed {
            SinkExt::<Sv1Message>::flush(&mut framed).await?;
        }
        let line = tokio::select! {
            _ = stop.wait_for(|s| *s) => return Ok(()),
            line = framed.next() => line.ok_or("closed by the server")??,
        };
        let mut next = Some(line);
        while let Some(line) = next {
            if let Sv1Item::Message(m) = line
                && let Some(ok) = on_line(&mut state, m)?
            {
                in_flight -= 1;
                counts.answered.fetch_add(1, Relaxed);
                counts.accepted.fetch_add(u64::from(ok), Relaxed);
            }
            // The other lines of the same read, unless each share goes alone.
            next = if args.share_per_write {
                None
            } else {
                buffered_line(&mut framed)?
            };
        }
    }
}

/// The server's CPU floor per share (µs): its checks, the upstream seal, the loopback.
async fn floor_us(args: &Args, nofile: u64) -> (f64, f64, f64) {
    let coinbase = [0x5au8; 200];
    let header = [0x5au8; 80];
    // The coinbase, a 12-step merkle path, the header: one double SHA-256 each.
    let checks_ns = time_per_call(Duration::from_millis(150), || {
        std::hint::black_box(work::sha256d(std::hint::black_box(&coinbase)));
    }) + 13.0
        * time_per_call(Duration::from_millis(150), || {
            std::hint::black_box(work::sha256d(std::hint::black_box(&header[..64])));
        });
    // SubmitSharesExtended with 8 extranonce bytes: 6 + 4·6 + 1 + 8 bytes; its 6-byte
    // header sealed apart (the Noise transport's two AEAD messages per frame).
    let (seal_hdr, _) = aead_ns(6);
    let (seal_share, _) = aead_ns(39);
    // The loopback batched (`K` frames a write, one answer a batch) whatever the miners
    // do: with `--share-per-write` the server cannot batch, and this stays the floor.
    let connections = args
        .miners
        .min(
            usize::try_from(nofile / 2)
                .unwrap_or(usize::MAX)
                .saturating_sub(64),
        )
        .max(1);
    let loopback = transport_floor_us(connections, args.in_flight as usize, 2.0)
        .await
        .map_or(f64::NAN, |(us, _, _)| us);
    (checks_ns / 1e3, (seal_hdr + seal_share) / 1e3, loopback)
}

/// Starts every miner at once; returns their tasks and the seconds until each had its
/// first job or failed (at most 120).
async fn storm(
    args: &Arc<Args>,
    counts: &Arc<Counts>,
    go: &watch::Receiver<bool>,
    stop: &watch::Receiver<bool>,
) -> (Vec<tokio::task::JoinHandle<()>>, f64) {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.miners);
    for i in 0..args.miners {
        let (a, c, g, s) = (args.clone(), counts.clone(), go.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            if let Err(e) = miner(a, i, c.clone(), g, s).await
                && c.failed.fetch_add(1, Relaxed) == 0
            {
                eprintln!("loadgen: sv1 miner {i}: {e}");
            }
        }));
    }
    let deadline = started + Duration::from_secs(120);
    let total = args.miners as u64;
    while counts.opened.load(Relaxed) + counts.failed.load(Relaxed) < total
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (tasks, started.elapsed().as_secs_f64())
}

/// The table row of the times from connect to first job.
fn first_job_row(counts: &Counts) -> (String, String) {
    let mut firsts = counts
        .first_job_us
        .lock()
        .map(|v| v.clone())
        .unwrap_or_default();
    firsts.sort_unstable();
    let ms = |q: f64| quantile(&firsts, q).map_or(f64::NAN, |us| us as f64 / 1e3);
    (
        "time to first job p50 / p99 / max".into(),
        format!("{:.1} / {:.1} / {:.1} ms", ms(0.5), ms(0.99), ms(1.0)),
    )
}

/// The server: `--pid`, or the command started here (and its child, stopped at the end).
async fn server(args: &Args) -> Result<(u32, Option<tokio::process::Child>), BoxError> {
    if let Some(pid) = args.pid {
        return Ok((pid, None));
    }
    let (child, _) = spawn_target(&args.command, false).await?;
    Ok((child.id().ok_or("the command exited")?, Some(child)))
}

/// `sv1-connect` / `sv1-shares` (see the [module docs](self)); `true` unless a bound
/// given on the command line was passed.
pub(crate) async fn run(args: Args) -> Result<bool, BoxError> {
    let nofile = raise_nofile();
    let args = Arc::new(args);
    let (pid, child) = server(&args).await?;
    wait_listening(args.target).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    wait_quiet(pid).await;
    println!(
        "loadgen: {} SV1 miners against {} ({}, pid {pid}); open-files limit {nofile}",
        args.miners, args.target, args.label
    );
    let rss_before = rss_kib(pid);
    let tcp_before = tcp_mem_kib();
    let counts = Arc::new(Counts::default());
    let (go_tx, go) = watch::channel(false);
    let (stop_tx, stop) = watch::channel(false);
    let (tasks, all_open_s) = storm(&args, &counts, &go, &stop).await;
    let total = args.miners as u64;
    // Idle for `--seconds` in `sv1-connect` (jobs keep coming), 3 s before the shares.
    let idle = match args.mode {
        Mode::Sv1Connect => args.seconds,
        _ => 3.0,
    };
    tokio::time::sleep(Duration::from_secs_f64(idle)).await;
    let rss_idle = rss_kib(pid);
    let tcp_idle = tcp_mem_kib();
    let opened = counts.opened.load(Relaxed);
    let mut table = vec![
        (
            "miners with a job / failed".to_owned(),
            format!("{opened} / {} (of {total})", counts.failed.load(Relaxed)),
        ),
        (
            "time until every miner had a job".into(),
            format!("{all_open_s:.2} s"),
        ),
    ];
    table.push(first_job_row(&counts));
    let per = |after: u64, before: u64| after.saturating_sub(before) as f64 / opened.max(1) as f64;
    table.push((
        "server RSS per idle miner".into(),
        format!(
            "{:.2} KiB ({rss_before} → {rss_idle} KiB)",
            per(rss_idle, rss_before)
        ),
    ));
    table.push((
        "kernel TCP memory per idle miner (both ends)".into(),
        format!("{:.2} KiB", per(tcp_idle, tcp_before)),
    ));
    if args.mode == Mode::Sv1Shares {
        shares(&args, pid, &counts, &go_tx, &mut table, nofile).await;
    }
    let _ = stop_tx.send(true);
    for t in tasks {
        let _ = t.await;
    }
    println!();
    println!("| {} | value |", args.label);
    println!("|---|---|");
    for (k, v) in &table {
        println!("| {k} | {v} |");
    }
    if let Some(mut c) = child {
        let _ = c.start_kill();
        let _ = c.wait().await;
    }
    let ok = args
        .max_kib_per_miner
        .is_none_or(|max| per(rss_idle, rss_before) <= max);
    Ok(ok)
}

/// The `sv1-shares` phase: every miner mines for `--seconds`; the server's CPU per share
/// and the floor, as table rows.
async fn shares(
    args: &Args,
    pid: u32,
    counts: &Counts,
    go: &watch::Sender<bool>,
    table: &mut Vec<(String, String)>,
    nofile: u64,
) {
    let (cpu_before, _) = cpu(pid);
    let answered_before = counts.answered.load(Relaxed);
    let t0 = Instant::now();
    let _ = go.send(true);
    tokio::time::sleep(Duration::from_secs_f64(args.seconds)).await;
    let (cpu_after, _) = cpu(pid);
    let secs = t0.elapsed().as_secs_f64();
    let answered = counts.answered.load(Relaxed) - answered_before;
    let cpu_us = (cpu_after - cpu_before) as f64 / 1e3 / answered.max(1) as f64;
    table.push((
        "shares answered / accepted, per second".into(),
        format!(
            "{answered} / {}, {:.0}/s",
            counts.accepted.load(Relaxed),
            answered as f64 / secs
        ),
    ));
    let (checks, seal, loopback) = floor_us(args, nofile).await;
    table.push((
        "server CPU per share".into(),
        format!(
            "{cpu_us:.1} µs (floor {:.1}: checks {checks:.2} + seal {seal:.2} + loopback {loopback:.1})",
            checks + seal + loopback
        ),
    ));
}
