//! A connection's channels and the decisions about them that send nothing: whether a
//! channel may open ([`admit`], the budgets), what it opens with ([`open_standard`],
//! [`open_extended`]: its extranonce prefix, target and `…Success`), what `UpdateChannel`
//! makes of it ([`Channel::update`]) and what `CloseChannel` gives back ([`close`], and
//! [`close_all`] when the connection ends). The connection ([`super::connection`]) sends
//! what these decide.

use std::collections::HashMap;
use std::sync::PoisonError;
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

use super::state::{EXTRANONCE_PREFIX_LEN, Shared, bump};

/// A channel's extranonce prefix, unique among the pool's open channels.
type Prefix = [u8; EXTRANONCE_PREFIX_LEN];
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
    /// Its extranonce prefix from the pool's allocator, given back when it closes (a
    /// standard channel's extranonce is this and zeros).
    prefix: Prefix,
}

/// A channel opened: its id, the channel, and the `…Success` to answer with.
pub(super) type Opened = (u32, Box<Channel>, Message);

/// Whether one more channel, whose owner accepts at most `max_target`, may open on a
/// connection holding `open_here`: the target is one a share can meet, and both channel
/// budgets have room. `Ok`: a place in the pool's budget is taken, and the channel's
/// extranonce prefix (the channel must be inserted into the connection's channels, which
/// give both back).
///
/// # Errors
/// The `OpenMiningChannel.Error` code to refuse with.
pub(super) fn admit(
    shared: &Shared,
    open_here: usize,
    max_target: &U256,
) -> Result<Prefix, &'static str> {
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
    // Eight bytes of counter outnumber any budget; every prefix in use is refused as the
    // budget is.
    let prefix = taken.then(|| new_prefix(shared)).flatten();
    match prefix {
        Some(prefix) => Ok(prefix),
        None => {
            if taken {
                counters.channels_open.fetch_sub(1, Relaxed);
            }
            bump(&counters.channels_refused);
            Err(TOO_MANY_CHANNELS)
        }
    }
}

/// A prefix no open channel of the pool has, from its allocator.
fn new_prefix(shared: &Shared) -> Option<Prefix> {
    let mut prefixes = shared
        .prefixes
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let prefix = prefixes.allocate().ok()?;
    Prefix::try_from(&prefix[..]).ok()
}

/// `OpenStandardMiningChannel` on a connection holding `open_here` channels, in group
/// `group_id`: the channel, or the code to refuse it with.
pub(super) fn open_standard(
    shared: &Shared,
    open_here: usize,
    open: &OpenStandardMiningChannel,
    group_id: u32,
) -> Result<Opened, &'static str> {
    let prefix = admit(shared, open_here, &open.max_target)?;
    let channel_id = shared.next_id.fetch_add(1, Relaxed);
    let mut extranonce = prefix.to_vec();
    extranonce.resize(EXTRANONCE_PREFIX_LEN + 8, 0);
    let target = harder(&shared.config.share_target, &open.max_target);
    let success = OpenStandardMiningChannelSuccess {
        request_id: open.request_id,
        channel_id,
        target,
        extranonce_prefix: B032::try_from(&extranonce[..]).unwrap_or_default(),
        group_channel_id: group_id,
    };
    let inner = ServerChannel::standard(
        channel_id,
        extranonce,
        target,
        VERSION_ROLLING_MASK,
        Vec::new(),
    );
    let user = open.user_identity.as_bytes().to_vec();
    let channel = Channel::new(shared, inner, user, open.max_target, prefix);
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
    let prefix = admit(shared, open_here, &open.max_target)?;
    let channel_id = shared.next_id.fetch_add(1, Relaxed);
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
        prefix.to_vec(),
        size,
        target,
        VERSION_ROLLING_MASK,
        Vec::new(),
    );
    let user = open.user_identity.as_bytes().to_vec();
    let channel = Channel::new(shared, inner, user, open.max_target, prefix);
    Ok((channel_id, channel, success.into()))
}

