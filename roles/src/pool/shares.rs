//! Shares: each one checked against its channel as its batch is read, counted, and
//! answered in order, consecutive accepted shares of a channel with one
//! `SubmitShares.Success` ([`Acks`]); the other messages of a batch are queued for the
//! connection.

use sv2c_binary::messages::{Message, MessageRef};
use sv2c_binary::tlv::{TlvTail, TlvTailBuf, UserIdentity};
use sv2c_channels::acks::Acks;
use sv2c_channels::codes::{INVALID_CHANNEL_ID, INVALID_USER_IDENTITY};
use sv2c_channels::server::{Share, ShareOk};
use sv2c_channels::tailed::{Tailed, TailedRef};

use super::channel::{Channel, Channels};
use super::state::Shared;

/// What a connection counted in a batch and adds to the pool's shared counters and
/// ledger once, after the batch (the connection's `record_workers`): no shared cache line is
/// written per share.
#[derive(Debug, Default)]
pub(super) struct Tally {
    /// Shares accepted.
    pub(super) accepted: u64,
    /// The channels with `unrecorded` shares.
    pub(super) channels: Vec<u32>,
}

/// What one batch of messages leaves to do.
#[derive(Debug, Default)]
pub(super) struct Inbox {
    /// Answers to the shares checked as they were handed out, to send in order (one
    /// `SubmitShares.Success` for consecutive accepted shares of a channel).
    pub(super) acks: Acks<()>,
    /// Every message from the first that is not a share on, owned, in order: for
    /// `on_message`, which may need to send, after the answers.
    pub(super) queued: Vec<Tailed<Message>>,
}

impl Inbox {
    /// A share (while nothing is queued) is checked and answered here; anything else is
    /// queued.
    pub(super) fn take(
        &mut self,
        m: &TailedRef<'_, MessageRef<'_>>,
        shared: &Shared,
        (channels, tally): (&mut Channels, &mut Tally),
        worker_tlv: bool,
    ) {
        match ShareFields::of(&m.message) {
            Some(share) if self.queued.is_empty() => {
                let tail = worker_tlv.then_some(m.tail);
                answer(&mut self.acks, shared, (channels, tally), share, tail);
            }
            _ => self.queued.push(Tailed {
                message: m.message.to_owned_value(),
                tail: TlvTailBuf::copy_from_slice(m.tail.as_bytes()),
            }),
        }
    }
}

/// A share's fields, from either kind of `SubmitShares`.
pub(super) struct ShareFields<'a> {
    pub(super) channel_id: u32,
    pub(super) sequence_number: u32,
    pub(super) job_id: u32,
    /// Empty for a standard share.
    pub(super) extranonce: &'a [u8],
    pub(super) version: u32,
    pub(super) ntime: u32,
    pub(super) nonce: u32,
}

impl<'a> ShareFields<'a> {
    /// The share `m` is, if it is one.
    pub(super) fn of(m: &MessageRef<'a>) -> Option<Self> {
        Some(match m {
            MessageRef::SubmitSharesStandard(s) => ShareFields {
                channel_id: s.channel_id,
                sequence_number: s.sequence_number,
                job_id: s.job_id,
                extranonce: &[],
                version: s.version,
                ntime: s.ntime,
                nonce: s.nonce,
            },
            MessageRef::SubmitSharesExtended(s) => ShareFields {
                channel_id: s.channel_id,
                sequence_number: s.sequence_number,
                job_id: s.job_id,
                extranonce: s.extranonce.as_bytes(),
                version: s.version,
                ntime: s.ntime,
                nonce: s.nonce,
            },
            _ => return None,
        })
    }
}

