//! `loadgen`: simulated miners against a Stratum V2 pool or proxy, written on the `sv2c`
//! facade like any client program, with the server's memory and CPU read from `/proc`.
//!
//! ```text
//! loadgen connect|shares|sv1-connect|sv1-shares --target HOST:PORT [--authority-key KEY] [--pid PID]
//!         [--miners N] [--in-flight K] [--rate R] [--seconds S] [--waves W]
//!         [--fanout B] [--no-channel] [--share-per-write] [--tp HOST:PORT] [--threads T]
//!         [--label NAME] [-- COMMAND ARGS...]
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
//! `faults`: miners mining through a proxy at a low rate that reconnect by themselves,
//! while a script injects faults and marks them on stdin (`loadgen/faults.rs`,
//! scripts/faults.sh).
//!
//! `sv1-connect` and `sv1-shares` are the same two loads with plain-TCP Stratum V1 miners
//! (`mining_proxy --aggregate --sv1-listen`, SRI's `translator_sv2`): see the `sv1`
//! module (`loadgen/sv1.rs`), its shares meeting `--pool-bits B` leading zero bits
//! (default 8, the `pool` program's). An SV1 miner sends the shares that replace the
//! answers of one read in one write, as the Sv2 miners do; with `--share-per-write`
//! (`sv1-shares`) each share goes in a write of its own, as its answer is read.
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

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

#[path = "loadgen/sv1.rs"]
mod sv1;

#[path = "loadgen/faults.rs"]
mod faults;

#[path = "loadgen/args.rs"]
mod args;
#[path = "loadgen/floors.rs"]
mod floors;
#[path = "loadgen/measure.rs"]
mod measure;
#[path = "loadgen/miners.rs"]
mod miners;
#[path = "loadgen/target.rs"]
mod target;
#[path = "loadgen/tp.rs"]
mod tp;
#[path = "loadgen/wave.rs"]
mod wave;

type BoxError = Box<dyn Error + Send + Sync>;

use args::{Args, Mode, USAGE, parse};
use floors::{aead_ns, secp_us, time_per_call, transport_floor_us};
use measure::{cpu, raise_nofile, rss_kib, tcp_mem_kib};
use target::{spawn_target, wait_listening, wait_quiet};
use tp::template_provider;
use wave::{quantile, wave};

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
        Mode::Faults => runtime.block_on(faults::run(args)),
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
        assert!(!args("sv1-shares --pid 1").unwrap().share_per_write);
        assert!(
            args("sv1-shares --share-per-write --pid 1")
                .unwrap()
                .share_per_write
        );
        assert!(
            args("shares --share-per-write --pid 1").is_err(),
            "--share-per-write is for sv1-shares"
        );
        let key = "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72";
        let f = args(&format!(
            "faults --rate 0.5 --deadline 20 --authority-key {key}"
        ))
        .unwrap();
        assert_eq!(
            (f.mode, f.rate, f.deadline),
            (Mode::Faults, Some(0.5), 20.0)
        );
        assert!(args("faults --rate 1").is_err(), "no key");
        assert!(args(&format!("faults --authority-key {key} --pid 1")).is_err());
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
