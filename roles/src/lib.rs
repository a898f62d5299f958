//! Stratum V2 roles built on the sv2c codec, each one a library a program embeds: it is
//! configured with a struct, started on a Tokio runtime, and reports exact counters.
//!
//! * [`proxy`]: a mining proxy. One upstream connection for every miner; control messages
//!   are decoded, everything on a channel is forwarded as a pooled frame with its channel
//!   id rewritten in place. Optional Noise on either hop; [`proxy::supervise`] restarts it
//!   with back-off when the pool goes away.
//! * [`pool`]: a pool server that checks proof of work (standard and extended channels,
//!   group channels), on the templates of a Template Provider, to which it submits its
//!   blocks, or on a made-up chain moved by a timer, using `sv2c_channels::pow` for the
//!   hashing. What `cargo run --example pool` runs and what the interoperability tests put SRI's
//!   `translator_sv2` in front of.
//! * The servers' core (a private module): the one accept loop both servers run, over
//!   the listeners and caps of [`listen`].
//! * With the `test-kit` feature (off by default; the `sv2c-proxy` program's demo, the
//!   examples and the tests turn it on), the test peers: `mock_pool` and `miner`, the two
//!   ends of a load test (the mock pool accepts shares without checking proof of work and
//!   acknowledges them in batches; the simulated miner pipelines `SubmitSharesStandard`
//!   as fast as they are acknowledged), and `demo`, the three wired together on 127.0.0.1
//!   in one process (the `mining_proxy` example and its tests).
//! * [`setup`]: a miner's `SetupConnection` checked and answered, the same way by the pool
//!   and the proxy.
//! * [`identity`]: the servers' Noise identities (`sv2c_codec::noise::NoiseIdentity`) made
//!   up on the spot or from a stored authority secret.
//! * [`metrics`]: what the servers count for the programs' Prometheus endpoint.
//! * [`shutdown`]: the signals (SIGTERM and Ctrl-C) on which a program shuts a server
//!   down.
//!
//! The programs that run the servers (`sv2c-programs`: `sv2c-pool`, `sv2c-proxy`) own
//! their command line and configuration, logging and the metrics endpoint.
//!
//! ```no_run
//! use sv2c_roles::proxy::{Proxy, ProxyConfig};
//! use tokio::net::{TcpListener, TcpStream};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let upstream = TcpStream::connect("pool.example:34255").await?;
//! let listener = TcpListener::bind("0.0.0.0:34255").await?;
//! let proxy = Proxy::start(upstream, listener, ProxyConfig::default()).await?;
//! println!("miners connect to {}", proxy.local_addr());
//! # Ok(())
//! # }
//! ```

#![forbid(unsafe_code)]

#[cfg(feature = "test-kit")]
pub mod demo;
pub mod identity;
pub mod listen;
pub mod metrics;
#[cfg(feature = "test-kit")]
pub mod miner;
#[cfg(feature = "test-kit")]
pub mod mock_pool;
pub mod pool;
pub mod proxy;
mod server;
pub mod setup;
pub mod shutdown;

/// `write` within `limit`, or a `TimedOut` error: a peer that stops reading cannot hold
/// a server's task, socket and queues for longer (the timer is armed only if the write
/// has to wait).
pub(crate) async fn in_time(
    limit: std::time::Duration,
    write: impl Future<Output = Result<(), sv2c_codec::CodecError>>,
) -> Result<(), sv2c_codec::CodecError> {
    match tokio::time::timeout(limit, write).await {
        Ok(written) => written,
        Err(_) => {
            let e = std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "a write did not finish in time",
            );
            Err(e.into())
        }
    }
}
