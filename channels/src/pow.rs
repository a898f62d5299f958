//! Proof of work: what a share's header is and whether it meets a target.
//!
//! Byte orders follow Bitcoin's serialisation, which is also Stratum V2's: `prev_hash`,
//! merkle roots and merkle path entries are the 32 bytes as they appear in the header
//! ("internal" order), integers are little-endian, and a target ([`U256`]) is a
//! little-endian 256-bit number, compared with the header hash read the same way
//! (SV2-WIRE §3, `U256`).

use sha2::{Digest, Sha256};
use sv2c_binary::U256;

/// Double SHA-256.
pub fn sha256d(bytes: &[u8]) -> [u8; 32] {
    let first = Sha256::digest(bytes);
    Sha256::digest(first).into()
}

/// The merkle root of a block whose first transaction (the coinbase) has id
/// `coinbase_txid` and whose other transactions are summarised by `path` (the sibling
/// hashes on the way up, as `NewExtendedMiningJob.merkle_path` lists them).
pub fn merkle_root<'a>(
    coinbase_txid: [u8; 32],
    path: impl IntoIterator<Item = &'a [u8; 32]>,
) -> [u8; 32] {
    let mut node = coinbase_txid;
    let mut pair = [0u8; 64];
    for sibling in path {
        pair[..32].copy_from_slice(&node);
        pair[32..].copy_from_slice(sibling);
        node = sha256d(&pair);
    }
    node
}

/// The 80-byte block header.
pub fn header(
    version: u32,
    prev_hash: &[u8; 32],
    merkle_root: &[u8; 32],
    ntime: u32,
    nbits: u32,
    nonce: u32,
) -> [u8; 80] {
    let mut h = [0u8; 80];
    h[..4].copy_from_slice(&version.to_le_bytes());
    h[4..36].copy_from_slice(prev_hash);
    h[36..68].copy_from_slice(merkle_root);
    h[68..72].copy_from_slice(&ntime.to_le_bytes());
    h[72..76].copy_from_slice(&nbits.to_le_bytes());
    h[76..].copy_from_slice(&nonce.to_le_bytes());
    h
}

/// Whether `hash` (a header's double SHA-256), read as a little-endian number, is at most
/// `target`.
pub fn meets_target(hash: &[u8; 32], target: &U256) -> bool {
    // From the most significant byte, the last one in little-endian.
    for (h, t) in hash.iter().rev().zip(target.0.iter().rev()) {
        if h != t {
            return h < t;
        }
    }
    true
}

/// The harder (smaller) of two targets.
pub fn harder(a: &U256, b: &U256) -> U256 {
    if meets_target(&a.0, b) { *a } else { *b }
}

/// The target below which a hash has `bits` leading zero bits (as a big-endian number):
/// on average one hash in `2^bits` meets it. `bits` is capped at 255.
pub fn target_with_zero_bits(bits: u32) -> U256 {
    let bits = bits.min(255) as usize;
    let mut le = [0xffu8; 32];
    for (i, byte) in le.iter_mut().rev().enumerate() {
        let from = i * 8;
        if from + 8 <= bits {
            *byte = 0;
        } else if from < bits {
            *byte = 0xff >> (bits - from);
        }
    }
    U256(le)
}

/// `2^n` as an `f64` (`f64::powi` is not in `core`).
const fn pow2(n: u32) -> f64 {
    // The exponent field alone (a zero mantissa): exact for every `n` up to 1023.
    f64::from_bits((1023 + n as u64) << 52)
}

/// A target as a number (rounded to `f64`).
pub fn target_to_f64(target: &U256) -> f64 {
    target
        .0
        .iter()
        .rev()
        .fold(0.0f64, |acc, &b| acc * 256.0 + f64::from(b))
}

/// The expected number of hashes per share at `target`: `2^256 / (target + 1)`.
///
/// ```
/// use sv2c_channels::pow::{expected_hashes, target_with_zero_bits};
/// assert_eq!(expected_hashes(&target_with_zero_bits(8)), 256.0);
/// ```
pub fn expected_hashes(target: &U256) -> f64 {
    pow2(256) / (target_to_f64(target) + 1.0)
}

/// The Bitcoin difficulty-1 target, `0xffff * 2^208`, as an `f64`.
pub fn difficulty_1_target() -> f64 {
    65535.0 * pow2(208)
}

/// The difficulty of a target (difficulty 1 is `0xffff * 2^208`, as in Bitcoin and SV1).
pub fn target_to_difficulty(target: &U256) -> f64 {
    difficulty_1_target() / target_to_f64(target).max(1.0)
}

