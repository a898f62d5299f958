//! The extension messages' definitions, in wire order ([`super`] re-exports them).

use crate::{Seq064K, Wire};

/// Extension id of Extensions Negotiation (the `extension_type` of its messages).
pub const EXTENSIONS_NEGOTIATION: u16 = 0x0001;

/// Extension id of Worker-Specific Hashrate Tracking (TLV only: [`UserIdentity`](crate::tlv::UserIdentity)).
pub const WORKER_SPECIFIC_HASHRATE_TRACKING: u16 = 0x0002;

messages! {
    /// `RequestExtensions` (ext 0x0001, 0x00): the extensions the client would like to use.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(extension_type = 0x0001, msg_type = 0x00)]
    pub struct RequestExtensions {
        /// Client-chosen id (U16), echoed in the reply.
        pub request_id: u16,
        /// Extension ids the client asks for.
        pub requested_extensions: Seq064K<u16>,
    }

    /// `RequestExtensions.Success` (ext 0x0001, 0x01): the requested extensions the server
    /// supports.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(extension_type = 0x0001, msg_type = 0x01)]
    pub struct RequestExtensionsSuccess {
        /// The request being answered.
        pub request_id: u16,
        /// Extension ids that are now in use.
        pub supported_extensions: Seq064K<u16>,
    }

    /// `RequestExtensions.Error` (ext 0x0001, 0x02): the negotiation failed.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Wire)]
    #[sv2(extension_type = 0x0001, msg_type = 0x02)]
    pub struct RequestExtensionsError {
        /// The request being answered.
        pub request_id: u16,
        /// Requested extensions the server does not support.
        pub unsupported_extensions: Seq064K<u16>,
        /// Extensions the server requires that the client did not request.
        pub required_extensions: Seq064K<u16>,
    }
}
