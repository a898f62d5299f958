//! The `template_provider` example driven in-process over Template Distribution, as a
//! pool drives it: templates whose transactions and merkle path agree, blocks built on
//! them accepted, broken ones refused with a node's reason. (SRI's pool and JD client
//! against the program: `roles/tests/pool_sv2_interop.rs`.)

#[path = "../examples/template_provider/args.rs"]
#[allow(dead_code)]
mod args;
#[path = "../examples/template_provider/chain.rs"]
#[allow(dead_code)]
mod chain;
#[path = "../examples/template_provider/server.rs"]
#[allow(dead_code)]
mod server;

use std::time::Duration;

use bitcoin::consensus::{Decodable, deserialize, serialize};
use bitcoin::hashes::Hash;
use bitcoin::script::{Builder, ScriptBuf};
use bitcoin::{
    Amount, Block, BlockHash, CompactTarget, OutPoint, Sequence, Target, Transaction, TxIn,
    TxMerkleNode, TxOut, Witness,
};
use sv2c::noise::{self, AuthorityKeypair, Initiator};
use sv2c::prelude::*;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;
use tokio::time::timeout;

use crate::args::{Args, nbits_for_leading_zeros, parse};
use crate::chain::{FIRST_HEIGHT, coinbase_merkle_path, fold_merkle_path};
use crate::server::{Config, Outcome, TemplateProvider};

/// 16 leading zero bits: a header meets it one time in 65 536, so a header the TP builds
/// differently from the miner's misses it (checked, not left to chance).
const NBITS_16: u32 = 0x1f00_ffff;
const TRANSACTIONS: usize = 5;

type Conn = Box<dyn Client>;
trait Client:
    Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin + Send
{
}
impl<T> Client for T where
    T: Stream<Item = Result<Message, CodecError>>
        + Sink<Message, Error = CodecError>
        + Unpin
        + Send
{
}

async fn start(nbits: u32, block_interval: Option<Duration>, noise: bool) -> TemplateProvider {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = Config {
        nbits,
        transactions: TRANSACTIONS,
        block_interval,
        authority: noise.then(|| AuthorityKeypair::generate().unwrap()),
    };
    TemplateProvider::start(listener, config).unwrap()
}

/// Connects as a pool does: handshake, `SetupConnection`, `CoinbaseOutputConstraints`.
async fn connect(tp: &TemplateProvider) -> Conn {
    let tcp = TcpStream::connect(tp.local_addr()).await.unwrap();
    let mut conn: Conn = match tp.authority_public_key() {
        Some(key) => Box::new(
            noise::connect(
                tcp,
                Initiator::new(key).unwrap(),
                Sv2Codec::<Message>::new(),
            )
            .await
            .unwrap(),
        ),
        None => Box::new(Framed::new(tcp, Sv2Codec::<Message>::new())),
    };
    let text = |s: &str| Str0255::try_from(s).unwrap();
    conn.send(Message::from(SetupConnection {
        protocol: Protocol::TemplateDistribution,
        min_version: 2,
        max_version: 2,
        flags: 0,
        endpoint_host: text("127.0.0.1"),
        endpoint_port: tp.local_addr().port(),
        vendor: text("sv2c test"),
        hardware_version: text(""),
        firmware: text(""),
        device_id: text(""),
    }))
    .await
    .unwrap();
    assert!(matches!(
        next(&mut conn).await,
        Message::SetupConnectionSuccess(_)
    ));
    conn.send(Message::from(CoinbaseOutputConstraints {
        coinbase_output_max_additional_size: 100,
        coinbase_output_max_additional_sigops: 4,
    }))
    .await
    .unwrap();
    conn
}

async fn next(conn: &mut Conn) -> Message {
    timeout(Duration::from_secs(10), conn.next())
        .await
        .expect("a message within 10 s")
        .expect("the connection stays open")
        .expect("a message our codec decodes")
}

/// The next template and the previous hash that activates it.
async fn work(conn: &mut Conn) -> (NewTemplate, SetNewPrevHashTdp) {
    let Message::NewTemplate(t) = next(conn).await else {
        panic!("expected NewTemplate")
    };
    let Message::SetNewPrevHashTdp(p) = next(conn).await else {
        panic!("expected SetNewPrevHash")
    };
    assert!(t.future_template);
    assert_eq!(p.template_id, t.template_id);
    (*t, p)
}

