//! Every share gets exactly one answer, in order, from the pool and from the proxy in both
//! modes, whatever follows it in the same write; and the proxy is no more lenient than the
//! pool: the same share faults get the same answers from all three.
//!
//! `answers_are_exact_and_in_order_for_random_interleavings` writes random interleavings of
//! shares (valid and faulty), `CloseChannel`s, shares on closed and unknown channels and
//! frames that do not decode, each interleaving in one write, and checks the answers
//! against a model: each share answered once, a channel's answers in the order of its
//! shares, a `SubmitShares.Success` covering exactly the shares it counts, each error
//! the code the fault calls for. Seeded: a failure prints the seed and the case.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{
    CloseChannel, Message, OpenStandardMiningChannel, SubmitSharesStandard, UpdateChannel,
};
use sv2c_binary::{MessageType, Str0255, U256};
use sv2c_channels::pow as work;
use sv2c_codec::{Header, Sv2Codec};
use sv2c_roles::pool::{Pool, PoolConfig};
use sv2c_roles::proxy::{Proxy, ProxyConfig};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::time::timeout;
use tokio_util::codec::Encoder;

mod common;
use common::{Client, connect, next};

/// The server under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Pool,
    Forwarding,
    Aggregating,
}

const TARGETS: [Target; 3] = [Target::Pool, Target::Forwarding, Target::Aggregating];

/// A pool (every share meets its target unless `bits` > 0; one chain tip for the whole
/// test) and, for the proxy targets, a proxy in front of it.
struct Servers {
    pool: Pool,
    proxy: Option<Proxy>,
}

impl Servers {
    async fn start(target: Target, bits: u32, job_interval: Duration) -> Servers {
        let pool = Pool::bind(
            "127.0.0.1:0",
            PoolConfig {
                share_target: work::target_with_zero_bits(bits),
                job_interval,
                jobs_per_prev_hash: 1,
                ..PoolConfig::default()
            },
        )
        .await
        .unwrap();
        let proxy = match target {
            Target::Pool => None,
            Target::Forwarding | Target::Aggregating => {
                let upstream = TcpStream::connect(pool.local_addr()).await.unwrap();
                let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
                let config = ProxyConfig {
                    upstream_host: "127.0.0.1".into(),
                    upstream_port: pool.local_addr().port(),
                    aggregate: target == Target::Aggregating,
                    ..ProxyConfig::default()
                };
                Some(Proxy::start(upstream, listener, config).await.unwrap())
            }
        };
        Servers { pool, proxy }
    }

    fn addr(&self) -> SocketAddr {
        match &self.proxy {
            Some(p) => p.local_addr(),
            None => self.pool.local_addr(),
        }
    }

    async fn stop(self) {
        if let Some(p) = self.proxy {
            p.shutdown().await;
        }
        self.pool.shutdown().await;
    }
}

/// A standard channel and the job it mines on.
#[derive(Debug, Clone, Copy)]
struct Channel {
    id: u32,
    target: U256,
    job_id: u32,
    version: u32,
    merkle_root: [u8; 32],
    prev_hash: [u8; 32],
    ntime: u32,
    nbits: u32,
}

/// Opens a standard channel with `max_target` and reads its job and tip.
async fn open(client: &mut Client, request_id: u32, max_target: U256) -> Channel {
    let open = OpenStandardMiningChannel {
        request_id,
        user_identity: Str0255::try_from("answers").unwrap(),
        nominal_hash_rate: 1e9,
        max_target,
    };
    client.send(Message::from(open)).await.unwrap();
    let (mut id, mut target, mut job) = (None, U256([0; 32]), None);
    loop {
        match next(client).await {
            Message::OpenStandardMiningChannelSuccess(ok) if ok.request_id == request_id => {
                id = Some(ok.channel_id);
                target = ok.target;
            }
            Message::NewMiningJob(j) if Some(j.channel_id) == id => job = Some(j),
            Message::SetNewPrevHash(tip) if Some(tip.channel_id) == id => {
                let job = job.expect("the job before its tip");
                assert_eq!(job.job_id, tip.job_id);
                return Channel {
                    id: tip.channel_id,
                    target,
                    job_id: job.job_id,
                    version: job.version,
                    merkle_root: job.merkle_root.0,
                    prev_hash: tip.prev_hash.0,
                    ntime: tip.min_ntime,
                    nbits: tip.nbits,
                };
            }
            Message::SetTarget(_) => {}
            other => panic!("unexpected {other:?} while opening a channel"),
        }
    }
}

