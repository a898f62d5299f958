//! A block found on a template's job, in the form Template Distribution's `SubmitSolution`
//! carries it to the Template Provider.
//!
//! [`ShareOk::BlockFound`](super::ShareOk::BlockFound) holds the coinbase as the job built
//! it: serialised without witness, the form whose double SHA-256 is the txid the header's
//! merkle root commits to. A node needs the block's witnesses too: when a coinbase has a
//! BIP141 witness commitment (an output whose script starts with
//! [`WITNESS_COMMITMENT_HEADER`], as a Template Provider puts in a template's outputs when
//! the block holds segwit transactions), its input's witness must be the one 32-byte
//! item the commitment was computed with, the witness reserved value. BIP141 leaves that
//! value free; Bitcoin Core's templates assume [`WITNESS_RESERVED_VALUE`] (32 zero bytes),
//! which is what [`coinbase_with_witness`] puts in:
//!
//! ```text
//! version | 00 01 (marker, flag) | inputs | outputs | 01 20 <32-byte reserved value> | locktime
//! ```
//!
//! A coinbase without a commitment is returned as it is: a witness there would make the
//! block invalid (`unexpected-witness`).

use alloc::vec::Vec;
use sv2c_binary::B064K;
use sv2c_binary::messages::SubmitSolution;

use super::custom::read_compact_size;

/// The start of a BIP141 witness commitment's script: `OP_RETURN`, a push of 36 bytes,
/// and the tag `aa21a9ed` (the 32-byte commitment follows).
pub const WITNESS_COMMITMENT_HEADER: [u8; 6] = [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];

/// The witness reserved value a coinbase with a witness commitment gets as its witness:
/// 32 zero bytes, the value Bitcoin Core's templates compute their commitment with.
pub const WITNESS_RESERVED_VALUE: [u8; 32] = [0; 32];

/// A coinbase that cannot be turned into its witness serialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoinbaseError {
    /// The bytes end before the transaction does, or go on after its locktime.
    #[error("not one whole transaction")]
    Malformed,
    /// The transaction does not have exactly one input (or is already serialised with a
    /// witness: its input count reads as 0).
    #[error("a coinbase has exactly one input")]
    NotOneInput,
    /// The coinbase with its witness is larger than `SubmitSolution` carries (64 KiB).
    #[error("coinbase too large for SubmitSolution")]
    TooLarge,
}

/// Takes `n` bytes from the front of `bytes`.
fn take<'a>(bytes: &mut &'a [u8], n: usize) -> Result<&'a [u8], CoinbaseError> {
    let (head, rest) = bytes.split_at_checked(n).ok_or(CoinbaseError::Malformed)?;
    *bytes = rest;
    Ok(head)
}

/// Skips a CompactSize length and that many bytes.
fn skip_script(bytes: &mut &[u8]) -> Result<(), CoinbaseError> {
    let len = read_compact_size(bytes).ok_or(CoinbaseError::Malformed)?;
    let len = usize::try_from(len).map_err(|_| CoinbaseError::Malformed)?;
    take(bytes, len).map(|_| ())
}

