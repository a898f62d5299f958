//! `pool`: a Stratum V2 pool server on sv2c that checks every share's proof of work.
//!
//! ```text
//! pool [--config FILE] [--listen HOST:PORT] [--noise] [--authority-secret-file F]
//!      [--difficulty-bits N] [--job-interval SECONDS] [--jobs-per-prev-hash N]
//!      [--shares-per-minute R] [--max-connections N] [--max-connections-per-address N]
//!      [--max-channels N] [--max-channels-per-connection N] [--max-workers N]
//!      [--worker-active SECONDS] [--metrics IP:PORT] [--threads N] [--key-stock N]
//!      [--template-provider HOST:PORT [--tp-authority-key KEY]]
//!      [--coinbase-output ADDRESS|hex:SCRIPT] [--network NETWORK]
//! ```
//!
//! From the workspace root: `cargo run --release --example pool -- --noise`. With
//! `--noise` it prints its authority public key: give it to clients (for SRI's
//! `translator_sv2`, `authority_pubkey` in its `[[upstreams]]` table). The options can
//! also come from a TOML file (`--config examples/config/pool.toml`; flags override it).
//! The pool itself lives in `sv2c_roles::pool` (`roles/src/pool.rs`), the configuration in
//! `sv2c_roles::config`.
//!
//! On a Template Provider (a node, or `cargo run --example template_provider -- --noise`,
//! which prints its key) with a regtest payout:
//!
//! ```text
//! cargo run --release --example pool -- --template-provider 127.0.0.1:8442 \
//!     --tp-authority-key KEY --coinbase-output bcrt1q... --network regtest
//! ```

use std::process::ExitCode;
use std::time::Duration;

use sv2c_roles::config::{self, PoolOptions, PoolSettings};
use sv2c_roles::metrics::{self, Exporter};
use sv2c_roles::pool::Pool;
use sv2c_roles::{logging, shutdown};

#[path = "common/memory.rs"]
mod memory;
use memory::{MIN_CHANNELS_CLOSED, ReleaseWhenMinersLeave};

const USAGE: &str = "usage:
  pool [--listen HOST:PORT] [--noise] [--authority-secret-file FILE]
       [--difficulty-bits N] [--job-interval SECONDS] [--jobs-per-prev-hash N]
       [--shares-per-minute R] [--max-connections N] [--max-connections-per-address N]
       [--max-channels N] [--max-channels-per-connection N] [--max-workers N]
       [--worker-active SECONDS] [--config FILE] [--metrics IP:PORT] [--threads N]
       [--key-stock N] [--template-provider HOST:PORT [--tp-authority-key KEY]]
       [--coinbase-output ADDRESS|hex:SCRIPT] [--network NETWORK]
      a Stratum V2 pool (standard and extended channels) until Ctrl-C or SIGTERM; default
      listen address 127.0.0.1:34254. --noise: clients must use Noise NX; the authority
      secret is read from FILE (64 hex digits) or generated, and its public key printed.
      --key-stock N: with --noise, Noise ephemeral keys made ahead while no client is
      connecting, so that a reconnection storm spends less on each handshake (default
      16384, 96 bytes each; 0: none).
      --template-provider HOST:PORT: templates and chain tips from a Template Provider
      (Template Distribution), and every block found sent to it (SubmitSolution);
      --tp-authority-key KEY: its Noise authority public key (without it: plain TCP).
      Losing it, miners keep their jobs and the pool dials again (0.5 s, doubling to
      10 s). Without --template-provider the pool mines a made-up chain.
      --coinbase-output: where the coinbase pays the whole block reward, an address of
      --network (bitcoin, testnet, testnet4, signet or regtest; default bitcoin) or
      hex: and an output script (default hex:51, OP_TRUE: anyone can spend it).
      --difficulty-bits: leading zero bits a share's hash needs (default 8).
      --job-interval: seconds between jobs (default 10; with a Template Provider, between
      vardiff checks); --jobs-per-prev-hash: jobs per made-up block (default 6).
      --shares-per-minute: variable difficulty, each channel's target adjusted toward R
      shares a minute (SetTarget; off by default: every channel keeps --difficulty-bits).
      --max-connections: clients served at once (default, and at most: the open-files
      limit less 64); more are closed on arrival, with one log line when the cap is
      reached. --max-connections-per-address: the same for each client IP address (default:
      no cap; miners behind one NAT share an address).
      --max-channels: channels open at once on the whole pool (default 200000, about
      200 MiB); --max-channels-per-connection: on one connection (default 32768: a
      forwarding proxy opens one per miner). A channel beyond either is refused with
      too-many-channels until channels close.
      --max-workers: worker identities counted apart (default 10000); when full, the least
      recently seen identity idle for --worker-active SECONDS (default 600) makes room,
      else the share is counted in the overflow sum.
      --config FILE: the same options from a TOML file (keys as the flags, with _ for -;
      see examples/config/pool.toml); flags override it.
      --metrics IP:PORT: serve Prometheus metrics at http://IP:PORT/metrics, and the
      probes /health (200 while the pool serves) and /ready (with --template-provider,
      503 while the pool is not connected to it).
      --threads N: tokio runtime worker threads (default: one per core).
      Log lines on stderr: RUST_LOG sets the level (default info; debug shows every
      connection). Every 10 s, and once more on Ctrl-C or SIGTERM, a line per worker
      (user_identity) with its accepted shares on stdout. On Ctrl-C or SIGTERM clients
      are sent Reconnect and the pool exits 0";