/// A nonce from `from` on whose header (at `ntime`, `version`) meets `target` (`meets`)
/// or misses it.
fn nonce(c: &Channel, ntime: u32, version: u32, target: &U256, meets: bool, from: u32) -> u32 {
    (from..)
        .find(|&n| {
            let h = work::header(version, &c.prev_hash, &c.merkle_root, ntime, c.nbits, n);
            work::meets_target(&work::sha256d(&h), target) == meets
        })
        .unwrap()
}

/// A share's answer: `Ok(())` or the error code.
type Answer = Result<(), String>;

/// Reads share answers until `expected` shares on the channels are answered, then for
/// 100 ms more (an extra answer fails the test); checks each against the model.
/// `expected`: per share in the order sent, (channel id, sequence number, answer);
/// `difficulty`: every channel's target's (an acknowledgement's `new_shares_sum` is its
/// shares' count times it, rounded down).
async fn check_answers(
    client: &mut Client,
    expected: &[(u32, u32, Answer)],
    difficulty: f64,
    case: &str,
) {
    let mut outstanding: Vec<(u32, u32, Answer)> = expected.to_vec();
    let deadline = Duration::from_secs(10);
    let mut quiet_after_last = false;
    loop {
        let wait = if outstanding.is_empty() {
            quiet_after_last = true;
            Duration::from_millis(100)
        } else {
            deadline
        };
        let msg = match timeout(wait, client.next()).await {
            Err(_) if quiet_after_last => return,
            Err(_) => panic!("{case}: no answer for {outstanding:?}"),
            Ok(None) => panic!("{case}: closed with {outstanding:?} unanswered"),
            Ok(Some(m)) => m.expect("a message that decodes"),
        };
        match msg {
            Message::SubmitSharesSuccess(s) => {
                let mine: Vec<usize> = (0..outstanding.len())
                    .filter(|&i| outstanding[i].0 == s.channel_id)
                    .take(s.new_submits_accepted_count as usize)
                    .collect();
                assert_eq!(
                    mine.len(),
                    s.new_submits_accepted_count as usize,
                    "{case}: {s:?} counts more shares than are unanswered: {outstanding:?}"
                );
                assert_eq!(
                    (f64::from(s.new_submits_accepted_count) * difficulty) as u64,
                    s.new_shares_sum,
                    "{case}: {s:?}"
                );
                for &i in &mine {
                    assert_eq!(
                        outstanding[i].2,
                        Ok(()),
                        "{case}: {s:?} covers share {:?}",
                        outstanding[i]
                    );
                }
                let last = *mine.last().unwrap();
                assert_eq!(
                    outstanding[last].1, s.last_sequence_number,
                    "{case}: {s:?} does not end at the share it covers last: {outstanding:?}"
                );
                for i in mine.into_iter().rev() {
                    let _ = outstanding.remove(i);
                }
            }
            Message::SubmitSharesError(e) => {
                let code = String::from_utf8_lossy(e.error_code.as_bytes()).into_owned();
                let first = outstanding
                    .iter()
                    .position(|o| o.0 == e.channel_id)
                    .unwrap_or_else(|| panic!("{case}: unexpected {e:?} ({code})"));
                assert_eq!(
                    (outstanding[first].1, &outstanding[first].2),
                    (e.sequence_number, &Err(code.clone())),
                    "{case}: answer {code} for share {}; expected the channel's next: {outstanding:?}",
                    e.sequence_number
                );
                let _ = outstanding.remove(first);
            }
            Message::NewMiningJob(_) | Message::SetNewPrevHash(_) | Message::SetTarget(_) => {}
            other => panic!("{case}: unexpected {other:?}"),
        }
    }
}

/// xorshift64*: a small seeded generator, so that a failing case can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        ((self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % u64::from(n)) as u32
    }
}

/// Appends `msg` framed to `wire`.
fn put(wire: &mut BytesMut, msg: impl Into<Message>) {
    Sv2Codec::<Message>::new().encode(msg.into(), wire).unwrap();
}

