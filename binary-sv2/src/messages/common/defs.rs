//! The common messages' definitions, in wire order ([`super`] re-exports them).

use crate::{Str0255, Wire};

pub use crate::types::{Protocol, UnknownProtocol};

messages! {
    /// `SetupConnection` (0x00): the first message a client sends on a connection; names the
    /// sub-protocol, the version range and the feature flags it wants.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x00)]
    pub struct SetupConnection {
        /// The sub-protocol this connection will speak.
        pub protocol: Protocol,
        /// Lowest protocol version the client supports (2 today).
        pub min_version: u16,
        /// Highest protocol version the client supports (2 today).
        pub max_version: u16,
        /// Requested feature flags (spec §5): typed by
        /// [`typed_flags`](SetupConnection::typed_flags) or
        /// [`mining_flags`](SetupConnection::mining_flags); written from
        /// [`MiningSetupFlags`](super::MiningSetupFlags) and its kin with `.bits()`.
        pub flags: u32,
        /// Host name or IP address the client connected to (ASCII).
        pub endpoint_host: Str0255,
        /// Port the client connected to.
        pub endpoint_port: u16,
        /// Device vendor (maker or firmware); must be set.
        pub vendor: Str0255,
        /// Hardware version; should be set.
        pub hardware_version: Str0255,
        /// Firmware version.
        pub firmware: Str0255,
        /// Device id; empty if the client does not report telemetry.
        pub device_id: Str0255,
    }

    /// `SetupConnection.Success` (0x01): the server accepts the connection.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x01)]
    pub struct SetupConnectionSuccess {
        /// Protocol version used for the rest of the connection.
        pub used_version: u16,
        /// The server's own feature flags (spec §5): typed by
        /// [`typed_flags`](SetupConnectionSuccess::typed_flags) or
        /// [`mining_flags`](SetupConnectionSuccess::mining_flags)
        /// ([`MiningSuccessFlags`](super::MiningSuccessFlags): not the bits of a
        /// `SetupConnection`).
        pub flags: u32,
    }

    /// `SetupConnection.Error` (0x02): the server refuses the connection.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x02)]
    pub struct SetupConnectionError {
        /// Requested flags the server does not support; 0 if the failure has another cause
        /// (see [`MiningSetupFlags::unsupported`](super::MiningSetupFlags::unsupported)).
        pub flags: u32,
        /// Machine-readable reason, e.g. `unsupported-feature-flags`.
        pub error_code: Str0255,
    }

    /// `ChannelEndpointChanged` (0x03, channel message): the endpoint behind a channel changed,
    /// so the receiver resets that channel's extension state.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x03, channel_msg)]
    pub struct ChannelEndpointChanged {
        /// The channel whose endpoint changed.
        pub channel_id: u32,
    }

    /// `Reconnect` (0x04): the server asks the client to reconnect, possibly elsewhere. Concerns
    /// the connection only; proxies do not pass it downstream.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(msg_type = 0x04)]
    pub struct Reconnect {
        /// Host to reconnect to; empty means the current host.
        pub new_host: Str0255,
        /// Port to reconnect to; 0 means the current port.
        pub new_port: u16,
    }
}