/// The next message that is not a new template (the tip may move meanwhile).
async fn reply(conn: &mut Conn) -> Message {
    loop {
        match next(conn).await {
            Message::NewTemplate(_) | Message::SetNewPrevHashTdp(_) => {}
            other => return other,
        }
    }
}

async fn transactions(conn: &mut Conn, template_id: u64) -> RequestTransactionDataSuccess {
    conn.send(Message::from(RequestTransactionData { template_id }))
        .await
        .unwrap();
    match reply(conn).await {
        Message::RequestTransactionDataSuccess(s) => s,
        other => panic!("expected RequestTransactionData.Success, got {other:?}"),
    }
}

async fn transaction_data_error(conn: &mut Conn, template_id: u64) -> String {
    conn.send(Message::from(RequestTransactionData { template_id }))
        .await
        .unwrap();
    match reply(conn).await {
        Message::RequestTransactionDataError(e) => {
            assert_eq!(e.template_id, template_id);
            String::from_utf8_lossy(e.error_code.as_bytes()).into_owned()
        }
        other => panic!("expected RequestTransactionData.Error, got {other:?}"),
    }
}

/// How the test pool builds its coinbase (a correct one by default).
#[derive(Debug, Clone)]
struct CoinbaseRecipe {
    /// Replaces the template's coinbase prefix (the BIP34 height).
    prefix: Option<Vec<u8>>,
    /// Leaves the template's outputs (the witness commitment) out.
    drop_template_outputs: bool,
    /// The coinbase witness (the reserved value the commitment assumes).
    witness_reserved_value: Vec<u8>,
    /// Paid to the pool on top of the template's value.
    extra_value: u64,
    /// Hashes a header whose merkle root ignores the template's merkle path.
    ignore_merkle_path: bool,
}

impl CoinbaseRecipe {
    fn correct(success: &RequestTransactionDataSuccess) -> CoinbaseRecipe {
        CoinbaseRecipe {
            prefix: None,
            drop_template_outputs: false,
            witness_reserved_value: success.excess_data.as_bytes().to_vec(),
            extra_value: 0,
            ignore_merkle_path: false,
        }
    }
}

/// The pool's coinbase: the template's prefix and an extranonce as its script, the pool's
/// payout then the template's outputs, BIP141 witness.
fn build_coinbase(t: &NewTemplate, recipe: &CoinbaseRecipe) -> Transaction {
    let mut script = recipe
        .prefix
        .clone()
        .unwrap_or_else(|| t.coinbase_prefix.as_bytes().to_vec());
    script.extend_from_slice(&[0x08, 1, 2, 3, 4, 5, 6, 7, 8]); // push of an 8-byte extranonce
    let mut outputs = vec![TxOut {
        value: Amount::from_sat(t.coinbase_tx_value_remaining + recipe.extra_value),
        script_pubkey: Builder::new()
            .push_int(0)
            .push_slice([0x42; 20])
            .into_script(),
    }];
    if !recipe.drop_template_outputs {
        let mut bytes = t.coinbase_tx_outputs.as_bytes();
        for _ in 0..t.coinbase_tx_outputs_count {
            outputs.push(TxOut::consensus_decode(&mut bytes).unwrap());
        }
        assert!(
            bytes.is_empty(),
            "coinbase_tx_outputs holds exactly its outputs"
        );
    }
    Transaction {
        version: bitcoin::transaction::Version::non_standard(t.coinbase_tx_version as i32),
        lock_time: bitcoin::absolute::LockTime::from_consensus(t.coinbase_tx_locktime),
        input: vec![TxIn {
            previous_output: OutPoint::null(),
            script_sig: ScriptBuf::from_bytes(script),
            sequence: Sequence(t.coinbase_tx_input_sequence),
            witness: Witness::from_slice(&[&recipe.witness_reserved_value]),
        }],
        output: outputs,
    }
}

fn header(
    t: &NewTemplate,
    p: &SetNewPrevHashTdp,
    coinbase: &Transaction,
    ignore_path: bool,
) -> bitcoin::block::Header {
    let path: Vec<[u8; 32]> = t.merkle_path.iter().map(|h| h.0).collect();
    let txid = coinbase.compute_txid().to_byte_array();
    let root = if ignore_path {
        txid
    } else {
        fold_merkle_path(txid, &path)
    };
    bitcoin::block::Header {
        version: bitcoin::block::Version::from_consensus(t.version as i32),
        prev_blockhash: BlockHash::from_byte_array(p.prev_hash.0),
        merkle_root: TxMerkleNode::from_byte_array(root),
        time: p.header_timestamp,
        bits: CompactTarget::from_consensus(p.n_bits),
        nonce: 0,
    }
}

