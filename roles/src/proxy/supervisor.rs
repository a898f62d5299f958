//! The supervisor: the pool connection redialled, failover between ordered upstreams
//! and the return to a preferred one.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use super::run::Proxy;
use super::shared::{ProxyConfig, ProxyError, ProxyStats};
use super::upstream::{self, Upstream, endpoint};
use crate::metrics::{
    UPSTREAM_HANDSHAKE_FAILURES, UPSTREAM_RECONNECTS, UPSTREAM_SWITCHES, upstream_active,
    upstream_configured,
};

/// How [`supervise`] redials a pool that went away.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    /// The first wait after a failed or lost connection.
    pub initial: Duration,
    /// The wait doubles after each failure up to this.
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(10),
        }
    }
}

/// When [`supervise_upstreams`] leaves a pool for the next one, and when it comes back
/// to a more preferred one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failover {
    /// With more than one upstream: a pool that owes the proxy answers (shares sent to it
    /// and not answered) and sends nothing for this long is left as a lost one is.
    pub silence: Duration,
    /// A more preferred pool is returned to once probes of it (a dial, the Noise
    /// handshake if it has a key, and `SetupConnection`, every quarter of this, from 100
    /// ms to 5 s apart) have succeeded for this long with none failing in between.
    pub hold: Duration,
}

impl Default for Failover {
    fn default() -> Self {
        Failover {
            silence: Duration::from_secs(5),
            hold: Duration::from_secs(30),
        }
    }
}

/// Runs a proxy that outlives its pool: connects to `upstream` and serves miners on
/// `listen`; [`supervise_upstreams`] with that one upstream (its authority key
/// [`ProxyConfig::upstream_noise`]).
pub async fn supervise(
    upstream: &str,
    listen: SocketAddr,
    config: ProxyConfig,
    backoff: Backoff,
    on_start: impl FnMut(&Proxy),
    stop: impl Future<Output = ()>,
) {
    let upstreams = [Upstream {
        address: upstream.to_owned(),
        authority: config.upstream_noise,
    }];
    supervise_upstreams(
        &upstreams,
        listen,
        config,
        backoff,
        Failover::default(),
        on_start,
        stop,
    )
    .await;
}

/// Why [`supervise_upstreams`] ended a pool connection.
enum Ended {
    /// The pool closed it, failed, stopped reading, or sent `Reconnect`.
    Lost,
    /// The pool owed an answer past [`Failover::silence`].
    Silent,
    /// The more preferred upstream of this index answered for [`Failover::hold`].
    Return(usize),
}