/// `coinbase` (serialised without witness, one input) in the form a node takes it: with
/// [`WITNESS_RESERVED_VALUE`] as its input's witness if one of its outputs is a witness
/// commitment, unchanged otherwise (see the [module docs](self)).
///
/// # Errors
/// [`CoinbaseError::Malformed`] or [`CoinbaseError::NotOneInput`]: `coinbase` is not a
/// one-input transaction serialised without witness.
///
/// # Examples
/// ```
/// use sv2c_channels::server::{WITNESS_COMMITMENT_HEADER, coinbase_with_witness};
///
/// // version 2, one input (null outpoint, a 4-byte script, sequence), two outputs (3.125
/// // BTC to OP_TRUE, 0 to a witness commitment), locktime 0.
/// let mut tx = vec![2, 0, 0, 0, 1];
/// tx.extend([0; 32]);
/// tx.extend([0xff; 4]);
/// tx.extend([4, 0x03, 0x40, 0xd1, 0x0c]);
/// tx.extend([0xff; 4]);
/// tx.push(2);
/// tx.extend(312_500_000u64.to_le_bytes());
/// tx.extend([1, 0x51]);
/// tx.extend([0; 8]);
/// tx.push(38);
/// tx.extend(WITNESS_COMMITMENT_HEADER);
/// tx.extend([0x5a; 32]);
/// tx.extend([0; 4]);
///
/// let with_witness = coinbase_with_witness(&tx).unwrap();
/// assert_eq!(&with_witness[4..6], &[0x00, 0x01]); // marker and flag
/// assert_eq!(with_witness.len(), tx.len() + 2 + 34); // and one 32-byte witness item
/// ```
pub fn coinbase_with_witness(coinbase: &[u8]) -> Result<Vec<u8>, CoinbaseError> {
    let mut rest = coinbase;
    take(&mut rest, 4)?; // version
    if read_compact_size(&mut rest) != Some(1) {
        return Err(CoinbaseError::NotOneInput);
    }
    take(&mut rest, 36)?; // the outpoint
    skip_script(&mut rest)?;
    take(&mut rest, 4)?; // sequence
    let outputs = read_compact_size(&mut rest).ok_or(CoinbaseError::Malformed)?;
    let mut committed = false;
    for _ in 0..outputs {
        take(&mut rest, 8)?; // value
        let len = read_compact_size(&mut rest).ok_or(CoinbaseError::Malformed)?;
        let len = usize::try_from(len).map_err(|_| CoinbaseError::Malformed)?;
        let script = take(&mut rest, len)?;
        committed |= script.len() >= 38 && script.starts_with(&WITNESS_COMMITMENT_HEADER);
    }
    if rest.len() != 4 {
        return Err(CoinbaseError::Malformed); // the locktime, and nothing after it
    }
    if !committed {
        return Ok(coinbase.to_vec());
    }
    let body = &coinbase[4..coinbase.len() - 4];
    let mut tx = Vec::with_capacity(coinbase.len() + 2 + 2 + WITNESS_RESERVED_VALUE.len());
    tx.extend_from_slice(&coinbase[..4]);
    tx.extend_from_slice(&[0x00, 0x01]);
    tx.extend_from_slice(body);
    tx.extend_from_slice(&[1, WITNESS_RESERVED_VALUE.len() as u8]);
    tx.extend_from_slice(&WITNESS_RESERVED_VALUE);
    tx.extend_from_slice(rest);
    Ok(tx)
}

