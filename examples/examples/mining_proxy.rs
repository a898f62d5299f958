//! `mining_proxy`: a Stratum V2 mining proxy built on `Framed` and the sv2c frame codec.
//!
//! ```text
//! mining_proxy [--miners N] [--seconds S] [--noise]
//!                                                  the demo: mock pool, proxy and N
//!                                                  simulated miners on loopback (default
//!                                                  4 miners, 3 s; --noise encrypts both
//!                                                  hops); exit 0 if every count agrees
//! mining_proxy --upstream HOST:PORT [--listen HOST:PORT] [--authority-key KEY]
//!              [--listen-noise] [--authority-secret-file F] [--upstream-flags N]
//!                                                  the proxy alone, in front of a real pool
//!                                                  (Noise with the pool's authority key
//!                                                  KEY, else plain TCP; miners over Noise
//!                                                  with --listen-noise), until Ctrl-C
//! ```
//!
//! From the workspace root: `cargo run --release --example mining_proxy [-- --noise]`.
//!
//! The proxy, the mock pool, the miners and the demo live in the `sv2c-roles` crate
//! (`roles/src/`); this file only reads the arguments.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sv2c_buffer_pool::PoolStats;
use sv2c_codec::noise::AuthorityPublicKey;
use sv2c_roles::console::{self, end_progress, grouped, progress};
use sv2c_roles::demo::{self, DemoConfig, Snapshot};
use sv2c_roles::identity;
use sv2c_roles::proxy::{
    Backoff, Proxy, ProxyConfig, ProxyStats, REQUIRES_VERSION_ROLLING, supervise,
};
use tokio::time::Instant;

/// Validity of the certificate of a proxy started with `--listen-noise` (a day; restart
/// to renew).
const IDENTITY_VALIDITY: Duration = Duration::from_secs(24 * 3600);

const USAGE: &str = "usage:
  mining_proxy [--miners N] [--seconds S] [--noise] [--threads N]
      demo: an in-process mock pool, the proxy and N simulated miners on loopback
      (default 4 miners, 3 seconds); prints progress and a summary, exits 0 if the
      counts of every side agree. --noise: both hops use Noise NX, with an authority
      generated for the pool and one for the proxy
  mining_proxy --upstream HOST:PORT [--listen HOST:PORT] [--authority-key KEY]
               [--listen-noise] [--authority-secret-file FILE] [--upstream-flags N]
      run the proxy in front of a real pool until Ctrl-C; miners connect to --listen
      (default 127.0.0.1:34255, plain TCP). With --authority-key (the pool's authority
      public key, a base58check string) the pool connection uses Noise NX and the
      pool's certificate must be signed by KEY; without it, plain TCP.
      --listen-noise: miners must connect with Noise NX; the proxy's authority secret is
      read from FILE (64 hex digits) or generated, and its public key is printed.
      --upstream-flags: SetupConnection flags toward the pool (default 0x4,
      REQUIRES_VERSION_ROLLING; never set 0x1 when miners open extended channels).
      If the pool goes away, miners are sent Reconnect and the proxy redials the pool
      with backoff (100 ms doubling to 10 s) until it answers.
  --threads N (either mode): tokio runtime worker threads (default: one per core)";

enum Mode {
    Demo {
        miners: usize,
        seconds: f64,
        noise: bool,
    },
    Proxy {
        upstream: String,
        listen: String,
        authority: Option<AuthorityPublicKey>,
        listen_noise: bool,
        secret_file: Option<PathBuf>,
        upstream_flags: u32,
    },
    Help,
}