/// Runs a proxy that outlives its pools: connects to the first of `upstreams` (in order
/// of preference) that answers and serves miners on `listen`. When that pool goes away,
/// the proxy dials the next upstream at once (after the last, the first); once a whole
/// round has failed it waits with exponential [`Backoff`] and starts again from the
/// first. `on_start` sees the proxy each time it is set up on a pool; its
/// [`Proxy::upstream`] names the pool. Returns when `stop` completes (after shutting the
/// current proxy down). With no upstream it returns at once.
///
/// What miners see on a switch depends on the mode (the [module
/// docs](super#miners-across-a-switch) have the messages):
///
/// * **Aggregating mode ([`ProxyConfig::aggregate`]) with several upstreams**: one
///   [`Proxy`] serves for as long as some pool answers. Its listener, miner connections
///   and channels stay; the new pool connection is set up beside them (transport,
///   `SetupConnection`, extensions, the proxy's extended channel) and handed to the
///   router, which moves every miner channel to it (`SetExtranoncePrefix`, `SetTarget`,
///   then the new pool's jobs) and leaves the old connection. Between the loss of a pool
///   and the next connection, miners stay connected and their shares are answered
///   `stale-share`. Only when a whole round of upstreams has failed are the miners told
///   to `Reconnect` and the proxy shut down (a new one starts with the next pool that
///   answers). Miners do not start over because the proxy serves their channels itself:
///   their channel ids and sub-prefixes are the proxy's, not the pool's, so only the
///   pool's prefix, target and jobs change, and those are what the router sends them.
/// * **Otherwise** (forwarding mode, or a single upstream): every miner is told to
///   `Reconnect` (to the proxy, same address) and disconnected, the proxy stops
///   listening, and it listens again once the next pool answers; the miners,
///   reconnecting, get fresh channels and work. In forwarding mode a miner's channel is
///   the pool's own, with the pool's channel id, prefix and jobs: it cannot outlive the
///   pool connection.
///
/// A pool's `Reconnect` ([`Proxy::redirect`]) is followed: the proxy dials the endpoint it
/// names after [`Backoff::initial`] (an empty host or a port of 0 keeping the current
/// one; the pool's authority key is kept), and from then on redials that one, until a
/// dial there fails: then it is back to the configured upstream it came from.
///
/// The pool is gone when it closes the connection, when a write to it does not finish
/// within [`ProxyConfig::write_timeout`] (it stopped reading), or when the connection
/// goes silent: keep-alive probes after 10 s without traffic, and on Linux at most 30 s
/// of data the pool has not acknowledged (`TCP_USER_TIMEOUT`), so that a pool that
/// vanished without closing is noticed in well under a minute. With more than one
/// upstream, a pool that owes answers and says nothing for [`Failover::silence`] is left
/// too (a stopped process whose kernel still acknowledges the bytes).
///
/// While the proxy is on an upstream other than the first, it probes the more preferred
/// ones; once one has answered every probe for [`Failover::hold`], the proxy moves to
/// that one as above (aggregating: miners kept, moved once the new connection is set up;
/// forwarding: miners get `Reconnect`). The metrics show the upstream in use
/// ([`metrics::upstream_active`](crate::metrics::upstream_active)) and count the switches
/// ([`metrics::UPSTREAM_SWITCHES`](crate::metrics::UPSTREAM_SWITCHES)).
pub async fn supervise_upstreams(
    upstreams: &[Upstream],
    listen: SocketAddr,
    config: ProxyConfig,
    backoff: Backoff,
    failover: Failover,
    mut on_start: impl FnMut(&Proxy),
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    if upstreams.is_empty() {
        return;
    }
    for u in upstreams {
        upstream_configured(&u.address);
    }
    let mut s = Supervisor::new(upstreams, listen, config, backoff, failover);
    loop {
        let upstream = s.next_upstream();
        let started = tokio::select! {
            _ = &mut stop => None,
            started = s.dial(&upstream) => Some(started),
        };
        let Some(started) = started else {
            return s.shut_kept().await;
        };
        let pause = match started.map(|new| new.or_else(|| s.kept.take())) {
            Ok(None) => continue,
            Ok(Some(proxy)) => {
                s.on_started(&upstream);
                on_start(&proxy);
                let Some(ended) = s.until_ended(&proxy, stop.as_mut()).await else {
                    proxy.shutdown().await;
                    upstream_active(&upstream, false);
                    return;
                };
                upstream_active(&upstream, false);
                let pause = s.on_ended(ended, &upstream, proxy.redirect());
                s.leave(proxy).await;
                pause
            }
            Err(e) => s.on_failed(e, &upstream).await,
        };
        if !s.pause(pause, stop.as_mut()).await {
            return;
        }
    }
}

/// What [`supervise_upstreams`] keeps from one pool connection to the next.
struct Supervisor<'a> {
    upstreams: &'a [Upstream],
    listen: SocketAddr,
    /// The configuration of the pool connection dialled next.
    config: ProxyConfig,
    backoff: Backoff,
    failover: Failover,
    /// Aggregating in front of several pools: one proxy, its miners moved from pool to
    /// pool (`kept` holds it between two pool connections).
    keep: bool,
    kept: Option<Proxy>,
    /// What miners get when a pool connection ends, for the logs.
    miners_then: &'static str,
    /// The configured upstream dialled next, and where a pool's `Reconnect` sent the
    /// proxy instead (until a dial there fails).
    index: usize,
    redirect: Option<String>,
    /// Configured upstreams that failed since the last one that answered.
    failed: usize,
    /// The wait after the next failed round.
    wait: Duration,
    /// Whether a pool connection was set up and lost (the next one is a reconnect).
    lost: bool,
    /// The upstream of the last pool connection set up.
    previous: Option<String>,
}

impl<'a> Supervisor<'a> {
    fn new(
        upstreams: &'a [Upstream],
        listen: SocketAddr,
        config: ProxyConfig,
        backoff: Backoff,
        failover: Failover,
    ) -> Self {
        let keep = config.aggregate && upstreams.len() > 1;
        Supervisor {
            upstreams,
            listen,
            config,
            backoff,
            failover,
            keep,
            kept: None,
            miners_then: match keep {
                true => "miners stay connected",
                false => "miners told to reconnect",
            },
            index: 0,
            redirect: None,
            failed: 0,
            wait: backoff.initial,
            lost: false,
            previous: None,
        }
    }

