//! Variable difficulty, sans-io: the caller counts accepted shares and polls with the
//! time; the controller answers with a new channel target when one is due.
//!
//! # Algorithm
//! Shares are counted in a window that starts at the last retarget. On
//! [`Vardiff::poll`] at `now` (seconds, any monotonic origin), with `elapsed` seconds in
//! the window and `n` shares counted:
//! 1. Nothing happens before [`VardiffConfig::min_window_secs`], unless `n` already
//!    exceeds four times the shares expected for `elapsed` (a miner far faster than its
//!    target is retargeted early, from 1/4 of the minimum window on).
//! 2. With `n = 0` after a whole [`VardiffConfig::window_secs`], the target is made
//!    [`VardiffConfig::max_step`] times easier (the miner may be far slower than assumed).
//! 3. Otherwise the hashrate is estimated as `n × expected_hashes(target) / elapsed`. If
//!    the observed share rate is within a factor [`VardiffConfig::deadband`] of the wanted
//!    one, the window goes on (so that it grows and the estimate steadies), and is
//!    restarted after `window_secs`. Outside it, the new target is the one at which the
//!    estimated hashrate yields [`VardiffConfig::shares_per_minute`]
//!    ([`hashrate_to_target`]), moved at most `max_step` times from the current one.
//! 4. Every new target is clamped to be no easier than [`VardiffConfig::max_target`]. A
//!    retarget starts a new window.

use sv2c_binary::U256;

use crate::pow::{expected_hashes, f64_to_target, harder, hashrate_to_target, target_to_f64};

/// Settings of a [`Vardiff`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VardiffConfig {
    /// Shares per minute wanted from each channel.
    pub shares_per_minute: f64,
    /// Shortest window a retarget is computed from (seconds).
    pub min_window_secs: u64,
    /// Longest window (seconds): the window restarts after this even without a retarget.
    pub window_secs: u64,
    /// A rate within this factor of the wanted one (above or below) keeps the target.
    pub deadband: f64,
    /// Largest factor a target moves by in one retarget.
    pub max_step: f64,
    /// The easiest target allowed (the channel's `max_target`).
    pub max_target: U256,
}

impl Default for VardiffConfig {
    fn default() -> Self {
        VardiffConfig {
            shares_per_minute: 10.0,
            min_window_secs: 60,
            window_secs: 300,
            deadband: 1.5,
            max_step: 4.0,
            max_target: U256([0xff; 32]),
        }
    }
}

/// One channel's difficulty controller (see the [module docs](self)).
#[derive(Debug, Clone)]
pub struct Vardiff {
    config: VardiffConfig,
    target: U256,
    window_start: u64,
    shares: u64,
}

impl Vardiff {
    /// A controller starting at `target`, with its first window opening at `now`.
    pub fn new(config: VardiffConfig, target: U256, now: u64) -> Self {
        Vardiff {
            target: harder(&target, &config.max_target),
            config,
            window_start: now,
            shares: 0,
        }
    }

    /// The current target.
    pub fn target(&self) -> &U256 {
        &self.target
    }

    /// Counts an accepted share.
    pub fn on_share(&mut self) {
        self.shares += 1;
    }

    fn retarget(&mut self, wanted: f64, now: u64) -> Option<U256> {
        let current = target_to_f64(&self.target);
        let step = self.config.max_step.max(1.0);
        let bounded = wanted.clamp(current / step, current * step);
        let new = harder(&f64_to_target(bounded), &self.config.max_target);
        self.window_start = now;
        self.shares = 0;
        if new == self.target {
            return None;
        }
        self.target = new;
        Some(new)
    }

    /// Checks the window at `now`; returns the new target if it changed.
    pub fn poll(&mut self, now: u64) -> Option<U256> {
        let elapsed = now.saturating_sub(self.window_start);
        let expected = self.config.shares_per_minute * elapsed as f64 / 60.0;
        let early = elapsed * 4 >= self.config.min_window_secs
            && self.shares as f64 > 4.0 * expected.max(1.0);
        if elapsed < self.config.min_window_secs && !early {
            return None;
        }
        if self.shares == 0 {
            if elapsed < self.config.window_secs {
                return None;
            }
            let easier = target_to_f64(&self.target) * self.config.max_step.max(1.0);
            return self.retarget(easier, now);
        }
        let rate = self.shares as f64 * 60.0 / elapsed.max(1) as f64;
        let ratio = rate / self.config.shares_per_minute;
        let band = self.config.deadband.max(1.0);
        if ratio <= band && ratio >= 1.0 / band {
            if elapsed >= self.config.window_secs {
                self.window_start = now;
                self.shares = 0;
            }
            return None;
        }
        let hashrate = self.shares as f64 * expected_hashes(&self.target) / elapsed.max(1) as f64;
        let wanted = target_to_f64(&hashrate_to_target(hashrate, self.config.shares_per_minute));
        self.retarget(wanted, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pow::target_with_zero_bits;

    /// A miner of `hashrate` H/s: the shares it finds in `secs` at `target` (expected
    /// value, rounded down; the controller is deterministic on it).
    fn shares(hashrate: f64, secs: u64, target: &U256) -> u64 {
        (hashrate * secs as f64 / expected_hashes(target)) as u64
    }

    #[test]
    fn converges_to_the_wanted_share_rate() {
        let hashrate = 1e12; // 1 TH/s
        let config = VardiffConfig::default(); // 10 shares a minute
        let mut v = Vardiff::new(config, target_with_zero_bits(20), 0);
        let mut now = 0;
        for _ in 0..40 {
            let n = shares(hashrate, 15, v.target());
            for _ in 0..n {
                v.on_share();
            }
            now += 15;
            v.poll(now);
        }
        let rate = hashrate * 60.0 / expected_hashes(v.target());
        assert!(
            (10.0 / 1.5..=10.0 * 1.5).contains(&rate),
            "{rate} shares/min"
        );
    }

    #[test]
    fn silence_eases_the_target_and_max_target_bounds_it() {
        let max = target_with_zero_bits(10);
        let config = VardiffConfig {
            max_target: max,
            ..VardiffConfig::default()
        };
        let start = target_with_zero_bits(16);
        let mut v = Vardiff::new(config, start, 0);
        assert_eq!(v.poll(299), None);
        let eased = v.poll(300).expect("eased after a silent window");
        assert_eq!(expected_hashes(&eased), expected_hashes(&start) / 4.0);
        for i in 2..10 {
            v.poll(300 * i);
        }
        assert_eq!(v.target(), &max);
    }

    #[test]
    fn a_flood_retargets_early_by_at_most_max_step() {
        let start = target_with_zero_bits(8);
        let mut v = Vardiff::new(VardiffConfig::default(), start, 0);
        for _ in 0..1000 {
            v.on_share();
        }
        let harder_target = v.poll(15).expect("early retarget");
        assert_eq!(
            expected_hashes(&harder_target),
            expected_hashes(&start) * 4.0
        );
    }
}