fn parse(args: &[String]) -> Result<Mode, String> {
    let mut miners = 4usize;
    let mut seconds = 3.0f64;
    let mut upstream = None;
    let mut listen = None;
    let mut noise = false;
    let mut authority = None;
    let mut listen_noise = false;
    let mut secret_file = None;
    let mut upstream_flags = REQUIRES_VERSION_ROLLING;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "-h" | "--help" => return Ok(Mode::Help),
            "--miners" => {
                miners = value("--miners")?
                    .parse()
                    .ok()
                    .filter(|&n| (1..=10_000).contains(&n))
                    .ok_or("--miners takes a number from 1 to 10000")?;
            }
            "--seconds" => {
                seconds = value("--seconds")?
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
                    .ok_or("--seconds takes a positive number of seconds")?;
            }
            "--upstream" => upstream = Some(value("--upstream")?),
            "--listen" => listen = Some(value("--listen")?),
            "--noise" => noise = true,
            "--listen-noise" => listen_noise = true,
            "--authority-secret-file" => {
                secret_file = Some(PathBuf::from(value("--authority-secret-file")?));
            }
            "--upstream-flags" => {
                let v = value("--upstream-flags")?;
                let parsed = match v.strip_prefix("0x") {
                    Some(hex) => u32::from_str_radix(hex, 16),
                    None => v.parse(),
                };
                upstream_flags =
                    parsed.map_err(|_| format!("--upstream-flags {v:?}: not a number"))?;
            }
            "--authority-key" => {
                let key = value("--authority-key")?;
                authority = Some(
                    key.parse::<AuthorityPublicKey>()
                        .map_err(|e| format!("--authority-key {key:?}: {e}"))?,
                );
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    match (upstream, listen) {
        (Some(_), _) if noise && authority.is_none() => Err(
            "--noise with --upstream needs the pool's authority key, to check that the pool \
             is the one it claims to be: add --authority-key KEY (the base58check public key \
             the pool operator publishes)"
                .into(),
        ),
        (Some(upstream), listen) => Ok(Mode::Proxy {
            upstream,
            listen: listen.unwrap_or_else(|| "127.0.0.1:34255".into()),
            authority,
            listen_noise,
            secret_file,
            upstream_flags,
        }),
        (None, _) if listen_noise || secret_file.is_some() => {
            Err("--listen-noise and --authority-secret-file need --upstream".into())
        }
        (None, Some(_)) => Err("--listen needs --upstream".into()),
        (None, None) if authority.is_some() => Err(
            "--authority-key needs --upstream (the demo makes its own keys: use --noise)".into(),
        ),
        (None, None) => Ok(Mode::Demo {
            miners,
            seconds,
            noise,
        }),
    }
}

async fn run_demo(miners: usize, seconds: f64, noise: bool) -> ExitCode {
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
    let result = demo::run(config, |prev: &Snapshot, now: &Snapshot| {
        progress(&now.progress_line(prev));
    })
    .await;
    end_progress();
    match result {
        Ok(summary) => {
            println!("{summary}");
            if summary.check().is_ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("mining_proxy: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run_proxy(
    upstream: &str,
    listen: &str,
    authority: Option<AuthorityPublicKey>,
    listen_noise: bool,
    secret_file: Option<PathBuf>,
    upstream_flags: u32,
) -> ExitCode {
    let downstream_noise = if listen_noise || secret_file.is_some() {
        match identity::load_or_generate_identity(secret_file.as_deref(), IDENTITY_VALIDITY) {
            Ok((key, responder)) => {
                println!("mining_proxy: authority public key {key}");
                Some(responder)
            }
            Err(e) => {
                eprintln!("mining_proxy: {e}");
                return ExitCode::from(2);
            }
        }
    } else {
        None
    };
    let miners_transport = if downstream_noise.is_some() {
        "Noise NX"
    } else {
        "plain TCP"
    };
    let Some((host, port)) = upstream
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
    else {
        eprintln!("mining_proxy: --upstream takes HOST:PORT\n{USAGE}");
        return ExitCode::from(2);
    };
    let listen: SocketAddr = match listen.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mining_proxy: --listen {listen:?}: {e}");
            return ExitCode::from(2);
        }
    };
    let config = ProxyConfig {
        upstream_host: host.to_owned(),
        upstream_port: port,
        log_connections: true,
        upstream_noise: authority,
        downstream_noise,
        upstream_flags,
        ..ProxyConfig::default()
    };
    let transport = match authority {
        Some(key) => format!("Noise, pool certificate signed by authority {key}"),
        None => "plain TCP".to_owned(),
    };
    type Probe = Box<dyn Fn() -> (ProxyStats, PoolStats) + Send + Sync>;
    let current: Arc<Mutex<Option<Probe>>> = Arc::default();
    let on_start = {
        let current = current.clone();
        move |proxy: &Proxy| {
            eprintln!(
                "mining_proxy: upstream {upstream} set up ({transport}); miners connect to {} ({miners_transport}); Ctrl-C stops",
                proxy.local_addr()
            );
            *current.lock().unwrap() = Some(Box::new(proxy.probe()));
        }
    };
    let started = Instant::now();
    let printer = tokio::spawn({
        let current = current.clone();
        async move {
            let mut ticker = tokio::time::interval(Duration::from_secs(5));
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let Some((s, b)) = current.lock().unwrap().as_ref().map(|probe| probe()) else {
                    continue;
                };
                progress(&format!(
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
                ));
            }
        }
    });
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    // The pool may go away and come back: the proxy redials it with backoff.
    supervise(upstream, listen, config, Backoff::default(), on_start, stop).await;
    printer.abort();
    console::end_progress();
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `--threads N`: runtime worker threads (default: one per core).
    let mut threads = None;
    if let Some(i) = args.iter().position(|a| a == "--threads") {
        let n = args.get(i + 1).and_then(|v| v.parse::<usize>().ok());
        match n.filter(|n| (1..=256).contains(n)) {
            Some(n) => threads = Some(n),
            None => {
                eprintln!("mining_proxy: --threads takes a number from 1 to 256\n{USAGE}");
                return ExitCode::from(2);
            }
        }
        args.drain(i..i + 2);
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    match builder.enable_all().build() {
        Ok(runtime) => runtime.block_on(run(args)),
        Err(e) => {
            eprintln!("mining_proxy: cannot start the runtime: {e}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: Vec<String>) -> ExitCode {
    match parse(&args) {
        Ok(Mode::Help) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Ok(Mode::Demo {
            miners,
            seconds,
            noise,
        }) => run_demo(miners, seconds, noise).await,
        Ok(Mode::Proxy {
            upstream,
            listen,
            authority,
            listen_noise,
            secret_file,
            upstream_flags,
        }) => {
            run_proxy(
                &upstream,
                &listen,
                authority,
                listen_noise,
                secret_file,
                upstream_flags,
            )
            .await
        }
        Err(e) => {
            eprintln!("mining_proxy: {e}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}
