//! Noise symmetric state (SV2-WIRE §4.3): `ck`, `h`, the handshake key and nonce, plus the
//! AEAD and HKDF primitives the transport reuses.

use hmac::{Hmac, Mac};
use secp256k1::SecretKey;
use secp256k1::ellswift::{ElligatorSwift, Party};
use sha2::{Digest, Sha256};
use zeroize::Zeroize;

use crate::MAC_LEN;
use crate::aead::Aead;
pub(crate) use crate::aead::AeadFailure;

/// The Noise protocol name, `Noise_NX_Secp256k1+EllSwift_ChaChaPoly_SHA256` (45 bytes).
pub const PROTOCOL_NAME: &[u8] = b"Noise_NX_Secp256k1+EllSwift_ChaChaPoly_SHA256";

/// `ck0 = SHA256(PROTOCOL_NAME)`; checked against the computation in the tests below.
const CK0: [u8; 32] = [
    0x2e, 0xb4, 0x78, 0x81, 0x20, 0x8e, 0x9e, 0xee, 0x1f, 0x66, 0x9f, 0x67, 0xc6, 0x6e, 0xe7, 0x0e,
    0xa9, 0xea, 0x88, 0x09, 0x0d, 0x50, 0x3f, 0xe8, 0x30, 0xdc, 0x4b, 0xc8, 0x3e, 0x29, 0xbf, 0x10,
];

/// `h0 = SHA256(ck0)` (the empty prologue mixed in).
const H0: [u8; 32] = [
    0x92, 0x2f, 0xa3, 0x2e, 0x4f, 0x48, 0x7c, 0x0d, 0x59, 0xca, 0xa3, 0xbe, 0xd7, 0x89, 0x9c, 0xe3,
    0xd9, 0x8d, 0xb7, 0xe1, 0x3d, 0xbd, 0x3b, 0x7c, 0xf2, 0xd2, 0x3d, 0xd4, 0x33, 0xdc, 0x61, 0x04,
];

// ===== primitives =====

/// HMAC-SHA256 keyed with a 32-byte key. The key is zero-padded to the 64-byte block,
/// which HMAC does anyway, so construction cannot fail.
fn hmac_keyed(key: &[u8; 32]) -> Hmac<Sha256> {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let mac = <Hmac<Sha256> as hmac::digest::KeyInit>::new(&block.into());
    block.zeroize();
    mac
}

/// `HKDF(ck, ikm)` with two outputs: `t = HMAC(ck, ikm)`, `o1 = HMAC(t, 0x01)`,
/// `o2 = HMAC(t, o1 ‖ 0x02)`.
pub(crate) fn hkdf2(ck: &[u8; 32], ikm: &[u8]) -> ([u8; 32], [u8; 32]) {
    let mut t: [u8; 32] = hmac_keyed(ck)
        .chain_update(ikm)
        .finalize()
        .into_bytes()
        .into();
    let keyed_t = hmac_keyed(&t);
    t.zeroize();
    let o1: [u8; 32] = keyed_t
        .clone()
        .chain_update([0x01])
        .finalize()
        .into_bytes()
        .into();
    let o2: [u8; 32] = keyed_t
        .chain_update(o1)
        .chain_update([0x02])
        .finalize()
        .into_bytes()
        .into();
    (o1, o2)
}

/// BIP324 x-only ElligatorSwift ECDH (§4.4). `ell_i` is always the initiator's encoding and
/// `ell_r` the responder's, whichever side computes.
pub(crate) fn ecdh(
    secret: SecretKey,
    party: Party,
    ell_i: &[u8; 64],
    ell_r: &[u8; 64],
) -> [u8; 32] {
    ElligatorSwift::shared_secret(
        ElligatorSwift::from_array(*ell_i),
        ElligatorSwift::from_array(*ell_r),
        secret,
        party,
    )
    .to_secret_bytes()
}

// ===== SymmetricState =====

/// `ck`, `h`, and the current handshake key `k` with its nonce `n`.
pub(crate) struct SymmetricState {
    ck: [u8; 32],
    h: [u8; 32],
    k: Option<[u8; 32]>,
    n: u64,
}

impl SymmetricState {
    /// `ck = SHA256(protocol_name)`, `h = SHA256(ck)`, no key.
    pub(crate) fn new() -> Self {
        Self {
            ck: CK0,
            h: H0,
            k: None,
            n: 0,
        }
    }

    /// `h = SHA256(h ‖ data)`.
    pub(crate) fn mix_hash(&mut self, data: &[u8]) {
        self.h = hash2(&self.h, data);
    }

    /// `(ck, k) = HKDF(ck, ikm)`, `n = 0`.
    pub(crate) fn mix_key(&mut self, ikm: &[u8]) {
        let (ck, k) = hkdf2(&self.ck, ikm);
        self.ck = ck;
        if let Some(old) = self.k.as_mut() {
            old.zeroize();
        }
        self.k = Some(k);
        self.n = 0;
    }