/// One random interleaving on a fresh connection to `addr`: 1 to 3 channels, then up to
/// 24 operations in one write; the answers checked.
async fn one_case(addr: SocketAddr, rng: &mut Rng, seed: u64, target: Target) {
    let mut client = connect(addr, 0).await;
    let mut open_channels = Vec::new();
    for r in 0..1 + rng.below(3) {
        open_channels.push(open(&mut client, r + 1, U256([0xff; 32])).await);
    }
    let mut closed: Vec<Channel> = Vec::new();
    let mut wire = BytesMut::new();
    let mut expected = Vec::new();
    let mut ops = Vec::new();
    let mut seq = 0u32;
    let mut next_nonce = 0u32;
    for _ in 0..1 + rng.below(24) {
        seq += 1;
        let pick = rng.below(100);
        let (channel, on) = match pick {
            0..=59 => {
                let c = open_channels[rng.below(open_channels.len() as u32) as usize];
                (c, "open")
            }
            60..=69 if !closed.is_empty() => {
                (closed[rng.below(closed.len() as u32) as usize], "closed")
            }
            60..=74 => {
                let mut c = open_channels[0];
                c.id = 999_999;
                (c, "unknown")
            }
            75..=87 if open_channels.len() > 1 => {
                let at = rng.below(open_channels.len() as u32) as usize;
                let c = open_channels.remove(at);
                put(
                    &mut wire,
                    CloseChannel {
                        channel_id: c.id,
                        reason_code: Str0255::default(),
                    },
                );
                ops.push(format!("close {}", c.id));
                closed.push(c);
                continue;
            }
            _ => {
                // A share frame too short to decode: dropped, answered by nobody.
                let c = open_channels[0];
                let mut payload = c.id.to_le_bytes().to_vec();
                payload.extend_from_slice(&seq.to_le_bytes());
                payload.extend_from_slice(&[1, 2]);
                let header =
                    Header::new(0x8000, SubmitSharesStandard::MSG_TYPE, payload.len()).unwrap();
                wire.extend_from_slice(&header.to_bytes());
                wire.extend_from_slice(&payload);
                ops.push(format!("malformed {}", c.id));
                continue;
            }
        };
        let fault = if on == "open" { rng.below(5) } else { 0 };
        let (job_id, ntime, version, answer) = match fault {
            0 | 1 => (channel.job_id, channel.ntime, channel.version, Ok(())),
            2 => (
                channel.job_id.wrapping_add(1000),
                channel.ntime,
                channel.version,
                Err("invalid-job-id"),
            ),
            3 => (channel.job_id, 0, channel.version, Err("invalid-share")),
            _ => (
                channel.job_id,
                channel.ntime,
                channel.version ^ 0x8000_0000,
                Err("invalid-non-rollable-version-bit"),
            ),
        };
        let answer = match on {
            "open" => answer,
            _ => Err("invalid-channel-id"),
        };
        let n = nonce(&channel, ntime, version, &channel.target, true, next_nonce);
        next_nonce = n + 1;
        put(
            &mut wire,
            SubmitSharesStandard {
                channel_id: channel.id,
                sequence_number: seq,
                job_id,
                nonce: n,
                ntime,
                version,
            },
        );
        ops.push(format!("share {seq} on {on} {} ({answer:?})", channel.id));
        expected.push((channel.id, seq, answer.map_err(str::to_owned)));
    }
    client.get_mut().write_all(&wire).await.unwrap();
    let case = format!("{target:?}, seed {seed:#x}: {ops:?}");
    // Every channel was opened alike: one target.
    let difficulty = sv2c_channels::pow::target_to_difficulty(&open_channels[0].target);
    check_answers(&mut client, &expected, difficulty, &case).await;
}

