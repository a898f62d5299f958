//! The pool's settings ([`PoolConfig`]) and their defaults.

use std::sync::Arc;
use std::time::Duration;

use sv2c_binary::U256;
use sv2c_channels::vardiff::VardiffConfig;

use super::template_provider::TemplateProviderConfig;
use crate::identity::NoiseIdentity;

/// [`PoolConfig::coinbase_output`] by default: `OP_TRUE`, which anyone can spend (a test
/// pool's payout).
pub const DEFAULT_COINBASE_OUTPUT: &[u8] = &[0x51];
/// Worker identities [`Pool::workers`](super::Pool::workers) holds by default ([`PoolConfig::max_workers`]).
pub const MAX_WORKERS: usize = 10_000;

/// [`PoolConfig::max_channels_per_connection`] by default.
pub const DEFAULT_MAX_CHANNELS_PER_CONNECTION: usize = 32_768;
/// [`PoolConfig::max_channels`] by default.
pub const DEFAULT_MAX_CHANNELS: usize = 200_000;

/// Settings of a [`Pool`](super::Pool).
#[derive(Debug, Clone)]
pub struct PoolConfig {
    /// The share target of every channel (or the channel's `max_target` if that is
    /// harder), a little-endian number.
    pub share_target: U256,
    /// The pool's job timer: on the made-up chain every channel gets a new job this
    /// often; with a Template Provider it paces only vardiff and the check of unfinished
    /// frames.
    pub job_interval: Duration,
    /// On the made-up chain, every this many timer ticks the previous block hash changes
    /// instead (not used with a Template Provider).
    pub jobs_per_prev_hash: u32,
    /// The script of the coinbase output the pool adds, which takes the whole value a
    /// template leaves (default [`DEFAULT_COINBASE_OUTPUT`]).
    pub coinbase_output: Vec<u8>,
    /// `Some`: templates and chain tips come from this Template Provider, and blocks are
    /// submitted to it. `None` (the default): the made-up chain.
    pub template_provider: Option<TemplateProviderConfig>,
    /// `Some`: variable difficulty. Each channel starts at `share_target` and a
    /// [`Vardiff`](sv2c_channels::vardiff::Vardiff) moves its target toward `shares_per_minute`, checked on every job tick
    /// (`SetTarget` is sent when it moves); the controller's `max_target` is the channel's
    /// own. `None`: every channel keeps `share_target`.
    pub vardiff: Option<VardiffConfig>,
    /// Extranonce bytes left to an extended channel's owner (at least its
    /// `min_extranonce_size` is granted, up to 24).
    pub extranonce_size: u16,
    /// Time a client has to finish the Noise handshake and send `SetupConnection`.
    pub setup_timeout: Duration,
    /// A write to a client (answers, jobs) must finish within this, or the connection is
    /// closed: a client that stops reading cannot hold its task and socket for longer.
    pub write_timeout: Duration,
    /// The largest payload a client may send; a frame announcing more closes the
    /// connection (every message a miner sends a pool is under 2 KiB). Bounds the bytes
    /// of an unfinished frame a connection holds, which it may hold for at most two job
    /// intervals: a frame unfinished at two consecutive job ticks, with no frame
    /// completed between them, closes the connection.
    pub max_payload_len: usize,
    /// Channels one connection may hold open; a request beyond it is refused with
    /// [`TOO_MANY_CHANNELS`](super::TOO_MANY_CHANNELS). A miner opens a handful; a forwarding proxy one per miner
    /// behind it. The default, [`DEFAULT_MAX_CHANNELS_PER_CONNECTION`] (32,768), is
    /// twice the 15,000 miners one `mining_proxy` worker is measured with, and one
    /// connection can then hold at most a sixth of the default [`max_channels`].
    ///
    /// [`max_channels`]: Self::max_channels
    pub max_channels_per_connection: usize,
    /// Channels open at once on the whole pool (the real bound on channel memory, about
    /// 1 KiB each); a request beyond it is refused with [`TOO_MANY_CHANNELS`](super::TOO_MANY_CHANNELS) until
    /// channels close. Default [`DEFAULT_MAX_CHANNELS`] (200,000: about 200 MiB; a dozen
    /// channels for each of 15,000 miners, or several forwarding proxies of thousands of
    /// miners each).
    pub max_channels: usize,
    /// Connections served at once from one IP address; more are closed on arrival.
    /// `None` (the default): no cap, as miners behind one NAT share an address.
    pub max_connections_per_address: Option<usize>,
    /// Worker identities [`Pool::workers`](super::Pool::workers) holds (default [`MAX_WORKERS`]); the least
    /// recently seen idle one makes room for a new one (see the [module docs](super)).
    pub max_workers: usize,
    /// A worker seen within this is active, and is not evicted for a new identity
    /// (default 10 minutes: at vardiff's default rate a worker submits every 6 s).
    pub worker_active: Duration,
    /// `Some`: connections are encrypted (Noise NX, answered with this identity, whose
    /// certificate is renewed before it expires).
    pub noise: Option<Arc<NoiseIdentity>>,
    /// Connections served at once; more are closed on arrival, with one log line when
    /// the cap is reached ([`ConnectionCap`](crate::listen::ConnectionCap)). Default, and at most:
    /// [`default_max_connections`](crate::listen::default_max_connections), from the
    /// open-files limit.
    pub max_connections: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            share_target: sv2c_channels::pow::target_with_zero_bits(8),
            job_interval: Duration::from_secs(10),
            jobs_per_prev_hash: 6,
            coinbase_output: DEFAULT_COINBASE_OUTPUT.to_vec(),
            template_provider: None,
            vardiff: None,
            extranonce_size: 8,
            setup_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(5),
            max_payload_len: 64 * 1024,
            max_channels_per_connection: DEFAULT_MAX_CHANNELS_PER_CONNECTION,
            max_channels: DEFAULT_MAX_CHANNELS,
            max_connections_per_address: None,
            max_workers: MAX_WORKERS,
            worker_active: Duration::from_secs(600),
            noise: None,
            max_connections: crate::listen::default_max_connections(),
        }
    }
}
