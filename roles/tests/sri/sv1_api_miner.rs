//! An SV1 miner whose messages are SRI's `sv1_api` 6.0.0 types, for the interop tests
//! (`translator_interop.rs`, `pool_sv2_interop.rs`): real double SHA-256 shares, then
//! one bad share of each [`Fault`], and what the server answered.

#![allow(dead_code)] // each test crate uses part of it

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use sv2c_binary::U256;
use sv2c_channels::pow as work;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::{Instant, timeout};

/// The target of an SV1 difficulty (difficulty 1 = 0x00000000ffff0000…), as a
/// little-endian [`work`] target, rounded down so that a hash meeting it meets the
/// translator's exact target too.
pub(crate) fn sv1_target(difficulty: f64) -> [u8; 32] {
    // 0xffff * 2^208 / difficulty, computed in f64 then laid out in bytes.
    let mut value = 65535.0 * 2f64.powi(208) / difficulty;
    value *= 0.999; // stay below the exact value
    let mut be = [0u8; 32];
    let mut scale = 2f64.powi(248);
    for byte in be.iter_mut() {
        let b = (value / scale).floor().clamp(0.0, 255.0);
        *byte = b as u8;
        value -= b * scale;
        scale /= 256.0;
    }
    be.reverse();
    be
}

/// A bad share an SV1 miner sends after its good ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// A job id the server never sent.
    UnknownJob,
    /// The last accepted share again.
    Duplicate,
    /// A header hash that does not meet the miner's difficulty.
    LowDifficulty,
    /// An extranonce2 one byte longer than the subscription's size.
    LongExtranonce2,
}

pub(crate) const FAULTS: [Fault; 4] = [
    Fault::UnknownJob,
    Fault::Duplicate,
    Fault::LowDifficulty,
    Fault::LongExtranonce2,
];

/// What a server answered an `sv1_api` miner: its good shares accepted, and for each
/// fault whether it was accepted and the error it came with.
#[derive(Debug, Default)]
pub(crate) struct Sv1Answers {
    /// Good shares accepted.
    pub(crate) accepted: usize,
    /// The header hashes of the accepted good shares, as block explorers show them.
    pub(crate) accepted_hashes: Vec<String>,
    /// Each fault, whether it was accepted, and the error (`"code message"`).
    pub(crate) faults: Vec<(Fault, bool, Option<String>)>,
}

/// What the server asks of a share beside the miner's difficulty, and how the miner
/// spends its jobs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sv1Plan {
    /// Good shares to have answered.
    pub(crate) shares: usize,
    /// The pool's target, which every good share meets too.
    pub(crate) pool_target: U256,
    /// Good shares sent on one job before waiting for the next (`usize::MAX`: all on
    /// the first; 1 where every share is a block and moves the tip).
    pub(crate) per_job: usize,
}

/// The job an `sv1_api` miner works on, from its `mining.notify`.
struct Sv1Job {
    job_id: String,
    prev_hash: [u8; 32],
    coinbase1: Vec<u8>,
    coinbase2: Vec<u8>,
    branches: Vec<[u8; 32]>,
    version: u32,
    nbits: u32,
    ntime: u32,
}

impl Sv1Job {
    fn from_notify(n: &sv1_api::server_to_client::Notify) -> Sv1Job {
        let bytes32 = |b: &[u8]| -> [u8; 32] { b.try_into().expect("32 bytes") };
        Sv1Job {
            job_id: n.job_id.clone(),
            // `sv1_api` undoes SV1's word swap: these are the header's bytes.
            prev_hash: bytes32(AsRef::<[u8]>::as_ref(&n.prev_hash)),
            coinbase1: AsRef::<Vec<u8>>::as_ref(&n.coin_base1).clone(),
            coinbase2: AsRef::<Vec<u8>>::as_ref(&n.coin_base2).clone(),
            branches: n
                .merkle_branch
                .iter()
                .map(|b| bytes32(AsRef::<[u8]>::as_ref(b)))
                .collect(),
            version: n.version.0,
            nbits: n.bits.0,
            ntime: n.time.0,
        }
    }

    /// The header hash of a share of this job.
    fn hash(&self, extranonce1: &[u8], extranonce2: &[u8], nonce: u32) -> [u8; 32] {
        let coinbase = [
            &self.coinbase1[..],
            extranonce1,
            extranonce2,
            &self.coinbase2,
        ]
        .concat();
        let root = work::merkle_root(work::sha256d(&coinbase), self.branches.iter());
        work::sha256d(&work::header(
            self.version,
            &self.prev_hash,
            &root,
            self.ntime,
            self.nbits,
            nonce,
        ))
    }
}

/// Sends one `sv1_api` message as a line.
async fn send_sv1(write: &mut tokio::net::tcp::OwnedWriteHalf, msg: sv1_api::Message) {
    let mut line = serde_json::to_string(&msg).unwrap();
    line.push('\n');
    write.write_all(line.as_bytes()).await.unwrap();
}