/// Finds a nonce for a block on the template, built by `recipe`, and submits it. Returns
/// the header the miner hashed.
async fn mine_and_submit(
    conn: &mut Conn,
    t: &NewTemplate,
    p: &SetNewPrevHashTdp,
    recipe: &CoinbaseRecipe,
) -> bitcoin::block::Header {
    let coinbase = build_coinbase(t, recipe);
    let target = Target::from_le_bytes(p.target.0);
    let mut ours = header(t, p, &coinbase, recipe.ignore_merkle_path);
    // What the Template Provider rebuilds: the root from the template's path.
    let mut theirs = header(t, p, &coinbase, false);
    loop {
        theirs.nonce = ours.nonce;
        let found = target.is_met_by(ours.block_hash());
        if found && (!recipe.ignore_merkle_path || !target.is_met_by(theirs.block_hash())) {
            break;
        }
        ours.nonce += 1;
    }
    conn.send(Message::from(SubmitSolution {
        template_id: t.template_id,
        version: t.version,
        header_timestamp: p.header_timestamp,
        header_nonce: ours.nonce,
        coinbase_tx: B064K::try_from(serialize(&coinbase).as_slice()).unwrap(),
    }))
    .await
    .unwrap();
    ours
}

async fn outcome(outcomes: &mut broadcast::Receiver<Outcome>) -> Outcome {
    timeout(Duration::from_secs(10), outcomes.recv())
        .await
        .expect("an outcome within 10 s")
        .unwrap()
}

#[tokio::test]
async fn a_block_on_a_template_is_accepted_and_becomes_the_tip() {
    let tp = start(NBITS_16, None, true).await;
    let mut outcomes = tp.outcomes();
    let mut conn = connect(&tp).await;
    let (t, p) = work(&mut conn).await;

    // The template as a node makes it: BIP34 height, one output (the witness commitment),
    // the subsidy and the fees, the network target of nbits.
    let height = Builder::new()
        .push_int(i64::from(FIRST_HEIGHT))
        .into_script();
    assert_eq!(t.coinbase_prefix.as_bytes(), height.as_bytes());
    assert_eq!(t.coinbase_tx_outputs_count, 1);
    assert!(
        t.coinbase_tx_outputs.as_bytes()[9..].starts_with(&[0x6a, 0x24, 0xaa, 0x21, 0xa9, 0xed])
    );
    let fees: u64 = (1..=TRANSACTIONS as u64).map(|i| 1_000 * i).sum();
    assert_eq!(
        t.coinbase_tx_value_remaining,
        chain::subsidy(FIRST_HEIGHT) + fees
    );
    assert_eq!(p.n_bits, NBITS_16);
    assert_eq!(
        Target::from_le_bytes(p.target.0),
        Target::from_compact(CompactTarget::from_consensus(NBITS_16))
    );

    // The transactions deserialise and the merkle path is made of their txids.
    let data = transactions(&mut conn, t.template_id).await;
    assert_eq!(
        data.excess_data.as_bytes(),
        [0u8; 32],
        "the witness reserved value"
    );
    let txs: Vec<Transaction> = data
        .transaction_list
        .iter()
        .map(|b| deserialize(b.as_bytes()).unwrap())
        .collect();
    assert_eq!(txs.len(), TRANSACTIONS);
    assert!(
        txs.iter()
            .any(|t| t.compute_txid().to_raw_hash() != t.compute_wtxid().to_raw_hash())
    );
    let txids: Vec<[u8; 32]> = txs
        .iter()
        .map(|t| t.compute_txid().to_byte_array())
        .collect();
    let path: Vec<[u8; 32]> = t.merkle_path.iter().map(|h| h.0).collect();
    assert_eq!(path, coinbase_merkle_path(&txids));

    // A block built from all of it is a valid block for the bitcoin crate too.
    let recipe = CoinbaseRecipe::correct(&data);
    let header = mine_and_submit(&mut conn, &t, &p, &recipe).await;
    let hash = header.block_hash();
    let block = Block {
        header,
        txdata: std::iter::once(build_coinbase(&t, &recipe))
            .chain(txs)
            .collect(),
    };
    assert!(block.check_merkle_root() && block.check_witness_commitment());
    assert_eq!(block.bip34_block_height().unwrap(), u64::from(FIRST_HEIGHT));

    assert_eq!(
        outcome(&mut outcomes).await,
        Outcome::Accepted {
            template_id: t.template_id,
            hash,
            height: FIRST_HEIGHT,
        }
    );
    assert_eq!(tp.counts(), (1, 0));
    // The block is the new tip: the next template builds on it, one higher.
    let (t2, p2) = work(&mut conn).await;
    assert_eq!(BlockHash::from_byte_array(p2.prev_hash.0), hash);
    let next_height = Builder::new()
        .push_int(i64::from(FIRST_HEIGHT + 1))
        .into_script();
    assert_eq!(t2.coinbase_prefix.as_bytes(), next_height.as_bytes());
    assert_eq!(
        transaction_data_error(&mut conn, t.template_id).await,
        "stale-template-id"
    );
    // The same block again: its parent is no longer the tip.
    mine_and_submit(&mut conn, &t, &p, &recipe).await;
    let Outcome::Refused { refusal, .. } = outcome(&mut outcomes).await else {
        panic!("a block on a stale tip accepted")
    };
    assert_eq!(refusal.reason, "stale-prevblk");
}

