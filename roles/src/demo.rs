//! The loopback demo: a [mock pool](crate::mock_pool), the [proxy](crate::proxy) and
//! simulated [miners](crate::miner), wired on 127.0.0.1 in one process.
//!
//! ```text
//! miner 1 ─┐
//! miner 2 ─┼─▶ proxy (FrameCodec, shared BufferPool) ─▶ mock pool (Sv2Codec<Message>)
//! miner N ─┘
//! ```
//!
//! With [`DemoConfig::noise`] both hops are encrypted (Noise NX): the mock pool and the
//! proxy each get a freshly generated authority and a certificate from it; the proxy
//! checks the pool's certificate, the miners check the proxy's.
//!
//! [`run`] starts everything, calls back once per second with a [`Snapshot`] (for the
//! progress line), and returns a [`DemoSummary`] with the counts of every side; the run
//! is correct when [`DemoSummary::check`] finds them equal. [`Demo`] gives the same in
//! steps, for tests that want to do things while it runs.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use sv2c_buffer_pool::PoolStats;
use sv2c_codec::noise::NoiseError;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::identity::{CERTIFICATE_VALIDITY, noise_server_identity};
use crate::miner::{MinerConfig, MinerError, MinerReport, run_miner};
use crate::mock_pool::{MockPool, MockPoolConfig, MockPoolStats};
use crate::proxy::{Proxy, ProxyConfig, ProxyError, ProxyStats};

/// Settings of a demo run.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Simulated miners.
    pub miners: usize,
    /// How long the miners submit shares.
    pub duration: Duration,
    /// Shares in flight per miner.
    pub window: u32,
    /// The proxy's settings (the upstream endpoint is filled in by the demo).
    pub proxy: ProxyConfig,
    /// The mock pool's settings.
    pub pool: MockPoolConfig,
    /// Encrypt both hops with Noise: the demo generates an authority for the mock pool
    /// and one for the proxy (certificates valid for [`CERTIFICATE_VALIDITY`]) and fills
    /// in [`MockPoolConfig::noise`], [`ProxyConfig::upstream_noise`],
    /// [`ProxyConfig::downstream_noise`] and the miners' [`MinerConfig::noise`].
    pub noise: bool,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            miners: 4,
            duration: Duration::from_secs(3),
            window: 256,
            proxy: ProxyConfig::default(),
            pool: MockPoolConfig::default(),
            noise: false,
        }
    }
}

/// Why the demo could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum DemoError {
    /// A socket could not be bound or connected.
    Io(io::Error),
    /// The proxy did not start.
    Proxy(ProxyError),
    /// Noise keys could not be generated.
    Noise(NoiseError),
}

impl fmt::Display for DemoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DemoError::Io(e) => write!(f, "I/O error: {e}"),
            DemoError::Proxy(e) => write!(f, "proxy: {e}"),
            DemoError::Noise(e) => write!(f, "noise keys: {e}"),
        }
    }
}

impl std::error::Error for DemoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DemoError::Io(e) => Some(e),
            DemoError::Proxy(e) => Some(e),
            DemoError::Noise(e) => Some(e),
        }
    }
}

impl From<io::Error> for DemoError {
    fn from(e: io::Error) -> Self {
        DemoError::Io(e)
    }
}

impl From<NoiseError> for DemoError {
    fn from(e: NoiseError) -> Self {
        DemoError::Noise(e)
    }
}

impl From<ProxyError> for DemoError {
    fn from(e: ProxyError) -> Self {
        DemoError::Proxy(e)
    }
}

/// Every counter at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    /// Time since the demo started.
    pub elapsed: Duration,
    /// The proxy's counters.
    pub proxy: ProxyStats,
    /// The mock pool's counters.
    pub pool: MockPoolStats,
    /// The proxy's buffer pool.
    pub buffers: PoolStats,
}

