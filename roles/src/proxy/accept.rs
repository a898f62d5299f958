//! The accept loop: miners on the Sv2 listener and, when SV1 miners are served, on the
//! SV1 listener, or on the plain Sv2 listener by their first bytes
//! (`sv1::speaks_sv1`); one task per connection.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::shared::{Counters, Shared};
use super::{downstream, messages, routing, sv1};

/// The next connection on the Sv2 listener or the SV1 one (`true`).
async fn accept_either(
    listener: &TcpListener,
    sv1: Option<&TcpListener>,
) -> io::Result<((tokio::net::TcpStream, SocketAddr), bool)> {
    match sv1 {
        None => Ok((listener.accept().await?, false)),
        Some(sv1) => tokio::select! {
            a = listener.accept() => Ok((a?, false)),
            a = sv1.accept() => Ok((a?, true)),
        },
    }
}

/// Accepts miners (Sv2, and SV1 on its own listener) until shutdown; one task per
/// connection.
pub(super) async fn accept_loop(
    (listener, sv1): (TcpListener, Option<TcpListener>),
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<messages::RouterCmd>,
    to_upstream: messages::ToUpstream,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut tasks = JoinSet::new();
    let mut next_conn: routing::ConnId = 1;
    // With workers, the cap applies to every worker's miners together.
    let max = shared.config.max_connections;
    let mut cap = match &shared.config.connection_count {
        Some(count) => crate::listen::ConnectionCap::shared(max, count),
        None => crate::listen::ConnectionCap::new(max),
    };
    let mut counted = crate::listen::Counted::new(shared.config.connection_count.clone());
    loop {
        tokio::select! {
            _ = shutdown.changed() => {
                drop(listener);
                drop(sv1);
                // The router says Reconnect to every miner and drops their queues: each
                // connection writes what is queued and closes.
                let _ = router.send(messages::RouterCmd::Shutdown);
                drop(to_upstream);
                let drain = async {
                    while tasks.join_next().await.is_some() {
                        counted.closed();
                    }
                };
                let _ = tokio::time::timeout(shared.config.write_timeout, drain).await;
                break;
            }
            Some(_) = tasks.join_next(), if !tasks.is_empty() => counted.closed(),
            accepted = accept_either(&listener, sv1.as_ref()) => {
                let ((tcp, peer), is_sv1) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if !cap.admit(counted.open()) {
                    tracing::debug!("{peer}: too many connections, closed");
                    continue;
                }
                let Some(slot) = shared.config.address_cap.admit(peer.ip()) else {
                    Counters::add(&shared.counters.connections_refused_per_address, 1);
                    tracing::debug!("{peer}: closed, its address holds max_connections_per_address");
                    continue;
                };
                counted.opened();
                let _ = tcp.set_nodelay(true);
                let conn = next_conn;
                next_conn += 1;
                Counters::add(&shared.counters.connections_accepted, 1);
                let (router, to_upstream) = (router.clone(), to_upstream.clone());
                let shared = shared.clone();
                // SV1 served: on a plain Sv2 listener the first bytes decide.
                let sniff = !is_sv1 && sv1.is_some() && shared.config.downstream_noise.is_none();
                if !is_sv1 && !sniff {
                    // The task is the connection's future itself: one made in a wrapping
                    // `async` block would make every Sv2 miner's task as large as an SV1
                    // miner's, and one made outside and awaited in it would be held twice.
                    let miner = (tcp, peer, slot);
                    tasks.spawn(downstream::run(miner, conn, shared, router, to_upstream));
                    continue;
                }
                if is_sv1 {
                    // Sized for SV1 alone: the block below also holds an Sv2 miner's
                    // future (its Noise state), which an idle SV1 miner would pay for.
                    tasks.spawn(async move {
                        let _slot = slot;
                        sv1::run(tcp, peer, conn, shared, router, to_upstream).await;
                    });
                    continue;
                }
                tasks.spawn(async move {
                    let limit = shared.config.setup_timeout;
                    if sv1::speaks_sv1(&tcp, limit).await {
                        let _slot = slot;
                        sv1::run(tcp, peer, conn, shared, router, to_upstream).await;
                    } else {
                        let miner = (tcp, peer, slot);
                        downstream::run(miner, conn, shared, router, to_upstream).await;
                    }
                });
            }
        }
    }
    tasks.shutdown().await;
}
