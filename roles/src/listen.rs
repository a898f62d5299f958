//! Listening sockets for the servers: a backlog sized for reconnection storms, and the
//! cap on connections served at once.
//!
//! When a pool restarts, every miner comes back within a second or two. The kernel holds
//! connections that completed their TCP handshake until the server accepts them, up to
//! the listen backlog; beyond it, new connections are dropped and the miners retry
//! seconds later. The standard library's listeners ask for 128; [`bind`] asks for
//! [`LISTEN_BACKLOG`] (the kernel lowers it to `net.core.somaxconn`, 4096 by default on
//! current Linux).
//!
//! Each connection holds a file descriptor, so a server can hold at most its open-files
//! limit of them; past it, `accept` fails. [`default_max_connections`] sizes the cap
//! from that limit, leaving room for the server's other files; [`ConnectionCap`] closes
//! connections beyond the cap and says so in one log line. Servers of one process that
//! share the file limit (the proxy's workers) count their connections together in one
//! [`ConnectionCount`].
//!
//! A cap per peer address ([`AddressCap`], off unless configured) bounds what one host
//! can hold of the connection cap: miners behind one NAT share an address, so a server
//! cannot guess a default that fits every farm.
//!
//! A miner that vanishes without closing (its NAT or link reset) leaves a connection the
//! kernel keeps retransmitting to for about 15 minutes, holding a slot under the cap
//! while the same miner comes back on a new one. On Linux the listener's connections give
//! up after [`PEER_SILENCE_LIMIT`] of unacknowledged data instead (`TCP_USER_TIMEOUT`),
//! and the servers write to every miner at least once a job interval.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpSocket, ToSocketAddrs};

/// The listen backlog [`bind`] asks for.
pub const LISTEN_BACKLOG: u32 = 4096;

/// How long a connection accepted by [`bind`]'s listener may hold data its peer has not
/// acknowledged before the kernel gives it up (Linux: `TCP_USER_TIMEOUT`, set on the
/// listener and inherited by every connection it accepts).
pub const PEER_SILENCE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// File descriptors [`default_max_connections`] leaves for everything but miners: the
/// upstream connection, the metrics endpoint and its clients, configuration and log files.
pub const SPARE_FILES: usize = 64;

/// File descriptors each further server of a process holds besides its connections (the
/// proxy's workers: a listener, a pool connection and a runtime's two), left free on top
/// of [`SPARE_FILES`] when servers share a [`ConnectionCount`].
pub const FILES_PER_SERVER: usize = 4;

/// Files left free for `servers` servers sharing one process: [`SPARE_FILES`] and
/// [`FILES_PER_SERVER`] for each server after the first.
pub fn spare_files(servers: usize) -> usize {
    SPARE_FILES.saturating_add(FILES_PER_SERVER.saturating_mul(servers.saturating_sub(1)))
}

/// Listens on the first address `addr` resolves to, with a backlog of
/// [`LISTEN_BACKLOG`] (and `SO_REUSEADDR`, so that a restarted server can listen again at
/// once); on Linux its connections have [`PEER_SILENCE_LIMIT`].
///
/// # Errors
/// `addr` does not resolve, or cannot be bound.
pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
    bind_with(addr, false).await
}

/// [`bind`], and with `reuse_port` also `SO_REUSEPORT` (Unix): several listeners of the
/// same process (one per worker) share the address, and the kernel spreads new
/// connections over them.
///
/// # Errors
/// As [`bind`]; `reuse_port` where the platform has no `SO_REUSEPORT`.
pub async fn bind_with(addr: impl ToSocketAddrs, reuse_port: bool) -> io::Result<TcpListener> {
    let addr = tokio::net::lookup_host(addr).await?.next().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the address resolves to nothing",
        )
    })?;
    let socket = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    if reuse_port {
        #[cfg(unix)]
        socket.set_reuseport(true)?;
        #[cfg(not(unix))]
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "SO_REUSEPORT is only available on Unix",
        ));
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    socket2::SockRef::from(&socket).set_tcp_user_timeout(Some(PEER_SILENCE_LIMIT))?;
    socket.bind(addr)?;
    socket.listen(LISTEN_BACKLOG)
}

