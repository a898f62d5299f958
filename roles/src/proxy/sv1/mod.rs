//! Stratum V1 miners on the aggregating proxy ([`Sv1Config`](super::Sv1Config),
//! `mining_proxy --sv1-listen`).
//!
//! An SV1 connection is served as an extended miner channel of the aggregated upstream
//! channel: the connection task talks to the router exactly as an Sv2 miner's does
//! (`Register`, `Open`, its shares as `SubmitSharesExtended` frames), and turns what the
//! router sends back into SV1 lines.
//!
//! ```text
//!  SV1 miner                          proxy                                  pool
//!  mining.subscribe ───────────▶ OpenExtendedMiningChannel (router: sub-prefix S)
//!  ◀── [subs, P‖S‖zeros, e]      extranonce2_size e ≤ 8 (Sv1Config::max_extranonce2_size)
//!  ◀── mining.set_difficulty     the suggested difficulty, else the pool's target's
//!  ◀── mining.notify            ◀ NewExtendedMiningJob + SetNewPrevHash ◀───────── jobs
//!  mining.submit ──────────────▶ checked (ClientChannel::check, the miner's target):
//!                                 meets the pool's target ─▶ router (with its hash: not
//!                                 hashed again, ClientChannel::check_hashed) ─▶ pool
//!  ◀── true / [code, msg]          (answer: the router's, bounded like any miner's by
//!                                  --max-unconfirmed-shares); meets only the miner's: true
//! ```
//!
//! * **Jobs shared**: a worker's SV1 miners mine on its one upstream channel, so its jobs
//!   are kept once (`proxy::board`, published by the router) and each job's
//!   `mining.notify` line is encoded once; a connection keeps an `Arc` of them and its own
//!   extranonce, target and answers.
//! * **One port for both**: with SV1 served, a connection to the plain Sv2 listener whose
//!   first bytes are `{` and JSON text is SV1 (`speaks_sv1`); never on a Noise listener.
//! * **Any message order**: `mining.configure`, `mining.suggest_difficulty`,
//!   `mining.authorize` and `mining.extranonce.subscribe` are answered whenever they come,
//!   before `mining.subscribe` too (WhatsMiner sends `suggest_difficulty` first, Antminer
//!   and Bitaxe `configure`). A `suggest_difficulty` with an id is answered `true`.
//! * **Worker names**: each `mining.authorize` name (up to 8 per connection) may submit;
//!   it is the share's `user_identity` TLV (0x0002) when the pool granted 0x0002, fitted
//!   to 32 bytes as `identity::fit` says (a longer name keeps its first 23 bytes, then
//!   `~` and 8 hex digits of its hash).
//! * **Version rolling** (BIP 310): `mining.configure` gets the asked mask within BIP
//!   320's `0x1fffe000`; bits outside it are ignored (BIP 310). A miner that negotiated
//!   it gets `mining.set_version_mask` when the pool's jobs stop allowing rolling (0) or
//!   allow it again.
//! * **Another pool** (the proxy moved to another of its upstreams, see the `proxy`
//!   module docs): the router sends the miner's channel `SetExtranoncePrefix` (the new
//!   pool's prefix, the miner's sub-prefix), `SetTarget` and the new pool's jobs. A miner
//!   that subscribed to extranonce changes (`mining.extranonce.subscribe`, answered
//!   `true`, or `subscribe-extranonce` in `mining.configure`) gets
//!   `mining.set_extranonce` with its new `extranonce1` and the same
//!   `extranonce2_size`, then the new jobs (`clean_jobs` true); its shares on the old
//!   pool's jobs are answered `[21, "stale-share"]`. Any other miner gets
//!   `client.reconnect` and is disconnected: SV1 cannot change its `extranonce1`
//!   otherwise.
//! * **Difficulty**: per-miner vardiff ([`sv2c_channels::vardiff`], at
//!   [`Sv1Config::shares_per_minute`](super::Sv1Config::shares_per_minute)), optionally
//!   in integer powers of two. After a change, shares at the previous difficulty are
//!   accepted until the next job.
//! * **Bounded**: lines above [`Sv1Config::max_line_len`](super::Sv1Config::max_line_len)
//!   are invalid; more than [`MAX_INVALID_LINES`] invalid lines, no `mining.subscribe`
//!   within [`ProxyConfig::setup_timeout`](super::ProxyConfig::setup_timeout), no line
//!   within [`ProxyConfig::idle_timeout`](super::ProxyConfig::idle_timeout), or a write
//!   that does not finish within [`ProxyConfig::write_timeout`](super::ProxyConfig::write_timeout)
//!   close the connection; while 64 answers wait, no more lines are
//!   read. A job is sent again after [`Sv1Config::job_refresh`](super::Sv1Config::job_refresh)
//!   without one. When the proxy shuts down, or loses its pool without moving to
//!   another, miners get `client.reconnect` (no parameters: the same endpoint).

