//! Proof of work as a pool checks it: the coinbase transaction rebuilt from a job and a
//! share's extranonce, the merkle root, the 80-byte block header and its double SHA-256
//! compared with a target.
//!
//! Byte orders follow Bitcoin's serialisation, which is also Stratum V2's: `prev_hash`,
//! merkle roots and merkle path entries are the 32 bytes as they appear in the header
//! ("internal" order), integers are little-endian, and a target ([`U256`](sv2c_binary::U256)) is a
//! little-endian 256-bit number, compared with the header hash read the same way.
//!
//! The hashing, merkle, header and target functions are those of
//! [`sv2c_channels::pow`], re-exported.

pub use sv2c_channels::pow::{header, meets_target, merkle_root, sha256d, target_with_zero_bits};

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_binary::U256;

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
}
