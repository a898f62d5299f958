//! Typed feature flags of `SetupConnection`, `SetupConnection.Success` and
//! `SetupConnection.Error` (spec §5).
//!
//! The `flags` field is a `U32` whose bits mean different things per sub-protocol, and in
//! the Mining protocol per direction: bit 0 of a client's `SetupConnection` is
//! `REQUIRES_STANDARD_JOBS`, bit 0 of the server's `SetupConnection.Success` is
//! `REQUIRES_FIXED_VERSION`. Each combination has its own type here, so a constant of one
//! cannot be put where the other is meant. Bits the spec does not define are kept, never
//! rejected: a client may probe a server by setting every flag (spec §5).
//!
//! | type | message | protocol |
//! |---|---|---|
//! | [`MiningSetupFlags`] | `SetupConnection`, `.Error` | Mining |
//! | [`MiningSuccessFlags`] | `SetupConnection.Success` | Mining |
//! | [`JobDeclarationSetupFlags`] | `SetupConnection`, `.Error` | Job Declaration |
//! | [`JobDeclarationSuccessFlags`] | `SetupConnection.Success` | Job Declaration (none defined) |
//! | [`TemplateDistributionFlags`] | all three | Template Distribution (none defined) |

use core::fmt;
use core::ops::{BitAnd, BitOr, BitOrAssign};

use super::defs::{SetupConnection, SetupConnectionError, SetupConnectionSuccess};
use crate::types::Protocol;

/// Defines one flag type: the newtype, its named bits, its operators and its `Debug`.
macro_rules! setup_flags {
    (
        $(#[$doc:meta])*
        $name:ident {
            $( $(#[$bit_doc:meta])* $bit:ident = $mask:expr; )*
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
        pub struct $name(u32);

        impl $name {
            $( $(#[$bit_doc])* pub const $bit: Self = Self($mask); )*

            /// Every bit the spec defines for this type.
            pub const KNOWN: Self = Self(0 $( | $mask )*);

            const NAMED: &'static [(&'static str, u32)] = &[ $( (stringify!($bit), $mask), )* ];

            /// No flag set.
            #[inline]
            pub const fn empty() -> Self {
                Self(0)
            }

            /// The flags of a `U32` field, every bit kept (undefined ones too).
            #[inline]
            pub const fn from_bits_retain(bits: u32) -> Self {
                Self(bits)
            }

            /// The `U32` written on the wire.
            #[inline]
            pub const fn bits(self) -> u32 {
                self.0
            }

            /// Whether every flag of `other` is set in `self`.
            #[inline]
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }

            /// Whether no flag is set.
            #[inline]
            pub const fn is_empty(self) -> bool {
                self.0 == 0
            }

            /// `self` and `other` together.
            #[inline]
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }

            /// The flags of `self` that are not in `supported`: what a server answers in
            /// `SetupConnection.Error.flags` with `unsupported-feature-flags` (spec §5).
            /// Bits the spec does not define count as unsupported unless `supported` has
            /// them.
            #[inline]
            pub const fn unsupported(self, supported: Self) -> Self {
                Self(self.0 & !supported.0)
            }

            /// The bits set that the spec does not define for this type.
            #[inline]
            pub const fn unknown(self) -> Self {
                Self(self.0 & !Self::KNOWN.0)
            }
        }

        impl BitOr for $name {
            type Output = Self;
            #[inline]
            fn bitor(self, rhs: Self) -> Self {
                self.union(rhs)
            }
        }

        impl BitOrAssign for $name {
            #[inline]
            fn bitor_assign(&mut self, rhs: Self) {
                self.0 |= rhs.0;
            }
        }

        impl BitAnd for $name {
            type Output = Self;
            #[inline]
            fn bitand(self, rhs: Self) -> Self {
                Self(self.0 & rhs.0)
            }
        }

        impl From<$name> for u32 {
            #[inline]
            fn from(f: $name) -> u32 {
                f.0
            }
        }

        /// The named flags, then any other bits in hex:
        /// `MiningSetupFlags(REQUIRES_STANDARD_JOBS | 0x80000000)`.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write_flags(f, stringify!($name), Self::NAMED, self.0)
            }
        }
    };
}

