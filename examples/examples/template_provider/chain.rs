//! The made-up chain a Template Provider serves: a tip that moves, a template for the next
//! block with a few real (deserialisable) transactions, and the checks a node makes before
//! it accepts a block built on it. No I/O: the server (`server.rs`) owns the clock and the
//! connections.

use std::collections::VecDeque;
use std::fmt;

use bitcoin::absolute::LockTime;
use bitcoin::block::{Header, Version as BlockVersion};
use bitcoin::consensus::{deserialize, serialize};
use bitcoin::hashes::{Hash, sha256d};
use bitcoin::script::{Builder, PushBytesBuf, ScriptBuf};
use bitcoin::transaction::Version;
use bitcoin::{
    Amount, Block, BlockHash, CompactTarget, OutPoint, Sequence, Target, Transaction, TxIn,
    TxMerkleNode, TxOut, Txid, Weight, Witness, WitnessMerkleNode,
};
use sv2c::prelude::*;

/// The block version of every template: BIP9 top bits, no deployment signalled.
pub(crate) const BLOCK_VERSION: u32 = 0x2000_0000;
/// The height of the first template's block (its subsidy is 3.125 BTC).
pub(crate) const FIRST_HEIGHT: u32 = 840_000;
/// The witness reserved value the templates' commitments assume (BIP141: the coinbase's
/// witness, one 32-byte item). Sent as `excess_data` of `RequestTransactionData.Success`.
pub(crate) const WITNESS_RESERVED_VALUE: [u8; 32] = [0; 32];
/// How many tips back a template's transactions are still served (`stale-template-id`);
/// older ones are forgotten (`template-id-not-found`).
const KEPT_TIPS: usize = 8;
/// BIP141's witness commitment header: OP_RETURN, push 36, 0xaa21a9ed.
const COMMITMENT_HEADER: [u8; 6] = [0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed];

/// A template for the block after the tip.
#[derive(Debug, Clone)]
pub(crate) struct Template {
    pub(crate) id: u64,
    pub(crate) height: u32,
    pub(crate) prev_hash: BlockHash,
    pub(crate) ntime: u32,
    pub(crate) nbits: u32,
    /// The block's transactions but the coinbase, in block order.
    pub(crate) transactions: Vec<Transaction>,
    /// Subsidy and fees: what the coinbase may pay out.
    pub(crate) coinbase_value: u64,
    /// The coinbase's output a node puts in: the witness commitment.
    pub(crate) commitment: TxOut,
    /// The coinbase's merkle path: the sibling hashes from the leaf up (txid byte order).
    pub(crate) merkle_path: Vec<[u8; 32]>,
}

impl Template {
    /// Builds the template for block `height` on `prev_hash`, with `count` synthetic
    /// transactions.
    pub(crate) fn new(
        id: u64,
        height: u32,
        prev_hash: BlockHash,
        ntime: u32,
        nbits: u32,
        count: usize,
    ) -> Template {
        let (transactions, fees): (Vec<_>, Vec<_>) =
            (0..count).map(|i| synthetic_transaction(height, i)).unzip();
        // BIP141: the coinbase's wtxid counts as zero in the witness tree.
        let wtxids = std::iter::once(sha256d::Hash::all_zeros())
            .chain(transactions.iter().map(|t| t.compute_wtxid().to_raw_hash()));
        let witness_root = bitcoin::merkle_tree::calculate_root(wtxids)
            .map(WitnessMerkleNode::from_raw_hash)
            .unwrap_or_else(WitnessMerkleNode::all_zeros);
        let commitment = Block::compute_witness_commitment(&witness_root, &WITNESS_RESERVED_VALUE);
        let mut script = COMMITMENT_HEADER.to_vec();
        script.extend_from_slice(commitment.as_byte_array());
        let txids: Vec<[u8; 32]> = transactions
            .iter()
            .map(|t| t.compute_txid().to_byte_array())
            .collect();
        Template {
            id,
            height,
            prev_hash,
            ntime,
            nbits,
            transactions,
            coinbase_value: subsidy(height) + fees.iter().sum::<u64>(),
            commitment: TxOut {
                value: Amount::ZERO,
                script_pubkey: ScriptBuf::from_bytes(script),
            },
            merkle_path: coinbase_merkle_path(&txids),
        }
    }

    /// BIP34: the height, as the first push of the coinbase's script.
    pub(crate) fn coinbase_prefix(&self) -> Vec<u8> {
        Builder::new()
            .push_int(i64::from(self.height))
            .into_script()
            .into_bytes()
    }

