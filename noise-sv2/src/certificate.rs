//! The server certificate (SIGNATURE_NOISE_MESSAGE, SV2-WIRE §4.6).

use core::fmt;

use secp256k1::schnorr;
use sha2::{Digest, Sha256};

use crate::error::NoiseError;
use crate::keys::{AuthorityKeypair, AuthorityPublicKey, HexBytes};
use crate::random::random_array;

/// Seconds of clock slack allowed on each side of the validity window, as SRI does.
pub const CERTIFICATE_CLOCK_SLACK: u32 = 10;

/// The only certificate version defined.
pub const CERTIFICATE_VERSION: u16 = 0;

/// The server certificate that travels (encrypted) in act 2.
///
/// On the wire it is 74 bytes:
///
/// ```text
/// version U16 LE | valid_from U32 LE | not_valid_after U32 LE | BIP340 signature (64)
/// ```
///
/// The signature covers `SHA256(version ‖ valid_from ‖ not_valid_after ‖ server_x_only)`;
/// the server key itself is not in the message, the client takes it from the handshake.
///
/// ```
/// use sv2c_noise::{AuthorityKeypair, Certificate, StaticKeypair};
///
/// let authority = AuthorityKeypair::generate()?;
/// let server = StaticKeypair::generate()?;
/// let cert = Certificate::sign(&authority, &server.x_only_public_key(), 1_700_000_000, 1_700_003_600)?;
///
/// let now = 1_700_000_100;
/// cert.verify(&authority.public_key(), &server.x_only_public_key(), now)?;
/// assert!(cert.verify(&authority.public_key(), &server.x_only_public_key(), 1_800_000_000).is_err());
///
/// let bytes = cert.to_bytes();
/// assert_eq!(Certificate::from_bytes(&bytes), cert);
/// # Ok::<(), sv2c_noise::NoiseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Certificate {
    version: u16,
    valid_from: u32,
    not_valid_after: u32,
    signature: [u8; 64],
}

impl Certificate {
    /// Size of the encoded certificate.
    pub const LEN: usize = 74;

    /// Signs a version-0 certificate for `server_x_only`, valid from `valid_from` to
    /// `not_valid_after` (unix seconds, inclusive), with fresh BIP340 aux randomness.
    ///
    /// # Errors
    ///
    /// [`NoiseError::RandomSource`] if the OS RNG fails.
    pub fn sign(
        authority: &AuthorityKeypair,
        server_x_only: &[u8; 32],
        valid_from: u32,
        not_valid_after: u32,
    ) -> Result<Self, NoiseError> {
        let aux: [u8; 32] = random_array()?;
        Ok(Self::sign_with_aux_rand(
            authority,
            server_x_only,
            valid_from,
            not_valid_after,
            &aux,
        ))
    }

    /// Same as [`Certificate::sign`] with caller-chosen BIP340 aux randomness, which makes
    /// the signature deterministic (test vectors use 32 zero bytes).
    pub fn sign_with_aux_rand(
        authority: &AuthorityKeypair,
        server_x_only: &[u8; 32],
        valid_from: u32,
        not_valid_after: u32,
        aux_rand: &[u8; 32],
    ) -> Self {
        let m = signed_digest(
            CERTIFICATE_VERSION,
            valid_from,
            not_valid_after,
            server_x_only,
        );
        let signature = schnorr::sign_with_aux_rand(&m, authority.keypair(), aux_rand);
        Self {
            version: CERTIFICATE_VERSION,
            valid_from,
            not_valid_after,
            signature: signature.to_byte_array(),
        }
    }

    /// Checks the certificate for the server key `server_x_only` at time `now` (unix seconds).
    ///
    /// Order of checks: version, signature, then the validity window with
    /// [`CERTIFICATE_CLOCK_SLACK`] seconds of slack on each side.
    ///
    /// # Errors
    ///
    /// [`NoiseError::CertificateVersion`], [`NoiseError::CertificateSignature`],
    /// [`NoiseError::CertificateNotYetValid`] or [`NoiseError::CertificateExpired`].
    pub fn verify(
        &self,
        authority: &AuthorityPublicKey,
        server_x_only: &[u8; 32],
        now: u32,
    ) -> Result<(), NoiseError> {
        if self.version != CERTIFICATE_VERSION {
            return Err(NoiseError::CertificateVersion(self.version));
        }
        let m = signed_digest(
            self.version,
            self.valid_from,
            self.not_valid_after,
            server_x_only,
        );
        let signature = schnorr::Signature::from_byte_array(self.signature);
        schnorr::verify(&signature, &m, authority.as_xonly())
            .map_err(|_| NoiseError::CertificateSignature)?;
        if now.saturating_add(CERTIFICATE_CLOCK_SLACK) < self.valid_from {
            return Err(NoiseError::CertificateNotYetValid {
                valid_from: self.valid_from,
                now,
            });
        }
        if now > self.not_valid_after.saturating_add(CERTIFICATE_CLOCK_SLACK) {
            return Err(NoiseError::CertificateExpired {
                not_valid_after: self.not_valid_after,
                now,
            });
        }
        Ok(())
    }

    /// The 74-byte wire form.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        out[0..2].copy_from_slice(&self.version.to_le_bytes());
        out[2..6].copy_from_slice(&self.valid_from.to_le_bytes());
        out[6..10].copy_from_slice(&self.not_valid_after.to_le_bytes());
        out[10..].copy_from_slice(&self.signature);
        out
    }

    /// Reads the 74-byte wire form. Every byte string parses; [`Certificate::verify`] decides
    /// whether it is acceptable.
    pub fn from_bytes(bytes: &[u8; Self::LEN]) -> Self {
        let [v0, v1, f0, f1, f2, f3, a0, a1, a2, a3, signature @ ..] = *bytes;
        Self {
            version: u16::from_le_bytes([v0, v1]),
            valid_from: u32::from_le_bytes([f0, f1, f2, f3]),
            not_valid_after: u32::from_le_bytes([a0, a1, a2, a3]),
            signature,
        }
    }

    /// Certificate format version (0).
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Start of validity, unix seconds.
    pub fn valid_from(&self) -> u32 {
        self.valid_from
    }

    /// End of validity (inclusive), unix seconds.
    pub fn not_valid_after(&self) -> u32 {
        self.not_valid_after
    }

    /// The 64-byte BIP340 signature.
    pub fn signature(&self) -> &[u8; 64] {
        &self.signature
    }
}

impl fmt::Debug for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Certificate")
            .field("version", &self.version)
            .field("valid_from", &self.valid_from)
            .field("not_valid_after", &self.not_valid_after)
            .field("signature", &HexBytes(&self.signature))
            .finish()
    }
}

/// `SHA256(version ‖ valid_from ‖ not_valid_after ‖ server_x_only)`: the 32-byte BIP340
/// message of the certificate signature (42 input bytes).
pub(crate) fn signed_digest(
    version: u16,
    valid_from: u32,
    not_valid_after: u32,
    server_x_only: &[u8; 32],
) -> [u8; 32] {
    Sha256::new()
        .chain_update(version.to_le_bytes())
        .chain_update(valid_from.to_le_bytes())
        .chain_update(not_valid_after.to_le_bytes())
        .chain_update(server_x_only)
        .finalize()
        .into()
}