/// `Name(A | B | 0x…)`, or `Name(empty)`.
fn write_flags(
    f: &mut fmt::Formatter<'_>,
    name: &str,
    named: &[(&str, u32)],
    bits: u32,
) -> fmt::Result {
    write!(f, "{name}(")?;
    let mut rest = bits;
    let mut first = true;
    for &(bit_name, mask) in named {
        if bits & mask == mask {
            f.write_str(if first { "" } else { " | " })?;
            f.write_str(bit_name)?;
            rest &= !mask;
            first = false;
        }
    }
    if rest != 0 || first {
        f.write_str(if first { "" } else { " | " })?;
        if rest == 0 {
            f.write_str("empty")?;
        } else {
            write!(f, "{rest:#x}")?;
        }
    }
    f.write_str(")")
}

setup_flags! {
    /// Mining protocol flags a client requests in `SetupConnection` (and a server lists as
    /// unsupported in `SetupConnection.Error`), spec §5.
    ///
    /// ```
    /// use sv2c_binary::messages::MiningSetupFlags;
    ///
    /// let asked = MiningSetupFlags::REQUIRES_VERSION_ROLLING | MiningSetupFlags::REQUIRES_STANDARD_JOBS;
    /// assert_eq!(asked.bits(), 0x5);
    /// assert!(asked.contains(MiningSetupFlags::REQUIRES_VERSION_ROLLING));
    /// // A server that supports version rolling only answers `unsupported-feature-flags`
    /// // with the rest.
    /// let unsupported = asked.unsupported(MiningSetupFlags::REQUIRES_VERSION_ROLLING);
    /// assert_eq!(unsupported, MiningSetupFlags::REQUIRES_STANDARD_JOBS);
    /// // Bits the spec does not define are kept.
    /// let probe = MiningSetupFlags::from_bits_retain(u32::MAX);
    /// assert_eq!(probe.unknown().bits(), 0xffff_fff8);
    /// assert_eq!(format!("{asked:?}"), "MiningSetupFlags(REQUIRES_STANDARD_JOBS | REQUIRES_VERSION_ROLLING)");
    /// ```
    MiningSetupFlags {
        /// Bit 0 (0x1): the client handles standard jobs only (`NewMiningJob`), not
        /// extended ones.
        REQUIRES_STANDARD_JOBS = 0x1;
        /// Bit 1 (0x2): the client will choose its own work and send `SetCustomMiningJob`.
        REQUIRES_WORK_SELECTION = 0x2;
        /// Bit 2 (0x4): the server must not send jobs that forbid version rolling.
        REQUIRES_VERSION_ROLLING = 0x4;
    }
}

setup_flags! {
    /// Mining protocol flags a server states in `SetupConnection.Success`, spec §5. The
    /// same bits as [`MiningSetupFlags`] mean other things here.
    ///
    /// ```
    /// use sv2c_binary::messages::MiningSuccessFlags;
    /// let flags = MiningSuccessFlags::from_bits_retain(0x2);
    /// assert!(flags.contains(MiningSuccessFlags::REQUIRES_EXTENDED_CHANNELS));
    /// assert!(!flags.contains(MiningSuccessFlags::REQUIRES_FIXED_VERSION));
    /// ```
    MiningSuccessFlags {
        /// Bit 0 (0x1): the server accepts no change to the block version. Never set when
        /// the client asked for `REQUIRES_VERSION_ROLLING`.
        REQUIRES_FIXED_VERSION = 0x1;
        /// Bit 1 (0x2): the server refuses standard channels; open extended ones.
        REQUIRES_EXTENDED_CHANNELS = 0x2;
    }
}

setup_flags! {
    /// Job Declaration protocol flags a client (JDC) requests in `SetupConnection` (and a
    /// server lists as unsupported in `SetupConnection.Error`), spec §5.
    ///
    /// ```
    /// use sv2c_binary::messages::JobDeclarationSetupFlags;
    /// assert_eq!(JobDeclarationSetupFlags::DECLARE_TX_DATA.bits(), 0x1);
    /// ```
    JobDeclarationSetupFlags {
        /// Bit 0 (0x1): the JDC will reveal the transactions of its jobs (Full-Template
        /// mode).
        DECLARE_TX_DATA = 0x1;
    }
}

setup_flags! {
    /// Job Declaration protocol flags of `SetupConnection.Success`: the spec defines none
    /// (spec §5); any bit set is kept and shows in hex.
    JobDeclarationSuccessFlags {}
}

