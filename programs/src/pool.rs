//! `sv2c-pool` (and the `pool` example): a Stratum V2 pool server on sv2c that checks
//! every share's proof of work, until Ctrl-C or SIGTERM.
//!
//! Its options ([`PoolOptions`]) come from flags, `SV2C_…` environment variables and a
//! TOML file (`--config examples/config/pool.toml`); `sv2c-pool --help` lists them. With
//! `--noise` it prints its authority public key: give it to clients (for SRI's
//! `translator_sv2`, `authority_pubkey` in its `[[upstreams]]` table). The pool itself
//! lives in `sv2c_roles::pool`, the configuration in [`config`](crate::config).
//!
//! On a Template Provider (a node, or `cargo run --example template_provider -- --noise`,
//! which prints its key) with a regtest payout:
//!
//! ```text
//! sv2c-pool --template-provider 127.0.0.1:8442 --tp-authority-key KEY \
//!     --coinbase-output bcrt1q... --network regtest
//! ```

use std::process::ExitCode;
use std::time::Duration;

use sv2c_roles::pool::Pool;
use sv2c_roles::shutdown;

use crate::config::{PoolOptions, PoolSettings};
use crate::logging;
use crate::metrics::{self, Exporter};

use crate::memory::{self, MIN_CHANNELS_CLOSED, ReleaseWhenMinersLeave};

/// What `--help` shows after the options.
const AFTER_HELP: &str = "\
Without --template-provider the pool mines a made-up chain. Log lines on stderr: RUST_LOG \
sets the level (default info; debug shows every connection). Every 10 s, and once more on \
Ctrl-C or SIGTERM, a line per worker (user_identity) with its accepted shares on stdout. On \
Ctrl-C or SIGTERM clients are sent Reconnect and the pool exits 0. A configuration that \
cannot be used is one line on stderr and exit code 2.";

/// Runs the pool program as `name` (in its messages and `--help`), with this process's
/// arguments and environment; returns its exit code (0 after Ctrl-C or SIGTERM, 2 for a
/// configuration that cannot be used, 1 when it cannot start).
pub fn main(name: &'static str) -> ExitCode {
    memory::without_thread_caches();
    one_malloc_arena();
    let about = "A Stratum V2 pool (standard and extended channels) that checks every \
                 share's proof of work";
    let settings = match crate::options(name, about, AFTER_HELP, PoolOptions::overlay) {
        Ok(options) => options.resolve(),
        Err(exit) => return exit,
    };
    let settings = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", crate::name());
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
            eprintln!("{}: cannot start the runtime: {e}", crate::name());
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
            _ => Ok(String::new()),
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
        println!("{}: authority public key {key}", crate::name());
    }
    let noise = authority.is_some();
    let tp = config.template_provider.clone();
    // Before anything says the pool is up: a SIGTERM from then on is a graceful stop.
    let stop = shutdown::signal();
    let pool = match Pool::bind(&listen, config).await {
        Ok(pool) => pool,
        Err(e) => {
            eprintln!("{}: cannot listen on {listen}: {e}", crate::name());
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
                    eprintln!("{}: cannot serve metrics on {addr}: {e}", crate::name());
                    pool.shutdown().await;
                    return ExitCode::from(1);
                }
            }
        }
    };
    println!(
        "{}: listening on {} ({}); Ctrl-C stops",
        crate::name(),
        pool.local_addr(),
        if noise { "Noise NX" } else { "plain TCP" }
    );
    match &tp {
        Some(tp) => println!(
            "{}: templates from the template provider at {} ({})",
            crate::name(),
            tp.address,
            if tp.authority_key.is_some() {
                "Noise NX"
            } else {
                "plain TCP"
            }
        ),
        None => println!(
            "{}: templates of a made-up chain (no template provider)",
            crate::name()
        ),
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
                        "{}:   worker {worker}: {} shares, {:.3e} hashes of work", crate::name(),
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
            "{}:   worker {worker}: {} shares, {:.3e} hashes of work",
            crate::name(),
            w.shares_accepted,
            w.work
        );
    }
    pool.shutdown().await;
    if let Some(task) = metrics_task {
        task.abort();
    }
    ExitCode::SUCCESS
}
