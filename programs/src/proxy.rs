//! `sv2c-proxy` (and the `mining_proxy` example): a Stratum V2 mining proxy built on
//! `Framed` and the sv2c frame codec.
//!
//! With `--upstream HOST:PORT` it runs in front of that pool until Ctrl-C or SIGTERM
//! (Noise on the pool hop with `--authority-key KEY`, on the miners' with
//! `--listen-noise`); `--upstream` repeated names pools in order of preference, with one
//! `--authority-key` for all or one per upstream in the same order, and the proxy fails
//! over between them ([`supervise_upstreams`], docs/proxy-failover.md); without it, its demo: a mock pool, the proxy and simulated miners
//! on loopback (`--miners N --seconds S`, `--noise` encrypts both hops), exiting 0 if
//! every count agrees. Its options ([`ProxyOptions`]) come from flags, `SV2C_…`
//! environment variables and a TOML file (`--config examples/config/proxy.toml`);
//! `sv2c-proxy --help` lists them. `--metrics 127.0.0.1:9100` serves Prometheus metrics at
//! `/metrics` and the probes `/health` and `/ready`.
//!
//! The proxy, the mock pool, the miners and the demo live in the `sv2c-roles` crate, the
//! configuration in [`config`](crate::config); this module wires them.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sv2c_buffer_pool::PoolStats;
use sv2c_roles::demo::{Demo, DemoConfig};
use sv2c_roles::listen::{AddressCap, ConnectionCount};
use sv2c_roles::proxy::{
    Backoff, Proxy, ProxyConfig, ProxyStats, Sv1Config, Sv1WorkerStats, Upstream,
    supervise_upstreams,
};
use sv2c_roles::shutdown;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::config::{ProxyMode, ProxyOptions, ProxySettings};
use crate::console::{end_progress, grouped, progress};
use crate::logging;
use crate::memory::{self, MIN_CHANNELS_CLOSED, ReleaseWhenMinersLeave};
use crate::metrics::{self, Exporter};

/// What `--help` shows after the options.
const AFTER_HELP: &str = "\
Without --upstream: the demo, an in-process mock pool, the proxy and --miners simulated \
miners on loopback for --seconds; it prints progress and a summary, and exits 0 if the \
counts of every side agree. Log lines on stderr: RUST_LOG sets the level (default info; \
debug shows every connection). On Ctrl-C or SIGTERM the proxy stops accepting, sends its \
miners Reconnect, writes what is queued and exits 0. A configuration that cannot be used \
is one line on stderr and exit code 2.";