setup_flags! {
    /// Template Distribution protocol flags, in all three messages: the spec defines none
    /// (spec §5); any bit set is kept and shows in hex.
    TemplateDistributionFlags {}
}

/// The flags of a `SetupConnection` or `SetupConnection.Error`, typed by the connection's
/// protocol.
///
/// ```
/// use sv2c_binary::messages::{MiningSetupFlags, Protocol, SetupConnection, SetupFlags};
///
/// let setup = SetupConnection {
///     protocol: Protocol::Mining,
///     min_version: 2,
///     max_version: 2,
///     flags: MiningSetupFlags::REQUIRES_VERSION_ROLLING.bits(),
///     ..Default::default()
/// };
/// let SetupFlags::Mining(flags) = setup.typed_flags() else { unreachable!() };
/// assert!(flags.contains(MiningSetupFlags::REQUIRES_VERSION_ROLLING));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SetupFlags {
    /// Mining (protocol 0).
    Mining(MiningSetupFlags),
    /// Job Declaration (protocol 1).
    JobDeclaration(JobDeclarationSetupFlags),
    /// Template Distribution (protocol 2).
    TemplateDistribution(TemplateDistributionFlags),
}

/// The flags of a `SetupConnection.Success`, typed by the protocol of the connection it
/// answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SuccessFlags {
    /// Mining (protocol 0).
    Mining(MiningSuccessFlags),
    /// Job Declaration (protocol 1).
    JobDeclaration(JobDeclarationSuccessFlags),
    /// Template Distribution (protocol 2).
    TemplateDistribution(TemplateDistributionFlags),
}

impl SetupFlags {
    /// The `flags` field of a `SetupConnection` for `protocol`, every bit kept.
    pub const fn new(protocol: Protocol, bits: u32) -> Self {
        match protocol {
            Protocol::Mining => SetupFlags::Mining(MiningSetupFlags(bits)),
            Protocol::JobDeclaration => SetupFlags::JobDeclaration(JobDeclarationSetupFlags(bits)),
            Protocol::TemplateDistribution => {
                SetupFlags::TemplateDistribution(TemplateDistributionFlags(bits))
            }
        }
    }

    /// The `U32` written on the wire.
    pub const fn bits(self) -> u32 {
        match self {
            SetupFlags::Mining(f) => f.0,
            SetupFlags::JobDeclaration(f) => f.0,
            SetupFlags::TemplateDistribution(f) => f.0,
        }
    }

    /// The protocol these flags belong to.
    pub const fn protocol(self) -> Protocol {
        match self {
            SetupFlags::Mining(_) => Protocol::Mining,
            SetupFlags::JobDeclaration(_) => Protocol::JobDeclaration,
            SetupFlags::TemplateDistribution(_) => Protocol::TemplateDistribution,
        }
    }

    /// The bits of `self` not in `supported` (`supported` read as flags of the same
    /// protocol): the `flags` of the `SetupConnection.Error` a server answers with
    /// `unsupported-feature-flags`, 0 when it supports them all.
    pub const fn unsupported_bits(self, supported: u32) -> u32 {
        self.bits() & !supported
    }
}

impl SuccessFlags {
    /// The `flags` field of a `SetupConnection.Success` for `protocol`, every bit kept.
    pub const fn new(protocol: Protocol, bits: u32) -> Self {
        match protocol {
            Protocol::Mining => SuccessFlags::Mining(MiningSuccessFlags(bits)),
            Protocol::JobDeclaration => {
                SuccessFlags::JobDeclaration(JobDeclarationSuccessFlags(bits))
            }
            Protocol::TemplateDistribution => {
                SuccessFlags::TemplateDistribution(TemplateDistributionFlags(bits))
            }
        }
    }

    /// The `U32` written on the wire.
    pub const fn bits(self) -> u32 {
        match self {
            SuccessFlags::Mining(f) => f.0,
            SuccessFlags::JobDeclaration(f) => f.0,
            SuccessFlags::TemplateDistribution(f) => f.0,
        }
    }
}

macro_rules! into_setup_flags {
    ($($enum:ident :: $variant:ident ($ty:ident)),*) => {$(
        impl From<$ty> for $enum {
            fn from(f: $ty) -> Self {
                $enum::$variant(f)
            }
        }
    )*};
}

