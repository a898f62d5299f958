//! Proof of work as a pool checks it: the coinbase transaction rebuilt from a job and a
//! share's extranonce, the merkle root, the 80-byte block header and its double SHA-256
//! compared with a target.
//!
//! Byte orders follow Bitcoin's serialisation, which is also Stratum V2's: `prev_hash`,
//! merkle roots and merkle path entries are the 32 bytes as they appear in the header
//! ("internal" order), integers are little-endian, and a target ([`U256`]) is a
//! little-endian 256-bit number, compared with the header hash read the same way.

use sha2::{Digest, Sha256};
use sv2c_binary::U256;

/// Double SHA-256.
pub fn sha256d(bytes: &[u8]) -> [u8; 32] {
    let first = Sha256::digest(bytes);
    Sha256::digest(first).into()
}

/// The merkle root of a block whose first transaction (the coinbase) has id `coinbase_txid`
/// and whose other transactions are summarised by `path` (the hashes met on the way up).
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
    // Compare from the most significant byte, which is the last one in little-endian.
    for (h, t) in hash.iter().rev().zip(target.0.iter().rev()) {
        if h != t {
            return h < t;
        }
    }
    true
}

/// The target below which a hash has `bits` leading zero bits (as a big-endian number):
/// on average one hash in `2^bits` meets it. `bits` is capped at 255.
pub fn target_with_zero_bits(bits: u32) -> U256 {
    let bits = bits.min(255) as usize;
    let mut be = [0xffu8; 32];
    for (i, byte) in be.iter_mut().enumerate() {
        let from = i * 8;
        if from + 8 <= bits {
            *byte = 0;
        } else if from < bits {
            *byte = 0xff >> (bits - from);
        }
    }
    be.reverse();
    U256(be)
}

/// A coinbase transaction split around its extranonce, the way Stratum V2 jobs carry it
/// (`coinbase_tx_prefix` + extranonce + `coinbase_tx_suffix`), in the legacy serialisation
/// (no witness) whose double SHA-256 is the transaction id.
///
/// The extranonce sits at the end of the input script, after the BIP 34 block height.
pub fn coinbase_parts(
    height: u32,
    extranonce_len: usize,
    value_sats: u64,
    output_script: &[u8],
) -> (Vec<u8>, Vec<u8>) {
    let height_push = [
        0x03,
        height as u8,
        (height >> 8) as u8,
        (height >> 16) as u8,
    ];
    let mut prefix = Vec::with_capacity(64);
    prefix.extend_from_slice(&2u32.to_le_bytes()); // version
    prefix.push(1); // one input
    prefix.extend_from_slice(&[0u8; 32]); // null prevout hash
    prefix.extend_from_slice(&u32::MAX.to_le_bytes()); // prevout index
    prefix.push((height_push.len() + extranonce_len) as u8); // script length (< 0xfd)
    prefix.extend_from_slice(&height_push);
    let mut suffix = Vec::with_capacity(64);
    suffix.extend_from_slice(&u32::MAX.to_le_bytes()); // sequence
    suffix.push(1); // one output
    suffix.extend_from_slice(&value_sats.to_le_bytes());
    suffix.push(output_script.len() as u8);
    suffix.extend_from_slice(output_script);
    suffix.extend_from_slice(&0u32.to_le_bytes()); // lock time
    (prefix, suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex32(s: &str) -> [u8; 32] {
        hex::decode(s).unwrap().try_into().unwrap()
    }

    /// The genesis block, from its published fields: its header must hash to the
    /// published block hash (shown reversed, as block explorers print it).
    #[test]
    fn genesis_block_header_hashes_to_the_published_hash() {
        let mut merkle =
            unhex32("4a5e1e4baab89f3a32518a88c31bc87f618f76673e2cc77ab2127b7afdeda33b");
        merkle.reverse();
        let h = header(
            1,
            &[0; 32],
            &merkle,
            1_231_006_505,
            0x1d00_ffff,
            2_083_236_893,
        );
        let mut hash = sha256d(&h);
        hash.reverse();
        assert_eq!(
            hex::encode(hash),
            "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"
        );
        // Its target (nbits 0x1d00ffff) is met; a target one bit harder than the hash is not.
        let mut be = [0u8; 32];
        be[4] = 0xff;
        be[5] = 0xff;
        be.reverse();
        let hash_le = sha256d(&h);
        assert!(meets_target(&hash_le, &U256(be)));
        assert!(!meets_target(&hash_le, &target_with_zero_bits(48)));
        assert!(meets_target(&hash_le, &target_with_zero_bits(40)));
    }

    #[test]
    fn merkle_root_of_a_two_transaction_block() {
        // Block 170 (the first bitcoin transfer): coinbase id and the other id, both as
        // explorers print them, and its published merkle root.
        let rev = |s| {
            let mut b = unhex32(s);
            b.reverse();
            b
        };
        let coinbase = rev("b1fea52486ce0c62bb442b530a3f0132b826c74e473d1f2c220bfa78111c5082");
        let other = rev("f4184fc596403b9d638783cf57adfe4c75c605f6356fbc91338530e9831e9e16");
        let root = merkle_root(coinbase, [&other]);
        assert_eq!(
            root,
            rev("7dac2c5666815c17a3b36427de37bb9d2e2c5ccec3f8633eb91a4205cb4c10ff")
        );
        assert_eq!(merkle_root(coinbase, []), coinbase);
    }

    #[test]
    fn zero_bit_targets() {
        assert_eq!(target_with_zero_bits(0).0, [0xff; 32]);
        let t = target_with_zero_bits(12);
        assert_eq!(&t.0[29..], &[0xff, 0x0f, 0x00]);
        assert_eq!(t.0[..29], [0xff; 29]);
        assert!(meets_target(&t.0, &t));
    }

    #[test]
    fn coinbase_layout() {
        let (prefix, suffix) = coinbase_parts(840_000, 16, 312_500_000, &[0x51]);
        assert_eq!(prefix.len(), 4 + 1 + 36 + 1 + 4);
        assert_eq!(prefix[41], 20, "height push and extranonce in the script");
        assert_eq!(suffix.len(), 4 + 1 + 8 + 1 + 1 + 4);
    }
}
