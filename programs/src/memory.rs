//! Giving the memory of miners that left back to the OS (glibc's `malloc_trim`, and no
//! per-thread cache of freed chunks), shared by the pool and proxy programs.

use std::time::{Duration, Instant};

/// The glibc tunable [`without_thread_caches`] sets.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const NO_THREAD_CACHE: &str = "glibc.malloc.tcache_count=0";

/// Runs this program again at once (same process, arguments and environment) with glibc's
/// per-thread cache of freed small chunks turned off (`GLIBC_TUNABLES=`
/// `glibc.malloc.tcache_count=0`), unless `GLIBC_TUNABLES` is set: an operator's own
/// tunables apply as given (add `glibc.malloc.tcache_count=0` to keep this), and the
/// program runs again only once. Call it first in `main`: glibc reads its tunables only
/// when a program starts (and leaves only the first of them in the environment, so a
/// program cannot tell which were given).
///
/// Each runtime thread's cache holds up to 7 freed chunks of each size to 1,032 bytes, and
/// `malloc_trim` cannot give back the pages they sit on: after a flood of channels closed,
/// they kept the `pool`'s RSS 0.8 MiB (17 %) above its level before. Without them, what a
/// flood leaves is within 1.1× (BENCHMARKS.md, "A flood of channels"), and the CPU per
/// share and per handshake did not move beyond the runs' noise. If the exec fails the
/// program goes on with the cache.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn without_thread_caches() {
    use std::os::unix::process::CommandExt;

    if std::env::var_os("GLIBC_TUNABLES").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut args = std::env::args_os();
    let mut again = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        again.arg0(arg0);
    }
    // Returns only if the exec failed.
    let _failed = again
        .args(args)
        .env("GLIBC_TUNABLES", NO_THREAD_CACHE)
        .exec();
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn without_thread_caches() {}

/// Connections that must have left, at least, before memory is given back.
const MIN_LEFT: u64 = 1_000;

/// Channels that must have closed, at least, before memory is given back (about 1 KiB
/// each in the pool, 1.4 KiB in the proxy: 1 to 1.4 MiB). As low as this so that a
/// flood stopped by the proxy's cap per connection (200 connections of 32 channels: 6,400
/// channels, in the proxy and in the pool behind it) is given back too.
pub(crate) const MIN_CHANNELS_CLOSED: u64 = 1_000;

/// Asks the allocator to give its free memory back to the OS once many miners have left.
///
/// glibc keeps the memory a process frees for its next allocations: the RSS of a server
/// stays at its peak after its miners leave (reused, not leaked, when they come back).
/// Fed the number of open connections (or channels: [`with_min_left`]) every second or
/// so, this calls `malloc_trim` once that number has fallen to half of its highest value
/// since the last call, and by at least [`MIN_LEFT`] (the RSS it leaves: BENCHMARKS.md,
/// the 15,000-miner table), and once more [`FOLLOW_UP`] observations later: what the
/// last of a departing crowd freed after the first call (a call can come while they
/// are still leaving) goes back too. Once none is open after a call made while some
/// were, it is called again at once.
///
/// [`with_min_left`]: Self::with_min_left
#[derive(Debug)]
pub(crate) struct ReleaseWhenMinersLeave {
    peak: u64,
    min_left: u64,
    /// Observations until the follow-up call, after a call.
    follow_up: Option<u32>,
    /// What was open at the last call: once everything is gone after a call made while
    /// some were still open, memory is given back again at once (the rest of a crowd that
    /// left just after the call may be fewer than `min_left`).
    open_at_last_call: Option<u64>,
}

/// Observations (seconds) between a release and its follow-up.
const FOLLOW_UP: u32 = 3;

impl Default for ReleaseWhenMinersLeave {
    fn default() -> Self {
        Self::with_min_left(MIN_LEFT)
    }
}

impl ReleaseWhenMinersLeave {
    /// Gives memory back once the number observed fell by at least `min_left` (and to
    /// half of its peak).
    pub(crate) fn with_min_left(min_left: u64) -> Self {
        ReleaseWhenMinersLeave {
            peak: 0,
            min_left,
            follow_up: None,
            open_at_last_call: None,
        }
    }

    /// Records `open` connections; gives free memory back when enough have left, and
    /// returns how long that took.
    pub(crate) fn observe(&mut self, open: u64) -> Option<Duration> {
        self.peak = self.peak.max(open);
        let all_gone = open == 0 && self.open_at_last_call.is_some_and(|n| n > 0);
        if all_gone {
            self.peak = 0;
            self.follow_up = Some(FOLLOW_UP - 1);
        } else if self.peak - open < self.min_left || open > self.peak / 2 {
            match self.follow_up {
                Some(0) => self.follow_up = None,
                Some(n) => {
                    self.follow_up = Some(n - 1);
                    return None;
                }
                None => return None,
            }
        } else {
            self.peak = open;
            self.follow_up = Some(FOLLOW_UP - 1);
        }
        self.open_at_last_call = Some(open);
        let start = Instant::now();
        release_free_memory();
        Some(start.elapsed())
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    // SAFETY: `malloc_trim` takes no pointer; it returns the allocator's free pages to the
    // OS under the allocator's own locks, and any thread may call it at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}