    /// `NewTemplate` for this template, a future one (activated by [`Self::prev_hash_msg`]).
    pub(crate) fn new_template_msg(&self) -> NewTemplate {
        let path: Vec<U256> = self.merkle_path.iter().map(|h| U256(*h)).collect();
        NewTemplate {
            template_id: self.id,
            future_template: true,
            version: BLOCK_VERSION,
            coinbase_tx_version: 2,
            coinbase_prefix: B0255::try_from(self.coinbase_prefix().as_slice())
                .expect("a height push is at most 5 bytes"),
            coinbase_tx_input_sequence: u32::MAX,
            coinbase_tx_value_remaining: self.coinbase_value,
            coinbase_tx_outputs_count: 1,
            // The outputs without their count (the count is the field above).
            coinbase_tx_outputs: B064K::try_from(serialize(&self.commitment).as_slice())
                .expect("one output of 47 bytes"),
            coinbase_tx_locktime: 0,
            merkle_path: Seq0255::from_slice(&path).expect("at most 32 levels"),
        }
    }

    /// `SetNewPrevHash` that makes this template the one to mine on.
    pub(crate) fn prev_hash_msg(&self) -> SetNewPrevHashTdp {
        SetNewPrevHashTdp {
            template_id: self.id,
            prev_hash: U256(self.prev_hash.to_byte_array()),
            header_timestamp: self.ntime,
            n_bits: self.nbits,
            target: U256(self.target().to_le_bytes()),
        }
    }

    /// `RequestTransactionData.Success`: the transactions, and the witness reserved value
    /// the commitment was computed with.
    pub(crate) fn transaction_data(&self) -> RequestTransactionDataSuccess {
        let list: Vec<B016M> = self
            .transactions
            .iter()
            .map(|t| B016M::try_from(serialize(t).as_slice()).expect("a small transaction"))
            .collect();
        RequestTransactionDataSuccess {
            template_id: self.id,
            excess_data: B064K::try_from(&WITNESS_RESERVED_VALUE[..]).expect("32 bytes"),
            transaction_list: Seq064K::from_slice(&list).expect("at most 65535 transactions"),
        }
    }

    /// The network target of `nbits`.
    pub(crate) fn target(&self) -> Target {
        Target::from_compact(CompactTarget::from_consensus(self.nbits))
    }

    /// Checks a block found on this template as a node would before accepting it, and
    /// returns it. The header's merkle root is the one the miner hashed: the coinbase's
    /// txid folded with the template's merkle path.
    pub(crate) fn check(&self, solution: &SubmitSolution) -> Result<Block, Refusal> {
        let coinbase: Transaction = deserialize(solution.coinbase_tx.as_bytes())
            .map_err(|e| Refusal::new("bad-cb-decode", e.to_string()))?;
        if !coinbase.is_coinbase() {
            return Err(Refusal::new("bad-cb-missing", "not a coinbase"));
        }
        let root = fold_merkle_path(coinbase.compute_txid().to_byte_array(), &self.merkle_path);
        let header = Header {
            version: BlockVersion::from_consensus(solution.version as i32),
            prev_blockhash: self.prev_hash,
            merkle_root: TxMerkleNode::from_byte_array(root),
            time: solution.header_timestamp,
            bits: CompactTarget::from_consensus(self.nbits),
            nonce: solution.header_nonce,
        };
        let mut txdata = Vec::with_capacity(1 + self.transactions.len());
        txdata.push(coinbase);
        txdata.extend(self.transactions.iter().cloned());
        // The block as a node receives it: its serialisation must read back.
        let block: Block = deserialize(&serialize(&Block { header, txdata }))
            .map_err(|e| Refusal::new("bad-blk-decode", e.to_string()))?;
        if !block.check_merkle_root() {
            return Err(Refusal::new(
                "bad-txnmrklroot",
                "the merkle path does not lead to the block's merkle root",
            ));
        }
        block
            .header
            .validate_pow(self.target())
            .map_err(|e| Refusal::new("high-hash", e.to_string()))?;
        if block.weight() > Weight::MAX_BLOCK {
            return Err(Refusal::new(
                "bad-blk-weight",
                format!("weight {} above {}", block.weight(), Weight::MAX_BLOCK),
            ));
        }
        self.check_coinbase(&block)?;
        Ok(block)
    }