/// An SV1 miner whose messages are SRI's `sv1_api` types, written and read with
/// `sv1_api`'s JSON-RPC framing: `mining.subscribe`, `mining.authorize`, then the
/// plan's shares (real double SHA-256, each meeting the miner's difficulty and the pool's
/// target), then one share of each [`Fault`]; returns what the server answered.
pub(crate) async fn sv1_api_miner(addr: SocketAddr, name: &str, plan: Sv1Plan) -> Sv1Answers {
    let Sv1Plan {
        shares,
        pool_target,
        per_job,
    } = plan;
    use sv1_api::client_to_server::{Authorize, Submit, Subscribe};
    use sv1_api::server_to_client as answer;
    use sv1_api::utils::{Extranonce, HexU32Be};

    let tcp = TcpStream::connect(addr).await.unwrap();
    let (read, mut write) = tcp.into_split();
    let mut lines = BufReader::new(read).lines();
    let subscribe = Subscribe {
        id: 1,
        agent_signature: "sv2c-sv1-api-test/1.0".into(),
        extranonce1: None,
    };
    send_sv1(&mut write, subscribe.try_into().unwrap()).await;
    let authorize = Authorize {
        id: 2,
        name: name.into(),
        password: "x".into(),
    };
    send_sv1(&mut write, authorize.into()).await;

    let (mut extranonce1, mut extranonce2_size) = (Vec::new(), 4usize);
    // As `sv1_miner`: the translator's configured difficulty until it says another.
    let mut difficulty = 5000.0 / 2f64.powi(32);
    let mut job: Option<Sv1Job> = None;
    let mut last_good: Option<Submit> = None;
    // Good shares sent on the current job, and each one's hash by request id.
    let mut on_job = 0usize;
    let mut hashes = std::collections::HashMap::new();
    let (mut sent, mut answered, mut next_id) = (0usize, 0usize, 10u64);
    let mut answers = Sv1Answers::default();
    let mut faults_sent = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    while answered < shares || answers.faults.len() < FAULTS.len() {
        let line = timeout(deadline - Instant::now(), lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("{name}: no answer in time; {answers:?}"))
            .unwrap()
            .unwrap_or_else(|| panic!("{name}: connection closed; {answers:?}"));
        let msg: sv1_api::Message = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("{name}: sv1_api cannot read {line:?}: {e}"));
        match msg {
            sv1_api::Message::Notification(n) if n.method == "mining.set_difficulty" => {
                difficulty = answer::SetDifficulty::try_from(n).unwrap().value;
            }
            sv1_api::Message::Notification(n) if n.method == "mining.notify" => {
                on_job = 0;
                job = Some(Sv1Job::from_notify(
                    &answer::Notify::try_from(n).expect("sv1_api reads the notify"),
                ));
            }
            sv1_api::Message::OkResponse(r) | sv1_api::Message::ErrorResponse(r) => match r.id {
                1 => {
                    let s = answer::Subscribe::try_from(&r).expect("sv1_api reads the answer");
                    extranonce1 = s.extra_nonce1.0.as_bytes().to_vec();
                    extranonce2_size = s.extra_nonce2_size;
                }
                2 => assert_eq!(r.result, json!(true), "{name}: authorize: {r:?}"),
                id if id >= 100 => {
                    let fault = FAULTS[(id - 100) as usize];
                    let ok = r.error.is_none() && r.result == json!(true);
                    let error = r
                        .error
                        .as_ref()
                        .map(|e| format!("{} {}", e.code, e.message));
                    answers.faults.push((fault, ok, error));
                }
                _ => {
                    answered += 1;
                    if r.error.is_none() && r.result == json!(true) {
                        answers.accepted += 1;
                        answers.accepted_hashes.extend(hashes.remove(&r.id));
                    } else {
                        eprintln!("{name}: share refused: {r:?}");
                    }
                }
            },
            _ => {}
        }
        let Some(j) = &job else { continue };
        let target = sv2c_binary::U256(sv1_target(difficulty));
        // The good shares, on the current job.
        while sent < shares && on_job < per_job {
            let en2 = (sent as u64 + 1).to_le_bytes()[..extranonce2_size.min(8)].to_vec();
            let Some((nonce, hash)) = (0u32..1 << 22).find_map(|n| {
                let hash = j.hash(&extranonce1, &en2, n);
                (work::meets_target(&hash, &pool_target) && work::meets_target(&hash, &target))
                    .then_some((n, hash))
            }) else {
                break;
            };
            next_id += 1;
            sent += 1;
            on_job += 1;
            let shown: String = hash.iter().rev().map(|b| format!("{b:02x}")).collect();
            hashes.insert(next_id, shown);
            let submit = Submit {
                user_name: name.into(),
                job_id: j.job_id.clone(),
                extra_nonce2: Extranonce::try_from(en2).unwrap(),
                time: HexU32Be(j.ntime),
                nonce: HexU32Be(nonce),
                version_bits: None,
                id: next_id,
            };
            last_good = Some(submit.clone());
            send_sv1(&mut write, submit.into()).await;
        }
        // The faults, once every good share is answered.
        if answered == shares && !faults_sent {
            faults_sent = true;
            let good = last_good.clone().expect("a good share");
            for (k, fault) in FAULTS.iter().enumerate() {
                let mut s = good.clone();
                s.id = 100 + k as u64;
                match fault {
                    Fault::UnknownJob => s.job_id = "7fffffff".into(),
                    Fault::Duplicate => {}
                    Fault::LowDifficulty => {
                        let en2 = vec![0xee; extranonce2_size.min(8)];
                        let nonce = (0u32..)
                            .find(|&n| !work::meets_target(&j.hash(&extranonce1, &en2, n), &target))
                            .unwrap();
                        (s.job_id, s.time) = (j.job_id.clone(), HexU32Be(j.ntime));
                        (s.extra_nonce2, s.nonce) =
                            (Extranonce::try_from(en2).unwrap(), HexU32Be(nonce));
                    }
                    Fault::LongExtranonce2 => {
                        s.extra_nonce2 =
                            Extranonce::try_from(vec![0xdd; extranonce2_size + 1]).unwrap();
                    }
                }
                send_sv1(&mut write, s.into()).await;
            }
        }
    }
    answers
}