async fn run_demo(
    miners: usize,
    seconds: f64,
    noise: bool,
    metrics_addr: Option<SocketAddr>,
) -> ExitCode {
    let config = DemoConfig {
        miners,
        duration: Duration::from_secs_f64(seconds),
        noise,
        ..DemoConfig::default()
    };
    eprintln!(
        "sv2c mining proxy demo: {miners} simulated miners → proxy (Framed + FrameCodec, {} pool slots) → mock pool, on 127.0.0.1, for {seconds} s{}",
        config.proxy.pool_slots,
        if noise {
            "; both hops encrypted (Noise NX)"
        } else {
            ""
        }
    );
    let demo = match Demo::start(config).await {
        Ok(demo) => demo,
        Err(e) => {
            eprintln!("{}: {e}", crate::name());
            return ExitCode::from(2);
        }
    };
    let exporter = Exporter::new();
    exporter.set_probe(Box::new(demo.proxy().metrics_probe()));
    let metrics_task = match start_metrics(metrics_addr, exporter, metrics::always_ready()).await {
        Ok(task) => task,
        Err(code) => return code,
    };
    // As `demo::run`: a progress line about once per second until the miners are done.
    let mut prev = demo.snapshot();
    let mut next_tick = Instant::now() + Duration::from_secs(1);
    let stop = shutdown::signal();
    tokio::pin!(stop);
    while !demo.miners_done() {
        tokio::select! {
            _ = &mut stop => break,
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        if Instant::now() >= next_tick {
            let now = demo.snapshot();
            progress(&now.progress_line(&prev));
            prev = now;
            next_tick += Duration::from_secs(1);
        }
    }
    end_progress();
    let summary = demo.finish().await;
    if let Some(task) = metrics_task {
        task.abort();
    }
    println!("{summary}");
    if summary.check().is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// Serves the metrics endpoint if one is configured; `Err` holds the exit code.
async fn start_metrics(
    addr: Option<SocketAddr>,
    exporter: Exporter,
    ready: metrics::Readiness,
) -> Result<Option<JoinHandle<()>>, ExitCode> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    match metrics::serve(addr, exporter, ready).await {
        Ok((local, task)) => {
            tracing::info!("metrics at http://{local}/metrics");
            Ok(Some(task))
        }
        Err(e) => {
            eprintln!("{}: cannot serve metrics on {addr}: {e}", crate::name());
            Err(ExitCode::from(1))
        }
    }
}

/// Runs the proxy of `mode`, a [`ProxyMode::Proxy`] (the demo is [`run_demo`]'s: exit 1).
async fn run_proxy(mode: ProxyMode, metrics_addr: Option<SocketAddr>, threads: usize) -> ExitCode {
    let ProxyMode::Proxy {
        upstreams,
        failover,
        listen,
        downstream,
        upstream_flags,
        max_connections,
        workers,
        aggregate,
        upstream_extensions,
        max_unconfirmed_shares,
        max_channels,
        max_connections_per_address,
        aggregate_hashrate,
        sv1_listen,
        sv1_pow2_difficulty,
    } = mode
    else {
        return ExitCode::from(1);
    };
    let downstream_noise = downstream.map(|(key, responder)| {
        println!("{}: authority public key {key}", crate::name());
        responder
    });
    let miners_transport = if downstream_noise.is_some() {
        "Noise NX"
    } else {
        "plain TCP"
    };
    // With port 0 the port is picked here, once: every worker listens on it, and so does
    // a worker that listens again after losing the pool.
    let (listen, held) = match pick_port(listen) {
        Ok(picked) => picked,
        Err(e) => {
            eprintln!("{}: cannot listen on {listen}: {e}", crate::name());
            return ExitCode::from(1);
        }
    };
    // The SV1 address likewise.
    let (sv1_listen, sv1_held) = match sv1_listen.map(pick_port).transpose() {
        Ok(Some((addr, held))) => (Some(addr), held),
        Ok(None) => (None, None),
        Err(e) => {
            let addr = sv1_listen.map(|a| a.to_string()).unwrap_or_default();
            eprintln!(
                "{}: cannot listen for SV1 miners on {addr}: {e}",
                crate::name()
            );
            return ExitCode::from(1);
        }
    };
    // `supervise_upstreams` sets the host, port and key of the upstream it dials.
    let config = ProxyConfig {
        log_connections: true,
        downstream_noise,
        upstream_flags,
        max_connections,
        // Workers share the listen address (the kernel spreads miners over them) and
        // the connection cap (and the process's open files).
        reuse_port: workers > 1 || held.is_some() || sv1_held.is_some(),
        connection_count: (workers > 1).then(|| ConnectionCount::for_servers(workers)),
        aggregate,
        aggregate_hashrate,
        upstream_extensions,
        max_unconfirmed_shares,
        max_channels,
        // One cap for every worker: the config's clones share its count.
        address_cap: AddressCap::new(max_connections_per_address),
        sv1: Sv1Config {
            listen: sv1_listen,
            pow2_difficulty: sv1_pow2_difficulty,
            ..Sv1Config::default()
        },
        ..ProxyConfig::default()
    };
    if upstreams.len() > 1 {
        let order: Vec<&str> = upstreams.iter().map(|u| u.address.as_str()).collect();
        tracing::info!(
            "upstreams in order of preference: {}; a silent pool is left after {:?}, a preferred one returned to after {:?}",
            order.join(", "),
            failover.silence,
            failover.hold
        );
    }
    let exporter = Exporter::new();
    // Each worker's probe (workers count separately; the printer and the metrics
    // endpoint show the sums).
    let current: Arc<Mutex<Vec<Option<Probe>>>> =
        Arc::new(Mutex::new((0..workers).map(|_| None).collect()));
    // Ready while a worker has its pool connection, naming the upstream(s) in use.
    let ready: metrics::Readiness = Arc::new(|| {
        let active = sv2c_roles::metrics::active_upstreams();
        if active.is_empty() {
            Err("no pool connection".to_owned())
        } else {
            Ok(format!("upstream {}", active.join(", ")))
        }
    });
    let metrics_task = match start_metrics(metrics_addr, exporter.clone(), ready).await {
        Ok(task) => task,
        Err(code) => return code,
    };
    // Each worker's SV1 shares per worker name, printed at exit.
    let sv1_current: Arc<Mutex<Vec<Option<Sv1Probe>>>> =
        Arc::new(Mutex::new((0..workers).map(|_| None).collect()));
    let started = Instant::now();
    // One line every 10 s with the counters (never one per share).
    let printer = tokio::spawn({
        let current = current.clone();
        async move {
            let mut ticker = tokio::time::interval(Duration::from_secs(10));
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let Some((s, b)) = sum_probes(&current.lock().unwrap()) else {
                    continue;
                };
                tracing::info!(
                    "[{:>6.0}s] {} miners | {} frames down→up, {} up→down | shares {} forwarded, {} accepted, {} rejected | pool slots {}/{} in use, high water {}, fallbacks {}",
                    started.elapsed().as_secs_f64(),
                    s.connections_open,
                    grouped(s.frames_to_upstream),
                    grouped(s.frames_to_downstream),
                    grouped(s.shares_forwarded),
                    grouped(s.shares_accepted),
                    grouped(s.shares_rejected),
                    b.in_use,
                    b.capacity,
                    b.high_water,
                    grouped(b.fallbacks()),
                );
            }
        }
    });
    // Memory given back to the OS once many miners have left, or many channels closed
    // (a flood of channels from a few connections, each at its per-connection cap).
    let releaser = tokio::spawn({
        let current = current.clone();
        async move {
            let mut release = ReleaseWhenMinersLeave::default();
            let mut release_channels = ReleaseWhenMinersLeave::with_min_left(MIN_CHANNELS_CLOSED);
            let mut watch = tokio::time::interval(Duration::from_secs(1));
            loop {
                watch.tick().await;
                let (connections, channels) = sum_probes(&current.lock().unwrap())
                    .map_or((0, 0), |(s, _)| (s.connections_open, s.channels_open));
                let by_connections = release.observe(connections);
                let by_channels = release_channels.observe(channels);
                if let Some(took) = by_connections.or(by_channels) {
                    tracing::debug!("free memory given back to the OS in {took:?}");
                }
            }
        }
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let signal = shutdown::signal();
    tokio::spawn(async move {
        signal.await;
        tracing::info!("shutting down: miners are sent Reconnect");
        let _ = stop_tx.send(true);
    });
    // Worker `k`: a proxy with its own pool connection. The pool may go away and come
    // back: the proxy redials it with backoff. On a signal it shuts down gracefully
    // (miners get Reconnect, queued frames are written).
    let worker = |k: usize| {
        let (upstreams, config, exporter, current) = (
            upstreams.clone(),
            config.clone(),
            exporter.clone(),
            current.clone(),
        );
        let sv1_current = sv1_current.clone();
        let mut stop_rx = stop_rx.clone();
        async move {
            // With several workers, each line says whose pool connection it is (each
            // worker sets up its own, and sets it up again after losing the pool).
            let who = match workers {
                1 => String::new(),
                n => format!("worker {} of {n}: ", k + 1),
            };
            let on_start = {
                let upstreams = upstreams.clone();
                move |proxy: &Proxy| {
                    let upstream = proxy.upstream();
                    // The probes first: once the line says so, scrapes and `/ready` see
                    // this pool connection.
                    exporter.set_worker_probe(k, Box::new(proxy.metrics_probe()));
                    current.lock().unwrap()[k] = Some(Box::new(proxy.probe()));
                    sv1_current.lock().unwrap()[k] = Some(Box::new(proxy.sv1_workers()));
                    tracing::info!(
                        "{who}upstream {upstream} set up ({}); miners connect to {} ({miners_transport}){}; Ctrl-C stops",
                        transport(&upstreams, &upstream),
                        proxy.local_addr(),
                        sv1_listen
                            .map(|a| format!(", SV1 miners to {a}"))
                            .unwrap_or_default()
                    );
                }
            };
            let stop = async move {
                let _ = stop_rx.wait_for(|stopped| *stopped).await;
            };
            supervise_upstreams(
                &upstreams,
                listen,
                config,
                Backoff::default(),
                failover,
                on_start,
                stop,
            )
            .await;
        }
    };
    // Workers 1.. each on a runtime of their own thread(s); worker 0 on this one.
    let mut others = Vec::new();
    for k in 1..workers {
        let work = worker(k);
        let runtime = match runtime(threads) {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("{}: cannot start worker {k}'s runtime: {e}", crate::name());
                return ExitCode::from(1);
            }
        };
        others.push(std::thread::spawn(move || runtime.block_on(work)));
    }
    worker(0).await;
    for other in others {
        let _ = other.join();
    }
    if sv1_listen.is_some() {
        print_sv1_workers(&sv1_current.lock().unwrap());
    }
    printer.abort();
    releaser.abort();
    if let Some(task) = metrics_task {
        task.abort();
    }
    ExitCode::SUCCESS
}

/// How the proxy talks to `upstream`, one of `upstreams`.
fn transport(upstreams: &[Upstream], upstream: &str) -> String {
    let authority = upstreams
        .iter()
        .find(|u| u.address == upstream)
        .and_then(|u| u.authority);
    match authority {
        Some(key) => format!("Noise, pool certificate signed by authority {key}"),
        None => "plain TCP".to_owned(),
    }
}

/// The address the workers listen on: `listen`, bound here once and let go, so that an
/// address the proxy cannot have (another program listens there) is one line at start
/// rather than a failure at every pool connection; or for port 0 a port picked now and
/// held (bound with `SO_REUSEPORT`, not listening, so it takes no miners) until the
/// returned socket is dropped; the listeners then need `SO_REUSEPORT` too.
fn pick_port(listen: SocketAddr) -> std::io::Result<(SocketAddr, Option<tokio::net::TcpSocket>)> {
    let socket = match listen {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    // As the listeners will be: a restarted proxy binds beside its old connections.
    socket.set_reuseaddr(true)?;
    let pick = listen.port() == 0 && cfg!(unix);
    #[cfg(unix)]
    if pick {
        socket.set_reuseport(true)?;
    }
    socket.bind(listen)?;
    if !pick {
        return Ok((listen, None));
    }
    Ok((socket.local_addr()?, Some(socket)))
}

/// Reads one worker's counters.
type Probe = Box<dyn Fn() -> (ProxyStats, PoolStats) + Send + Sync>;

/// Reads one worker's SV1 shares per worker name.
type Sv1Probe = Box<dyn Fn() -> Vec<(String, Sv1WorkerStats)> + Send + Sync>;

/// One line per SV1 worker name, every proxy worker's counts added up (the last
/// connection of each proxy worker; a proxy worker that lost its pool starts again).
fn print_sv1_workers(probes: &[Option<Sv1Probe>]) {
    let mut all: std::collections::BTreeMap<String, [u64; 3]> = Default::default();
    for (name, w) in probes.iter().flatten().flat_map(|probe| probe()) {
        let sum = all.entry(name).or_default();
        sum[0] += w.forwarded;
        sum[1] += w.local;
        sum[2] += w.refused;
    }
    for (name, [forwarded, local, refused]) in all {
        println!(
            "{}:   sv1 worker {name}: {forwarded} forwarded, {local} answered locally, {refused} refused",
            crate::name()
        );
    }
}

/// The workers' counters added up (`None` before any worker is set up).
fn sum_probes(probes: &[Option<Probe>]) -> Option<(ProxyStats, PoolStats)> {
    let mut samples = probes.iter().flatten().map(|probe| probe());
    let (mut s, mut b) = samples.next()?;
    for (t, c) in samples {
        s.connections_open += t.connections_open;
        s.channels_open += t.channels_open;
        s.frames_to_upstream += t.frames_to_upstream;
        s.frames_to_downstream += t.frames_to_downstream;
        s.shares_forwarded += t.shares_forwarded;
        s.shares_accepted += t.shares_accepted;
        s.shares_rejected += t.shares_rejected;
        b.in_use += c.in_use;
        b.capacity += c.capacity;
        b.high_water += c.high_water;
        b.fallback_exhausted += c.fallback_exhausted;
        b.fallback_too_large += c.fallback_too_large;
    }
    Some((s, b))
}

/// A runtime of `threads` worker threads. A multi-thread runtime even for one: tokio's
/// current-thread runtime cost 1.4x the CPU per share in the same measurement.
fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()
}

/// Runs the proxy program as `name` (in its messages and `--help`), with this process's
/// arguments and environment; returns its exit code (0 after Ctrl-C or SIGTERM, or a demo
/// whose counts agree; 2 for a configuration that cannot be used; 1 otherwise).
pub fn main(name: &'static str) -> ExitCode {
    memory::without_thread_caches();
    let about = "A Stratum V2 mining proxy in front of a pool (--upstream), or its demo";
    let settings = match crate::options(name, about, AFTER_HELP, ProxyOptions::overlay) {
        Ok(options) => options.resolve(),
        Err(exit) => return exit,
    };
    let ProxySettings {
        mode,
        threads,
        metrics,
    } = match settings {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{}: {e}", crate::name());
            return ExitCode::from(2);
        }
    };
    logging::init("info");
    // One thread by default: a worker's shares pass from each miner's task to its one
    // upstream Noise session, and on more threads those hand-offs cross cores (see
    // docs/proxy-concurrency.md for the numbers); workers, one per core by default, use
    // the other cores.
    let runtime = match runtime(threads.unwrap_or(1)) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("{}: cannot start the runtime: {e}", crate::name());
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async move {
        match mode {
            ProxyMode::Demo {
                miners,
                seconds,
                noise,
            } => run_demo(miners, seconds, noise, metrics).await,
            proxy @ ProxyMode::Proxy { .. } => {
                run_proxy(proxy, metrics, threads.unwrap_or(1)).await
            }
        }
    })
}