    /// EncryptAndHash. With a key, `buf` is `plaintext ‖ 16 spare bytes` and receives
    /// `ciphertext ‖ tag`; without one it is hashed as it is.
    pub(crate) fn encrypt_and_hash(&mut self, buf: &mut [u8]) -> Result<(), AeadFailure> {
        if let Some(k) = &self.k {
            let split = buf.len().checked_sub(MAC_LEN).ok_or(AeadFailure)?;
            let (plaintext, tag_out) = buf.split_at_mut(split);
            let tag = Aead::new(k)?.seal(self.n, &self.h, plaintext)?;
            tag_out.copy_from_slice(&tag);
            self.n = self.n.checked_add(1).ok_or(AeadFailure)?;
        }
        self.mix_hash(buf);
        Ok(())
    }

    /// DecryptAndHash. With a key, `buf` holds `ciphertext ‖ tag`; on success its first
    /// `len − 16` bytes are the plaintext. `h` absorbs the ciphertext, and neither `h` nor `n`
    /// changes on failure.
    pub(crate) fn decrypt_and_hash(&mut self, buf: &mut [u8]) -> Result<(), AeadFailure> {
        // The AD is the current h; the next h hashes the ciphertext, so compute it before
        // decrypting in place.
        let next_h = hash2(&self.h, buf);
        if let Some(k) = &self.k {
            let split = buf.len().checked_sub(MAC_LEN).ok_or(AeadFailure)?;
            let (ciphertext, tag) = buf.split_at_mut(split);
            let tag: [u8; MAC_LEN] = (&*tag).try_into().map_err(|_| AeadFailure)?;
            Aead::new(k)?.open(self.n, &self.h, ciphertext, &tag)?;
            self.n = self.n.checked_add(1).ok_or(AeadFailure)?;
        }
        self.h = next_h;
        Ok(())
    }

    /// `(k1, k2) = HKDF(ck, empty)`: k1 carries initiator → responder traffic, k2 the
    /// other direction.
    pub(crate) fn split(&self) -> ([u8; 32], [u8; 32]) {
        hkdf2(&self.ck, &[])
    }

    /// The handshake hash `h`.
    pub(crate) fn h(&self) -> &[u8; 32] {
        &self.h
    }

    #[cfg(test)]
    pub(crate) fn ck(&self) -> &[u8; 32] {
        &self.ck
    }

    #[cfg(test)]
    pub(crate) fn k(&self) -> Option<&[u8; 32]> {
        self.k.as_ref()
    }
}

impl Drop for SymmetricState {
    fn drop(&mut self) {
        self.ck.zeroize();
        self.h.zeroize();
        if let Some(k) = self.k.as_mut() {
            k.zeroize();
        }
    }
}

fn hash2(a: &[u8; 32], b: &[u8]) -> [u8; 32] {
    Sha256::new()
        .chain_update(a)
        .chain_update(b)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initial_constants_match_the_protocol_name() {
        assert_eq!(PROTOCOL_NAME.len(), 45);
        let ck: [u8; 32] = Sha256::digest(PROTOCOL_NAME).into();
        assert_eq!(ck, CK0);
        let h: [u8; 32] = Sha256::digest(ck).into();
        assert_eq!(h, H0);
    }

    #[test]
    fn hkdf2_is_rfc5869_with_salt_ck_and_empty_info() {
        // RFC 5869 test case 3 uses SHA-256, an empty salt and empty info; with an empty
        // salt RFC 5869 substitutes 32 zero bytes, which is exactly ck = [0; 32] here.
        let ikm = [0x0b; 22];
        let (o1, o2) = hkdf2(&[0u8; 32], &ikm);
        // The RFC lists the first 42 bytes of output (L = 42).
        let okm = hex::decode(
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d\
             9d201395faa4b61a96c8",
        )
        .unwrap();
        assert_eq!(&o1[..], &okm[..32]);
        assert_eq!(&o2[..10], &okm[32..]);
    }

    #[test]
    fn decrypt_and_hash_leaves_state_untouched_on_failure() {
        let mut a = SymmetricState::new();
        let mut b = SymmetricState::new();
        a.mix_key(b"shared");
        b.mix_key(b"shared");
        let mut buf = [7u8; 20];
        a.encrypt_and_hash(&mut buf).unwrap();
        let mut bad = buf;
        bad[0] ^= 1;
        let h_before = *b.h();
        assert!(b.decrypt_and_hash(&mut bad).is_err());
        assert_eq!(b.h(), &h_before);
        b.decrypt_and_hash(&mut buf).unwrap();
        assert_eq!(&buf[..4], &[7, 7, 7, 7]);
        assert_eq!(a.h(), b.h());
    }
}