#[tokio::test]
async fn answers_are_exact_and_in_order_for_random_interleavings() {
    let cases: u64 = std::env::var("SV2C_ANSWER_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40);
    for target in TARGETS {
        let servers = Servers::start(target, 0, Duration::from_secs(3600)).await;
        for case in 0..cases {
            let seed = 0x5eed_0000 + case;
            let mut rng = Rng(seed);
            one_case(servers.addr(), &mut rng, seed, target).await;
        }
        servers.stop().await;
    }
}

/// The share faults, in the order of the table `share_faults_get_the_same_answer_everywhere`
/// prints.
const FAULTS: &[&str] = &[
    "valid",
    "below the channel's own target (max_target harder than the pool's)",
    "unknown job",
    "ntime 0",
    "ntime one below min_ntime",
    "ntime a day old",
    "ntime 2 h + 1 s ahead",
    "ntime u32::MAX",
    "version bit 31 flipped",
    "version bit 0 flipped",
    "duplicate",
    "unknown channel",
    "job of the previous tip",
];

/// Reads until every channel of `channels` has a new tip; takes their new jobs.
async fn follow_tip(client: &mut Client, channels: &mut [&mut Channel]) {
    let mut moved = 0;
    while moved < channels.len() {
        match next(client).await {
            Message::NewMiningJob(j) => {
                if let Some(c) = channels.iter_mut().find(|c| c.id == j.channel_id) {
                    c.job_id = j.job_id;
                    c.merkle_root = j.merkle_root.0;
                    c.version = j.version;
                }
            }
            Message::SetNewPrevHash(tip) => {
                if let Some(c) = channels.iter_mut().find(|c| c.id == tip.channel_id) {
                    assert_eq!(c.job_id, tip.job_id);
                    c.prev_hash = tip.prev_hash.0;
                    c.ntime = tip.min_ntime;
                    c.nbits = tip.nbits;
                    moved += 1;
                }
            }
            _ => {}
        }
    }
}

/// Each fault's answer from one target.
async fn fault_answers(target: Target) -> Vec<Answer> {
    // 8-bit shares, a new tip every 2 s (for the stale case): the faults are sent right
    // after a tip moved, the stale one after the next.
    let servers = Servers::start(target, 8, Duration::from_secs(2)).await;
    let mut client = connect(servers.addr(), 0).await;
    let mut c = open(&mut client, 1, U256([0xff; 32])).await;
    // A second channel whose own target is harder than the pool's.
    let mut hard = open(&mut client, 2, work::target_with_zero_bits(12)).await;
    follow_tip(&mut client, &mut [&mut c, &mut hard]).await;
    let mut answers = Vec::new();
    let mut seq = 0;
    let mut submit = async |client: &mut Client, c: &Channel, job_id, ntime, version, n| {
        seq += 1;
        let share = SubmitSharesStandard {
            channel_id: c.id,
            sequence_number: seq,
            job_id,
            nonce: n,
            ntime,
            version,
        };
        client.send(Message::from(share)).await.unwrap();
        loop {
            match next(client).await {
                Message::SubmitSharesSuccess(s) => {
                    assert_eq!(s.last_sequence_number, seq);
                    return Ok(());
                }
                Message::SubmitSharesError(e) => {
                    assert_eq!(e.sequence_number, seq);
                    return Err(String::from_utf8_lossy(e.error_code.as_bytes()).into_owned());
                }
                _ => {}
            }
        }
    };
    let good = |c: &Channel, ntime, version| nonce(c, ntime, version, &c.target, true, 0);
    let (t, v) = (c.ntime, c.version);
    for fault in FAULTS {
        let a = match *fault {
            "valid" => submit(&mut client, &c, c.job_id, t, v, good(&c, t, v)).await,
            "below the channel's own target (max_target harder than the pool's)" => {
                let pool_target = work::target_with_zero_bits(8);
                // Meets the pool's 8 bits, misses the channel's 12.
                let n = (0u32..)
                    .find(|&n| {
                        let h =
                            work::header(v, &hard.prev_hash, &hard.merkle_root, t, hard.nbits, n);
                        let hash = work::sha256d(&h);
                        work::meets_target(&hash, &pool_target)
                            && !work::meets_target(&hash, &hard.target)
                    })
                    .unwrap();
                submit(&mut client, &hard, hard.job_id, hard.ntime, v, n).await
            }
            "unknown job" => submit(&mut client, &c, c.job_id + 1000, t, v, good(&c, t, v)).await,
            "job of the previous tip" => {
                // Wait for the next tip, then submit on the job of this one.
                let old = c;
                follow_tip(&mut client, &mut [&mut c]).await;
                let n = nonce(&old, t, v, &old.target, true, good(&old, t, v) + 1);
                submit(&mut client, &old, old.job_id, t, v, n).await
            }
            "ntime 0" => submit(&mut client, &c, c.job_id, 0, v, 0).await,
            "ntime one below min_ntime" => submit(&mut client, &c, c.job_id, t - 1, v, 0).await,
            "ntime a day old" => submit(&mut client, &c, c.job_id, t - 86_400, v, 0).await,
            "ntime 2 h + 1 s ahead" => submit(&mut client, &c, c.job_id, t + 7201, v, 0).await,
            "ntime u32::MAX" => submit(&mut client, &c, c.job_id, u32::MAX, v, 0).await,
            "version bit 31 flipped" => submit(&mut client, &c, c.job_id, t, v ^ 1 << 31, 0).await,
            "version bit 0 flipped" => submit(&mut client, &c, c.job_id, t, v ^ 1, 0).await,
            "duplicate" => submit(&mut client, &c, c.job_id, t, v, good(&c, t, v)).await,
            "unknown channel" => {
                let mut other = c;
                other.id = 424_242;
                submit(&mut client, &other, c.job_id, t, v, 0).await
            }
            _ => unreachable!(),
        };
        answers.push(a);
    }
    drop(client);
    servers.stop().await;
    answers
}

#[tokio::test]
async fn share_faults_get_the_same_answer_everywhere() {
    let mut columns = Vec::new();
    for target in TARGETS {
        columns.push(fault_answers(target).await);
    }
    println!("| share | pool | proxy, forwarding | proxy, aggregating |");
    println!("|---|---|---|---|");
    let show = |a: &Answer| match a {
        Ok(()) => "Success".to_owned(),
        Err(code) => format!("`{code}`"),
    };
    for (i, fault) in FAULTS.iter().enumerate() {
        println!(
            "| {fault} | {} | {} | {} |",
            show(&columns[0][i]),
            show(&columns[1][i]),
            show(&columns[2][i])
        );
    }
    let expected: Vec<Answer> = [
        None,
        Some("difficulty-too-low"),
        Some("invalid-job-id"),
        Some("invalid-share"),
        Some("invalid-share"),
        Some("invalid-share"),
        Some("invalid-share"),
        Some("invalid-share"),
        Some("invalid-non-rollable-version-bit"),
        Some("invalid-non-rollable-version-bit"),
        Some("duplicate-share"),
        Some("invalid-channel-id"),
        Some("stale-share"),
    ]
    .into_iter()
    .map(|c| c.map_or(Ok(()), |c| Err(c.to_owned())))
    .collect();
    for (target, column) in TARGETS.iter().zip(&columns) {
        assert_eq!(column, &expected, "{target:?}");
    }
}

/// `UpdateChannel`, alike from the pool and the proxy in both modes: an unknown channel
/// and an all-zero target are refused with the spec's codes; a lower `maximum_target`
/// brings a `SetTarget`, and a share that misses it is refused.
#[tokio::test]
async fn update_channel_gets_the_same_answers_everywhere() {
    for target in TARGETS {
        update_channel_answers(target).await;
    }
}

async fn update_channel_answers(target: Target) {
    let servers = Servers::start(target, 0, Duration::from_secs(3600)).await;
    let mut client = connect(servers.addr(), 0).await;
    let c = open(&mut client, 1, U256([0xff; 32])).await;
    let update = |channel_id, maximum_target| UpdateChannel {
        channel_id,
        nominal_hash_rate: 1e9,
        maximum_target,
    };
    client
        .send(Message::from(update(777, U256([0xff; 32]))))
        .await
        .unwrap();
    let Message::UpdateChannelError(e) = next(&mut client).await else {
        panic!("UpdateChannel.Error expected")
    };
    assert_eq!(
        (e.channel_id, e.error_code.as_bytes()),
        (777, &b"invalid-channel-id"[..])
    );
    client
        .send(Message::from(update(c.id, U256([0; 32]))))
        .await
        .unwrap();
    let Message::UpdateChannelError(e) = next(&mut client).await else {
        panic!("{target:?}: UpdateChannel.Error expected")
    };
    assert_eq!(
        (e.channel_id, e.error_code.as_bytes()),
        (c.id, &b"max-target-out-of-range"[..]),
        "{target:?}"
    );
    let harder = work::target_with_zero_bits(16);
    client
        .send(Message::from(update(c.id, harder)))
        .await
        .unwrap();
    let Message::SetTarget(t) = next(&mut client).await else {
        panic!("{target:?}: SetTarget expected")
    };
    assert_eq!(
        (t.channel_id, t.maximum_target),
        (c.id, harder),
        "{target:?}"
    );
    // A share meeting the old target but not the new one is refused.
    let n = (0u32..)
        .find(|&n| {
            let h = work::header(c.version, &c.prev_hash, &c.merkle_root, c.ntime, c.nbits, n);
            !work::meets_target(&work::sha256d(&h), &harder)
        })
        .unwrap();
    let share = SubmitSharesStandard {
        channel_id: c.id,
        sequence_number: 1,
        job_id: c.job_id,
        nonce: n,
        ntime: c.ntime,
        version: c.version,
    };
    client.send(Message::from(share)).await.unwrap();
    let Message::SubmitSharesError(e) = next(&mut client).await else {
        panic!("{target:?}: SubmitShares.Error expected")
    };
    assert_eq!(e.error_code.as_bytes(), b"difficulty-too-low", "{target:?}");
    drop(client);
    servers.stop().await;
}