    /// The upstream dialled next (`HOST:PORT`), with [`config`](Self::config) set for it.
    fn next_upstream(&mut self) -> String {
        let upstream = self
            .redirect
            .clone()
            .unwrap_or_else(|| self.upstreams[self.index].address.clone());
        if let Some((host, port)) = endpoint(&upstream) {
            (self.config.upstream_host, self.config.upstream_port) = (host, port);
        }
        self.config.upstream_noise = self.upstreams[self.index].authority;
        upstream
    }

    /// Dials `upstream` and sets the pool connection up: the kept proxy moves its miners
    /// to it (`None`), or a new proxy starts on it.
    async fn dial(&self, upstream: &str) -> Result<Option<Proxy>, ProxyError> {
        let tcp = tokio::net::TcpStream::connect(upstream).await?;
        let _ = tcp.set_nodelay(true);
        watch_pool(&tcp)?;
        if let Some(proxy) = &self.kept {
            // The running proxy moves its miners to this connection.
            return proxy.switch_to(tcp, &self.config).await.map(|()| None);
        }
        let listener = self.bind(self.listen).await?;
        let sv1 = match self.config.sv1.listen {
            Some(addr) => Some(self.bind(addr).await?),
            None => None,
        };
        Proxy::start_keeping(tcp, (listener, sv1), self.config.clone(), self.keep)
            .await
            .map(Some)
    }

