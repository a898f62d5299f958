//! The command line: the modes, the options and their checks.

use std::net::SocketAddr;
use sv2c::noise::AuthorityPublicKey;

pub(super) const USAGE: &str = "usage:
  loadgen connect|shares|sv1-connect|sv1-shares --target HOST:PORT [--authority-key KEY]
          [--pid PID] [--pool-bits B] [--miners N] [--in-flight K] [--rate R] [--seconds S] [--waves W]
          [--fanout B] [--no-channel] [--tp HOST:PORT] [--threads T] [--label NAME]
          [--max-cpu-per-share-us X] [--max-kib-per-miner Y] [--max-kib-left-per-miner Z]
          [-- COMMAND ARGS...]
  loadgen faults --target PROXY --authority-key KEY [--miners N] [--rate R] [--in-flight K]
          [--deadline S] [--threads T]
      N simulated Noise miners (default 1000) against the pool or proxy at --target.
      sv1-connect, sv1-shares: the same with plain-TCP Stratum V1 miners (shares meeting
      --pool-bits B leading zero bits, default 8). connect: they stay idle; shares: K shares in flight each (default 32) for S
      seconds (default 5), or with --rate R shares per second each (share-to-answer
      p50/p99 and server CPU %). --fanout B (connect): time B new blocks' prev-hashes
      reaching every miner. --no-channel (connect): no channel, only the connection. --pid: the server process to measure; or COMMAND, started
      here. --tp: serve a Template Provider at that address (for SRI's pool_sv2).
      --max-*: exit 1 if the measured value is above (for CI); Z: the server's RSS after
      every miner left, above its RSS before they came, per miner.
      faults: N miners (R shares a second each, default 1) that reconnect by themselves;
      commands on stdin mark faults, and each answers with the miners' recovery times
      (loadgen/faults.rs; S: a miner without an accepted share by then is lost, default 30).";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    Connect,
    Shares,
    /// `connect` with Stratum V1 miners (`loadgen/sv1.rs`).
    Sv1Connect,
    /// `shares` with Stratum V1 miners.
    Sv1Shares,
    /// Miners that reconnect by themselves, faults marked on stdin (`loadgen/faults.rs`).
    Faults,
}

#[derive(Debug)]
pub(super) struct Args {
    pub(super) mode: Mode,
    pub(super) target: SocketAddr,
    pub(super) key: Option<AuthorityPublicKey>,
    pub(super) pid: Option<u32>,
    pub(super) miners: usize,
    pub(super) in_flight: u32,
    /// Leading zero bits an SV1 share's hash meets (the pool's target).
    pub(super) pool_bits: u32,
    pub(super) rate: Option<f64>,
    pub(super) seconds: f64,
    /// `faults`: how long after a fault a miner without an accepted share counts as lost.
    pub(super) deadline: f64,
    pub(super) fanout: usize,
    pub(super) no_channel: bool,
    /// `sv1-shares`: each share in a write of its own, written when an answer is read.
    pub(super) share_per_write: bool,
    pub(super) waves: usize,
    pub(super) tp: Option<SocketAddr>,
    pub(super) threads: Option<usize>,
    pub(super) label: String,
    pub(super) max_cpu_per_share_us: Option<f64>,
    pub(super) max_kib_per_miner: Option<f64>,
    pub(super) max_kib_left_per_miner: Option<f64>,
    pub(super) command: Vec<String>,
}

pub(super) fn parse(args: &[String]) -> Result<Args, String> {
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
        Some("faults") => Mode::Faults,
        _ => {
            return Err(
                "the first argument is connect, shares, sv1-connect, sv1-shares or faults".into(),
            );
        }
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
        deadline: 30.0,
        fanout: 0,
        no_channel: false,
        share_per_write: false,
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
        if flag == "--share-per-write" {
            a.share_per_write = true;
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
            "--deadline" => a.deadline = value.parse().map_err(|_| bad.clone())?,
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
    if a.mode == Mode::Faults {
        if a.key.is_none() || !a.command.is_empty() || a.pid.is_some() {
            return Err("faults takes --authority-key KEY, and no --pid or COMMAND".into());
        }
        if a.deadline.is_nan() || a.deadline <= 0.0 {
            return Err(format!("--deadline must be positive: {}", a.deadline));
        }
    } else if a.pid.is_none() && a.command.is_empty() {
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
    if a.share_per_write && a.mode != Mode::Sv1Shares {
        return Err("--share-per-write is for sv1-shares mode".into());
    }
    if a.rate.is_some() && !matches!(a.mode, Mode::Shares | Mode::Faults) {
        return Err("--rate is for shares and faults modes".into());
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
