//! A Prometheus endpoint for the roles: `GET /metrics` on the address given to [`serve`].
//!
//! The roles count with relaxed atomics as they run (one increment per event, nothing
//! else on the share path); a scrape reads them through a [`Probe`] and encodes them with
//! `prometheus-client` (the OpenMetrics text format Prometheus reads). Counters of a
//! proxy that [`supervise`](crate::proxy::supervise) replaced after losing its pool are
//! carried over ([`Exporter::set_probe`]), so that every `_total` only grows.
//! `sv2c_upstream_reconnects_total` and the upstream side of
//! `sv2c_handshake_failures_total` count for the whole process.
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
//! | `sv2c_proxy_sv1_worker_shares_total` | counter | `worker` (the SV1 name as fitted to 32 bytes, other than `A-Za-z0-9._~:@+/-` written `_`), `state` (`forwarded`/`local`/`refused`) |

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use sv2c_channels::codes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The share rejection reasons the roles count apart (`SubmitShares.Error` codes); any
/// other code is counted as `other`.
pub const REJECT_REASONS: [&str; 10] = [
    codes::INVALID_CHANNEL_ID,
    codes::STALE_SHARE,
    codes::BAD_EXTRANONCE_SIZE,
    codes::DIFFICULTY_TOO_LOW,
    codes::INVALID_JOB_ID,
    codes::DUPLICATE_SHARE,
    codes::INVALID_SHARE,
    codes::INVALID_NON_ROLLABLE_VERSION_BIT,
    codes::INVALID_USER_IDENTITY,
    "other",
];

/// Share rejections by reason: one relaxed atomic per [`REJECT_REASONS`] entry.
#[derive(Debug, Default)]
pub struct Rejections([AtomicU64; REJECT_REASONS.len()]);

impl Rejections {
    /// Counts one rejection with the error code `code`.
    pub fn count(&self, code: &[u8]) {
        let i = REJECT_REASONS
            .iter()
            .position(|r| r.as_bytes() == code)
            .unwrap_or(REJECT_REASONS.len() - 1);
        self.0[i].fetch_add(1, Relaxed);
    }

    /// Counts of every reason, in [`REJECT_REASONS`] order.
    pub fn counts(&self) -> [u64; REJECT_REASONS.len()] {
        std::array::from_fn(|i| self.0[i].load(Relaxed))
    }

    /// The sum of every reason.
    pub fn total(&self) -> u64 {
        self.counts().iter().sum()
    }
}

/// Times [`supervise`](crate::proxy::supervise) set the pool connection up again after
/// losing it (in this process).
pub static UPSTREAM_RECONNECTS: AtomicU64 = AtomicU64::new(0);

/// Failed Noise handshakes with the pool in [`supervise`](crate::proxy::supervise) (in
/// this process).
pub static UPSTREAM_HANDSHAKE_FAILURES: AtomicU64 = AtomicU64::new(0);

/// What one scrape shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// Client connections open now.
    pub connections_open: u64,
    /// Client connections accepted so far.
    pub connections_total: u64,
    /// Channels open now.
    pub channels_open: u64,
    /// Shares accepted.
    pub shares_accepted: u64,
    /// Shares rejected, by reason ([`REJECT_REASONS`] order).
    pub shares_rejected: [u64; REJECT_REASONS.len()],
    /// Frames per direction: `(direction, count)`.
    pub frames: Vec<(&'static str, u64)>,
    /// The buffer pool's slots in use, its slots and its fallbacks (heap allocations),
    /// for a role that has one.
    pub buffer_pool: Option<(u64, u64, u64)>,
    /// Failed Noise handshakes of clients.
    pub downstream_handshake_failures: u64,
    /// An aggregating proxy's shares acknowledged to miners before the pool answered,
    /// of those confirmed by the pool and refused by it, and the shares the pool has not
    /// answered yet (a gauge).
    pub share_acks: Option<[u64; 4]>,
    /// A proxy's SV1 shares per worker name: forwarded to the pool, answered locally,
    /// refused by its check.
    pub sv1_workers: Vec<(String, [u64; 3])>,
}

