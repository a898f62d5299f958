//! A Stratum V2 mining proxy built on `Framed` and [`FrameCodec`].
//!
//! ```text
//!  miners                          proxy                                   pool
//!  ──────                          ─────                                   ────
//!  SetupConnection ───────────▶ answered by the proxy      (its own SetupConnection upstream, once)
//!  OpenStandardMiningChannel ─▶ decoded, new request id ─▶ OpenStandardMiningChannel
//!                                                        ◀─ ….Success (upstream channel id U)
//!  ◀── ….Success (channel D)  ◀─ route U ↔ (miner, D)
//!  SubmitSharesStandard(D) ───▶ frame: id D → U, no decode ─▶ SubmitSharesStandard(U)
//!  ◀── NewMiningJob, SetNewPrevHash, SetTarget, SubmitShares.Success/Error (D)
//!                              ◀─ frame: id U → D, no decode ◀─ … (U)
//! ```
//!
//! * **One upstream connection** for every miner, set up once ([`Proxy::start`]).
//! * **Control messages are decoded** (owned): `SetupConnection` is answered by the proxy
//!   (Mining protocol, version 2, with the flags the pool answered the proxy's own
//!   `SetupConnection`; miners that need work selection, or version rolling when the pool
//!   requires a fixed version, are refused); `OpenStandardMiningChannel` /
//!   `OpenExtendedMiningChannel` get an upstream request id and are forwarded; their
//!   answers are mapped back (see [`routing`]).
//! * **Extensions**: right after its own `SetupConnection`, the proxy asks the pool for
//!   [`ProxyConfig::upstream_extensions`] (`RequestExtensions`, extension 0x0001) and
//!   keeps what the pool grants. A miner's `RequestExtensions` is answered by the proxy
//!   ([`sv2c_channels::extensions::negotiate`]): it can have Worker-Specific Hashrate
//!   Tracking (0x0002) only if the pool granted it, and nothing else. The `user_identity`
//!   TLV rides on `SubmitSharesExtended` frames, which are forwarded byte for byte.
//! * **Everything on a channel is forwarded undecoded**: shares, jobs, prev-hashes,
//!   targets, share results, messages of extensions the proxy does not know. The proxy
//!   reads the channel id from the first 4 payload bytes, rewrites it and forwards the
//!   frame without decoding it (SV2-WIRE §2.2): towards the pool straight from the
//!   miner's read buffer into one block of frames per read, which the upstream writer
//!   encrypts as one batch; towards a miner as a [`Frame`] ([`Frame::set_channel_id`]).
//!   Non-channel frames of unknown extensions are dropped (§2.4).
//! * **One [`BufferPool`]** serves every connection's [`FrameCodec`]; its statistics are
//!   in [`Proxy::pool_stats`].
//! * **Bad peers are cut off, nobody else notices**: garbage, a frame above
//!   [`ProxyConfig::max_downstream_payload`], a first message that is not
//!   `SetupConnection` (or none within [`ProxyConfig::setup_timeout`]), a stream that
//!   ends inside a frame: one log line, the connection and its channels are closed, the
//!   other miners carry on.
//! * **A pool's `Reconnect` is followed**: the proxy tells its miners to reconnect (to
//!   the proxy) and [`supervise`] dials the endpoint the pool named ([`Proxy::redirect`]).
//! * **A pool that stops reading is given up**: a write to it that does not finish within
//!   [`ProxyConfig::write_timeout`] ends the pool connection as its closing would (every
//!   miner is told to reconnect; [`supervise`] redials, and also watches the connection
//!   it dials for a pool that vanished without closing).
//! * **Ordered upstreams** ([`supervise_upstreams`], `mining_proxy --upstream A
//!   --upstream B`): pools in order of preference, each [`Upstream`] with its own
//!   authority key. A dial or setup that fails, a lost connection, or a pool that owes
//!   answers and says nothing for [`Failover::silence`] sends the proxy to the next
//!   one at once; while on a later one it probes the earlier ones and returns to one
//!   that has answered every probe for [`Failover::hold`]. In this (forwarding) mode,
//!   miners are told to `Reconnect` to this proxy on every switch and start over on the
//!   new pool (their connections to the old pool's proxy are closed; nothing of theirs
//!   stays on it); in the aggregating mode they stay connected ([Miners across a
//!   switch](#miners-across-a-switch)). The pool in use is in the metrics
//!   (`sv2c_proxy_upstream_active{upstream}`, `sv2c_proxy_upstream_switches_total`) and
//!   in `/ready` (see the program).
//!
//! * **Noise, per hop**: with [`ProxyConfig::upstream_noise`] the proxy opens the pool
//!   connection with the Noise NX handshake and checks the pool's certificate against
//!   the pool's authority key; with [`ProxyConfig::downstream_noise`] miners must connect
//!   with Noise and are shown the proxy's own certificate. Either hop can stay plain TCP.
//!
//! How bytes become frames is decided in one pair of functions per side,
//! [`upstream_transport`] / [`upstream_noise_transport`] and [`downstream_transport`] /
//! [`downstream_noise_transport`]; the rest of the proxy works on either, plain or
//! encrypted alike.
//!
//! Two modes: by default each miner channel has its own upstream channel, as above;
//! with [`ProxyConfig::aggregate`] every miner channel is served from one upstream
//! channel (below). Not a production proxy: in the default mode it does no share
//! validation and no job translation between channel types.
//!
//! # Aggregating mode
//!
//! With [`ProxyConfig::aggregate`] (`mining_proxy --aggregate`) the proxy is a channel
//! client upstream and a channel server downstream ([`aggregate`]):
//!
//! ```text
//!  miners                             proxy                                    pool
//!  OpenStandard/ExtendedMining… ─▶ answered by the proxy    (at start: OpenExtendedMiningChannel,
//!                                  (sub-prefix S)            min_extranonce_size 12 ─▶ channel U,
//!                                                            prefix P, size n)
//!  ◀─ NewMiningJob (own root) /   ◀─ ClientChannel ◀──────── NewExtendedMiningJob,
//!     NewExtendedMiningJob, SetNewPrevHash, SetTarget         SetNewPrevHash, SetTarget (U)
//!  SubmitShares… ───────────────▶ checked, answered ───────▶ SubmitSharesExtended (U),
//!  ◀─ SubmitShares.Success/Error   locally                   extranonce S ‖ miner's bytes
//! ```
//!
//! * **Upstream**: after `SetupConnection` (and `RequestExtensions`) each proxy (each
//!   [`supervise`] worker) opens one extended channel, `user_identity`
//!   [`ProxyConfig::aggregate_user`], `nominal_hash_rate`
//!   [`ProxyConfig::aggregate_hashrate`], `min_extranonce_size` =
//!   [`SUB_PREFIX_LEN`](aggregate::SUB_PREFIX_LEN) +
//!   [`MINER_EXTRANONCE_LEN`](aggregate::MINER_EXTRANONCE_LEN) (4 + 8), and tracks it
//!   with [`sv2c_channels::client::ClientChannel`]: jobs, chain tip and target.
//! * **Miner channels** are answered by the proxy; each gets the next 4-byte sub-prefix
//!   `S` (a counter) inside the pool's `n` extranonce bytes, and as its target the
//!   upstream channel's or the miner's `max_target` if that is harder (likewise for every
//!   `SetTarget`). A standard channel gets `extranonce_prefix = P ‖ S ‖ zeros` (all `n`
//!   bytes) and `NewMiningJob`s whose merkle root the proxy computes for that
//!   extranonce; an extended channel gets `P ‖ S` and `extranonce_size = n − 4` (a
//!   request for more is refused, `min-extranonce-size-too-large`) and the pool's
//!   `NewExtendedMiningJob`s as they are. `SetNewPrevHash` and `SetTarget` go to every
//!   channel; a channel opened later first gets the jobs and tip the proxy kept. A
//!   sub-prefix is not reused after its channel closes, so no two miners of one
//!   upstream connection ever share one; after 256⁴ channels new ones are refused
//!   (`too-many-channels`).
//! * **Shares are decoded and checked as the pool checks them**, with
//!   [`ClientChannel::check`](sv2c_channels::client::ClientChannel::check), the same
//!   `sv2c-channels` rules a pool built on [`ServerChannel`](sv2c_channels::server::ServerChannel)
//!   applies: the job (unknown: `invalid-job-id`; of an earlier chain tip: `stale-share`),
//!   the extranonce size (full extranonce `S ‖ miner's bytes`), `ntime` within
//!   `min_ntime ..= min_ntime + 2 h` (`invalid-share`), version bits outside the rolling
//!   mask (`invalid-non-rollable-version-bit`), the miner channel's own target (the
//!   harder of the upstream target and its `max_target`: `difficulty-too-low`), and a
//!   share accepted already on the current chain tip (`duplicate-share`: the worker's
//!   Sv2 miners' last 8192 at least, and each SV1 miner's own last 1,024 at least, which
//!   its connection remembers); with 0x0002 granted by the pool, a `user_identity`
//!   TLV longer than 32 bytes or a malformed tail (`invalid-user-identity`, as the pool
//!   refuses it). A refused share goes no further. An accepted share
//!   is sent to the pool as `SubmitSharesExtended` on the proxy's channel with the
//!   proxy's own sequence numbers and extranonce `S ‖ miner's bytes` (a standard
//!   miner's: `S ‖ zeros`); its `user_identity` TLV (extension 0x0002) is forwarded
//!   intact when the pool granted 0x0002.
//! * **Every share gets exactly one answer, in order**: a miner's channel frames of one
//!   read (shares, `CloseChannel`, `UpdateChannel`, known channel or not) reach the
//!   router in one message, in the order sent, so a `CloseChannel` after a share is
//!   handled after that share's answer; a share on a channel the connection does not
//!   own gets `invalid-channel-id`; a frame that does not decode is dropped (as the pool
//!   drops it, and the connection carries on). A channel's consecutive accepted shares get one
//!   `SubmitShares.Success` whose `last_sequence_number` is the last of them and whose
//!   `new_submits_accepted_count` says how many and `new_shares_sum` the sum of their
//!   difficulties (as the pool counts them: `sv2c_channels::acks`), sent before the next answer to that miner and after the run's last share.
//! * **`UpdateChannel`**: an unknown channel (or another miner's) is answered
//!   `UpdateChannel.Error` `invalid-channel-id`, an all-zero `maximum_target`
//!   `max-target-out-of-range`; a lower `maximum_target` makes the channel target
//!   harder when it is below the upstream target, and the miner gets `SetTarget`;
//!   nothing else is answered (`nominal_hash_rate` is not used: the upstream channel has
//!   the proxy's own).
//! * **Acknowledgement policy**: the miner's `Success` means "valid for the work the
//!   proxy last saw, by the pool's own rules". What the proxy cannot know (a new tip
//!   still on its way, a pool restart, a third-party pool's own rules) is bounded: at most
//!   [`ProxyConfig::max_unconfirmed_shares`] (default 1,024) shares are acknowledged to
//!   miners and not yet answered by the pool. Past that, a checked share is still sent
//!   to the pool, but its miner's answer waits for the pool's and is the pool's (success
//!   or its error code), in order behind it; once such an answer has waited
//!   [`ProxyConfig::pool_answer_timeout`] (default 30 s), or
//!   [`MAX_HELD_SHARES`](aggregate::MAX_HELD_SHARES) answers wait for it, the pool is
//!   taken as gone, as a lost connection is (every miner is told to reconnect, or with
//!   several upstreams moved to the next pool: [below](#miners-across-a-switch); the
//!   answers still owed are then `stale-share`). So while the pool is frozen,
//!   miners hear `Success` for at most the bound's worth of shares, then no answer until
//!   the pool answers (each then gets the pool's verdict) or the proxy gives it up. The counts are in [`ProxyStats`] and
//!   the metrics (`sv2c_proxy_shares{state="acknowledged"|"confirmed"|"refused_after_ack"|"left_unconfirmed"}`,
//!   `sv2c_proxy_shares_unconfirmed`).
//! * Shares wait for their check in a queue of [`ProxyConfig::upstream_queue`] reads
//!   (the pool's answers, jobs and the check itself run on one task, the router); a full
//!   queue slows the miners down, as in the default mode. The pool closing the proxy's
//!   channel ends the pool connection as its loss does ([`supervise`] then redials, or
//!   with several upstreams moves the miners to the next pool).
//! * **Stratum V1 miners** ([`sv1`], [`Proxy::start_with_sv1`], [`Sv1Config`]): each SV1
//!   connection is an extended miner channel of this upstream channel, its task talking
//!   to the router as an Sv2 miner's does; with SV1 served, the plain Sv2 listener takes
//!   SV1 miners too (the first bytes decide).
//!
//! # Miners across a switch
//!
//! With several upstreams ([`supervise_upstreams`]) an aggregating proxy keeps its
//! listener, its miners' connections and their channels from one pool connection to the
//! next: they are the proxy's, not the pool's. What lives and dies with a pool
//! connection is the router's *attachment*: the connection's reads, its writer task,
//! and the proxy's extended channel on it (`Aggregate`'s upstream channel id, its
//! [`ClientChannel`](sv2c_channels::client::ClientChannel): prefix `P`, size `n`, target,
//! jobs, and the ledger of shares that pool owes answers for).
//!
//! ```text
//!  supervise_upstreams           router (one task, the whole life of the proxy)      miners
//!  pool A lost ─────────────────▶ detach: A's reads dropped, A's ledger settled ───▶ stale-share
//!  (or: pool A preferred over,   (acknowledged shares stay acknowledged; held          for shares
//!   silent: A still attached)     answers: stale-share); every share now stale-share  until then
//!  dial B, SetupConnection,
//!  RequestExtensions, open the
//!  extended channel (P', n') ───▶ Attach: B's reads, a writer task for B;
//!                                  per miner channel, same id and sub-prefix S:
//!                                  SetExtranoncePrefix P' ‖ S ‖ zeros ──────────────▶ (Sv2, or SV1
//!                                  SetTarget (B's target, or max_target if harder) ──▶ set_extranonce)
//!                                  B's jobs and tip as they come, ids + job_base ────▶
//! ```
//!
//! * **The prefix**: a standard channel's `extranonce_prefix` is the whole extranonce,
//!   `P' ‖ S ‖ zeros` (`|P'| + n'` bytes); an extended channel keeps the
//!   `extranonce_size` it was granted and gets `P' ‖ S ‖ zeros` up to where its own
//!   bytes start. A new pool that leaves an extended channel fewer bytes than it was
//!   granted (`n' − 4` below its `extranonce_size`) cannot take it: that miner is sent
//!   `Reconnect` and disconnected, and opens a new channel on reconnecting.
//! * **Jobs and stale shares**: miners are sent each pool's job ids plus a shift that
//!   changes with every pool connection, so a job of the new pool never has the id of
//!   one of the old pool's, even when both pools number their jobs alike. A share on one
//!   of the old pool's jobs (remembered up to 4,096) is answered `stale-share` and goes
//!   nowhere; between the loss of a pool and the next connection, every share is.
//! * **Extensions**: those of the new pool. A miner's `RequestExtensions` is answered
//!   with what the current pool granted; a `user_identity` TLV (0x0002) rides on a
//!   share only to a pool that granted 0x0002, and is dropped otherwise.
//! * **The old connection**: its reads are dropped at once; its writer writes what was
//!   queued for it (bounded by [`ProxyConfig::write_timeout`]) and closes it. Nothing of a
//!   miner's is left on it. [`ProxyStats::shares_left_unconfirmed`] counts the
//!   acknowledged shares it never answered, so that `shares_acknowledged` =
//!   `shares_confirmed` + `shares_refused_after_ack` + `shares_left_unconfirmed` + the
//!   acknowledged part of `shares_unconfirmed`; [`ProxyStats::upstream_switches_kept`]
//!   counts the moves.
//! * **No pool at all**: once a whole round of upstreams has failed, miners are told to
//!   `Reconnect` and the proxy is shut down, as in the forwarding mode; a new proxy
//!   starts with the next pool that answers.
//!
//! In the forwarding mode a miner channel is the pool's own channel (its id, prefix and
//! jobs): it cannot outlive the pool connection, and miners get `Reconnect` on every
//! switch. A single upstream ([`supervise`]) is redialled with miners told to reconnect,
//! in either mode.
//!
//! [`BufferPool`]: sv2c_buffer_pool::BufferPool
//! [`Frame`]: sv2c_codec::Frame
//! [`Frame::set_channel_id`]: sv2c_codec::Frame::set_channel_id
//! [`FrameCodec`]: sv2c_codec::FrameCodec

mod accept;
pub mod aggregate;
mod board;
mod downstream;
mod mailbox;
mod messages;
mod router;
pub mod routing;
mod run;
mod shared;
mod supervisor;
pub mod sv1;
mod upstream;
mod writer;

pub use downstream::{downstream_noise_transport, downstream_transport};
pub use run::Proxy;
pub use shared::{
    DEFAULT_UPSTREAM_EXTENSIONS, MAX_SV1_WORKERS, ProxyConfig, ProxyError, ProxyStats,
    REQUIRES_FIXED_VERSION, REQUIRES_STANDARD_JOBS, REQUIRES_VERSION_ROLLING,
    REQUIRES_WORK_SELECTION, Sv1Config, Sv1WorkerStats,
};
pub use supervisor::{Backoff, Failover, supervise, supervise_upstreams};
pub use upstream::{
    Upstream, request_upstream_extensions, setup_upstream, upstream_noise_transport,
    upstream_transport,
};
