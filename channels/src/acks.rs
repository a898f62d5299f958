//! Answering shares: one `SubmitShares.Success` for a channel's consecutive accepted
//! shares, one `SubmitShares.Error` for each refused share, in the order the shares came.
//!
//! A server reads several shares at once (one socket read, one batch of frames), checks
//! each ([`ServerChannel::validate_share`](crate::server::ServerChannel::validate_share))
//! and hands the verdicts, in order, to [`Acks`]:
//!
//! * an accepted share extends the open acknowledgement if that is for the same
//!   connection and channel (`last_sequence_number` becomes the share's,
//!   `new_submits_accepted_count` grows by one); otherwise it opens a new one;
//! * a refused share is answered with its own `SubmitShares.Error`, after the open
//!   acknowledgement, which it closes;
//! * [`Acks::drain`] hands out the answers in order and closes the open acknowledgement.
//!   Call it at the end of each read, and before sending anything else to a connection
//!   (answers go out in the order of the messages they answer: an acknowledgement held
//!   back past the answer to a later message would arrive out of order).
//!
//! So every share is covered by exactly one answer, in order, and a `SubmitShares.Success`
//! covers a run of shares no other answer interrupts.
//!
//! # `new_shares_sum`: the sum of the shares' difficulty
//! The spec gives `SubmitShares.Success` both `new_submits_accepted_count` (how many
//! shares) and `new_shares_sum` (a "sum of shares", with no unit). A second count would
//! repeat the first; SRI's `channels_sv2` 8.0.0 sums each accepted share's *work*, the
//! difficulty of the target it met (1 = Bitcoin's difficulty-1 target), and SRI's clients
//! add `new_shares_sum` to the work they count as acknowledged. So this module sums work
//! too, and the caller gives each accepted share's: usually
//! `pow::target_to_difficulty(channel.target())`
//! ([`target_to_difficulty`](crate::pow::target_to_difficulty)). The sum is kept exactly
//! (`f64`) and sent rounded down, as SRI does; shares easier than difficulty 1 (test
//! networks) may then sum to 0 while `new_submits_accepted_count` still says how many
//! there were. A server that wants a count passes a work of 1.0 per share.
//!
//! ```
//! use sv2c_channels::acks::{Acks, ShareAnswer};
//!
//! // One connection (`()`): shares 1 and 2 of channel 7 accepted, 3 refused, 4 accepted.
//! let mut acks = Acks::new();
//! acks.accepted((), 7, 1, 2.0);
//! acks.accepted((), 7, 2, 2.0);
//! acks.refused((), 7, 3, "difficulty-too-low");
//! acks.accepted((), 7, 4, 2.0);
//! let answers: Vec<ShareAnswer> = acks.drain().map(|((), a)| a).collect();
//! let [ShareAnswer::Success(first), ShareAnswer::Error(refused), ShareAnswer::Success(last)] =
//!     &answers[..]
//! else {
//!     panic!("{answers:?}")
//! };
//! assert_eq!((first.last_sequence_number, first.new_submits_accepted_count), (2, 2));
//! assert_eq!(first.new_shares_sum, 4);
//! assert_eq!(refused.sequence_number, 3);
//! assert_eq!((last.last_sequence_number, last.new_submits_accepted_count), (4, 1));
//! ```

use alloc::vec::Vec;
use sv2c_binary::Str0255;
use sv2c_binary::messages::{Message, SubmitSharesError, SubmitSharesSuccess};

/// The answer to one or more shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShareAnswer {
    /// A run of accepted shares of one channel.
    Success(SubmitSharesSuccess),
    /// One refused share.
    Error(SubmitSharesError),
}

impl ShareAnswer {
    /// The channel the answer is for.
    pub fn channel_id(&self) -> u32 {
        match self {
            ShareAnswer::Success(s) => s.channel_id,
            ShareAnswer::Error(e) => e.channel_id,
        }
    }
}

impl From<ShareAnswer> for Message {
    fn from(a: ShareAnswer) -> Self {
        match a {
            ShareAnswer::Success(s) => Message::SubmitSharesSuccess(s),
            ShareAnswer::Error(e) => Message::SubmitSharesError(e),
        }
    }
}

/// The answers to shares, coalesced (see the [module docs](self)).
///
/// `C` says where an answer goes: a connection id for a server that answers several
/// connections from one place, `()` for one `Acks` per connection. A run of accepted
/// shares continues only for the same `C` and channel id.
#[derive(Debug, Clone)]
pub struct Acks<C> {
    /// In sending order; the last, if a `Success`, is the open acknowledgement.
    answers: Vec<(C, ShareAnswer)>,
    /// The exact work of the open acknowledgement (its `new_shares_sum` is this, rounded
    /// down).
    open_work: f64,
    /// Whether the last answer is open (`drain` and `refused` close it).
    open: bool,
}

impl<C> Default for Acks<C> {
    fn default() -> Self {
        Self::new()
    }
}