/// Connections a server holds at most by default: the process's open-files limit (its
/// soft limit, from `/proc/self/limits`) minus [`SPARE_FILES`], at least 1; 10,000 where
/// the limit cannot be read.
pub fn default_max_connections() -> usize {
    default_max_connections_for(1)
}

/// [`default_max_connections`] for `servers` servers of one process that share it (the
/// proxy's workers): the open-files limit less [`spare_files`]`(servers)`.
pub fn default_max_connections_for(servers: usize) -> usize {
    let spare = spare_files(servers) as u64;
    open_files_limit()
        .map(|n| n.saturating_sub(spare).max(1))
        .map_or(10_000, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// The soft open-files limit, if the platform says (`None` also for "unlimited").
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    parse_open_files(&limits)
}

fn parse_open_files(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `max`, or at most the open-files `limit` less `spare` (warned once).
fn within_open_files(max: usize, limit: Option<u64>, spare: usize) -> usize {
    static WARNED: std::sync::Once = std::sync::Once::new();
    let Some(allowed) = limit.map(|n| n.saturating_sub(spare as u64).max(1)) else {
        return max;
    };
    let allowed = usize::try_from(allowed).unwrap_or(usize::MAX);
    if max <= allowed {
        return max;
    }
    WARNED.call_once(|| {
        tracing::warn!(
            "max_connections {max} is above the open-files limit less {spare}: at most \
             {allowed} connections are served (raise the limit, e.g. ulimit -n, to serve more)"
        );
    });
    allowed
}

/// The connection cap of a server: [`admit`](Self::admit) says whether one more
/// connection may be served, and logs (at `warn`) when the cap is first reached, and
/// again only after the count has fallen below nine tenths of it. Servers that share a
/// [`ConnectionCount`] share their cap's state too ([`ConnectionCap::shared`]): the line
/// is logged once for all of them.
#[derive(Debug)]
pub struct ConnectionCap {
    max: usize,
    full: Arc<AtomicBool>,
}

impl ConnectionCap {
    /// A cap of `max` connections (at least 1), lowered to what the open-files limit
    /// allows ([`default_max_connections`]) if it is above, with one warning per process:
    /// past that limit `accept` would fail instead, for every new connection.
    pub fn new(max: usize) -> Self {
        ConnectionCap {
            max: within_open_files(max, open_files_limit(), SPARE_FILES).max(1),
            full: Arc::default(),
        }
    }

    /// [`ConnectionCap::new`] for the servers that count their connections in `count`,
    /// lowered to the open-files limit less [`spare_files`] for as many servers as
    /// `count` was made for.
    pub fn shared(max: usize, count: &ConnectionCount) -> Self {
        let spare = spare_files(count.servers);
        ConnectionCap {
            max: within_open_files(max, open_files_limit(), spare).max(1),
            full: count.full.clone(),
        }
    }

    /// Whether a new connection may be served while `open` are.
    pub fn admit(&mut self, open: usize) -> bool {
        if open < self.max {
            if open < self.max - self.max / 10 && self.full.swap(false, Relaxed) {
                tracing::info!("connections below the cap again: {open} of {}", self.max);
            }
            return true;
        }
        if !self.full.swap(true, Relaxed) {
            tracing::warn!(
                "connection cap reached: {open} connections open (max_connections {}); \
                 new connections are closed until some leave",
                self.max
            );
        }
        false
    }
}

/// The connections of several servers of one process counted together, so that one cap
/// covers them all (the proxy's workers, which share the process's open-files limit):
/// each server adds the connections it admits and takes them off when they close. Clones
/// share the count.
#[derive(Clone, Debug, Default)]
pub struct ConnectionCount {
    open: Arc<AtomicUsize>,
    /// Whether the cap has been reached ([`ConnectionCap::shared`]).
    full: Arc<AtomicBool>,
    /// Servers sharing it (their own files are left free: [`spare_files`]).
    servers: usize,
}

impl ConnectionCount {
    /// A count of none, for one server's clones.
    pub fn new() -> Self {
        Self::for_servers(1)
    }

    /// A count of none, for `servers` servers (each holding a clone).
    pub fn for_servers(servers: usize) -> Self {
        ConnectionCount {
            servers: servers.max(1),
            ..Self::default()
        }
    }

    /// Connections open now in every server that holds a clone.
    pub fn get(&self) -> usize {
        self.open.load(Relaxed)
    }
}

/// Connections served at once per peer IP address (IPv4-mapped IPv6 addresses count as
/// their IPv4 address). [`admit`](Self::admit) hands out an [`AddressSlot`] that holds
/// one place until dropped. Without a maximum it keeps no table and takes no lock.
/// Clones share the count.
#[derive(Clone, Debug, Default)]
pub struct AddressCap {
    max: Option<usize>,
    open: OpenPerAddress,
}

/// Connections open per address.
type OpenPerAddress = Arc<Mutex<HashMap<IpAddr, usize>>>;

impl AddressCap {
    /// A cap of `max` connections per address (`None`: no cap; `Some(0)` admits none).
    pub fn new(max: Option<usize>) -> Self {
        AddressCap {
            max,
            open: Arc::default(),
        }
    }

    /// A place for one more connection from `ip`, or `None` if it holds `max` already.
    pub fn admit(&self, ip: IpAddr) -> Option<AddressSlot> {
        let Some(max) = self.max else {
            return Some(AddressSlot { held: None });
        };
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            if *n == 0 {
                open.remove(&ip);
            }
            return None;
        }
        *n += 1;
        Some(AddressSlot {
            held: Some((self.open.clone(), ip)),
        })
    }

    /// Connections open now from `ip` (0 without a cap: nothing is counted).
    pub fn open(&self, ip: IpAddr) -> usize {
        let open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.get(&ip.to_canonical()).copied().unwrap_or(0)
    }
}

/// One connection's place under an [`AddressCap`], given back when dropped.
#[derive(Debug)]
pub struct AddressSlot {
    held: Option<(OpenPerAddress, IpAddr)>,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let Some((open, ip)) = self.held.take() else {
            return;
        };
        let mut open = open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = open.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&ip);
            }
        }
    }
}