    /// A listener of the proxy on `addr`; its error names the address (it is the proxy's
    /// own, not the pool's, though [`on_failed`](Self::on_failed) logs it with the
    /// upstream dialled).
    async fn bind(&self, addr: SocketAddr) -> io::Result<tokio::net::TcpListener> {
        crate::listen::bind_with(addr, self.config.reuse_port)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))
    }

    /// A pool connection to `upstream` is set up: counted, and the round starts over.
    fn on_started(&mut self, upstream: &str) {
        if self.lost {
            UPSTREAM_RECONNECTS.fetch_add(1, Relaxed);
        }
        if self.previous.as_ref().is_some_and(|p| p != upstream) {
            UPSTREAM_SWITCHES.fetch_add(1, Relaxed);
        }
        self.previous = Some(upstream.to_owned());
        (self.wait, self.failed) = (self.backoff.initial, 0);
        upstream_active(upstream, true);
    }

    /// Resolves when `proxy`'s pool connection ends, and why; `None` if `stop` completes
    /// first.
    async fn until_ended<F: Future<Output = ()>>(
        &self,
        proxy: &Proxy,
        stop: Pin<&mut F>,
    ) -> Option<Ended> {
        let preferred = &self.upstreams[..self.index];
        let several = self.upstreams.len() > 1;
        let (silence, hold) = (self.failover.silence, self.failover.hold);
        tokio::select! {
            _ = stop => None,
            _ = proxy.upstream_closed() => Some(Ended::Lost),
            _ = pool_silent(proxy, silence), if several => Some(Ended::Silent),
            j = preferred_back(preferred, &self.config, hold), if !preferred.is_empty() => {
                Some(Ended::Return(j))
            }
        }
    }

    /// The pool connection to `upstream` ended as `ended` (`redirected_to`: where its
    /// `Reconnect` pointed, if it sent one): the upstream dialled next is chosen; returns
    /// how long to wait before that dial.
    fn on_ended(
        &mut self,
        ended: Ended,
        upstream: &str,
        redirected_to: Option<(String, u16)>,
    ) -> Duration {
        let miners_then = self.miners_then;
        let mut pause = Duration::ZERO;
        self.lost = true;
        match (&ended, &redirected_to) {
            (Ended::Lost, Some((host, port))) => {
                let to = redirected(upstream, host, *port);
                tracing::warn!("upstream {upstream} redirects to {to}; {miners_then}");
                self.redirect = Some(to);
                // A redirect is not a loss (the reconnects metric counts losses).
                self.lost = false;
                pause = self.backoff.initial;
            }
            (Ended::Lost | Ended::Silent, _) => {
                match ended {
                    Ended::Silent => tracing::warn!(
                        "upstream {upstream} silent for {:?} with answers owed; {miners_then}",
                        self.failover.silence
                    ),
                    _ => tracing::warn!("upstream {upstream} lost; {miners_then}"),
                }
                self.redirect = None;
                if self.upstreams.len() > 1 {
                    // This one counts as failed in the round: the others next.
                    (self.index, self.failed) = ((self.index + 1) % self.upstreams.len(), 1);
                } else {
                    pause = self.wait;
                }
            }
            (Ended::Return(j), _) => {
                tracing::warn!(
                    "upstream {} answered for {:?}: back to it from {upstream}; {miners_then}",
                    self.upstreams[*j].address,
                    self.failover.hold
                );
                (self.index, self.redirect, self.lost) = (*j, None, false);
            }
        }
        pause
    }

    /// The proxy of a pool connection that ended: kept for the next one, or shut down.
    async fn leave(&mut self, proxy: Proxy) {
        if self.keep {
            // Its miners wait for the next pool connection (a silent or
            // preferred-over pool serves them until then).
            self.kept = Some(proxy);
        } else {
            // The shutdown closes the listener first, then gives the miners'
            // tasks the write timeout to write their Reconnect (the router's, or
            // the shutdown's own while the pool is still connected) and close:
            // miners reconnecting meanwhile are refused until the next pool's
            // proxy listens, rather than holding this one open.
            proxy.shutdown().await;
        }
    }

    /// A dial or setup of `upstream` failed with `e`: back from a redirect to the
    /// configured upstream, or on to the next one; after a whole round, the kept proxy
    /// (if any) is shut down. Returns how long to wait before the next dial.
    async fn on_failed(&mut self, e: ProxyError, upstream: &str) -> Duration {
        if matches!(e, ProxyError::Handshake(_)) {
            UPSTREAM_HANDSHAKE_FAILURES.fetch_add(1, Relaxed);
        }
        if self.redirect.take().is_some() {
            tracing::warn!(
                "upstream {upstream}: {e}; back to the configured upstream {}",
                self.upstreams[self.index].address
            );
            return self.wait;
        }
        self.failed += 1;
        self.index = (self.index + 1) % self.upstreams.len();
        if self.failed < self.upstreams.len() {
            tracing::warn!(
                "upstream {upstream}: {e}; trying {}",
                self.upstreams[self.index].address
            );
            return Duration::ZERO;
        }
        // A whole round failed: wait, then from the first again.
        (self.index, self.failed) = (0, 0);
        let wait = self.wait;
        tracing::warn!("upstream {upstream}: {e}; retrying in {wait:?}");
        if let Some(proxy) = self.kept.take() {
            // No pool to move the miners to: they are told to reconnect.
            tracing::warn!("no upstream answers: miners told to reconnect");
            proxy.shutdown().await;
        }
        wait
    }

    /// Waits `pause` before the next dial (a wait of the backoff doubles it); `false` if
    /// `stop` completes first (the kept proxy, if any, is then shut down).
    async fn pause<F: Future<Output = ()>>(&mut self, pause: Duration, stop: Pin<&mut F>) -> bool {
        if pause.is_zero() {
            return true;
        }
        tokio::select! {
            _ = stop => {
                self.shut_kept().await;
                return false;
            }
            _ = tokio::time::sleep(pause) => {}
        }
        if pause == self.wait {
            self.wait = (self.wait * 2).min(self.backoff.max);
        }
        true
    }

    /// Shuts the proxy kept between two pool connections down, if there is one.
    async fn shut_kept(&mut self) {
        if let Some(proxy) = self.kept.take() {
            proxy.shutdown().await;
        }
    }
}

/// Resolves once `proxy`'s pool has owed answers for `silence` without sending a frame:
/// shares sent to it and not answered (forwarded beyond those answered; in aggregating
/// mode, [`ProxyStats::shares_unconfirmed`]), and no frame from it since they were seen
/// owed.
async fn pool_silent(proxy: &Proxy, silence: Duration) {
    let aggregate = proxy.shared.config.aggregate;
    let owed = |s: &ProxyStats| match aggregate {
        true => s.shares_unconfirmed > 0,
        false => s.shares_forwarded > s.shares_accepted.saturating_add(s.shares_rejected),
    };
    let tick = (silence / 10).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut heard = proxy.stats().frames_from_upstream;
    let mut owed_since: Option<tokio::time::Instant> = None;
    loop {
        tokio::time::sleep(tick).await;
        let now = proxy.stats();
        if now.frames_from_upstream != heard || !owed(&now) {
            heard = now.frames_from_upstream;
            owed_since = None;
        } else if owed_since
            .get_or_insert_with(tokio::time::Instant::now)
            .elapsed()
            >= silence
        {
            return;
        }
    }
}