impl Snapshot {
    /// The progress line for the interval from `prev` to `self`: messages per second
    /// each way through the proxy, shares accepted, buffer pool slots.
    pub fn progress_line(&self, prev: &Snapshot) -> String {
        let dt = self
            .elapsed
            .saturating_sub(prev.elapsed)
            .as_secs_f64()
            .max(1e-9);
        let rate = |now: u64, before: u64| (now.saturating_sub(before) as f64 / dt) as u64;
        let b = &self.buffers;
        format!(
            "[{:>4.1}s] down→up {:>9} msg/s | up→down {:>7} msg/s | shares accepted {:>11} | pool slots {}/{} in use, high water {}, fallbacks {}",
            self.elapsed.as_secs_f64(),
            grouped(rate(
                self.proxy.frames_to_upstream,
                prev.proxy.frames_to_upstream
            )),
            grouped(rate(
                self.proxy.frames_to_downstream,
                prev.proxy.frames_to_downstream
            )),
            grouped(self.pool.shares_accepted),
            b.in_use,
            b.capacity,
            b.high_water,
            grouped(b.fallbacks()),
        )
    }
}

/// The counts of every side after a run.
#[derive(Debug, Clone)]
pub struct DemoSummary {
    /// How long the run took, setup and drain included.
    pub elapsed: Duration,
    /// Each miner's report (miners that failed are in `miner_errors`).
    pub miners: Vec<MinerReport>,
    /// Miners that stopped with an error.
    pub miner_errors: Vec<String>,
    /// The mock pool's counters at the end.
    pub pool: MockPoolStats,
    /// The proxy's counters at the end.
    pub proxy: ProxyStats,
    /// The proxy's buffer pool at the end of the run (before shutdown).
    pub buffers: PoolStats,
    /// Buffer pool slots still in use once the proxy has shut down (0 unless a frame
    /// leaked).
    pub buffers_in_use_after_shutdown: usize,
    /// Both hops were encrypted ([`DemoConfig::noise`]).
    pub noise: bool,
}

impl DemoSummary {
    /// Shares the miners sent.
    pub fn shares_submitted(&self) -> u64 {
        self.miners.iter().map(|m| m.shares_submitted).sum()
    }

    /// Shares the miners saw acknowledged (sum of `new_submits_accepted_count`).
    pub fn shares_acknowledged_to_miners(&self) -> u64 {
        self.miners.iter().map(|m| m.shares_accepted).sum()
    }

    /// `SubmitShares.Success` messages the miners received.
    pub fn success_messages_to_miners(&self) -> u64 {
        self.miners.iter().map(|m| m.success_messages).sum()
    }