/// The target of a number (`f64`, clamped to `0..2^256 - 1`), rounded down.
pub fn f64_to_target(value: f64) -> U256 {
    let mut value = if value.is_nan() { 0.0 } else { value.max(0.0) };
    if value >= pow2(256) {
        return U256([0xff; 32]);
    }
    let mut le = [0u8; 32];
    let mut scale = pow2(248);
    for byte in le.iter_mut().rev() {
        let b = (value / scale) as u64; // `as` floors and saturates
        let b = b.min(255);
        *byte = b as u8;
        value -= b as f64 * scale;
        scale /= 256.0;
    }
    U256(le)
}

/// The target of a difficulty (rounded down, so that a hash meeting it meets the exact
/// one). A difficulty of 0 or less gives the easiest target.
pub fn difficulty_to_target(difficulty: f64) -> U256 {
    if difficulty.is_nan() || difficulty <= 0.0 {
        return U256([0xff; 32]);
    }
    f64_to_target(difficulty_1_target() / difficulty)
}

/// The target at which a miner of `hashrate` hashes per second finds `shares_per_minute`
/// shares a minute on average: `2^256 / (hashrate * 60 / shares_per_minute) - 1`.
pub fn hashrate_to_target(hashrate: f64, shares_per_minute: f64) -> U256 {
    let hashes_per_share = hashrate * 60.0 / shares_per_minute;
    if hashes_per_share.is_nan() || hashes_per_share <= 1.0 {
        return U256([0xff; 32]);
    }
    f64_to_target(pow2(256) / hashes_per_share - 1.0)
}

/// The hashrate (hashes per second) that finds `shares_per_minute` shares a minute at
/// `target`.
pub fn target_to_hashrate(target: &U256, shares_per_minute: f64) -> f64 {
    expected_hashes(target) * shares_per_minute / 60.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pow2_is_exact() {
        let mut v = 1.0f64;
        for n in 0..=300 {
            assert_eq!(pow2(n), v, "2^{n}");
            v *= 2.0;
        }
    }

    fn unhex32(s: &str) -> [u8; 32] {
        hex::decode(s).unwrap().try_into().unwrap()
    }

    fn rev(s: &str) -> [u8; 32] {
        let mut b = unhex32(s);
        b.reverse();
        b
    }

    /// The genesis block's header, from its published fields, hashes to its published
    /// hash (explorers print it reversed).
    #[test]
    fn genesis_block_header_hashes_to_the_published_hash() {
        let merkle = rev("4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b");
        let h = header(
            1,
            &[0; 32],
            &merkle,
            1_231_006_505,
            0x1d00_ffff,
            2_083_236_893,
        );
        let hash = sha256d(&h);
        assert_eq!(
            hash,
            rev("000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f")
        );
        assert!(meets_target(&hash, &difficulty_to_target(1.0)));
        assert!(!meets_target(&hash, &target_with_zero_bits(48)));
        assert!(meets_target(&hash, &target_with_zero_bits(40)));
    }

    #[test]
    fn merkle_root_of_block_170() {
        let coinbase = rev("b1fea52486ce0c62bb442b530a3f0132b826c74e473d1f2c220bfa78111c5082");
        let other = rev("f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16");
        assert_eq!(
            merkle_root(coinbase, [&other]),
            rev("7dac2c5666815c17a3b36427de37bb9d2e2c5ccec3f8633eb91a4205cb4c10ff")
        );
        assert_eq!(merkle_root(coinbase, []), coinbase);
    }

    #[test]
    fn zero_bit_targets_and_difficulty() {
        assert_eq!(target_with_zero_bits(0).0, [0xff; 32]);
        let t = target_with_zero_bits(12);
        assert_eq!(&t.0[29..], &[0xff, 0x0f, 0x00]);
        assert_eq!(t.0[..29], [0xff; 29]);
        // Difficulty 1: 0x00000000ffff0000...: bytes 26, 27 (LE) are 0xff, above them 0.
        let d1 = difficulty_to_target(1.0);
        let mut want = [0u8; 32];
        want[26] = 0xff;
        want[27] = 0xff;
        assert_eq!(d1.0, want);
        assert_eq!(target_to_difficulty(&d1), 1.0);
        assert_eq!(harder(&d1, &t), d1);
        assert_eq!(harder(&t, &d1), d1);
    }

    #[test]
    fn hashrate_round_trip() {
        // 1 TH/s, 10 shares a minute: 6e12 hashes a share.
        let t = hashrate_to_target(1e12, 10.0);
        let back = target_to_hashrate(&t, 10.0);
        assert!((back / 1e12 - 1.0).abs() < 1e-9, "{back}");
        assert_eq!(expected_hashes(&target_with_zero_bits(32)), 4_294_967_296.0);
    }
}