/// Probes `preferred` (in order) until one has answered every probe for `hold`; resolves
/// to its index.
async fn preferred_back(preferred: &[Upstream], config: &ProxyConfig, hold: Duration) -> usize {
    let every = (hold / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
    let mut answering_since: Vec<Option<tokio::time::Instant>> = vec![None; preferred.len()];
    loop {
        tokio::time::sleep(every).await;
        for (j, u) in preferred.iter().enumerate() {
            match upstream::probe(u, config).await {
                Ok(()) => {
                    let now = tokio::time::Instant::now();
                    let since = *answering_since[j].get_or_insert(now);
                    tracing::debug!("upstream {} answered a probe", u.address);
                    if now - since >= hold {
                        return j;
                    }
                }
                Err(e) => {
                    tracing::debug!("upstream {}: probe failed: {e}", u.address);
                    answering_since[j] = None;
                }
            }
        }
    }
}

/// `HOST:PORT` of a pool's `Reconnect` from the endpoint `current` (`HOST:PORT`): an
/// empty `host` keeps the current host, a `port` of 0 the current port; an IPv6 address
/// is bracketed.
fn redirected(current: &str, host: &str, port: u16) -> String {
    let (current_host, current_port) = current.rsplit_once(':').unwrap_or((current, ""));
    let host = match host {
        "" => current_host.to_owned(),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        h => h.to_owned(),
    };
    match port {
        0 => format!("{host}:{current_port}"),
        p => format!("{host}:{p}"),
    }
}

/// How long the pool connection may hold data the pool has not acknowledged (on Linux),
/// or go unanswered to keep-alive probes, before the pool is taken as gone: one that
/// vanished without closing (a power loss, a path that dropped) is noticed within about
/// this long, where a write to it may otherwise wait in the kernel for many minutes.
const POOL_SILENCE_LIMIT: Duration = Duration::from_secs(30);

/// Sets up the dead-pool checks of [`POOL_SILENCE_LIMIT`] on the connection [`supervise`]
/// dials: keep-alive probes after 10 s without traffic (every 5 s on Linux), and
/// `TCP_USER_TIMEOUT`, which also bounds the probes. A pool that is there but stops
/// reading is [`ProxyConfig::write_timeout`]'s.
fn watch_pool(tcp: &tokio::net::TcpStream) -> io::Result<()> {
    let socket = socket2::SockRef::from(tcp);
    let keepalive = socket2::TcpKeepalive::new().with_time(Duration::from_secs(10));
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let keepalive = keepalive.with_interval(Duration::from_secs(5));
    socket.set_tcp_keepalive(&keepalive)?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    socket.set_tcp_user_timeout(Some(POOL_SILENCE_LIMIT))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reconnect_keeps_what_it_leaves_empty() {
        assert_eq!(redirected("pool.example:3333", "", 0), "pool.example:3333");
        assert_eq!(
            redirected("pool.example:3333", "", 4444),
            "pool.example:4444"
        );
        assert_eq!(
            redirected("pool.example:3333", "10.0.0.2", 0),
            "10.0.0.2:3333"
        );
        assert_eq!(redirected("10.0.0.1:3333", "::1", 5), "[::1]:5");
        assert_eq!(redirected("[::1]:3333", "", 0), "[::1]:3333");
    }

    #[tokio::test]
    async fn the_pool_connection_is_watched_for_silence() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let tcp = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let socket = socket2::SockRef::from(&tcp);
        assert!(!socket.keepalive().unwrap());
        watch_pool(&tcp).unwrap();
        assert!(socket.keepalive().unwrap());
        assert_eq!(
            socket.tcp_keepalive_time().unwrap(),
            Duration::from_secs(10)
        );
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            assert_eq!(
                socket.tcp_keepalive_interval().unwrap(),
                Duration::from_secs(5)
            );
            assert_eq!(socket.tcp_user_timeout().unwrap(), Some(POOL_SILENCE_LIMIT));
        }
    }
}
