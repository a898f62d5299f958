//! Keys: the responder's static key, ephemeral keys, and the pool authority key.
//!
//! Handshake keys travel as 64-byte ElligatorSwift encodings; certificate keys are BIP340
//! x-only keys (SV2-WIRE §4.2).

use core::fmt;
use core::str::FromStr;

use secp256k1::ellswift::ElligatorSwift;
use secp256k1::{Keypair, PublicKey, SecretKey, XOnlyPublicKey};

use crate::error::{AuthorityKeyStringError, NoiseError};
use crate::random::random_array;

/// Version prefix of the authority key string: 1 as a little-endian U16 (§4.6).
const AUTHORITY_KEY_STRING_VERSION: u16 = 1;

// ===== randomness =====

/// Draws a uniformly random valid secret key.
fn random_secret_key() -> Result<SecretKey, NoiseError> {
    Ok(random_secret_key_and_aux()?.0)
}

/// Draws a uniformly random valid secret key and 32 more random bytes (the randomness of
/// its ElligatorSwift encoding) in one read of the RNG: a handshake's key costs one
/// system call, not two.
fn random_secret_key_and_aux() -> Result<(SecretKey, [u8; 32]), NoiseError> {
    // A uniformly random 32-byte string is out of range with probability ~2^-128, so a
    // handful of attempts only fail when the RNG is broken (e.g. returns zeros).
    for _ in 0..8 {
        let mut bytes: [u8; 64] = random_array()?;
        let mut secret = [0u8; 32];
        secret.copy_from_slice(&bytes[..32]);
        let mut aux = [0u8; 32];
        aux.copy_from_slice(&bytes[32..]);
        let key = SecretKey::from_secret_bytes(secret);
        zeroize::Zeroize::zeroize(&mut bytes);
        zeroize::Zeroize::zeroize(&mut secret);
        if let Ok(key) = key {
            return Ok((key, aux));
        }
    }
    Err(NoiseError::RandomSource(None))
}

fn secret_key_from_bytes(mut bytes: [u8; 32]) -> Result<SecretKey, NoiseError> {
    let key = SecretKey::from_secret_bytes(bytes).map_err(|_| NoiseError::InvalidSecretKey);
    zeroize::Zeroize::zeroize(&mut bytes);
    key
}

// ===== EllKey: a secret with the ElligatorSwift encoding of its public key =====

/// A secret key together with the 64-byte ElligatorSwift encoding that is sent for it.
#[derive(Clone)]
pub(crate) struct EllKey {
    secret: SecretKey,
    ellswift: [u8; 64],
}

impl EllKey {
    fn generate() -> Result<Self, NoiseError> {
        let (secret, aux) = random_secret_key_and_aux()?;
        Self::encode(secret, &aux)
    }

    fn from_secret_key(secret: SecretKey) -> Result<Self, NoiseError> {
        Self::encode(secret, &random_array()?)
    }

    /// Encodes the public key of `secret` with the fresh randomness `aux`, which picks one
    /// of its many encodings so the bytes on the wire are not a function of the key.
    fn encode(secret: SecretKey, aux: &[u8; 32]) -> Result<Self, NoiseError> {
        let ellswift = crate::keygen::ellswift_create(&secret, aux)?;
        Ok(Self { secret, ellswift })
    }

    fn from_parts(secret: [u8; 32], ellswift: [u8; 64]) -> Result<Self, NoiseError> {
        let secret = secret_key_from_bytes(secret)?;
        let public = PublicKey::from_secret_key(&secret);
        let decoded = PublicKey::from_ellswift(ElligatorSwift::from_array(ellswift));
        // ECDH and certificates only use x coordinates, so an encoding of -P is as good as P.
        if decoded.x_only_public_key().0 != public.x_only_public_key().0 {
            return Err(NoiseError::EllswiftMismatch);
        }
        Ok(Self { secret, ellswift })
    }

    pub(crate) fn secret(&self) -> SecretKey {
        self.secret
    }

    pub(crate) fn ellswift(&self) -> &[u8; 64] {
        &self.ellswift
    }
}

impl Drop for EllKey {
    fn drop(&mut self) {
        self.secret.non_secure_erase();
    }
}

// ===== StaticKeypair =====

/// The responder's long-term (static) key, which the authority certifies.
///
/// It is sent, encrypted, in handshake act 2 as a 64-byte ElligatorSwift encoding; the
/// certificate signs its x-only form ([`StaticKeypair::x_only_public_key`]).
#[derive(Clone)]
pub struct StaticKeypair {
    key: EllKey,
    x_only: [u8; 32],
}