/// The `SubmitSolution` of a block found on template `template_id`: the header's version,
/// time and nonce, and the coinbase in the form a node takes it
/// ([`coinbase_with_witness`]). The arguments are those of a
/// [`ShareOk::BlockFound`](super::ShareOk::BlockFound).
///
/// # Errors
/// As [`coinbase_with_witness`], and [`CoinbaseError::TooLarge`].
pub fn submit_solution(
    template_id: u64,
    header: &[u8; 80],
    coinbase: &[u8],
) -> Result<SubmitSolution, CoinbaseError> {
    let word = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let coinbase_tx =
        B064K::try_from(coinbase_with_witness(coinbase)?).map_err(|_| CoinbaseError::TooLarge)?;
    Ok(SubmitSolution {
        template_id,
        version: word(0),
        header_timestamp: word(68),
        header_nonce: word(76),
        coinbase_tx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{CoinbaseOutput, coinbase_parts};
    use sv2c_binary::messages::NewTemplate;
    use sv2c_binary::{B0255, Seq0255};

    /// A template whose outputs are `outputs` (serialised, without their count).
    fn template(count: u32, outputs: &[u8]) -> NewTemplate {
        NewTemplate {
            template_id: 7,
            future_template: true,
            version: 0x2000_0000,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255::try_from(&[0x03, 0x40, 0xd1, 0x0c][..]).unwrap(),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: 312_500_000,
            coinbase_tx_outputs_count: count,
            coinbase_tx_outputs: B064K::try_from(outputs.to_vec()).unwrap(),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::default(),
        }
    }

    fn coinbase(t: &NewTemplate) -> Vec<u8> {
        let pool = [CoinbaseOutput {
            value: 312_500_000,
            script_pubkey: vec![0x00, 0x14, 0x42, 0x42],
        }];
        let (prefix, suffix) = coinbase_parts(t, &pool, 4).unwrap();
        [&prefix[..], &[1, 2, 3, 4], &suffix[..]].concat()
    }

    fn commitment() -> Vec<u8> {
        let mut out = 0u64.to_le_bytes().to_vec();
        out.push(38);
        out.extend_from_slice(&WITNESS_COMMITMENT_HEADER);
        out.extend_from_slice(&[0x5a; 32]);
        out
    }

    /// With a commitment: marker and flag after the version, one 32-byte witness item
    /// before the locktime, and everything else as it was (so the txid is unchanged).
    #[test]
    fn a_committed_coinbase_gets_the_reserved_value_as_its_witness() {
        let tx = coinbase(&template(1, &commitment()));
        let w = coinbase_with_witness(&tx).unwrap();
        assert_eq!(&w[..4], &tx[..4]);
        assert_eq!(&w[4..6], &[0, 1]);
        assert_eq!(&w[6..w.len() - 38], &tx[4..tx.len() - 4]);
        assert_eq!(
            &w[w.len() - 38..w.len() - 4],
            &[&[1u8, 32][..], &[0; 32]].concat()[..]
        );
        assert_eq!(&w[w.len() - 4..], &tx[tx.len() - 4..]);
    }

    #[test]
    fn a_coinbase_without_commitment_is_unchanged() {
        let tx = coinbase(&template(0, &[]));
        assert_eq!(coinbase_with_witness(&tx).unwrap(), tx);
        // A script that only starts like a commitment (too short) is not one.
        let mut short = 0u64.to_le_bytes().to_vec();
        short.push(6);
        short.extend_from_slice(&WITNESS_COMMITMENT_HEADER);
        let tx = coinbase(&template(1, &short));
        assert_eq!(coinbase_with_witness(&tx).unwrap(), tx);
    }

    /// Every truncation and any trailing byte is refused, never a panic; so is a
    /// transaction already serialised with a witness.
    #[test]
    fn malformed_coinbases_are_refused() {
        let tx = coinbase(&template(1, &commitment()));
        for cut in 0..tx.len() {
            assert!(coinbase_with_witness(&tx[..cut]).is_err(), "cut at {cut}");
        }
        let mut long = tx.clone();
        long.push(0);
        assert_eq!(coinbase_with_witness(&long), Err(CoinbaseError::Malformed));
        let w = coinbase_with_witness(&tx).unwrap();
        assert_eq!(coinbase_with_witness(&w), Err(CoinbaseError::NotOneInput));
        // A script length far beyond the bytes.
        let mut huge = tx[..41].to_vec();
        huge.extend_from_slice(&[0xff; 9]);
        assert_eq!(coinbase_with_witness(&huge), Err(CoinbaseError::Malformed));
    }

    #[test]
    fn the_solution_carries_the_headers_fields() {
        let tx = coinbase(&template(1, &commitment()));
        let mut header = [0u8; 80];
        header[..4].copy_from_slice(&0x2000_e000u32.to_le_bytes());
        header[68..72].copy_from_slice(&1_700_000_000u32.to_le_bytes());
        header[76..].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        let s = submit_solution(7, &header, &tx).unwrap();
        assert_eq!(
            (s.template_id, s.version, s.header_timestamp, s.header_nonce),
            (7, 0x2000_e000, 1_700_000_000, 0xdead_beef)
        );
        assert_eq!(
            s.coinbase_tx.as_bytes(),
            &coinbase_with_witness(&tx).unwrap()[..]
        );
    }
}
