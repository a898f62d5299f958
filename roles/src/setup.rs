//! A miner's `SetupConnection` checked and answered, alike by the pool and the proxy.
//!
//! Both servers speak the Mining protocol, version 2, and neither serves job declaration.
//! [`answer_mining_setup`] returns the message to send, in this order of checks:
//!
//! | The request | The answer |
//! |---|---|
//! | a protocol other than Mining | `SetupConnection.Error`, flags 0, [`UNSUPPORTED_PROTOCOL`] |
//! | a version range without [`PROTOCOL_VERSION`] (also `min_version > max_version`) | `SetupConnection.Error`, flags 0, [`PROTOCOL_VERSION_MISMATCH`] |
//! | a `REQUIRES_…` flag the server cannot honour | `SetupConnection.Error`, `flags` = exactly those flags, [`UNSUPPORTED_FEATURE_FLAGS`] |
//! | anything else | `SetupConnection.Success`, version 2, the server's flags |
//!
//! The flags a server cannot honour (SV2-WIRE §5):
//! * [`MiningSetupFlags::REQUIRES_WORK_SELECTION`], always: neither server takes
//!   `SetCustomMiningJob` (no job declaration).
//! * [`MiningSetupFlags::REQUIRES_VERSION_ROLLING`] when the server answers with
//!   [`MiningSuccessFlags::REQUIRES_FIXED_VERSION`] (the proxy passes its pool's flags:
//!   the spec never lets the two meet).
//!
//! [`MiningSetupFlags::REQUIRES_STANDARD_JOBS`] is always honoured: both servers serve
//! standard channels (the aggregating proxy too, from its extended channel to the pool).
//!
//! Bits the spec does not define (`0xffff_fff8`) are ignored: a client may set them for
//! an extension the server does not know, and the spec lists in `flags` only the
//! requested features a server does not support.
//!
//! The error codes are SRI's where it has one (`unsupported-protocol`,
//! `unsupported-feature-flags`); `protocol-version-mismatch` is the spec's.

/// The Mining protocol's flags, typed (from `sv2c-binary`).
pub use sv2c_binary::messages::{MiningSetupFlags, MiningSuccessFlags};
use sv2c_binary::messages::{SetupConnection, SetupConnectionError, SetupConnectionSuccess};
use sv2c_binary::{Protocol, Str0255};

/// The Stratum V2 version both servers speak (SV2-WIRE §5).
pub const PROTOCOL_VERSION: u16 = 2;

/// The `SetupConnection.Error` codes.
pub use sv2c_channels::codes::{
    PROTOCOL_VERSION_MISMATCH, UNSUPPORTED_FEATURE_FLAGS, UNSUPPORTED_PROTOCOL,
};

/// The requested flags of `requested` that a server answering with `success` cannot
/// honour (see the [module docs](self)).
pub fn unsupported_flags(
    requested: MiningSetupFlags,
    success: MiningSuccessFlags,
) -> MiningSetupFlags {
    let mut refused = requested & MiningSetupFlags::REQUIRES_WORK_SELECTION;
    if success.contains(MiningSuccessFlags::REQUIRES_FIXED_VERSION) {
        refused |= requested & MiningSetupFlags::REQUIRES_VERSION_ROLLING;
    }
    refused
}