into_setup_flags!(
    SetupFlags::Mining(MiningSetupFlags),
    SetupFlags::JobDeclaration(JobDeclarationSetupFlags),
    SuccessFlags::Mining(MiningSuccessFlags),
    SuccessFlags::JobDeclaration(JobDeclarationSuccessFlags)
);

// ===== the messages' typed views =====

impl SetupConnection {
    /// The requested flags, typed by [`protocol`](Self::protocol) (spec §5).
    pub const fn typed_flags(&self) -> SetupFlags {
        SetupFlags::new(self.protocol, self.flags)
    }

    /// The requested flags of a Mining connection; `None` for another protocol.
    ///
    /// ```
    /// use sv2c_binary::Str0255;
    /// use sv2c_binary::messages::{MiningSetupFlags, SetupConnection, SetupConnectionError};
    ///
    /// // Mining (the default protocol), asking for work selection and version rolling.
    /// let setup = SetupConnection { flags: 0x6, ..Default::default() };
    /// let asked = setup.mining_flags().unwrap();
    /// // A server that supports version rolling only:
    /// let refused = asked.unsupported(MiningSetupFlags::REQUIRES_VERSION_ROLLING);
    /// assert_eq!(refused, MiningSetupFlags::REQUIRES_WORK_SELECTION);
    /// let answer = SetupConnectionError {
    ///     flags: refused.bits(),
    ///     error_code: Str0255::try_from("unsupported-feature-flags").unwrap(),
    /// };
    /// # let _ = answer;
    /// ```
    pub const fn mining_flags(&self) -> Option<MiningSetupFlags> {
        match self.typed_flags() {
            SetupFlags::Mining(f) => Some(f),
            _ => None,
        }
    }

    /// The requested flags of a Job Declaration connection; `None` for another protocol.
    pub const fn job_declaration_flags(&self) -> Option<JobDeclarationSetupFlags> {
        match self.typed_flags() {
            SetupFlags::JobDeclaration(f) => Some(f),
            _ => None,
        }
    }
}

impl SetupConnectionSuccess {
    /// The server's flags, typed by the `protocol` of the `SetupConnection` this answers
    /// (the message does not carry it).
    pub const fn typed_flags(&self, protocol: Protocol) -> SuccessFlags {
        SuccessFlags::new(protocol, self.flags)
    }

    /// The server's flags read as Mining flags.
    pub const fn mining_flags(&self) -> MiningSuccessFlags {
        MiningSuccessFlags(self.flags)
    }
}

impl SetupConnectionError {
    /// The flags the server does not support, typed by the `protocol` of the
    /// `SetupConnection` this answers.
    pub const fn typed_flags(&self, protocol: Protocol) -> SetupFlags {
        SetupFlags::new(protocol, self.flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn debug_names_known_bits_and_shows_the_rest_in_hex() {
        assert_eq!(
            format!("{:?}", MiningSetupFlags::empty()),
            "MiningSetupFlags(empty)"
        );
        assert_eq!(
            format!("{:?}", MiningSuccessFlags::from_bits_retain(0x8000_0001)),
            "MiningSuccessFlags(REQUIRES_FIXED_VERSION | 0x80000000)"
        );
        assert_eq!(
            format!("{:?}", TemplateDistributionFlags::from_bits_retain(3)),
            "TemplateDistributionFlags(0x3)"
        );
    }

    #[test]
    fn same_bits_mean_different_flags_per_protocol_and_direction() {
        let setup = SetupConnection {
            protocol: Protocol::JobDeclaration,
            flags: 1,
            ..Default::default()
        };
        assert_eq!(
            setup.typed_flags(),
            SetupFlags::JobDeclaration(JobDeclarationSetupFlags::DECLARE_TX_DATA)
        );
        assert_eq!(setup.mining_flags(), None);
        let ok = SetupConnectionSuccess {
            used_version: 2,
            flags: 1,
        };
        assert_eq!(
            ok.typed_flags(Protocol::Mining),
            SuccessFlags::Mining(MiningSuccessFlags::REQUIRES_FIXED_VERSION)
        );
        assert_eq!(
            SetupFlags::new(Protocol::Mining, 0x7).unsupported_bits(0x4),
            0x3
        );
    }
}