/// The connections one server's accept loop holds, added to its [`ConnectionCount`] if it
/// shares one, and taken off it when they close or the loop ends (also when its task is
/// cancelled).
#[derive(Debug)]
pub(crate) struct Counted {
    shared: Option<ConnectionCount>,
    held: usize,
}

impl Counted {
    pub(crate) fn new(shared: Option<ConnectionCount>) -> Self {
        Counted { shared, held: 0 }
    }

    /// The connections the cap applies to: every server's of the shared count, else this
    /// server's.
    pub(crate) fn open(&self) -> usize {
        self.shared.as_ref().map_or(self.held, ConnectionCount::get)
    }

    /// One more connection served.
    pub(crate) fn opened(&mut self) {
        self.held += 1;
        if let Some(count) = &self.shared {
            count.open.fetch_add(1, Relaxed);
        }
    }

    /// One connection closed.
    pub(crate) fn closed(&mut self) {
        if self.held == 0 {
            return;
        }
        self.held -= 1;
        if let Some(count) = &self.shared {
            count.open.fetch_sub(1, Relaxed);
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let Some(count) = &self.shared {
            count.open.fetch_sub(self.held, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_read_from_proc_limits() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            20000                524288               files     \n";
        assert_eq!(parse_open_files(limits), Some(20_000));
        assert_eq!(
            parse_open_files(
                "Max open files            unlimited            unlimited            files"
            ),
            None
        );
        assert_eq!(parse_open_files("nothing here"), None);
    }

    #[test]
    fn the_default_cap_leaves_room_for_other_files() {
        let cap = default_max_connections();
        let three = default_max_connections_for(3);
        match open_files_limit() {
            Some(limit) => {
                assert_eq!(cap as u64, limit.saturating_sub(64).max(1));
                assert_eq!(three as u64, limit.saturating_sub(64 + 2 * 4).max(1));
            }
            None => assert_eq!((cap, three), (10_000, 10_000)),
        }
    }

    #[test]
    fn the_cap_admits_below_it_and_refuses_at_it() {
        let mut cap = ConnectionCap::new(10);
        let full = |cap: &ConnectionCap| cap.full.load(Relaxed);
        assert!(cap.admit(9));
        assert!(!cap.admit(10));
        assert!(full(&cap));
        // Still full until the count falls below nine tenths.
        assert!(cap.admit(9));
        assert!(full(&cap));
        assert!(cap.admit(8));
        assert!(!full(&cap));
    }

    #[test]
    fn a_cap_above_the_open_files_limit_is_lowered_to_it() {
        assert_eq!(within_open_files(50_000, Some(20_000), 64), 20_000 - 64);
        assert_eq!(within_open_files(1_000, Some(20_000), 64), 1_000);
        assert_eq!(within_open_files(50_000, None, 64), 50_000);
        assert_eq!(within_open_files(10, Some(10), 64), 1);
        // Many servers in one process: each one's own files are left free too.
        assert_eq!(spare_files(1), 64);
        assert_eq!(spare_files(64), 64 + 63 * 4);
        assert_eq!(
            within_open_files(50_000, Some(1_024), spare_files(64)),
            1_024 - 316
        );
    }

    #[test]
    fn servers_sharing_a_count_are_capped_together() {
        let count = ConnectionCount::new();
        let mut first = Counted::new(Some(count.clone()));
        let mut second = Counted::new(Some(count.clone()));
        let (mut cap, mut other_cap) = (
            ConnectionCap::shared(3, &count),
            ConnectionCap::shared(3, &count),
        );
        for _ in 0..2 {
            assert!(cap.admit(first.open()));
            first.opened();
        }
        assert!(other_cap.admit(second.open()));
        second.opened();
        assert_eq!(count.get(), 3);
        // The second server is refused on the first's connections, and the first server's
        // cap knows the cap was reached (its line is not logged twice).
        assert!(!other_cap.admit(second.open()));
        assert!(cap.full.load(Relaxed));
        first.closed();
        assert_eq!(second.open(), 2);
        // A server that stops gives its connections back.
        drop(first);
        assert_eq!(count.get(), 1);
        second.closed();
        second.closed();
        assert_eq!(count.get(), 0);
        // Without a shared count, a server counts its own.
        let mut alone = Counted::new(None);
        alone.opened();
        assert_eq!((alone.open(), count.get()), (1, 0));
    }

    #[test]
    fn the_address_cap_counts_each_address_until_its_slots_drop() {
        let cap = AddressCap::new(Some(2));
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = cap.admit(a).unwrap();
        let second = cap.admit(mapped).unwrap();
        assert!(cap.admit(a).is_none(), "a third from the same address");
        let other = cap.admit(b).unwrap();
        assert_eq!((cap.open(a), cap.open(b)), (2, 1));
        drop(first);
        let again = cap.admit(a).unwrap();
        drop((second, again, other));
        assert_eq!(cap.open.lock().unwrap().len(), 0, "no entry left behind");
        // No cap: no table.
        let off = AddressCap::new(None);
        let slots: Vec<_> = (0..100).map(|_| off.admit(a).unwrap()).collect();
        assert_eq!((slots.len(), off.open(a)), (100, 0));
        assert!(AddressCap::new(Some(0)).admit(a).is_none());
    }

    #[tokio::test]
    async fn listeners_with_reuse_port_share_an_address() {
        let first = bind_with("127.0.0.1:0", true).await.unwrap();
        let addr = first.local_addr().unwrap();
        let second = bind_with(addr, true).await.unwrap();
        assert_eq!(second.local_addr().unwrap(), addr);
        // Without it, the address is taken.
        assert!(bind(addr).await.is_err());
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[tokio::test]
    async fn accepted_connections_give_up_on_a_silent_peer() {
        let listener = bind("127.0.0.1:0").await.unwrap();
        let client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        let timeout = |tcp| socket2::SockRef::from(tcp).tcp_user_timeout().unwrap();
        assert_eq!(timeout(&accepted), Some(PEER_SILENCE_LIMIT));
        // The client's socket keeps the kernel's default.
        assert_eq!(timeout(&client), None);
    }

    #[tokio::test]
    async fn bind_listens_with_a_large_backlog() {
        let listener = bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // More connections than the standard library's backlog of 128 complete their
        // TCP handshake before any is accepted.
        let mut streams = Vec::new();
        for _ in 0..300 {
            let s = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                tokio::net::TcpStream::connect(addr),
            )
            .await
            .expect("connect completes while nothing accepts")
            .unwrap();
            streams.push(s);
        }
        for _ in 0..300 {
            listener.accept().await.unwrap();
        }
    }
}