fn main() -> ExitCode {
    memory::without_thread_caches();
    one_malloc_arena();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = match config::read(PoolOptions::from_args, PoolOptions::overlay, &args) {
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Some(options)) => options.resolve(),
        Err(e) => Err(e),
    };
    let settings = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("pool: {e}");
            return ExitCode::from(2);
        }
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = settings.threads {
        runtime.worker_threads(threads);
    }
    match runtime.enable_all().build() {
        Ok(runtime) => runtime.block_on(run(settings)),
        Err(e) => {
            eprintln!("pool: cannot start the runtime: {e}");
            ExitCode::from(1)
        }
    }
}

/// Makes glibc's allocator keep one arena for the process instead of one per thread that
/// meets contention. The runtime's threads take turns polling a connection, so with one
/// arena per thread a connection's memory is spread over several and a second storm of
/// miners finds the first one's freed memory in the wrong arena: a second wave of 15,000
/// idle Noise miners grew RSS by 11–20 % with per-thread arenas, 0.2–1.4 % with one
/// (BENCHMARKS.md, "Servers under load").
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn one_malloc_arena() {
    // SAFETY: `mallopt` changes a tuning parameter of the allocator under its own lock;
    // it takes no pointer and is called before the runtime starts any thread.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn one_malloc_arena() {}

/// `/ready`: with a Template Provider, 503 while the pool is not connected to it (miners
/// keep their last job meanwhile); otherwise ready once it listens.
fn template_provider_up(exporter: Exporter) -> metrics::Readiness {
    std::sync::Arc::new(move || {
        let connected = exporter
            .sample()
            .blocks
            .and_then(|b| b.template_provider_connected);
        match connected {
            Some(false) => Err("no Template Provider connection".to_owned()),
            _ => Ok(()),
        }
    })
}

async fn run(settings: PoolSettings) -> ExitCode {
    let PoolSettings {
        listen,
        authority,
        pool: config,
        metrics: metrics_addr,
        threads: _,
    } = settings;
    logging::init("info");
    if let Some(key) = authority {
        println!("pool: authority public key {key}");
    }
    let noise = authority.is_some();
    let tp = config.template_provider.clone();
    // Before anything says the pool is up: a SIGTERM from then on is a graceful stop.
    let stop = shutdown::signal();
    let pool = match Pool::bind(&listen, config).await {
        Ok(pool) => pool,
        Err(e) => {
            eprintln!("pool: cannot listen on {listen}: {e}");
            return ExitCode::from(1);
        }
    };
    let exporter = Exporter::new();
    exporter.set_probe(Box::new(pool.probe()));
    let metrics_task = match metrics_addr {
        None => None,
        Some(addr) => {
            match metrics::serve(addr, exporter.clone(), template_provider_up(exporter)).await {
                Ok((local, task)) => {
                    tracing::info!("metrics at http://{local}/metrics");
                    Some(task)
                }
                Err(e) => {
                    eprintln!("pool: cannot serve metrics on {addr}: {e}");
                    pool.shutdown().await;
                    return ExitCode::from(1);
                }
            }
        }
    };
    println!(
        "pool: listening on {} ({}); Ctrl-C stops",
        pool.local_addr(),
        if noise { "Noise NX" } else { "plain TCP" }
    );
    match &tp {
        Some(tp) => println!(
            "pool: templates from the template provider at {} ({})",
            tp.address,
            if tp.authority_key.is_some() {
                "Noise NX"
            } else {
                "plain TCP"
            }
        ),
        None => println!("pool: templates of a made-up chain (no template provider)"),
    }
    // One line every 10 s with the counters: rejections appear as a count, never one
    // line per share.
    let mut ticker = tokio::time::interval(Duration::from_secs(10));
    ticker.tick().await;
    // Memory given back to the OS once many miners have left, or many channels closed (a
    // flood of channels from a few connections).
    let mut release = ReleaseWhenMinersLeave::default();
    let mut release_channels = ReleaseWhenMinersLeave::with_min_left(MIN_CHANNELS_CLOSED);
    let mut watch = tokio::time::interval(Duration::from_secs(1));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = watch.tick() => {
                let s = pool.stats();
                let by_connections = release.observe(s.connections_open);
                let by_channels = release_channels.observe(s.channels_open);
                if let Some(took) = by_connections.or(by_channels) {
                    tracing::debug!("free memory given back to the OS in {took:?}");
                }
            }
            _ = ticker.tick() => {
                let s = pool.stats();
                // Gauges (open now) first, then totals since the start.
                tracing::info!(
                    "open now: {} connections, {} channels; in all: {} connections, {} channels, \
                     {} shares accepted, {} rejected, {} jobs, {} blocks found, {} submitted",
                    s.connections_open, s.channels_open, s.connections, s.channels_opened,
                    s.shares_accepted, s.shares_rejected, s.jobs_sent, s.blocks_found,
                    s.blocks_submitted
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
    tracing::info!("shutting down: clients are sent Reconnect");
    // The final per-worker counts, as the ticker prints them.
    for (worker, w) in pool.workers() {
        println!(
            "pool:   worker {worker}: {} shares, {:.3e} hashes of work",
            w.shares_accepted, w.work
        );
    }
    pool.shutdown().await;
    if let Some(task) = metrics_task {
        task.abort();
    }
    ExitCode::SUCCESS
}