    /// Checks that every side agrees: each share a miner sent went through the proxy, was
    /// accepted by the pool and acknowledged back to that miner; nothing was rejected or
    /// misrouted; no frame leaked. Returns the disagreements.
    ///
    /// # Errors
    /// One line per disagreement.
    pub fn check(&self) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        let submitted = self.shares_submitted();
        let mut expect = |what: &str, got: u64| {
            if got != submitted {
                problems.push(format!(
                    "{what}: {got}, but the miners submitted {submitted}"
                ));
            }
        };
        expect("shares forwarded by the proxy", self.proxy.shares_forwarded);
        expect("shares accepted by the pool", self.pool.shares_accepted);
        expect(
            "shares acknowledged by the pool",
            self.pool.shares_acknowledged,
        );
        expect(
            "acknowledgements relayed by the proxy",
            self.proxy.shares_accepted,
        );
        expect(
            "acknowledgements received by the miners",
            self.shares_acknowledged_to_miners(),
        );
        if self.success_messages_to_miners() != self.pool.success_messages {
            problems.push(format!(
                "SubmitShares.Success: the pool sent {}, the miners received {}",
                self.pool.success_messages,
                self.success_messages_to_miners()
            ));
        }
        if submitted == 0 {
            problems.push("no share was submitted".into());
        }
        for m in &self.miners {
            if m.shares_submitted == 0 {
                problems.push(format!("{}: submitted no share", m.user));
            }
            if m.shares_rejected > 0 {
                problems.push(format!("{}: {} shares rejected", m.user, m.shares_rejected));
            }
            if m.misrouted > 0 {
                problems.push(format!("{}: {} misrouted messages", m.user, m.misrouted));
            }
            if !m.complete {
                problems.push(format!("{}: not every share was answered", m.user));
            }
        }
        problems.extend(self.miner_errors.iter().cloned());
        if self.buffers_in_use_after_shutdown != 0 {
            problems.push(format!(
                "{} buffer pool slots still in use after shutdown",
                self.buffers_in_use_after_shutdown
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

impl fmt::Display for DemoSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        let g = grouped;
        writeln!(f, "summary ({:.1} s)", self.elapsed.as_secs_f64())?;
        writeln!(
            f,
            "  miners        {} miners submitted {} shares ({} shares/s); {} acknowledged in {} SubmitShares.Success; {} jobs, {} prev-hashes, {} targets received",
            self.miners.len(),
            g(self.shares_submitted()),
            g((self.shares_submitted() as f64 / secs) as u64),
            g(self.shares_acknowledged_to_miners()),
            g(self.success_messages_to_miners()),
            g(self.miners.iter().map(|m| m.jobs).sum()),
            g(self.miners.iter().map(|m| m.prev_hashes).sum()),
            g(self.miners.iter().map(|m| m.targets).sum()),
        )?;
        writeln!(
            f,
            "  proxy         {} frames down→up ({} shares, not decoded), {} frames up→down ({} shares acknowledged); {} channels opened; {} connections, {} dropped for errors",
            g(self.proxy.frames_to_upstream),
            g(self.proxy.shares_forwarded),
            g(self.proxy.frames_to_downstream),
            g(self.proxy.shares_accepted),
            self.proxy.channels_opened,
            self.proxy.connections_accepted,
            self.proxy.connections_failed,
        )?;
        writeln!(
            f,
            "  mock pool     {} shares accepted, {} rejected; {} SubmitShares.Success sent; {} jobs sent",
            g(self.pool.shares_accepted),
            g(self.pool.shares_rejected),
            g(self.pool.success_messages),
            g(self.pool.jobs_sent),
        )?;
        if self.noise {
            writeln!(
                f,
                "  noise         pool → proxy and proxy → miners encrypted (Noise NX, each certificate checked against its authority key); Noise handshakes at the pool: {}",
                self.pool.noise_handshakes,
            )?;
        }
        let b = &self.buffers;
        writeln!(
            f,
            "  buffer pool   {} slots of {} B: {} frames from slots, high water {}, fallbacks {} ({} exhausted, {} too large); {} in use after shutdown",
            b.capacity,
            b.slot_size,
            g(b.pooled),
            b.high_water,
            g(b.fallbacks()),
            g(b.fallback_exhausted),
            g(b.fallback_too_large),
            self.buffers_in_use_after_shutdown,
        )?;
        match self.check() {
            Ok(()) => write!(
                f,
                "  result        OK: {} shares submitted = forwarded = accepted = acknowledged",
                g(self.shares_submitted())
            ),
            Err(problems) => {
                write!(f, "  result        FAILED")?;
                for p in problems {
                    write!(f, "\n    {p}")?;
                }
                Ok(())
            }
        }
    }
}

/// A demo in progress.
#[derive(Debug)]
pub struct Demo {
    started: Instant,
    pool: MockPool,
    proxy: Proxy,
    miners: Vec<JoinHandle<Result<MinerReport, MinerError>>>,
    noise: bool,
}

impl Demo {
    /// Starts the mock pool, the proxy and the miners on loopback.
    ///
    /// # Errors
    /// A socket cannot be bound or connected, or the proxy does not start.
    pub async fn start(config: DemoConfig) -> Result<Demo, DemoError> {
        let started = Instant::now();
        let mut pool_config = config.pool.clone();
        let mut proxy_config = config.proxy.clone();
        let mut miner_noise = None;
        if config.noise {
            let (pool_authority, pool_responder) = noise_server_identity(CERTIFICATE_VALIDITY)?;
            let (proxy_authority, proxy_responder) = noise_server_identity(CERTIFICATE_VALIDITY)?;
            tracing::info!(
                "noise: pool authority {pool_authority}, proxy authority {proxy_authority}"
            );
            pool_config.noise = Some(pool_responder);
            proxy_config.upstream_noise = Some(pool_authority);
            proxy_config.downstream_noise = Some(proxy_responder);
            miner_noise = Some(proxy_authority);
        }
        let pool = MockPool::bind("127.0.0.1:0", pool_config).await?;
        let pool_addr = pool.local_addr();
        let upstream = TcpStream::connect(pool_addr).await?;
        upstream.set_nodelay(true)?;
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let proxy_config = ProxyConfig {
            upstream_host: pool_addr.ip().to_string(),
            upstream_port: pool_addr.port(),
            // At debug level (`RUST_LOG=debug`).
            log_connections: true,
            ..proxy_config
        };
        let proxy = Proxy::start(upstream, listener, proxy_config).await?;
        let proxy_addr = proxy.local_addr();
        let miners = (1..=config.miners)
            .map(|i| {
                let miner_config = MinerConfig {
                    user: format!("miner-{i}"),
                    duration: config.duration,
                    window: config.window,
                    noise: miner_noise,
                    ..MinerConfig::default()
                };
                tokio::spawn(async move {
                    let tcp = TcpStream::connect(proxy_addr)
                        .await
                        .map_err(|e| MinerError::Codec(e.into()))?;
                    let _ = tcp.set_nodelay(true);
                    run_miner(tcp, miner_config).await
                })
            })
            .collect();
        Ok(Demo {
            started,
            pool,
            proxy,
            miners,
            noise: config.noise,
        })
    }

    /// The proxy's address (where miners connect).
    pub fn proxy_addr(&self) -> SocketAddr {
        self.proxy.local_addr()
    }

    /// The mock pool's address.
    pub fn pool_addr(&self) -> SocketAddr {
        self.pool.local_addr()
    }

    /// The proxy under test (e.g. for its [`metrics_probe`](Proxy::metrics_probe)).
    pub fn proxy(&self) -> &Proxy {
        &self.proxy
    }

    /// Every counter now.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            elapsed: self.started.elapsed(),
            proxy: self.proxy.stats(),
            pool: self.pool.stats(),
            buffers: self.proxy.pool_stats(),
        }
    }

