//! Proof of work: what a share's header is and whether it meets a target.
//!
//! Byte orders follow Bitcoin's serialisation, which is also Stratum V2's: `prev_hash`,
//! merkle roots and merkle path entries are the 32 bytes as they appear in the header
//! ("internal" order), integers are little-endian, and a target ([`U256`]) is a
//! little-endian 256-bit number, compared with the header hash read the same way
//! (SV2-WIRE §3, `U256`).

use alloc::vec::Vec;

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

/// The merkle path of a block's coinbase: the sibling hashes on the way from position 0
/// to the root, as `NewTemplate.merkle_path` and `NewExtendedMiningJob.merkle_path` carry
/// it and [`merkle_root`] takes it.
///
/// `txids` are the ids of the block's transactions *after* the coinbase, in block order
/// (the coinbase's own id is not needed: no sibling of position 0 depends on it). As in
/// Bitcoin, a level with an odd number of nodes pairs its last node with itself.
///
/// ```
/// use sv2c_channels::pow::{merkle_path, merkle_root, sha256d};
///
/// let (coinbase, a, b) = ([1u8; 32], [2u8; 32], [3u8; 32]);
/// let path = merkle_path(&[a, b]);
/// // Level 1: [coinbase, a], [b, b]; the path is `a`, then the hash of `b b`.
/// let bb = sha256d(&[b, b].concat());
/// assert_eq!(path, [a, bb]);
/// let root = sha256d(&[sha256d(&[coinbase, a].concat()), bb].concat());
/// assert_eq!(merkle_root(coinbase, &path), root);
/// ```
pub fn merkle_path(txids: &[[u8; 32]]) -> Vec<[u8; 32]> {
    let mut path = Vec::new();
    // The level's nodes after position 0 (whose own hash is never needed).
    let mut rest: Vec<[u8; 32]> = txids.to_vec();
    let mut pair = [0u8; 64];
    while let Some(&sibling) = rest.first() {
        path.push(sibling);
        // The next level: position 0 pairs with `rest[0]`; then `rest[1..]` in pairs,
        // the last with itself if it has no partner.
        let above = rest[1..]
            .chunks(2)
            .map(|two| {
                pair[..32].copy_from_slice(&two[0]);
                pair[32..].copy_from_slice(two.get(1).unwrap_or(&two[0]));
                sha256d(&pair)
            })
            .collect();
        rest = above;
    }
    path
}

/// Why compact `nbits` names no target ([`target_from_nbits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NbitsError {
    /// The sign bit (`0x0080_0000`) is set on a non-zero value: a negative target.
    #[error("nbits {0:#010x} is negative")]
    Negative(u32),
    /// The value does not fit 256 bits.
    #[error("nbits {0:#010x} overflows 256 bits")]
    Overflow(u32),
}

/// The target a header's compact `nbits` stands for (Bitcoin's "compact" form:
/// `mantissa × 256^(exponent − 3)`, the exponent in the top byte, a 23-bit mantissa below
/// a sign bit).
///
/// Mantissa bytes shifted out below the lowest byte are dropped (`0x0112_3456` is `0x12`),
/// and a zero mantissa is the target 0 whatever its sign bit, as in Bitcoin Core's
/// `SetCompact`.
///
/// # Errors
/// [`NbitsError::Negative`] if the sign bit is set on a non-zero value,
/// [`NbitsError::Overflow`] if the value needs more than 256 bits: Bitcoin refuses a
/// header with either.
///
/// ```
/// use sv2c_channels::pow::{difficulty_to_target, nbits_from_target, target_from_nbits};
///
/// // Difficulty 1, the genesis block's nbits.
/// let t = target_from_nbits(0x1d00_ffff).unwrap();
/// assert_eq!(t, difficulty_to_target(1.0));
/// assert_eq!(nbits_from_target(&t), 0x1d00_ffff);
/// ```
pub fn target_from_nbits(nbits: u32) -> Result<U256, NbitsError> {
    let exponent = (nbits >> 24) as usize;
    let mantissa = nbits & 0x007f_ffff;
    let mut le = [0u8; 32];
    for (i, byte) in mantissa.to_le_bytes()[..3].iter().enumerate() {
        // Byte `i` of the mantissa lands at byte `exponent - 3 + i` of the value.
        let Some(at) = (exponent + i).checked_sub(3) else {
            continue; // shifted out below the lowest byte
        };
        if *byte == 0 {
            continue;
        }
        match le.get_mut(at) {
            Some(slot) => *slot = *byte,
            None => return Err(NbitsError::Overflow(nbits)),
        }
    }
    if nbits & 0x0080_0000 != 0 && le != [0; 32] {
        return Err(NbitsError::Negative(nbits));
    }
    Ok(U256(le))
}