#[tokio::test]
async fn broken_blocks_are_refused_with_a_nodes_reason() {
    let tp = start(NBITS_16, None, false).await;
    let mut outcomes = tp.outcomes();
    let mut conn = connect(&tp).await;
    let (t, p) = work(&mut conn).await;
    let data = transactions(&mut conn, t.template_id).await;
    let correct = CoinbaseRecipe::correct(&data);
    let wrong_height = Builder::new()
        .push_int(i64::from(FIRST_HEIGHT) + 1)
        .into_script()
        .into_bytes();
    let cases = [
        (
            "bad-cb-height",
            CoinbaseRecipe {
                prefix: Some(wrong_height),
                ..correct.clone()
            },
        ),
        (
            "unexpected-witness",
            CoinbaseRecipe {
                drop_template_outputs: true,
                ..correct.clone()
            },
        ),
        (
            "bad-witness-merkle-match",
            CoinbaseRecipe {
                witness_reserved_value: vec![1; 32],
                ..correct.clone()
            },
        ),
        (
            "bad-witness-nonce-size",
            CoinbaseRecipe {
                witness_reserved_value: vec![0; 31],
                ..correct.clone()
            },
        ),
        (
            "bad-cb-length",
            CoinbaseRecipe {
                prefix: Some([t.coinbase_prefix.as_bytes(), &[0x4c, 93], &[0; 93]].concat()),
                ..correct.clone()
            },
        ),
        (
            "bad-cb-amount",
            CoinbaseRecipe {
                extra_value: 1,
                ..correct.clone()
            },
        ),
        (
            "high-hash",
            CoinbaseRecipe {
                ignore_merkle_path: true,
                ..correct.clone()
            },
        ),
    ];
    for (reason, recipe) in &cases {
        mine_and_submit(&mut conn, &t, &p, recipe).await;
        match outcome(&mut outcomes).await {
            Outcome::Refused { refusal, .. } => assert_eq!(refusal.reason, *reason, "{recipe:?}"),
            other => panic!("{recipe:?}: expected {reason}, got {other:?}"),
        }
    }
    // Not a transaction at all, and a template that does not exist.
    conn.send(Message::from(SubmitSolution {
        template_id: t.template_id,
        coinbase_tx: B064K::try_from(&[1u8, 2, 3][..]).unwrap(),
        ..SubmitSolution::default()
    }))
    .await
    .unwrap();
    let Outcome::Refused { refusal, .. } = outcome(&mut outcomes).await else {
        panic!("garbage accepted")
    };
    assert_eq!(refusal.reason, "bad-cb-decode");
    conn.send(Message::from(SubmitSolution {
        template_id: 999,
        ..SubmitSolution::default()
    }))
    .await
    .unwrap();
    let Outcome::Refused { refusal, .. } = outcome(&mut outcomes).await else {
        panic!("unknown template accepted")
    };
    assert_eq!(refusal.reason, "unknown-template");
    assert_eq!(tp.counts(), (0, cases.len() as u64 + 2));

    // None of them moved the tip: the correct block is still accepted.
    mine_and_submit(&mut conn, &t, &p, &correct).await;
    assert!(matches!(
        outcome(&mut outcomes).await,
        Outcome::Accepted { .. }
    ));
    assert_eq!(
        transaction_data_error(&mut conn, 999).await,
        "template-id-not-found"
    );
}

