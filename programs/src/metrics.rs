//! The servers' HTTP endpoint, on the address given to [`serve`]: `GET /metrics`
//! (Prometheus), `GET /health` (liveness: 200 while the process serves) and `GET /ready`
//! (readiness: 200, or 503 with the reason, from the [`Readiness`] the program gives: the
//! `mining_proxy` program is ready while a worker has its pool connection, and its 200
//! names the upstream in use, `ready: upstream HOST:PORT`), as
//! Kubernetes-style probes expect. HTTP/1.1 by `hyper`, one request per connection, 5 s
//! for the whole exchange.
//!
//! The servers count with relaxed atomics as they run (`sv2c_roles::metrics`); a scrape
//! reads them through a [`Probe`] and encodes them with `prometheus-client` (the
//! OpenMetrics text format Prometheus reads). Counters of a proxy that
//! [`supervise`](sv2c_roles::proxy::supervise) replaced after losing its pool are carried
//! over ([`Exporter::set_probe`]), so that every `_total` only grows.
//! `sv2c_upstream_reconnects_total`, the upstream side of
//! `sv2c_handshake_failures_total` and the `sv2c_proxy_upstream_…` metrics count for
//! the whole process.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `sv2c_connections_open` | gauge | |
//! | `sv2c_connections_total` | counter | |
//! | `sv2c_channels_open` | gauge | |
//! | `sv2c_shares_accepted_total` | counter | |
//! | `sv2c_shares_rejected_total` | counter | `reason` (the `SubmitShares.Error` code) |
//! | `sv2c_frames_total` | counter | `direction` (`received`/`sent`, or `to_upstream`/`to_downstream`) |
//! | `sv2c_buffer_pool_slots_in_use`, `sv2c_buffer_pool_slots` | gauge | |
//! | `sv2c_buffer_pool_fallbacks_total` | counter | |
//! | `sv2c_handshake_failures_total` | counter | `side` (`downstream`/`upstream`) |
//! | `sv2c_upstream_reconnects_total` | counter | |
//! | `sv2c_proxy_upstream_active` | gauge (workers on it) | `upstream` (each configured `HOST:PORT`) |
//! | `sv2c_proxy_upstream_switches_total` | counter | |
//! | `sv2c_pool_blocks_found_total`, `sv2c_pool_blocks_submitted_total` | counter | (pool) |
//! | `sv2c_pool_template_provider_connected` | gauge (0/1) | (pool with a Template Provider) |
//! | `sv2c_proxy_sv1_worker_shares_total` | counter | `worker` (the SV1 name as fitted to 32 bytes, other than `A-Za-z0-9._~:@+/-` written `_`), `state` (`forwarded`/`local`/`refused`) |

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use sv2c_roles::metrics::{
    BlockSample, REJECT_REASONS, Sample, UPSTREAM_HANDSHAKE_FAILURES, UPSTREAM_RECONNECTS,
    UPSTREAM_SWITCHES, upstream_workers,
};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Reads a running role's counters.
pub type Probe = Box<dyn Fn() -> Sample + Send + Sync>;

#[derive(Default)]
struct Slot {
    /// The role instance being scraped.
    current: Option<Probe>,
    /// The counters of the instances it replaced.
    carried: Sample,
}

#[derive(Default)]
struct State {
    /// One per worker of the role (see [`Exporter::set_worker_probe`]).
    slots: Vec<Slot>,
}

/// The source of the numbers a scrape shows (shared with the [`serve`] task).
#[derive(Clone, Default)]
pub struct Exporter {
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

impl Exporter {
    /// An exporter with no role yet (a scrape shows zeros).
    pub fn new() -> Self {
        Self::default()
    }

    /// Scrapes read `probe` from now on; the counters of the probe it replaces are
    /// carried over (read one last time now). The same as `set_worker_probe(0, probe)`.
    pub fn set_probe(&self, probe: Probe) {
        self.set_worker_probe(0, probe);
    }