impl StaticKeypair {
    /// Generates a new random static key.
    ///
    /// # Errors
    ///
    /// [`NoiseError::RandomSource`] if the OS RNG fails.
    pub fn generate() -> Result<Self, NoiseError> {
        Ok(Self::from_ell_key(EllKey::generate()?))
    }

    /// Loads a static key from its 32 secret bytes (big-endian scalar, `1 ≤ d < n`).
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidSecretKey`] for an out-of-range scalar,
    /// [`NoiseError::RandomSource`] if the OS RNG (used to pick an encoding) fails.
    pub fn from_secret_bytes(secret: [u8; 32]) -> Result<Self, NoiseError> {
        let secret = secret_key_from_bytes(secret)?;
        Ok(Self::from_ell_key(EllKey::from_secret_key(secret)?))
    }

    /// Builds a static key from its secret and a chosen ElligatorSwift encoding of its
    /// public key. Meant for reproducing fixed test vectors.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidSecretKey`], or [`NoiseError::EllswiftMismatch`] if `ellswift`
    /// does not encode the key's public point (up to sign).
    pub fn from_parts(secret: [u8; 32], ellswift: [u8; 64]) -> Result<Self, NoiseError> {
        Ok(Self::from_ell_key(EllKey::from_parts(secret, ellswift)?))
    }

    fn from_ell_key(key: EllKey) -> Self {
        let x_only = PublicKey::from_secret_key(&key.secret)
            .x_only_public_key()
            .0
            .to_byte_array();
        Self { key, x_only }
    }

    /// The 64-byte ElligatorSwift encoding sent in act 2.
    pub fn ellswift(&self) -> &[u8; 64] {
        self.key.ellswift()
    }

    /// The BIP340 x-only public key, as signed in the certificate.
    pub fn x_only_public_key(&self) -> [u8; 32] {
        self.x_only
    }

    pub(crate) fn ell_key(&self) -> &EllKey {
        &self.key
    }
}

impl fmt::Debug for StaticKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticKeypair")
            .field("x_only", &HexBytes(&self.x_only))
            .finish_non_exhaustive()
    }
}

// ===== EphemeralKey =====

/// A one-time handshake key.
///
/// The handshake draws its own ephemeral keys. Build one yourself to make a responder's
/// keys ahead of time ([`EphemeralKey::generate`] while the server is idle, handed to
/// [`Responder::step_with_ephemeral`](crate::Responder::step_with_ephemeral)) or to reproduce
/// a fixed test vector ([`Initiator::with_ephemeral`](crate::Initiator::with_ephemeral)).
/// Never use one twice: it is consumed by the handshake that uses it.
pub struct EphemeralKey {
    key: EllKey,
}

impl EphemeralKey {
    /// Generates a fresh random ephemeral key.
    ///
    /// # Errors
    ///
    /// [`NoiseError::RandomSource`] if the OS RNG fails.
    pub fn generate() -> Result<Self, NoiseError> {
        Ok(Self {
            key: EllKey::generate()?,
        })
    }

    /// Builds an ephemeral key from a secret and the ElligatorSwift encoding to send.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidSecretKey`], or [`NoiseError::EllswiftMismatch`] if `ellswift`
    /// does not encode the key's public point (up to sign).
    pub fn from_parts(secret: [u8; 32], ellswift: [u8; 64]) -> Result<Self, NoiseError> {
        Ok(Self {
            key: EllKey::from_parts(secret, ellswift)?,
        })
    }

    /// The 64-byte ElligatorSwift encoding that goes on the wire.
    pub fn ellswift(&self) -> &[u8; 64] {
        self.key.ellswift()
    }

    pub(crate) fn into_ell_key(self) -> EllKey {
        self.key
    }
}

impl fmt::Debug for EphemeralKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EphemeralKey").finish_non_exhaustive()
    }
}

// ===== AuthorityKeypair =====

/// The pool authority's signing key, which signs server certificates.
#[derive(Clone)]
pub struct AuthorityKeypair {
    keypair: Keypair,
}

impl AuthorityKeypair {
    /// Generates a new random authority key.
    ///
    /// # Errors
    ///
    /// [`NoiseError::RandomSource`] if the OS RNG fails.
    pub fn generate() -> Result<Self, NoiseError> {
        let secret = random_secret_key()?;
        Ok(Self::from_secret_key(secret))
    }

    /// Loads an authority key from its 32 secret bytes.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidSecretKey`] for an out-of-range scalar.
    pub fn from_secret_bytes(secret: [u8; 32]) -> Result<Self, NoiseError> {
        Ok(Self::from_secret_key(secret_key_from_bytes(secret)?))
    }

