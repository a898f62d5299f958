//! The header-field rules a share must meet beside its proof of work, written once for
//! the server's check ([`ServerChannel::validate_share`](crate::server::ServerChannel::validate_share))
//! and the client's ([`ClientChannel::check_share`](crate::client::ClientChannel::check_share)),
//! so that a proxy checking shares for its miners is exactly as strict as the pool.

/// A share's `ntime` or `version` outside what its job allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldFault {
    /// `ntime` below the job's `min_ntime`.
    NtimeTooEarly { ntime: u32, min_ntime: u32 },
    /// `ntime` above `min_ntime + max_ntime_ahead`.
    NtimeTooLate { ntime: u32, max_ntime: u32 },
    /// Bits changed outside the rolling mask.
    VersionBitsOutsideMask,
}

/// Checks `ntime` against `min_ntime ..= min_ntime + max_ntime_ahead`, then the bits of
/// `version` that differ from `job_version` against `version_mask`.
pub(crate) fn check_fields(
    min_ntime: u32,
    max_ntime_ahead: u32,
    job_version: u32,
    version_mask: u32,
    ntime: u32,
    version: u32,
) -> Result<(), FieldFault> {
    if ntime < min_ntime {
        return Err(FieldFault::NtimeTooEarly { ntime, min_ntime });
    }
    let max_ntime = min_ntime.saturating_add(max_ntime_ahead);
    if ntime > max_ntime {
        return Err(FieldFault::NtimeTooLate { ntime, max_ntime });
    }
    if (version ^ job_version) & !version_mask != 0 {
        return Err(FieldFault::VersionBitsOutsideMask);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_and_the_mask() {
        let check =
            |ntime, version| check_fields(100, 10, 0x2000_0000, 0x1fff_e000, ntime, version);
        assert_eq!(check(100, 0x2000_0000), Ok(()));
        assert_eq!(check(110, 0x3fff_e000), Ok(()));
        assert_eq!(
            check(99, 0x2000_0000),
            Err(FieldFault::NtimeTooEarly {
                ntime: 99,
                min_ntime: 100
            })
        );
        assert_eq!(
            check(111, 0x2000_0000),
            Err(FieldFault::NtimeTooLate {
                ntime: 111,
                max_ntime: 110
            })
        );
        assert_eq!(
            check(100, 0x2000_0001),
            Err(FieldFault::VersionBitsOutsideMask)
        );
        assert_eq!(
            check(100, 0xa000_0000),
            Err(FieldFault::VersionBitsOutsideMask)
        );
        // A window that would pass u32::MAX ends there.
        assert_eq!(check_fields(u32::MAX - 1, 10, 0, 0, u32::MAX, 0), Ok(()));
    }
}