impl Channel {
    /// A channel around `inner` (whose jobs are built by the pool's job cache and
    /// installed: its own pool outputs are never read), with a vardiff controller if the
    /// pool has one, bounded by `max_target`; `prefix` is its extranonce prefix.
    fn new(
        shared: &Shared,
        inner: ServerChannel,
        user_identity: Vec<u8>,
        max_target: U256,
        prefix: Prefix,
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
            prefix,
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

/// `CloseChannel`: the channel leaves `channels`, and its place in the pool's budget and
/// its extranonce prefix are given back (nothing is answered).
pub(super) fn close(channels: &mut Channels, channel_id: u32, shared: &Shared) {
    let Some(channel) = channels.remove(&channel_id) else {
        return;
    };
    give_back(shared, [&channel]);
    // A long-lived connection (a proxy's) whose channels mostly closed gives back the
    // map's room: allocated as they opened, it would pin pages that malloc_trim cannot
    // give back.
    let (open, room) = (channels.len(), channels.capacity());
    if room > 64 && open < room / 4 {
        channels.shrink_to(open * 2);
    }
}

/// The connection has ended: every channel's place in the pool's budget and extranonce
/// prefix are given back.
pub(super) fn close_all(channels: &Channels, shared: &Shared) {
    give_back(shared, channels.values());
}

/// Gives back the budget places and prefixes of `closed`.
fn give_back<'a>(shared: &Shared, closed: impl IntoIterator<Item = &'a Box<Channel>>) {
    let mut prefixes = shared
        .prefixes
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let mut n = 0;
    for channel in closed {
        prefixes.release(&channel.prefix);
        n += 1;
    }
    drop(prefixes);
    shared.counters.channels_open.fetch_sub(n, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::PoolConfig;
    use sv2c_binary::Str0255;

    fn standard() -> OpenStandardMiningChannel {
        OpenStandardMiningChannel {
            request_id: 1,
            user_identity: Str0255::default(),
            nominal_hash_rate: 1.0,
            max_target: U256([0xff; 32]),
        }
    }

    fn extended() -> OpenExtendedMiningChannel {
        OpenExtendedMiningChannel {
            request_id: 2,
            user_identity: Str0255::default(),
            nominal_hash_rate: 1.0,
            max_target: U256([0xff; 32]),
            min_extranonce_size: 0,
        }
    }

    /// The extranonce (prefix) a channel was opened with.
    fn prefix_of(success: &Message) -> Vec<u8> {
        match success {
            Message::OpenStandardMiningChannelSuccess(ok) => ok.extranonce_prefix.to_vec(),
            Message::OpenExtendedMiningChannelSuccess(ok) => ok.extranonce_prefix.to_vec(),
            other => panic!("not a success: {other:?}"),
        }
    }

    /// Every open channel of the pool, over all its connections, has its own prefix: 8
    /// bytes for an extended channel, 16 (the prefix and zeros) for a standard one; a
    /// closed channel's prefix is given back and handed out again, and so are those of a
    /// connection that ends.
    #[test]
    fn prefixes_are_unique_among_open_channels_and_given_back() {
        let shared = Shared::new(PoolConfig::default(), None);
        let (mut first, mut second) = (Channels::new(), Channels::new());
        let mut seen = Vec::new();
        for i in 0..6 {
            let channels = if i % 2 == 0 { &mut first } else { &mut second };
            let (id, channel, success) = if i % 3 == 0 {
                open_standard(&shared, channels.len(), &standard(), 0).unwrap()
            } else {
                open_extended(&shared, channels.len(), &extended(), 0).unwrap()
            };
            let prefix = prefix_of(&success);
            let len = if i % 3 == 0 { 16 } else { 8 };
            assert_eq!(prefix.len(), len);
            assert!(prefix[8..].iter().all(|&b| b == 0));
            seen.push(prefix[..8].to_vec());
            channels.insert(id, channel);
        }
        let mut distinct = seen.clone();
        distinct.sort();
        distinct.dedup();
        assert_eq!(distinct.len(), seen.len(), "{seen:?}");
        assert_eq!(shared.counters.channels_open.load(Relaxed), 6);

        let id = *first.keys().next().unwrap();
        let freed = first[&id].prefix;
        close(&mut first, id, &shared);
        let (_, _, success) = open_extended(&shared, 0, &extended(), 0).unwrap();
        assert_eq!(prefix_of(&success), freed);

        close_all(&second, &shared);
        assert_eq!(shared.counters.channels_open.load(Relaxed), 6 - 1 + 1 - 3);
        let again: Vec<Vec<u8>> = (0..3)
            .map(|_| prefix_of(&open_extended(&shared, 0, &extended(), 0).unwrap().2))
            .collect();
        assert!(again.iter().all(|p| seen.contains(p)), "{again:?}");
    }
}
