//! Helpers shared by the example programs.
//!
//! [`sv2json`] holds the logic of the `sv2json` example (decode frames to JSON, encode
//! JSON to frames, check a golden-vector file), as functions over readers and writers so
//! that it can be tested without spawning the program.

pub mod sv2json;