    /// The script's size, BIP34 height, BIP141 witness commitment and the coinbase's
    /// value.
    fn check_coinbase(&self, block: &Block) -> Result<(), Refusal> {
        let coinbase = &block.txdata[0];
        let script = coinbase.input[0].script_sig.as_bytes();
        if !(2..=100).contains(&script.len()) {
            return Err(Refusal::new(
                "bad-cb-length",
                format!("a coinbase script of {} bytes (2 to 100)", script.len()),
            ));
        }
        if !script.starts_with(&self.coinbase_prefix()) {
            return Err(Refusal::new(
                "bad-cb-height",
                format!("the coinbase does not start with height {}", self.height),
            ));
        }
        // BIP141: the last output whose script starts with the commitment header.
        let committed = coinbase.output.iter().rev().find(|o| {
            let s = o.script_pubkey.as_bytes();
            s.len() >= 38 && s.starts_with(&COMMITMENT_HEADER)
        });
        let has_witness = block
            .txdata
            .iter()
            .any(|t| t.input.iter().any(|i| !i.witness.is_empty()));
        match committed {
            Some(out) => {
                let witness = &coinbase.input[0].witness;
                if witness.len() != 1 || witness.nth(0).map(<[u8]>::len) != Some(32) {
                    return Err(Refusal::new(
                        "bad-witness-nonce-size",
                        "the coinbase's witness is not one 32-byte item",
                    ));
                }
                let root = block
                    .witness_root()
                    .ok_or_else(|| Refusal::new("bad-witness-merkle-match", "no witness root"))?;
                let reserved = witness.nth(0).unwrap_or_default();
                let expected = Block::compute_witness_commitment(&root, reserved);
                if out.script_pubkey.as_bytes()[6..38] != expected.to_byte_array() {
                    return Err(Refusal::new(
                        "bad-witness-merkle-match",
                        "the witness commitment does not match the block's witnesses",
                    ));
                }
            }
            None if has_witness => {
                return Err(Refusal::new(
                    "unexpected-witness",
                    "witness data but no witness commitment in the coinbase",
                ));
            }
            None => {}
        }
        let paid: u64 = coinbase.output.iter().map(|o| o.value.to_sat()).sum();
        if paid > self.coinbase_value {
            return Err(Refusal::new(
                "bad-cb-amount",
                format!("pays {paid} sat, at most {} allowed", self.coinbase_value),
            ));
        }
        Ok(())
    }
}

/// Why a block was refused: the reason string Bitcoin Core gives, and a detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub(crate) reason: &'static str,
    pub(crate) detail: String,
}

impl Refusal {
    pub(crate) fn new(reason: &'static str, detail: impl Into<String>) -> Refusal {
        Refusal {
            reason,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason, self.detail)
    }
}

/// The tip and the templates on it and on the few tips before.
#[derive(Debug)]
pub(crate) struct Chain {
    nbits: u32,
    transactions: usize,
    next_id: u64,
    /// Newest last; the last one is the current template.
    templates: VecDeque<Template>,
}

/// What a template id stands for.
#[derive(Debug)]
pub(crate) enum Lookup<'a> {
    Current(&'a Template),
    Stale,
    NotFound,
}

impl Chain {
    /// A chain whose first template is for block [`FIRST_HEIGHT`] on a made-up tip.
    pub(crate) fn new(nbits: u32, transactions: usize, now: u32) -> Chain {
        let mut chain = Chain {
            nbits,
            transactions,
            next_id: 1,
            templates: VecDeque::new(),
        };
        chain.push(FIRST_HEIGHT, made_up_hash(FIRST_HEIGHT - 1), now);
        chain
    }

    fn push(&mut self, height: u32, prev_hash: BlockHash, now: u32) {
        let template = Template::new(
            self.next_id,
            height,
            prev_hash,
            now,
            self.nbits,
            self.transactions,
        );
        self.next_id += 1;
        self.templates.push_back(template);
        if self.templates.len() > KEPT_TIPS {
            self.templates.pop_front();
        }
    }

    /// The template to mine on now.
    pub(crate) fn current(&self) -> &Template {
        self.templates
            .back()
            .expect("a chain always has a template")
    }

    pub(crate) fn lookup(&self, id: u64) -> Lookup<'_> {
        match self.templates.iter().find(|t| t.id == id) {
            Some(t) if t.id == self.current().id => Lookup::Current(t),
            Some(_) => Lookup::Stale,
            None => Lookup::NotFound,
        }
    }

    /// Another node found the next block (a made-up hash): a new tip and template.
    pub(crate) fn advance(&mut self, now: u32) {
        let height = self.current().height;
        self.push(height + 1, made_up_hash(height), now);
    }

    /// Checks a solution; an accepted block becomes the tip. Returns the block's hash
    /// and height.
    pub(crate) fn submit(
        &mut self,
        solution: &SubmitSolution,
        now: u32,
    ) -> Result<(BlockHash, u32), Refusal> {
        let template = match self.lookup(solution.template_id) {
            Lookup::Current(t) => t,
            Lookup::Stale => {
                return Err(Refusal::new(
                    "stale-prevblk",
                    format!("template {} is not on the tip", solution.template_id),
                ));
            }
            Lookup::NotFound => {
                return Err(Refusal::new(
                    "unknown-template",
                    format!("no template {}", solution.template_id),
                ));
            }
        };
        let block = template.check(solution)?;
        let (hash, height) = (block.block_hash(), template.height);
        self.push(height + 1, hash, now);
        Ok((hash, height))
    }
}

