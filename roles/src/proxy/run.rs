//! A running proxy ([`Proxy`]): its start on a pool connection, the move of an
//! aggregating proxy's miners to another one, its probes and its shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use sv2c_buffer_pool::{BufferPool, PoolStats};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use super::messages::Upward;
use super::shared::{Counters, ProxyConfig, ProxyError, ProxyStats, Shared, Sv1WorkerStats};
use super::upstream::{self, setup_upstream};
use super::{accept, aggregate, router};
use crate::metrics::Sample;

/// A running proxy: one upstream connection, a listener for miners.
///
/// ```no_run
/// use sv2c_roles::proxy::{Proxy, ProxyConfig};
/// use tokio::net::{TcpListener, TcpStream};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let upstream = TcpStream::connect("pool.example:3333").await?;
/// let listener = TcpListener::bind("0.0.0.0:34255").await?;
/// let config = ProxyConfig {
///     upstream_host: "pool.example".into(),
///     upstream_port: 3333,
///     // The pool's published authority key: the connection uses Noise and the pool's
///     // certificate must be signed by this key (`None`: plain TCP).
///     upstream_noise: Some("9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh".parse()?),
///     ..Default::default()
/// };
/// let proxy = Proxy::start(upstream, listener, config).await?;
/// proxy.upstream_closed().await; // runs until the pool goes away
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Proxy {
    local_addr: SocketAddr,
    pub(super) shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    upstream_done: watch::Receiver<bool>,
    accept_task: JoinHandle<()>,
    /// Where [`switch_to`](Self::switch_to) hands the router a new pool connection.
    attach: mpsc::UnboundedSender<Box<router::Attachment>>,
    router_task: JoinHandle<()>,
    writer_task: router::WriterSlot,
}

