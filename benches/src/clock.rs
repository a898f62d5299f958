//! The clock the suites measure with: the benchmark thread's CPU time by default.
//!
//! The benchmarks are single-threaded and never block, so the CPU time the thread consumes
//! is the cost of the code. Unlike wall time it does not grow while the thread waits for a
//! core, which on a machine shared with other jobs is most of the noise. Set
//! `SV2C_BENCH_CLOCK=wall` to measure wall time instead (criterion's default clock).
//!
//! The thread CPU clock (`CLOCK_THREAD_CPUTIME_ID`) costs a system call per read (about
//! 0.4 µs here); criterion reads it twice per sample of thousands of iterations, and the
//! suites that read it themselves subtract [`BenchClock::overhead`].

use std::time::{Duration, Instant};

use criterion::measurement::{Measurement, ValueFormatter, WallTime};

use crate::sys::thread_cpu_time;

/// Which clock a [`BenchClock`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockKind {
    /// CPU time of the calling thread (user + system).
    ThreadCpu,
    /// Elapsed real time (`Instant`).
    Wall,
}

impl ClockKind {
    /// A short name for reports: `thread_cpu` or `wall`.
    pub fn name(self) -> &'static str {
        match self {
            ClockKind::ThreadCpu => "thread_cpu",
            ClockKind::Wall => "wall",
        }
    }
}

/// A reading of a [`BenchClock`].
#[derive(Debug, Clone, Copy)]
pub enum Stamp {
    /// Thread CPU time consumed so far.
    Cpu(Duration),
    /// A point in real time.
    Wall(Instant),
}

/// A criterion [`Measurement`] reading either the thread CPU clock or wall time; values are
/// [`Duration`]s and print like criterion's own.
#[derive(Debug, Clone, Copy)]
pub struct BenchClock {
    kind: ClockKind,
}

impl BenchClock {
    /// The clock chosen by `SV2C_BENCH_CLOCK` (`wall` or `cpu`; default `cpu`), falling
    /// back to wall time where the thread CPU clock is unavailable.
    pub fn from_env() -> Self {
        let wall = std::env::var("SV2C_BENCH_CLOCK").is_ok_and(|v| v.eq_ignore_ascii_case("wall"));
        if wall || thread_cpu_time().is_none() {
            Self::new(ClockKind::Wall)
        } else {
            Self::new(ClockKind::ThreadCpu)
        }
    }

    /// A clock of the given kind.
    pub fn new(kind: ClockKind) -> Self {
        BenchClock { kind }
    }

    /// Which clock this is.
    pub fn kind(&self) -> ClockKind {
        self.kind
    }

    /// Reads the clock.
    #[inline]
    pub fn now(&self) -> Stamp {
        match self.kind {
            ClockKind::ThreadCpu => Stamp::Cpu(thread_cpu_time().unwrap_or_default()),
            ClockKind::Wall => Stamp::Wall(Instant::now()),
        }
    }

    /// Time on this clock since `start`.
    #[inline]
    pub fn since(&self, start: Stamp) -> Duration {
        match start {
            Stamp::Cpu(t0) => thread_cpu_time().unwrap_or_default().saturating_sub(t0),
            Stamp::Wall(t0) => t0.elapsed(),
        }
    }

    /// What a [`now`](Self::now) / [`since`](Self::since) pair measures around nothing
    /// (median of 201 pairs): subtract it from a timed region read by hand.
    pub fn overhead(&self) -> Duration {
        let mut d: Vec<Duration> = (0..201)
            .map(|_| {
                let t = self.now();
                self.since(t)
            })
            .collect();
        d.sort_unstable();
        d[d.len() / 2]
    }
}

impl Measurement for BenchClock {
    type Intermediate = Stamp;
    type Value = Duration;

    fn start(&self) -> Stamp {
        self.now()
    }

    fn end(&self, start: Stamp) -> Duration {
        self.since(start)
    }

    fn add(&self, v1: &Duration, v2: &Duration) -> Duration {
        *v1 + *v2
    }

    fn zero(&self) -> Duration {
        Duration::ZERO
    }

    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        // Durations print the same whichever clock measured them.
        static WALL: WallTime = WallTime;
        WALL.formatter()
    }
}