/// The block subsidy at `height` (mainnet's halving schedule), in satoshis.
pub(crate) fn subsidy(height: u32) -> u64 {
    match height / 210_000 {
        halvings @ 0..64 => (50 * 100_000_000) >> halvings,
        _ => 0,
    }
}

/// A hash standing for a block this program did not see (another miner's).
fn made_up_hash(height: u32) -> BlockHash {
    let mut data = b"sv2c template provider block ".to_vec();
    data.extend_from_slice(&height.to_le_bytes());
    BlockHash::from_raw_hash(sha256d::Hash::hash(&data))
}

/// Transaction `i` of the block at `height`, and its fee. It spends a made-up outpoint
/// (no node could verify it, but it deserialises and has the shape of a real payment)
/// and pays a P2WPKH output. Even ones spend a P2WPKH output (signature and key in the
/// witness), odd ones a P2PKH output (the same in the script), so that txids and wtxids
/// differ for some and not others.
pub(crate) fn synthetic_transaction(height: u32, i: usize) -> (Transaction, u64) {
    let seed = |tag: &str| {
        let mut data = tag.as_bytes().to_vec();
        data.extend_from_slice(&height.to_le_bytes());
        data.extend_from_slice(&(i as u64).to_le_bytes());
        sha256d::Hash::hash(&data).to_byte_array()
    };
    // A DER-shaped signature (70 bytes and the sighash byte) and a compressed key.
    let mut signature = vec![0x30, 0x44, 0x02, 0x20];
    signature.extend_from_slice(&seed("r"));
    signature.extend_from_slice(&[0x02, 0x20]);
    signature.extend_from_slice(&seed("s"));
    signature.push(0x01);
    let mut key = vec![0x02];
    key.extend_from_slice(&seed("key"));
    let fee = 1_000 * (i as u64 + 1);
    let (script_sig, witness) = if i.is_multiple_of(2) {
        (ScriptBuf::new(), Witness::from_slice(&[&signature, &key]))
    } else {
        let script = Builder::new()
            .push_slice(PushBytesBuf::try_from(signature).expect("71 bytes"))
            .push_slice(PushBytesBuf::try_from(key).expect("33 bytes"))
            .into_script();
        (script, Witness::new())
    };
    let mut program = [0u8; 20];
    program.copy_from_slice(&seed("to")[..20]);
    let payee = Builder::new().push_int(0).push_slice(program).into_script();
    let tx = Transaction {
        version: Version::TWO,
        lock_time: LockTime::ZERO,
        input: vec![TxIn {
            previous_output: OutPoint {
                txid: Txid::from_byte_array(seed("outpoint")),
                vout: 0,
            },
            script_sig,
            sequence: Sequence::ENABLE_RBF_NO_LOCKTIME,
            witness,
        }],
        output: vec![TxOut {
            value: Amount::from_sat(100_000 + 7_919 * i as u64),
            script_pubkey: payee,
        }],
    };
    (tx, fee)
}

/// The merkle path of the coinbase (leaf 0) in a tree whose other leaves are `txids`:
/// the right-hand sibling at each level, from the leaves up.
pub(crate) fn coinbase_merkle_path(txids: &[[u8; 32]]) -> Vec<[u8; 32]> {
    // A level's nodes but its leftmost, which depends on the coinbase: the full level is
    // [coinbase side, level...]. The coinbase side's sibling is level[0]; the rest pair up
    // into the next level (an odd one out with itself), as the merkle tree's nodes do.
    let mut level: Vec<[u8; 32]> = txids.to_vec();
    let mut path = Vec::new();
    while let Some(&sibling) = level.first() {
        path.push(sibling);
        level = level[1..]
            .chunks(2)
            .map(|pair| hash_pair(&pair[0], pair.get(1).unwrap_or(&pair[0])))
            .collect();
    }
    path
}

/// The merkle root of a tree from a leaf (leaf 0) and its merkle path.
pub(crate) fn fold_merkle_path(leaf: [u8; 32], path: &[[u8; 32]]) -> [u8; 32] {
    path.iter()
        .fold(leaf, |node, sibling| hash_pair(&node, sibling))
}

/// sha256d of two concatenated nodes.
fn hash_pair(left: &[u8; 32], right: &[u8; 32]) -> [u8; 32] {
    let mut data = [0u8; 64];
    data[..32].copy_from_slice(left);
    data[32..].copy_from_slice(right);
    sha256d::Hash::hash(&data).to_byte_array()
}