mod identity;
mod session;
mod work;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use sv2c_sv1::{Sv1Codec, Sv1Error, Sv1Item, Sv1Message};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::bytes::BytesMut;
use tokio_util::codec::{Decoder, Framed, FramedParts};

use crate::proxy::messages::{MinerInput, OpenRequest, RouterCmd, ToUpstream};
use crate::proxy::routing::ConnId;
use crate::proxy::shared::{Counters, Shared};
use session::{Effects, Request, Session};

/// Bytes of a connection's start looked at to tell SV1 from Sv2 ([`speaks_sv1`]).
const SNIFF_LEN: usize = 4;

/// Whether a connection to the plain Sv2 port speaks SV1: its first bytes are `{` and
/// printable text (JSON), where a plain Sv2 frame starts with its extension type (a
/// `SetupConnection`: a zero byte). Waits for [`SNIFF_LEN`] bytes, at most `limit`; a peer
/// that sends fewer is taken as Sv2 (and is the Sv2 path's to time out). Reads nothing
/// (`peek`). On a Noise listener the first bytes are random and this is not asked: SV1 is
/// refused there.
pub(crate) async fn speaks_sv1(tcp: &TcpStream, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    let mut buf = [0u8; SNIFF_LEN];
    loop {
        let n = match tokio::time::timeout_at(deadline, tcp.peek(&mut buf)).await {
            Ok(Ok(n)) => n,
            _ => return false,
        };
        let text = |b: &u8| b.is_ascii_graphic() || b.is_ascii_whitespace();
        if n == 0 || buf[0] != b'{' || !buf[..n].iter().all(text) {
            return false;
        }
        if n == SNIFF_LEN {
            return true;
        }
        // Fewer bytes than asked: `peek` returns at once until more arrive.
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Invalid lines (not JSON-RPC, too long) a miner may send before it is disconnected.
pub const MAX_INVALID_LINES: usize = 16;

/// Why an SV1 connection was closed by the proxy.
#[derive(Debug, thiserror::Error)]
enum Sv1ConnError {
    #[error("{0}")]
    Io(#[from] Sv1Error),
    #[error("no mining.subscribe in time")]
    SetupTimeout,
    #[error("no line within the idle timeout")]
    Idle,
    #[error("not reading: a write did not finish within the write timeout")]
    WriteTimeout,
    #[error("more than {MAX_INVALID_LINES} invalid lines")]
    Garbage,
    #[error("closed by the proxy (upstream gone, or this miner's queue was full)")]
    Dropped,
}

/// Serves one SV1 miner from accept to close, then tells the router it is gone.
pub(crate) async fn run(
    tcp: TcpStream,
    peer: SocketAddr,
    conn: ConnId,
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<RouterCmd>,
    to_upstream: ToUpstream,
) {
    let counters = &shared.counters;
    Counters::add(&counters.connections_open, 1);
    Counters::add(&counters.sv1_connections, 1);
    if shared.config.log_connections {
        tracing::debug!("sv1 #{conn} ({peer}): connected");
    }
    let result = serve(tcp, conn, &shared, &router, &to_upstream).await;
    let _ = router.send(RouterCmd::Gone { conn });
    counters.connections_open.fetch_sub(1, Relaxed);
    match result {
        Ok(()) if shared.config.log_connections => {
            tracing::debug!("sv1 #{conn} ({peer}): disconnected");
        }
        Ok(()) => {}
        Err(e) => {
            Counters::add(&counters.connections_failed, 1);
            tracing::debug!("sv1 #{conn} ({peer}): {e}; disconnected");
        }
    }
}

/// The connection's loop: the miner's lines, the router's messages and a timer, each
/// turned into [`Effects`] that are then carried out.
async fn serve(
    tcp: TcpStream,
    conn: ConnId,
    shared: &Arc<Shared>,
    router: &mpsc::UnboundedSender<RouterCmd>,
    to_upstream: &ToUpstream,
) -> Result<(), Sv1ConnError> {
    let config = &shared.config;
    let codec = Sv1Codec::new().with_max_line_len(config.sv1.max_line_len);
    // Not `Framed`'s 8 KiB each way (`from_parts` too reserves them): a storm of miners
    // would leave its peak behind in the allocator. `READ_BUFFER`, and a write buffer as
    // long as what is written.
    let mut framed = Framed::from_parts(FramedParts::new::<Sv1Message>(tcp, codec));
    *framed.read_buffer_mut() = BytesMut::with_capacity(READ_BUFFER);
    *framed.write_buffer_mut() = BytesMut::new();
    let (tx, mut rx) = crate::proxy::mailbox::channel(config.downstream_queue);
    router
        .send(RouterCmd::Register { conn, tx })
        .map_err(|_| Sv1ConnError::Dropped)?;
    let mut session = Session::new(conn, shared.clone());
    let setup_deadline = Instant::now() + config.setup_timeout;
    let mut last_line = Instant::now();
    let mut invalid = 0usize;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let mut fx = Effects::default();
        tokio::select! {
            msg = rx.recv() => match msg {
                Some(msg) => {
                    session.on_router(*msg, &mut fx);
                    // What else the router queued, answered in the same write.
                    while fx.job.is_none() && !fx.close {
                        let Some(msg) = rx.try_recv() else { break };
                        session.on_router(*msg, &mut fx);
                    }
                }
                None => return Err(Sv1ConnError::Dropped),
            },
            item = framed.next(), if !session.is_full() => match item {
                None => return Ok(()),
                Some(Err(e)) => return Err(e.into()),
                Some(Ok(item)) => {
                    last_line = Instant::now();
                    on_line(conn, item, &mut session, &mut fx, &mut invalid)?;
                    on_buffered_lines(conn, &mut framed, &mut session, &mut fx, &mut invalid)?;
                }
            },
            _ = tick.tick() => {
                let now = Instant::now();
                if !session.subscribed() && now >= setup_deadline {
                    return Err(Sv1ConnError::SetupTimeout);
                }
                if now >= last_line + config.idle_timeout {
                    return Err(Sv1ConnError::Idle);
                }
                release_buffers(&mut framed);
                session.on_tick(&mut fx);
            }
        }
        if fx.is_empty() {
            continue;
        }
        // Boxed: its state (a share on its way to the router, a write and its timeout)
        // lives only while it runs, not in every idle miner's task.
        if !Box::pin(carry_out(
            conn,
            &mut framed,
            fx,
            shared,
            router,
            to_upstream,
        ))
        .await?
        {
            return Ok(());
        }
    }
}

/// One line from the miner: a message for the session, or an invalid line counted
/// against [`MAX_INVALID_LINES`].
fn on_line(
    conn: ConnId,
    item: Sv1Item,
    session: &mut Session,
    fx: &mut Effects,
    invalid: &mut usize,
) -> Result<(), Sv1ConnError> {
    match item {
        Sv1Item::Message(m) => session.on_message(m, fx),
        Sv1Item::Invalid(e) => {
            *invalid += 1;
            tracing::debug!("sv1 #{conn}: {e}");
            if *invalid > MAX_INVALID_LINES {
                return Err(Sv1ConnError::Garbage);
            }
        }
    }
    Ok(())
}

/// The lines that came in the same read as the last one, without reading again: one
/// write answers them all (a job still goes out on its own).
fn on_buffered_lines(
    conn: ConnId,
    framed: &mut Framed<TcpStream, Sv1Codec>,
    session: &mut Session,
    fx: &mut Effects,
    invalid: &mut usize,
) -> Result<(), Sv1ConnError> {
    while !session.is_full() && fx.job.is_none() && !fx.close {
        let Some(item) = buffered_line(framed)? else {
            break;
        };
        on_line(conn, item, session, fx, invalid)?;
    }
    Ok(())
}

/// The next line already in `framed`'s read buffer, if a whole one is there (no read).
fn buffered_line(framed: &mut Framed<TcpStream, Sv1Codec>) -> Result<Option<Sv1Item>, Sv1Error> {
    // The buffer is taken out for the codec's call and put back (no copy).
    let mut buf = std::mem::take(framed.read_buffer_mut());
    let item = framed.codec_mut().decode(&mut buf);
    *framed.read_buffer_mut() = buf;
    item
}

/// Bytes of an SV1 connection's first read buffer: a subscribe and an authorize.
const READ_BUFFER: usize = 512;

/// Once a second: gives back `Framed`'s buffers while they hold nothing, so that an idle
/// miner keeps none (a miner that sends shares keeps them between two lines; they are
/// allocated again at its next line or answer; the write buffer also goes after a job).
fn release_buffers(framed: &mut Framed<TcpStream, Sv1Codec>) {
    if framed.read_buffer().is_empty() && framed.read_buffer().capacity() > 0 {
        *framed.read_buffer_mut() = BytesMut::new();
    }
    if framed.write_buffer().is_empty() && framed.write_buffer().capacity() > 0 {
        *framed.write_buffer_mut() = BytesMut::new();
    }
}

/// Sends the requests and writes the lines of `fx`; `false` if the connection is to
/// close now.
async fn carry_out(
    conn: ConnId,
    framed: &mut Framed<TcpStream, Sv1Codec>,
    fx: Effects,
    shared: &Shared,
    router: &mpsc::UnboundedSender<RouterCmd>,
    to_upstream: &ToUpstream,
) -> Result<bool, Sv1ConnError> {
    for request in fx.requests {
        match request {
            Request::Open(m) => {
                let request = OpenRequest::Extended(m);
                router
                    .send(RouterCmd::Open { conn, request })
                    .map_err(|_| Sv1ConnError::Dropped)?;
            }
            Request::Share(frame, hashed) => {
                let ToUpstream::Router(tx) = to_upstream else {
                    return Err(Sv1ConnError::Dropped);
                };
                // A full queue makes this miner wait, as an Sv2 miner's reads do.
                tx.send((conn, MinerInput::Sv1Share(frame, hashed)))
                    .await
                    .map_err(|_| Sv1ConnError::Dropped)?;
            }
        }
    }
    if !fx.lines.is_empty() || fx.job.is_some() {
        let n = (fx.lines.len() + usize::from(fx.job.is_some())) as u64;
        let job = fx.job.is_some();
        let write = async {
            for line in fx.lines {
                framed.feed(line).await?;
            }
            if let Some(job) = &fx.job {
                framed.write_buffer_mut().extend_from_slice(job);
            }
            SinkExt::<Sv1Message>::flush(framed).await
        };
        tokio::time::timeout(shared.config.write_timeout, write)
            .await
            .map_err(|_| Sv1ConnError::WriteTimeout)??;
        // A job (~0.5 KiB) is what an idle miner is written: it keeps no buffer after
        // one. A miner sending shares keeps its buffer for the next answers.
        if job && framed.write_buffer().is_empty() {
            *framed.write_buffer_mut() = BytesMut::new();
        }
        Counters::add(&shared.counters.frames_to_downstream, n);
    }
    Ok(!fx.close)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An idle SV1 miner's task is its connection's future: what it holds between two
    /// events (the codec, the session, the queue from the router, the timer) and not the
    /// state of a write or of a share on its way (boxed while it runs).
    #[tokio::test]
    async fn an_idle_miners_future_stays_small() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let _client = TcpStream::connect(addr).await.unwrap();
        let (tcp, peer) = listener.accept().await.unwrap();
        let shared = Arc::new(Shared::for_tests());
        let (router, _commands) = mpsc::unbounded_channel();
        let (shares, _rx) = mpsc::channel(1);
        let future = run(tcp, peer, 1, shared, router, ToUpstream::Router(shares));
        let size = std::mem::size_of_val(&future);
        println!("sv1::run's future: {size} bytes");
        assert!(size <= 1536, "{size} bytes");
    }
}
