//! A connection's channels and the decisions about them that send nothing: whether a
//! channel may open ([`admit`], the budgets), what it opens with ([`open_standard`],
//! [`open_extended`]: its extranonce prefix, target and `…Success`), what `UpdateChannel`
//! makes of it ([`Channel::update`]) and what `CloseChannel` gives back ([`close`]). The
//! connection ([`super::connection`]) sends what these decide.

use std::collections::HashMap;
use std::sync::atomic::Ordering::Relaxed;

use sv2c_binary::messages::{
    Message, OpenExtendedMiningChannel, OpenExtendedMiningChannelSuccess,
    OpenStandardMiningChannel, OpenStandardMiningChannelSuccess, SetTarget, UpdateChannel,
};
use sv2c_binary::{B032, U256};
use sv2c_channels::codes::{
    MAX_TARGET_OUT_OF_RANGE, MIN_EXTRANONCE_SIZE_TOO_LARGE, TOO_MANY_CHANNELS,
};
use sv2c_channels::pow::harder;
use sv2c_channels::server::{ServerChannel, VERSION_ROLLING_MASK};
use sv2c_channels::vardiff::{Vardiff, VardiffConfig};

use super::state::{Shared, bump};

/// Bytes of extranonce the pool puts before the miner's own (channel-specific).
const EXTRANONCE_PREFIX_LEN: usize = 8;
/// A target no hash meets.
const ZERO_TARGET: U256 = U256([0; 32]);

/// A connection's channels, boxed: the map allocates room for several entries at once, so
/// a connection with one channel would otherwise hold 1.4 KiB of map.
pub(super) type Channels = HashMap<u32, Box<Channel>>;

/// One channel of a connection.
#[derive(Debug)]
pub(super) struct Channel {
    /// Jobs, chain tip and share validation ([`ServerChannel`]).
    pub(super) inner: ServerChannel,
    /// The `user_identity` the channel was opened with.
    pub(super) user_identity: Vec<u8>,
    /// The largest target its owner accepts (at the open, or its last `UpdateChannel`).
    pub(super) max_target: U256,
    /// Its difficulty controller, with [`PoolConfig::vardiff`](super::PoolConfig).
    pub(super) vardiff: Option<Vardiff>,
    /// Accepted shares counted for `user_identity` and not yet added to the pool's
    /// ledger (done once per batch, by the connection).
    pub(super) unrecorded: u64,
}

/// A channel opened: its id, the channel, and the `…Success` to answer with.
pub(super) type Opened = (u32, Box<Channel>, Message);

/// Whether one more channel, whose owner accepts at most `max_target`, may open on a
/// connection holding `open_here`: the target is one a share can meet, and both channel
/// budgets have room. `Ok`: a place in the pool's budget is taken (the channel must be
/// inserted into the connection's channels, which give it back).
///
/// # Errors
/// The `OpenMiningChannel.Error` code to refuse with.
pub(super) fn admit(
    shared: &Shared,
    open_here: usize,
    max_target: &U256,
) -> Result<(), &'static str> {
    if *max_target == ZERO_TARGET {
        return Err(MAX_TARGET_OUT_OF_RANGE);
    }
    let (config, counters) = (&shared.config, &shared.counters);
    let max = config.max_channels as u64;
    let taken = open_here < config.max_channels_per_connection
        && counters
            .channels_open
            .fetch_update(Relaxed, Relaxed, |n| (n < max).then_some(n + 1))
            .is_ok();
    if !taken {
        bump(&counters.channels_refused);
        return Err(TOO_MANY_CHANNELS);
    }
    Ok(())
}

/// `OpenStandardMiningChannel` on a connection holding `open_here` channels, in group
/// `group_id`: the channel, or the code to refuse it with.
pub(super) fn open_standard(
    shared: &Shared,
    open_here: usize,
    open: &OpenStandardMiningChannel,
    group_id: u32,
) -> Result<Opened, &'static str> {
    admit(shared, open_here, &open.max_target)?;
    let channel_id = shared.next_id.fetch_add(1, Relaxed);
    let prefix = extranonce_prefix(channel_id, EXTRANONCE_PREFIX_LEN + 8);
    let target = harder(&shared.config.share_target, &open.max_target);
    let success = OpenStandardMiningChannelSuccess {
        request_id: open.request_id,
        channel_id,
        target,
        extranonce_prefix: B032::try_from(&prefix[..]).unwrap_or_default(),
        group_channel_id: group_id,
    };
    let inner =
        ServerChannel::standard(channel_id, prefix, target, VERSION_ROLLING_MASK, Vec::new());
    let user = open.user_identity.as_bytes().to_vec();
    let channel = Channel::new(shared, inner, user, open.max_target);
    Ok((channel_id, channel, success.into()))
}

