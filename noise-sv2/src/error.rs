//! The one error type of this crate.

/// Which encrypted part of handshake act 2 failed to authenticate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Act2Part {
    /// Bytes 64..144: the responder's static key (`es` is not mixed in yet, key from `ee`).
    StaticKey,
    /// Bytes 144..234: the certificate (SIGNATURE_NOISE_MESSAGE), key from `es`.
    Certificate,
}

impl core::fmt::Display for Act2Part {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            Act2Part::StaticKey => "responder static key",
            Act2Part::Certificate => "certificate",
        })
    }
}

/// What is wrong with an authority public key string (§4.6 of SV2-WIRE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthorityKeyStringError {
    /// A character outside the base58 alphabet, or an otherwise undecodable string.
    Base58,
    /// The 4-byte double-SHA256 checksum does not match.
    Checksum,
    /// The decoded payload is not 34 bytes (2-byte version + 32-byte x-only key).
    Length(usize),
    /// The 2-byte little-endian version prefix is not 1.
    Version(u16),
}

impl core::fmt::Display for AuthorityKeyStringError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Base58 => f.write_str("not valid base58"),
            Self::Checksum => f.write_str("base58check checksum mismatch"),
            Self::Length(n) => write!(f, "payload is {n} bytes, expected 34"),
            Self::Version(v) => write!(f, "version prefix {v}, expected 1"),
        }
    }
}

impl core::error::Error for AuthorityKeyStringError {}

/// Every way the Noise layer can fail.
///
/// Errors from the handshake and from [`NoiseDecryptor`](crate::NoiseDecryptor) are fatal to
/// the connection: the caller should close it. A decryptor that returned an error keeps
/// returning [`NoiseError::Poisoned`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoiseError {
    // ===== keys =====
    /// 32 bytes that are not a valid secp256k1 secret key (zero, or not below the curve order).
    #[error("invalid secp256k1 secret key")]
    InvalidSecretKey,
    /// 32 bytes that are not the x coordinate of a secp256k1 point.
    #[error("invalid x-only public key")]
    InvalidPublicKey,
    /// An ElligatorSwift encoding that does not encode the public key of the given secret.
    #[error("ElligatorSwift encoding does not match the secret key")]
    EllswiftMismatch,
    /// An authority public key string that cannot be decoded.
    #[error("invalid authority key string: {0}")]
    AuthorityKeyString(AuthorityKeyStringError),
    /// The operating system's random number generator failed.
    #[error("OS random number generator failed (raw os error {0:?})")]
    RandomSource(Option<i32>),

    // ===== handshake =====
    /// A handshake message of the wrong size (act 1 is 64 bytes, act 2 is 234 bytes).
    #[error("handshake message is {actual} bytes, expected {expected}")]
    HandshakeLength {
        /// Required size.
        expected: usize,
        /// Size received.
        actual: usize,
    },
    /// An encrypted part of act 2 failed authentication (corrupted, or not made for our
    /// ephemeral key).
    #[error("handshake act 2: {0} failed authentication")]
    HandshakeDecrypt(Act2Part),
    /// The certificate carries a version other than 0.
    #[error("unsupported certificate version {0}")]
    CertificateVersion(u16),
    /// The certificate signature does not verify under the authority key (wrong authority,
    /// or a certificate made for another server key).
    #[error("certificate signature does not verify under the authority key")]
    CertificateSignature,
    /// `now + slack < valid_from`.
    #[error("certificate not valid before {valid_from} (now {now})")]
    CertificateNotYetValid {
        /// Certificate start, unix seconds.
        valid_from: u32,
        /// Time of the check, unix seconds.
        now: u32,
    },
    /// `now > not_valid_after + slack`.
    #[error("certificate expired at {not_valid_after} (now {now})")]
    CertificateExpired {
        /// Certificate end, unix seconds.
        not_valid_after: u32,
        /// Time of the check, unix seconds.
        now: u32,
    },

    // ===== transport, sending =====
    /// A plaintext frame shorter than its 6-byte header.
    #[error("plaintext frame is {0} bytes, shorter than the 6-byte header")]
    FrameTooShort(usize),
    /// The header's `msg_length` does not match the payload that follows it.
    #[error("header announces a {announced}-byte payload but {actual} bytes follow")]
    FrameLengthMismatch {
        /// `msg_length` from the header.
        announced: usize,
        /// Payload bytes actually given.
        actual: usize,
    },

    // ===== transport, receiving =====
    /// The encrypted frame header failed authentication.
    #[error("frame header failed authentication")]
    HeaderDecrypt,
    /// Payload chunk `index` (0-based) failed authentication.
    #[error("payload chunk {index} failed authentication")]
    ChunkDecrypt {
        /// Position of the chunk in its frame.
        index: usize,
    },
    /// The decrypted header announces a payload above the configured maximum
    /// (`len` is the header's `msg_length`, `max` the decryptor's limit). The same type
    /// as the workspace's other payload-limit errors.
    #[error(transparent)]
    PayloadTooLarge(#[from] sv2c_binary::PayloadTooLarge),
    /// The stream ended in the middle of an encrypted frame.
    #[error("stream ended inside an encrypted frame ({buffered} bytes buffered)")]
    Truncated {
        /// Ciphertext bytes of the unfinished frame received so far.
        buffered: usize,
    },

    // ===== both directions =====
    /// The AEAD backend refused an operation (key setup or a message beyond the cipher's
    /// limits). Not caused by anything a peer sends.
    #[error("AEAD backend failure")]
    AeadBackend,
    /// The 64-bit nonce of this direction is used up (2^64 − 1 is reserved by Noise).
    #[error("transport nonce exhausted")]
    NonceExhausted,
    /// The decryptor failed earlier and refuses further input.
    #[error("decryptor failed earlier; the connection must be closed")]
    Poisoned,
}

#[cfg(test)]
mod std_error_tests {
    use super::AuthorityKeyStringError;

    #[test]
    fn authority_key_string_error_is_a_std_error() {
        let e: Box<dyn std::error::Error + Send + Sync> =
            Box::new(AuthorityKeyStringError::Length(3));
        assert_eq!(e.to_string(), "payload is 3 bytes, expected 34");
    }
}