/// The compact `nbits` of a target (Bitcoin Core's `GetCompact`): its three most
/// significant bytes and its length in bytes, one byte longer when the top byte would set
/// the sign bit. The bytes below the top three are dropped, so
/// `target_from_nbits(nbits_from_target(t))` is `t` rounded down to three significant
/// bytes; for a target made from `nbits` it is the same target, and `nbits` comes back in
/// its normal form.
pub fn nbits_from_target(target: &U256) -> u32 {
    let Some(top) = target.0.iter().rposition(|&b| b != 0) else {
        return 0;
    };
    let mut size = top + 1;
    let mut mantissa = [0u8; 4];
    for (i, m) in mantissa[..3].iter_mut().enumerate() {
        // Byte `i` of the mantissa is byte `size - 3 + i` of the target, if it exists.
        if let Some(at) = (size + i).checked_sub(3) {
            *m = target.0[at];
        }
    }
    let mut mantissa = u32::from_le_bytes(mantissa);
    if mantissa & 0x0080_0000 != 0 {
        mantissa >>= 8;
        size += 1;
    }
    // `size` is at most 33: it fits the top byte.
    mantissa | (size as u32) << 24
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
    // Four little-endian 64-bit limbs, converted independently (a few nanoseconds: the
    // servers take a share's difficulty for its acknowledgement).
    let mut value = 0.0;
    for (i, limb) in target.0.chunks_exact(8).enumerate() {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(limb);
        value += u64::from_le_bytes(bytes) as f64 * pow2(64 * i as u32);
    }
    value
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

    /// The root of a whole block, computed level by level from every txid (coinbase
    /// included), independently of `merkle_path`.
    fn full_root(txids: &[[u8; 32]]) -> [u8; 32] {
        let mut level = txids.to_vec();
        while level.len() > 1 {
            if level.len() % 2 == 1 {
                level.push(*level.last().unwrap());
            }
            level = level
                .chunks(2)
                .map(|p| sha256d(&[p[0], p[1]].concat()))
                .collect();
        }
        level[0]
    }

    /// Block 100,000: four transactions, the root as published.
    #[test]
    fn merkle_path_of_block_100000_gives_its_root() {
        let coinbase = rev("8c14f0db3df150123e6f3dbbf30f8b955a8249b62ac1d1ff16284aefa3d06d87");
        let others = [
            rev("fff2525b8931402dd09222c50775608f75787bd2b87e56995a7bdd30f79702c4"),
            rev("6359f0868171b1d194cbee1af2f16ea598ae8fad666d9b012c8ed2b79a236ec4"),
            rev("e9a66845e05d5abc0ad04ec80f774a7e585c6e8db975962d069a522137b80c1d"),
        ];
        let root = rev("f3e94742aca4b5ef85488dc37c06c3282295ffec960994b2c0d5ac2a25a95766");
        let all = [coinbase, others[0], others[1], others[2]];
        assert_eq!(full_root(&all), root);
        let path = merkle_path(&others);
        assert_eq!(path.len(), 2);
        assert_eq!(path[0], others[0]);
        assert_eq!(merkle_root(coinbase, &path), root);
    }

    /// Blocks of 1 to 33 transactions (odd levels included): the path gives the root the
    /// whole tree does, for any coinbase.
    #[test]
    fn merkle_path_matches_the_whole_tree() {
        for n in 1..=33u8 {
            let txids: Vec<[u8; 32]> = (0..n).map(|i| sha256d(&[i, n])).collect();
            let path = merkle_path(&txids[1..]);
            assert_eq!(merkle_root(txids[0], &path), full_root(&txids), "{n} txs");
            let depth = (usize::from(n)).next_power_of_two().trailing_zeros() as usize;
            assert_eq!(path.len(), depth, "{n} txs");
        }
    }

    /// Bitcoin Core's `SetCompact`/`GetCompact` cases, and mainnet and regtest `nbits`.
    #[test]
    fn nbits_to_target_and_back() {
        let be = |nbits: u32| {
            let mut t = target_from_nbits(nbits).unwrap().0;
            t.reverse();
            hex::encode(t).trim_start_matches('0').to_owned()
        };
        // (nbits, target as big-endian hex without leading zeros, normal nbits)
        let cases = [
            (0x0000_0000, "", 0),
            (0x0012_3456, "", 0),
            (0x0100_3456, "", 0),
            (0x0200_0056, "", 0),
            (0x0300_0000, "", 0),
            (0x0400_0000, "", 0),
            (0x0092_3456, "", 0), // sign bit on a zero value: zero
            (0x0180_3456, "", 0),
            (0x0280_0056, "", 0),
            (0x0112_3456, "12", 0x0112_0000),
            (0x0212_3456, "1234", 0x0212_3400),
            (0x0312_3456, "123456", 0x0312_3456),
            (0x0412_3456, "12345600", 0x0412_3456),
            (0x0500_9234, "92340000", 0x0500_9234),
            (
                0x2012_3456,
                &format!("123456{}", "00".repeat(29)),
                0x2012_3456,
            ),
            // Difficulty 1 (genesis), mainnet blocks of 2021 and 2024, regtest.
            (
                0x1d00_ffff,
                &format!("ffff{}", "00".repeat(26)),
                0x1d00_ffff,
            ),
            (
                0x1703_0ecd,
                &format!("30ecd{}", "00".repeat(20)),
                0x1703_0ecd,
            ),
            (
                0x1703_4219,
                &format!("34219{}", "00".repeat(20)),
                0x1703_4219,
            ),
            (
                0x207f_ffff,
                &format!("7fffff{}", "00".repeat(29)),
                0x207f_ffff,
            ),
        ];
        for (nbits, hex, normal) in cases {
            assert_eq!(be(nbits), hex, "{nbits:#010x}");
            let t = target_from_nbits(nbits).unwrap();
            assert_eq!(nbits_from_target(&t), normal, "{nbits:#010x}");
            assert_eq!(target_from_nbits(normal), Ok(t), "{nbits:#010x}");
        }
        assert_eq!(
            target_from_nbits(0x1d00_ffff).unwrap(),
            difficulty_to_target(1.0)
        );
        assert_eq!(
            target_from_nbits(0x207f_ffff).unwrap(),
            U256({
                let mut t = [0xff; 32];
                t[31] = 0x7f;
                t[..29].fill(0);
                t
            })
        );
    }

    #[test]
    fn nbits_sign_and_overflow() {
        for nbits in [0x01fe_dcba, 0x0492_3456, 0x2080_0001] {
            assert_eq!(target_from_nbits(nbits), Err(NbitsError::Negative(nbits)));
        }
        // Bitcoin Core's overflow rule: a non-zero mantissa with exponent > 34, or above
        // 0xff with exponent > 33, or above 0xffff with exponent > 32.
        for nbits in [0xff12_3456, 0x2300_0001, 0x2200_0100, 0x2101_0000] {
            assert_eq!(target_from_nbits(nbits), Err(NbitsError::Overflow(nbits)));
        }
        assert!(target_from_nbits(0x2200_00ff).is_ok());
        assert!(target_from_nbits(0x2100_ffff).is_ok());
        assert!(target_from_nbits(0x207f_ffff).is_ok());
        assert_eq!(target_from_nbits(0xff00_0000), Ok(U256([0; 32])));
        // The largest target needs the extra length byte (its top byte sets the sign bit),
        // and comes back rounded down to three bytes.
        let max = U256([0xff; 32]);
        assert_eq!(nbits_from_target(&max), 0x2100_ffff);
        let back = target_from_nbits(0x2100_ffff).unwrap();
        assert_eq!(&back.0[30..], &[0xff, 0xff]);
        assert_eq!(back.0[..30], [0; 30]);
    }

    /// Every target rounds down to its three top bytes and back.
    #[test]
    fn nbits_round_trip_over_every_length() {
        for len in 1..=32usize {
            for top in [0x01u8, 0x7f, 0x80, 0xff] {
                let mut t = [0u8; 32];
                t[len - 1] = top;
                t[..len - 1].fill(0x5a);
                let nbits = nbits_from_target(&U256(t));
                let back = target_from_nbits(nbits).unwrap();
                assert!(meets_target(&back.0, &U256(t)), "{len} {top:#x}");
                assert_eq!(nbits_from_target(&back), nbits, "{len} {top:#x}");
            }
        }
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