impl Proxy {
    /// Sets up the upstream connection on `upstream` (transport, with the Noise handshake
    /// if [`ProxyConfig::upstream_noise`] is set, then `SetupConnection`) and starts
    /// serving miners that connect to `listener`.
    ///
    /// # Errors
    /// The Noise handshake fails ([`ProxyError::Handshake`], e.g. the pool's certificate
    /// is not from the configured authority), the pool refuses or does not answer the
    /// proxy's `SetupConnection`, the connection fails, or the buffer pool cannot be
    /// created.
    pub async fn start<S>(
        upstream: S,
        listener: TcpListener,
        config: ProxyConfig,
    ) -> Result<Proxy, ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_with_sv1(upstream, listener, None, config).await
    }

    /// [`start`](Self::start), also serving Stratum V1 miners that connect to `sv1` (see
    /// [`sv1`](super::sv1)); they need the aggregating mode ([`ProxyConfig::aggregate`]).
    ///
    /// # Errors
    /// As [`start`](Self::start); [`ProxyError::Config`] for an SV1 listener without the
    /// aggregating mode.
    pub async fn start_with_sv1<S>(
        upstream: S,
        listener: TcpListener,
        sv1: Option<TcpListener>,
        config: ProxyConfig,
    ) -> Result<Proxy, ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        Self::start_keeping(upstream, (listener, sv1), config, false).await
    }

    /// [`start_with_sv1`](Self::start_with_sv1); with `keep` (aggregating mode), a lost
    /// pool connection leaves the miners connected until the next one
    /// ([`switch_to`](Self::switch_to)) or the shutdown.
    pub(super) async fn start_keeping<S>(
        upstream: S,
        listeners: (TcpListener, Option<TcpListener>),
        config: ProxyConfig,
        keep: bool,
    ) -> Result<Proxy, ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        if listeners.1.is_some() && !config.aggregate {
            return Err(ProxyError::Config(
                "SV1 miners are served in the aggregating mode only".into(),
            ));
        }
        let pool = BufferPool::new(config.pool_slots, config.slot_size)?;
        let mut up = upstream::transport(upstream, &pool, &config).await?;
        let local_addr = listeners.0.local_addr()?;
        let success = setup_upstream(&mut up, &pool, &config).await?;
        let (upstream_extensions, early) =
            upstream::request_extensions(&mut up, &pool, &config).await?;
        let mut up = upstream::Replay::new(up, early);
        let aggregate = if config.aggregate {
            Some(aggregate::open_upstream(&mut up, &pool, &config, &upstream_extensions).await?)
        } else {
            None
        };

        let shared = Arc::new(Shared {
            upstream_success_flags: success.flags.into(),
            upstream_extensions: upstream_extensions.into(),
            upstream_name: upstream_name(&config).into(),
            config,
            pool,
            counters: Counters::default(),
            redirect: Default::default(),
            sv1_workers: Default::default(),
            sv1_jobs: Default::default(),
        });
        let (upstream_done_tx, upstream_done) = watch::channel(false);
        let links = router::spawn(up, shared.clone(), upstream_done_tx, aggregate, keep);
        let (shutdown, shutdown_rx) = watch::channel(false);
        let accept_task = tokio::spawn(accept::accept_loop(
            listeners,
            shared.clone(),
            links.router,
            links.to_upstream,
            shutdown_rx,
        ));
        Ok(Proxy {
            local_addr,
            shared,
            shutdown,
            upstream_done,
            accept_task,
            attach: links.attach,
            router_task: links.router_task,
            writer_task: links.writer_task,
        })
    }

    /// Aggregating mode, a proxy started with miners kept: moves its miners to a new
    /// connection to the pool `config` names (`upstream_host`, `upstream_port`, the key
    /// `upstream_noise`), set up here as at the start (transport, `SetupConnection`,
    /// extensions, the proxy's extended channel); the router then re-points every miner
    /// channel to it (see the [module docs](super#miners-across-a-switch)) and leaves the
    /// current connection, if any.
    ///
    /// # Errors
    /// As [`start`](Self::start) for the new connection; the current one (if any) is
    /// kept then. [`ProxyError::Config`] if the proxy is shutting down.
    pub(super) async fn switch_to<S>(
        &self,
        upstream: S,
        config: &ProxyConfig,
    ) -> Result<(), ProxyError>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        use futures::StreamExt;
        let pool = &self.shared.pool;
        let mut up = upstream::transport(upstream, pool, config).await?;
        let success = setup_upstream(&mut up, pool, config).await?;
        let (extensions, early) = upstream::request_extensions(&mut up, pool, config).await?;
        let mut up = upstream::Replay::new(up, early);
        let aggregate = aggregate::open_upstream(&mut up, pool, config, &extensions).await?;
        let (writer, reader) = up.split::<Upward>();
        let (attached, done) = oneshot::channel();
        let attachment = router::Attachment {
            reader: Box::pin(reader),
            writer: Box::pin(writer),
            aggregate,
            upstream: upstream_name(config),
            success_flags: success.flags,
            extensions,
            attached,
        };
        let shutting_down = || ProxyError::Config("the proxy is shutting down".into());
        self.attach
            .send(Box::new(attachment))
            .map_err(|_| shutting_down())?;
        done.await.map_err(|_| shutting_down())
    }

    /// The address miners connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The proxy's counters now.
    pub fn stats(&self) -> ProxyStats {
        self.shared.counters.snapshot()
    }

    /// A probe that reads this proxy's counters and pool statistics from anywhere, for
    /// as long as it lives (e.g. in a progress printer while
    /// [`supervise`](super::supervise) runs).
    pub fn probe(&self) -> impl Fn() -> (ProxyStats, PoolStats) + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || (shared.counters.snapshot(), shared.pool.stats())
    }

    /// A probe that reads this proxy's counters for the [`metrics`](crate::metrics)
    /// endpoint, for as long as it lives.
    pub fn metrics_probe(&self) -> impl Fn() -> Sample + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || {
            let c = &shared.counters;
            let b = shared.pool.stats();
            Sample {
                connections_open: c.connections_open.load(Relaxed),
                connections_total: c.connections_accepted.load(Relaxed),
                channels_open: c.channels_open.load(Relaxed),
                shares_accepted: c.shares_accepted.load(Relaxed),
                shares_rejected: c.shares_rejected.counts(),
                frames: vec![
                    ("to_upstream", c.frames_to_upstream.load(Relaxed)),
                    ("to_downstream", c.frames_to_downstream.load(Relaxed)),
                ],
                buffer_pool: Some((b.in_use as u64, b.capacity as u64, b.fallbacks())),
                downstream_handshake_failures: c.handshake_failures.load(Relaxed),
                blocks: None,
                share_acks: shared.config.aggregate.then(|| {
                    [
                        c.shares_acknowledged.load(Relaxed),
                        c.shares_confirmed.load(Relaxed),
                        c.shares_refused_after_ack.load(Relaxed),
                        c.shares_unconfirmed.load(Relaxed),
                        c.shares_left_unconfirmed.load(Relaxed),
                    ]
                }),
                sv1_workers: match shared.sv1_workers.lock() {
                    Ok(w) => w
                        .snapshot()
                        .into_iter()
                        .map(|(name, w)| (name, [w.forwarded, w.local, w.refused]))
                        .collect(),
                    Err(_) => Vec::new(),
                },
            }
        }
    }

    /// A probe that reads this proxy's SV1 shares per worker name (fitted to 32 bytes,
    /// `proxy::sv1`), sorted by name, for as long as it lives.
    pub fn sv1_workers(
        &self,
    ) -> impl Fn() -> Vec<(String, Sv1WorkerStats)> + Send + Sync + 'static {
        let shared = self.shared.clone();
        move || {
            let workers = shared.sv1_workers.lock();
            workers.map(|w| w.snapshot()).unwrap_or_default()
        }
    }

    /// The shared buffer pool's statistics now.
    pub fn pool_stats(&self) -> PoolStats {
        self.shared.pool.stats()
    }

    /// A handle on the shared buffer pool (it stays usable after the proxy shuts down).
    pub fn buffer_pool(&self) -> BufferPool {
        self.shared.pool.clone()
    }

    /// Where the pool asked the proxy to go with `Reconnect` (its `new_host`, empty for
    /// the same host, and `new_port`, 0 for the same port), if it did: the proxy then
    /// ended the pool connection as if it had closed. [`supervise`](super::supervise)
    /// dials it next.
    pub fn redirect(&self) -> Option<(String, u16)> {
        self.shared.redirect()
    }

    /// The pool this proxy's connection is to (or was to last), `HOST:PORT` as its
    /// `SetupConnection` names it ([`ProxyConfig::upstream_host`],
    /// [`ProxyConfig::upstream_port`] of the connection's configuration; an IPv6 host in
    /// brackets). An aggregating proxy that
    /// [`supervise_upstreams`](super::supervise_upstreams) moves from pool to pool names
    /// the current one.
    pub fn upstream(&self) -> String {
        self.shared.upstream_name()
    }

    /// Resolves when the upstream connection is gone.
    pub async fn upstream_closed(&self) {
        let mut rx = self.upstream_done.clone();
        loop {
            let done = *rx.borrow_and_update();
            if done || rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Shuts down gracefully and waits until every task is gone (so every frame has been
    /// dropped and its slot returned to the pool): stops accepting, sends every miner
    /// `Reconnect` (empty host, port 0: this same endpoint, spec §3.1) behind what is
    /// queued for it and closes its connection once written, then writes what is queued
    /// for the pool. Miners and the pool get [`ProxyConfig::write_timeout`] each; what is
    /// not written by then is dropped.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.accept_task.await;
        let grace = self.shared.config.write_timeout;
        let writer_task = match self.writer_task.lock() {
            Ok(mut w) => w.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(mut writer_task) = writer_task
            && tokio::time::timeout(grace, &mut writer_task).await.is_err()
        {
            writer_task.abort();
            let _ = writer_task.await;
        }
        self.router_task.abort();
        let _ = self.router_task.await;
    }
}

/// `HOST:PORT` of the pool `config` names (`upstream_host`, `upstream_port`; an IPv6
/// host in brackets).
fn upstream_name(config: &ProxyConfig) -> String {
    let (host, port) = (&config.upstream_host, config.upstream_port);
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}
