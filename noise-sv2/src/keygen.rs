//! ElligatorSwift key generation on the thread's secp256k1 context, the crate's one
//! `unsafe` module: one foreign call.
//!
//! `secp256k1`'s safe key generation ([`ElligatorSwift::from_seckey`],
//! [`PublicKey::from_secret_key`]) rerandomizes the thread's context (a new blinding of the
//! generator multiplication, a side-channel countermeasure) after every key. That costs
//! about 19 µs, as much as two thirds of the key generation itself, and a responder draws
//! a key per handshake. Here the context is rerandomized, from the operating system's RNG,
//! once every [`KEYS_PER_BLINDING`] keys instead: the blinding keeps changing, and a
//! handshake storm spends its CPU on the handshakes.
//!
//! Measured on the 2-core VM of BENCHMARKS.md (20,000 keys a round): 47.1–48.5 µs a key
//! through the safe API, 28.0–28.3 µs here; rerandomizing 19.2–19.8 µs.
//!
//! [`ElligatorSwift::from_seckey`]: secp256k1::ellswift::ElligatorSwift::from_seckey
//! [`PublicKey::from_secret_key`]: secp256k1::PublicKey::from_secret_key

use core::cell::Cell;

use secp256k1::{SecretKey, ffi};
use zeroize::Zeroize;

use crate::error::NoiseError;
use crate::random::random_array;

/// Keys generated on a thread between two rerandomizations of its context.
pub(crate) const KEYS_PER_BLINDING: u32 = 64;

std::thread_local! {
    /// Keys this thread may still generate before its context is rerandomized (0: first).
    static KEYS_LEFT: Cell<u32> = const { Cell::new(0) };
}

/// The 64-byte ElligatorSwift encoding of `secret`'s public key; `aux` picks one of its
/// many encodings (libsecp256k1's `secp256k1_ellswift_create`).
///
/// # Errors
/// [`NoiseError::RandomSource`] if the OS RNG fails when the context is due for a new
/// blinding.
pub(crate) fn ellswift_create(secret: &SecretKey, aux: &[u8; 32]) -> Result<[u8; 64], NoiseError> {
    let left = KEYS_LEFT.get();
    if left == 0 {
        let mut seed: [u8; 32] = random_array()?;
        secp256k1::rerandomize_global_context(&seed);
        seed.zeroize();
    }
    KEYS_LEFT.set(left.checked_sub(1).unwrap_or(KEYS_PER_BLINDING - 1));

    let mut secret_bytes = secret.to_secret_bytes();
    let mut out = [0u8; 64];
    let created = secp256k1::with_raw_global_context(
        |ctx| {
            // SAFETY: `ctx` is the thread's context, created with every capability (signing
            // included, which `ellswift_create` needs) and borrowed for this call only.
            // `out` is 64 writable bytes (`ell64`), `secret_bytes` and `aux` are 32
            // readable bytes each (`seckey32`, `auxrnd32`); all three live across the
            // call and the function keeps no pointer to them.
            unsafe {
                ffi::secp256k1_ellswift_create(
                    ctx.as_ptr(),
                    out.as_mut_ptr(),
                    secret_bytes.as_ptr(),
                    aux.as_ptr(),
                )
            }
        },
        None,
    );
    secret_bytes.zeroize();
    // A `SecretKey` is a valid scalar, so the call cannot fail; were it to, the caller
    // gets an error rather than an encoding of nothing.
    if created == 1 {
        Ok(out)
    } else {
        Err(NoiseError::InvalidSecretKey)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secp256k1::PublicKey;
    use secp256k1::ellswift::ElligatorSwift;

    fn secret(i: u8) -> SecretKey {
        let mut b = [0x42u8; 32];
        b[31] = i;
        SecretKey::from_secret_bytes(b).unwrap()
    }

    /// The same function as the safe API, so the same bytes for the same key and `aux`,
    /// across several rerandomizations of the context (which must not change a result).
    #[test]
    fn encodes_as_the_safe_api_does() {
        for i in 1..=(2 * KEYS_PER_BLINDING as u8 + 3) {
            let (sk, aux) = (secret(i), [i; 32]);
            let ours = ellswift_create(&sk, &aux).unwrap();
            assert_eq!(
                ours,
                ElligatorSwift::from_seckey(sk, Some(aux)).to_array(),
                "key {i}"
            );
            let decoded = PublicKey::from_ellswift(ElligatorSwift::from_array(ours));
            assert_eq!(decoded, PublicKey::from_secret_key(&sk), "key {i}");
        }
    }

    #[test]
    fn another_aux_gives_another_encoding_of_the_same_key() {
        let sk = secret(7);
        let (a, b) = (
            ellswift_create(&sk, &[1; 32]).unwrap(),
            ellswift_create(&sk, &[2; 32]).unwrap(),
        );
        assert_ne!(a, b);
        let x = |e: [u8; 64]| PublicKey::from_ellswift(ElligatorSwift::from_array(e));
        assert_eq!(x(a), x(b));
    }
}
