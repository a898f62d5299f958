//! Common messages (spec §3.1): connection setup and connection-level notices, shared by
//! every sub-protocol.
//!
//! | msg_type | message | channel_msg |
//! |---|---|---|
//! | 0x00 | [`SetupConnection`] | no |
//! | 0x01 | [`SetupConnectionSuccess`] | no |
//! | 0x02 | [`SetupConnectionError`] | no |
//! | 0x03 | [`ChannelEndpointChanged`] | **yes** |
//! | 0x04 | [`Reconnect`] | no |
//!
//! ```
//! use sv2c_binary::messages::{Protocol, SetupConnection, SetupConnectionRef};
//! use sv2c_binary::{Decode, WireRef};
//!
//! // The spec's example (SV2-WIRE §3.1): Mining, v2..2, flags 0x6, "pool.example":3333.
//! let payload = [
//!     0x00, 0x02, 0x00, 0x02, 0x00, 0x06, 0x00, 0x00, 0x00, 0x0c, b'p', b'o', b'o', b'l',
//!     b'.', b'e', b'x', b'a', b'm', b'p', b'l', b'e', 0x05, 0x0d, 0x04, b'a', b'c', b'm',
//!     b'e', 0x03, b'h', b'w', b'1', 0x03, b'f', b'w', b'1', 0x00,
//! ];
//! let msg = SetupConnectionRef::decode_ref(&payload).unwrap();
//! assert_eq!(msg.protocol, Protocol::Mining);
//! assert_eq!(msg.endpoint_host.as_str(), Ok("pool.example"));
//! assert_eq!(msg.endpoint_port, 3333);
//! let owned: SetupConnection = msg.to_owned_value();
//! assert_eq!(owned.vendor.as_str(), Ok("acme"));
//! ```

// The definitions sit below the catalog, which builds this protocol's enum from them.
mod defs;
mod flags;

pub use super::catalog::{CommonMessage, CommonMessageRef};
pub use defs::*;
pub use flags::{
    JobDeclarationSetupFlags, JobDeclarationSuccessFlags, MiningSetupFlags, MiningSuccessFlags,
    SetupFlags, SuccessFlags, TemplateDistributionFlags,
};