#[tokio::test]
async fn the_tip_moves_on_the_timer_and_old_templates_go_stale() {
    let tp = start(0x207f_ffff, Some(Duration::from_millis(500)), false).await;
    let mut conn = connect(&tp).await;
    let (t1, p1) = work(&mut conn).await;
    let (t2, p2) = work(&mut conn).await;
    assert_eq!(t2.template_id, t1.template_id + 1);
    assert_ne!(p2.prev_hash, p1.prev_hash);
    let next_height = Builder::new()
        .push_int(i64::from(FIRST_HEIGHT + 1))
        .into_script();
    assert_eq!(t2.coinbase_prefix.as_bytes(), next_height.as_bytes());
    // Kept for 8 tips (4 s here), then forgotten.
    assert_eq!(
        transaction_data_error(&mut conn, t1.template_id).await,
        "stale-template-id"
    );
}

#[test]
fn the_merkle_path_leads_to_the_root_of_every_tree_size() {
    for n in 0..=17usize {
        let txids: Vec<[u8; 32]> = (0..n).map(|i| [i as u8 + 1; 32]).collect();
        let coinbase = [0xcb; 32];
        let path = coinbase_merkle_path(&txids);
        let leaves = std::iter::once(coinbase)
            .chain(txids.iter().copied())
            .map(bitcoin::hashes::sha256d::Hash::from_byte_array);
        let root = bitcoin::merkle_tree::calculate_root(leaves).unwrap();
        assert_eq!(
            fold_merkle_path(coinbase, &path),
            root.to_byte_array(),
            "{n} transactions"
        );
    }
}

#[test]
fn the_most_transactions_fit_in_a_block() {
    let template = chain::Template::new(
        1,
        FIRST_HEIGHT,
        BlockHash::all_zeros(),
        0,
        0x207f_ffff,
        crate::args::MAX_TRANSACTIONS,
    );
    let weight: u64 = template
        .transactions
        .iter()
        .map(|t| t.weight().to_wu())
        .sum();
    assert!(weight < 3_500_000, "{weight}");
}

#[test]
fn synthetic_transactions_deserialise() {
    for i in 0..4 {
        let (tx, _) = chain::synthetic_transaction(FIRST_HEIGHT, i);
        let back: Transaction = deserialize(&serialize(&tx)).unwrap();
        assert_eq!(back, tx);
        assert_eq!(tx.input[0].witness.is_empty(), i % 2 == 1);
    }
}

#[test]
fn difficulty_bits_give_the_target_with_that_many_leading_zeros() {
    for bits in [1, 8, 16, 32, 100] {
        let target =
            Target::from_compact(CompactTarget::from_consensus(nbits_for_leading_zeros(bits)));
        let be = target.to_be_bytes();
        let zeros: u32 = be
            .iter()
            .map(|b| b.leading_zeros())
            .scan(true, |go, z| {
                let take = if *go { z } else { 0 };
                *go = *go && z == 8;
                Some(take)
            })
            .sum();
        assert_eq!(zeros, bits, "{bits}");
    }
}

#[test]
fn arguments() {
    let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    let a = parse(&args(
        "--listen 127.0.0.1:9000 --noise --block-interval 0 --nbits 1d00ffff --transactions 0",
    ))
    .unwrap();
    assert_eq!(
        a,
        Args {
            listen: "127.0.0.1:9000".parse().unwrap(),
            noise: true,
            secret_file: None,
            block_interval: None,
            nbits: 0x1d00_ffff,
            transactions: 0,
        }
    );
    assert_eq!(
        parse(&args("--difficulty-bits 8")).unwrap().nbits,
        nbits_for_leading_zeros(8)
    );
    assert!(parse(&args("--authority-secret-file f")).unwrap().noise);
    assert!(parse(&args("--nbits xyz")).is_err());
    assert!(parse(&args("--block-interval -1")).is_err());
    assert!(parse(&args("--bogus")).is_err());
}
