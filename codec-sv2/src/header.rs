//! The 6-byte frame header (spec §2.1). Defined once, in `sv2c-binary`, and shared with the
//! Noise transport; re-exported here so `sv2c_codec::Header` keeps working.

pub use sv2c_binary::{Header, MAX_PAYLOAD_LEN, PayloadTooLarge};
