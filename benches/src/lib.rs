//! Shared pieces of the sv2c benchmark suites (`benches/pool_lifecycle.rs`,
//! `benches/vs_sri.rs`):
//!
//! * [`alloc`]: the counting global allocator and [`alloc::count`];
//! * [`golden`]: the golden frames, the last of each message type (`enum_path`,
//!   `move_cost`, `sv2c-icount`);
//! * [`clock`]: the clock the suites measure with (the thread's CPU time by default);
//! * [`messages`]: the benchmarked messages and their fixed field values;
//! * [`strategy`]: the three decode strategies of `pool_lifecycle` (`zc_hold`,
//!   `owned_release`, `owned_direct`);
//! * [`report`]: the report files (CSV) read by `scripts/bench_tables.py`.
//!
//! How to run the suites and what they measure is in `BENCHMARKS.md` at the workspace
//! root.

#![deny(unsafe_code)]

pub mod alloc;
pub mod clock;
pub mod golden;
pub mod messages;
pub mod report;
pub mod strategy;
mod sys;