impl Sample {
    /// Adds the counters (not the gauges) of `other` to this one.
    fn add_counters(&mut self, other: &Sample) {
        self.connections_total += other.connections_total;
        self.shares_accepted += other.shares_accepted;
        for (a, b) in self.shares_rejected.iter_mut().zip(other.shares_rejected) {
            *a += b;
        }
        for &(dir, n) in &other.frames {
            match self.frames.iter_mut().find(|(d, _)| *d == dir) {
                Some((_, m)) => *m += n,
                None => self.frames.push((dir, n)),
            }
        }
        if let Some((_, _, fallbacks)) = other.buffer_pool {
            let mine = self.buffer_pool.get_or_insert((0, 0, 0));
            mine.2 += fallbacks;
        }
        self.downstream_handshake_failures += other.downstream_handshake_failures;
        if let Some(theirs) = other.share_acks {
            let mine = self.share_acks.get_or_insert([0; 4]);
            for (a, b) in mine.iter_mut().zip(&theirs[..3]) {
                *a += b;
            }
        }
        for (name, theirs) in &other.sv1_workers {
            match self.sv1_workers.iter_mut().find(|(n, _)| n == name) {
                Some((_, mine)) => {
                    for (a, b) in mine.iter_mut().zip(theirs) {
                        *a += b;
                    }
                }
                None => self.sv1_workers.push((name.clone(), *theirs)),
            }
        }
    }

    /// Adds the counters and the gauges of `other` to this one (two workers' samples).
    fn add(&mut self, other: &Sample) {
        self.add_counters(other);
        self.connections_open += other.connections_open;
        self.channels_open += other.channels_open;
        if let Some((in_use, slots, _)) = other.buffer_pool {
            let mine = self.buffer_pool.get_or_insert((0, 0, 0));
            mine.0 += in_use;
            mine.1 += slots;
        }
        if let Some(theirs) = other.share_acks {
            self.share_acks.get_or_insert([0; 4])[3] += theirs[3];
        }
    }
}

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
        if let Some((in_use, slots, fallbacks)) = s.buffer_pool {
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
        if let Some([acknowledged, confirmed, refused, unconfirmed]) = s.share_acks {
            labelled_counters(
                e,
                "sv2c_proxy_shares",
                "Aggregating proxy: shares acknowledged to miners before the pool answered \
                 them, and of those, confirmed or refused by the pool.",
                "state",
                [
                    ("acknowledged", acknowledged),
                    ("confirmed", confirmed),
                    ("refused_after_ack", refused),
                ],
            )?;
            gauge(
                e,
                "sv2c_proxy_shares_unconfirmed",
                "Aggregating proxy: shares sent to the pool and not answered yet.",
                unconfirmed,
            )?;
        }
        if !s.sv1_workers.is_empty() {
            sv1_workers(e, &s.sv1_workers)?;
        }
        counter(
            e,
            "sv2c_upstream_reconnects",
            "Times the pool connection was set up again after it was lost.",
            UPSTREAM_RECONNECTS.load(Relaxed),
        )
    }
}

/// Largest HTTP request head read from a scraper.
const MAX_REQUEST: usize = 8 * 1024;

/// Listens on `addr` and answers `GET /metrics` with [`Exporter::encode`] (any other path:
/// 404) until the returned task is aborted. One request per connection.
///
/// # Errors
/// The address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    exporter: Exporter,
) -> io::Result<(SocketAddr, JoinHandle<()>)> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                continue;
            };
            let exporter = exporter.clone();
            tokio::spawn(async move {
                let answer = tokio::time::timeout(std::time::Duration::from_secs(5), async {
                    let mut head = Vec::with_capacity(512);
                    let mut buf = [0u8; 512];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_REQUEST {
                        let n = tcp.read(&mut buf).await?;
                        if n == 0 {
                            break;
                        }
                        head.extend_from_slice(&buf[..n]);
                    }
                    let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
                    let mut parts = line.split(|&b| b == b' ');
                    let (method, path) = (parts.next(), parts.next());
                    let (status, kind, body) = match (method, path) {
                        (Some(b"GET"), Some(b"/metrics")) => (
                            "200 OK",
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                            exporter.encode(),
                        ),
                        _ => ("404 Not Found", "text/plain", "GET /metrics\n".to_owned()),
                    };
                    let response = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    tcp.write_all(response.as_bytes()).await?;
                    tcp.shutdown().await
                })
                .await;
                if let Ok(Err(e)) = answer {
                    tracing::debug!("metrics: {e}");
                }
            });
        }
    });
    Ok((local, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejections_are_counted_by_reason() {
        let r = Rejections::default();
        r.count(b"stale-share");
        r.count(b"stale-share");
        r.count(b"difficulty-too-low");
        r.count(b"something-else");
        assert_eq!(r.counts(), [0, 2, 0, 1, 0, 0, 0, 0, 0, 1]);
        assert_eq!(r.total(), 4);
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
}
