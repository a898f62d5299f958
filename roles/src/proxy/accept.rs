//! The proxy's side of the server core's accept loop ([`crate::server`]): miners on the
//! Sv2 listener and, when SV1 miners are served, on the SV1 listener, or on the plain Sv2
//! listener by their first bytes (`sv1::speaks_sv1`); one task per connection.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinSet;

use super::shared::{Counters, Shared};
use super::{downstream, messages, routing, sv1};
use crate::listen::{ConnectionCap, Counted};
use crate::server::{self, Accepted, Admission};

/// The proxy's miners, as the accept loop hands them over.
struct Miners {
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<messages::RouterCmd>,
    to_upstream: messages::ToUpstream,
    next_conn: routing::ConnId,
    /// Whether SV1 miners are served (on their own listener, or sniffed on the Sv2 one).
    sv1: bool,
}

impl server::Server for Miners {
    fn refused_per_address(&self, _peer: SocketAddr) {
        Counters::add(&self.shared.counters.connections_refused_per_address, 1);
    }

    fn serve(&mut self, tasks: &mut JoinSet<()>, miner: Accepted) {
        let Accepted {
            tcp,
            peer,
            slot,
            second: is_sv1,
        } = miner;
        let conn = self.next_conn;
        self.next_conn += 1;
        Counters::add(&self.shared.counters.connections_accepted, 1);
        let (router, to_upstream) = (self.router.clone(), self.to_upstream.clone());
        let shared = self.shared.clone();
        // SV1 served: on a plain Sv2 listener the first bytes decide.
        let sniff = !is_sv1 && self.sv1 && shared.config.downstream_noise.is_none();
        if !is_sv1 && !sniff {
            // The task is the connection's future itself: one made in a wrapping
            // `async` block would make every Sv2 miner's task as large as an SV1
            // miner's, and one made outside and awaited in it would be held twice.
            let miner = (tcp, peer, slot);
            tasks.spawn(downstream::run(miner, conn, shared, router, to_upstream));
            return;
        }
        if is_sv1 {
            // Sized for SV1 alone: the block below also holds an Sv2 miner's
            // future (its Noise state), which an idle SV1 miner would pay for.
            tasks.spawn(async move {
                let _slot = slot;
                sv1::run(tcp, peer, conn, shared, router, to_upstream).await;
            });
            return;
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

    fn stop(self) {
        // The router says Reconnect to every miner and drops their queues: each
        // connection writes what is queued and closes.
        let _ = self.router.send(messages::RouterCmd::Shutdown);
    }
}

/// Accepts miners (Sv2, and SV1 on its own listener) until shutdown; one task per
/// connection.
pub(super) async fn accept_loop(
    listeners: (TcpListener, Option<TcpListener>),
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<messages::RouterCmd>,
    to_upstream: messages::ToUpstream,
    shutdown: watch::Receiver<bool>,
) {
    // With workers, the cap applies to every worker's miners together.
    let config = &shared.config;
    let max = config.max_connections;
    let admission = Admission {
        cap: match &config.connection_count {
            Some(count) => ConnectionCap::shared(max, count),
            None => ConnectionCap::new(max),
        },
        counted: Counted::new(config.connection_count.clone()),
        addresses: config.address_cap.clone(),
    };
    let grace = config.write_timeout;
    let miners = Miners {
        sv1: listeners.1.is_some(),
        shared,
        router,
        to_upstream,
        next_conn: 1,
    };
    server::accept_loop(listeners, admission, miners, shutdown, grace).await;
}