    /// For a role run as several workers (each with its own counters): scrapes show the
    /// sum of every worker's probe, and `probe` replaces worker `worker`'s, whose counters
    /// are carried over.
    pub fn set_worker_probe(&self, worker: usize, probe: Probe) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.slots.len() <= worker {
            state.slots.resize_with(worker + 1, Slot::default);
        }
        let slot = &mut state.slots[worker];
        if let Some(old) = slot.current.take() {
            let last = old();
            slot.carried.add_counters(&last);
        }
        slot.current = Some(probe);
    }

    /// What a scrape shows now.
    pub fn sample(&self) -> Sample {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut sample = Sample::default();
        for slot in &state.slots {
            if let Some(probe) = &slot.current {
                sample.add(&probe());
            }
            sample.add_counters(&slot.carried);
        }
        sample
    }

    /// The body of a `/metrics` answer (OpenMetrics text, encoded by `prometheus-client`).
    pub fn encode(&self) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self.clone()));
        let mut out = String::new();
        // Writing to a `String` does not fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
        out
    }
}

fn counter(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), fmt::Error> {
    let metric = ConstCounter::new(value);
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn gauge(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    value: u64,
) -> Result<(), fmt::Error> {
    let metric = ConstGauge::new(i64::try_from(value).unwrap_or(i64::MAX));
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn labelled_counters(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    label: &'static str,
    values: impl IntoIterator<Item = (&'static str, u64)>,
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(
        name,
        help,
        None,
        prometheus_client::metrics::MetricType::Counter,
    )?;
    for (value, n) in values {
        let labels = [(label, value)];
        let metric = ConstCounter::new(n);
        metric.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// `sv2c_proxy_upstream_active{upstream}` and `sv2c_proxy_upstream_switches_total`, when
/// upstreams are configured (a proxy).
fn upstreams(encoder: &mut DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
    let all = upstream_workers();
    if all.is_empty() {
        return Ok(());
    }
    let mut family = encoder.encode_descriptor(
        "sv2c_proxy_upstream_active",
        "Workers whose pool connection is on this upstream now (0: none).",
        None,
        prometheus_client::metrics::MetricType::Gauge,
    )?;
    for (address, n) in &all {
        let labels = [("upstream", label_value(address))];
        let metric = ConstGauge::new(i64::try_from(*n).unwrap_or(i64::MAX));
        metric.encode(family.encode_family(&labels)?)?;
    }
    counter(
        encoder,
        "sv2c_proxy_upstream_switches",
        "Times a pool connection was set up on another upstream than the one before it.",
        UPSTREAM_SWITCHES.load(Relaxed),
    )
}

/// A worker name as a label value: characters other than `A-Za-z0-9._~:@+/-` (quotes,
/// backslashes, line ends a miner could send) written `_`.
fn label_value(name: &str) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "._~:@+/-".contains(c);
    name.chars()
        .map(|c| if safe(c) { c } else { '_' })
        .collect()
}

/// `sv2c_proxy_sv1_worker_shares_total{worker, state}`.
fn sv1_workers(
    encoder: &mut DescriptorEncoder<'_>,
    workers: &[(String, [u64; 3])],
) -> Result<(), fmt::Error> {
    let mut family = encoder.encode_descriptor(
        "sv2c_proxy_sv1_worker_shares",
        "Proxy: SV1 shares per worker, forwarded to the pool, answered locally (they met \
         only the miner's own target) or refused by the proxy's check.",
        None,
        prometheus_client::metrics::MetricType::Counter,
    )?;
    for (name, counts) in workers {
        let worker = label_value(name);
        for (state, n) in ["forwarded", "local", "refused"].into_iter().zip(counts) {
            let labels = [("worker", worker.as_str()), ("state", state)];
            ConstCounter::new(*n).encode(family.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

impl Collector for Exporter {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let s = self.sample();
        let e = &mut e;
        connections_and_shares(e, &s)?;
        if let Some(buffer_pool) = s.buffer_pool {
            buffer_pool_metrics(e, buffer_pool)?;
        }
        labelled_counters(
            e,
            "sv2c_handshake_failures",
            "Failed Noise handshakes.",
            "side",
            [
                ("downstream", s.downstream_handshake_failures),
                ("upstream", UPSTREAM_HANDSHAKE_FAILURES.load(Relaxed)),
            ],
        )?;
        if let Some(share_acks) = s.share_acks {
            share_acks_metrics(e, share_acks)?;
        }
        if let Some(blocks) = s.blocks {
            block_metrics(e, blocks)?;
        }
        if !s.sv1_workers.is_empty() {
            sv1_workers(e, &s.sv1_workers)?;
        }
        upstreams(e)?;
        counter(
            e,
            "sv2c_upstream_reconnects",
            "Times the pool connection was set up again after it was lost.",
            UPSTREAM_RECONNECTS.load(Relaxed),
        )
    }
}

/// Connections, channels, shares and frames: what every server has.
fn connections_and_shares(e: &mut DescriptorEncoder<'_>, s: &Sample) -> Result<(), fmt::Error> {
    gauge(
        e,
        "sv2c_connections_open",
        "Client connections open.",
        s.connections_open,
    )?;
    counter(
        e,
        "sv2c_connections",
        "Client connections accepted.",
        s.connections_total,
    )?;
    gauge(
        e,
        "sv2c_channels_open",
        "Mining channels open.",
        s.channels_open,
    )?;
    counter(
        e,
        "sv2c_shares_accepted",
        "Shares accepted.",
        s.shares_accepted,
    )?;
    labelled_counters(
        e,
        "sv2c_shares_rejected",
        "Shares rejected, by SubmitShares.Error code.",
        "reason",
        REJECT_REASONS.into_iter().zip(s.shares_rejected),
    )?;
    labelled_counters(
        e,
        "sv2c_frames",
        "Frames (messages) by direction.",
        "direction",
        s.frames.iter().copied(),
    )?;
    Ok(())
}

/// The buffer pool's slots in use, its slots and its fallbacks.
fn buffer_pool_metrics(
    e: &mut DescriptorEncoder<'_>,
    (in_use, slots, fallbacks): (u64, u64, u64),
) -> Result<(), fmt::Error> {
    gauge(
        e,
        "sv2c_buffer_pool_slots_in_use",
        "Buffer pool slots in use.",
        in_use,
    )?;
    gauge(e, "sv2c_buffer_pool_slots", "Buffer pool slots.", slots)?;
    counter(
        e,
        "sv2c_buffer_pool_fallbacks",
        "Buffers served from the heap because no slot fitted or was free.",
        fallbacks,
    )?;
    Ok(())
}

/// An aggregating proxy's shares acknowledged before the pool answered.
fn share_acks_metrics(
    e: &mut DescriptorEncoder<'_>,
    [acknowledged, confirmed, refused, unconfirmed, left]: [u64; 5],
) -> Result<(), fmt::Error> {
    labelled_counters(
        e,
        "sv2c_proxy_shares",
        "Aggregating proxy: shares acknowledged to miners before the pool answered \
             them, and of those, confirmed or refused by the pool, or left unanswered by \
             a pool the proxy moved away from.",
        "state",
        [
            ("acknowledged", acknowledged),
            ("confirmed", confirmed),
            ("refused_after_ack", refused),
            ("left_unconfirmed", left),
        ],
    )?;
    gauge(
        e,
        "sv2c_proxy_shares_unconfirmed",
        "Aggregating proxy: shares sent to the pool and not answered yet.",
        unconfirmed,
    )?;
    Ok(())
}

/// A pool's blocks and its Template Provider connection.
fn block_metrics(e: &mut DescriptorEncoder<'_>, blocks: BlockSample) -> Result<(), fmt::Error> {
    counter(
        e,
        "sv2c_pool_blocks_found",
        "Shares that met the network target.",
        blocks.found,
    )?;
    counter(
        e,
        "sv2c_pool_blocks_submitted",
        "Blocks sent to the Template Provider (SubmitSolution).",
        blocks.submitted,
    )?;
    if let Some(connected) = blocks.template_provider_connected {
        gauge(
            e,
            "sv2c_pool_template_provider_connected",
            "1 while the connection to the Template Provider is set up, else 0.",
            u64::from(connected),
        )?;
    }
    Ok(())
}

/// What `/ready` answers: `Ok` (200, with what it is ready on: `ready: {it}`, or
/// `ready` when empty) or the reason the server is not ready (503).
pub type Readiness = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// A [`Readiness`] that is always ready (a server that serves once it listens).
pub fn always_ready() -> Readiness {
    Arc::new(|| Ok(String::new()))
}

/// Time a scraper has for one request and its answer.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(5);

/// Listens on `addr` and answers `GET /metrics` with [`Exporter::encode`], `GET /health`
/// with 200 and `GET /ready` with `ready` (any other path: 404; another method: 405)
/// until the returned task is aborted.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    exporter: Exporter,
    ready: Readiness,
) -> io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let (exporter, ready) = (exporter.clone(), ready.clone());
            tokio::spawn(async move {
                let answer = hyper::service::service_fn(move |request| {
                    let answer = respond(&request, &exporter, &ready);
                    async move { Ok::<_, Infallible>(answer) }
                });
                let connection = hyper::server::conn::http1::Builder::new()
                    .keep_alive(false)
                    .serve_connection(hyper_util::rt::TokioIo::new(tcp), answer);
                match tokio::time::timeout(EXCHANGE_TIMEOUT, connection).await {
                    Ok(Err(e)) => tracing::debug!("metrics: {e}"),
                    Err(_) => tracing::debug!("metrics: a scraper took over {EXCHANGE_TIMEOUT:?}"),
                    Ok(Ok(())) => {}
                }
            });
        }
    });
    Ok((local, task))
}

/// The answer to one request.
fn respond(
    request: &Request<Incoming>,
    exporter: &Exporter,
    ready: &Readiness,
) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    let path = request.uri().path();
    let known = matches!(path, "/metrics" | "/health" | "/ready");
    let (status, kind, body) = if !known {
        (
            StatusCode::NOT_FOUND,
            TEXT,
            "GET /metrics, /health or /ready\n".to_owned(),
        )
    } else if request.method() != Method::GET {
        (
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "GET only\n".to_owned(),
        )
    } else {
        match path {
            "/metrics" => (
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                exporter.encode(),
            ),
            "/health" => (StatusCode::OK, TEXT, "ok\n".to_owned()),
            _ => match ready() {
                Ok(on) if on.is_empty() => (StatusCode::OK, TEXT, "ready\n".to_owned()),
                Ok(on) => (StatusCode::OK, TEXT, format!("ready: {on}\n")),
                Err(why) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    TEXT,
                    format!("not ready: {why}\n"),
                ),
            },
        }
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_roles::metrics::{
        BlockSample, active_upstreams, upstream_active, upstream_configured,
    };

    /// Two workers' share acknowledgements add up, the unconfirmed gauge included, and
    /// each state is a label of `sv2c_proxy_shares`.
    #[test]
    fn share_acknowledgements_by_state() {
        let exporter = Exporter::new();
        let sample = |k: u64| Sample {
            share_acks: Some([10 * k, 6 * k, k, 2 * k, k]),
            ..Sample::default()
        };
        exporter.set_probe(Box::new(move || sample(1)));
        let mut two = sample(1);
        two.add(&sample(2));
        assert_eq!(two.share_acks, Some([30, 18, 3, 6, 3]));
        let text = exporter.encode();
        for line in [
            "sv2c_proxy_shares_total{state=\"acknowledged\"} 10\n",
            "sv2c_proxy_shares_total{state=\"confirmed\"} 6\n",
            "sv2c_proxy_shares_total{state=\"refused_after_ack\"} 1\n",
            "sv2c_proxy_shares_total{state=\"left_unconfirmed\"} 1\n",
            "sv2c_proxy_shares_unconfirmed 2\n",
        ] {
            assert!(text.contains(line), "{line} not in {text}");
        }
    }

    #[test]
    fn counters_of_a_replaced_probe_carry_over() {
        let exporter = Exporter::new();
        let sample = |accepted, open| Sample {
            shares_accepted: accepted,
            connections_open: open,
            frames: vec![("sent", accepted)],
            ..Sample::default()
        };
        exporter.set_probe(Box::new(move || sample(10, 3)));
        exporter.set_probe(Box::new(move || sample(5, 1)));
        let now = exporter.sample();
        assert_eq!(now.shares_accepted, 15);
        assert_eq!(now.connections_open, 1);
        assert_eq!(now.frames, vec![("sent", 15)]);
        let text = exporter.encode();
        assert!(!text.contains("sv1"), "{text}");
        assert!(text.contains("sv2c_shares_accepted_total 15\n"), "{text}");
        assert!(text.contains("sv2c_connections_open 1\n"), "{text}");
        assert!(
            text.contains("sv2c_shares_rejected_total{reason=\"stale-share\"} 0\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }

    #[test]
    fn workers_are_summed_gauges_included() {
        let exporter = Exporter::new();
        let sample = |accepted, open| Sample {
            shares_accepted: accepted,
            connections_open: open,
            buffer_pool: Some((open, 64, 1)),
            ..Sample::default()
        };
        exporter.set_worker_probe(0, Box::new(move || sample(10, 3)));
        exporter.set_worker_probe(2, Box::new(move || sample(7, 4)));
        // Worker 2 restarts: its counters carry over, its gauges are the new ones.
        exporter.set_worker_probe(2, Box::new(move || sample(1, 2)));
        let now = exporter.sample();
        assert_eq!(now.shares_accepted, 18);
        assert_eq!(now.connections_open, 5);
        assert_eq!(now.buffer_pool, Some((5, 128, 3)));
    }

    /// One request over a new connection; the status line and the body.
    async fn get(addr: SocketAddr, method: &str, path: &str) -> (String, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("{method} {path} HTTP/1.1\r\nHost: probe\r\n\r\n");
        tcp.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tcp.read_to_string(&mut answer).await.unwrap();
        let status = answer.lines().next().unwrap_or_default().to_owned();
        let body = answer
            .split("\r\n\r\n")
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        (status, body)
    }

    #[tokio::test]
    async fn metrics_health_and_readiness_are_answered_over_http() {
        let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readiness: Readiness = {
            let ready = ready.clone();
            Arc::new(move || {
                if ready.load(Relaxed) {
                    Ok(String::new())
                } else {
                    Err("no pool connection".into())
                }
            })
        };
        let exporter = Exporter::new();
        let addr = "127.0.0.1:0".parse().unwrap();
        let (addr, task) = serve(addr, exporter, readiness).await.unwrap();

        let (status, body) = get(addr, "GET", "/metrics").await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(body.contains("sv2c_connections_open 0"), "{body}");
        assert!(body.ends_with("# EOF\n"), "{body}");
        assert_eq!(get(addr, "GET", "/health").await.0, "HTTP/1.1 200 OK");
        let (status, body) = get(addr, "GET", "/ready").await;
        assert_eq!(status, "HTTP/1.1 503 Service Unavailable");
        assert_eq!(body, "not ready: no pool connection\n");
        ready.store(true, Relaxed);
        assert_eq!(
            get(addr, "GET", "/ready").await,
            ("HTTP/1.1 200 OK".into(), "ready\n".into())
        );
        assert_eq!(get(addr, "GET", "/other").await.0, "HTTP/1.1 404 Not Found");
        assert_eq!(
            get(addr, "POST", "/metrics").await.0,
            "HTTP/1.1 405 Method Not Allowed"
        );
        // Not HTTP: the connection is closed, the endpoint keeps serving.
        let (status, _) = get(addr, "HELLO", "").await;
        assert!(!status.starts_with("HTTP/1.1 200"), "{status}");
        assert_eq!(get(addr, "GET", "/health").await.0, "HTTP/1.1 200 OK");
        task.abort();
    }

    /// A pool's blocks: counters carried over a replaced probe, the Template Provider
    /// gauge only for a pool that has one.
    #[test]
    fn a_pools_blocks_and_its_template_provider() {
        let exporter = Exporter::new();
        let sample = |found, connected| Sample {
            blocks: Some(BlockSample {
                found,
                submitted: found,
                template_provider_connected: connected,
            }),
            ..Sample::default()
        };
        exporter.set_probe(Box::new(move || sample(2, Some(true))));
        exporter.set_probe(Box::new(move || sample(3, Some(false))));
        let text = exporter.encode();
        assert!(text.contains("sv2c_pool_blocks_found_total 5\n"), "{text}");
        assert!(
            text.contains("sv2c_pool_blocks_submitted_total 5\n"),
            "{text}"
        );
        assert!(
            text.contains("sv2c_pool_template_provider_connected 0\n"),
            "{text}"
        );
        exporter.set_probe(Box::new(move || sample(0, None)));
        let text = exporter.encode();
        assert!(text.contains("sv2c_pool_blocks_found_total 5\n"), "{text}");
        assert!(!text.contains("template_provider_connected"), "{text}");
        let proxy = Exporter::new();
        proxy.set_probe(Box::new(Sample::default));
        assert!(!proxy.encode().contains("sv2c_pool_"));
    }

    /// SV1 workers' shares add up over workers (by name), and a name is a safe label.
    #[test]
    fn sv1_worker_shares_are_labelled_by_a_safe_name() {
        let exporter = Exporter::new();
        let sample = |name: &str, n| Sample {
            sv1_workers: vec![(name.to_owned(), [n, 1, 0])],
            ..Sample::default()
        };
        exporter.set_worker_probe(0, Box::new(move || sample("acct.w1", 2)));
        exporter.set_worker_probe(1, Box::new(move || sample("acct.w1", 3)));
        exporter.set_worker_probe(2, Box::new(move || sample("x\"}\n", 1)));
        let text = exporter.encode();
        let line = "sv2c_proxy_sv1_worker_shares_total{worker=\"acct.w1\",state=\"forwarded\"} 5\n";
        assert!(text.contains(line), "{text}");
        let line = "sv2c_proxy_sv1_worker_shares_total{worker=\"x___\",state=\"local\"} 1\n";
        assert!(text.contains(line), "{text}");
    }

    /// Every configured upstream is shown, at the count of workers on it; the ready text
    /// names the ones in use.
    #[test]
    fn the_active_upstream_is_shown() {
        let (a, b) = ("192.0.2.1:3333", "192.0.2.2:3333");
        upstream_configured(a);
        upstream_configured(b);
        upstream_active(b, true);
        let text = Exporter::new().encode();
        for line in [
            "sv2c_proxy_upstream_active{upstream=\"192.0.2.1:3333\"} 0\n",
            "sv2c_proxy_upstream_active{upstream=\"192.0.2.2:3333\"} 1\n",
            "sv2c_proxy_upstream_switches_total ",
        ] {
            assert!(text.contains(line), "{line}: {text}");
        }
        assert!(active_upstreams().contains(&b.to_owned()));
        assert!(!active_upstreams().contains(&a.to_owned()));
        upstream_active(b, false);
        assert!(!active_upstreams().contains(&b.to_owned()));
    }
}
