//! The operating system's RNG, the crate's one source of randomness (keys, their
//! ElligatorSwift encodings, signatures, the key generator's blinding).

use crate::error::NoiseError;

/// Fills an array from the operating system's RNG.
pub(crate) fn random_array<const N: usize>() -> Result<[u8; N], NoiseError> {
    let mut out = [0u8; N];
    getrandom::fill(&mut out).map_err(|e| NoiseError::RandomSource(e.raw_os_error()))?;
    Ok(out)
}
