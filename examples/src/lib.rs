//! Helpers shared by the example programs.
//!
//! * [`sv2json`]: the logic of the `sv2json` example (decode frames to JSON, encode JSON
//!   to frames, check a golden-vector file), as functions over readers and writers so
//!   that it can be tested without spawning the program.
//! * [`proxy`], [`mock_pool`], [`miner`], [`demo`]: the `mining_proxy` example. A Stratum
//!   V2 mining proxy built on `Framed` and the frame codec, an in-process mock pool,
//!   simulated miners, and the loopback demo that wires them together; in the library
//!   so that the integration tests drive them in-process.

pub mod console;
pub mod demo;
pub mod miner;
pub mod mock_pool;
pub mod pool;
pub mod proxy;
pub mod sv2json;
pub mod work;

/// The workspace README's code blocks, compiled and run as doctests of this crate.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
