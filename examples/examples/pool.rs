//! `pool`: a Stratum V2 pool server on sv2c that checks every share's proof of work.
//!
//! ```text
//! pool [--listen HOST:PORT] [--noise] [--authority-secret-file F]
//!      [--difficulty-bits N] [--job-interval SECONDS] [--jobs-per-prev-hash N]
//! ```
//!
//! From the workspace root: `cargo run --release --example pool -- --noise`. With
//! `--noise` it prints its authority public key: give it to clients (for SRI's
//! `translator_sv2`, `authority_pubkey` in its `[[upstreams]]` table). The pool itself
//! lives in `sv2c_roles::pool` (`roles/src/pool.rs`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sv2c_roles::identity::load_or_generate_identity;
use sv2c_roles::pool::{Pool, PoolConfig};
use sv2c_roles::work::target_with_zero_bits;

const USAGE: &str = "usage:
  pool [--listen HOST:PORT] [--noise] [--authority-secret-file FILE]
       [--difficulty-bits N] [--job-interval SECONDS] [--jobs-per-prev-hash N]
      a Stratum V2 pool (standard and extended channels) until Ctrl-C; default listen
      address 127.0.0.1:34254. --noise: clients must use Noise NX; the authority secret
      is read from FILE (64 hex digits) or generated, and its public key printed.
      --difficulty-bits: leading zero bits a share's hash needs (default 8).
      --job-interval: seconds between jobs (default 10); --jobs-per-prev-hash: jobs
      per made-up block (default 6)";

/// Validity of the pool's Noise certificate (a day; restart to renew).
const IDENTITY_VALIDITY: Duration = Duration::from_secs(24 * 3600);

/// What the command line asks for.
struct Args {
    listen: String,
    secret_file: Option<PathBuf>,
    noise: bool,
    config: PoolConfig,
}

fn parse(args: &[String]) -> Result<Option<Args>, String> {
    let mut listen = "127.0.0.1:34254".to_owned();
    let mut secret_file = None;
    let mut noise = false;
    let mut config = PoolConfig::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--listen" => listen = value("--listen")?,
            "--noise" => noise = true,
            "--authority-secret-file" => {
                secret_file = Some(PathBuf::from(value("--authority-secret-file")?));
                noise = true;
            }
            "--difficulty-bits" => {
                let bits: u32 = value("--difficulty-bits")?
                    .parse()
                    .ok()
                    .filter(|b| *b <= 255)
                    .ok_or("--difficulty-bits takes a number from 0 to 255")?;
                config.share_target = target_with_zero_bits(bits);
            }
            "--job-interval" => {
                let s: f64 = value("--job-interval")?
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.01 && *s <= 86_400.0)
                    .ok_or("--job-interval takes seconds from 0.01 to 86400")?;
                config.job_interval = Duration::from_secs_f64(s);
            }
            "--jobs-per-prev-hash" => {
                config.jobs_per_prev_hash = value("--jobs-per-prev-hash")?
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or("--jobs-per-prev-hash takes a positive number")?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Some(Args {
        listen,
        secret_file,
        noise,
        config,
    }))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Args {
        listen,
        secret_file,
        noise,
        mut config,
    } = match parse(&args) {
        Ok(Some(parsed)) => parsed,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("pool: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if noise {
        match load_or_generate_identity(secret_file.as_deref(), IDENTITY_VALIDITY) {
            Ok((key, responder)) => {
                println!("pool: authority public key {key}");
                config.noise = Some(responder);
            }
            Err(e) => {
                eprintln!("pool: {e}");
                return ExitCode::from(2);
            }
        }
    }
    let pool = match Pool::bind(&listen, config).await {
        Ok(pool) => pool,
        Err(e) => {
            eprintln!("pool: cannot listen on {listen}: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "pool: listening on {} ({}); Ctrl-C stops",
        pool.local_addr(),
        if noise { "Noise NX" } else { "plain TCP" }
    );
    let mut ticker = tokio::time::interval(Duration::from_secs(10));
    ticker.tick().await;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = ticker.tick() => {
                let s = pool.stats();
                println!(
                    "pool: {} connections, {} channels, {} shares accepted, {} rejected, {} jobs",
                    s.connections, s.channels_opened, s.shares_accepted, s.shares_rejected, s.jobs_sent
                );
                for (worker, w) in pool.workers() {
                    println!(
                        "pool:   worker {worker}: {} shares, {:.3e} hashes of work",
                        w.shares_accepted, w.work
                    );
                }
            }
        }
    }
    pool.shutdown().await;
    ExitCode::SUCCESS
}