/// `OpenExtendedMiningChannel` on a connection holding `open_here` channels, in group
/// `group_id`: the channel, or the code to refuse it with.
pub(super) fn open_extended(
    shared: &Shared,
    open_here: usize,
    open: &OpenExtendedMiningChannel,
    group_id: u32,
) -> Result<Opened, &'static str> {
    let wanted = usize::from(open.min_extranonce_size);
    let size = wanted.max(usize::from(shared.config.extranonce_size));
    if size + EXTRANONCE_PREFIX_LEN > 32 {
        return Err(MIN_EXTRANONCE_SIZE_TOO_LARGE);
    }
    admit(shared, open_here, &open.max_target)?;
    let channel_id = shared.next_id.fetch_add(1, Relaxed);
    let prefix = extranonce_prefix(channel_id, EXTRANONCE_PREFIX_LEN);
    let target = harder(&shared.config.share_target, &open.max_target);
    let success = OpenExtendedMiningChannelSuccess {
        request_id: open.request_id,
        channel_id,
        target,
        extranonce_size: size as u16,
        extranonce_prefix: B032::try_from(&prefix[..]).unwrap_or_default(),
        group_channel_id: group_id,
    };
    let inner = ServerChannel::extended(
        channel_id,
        prefix,
        size,
        target,
        VERSION_ROLLING_MASK,
        Vec::new(),
    );
    let user = open.user_identity.as_bytes().to_vec();
    let channel = Channel::new(shared, inner, user, open.max_target);
    Ok((channel_id, channel, success.into()))
}

impl Channel {
    /// A channel around `inner` (whose jobs are built by the pool's job cache and
    /// installed: its own pool outputs are never read), with a vardiff controller if the
    /// pool has one, bounded by `max_target`.
    fn new(
        shared: &Shared,
        inner: ServerChannel,
        user_identity: Vec<u8>,
        max_target: U256,
    ) -> Box<Channel> {
        let vardiff = shared.config.vardiff.map(|config| {
            let config = VardiffConfig {
                max_target,
                ..config
            };
            Vardiff::new(config, *inner.target(), shared.now_secs())
        });
        Box::new(Channel {
            inner,
            user_identity,
            max_target,
            vardiff,
            unrecorded: 0,
        })
    }

    /// `UpdateChannel` for this channel: its maximum target is its owner's new one; a
    /// target easier than it is lowered to it. `Ok(Some)`: the `SetTarget` announcing a
    /// new target; `Ok(None)`: nothing to say (the spec defines no success message). The
    /// nominal hash rate is not used.
    ///
    /// # Errors
    /// The `UpdateChannel.Error` code (a zero `maximum_target`).
    pub(super) fn update(
        &mut self,
        update: &UpdateChannel,
        shared: &Shared,
    ) -> Result<Option<SetTarget>, &'static str> {
        if update.maximum_target == ZERO_TARGET {
            return Err(MAX_TARGET_OUT_OF_RANGE);
        }
        if update.maximum_target == self.max_target {
            return Ok(None); // a new hash rate only
        }
        self.max_target = update.maximum_target;
        // Without vardiff the channel's target is the pool's within its maximum, as at
        // the open; with vardiff, the controller's within it, and bounded by it from now.
        let config = &shared.config;
        let base = self
            .vardiff
            .as_ref()
            .map_or(config.share_target, |v| *v.target());
        let target = harder(&base, &update.maximum_target);
        if let Some(vardiff) = config.vardiff {
            let vardiff = VardiffConfig {
                max_target: update.maximum_target,
                ..vardiff
            };
            self.vardiff = Some(Vardiff::new(vardiff, target, shared.now_secs()));
        }
        if target == *self.inner.target() {
            return Ok(None);
        }
        self.inner.set_target(target);
        Ok(Some(SetTarget {
            channel_id: update.channel_id,
            maximum_target: target,
        }))
    }
}

/// `CloseChannel`: the channel leaves `channels`, and its place in the pool's budget is
/// given back (nothing is answered).
pub(super) fn close(channels: &mut Channels, channel_id: u32, shared: &Shared) {
    let closed = channels.remove(&channel_id).map_or(0, |_| 1);
    // A long-lived connection (a proxy's) whose channels mostly closed gives back the
    // map's room: allocated as they opened, it would pin pages that malloc_trim cannot
    // give back.
    let (open, room) = (channels.len(), channels.capacity());
    if room > 64 && open < room / 4 {
        channels.shrink_to(open * 2);
    }
    shared.counters.channels_open.fetch_sub(closed, Relaxed);
}

/// A channel's extranonce prefix: its id, zero-padded to `len` bytes.
fn extranonce_prefix(channel_id: u32, len: usize) -> Vec<u8> {
    let mut prefix = vec![0u8; len];
    prefix[..4].copy_from_slice(&channel_id.to_be_bytes());
    prefix
}