/// The answer of a Mining server whose `SetupConnection.Success` carries `success` to a
/// client's `setup`: `Ok` to send and serve, `Err` to send and close (see the
/// [module docs](self) for the checks).
///
/// ```
/// use sv2c_binary::messages::SetupConnection;
/// use sv2c_binary::Protocol;
/// use sv2c_roles::setup::{answer_mining_setup, MiningSuccessFlags, UNSUPPORTED_FEATURE_FLAGS};
///
/// let setup = SetupConnection {
///     protocol: Protocol::Mining,
///     min_version: 2,
///     max_version: 2,
///     flags: 0x2 | 0x8, // REQUIRES_WORK_SELECTION and an undefined bit
///     ..SetupConnection::default()
/// };
/// let refusal = answer_mining_setup(&setup, MiningSuccessFlags::empty()).unwrap_err();
/// assert_eq!(refusal.flags, 0x2);
/// assert_eq!(refusal.error_code.as_bytes(), UNSUPPORTED_FEATURE_FLAGS.as_bytes());
/// ```
///
/// # Errors
/// The `SetupConnection.Error` to send.
pub fn answer_mining_setup(
    setup: &SetupConnection,
    success: MiningSuccessFlags,
) -> Result<SetupConnectionSuccess, SetupConnectionError> {
    let refuse = |flags: MiningSetupFlags, code: &'static str| SetupConnectionError {
        flags: flags.bits(),
        error_code: Str0255::from_static_str(code).unwrap_or_default(),
    };
    if setup.protocol != Protocol::Mining {
        return Err(refuse(MiningSetupFlags::empty(), UNSUPPORTED_PROTOCOL));
    }
    if !(setup.min_version..=setup.max_version).contains(&PROTOCOL_VERSION) {
        return Err(refuse(MiningSetupFlags::empty(), PROTOCOL_VERSION_MISMATCH));
    }
    let unsupported = unsupported_flags(MiningSetupFlags::from_bits_retain(setup.flags), success);
    if !unsupported.is_empty() {
        return Err(refuse(unsupported, UNSUPPORTED_FEATURE_FLAGS));
    }
    Ok(SetupConnectionSuccess {
        used_version: PROTOCOL_VERSION,
        flags: success.bits(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(protocol: Protocol, versions: (u16, u16), flags: u32) -> SetupConnection {
        SetupConnection {
            protocol,
            min_version: versions.0,
            max_version: versions.1,
            flags,
            ..SetupConnection::default()
        }
    }

    #[track_caller]
    fn refused(s: &SetupConnection, success: MiningSuccessFlags) -> (u32, String) {
        let e = answer_mining_setup(s, success).expect_err("refused");
        (e.flags, e.error_code.to_string())
    }

    #[test]
    fn version_ranges_without_2_are_refused() {
        let none = MiningSuccessFlags::empty();
        for versions in [(3, 2), (3, 3), (1, 1), (0, 0), (3, 1), (u16::MAX, 0)] {
            let s = setup(Protocol::Mining, versions, 0);
            let expected = (0, PROTOCOL_VERSION_MISMATCH.to_owned());
            assert_eq!(refused(&s, none), expected, "{versions:?}");
        }
        for versions in [(2, 2), (1, 2), (2, 3), (0, u16::MAX)] {
            let s = setup(Protocol::Mining, versions, 0);
            let ok = answer_mining_setup(&s, none).unwrap();
            assert_eq!((ok.used_version, ok.flags), (2, 0), "{versions:?}");
        }
    }

    #[test]
    fn other_protocols_are_refused_before_their_versions() {
        for p in [Protocol::JobDeclaration, Protocol::TemplateDistribution] {
            let s = setup(p, (3, 1), 0x2);
            let expected = (0, UNSUPPORTED_PROTOCOL.to_owned());
            assert_eq!(refused(&s, MiningSuccessFlags::empty()), expected);
        }
    }

    #[test]
    fn exactly_the_flags_the_server_cannot_honour_are_named() {
        let none = MiningSuccessFlags::empty();
        let fixed = MiningSuccessFlags::REQUIRES_FIXED_VERSION;
        let extended = MiningSuccessFlags::REQUIRES_EXTENDED_CHANNELS;
        let code = UNSUPPORTED_FEATURE_FLAGS.to_owned();
        let mining = |flags| setup(Protocol::Mining, (2, 2), flags);
        assert_eq!(refused(&mining(0x2), none), (0x2, code.clone()));
        assert_eq!(refused(&mining(0xffff_ffff), none), (0x2, code.clone()));
        assert_eq!(refused(&mining(0x6), fixed), (0x6, code.clone()));
        assert_eq!(refused(&mining(0x4), fixed), (0x4, code.clone()));
        assert_eq!(refused(&mining(0x7), extended), (0x2, code));
        // Honoured flags and undefined bits: success, with the server's own flags.
        let honoured = [
            (0x1, none),
            (0x4, none),
            (0x5, none),
            (0xf8, none),
            (0x1, extended),
        ];
        for (flags, success) in honoured {
            let ok = answer_mining_setup(&mining(flags), success).unwrap();
            assert_eq!(
                (ok.used_version, ok.flags),
                (2, success.bits()),
                "{flags:#x}"
            );
        }
        let ok = answer_mining_setup(&mining(0x1), fixed).unwrap();
        assert_eq!(ok.flags, 0x1);
    }
}
