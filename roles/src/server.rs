//! The servers' core: the one accept loop the pool and the proxy both run.
//!
//! [`accept_loop`] takes connections from a server's listeners (made by
//! [`listen::bind`](crate::listen::bind): the backlog, `TCP_USER_TIMEOUT`) until its
//! shutdown signal. Each connection is first admitted: under the server's connection cap
//! ([`ConnectionCap`], over the connections of a [`Counted`], which servers of one process
//! may share) and under the cap per peer address ([`AddressCap`]); one beyond either is
//! closed on arrival. An admitted connection gets `TCP_NODELAY` and is handed to the
//! server ([`Server::serve`]), which spawns its task on the loop's [`JoinSet`].
//!
//! On shutdown the loop closes its listeners, lets the server tell every connection to go
//! ([`Server::stop`]: the servers send `Reconnect` to this same endpoint), waits at most a
//! grace period for the connections' tasks to end, and cancels those left.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::listen::{AddressCap, AddressSlot, ConnectionCap, Counted};

/// A connection the accept loop admitted.
#[derive(Debug)]
pub(crate) struct Accepted {
    pub(crate) tcp: TcpStream,
    pub(crate) peer: SocketAddr,
    /// Its place under the per-address cap: the connection's task holds it until it ends.
    pub(crate) slot: AddressSlot,
    /// It came on the second listener (the proxy's SV1 one).
    pub(crate) second: bool,
}

/// What a server does with the connections [`accept_loop`] admits.
pub(crate) trait Server {
    /// A connection from `peer` was closed on arrival: its address holds its cap already.
    fn refused_per_address(&self, peer: SocketAddr);

    /// Serves an admitted connection: spawns its task on `tasks`. The task should be the
    /// connection's future itself, or an `async` block that makes it inside: one awaiting
    /// a future made outside it holds that future twice, in every idle connection's task.
    fn serve(&mut self, tasks: &mut JoinSet<()>, accepted: Accepted);

    /// The server stops: the listeners are closed; every connection is to be told to go.
    fn stop(self);
}

/// How a server admits connections: its caps, and the count they apply to.
#[derive(Debug)]
pub(crate) struct Admission {
    /// The cap on connections at once.
    pub(crate) cap: ConnectionCap,
    /// The connections the cap counts (this server's, or those of every server sharing
    /// its count).
    pub(crate) counted: Counted,
    /// The cap per peer address.
    pub(crate) addresses: AddressCap,
}

/// Accepts connections on `listeners` (a second one optional) until `shutdown` changes
/// (or its sender is dropped), then stops the server and waits at most `grace` for its
/// connections (see the [module docs](self)).
pub(crate) async fn accept_loop<S: Server>(
    (listener, second): (TcpListener, Option<TcpListener>),
    mut admission: Admission,
    mut server: S,
    mut shutdown: watch::Receiver<bool>,
    grace: Duration,
) {
    let mut tasks = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => admission.counted.closed(),
            accepted = accept_either(&listener, second.as_ref()) => {
                let ((tcp, peer), second) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                if !admission.cap.admit(admission.counted.open()) {
                    tracing::debug!("{peer}: too many connections, closed");
                    continue;
                }
                let Some(slot) = admission.addresses.admit(peer.ip()) else {
                    server.refused_per_address(peer);
                    tracing::debug!("{peer}: closed, its address holds max_connections_per_address");
                    continue;
                };
                admission.counted.opened();
                let _ = tcp.set_nodelay(true);
                server.serve(&mut tasks, Accepted { tcp, peer, slot, second });
            }
        }
    }
    drop((listener, second));
    server.stop();
    let counted = &mut admission.counted;
    let drain = async {
        while tasks.join_next().await.is_some() {
            counted.closed();
        }
    };
    let _ = tokio::time::timeout(grace, drain).await;
    tasks.shutdown().await;
}

/// The next connection on `listener` or on `second` (`true`).
async fn accept_either(
    listener: &TcpListener,
    second: Option<&TcpListener>,
) -> std::io::Result<((TcpStream, SocketAddr), bool)> {
    match second {
        None => Ok((listener.accept().await?, false)),
        Some(second) => tokio::select! {
            a = listener.accept() => Ok((a?, false)),
            a = second.accept() => Ok((a?, true)),
        },
    }
}