impl<C> Acks<C> {
    /// No answers yet.
    pub const fn new() -> Self {
        Acks {
            answers: Vec::new(),
            open_work: 0.0,
            open: false,
        }
    }

    /// Whether there is nothing to send.
    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    /// The answers to send, in order, taken out (the open acknowledgement is closed: the
    /// next accepted share starts a new one). The memory is kept for the next read.
    pub fn drain(&mut self) -> alloc::vec::Drain<'_, (C, ShareAnswer)> {
        self.open = false;
        self.answers.drain(..)
    }

    /// A refused share: its `SubmitShares.Error` with `error_code` (one of
    /// [`codes`](crate::codes); a code over 255 bytes is sent empty), after the open
    /// acknowledgement, which it closes.
    pub fn refused(&mut self, to: C, channel_id: u32, sequence_number: u32, error_code: &str) {
        self.open = false;
        let error = SubmitSharesError {
            channel_id,
            sequence_number,
            error_code: Str0255::try_from(error_code).unwrap_or_default(),
        };
        self.answers.push((to, ShareAnswer::Error(error)));
    }
}

impl<C: PartialEq> Acks<C> {
    /// An accepted share of `work` (see [`new_shares_sum`](self#new_shares_sum-the-sum-of-the-shares-difficulty)):
    /// added to the open acknowledgement if that is for `to` and `channel_id`, otherwise
    /// the first of a new one.
    pub fn accepted(&mut self, to: C, channel_id: u32, sequence_number: u32, work: f64) {
        let work = if work.is_finite() && work > 0.0 {
            work
        } else {
            0.0
        };
        // (No `let` chain: the crate builds with Rust 1.85.)
        if let (true, Some((c, ShareAnswer::Success(ok)))) = (self.open, self.answers.last_mut()) {
            if *c == to && ok.channel_id == channel_id {
                self.open_work += work;
                ok.last_sequence_number = sequence_number;
                ok.new_submits_accepted_count = ok.new_submits_accepted_count.saturating_add(1);
                // `as` rounds down and saturates.
                ok.new_shares_sum = self.open_work as u64;
                return;
            }
        }
        self.open = true;
        self.open_work = work;
        let ok = SubmitSharesSuccess {
            channel_id,
            last_sequence_number: sequence_number,
            new_submits_accepted_count: 1,
            new_shares_sum: work as u64,
        };
        self.answers.push((to, ShareAnswer::Success(ok)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;
    use alloc::vec;
    use proptest::prelude::*;

    /// One share: connection, channel, sequence number, `Ok(work)` or `Err(code)`.
    type Verdict = (u8, u32, u32, Result<f64, String>);

    fn answer(verdicts: &[Verdict]) -> Vec<(u8, ShareAnswer)> {
        let mut acks = Acks::new();
        for (to, channel, seq, verdict) in verdicts {
            match verdict {
                Ok(work) => acks.accepted(*to, *channel, *seq, *work),
                Err(code) => acks.refused(*to, *channel, *seq, code),
            }
        }
        acks.drain().collect()
    }

    /// Every share covered by exactly one answer, in order: a `Success` by the run of
    /// accepted shares of its connection and channel it ends, an `Error` by its share; no
    /// two `Success` in a row for one connection and channel (a run is never split).
    fn check(verdicts: &[Verdict], answers: &[(u8, ShareAnswer)]) -> Result<(), TestCaseError> {
        let mut next = 0;
        let mut last_success: Option<(u8, u32)> = None;
        for (to, a) in answers {
            match a {
                ShareAnswer::Success(ok) => {
                    prop_assert_ne!(last_success, Some((*to, ok.channel_id)), "split run");
                    last_success = Some((*to, ok.channel_id));
                    let n = ok.new_submits_accepted_count as usize;
                    prop_assert!(n >= 1);
                    let run = &verdicts[next..next + n];
                    let mut work = 0.0;
                    for (t, ch, _, v) in run {
                        prop_assert_eq!((t, *ch), (to, ok.channel_id));
                        work += v
                            .as_ref()
                            .map_err(|_| TestCaseError::fail("refused in a run"))?;
                    }
                    prop_assert_eq!(run[n - 1].2, ok.last_sequence_number);
                    prop_assert_eq!(ok.new_shares_sum, work as u64);
                    next += n;
                }
                ShareAnswer::Error(e) => {
                    last_success = None;
                    let (t, ch, seq, v) = &verdicts[next];
                    prop_assert_eq!((t, *ch, *seq), (to, e.channel_id, e.sequence_number));
                    prop_assert_eq!(
                        v.as_ref().err().map(String::as_bytes),
                        Some(e.error_code.as_bytes())
                    );
                    next += 1;
                }
            }
        }
        prop_assert_eq!(next, verdicts.len(), "every share answered");
        Ok(())
    }

    #[test]
    fn runs_per_channel_and_connection() {
        let ok = |to, ch, seq| (to, ch, seq, Ok(1.0));
        let verdicts = vec![
            ok(0, 1, 1),
            ok(0, 1, 2),
            ok(0, 2, 1), // another channel: a new run
            ok(1, 2, 2), // another connection, same channel id: a new run
            ok(1, 2, 3),
            (1, 2, 4, Err("stale-share".into())),
            ok(1, 2, 5),
        ];
        let answers = answer(&verdicts);
        let counts: Vec<(u8, u32, u32, u32)> = answers
            .iter()
            .map(|(to, a)| match a {
                ShareAnswer::Success(s) => (
                    *to,
                    s.channel_id,
                    s.last_sequence_number,
                    s.new_submits_accepted_count,
                ),
                ShareAnswer::Error(e) => (*to, e.channel_id, e.sequence_number, 0),
            })
            .collect();
        assert_eq!(
            counts,
            [
                (0, 1, 2, 2),
                (0, 2, 1, 1),
                (1, 2, 3, 2),
                (1, 2, 4, 0),
                (1, 2, 5, 1)
            ]
        );
        check(&verdicts, &answers).unwrap();
    }

    /// A drain closes the run: the next read's first accepted share starts a new one.
    #[test]
    fn drain_closes_the_open_acknowledgement() {
        let mut acks = Acks::new();
        acks.accepted((), 3, 1, 1.0);
        assert_eq!(acks.drain().count(), 1);
        assert!(acks.is_empty());
        acks.accepted((), 3, 2, 1.0);
        let answers: Vec<_> = acks.drain().collect();
        let [((), ShareAnswer::Success(s))] = &answers[..] else {
            panic!("{answers:?}")
        };
        assert_eq!(
            (s.last_sequence_number, s.new_submits_accepted_count),
            (2, 1)
        );
        assert!(matches!(
            Message::from(answers[0].1.clone()),
            Message::SubmitSharesSuccess(_)
        ));
    }

    /// Work is summed exactly and sent rounded down; nonsense work counts as 0.
    #[test]
    fn work_is_summed_then_rounded_down() {
        let mut acks = Acks::new();
        for work in [0.4, 0.4, 0.4, f64::NAN, -3.0, f64::INFINITY] {
            acks.accepted((), 1, 1, work);
        }
        let answers: Vec<_> = acks.drain().collect();
        let [((), ShareAnswer::Success(s))] = &answers[..] else {
            panic!("{answers:?}")
        };
        assert_eq!((s.new_submits_accepted_count, s.new_shares_sum), (6, 1));
        // A work too large for `u64` saturates.
        acks.accepted((), 1, 2, 1e30);
        let [((), ShareAnswer::Success(s))] = &acks.drain().collect::<Vec<_>>()[..] else {
            panic!()
        };
        assert_eq!(s.new_shares_sum, u64::MAX);
    }

    fn verdicts() -> impl Strategy<Value = Vec<Verdict>> {
        let one = (
            0u8..3,
            0u32..3,
            prop_oneof![
                4 => (0u32..5).prop_map(|w| Ok(f64::from(w) * 0.75)),
                1 => prop::sample::select(vec!["stale-share", "duplicate-share"])
                    .prop_map(|c| Err(String::from(c))),
            ],
        );
        prop::collection::vec(one, 0..64).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (to, ch, verdict))| (to, ch, i as u32, verdict))
                .collect()
        })
    }

    proptest! {
        /// Random reads (three connections, three channel ids, a refusal in five): every
        /// share answered once, in order, runs never split.
        #[test]
        fn every_share_is_answered_once_in_order(verdicts in verdicts()) {
            check(&verdicts, &answer(&verdicts))?;
        }

        /// Draining mid-read (before another message is sent) keeps every share covered
        /// once and in order.
        #[test]
        fn draining_anywhere_keeps_the_order(verdicts in verdicts(), cut in 0usize..64) {
            let cut = cut.min(verdicts.len());
            let mut acks = Acks::new();
            let mut answers = Vec::new();
            for (i, (to, channel, seq, verdict)) in verdicts.iter().enumerate() {
                if i == cut {
                    answers.extend(acks.drain());
                }
                match verdict {
                    Ok(work) => acks.accepted(*to, *channel, *seq, *work),
                    Err(code) => acks.refused(*to, *channel, *seq, code),
                }
            }
            answers.extend(acks.drain());
            // The only difference from `check`: a run may be split at the cut.
            let mut n = 0;
            for (_, a) in &answers {
                n += match a {
                    ShareAnswer::Success(s) => s.new_submits_accepted_count as usize,
                    ShareAnswer::Error(_) => 1,
                };
            }
            prop_assert_eq!(n, verdicts.len());
            let (before, after) = verdicts.split_at(cut);
            let split = answers.iter().scan(0usize, |seen, (_, a)| {
                let before = *seen < before.len();
                *seen += match a {
                    ShareAnswer::Success(s) => s.new_submits_accepted_count as usize,
                    ShareAnswer::Error(_) => 1,
                };
                Some(before)
            }).filter(|b| *b).count();
            check(before, &answers[..split])?;
            check(after, &answers[split..])?;
        }
    }
}