/// Checks and counts a share (`tail`: its TLV tail, if the connection negotiated
/// 0x0002) and puts its answer in `acks`.
pub(super) fn answer(
    acks: &mut Acks<()>,
    shared: &Shared,
    (channels, tally): (&mut Channels, &mut Tally),
    share: ShareFields<'_>,
    tail: Option<TlvTail<'_>>,
) {
    let (channel_id, sequence_number) = (share.channel_id, share.sequence_number);
    match answer_share_with_tail(shared, (channels, tally), share, tail) {
        Ok(work) => acks.accepted((), channel_id, sequence_number, work),
        Err(code) => acks.refused((), channel_id, sequence_number, code),
    }
}

/// Checks a share against its channel ([`ServerChannel::validate_share`](sv2c_channels::server::ServerChannel::validate_share)) and returns
/// the channel. `Err` holds the error code to answer with.
fn check<'c>(
    shared: &Shared,
    channels: &'c mut Channels,
    share: &ShareFields<'_>,
) -> Result<&'c mut Channel, &'static str> {
    let channel = channels
        .get_mut(&share.channel_id)
        .ok_or(INVALID_CHANNEL_ID)?;
    let verdict = channel.inner.validate_share(&Share {
        job_id: share.job_id,
        nonce: share.nonce,
        ntime: share.ntime,
        version: share.version,
        extranonce: share.extranonce,
    });
    match verdict {
        Ok(ShareOk::Valid { .. }) => Ok(channel),
        Ok(ShareOk::BlockFound {
            hash,
            template_id,
            header,
            coinbase,
        }) => {
            let found = (&hash, template_id, &header, &coinbase[..]);
            shared.block_found(share.channel_id, found);
            Ok(channel)
        }
        Err(e) => Err(e.code()),
    }
}

/// Checks a share and counts the verdict (an accepted one for `worker`, the share's
/// `user_identity` TLV, or else its channel's identity: in the channel, its id added to
/// `tally`, for the connection's `record_workers`); returns the share's work (the difficulty
/// of its channel's target, what its acknowledgement's `new_shares_sum` adds up:
/// [`sv2c_channels::acks`]) or the error code to answer with.
fn answer_share(
    shared: &Shared,
    channels: &mut Channels,
    tally: &mut Tally,
    share: ShareFields<'_>,
    worker: Option<&[u8]>,
) -> Result<f64, &'static str> {
    let channel_id = share.channel_id;
    match check(shared, channels, &share) {
        Ok(channel) => {
            tally.accepted += 1;
            if let Some(vardiff) = &mut channel.vardiff {
                vardiff.on_share();
            }
            if let Some(who) = worker {
                let work = sv2c_channels::pow::expected_hashes(channel.inner.target());
                let now = shared.now_secs();
                let mut ledger = shared.workers.lock().unwrap_or_else(|e| e.into_inner());
                ledger.record(who, 1, work, now);
            } else {
                // Its work is added when it is recorded (the target does not change
                // before that: see `record_workers`).
                if channel.unrecorded == 0 {
                    tally.channels.push(channel_id);
                }
                channel.unrecorded += 1;
            }
            Ok(sv2c_channels::pow::target_to_difficulty(
                channel.inner.target(),
            ))
        }
        Err(code) => Err(refused(shared, code)),
    }
}

/// A share refused with `code`: counted by reason, never logged (a miner below target
/// would flood the log).
fn refused(shared: &Shared, code: &'static str) -> &'static str {
    shared.counters.shares_rejected.count(code.as_bytes());
    code
}

/// Checks a share's `user_identity` TLV, if the connection negotiated 0x0002 (`Ok(None)`
/// otherwise, or without one), and answers the share.
fn answer_share_with_tail(
    shared: &Shared,
    (channels, tally): (&mut Channels, &mut Tally),
    share: ShareFields<'_>,
    tail: Option<TlvTail<'_>>,
) -> Result<f64, &'static str> {
    match tail.map(|t| t.user_identity()).transpose() {
        Ok(worker) => {
            let worker = worker.flatten();
            let worker = worker.as_ref().map(UserIdentity::as_bytes);
            answer_share(shared, channels, tally, share, worker)
        }
        Err(_) => Err(refused(shared, INVALID_USER_IDENTITY)),
    }
}