    /// Whether every miner has finished.
    pub fn miners_done(&self) -> bool {
        self.miners.iter().all(JoinHandle::is_finished)
    }

    /// Waits for the miners, shuts the proxy and the pool down, and returns the counts.
    pub async fn finish(self) -> DemoSummary {
        let mut miners = Vec::new();
        let mut miner_errors = Vec::new();
        for (i, handle) in self.miners.into_iter().enumerate() {
            match handle.await {
                Ok(Ok(report)) => miners.push(report),
                Ok(Err(e)) => miner_errors.push(format!("miner-{}: {e}", i + 1)),
                Err(e) => miner_errors.push(format!("miner-{}: {e}", i + 1)),
            }
        }
        let elapsed = self.started.elapsed();
        let proxy = self.proxy.stats();
        let buffers = self.proxy.pool_stats();
        let pool_stats = self.pool.stats();
        // A handle on the buffer pool outlives the proxy: every slot should be back.
        let buffer_pool = self.proxy.buffer_pool();
        self.proxy.shutdown().await;
        self.pool.shutdown().await;
        DemoSummary {
            elapsed,
            miners,
            miner_errors,
            pool: pool_stats,
            proxy,
            buffers,
            buffers_in_use_after_shutdown: buffer_pool.stats().in_use,
            noise: self.noise,
        }
    }
}

/// Runs a whole demo: starts it, calls `on_progress(previous, now)` about once per second
/// while the miners work, and returns the summary.
///
/// # Errors
/// The demo could not start.
pub async fn run(
    config: DemoConfig,
    mut on_progress: impl FnMut(&Snapshot, &Snapshot),
) -> Result<DemoSummary, DemoError> {
    let demo = Demo::start(config).await?;
    let mut prev = demo.snapshot();
    let mut next_tick = Instant::now() + Duration::from_secs(1);
    while !demo.miners_done() {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if Instant::now() >= next_tick {
            let now = demo.snapshot();
            on_progress(&prev, &now);
            prev = now;
            next_tick += Duration::from_secs(1);
        }
    }
    Ok(demo.finish().await)
}

/// `1234567` as `1 234 567` (thin grouping that reads the same in every locale): the
/// numbers of the demo's progress line and report.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn groups_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1 000");
        assert_eq!(grouped(1_234_567), "1 234 567");
        assert_eq!(grouped(u64::MAX), "18 446 744 073 709 551 615");
    }
}
