//! The benchmark clock: thread CPU time advances with work and not while the thread waits;
//! wall time advances with both.

use std::hint::black_box;
use std::time::{Duration, Instant};

use sv2c_benches::clock::{BenchClock, ClockKind};

/// Burns CPU for about `d` of wall time.
fn spin(d: Duration) -> u64 {
    let start = Instant::now();
    let mut x = 0u64;
    while start.elapsed() < d {
        x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    x
}

#[test]
fn thread_cpu_time_counts_work_but_not_sleep() {
    let clock = BenchClock::new(ClockKind::ThreadCpu);
    let t = clock.now();
    spin(Duration::from_millis(30));
    let worked = clock.since(t);
    // The thread may be preempted while spinning, so it used at most 30 ms of CPU, and
    // certainly some.
    assert!(worked > Duration::ZERO, "{worked:?}");
    assert!(worked <= Duration::from_millis(40), "{worked:?}");

    let t = clock.now();
    std::thread::sleep(Duration::from_millis(50));
    let slept = clock.since(t);
    assert!(slept < Duration::from_millis(10), "{slept:?}");
}

#[test]
fn wall_time_counts_sleep() {
    let clock = BenchClock::new(ClockKind::Wall);
    let t = clock.now();
    std::thread::sleep(Duration::from_millis(20));
    assert!(clock.since(t) >= Duration::from_millis(20));
}

#[test]
fn reading_the_clock_is_cheap_enough_to_subtract() {
    for kind in [ClockKind::ThreadCpu, ClockKind::Wall] {
        let clock = BenchClock::new(kind);
        assert_eq!(clock.kind(), kind);
        assert!(clock.overhead() < Duration::from_millis(1), "{kind:?}");
    }
    assert_eq!(ClockKind::ThreadCpu.name(), "thread_cpu");
    assert_eq!(ClockKind::Wall.name(), "wall");
}