    fn from_secret_key(mut secret: SecretKey) -> Self {
        let keypair = Keypair::from_secret_key(&secret);
        secret.non_secure_erase();
        Self { keypair }
    }

    /// The 32 secret bytes, e.g. to store the key in a configuration file.
    pub fn to_secret_bytes(&self) -> [u8; 32] {
        self.keypair.to_secret_bytes()
    }

    /// The public half, which clients configure to authenticate servers.
    pub fn public_key(&self) -> AuthorityPublicKey {
        AuthorityPublicKey(self.keypair.x_only_public_key().0)
    }

    pub(crate) fn keypair(&self) -> &Keypair {
        &self.keypair
    }
}

impl Drop for AuthorityKeypair {
    fn drop(&mut self) {
        self.keypair.non_secure_erase();
    }
}

impl fmt::Debug for AuthorityKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthorityKeypair")
            .field("public_key", &self.public_key())
            .finish_non_exhaustive()
    }
}

// ===== AuthorityPublicKey =====

/// The pool authority's BIP340 x-only public key, which clients use to verify server
/// certificates.
///
/// Its text form (`Display` / `FromStr`) is the base58check string of SV2-WIRE §4.6:
/// `base58check(01 00 ‖ x_only)`.
///
/// ```
/// use sv2c_noise::AuthorityPublicKey;
///
/// let key: AuthorityPublicKey = "9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh".parse()?;
/// assert_eq!(key.to_bytes()[..4], [0x76, 0x63, 0x70, 0x00]);
/// assert_eq!(key.to_string(), "9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh");
/// # Ok::<(), sv2c_noise::NoiseError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuthorityPublicKey(XOnlyPublicKey);

impl AuthorityPublicKey {
    /// Parses 32 bytes as an x-only key.
    ///
    /// # Errors
    ///
    /// [`NoiseError::InvalidPublicKey`] if the bytes are not a curve x coordinate.
    pub fn from_bytes(bytes: [u8; 32]) -> Result<Self, NoiseError> {
        XOnlyPublicKey::from_byte_array(bytes)
            .map(Self)
            .map_err(|_| NoiseError::InvalidPublicKey)
    }

    /// The 32-byte x-only form.
    pub fn to_bytes(&self) -> [u8; 32] {
        self.0.to_byte_array()
    }

    /// The base58check string (same as `to_string()`).
    pub fn to_base58check(&self) -> String {
        let mut payload = [0u8; 34];
        payload[..2].copy_from_slice(&AUTHORITY_KEY_STRING_VERSION.to_le_bytes());
        payload[2..].copy_from_slice(&self.to_bytes());
        bs58::encode(payload).with_check().into_string()
    }

    /// Parses the base58check string.
    ///
    /// # Errors
    ///
    /// [`NoiseError::AuthorityKeyString`] for a malformed string, a checksum mismatch, a wrong
    /// length or version; [`NoiseError::InvalidPublicKey`] if the 32 key bytes are not a
    /// curve point.
    pub fn from_base58check(s: &str) -> Result<Self, NoiseError> {
        use AuthorityKeyStringError as E;
        let payload = bs58::decode(s).with_check(None).into_vec().map_err(|e| {
            NoiseError::AuthorityKeyString(match e {
                bs58::decode::Error::InvalidChecksum { .. } => E::Checksum,
                bs58::decode::Error::NoChecksum => E::Length(0),
                _ => E::Base58,
            })
        })?;
        let Ok(payload) = <[u8; 34]>::try_from(payload.as_slice()) else {
            return Err(NoiseError::AuthorityKeyString(E::Length(payload.len())));
        };
        let [v0, v1, key @ ..] = payload;
        let version = u16::from_le_bytes([v0, v1]);
        if version != AUTHORITY_KEY_STRING_VERSION {
            return Err(NoiseError::AuthorityKeyString(E::Version(version)));
        }
        Self::from_bytes(key)
    }

    pub(crate) fn as_xonly(&self) -> &XOnlyPublicKey {
        &self.0
    }
}

impl fmt::Display for AuthorityPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_base58check())
    }
}

impl fmt::Debug for AuthorityPublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("AuthorityPublicKey")
            .field(&HexBytes(&self.to_bytes()))
            .finish()
    }
}

impl FromStr for AuthorityPublicKey {
    type Err = NoiseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_base58check(s)
    }
}

/// Debug helper printing bytes as lowercase hex.
pub(crate) struct HexBytes<'a>(pub(crate) &'a [u8]);

impl fmt::Debug for HexBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}
