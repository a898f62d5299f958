//! The `pool_in_100_lines` example over TCP: a miner sets up, opens two standard channels,
//! and sends shares in one write; each is answered once, in order — a channel's
//! consecutive accepted shares by one `SubmitShares.Success`, every refusal with its code.

#[path = "../examples/pool_in_100_lines.rs"]
#[allow(dead_code, unreachable_pub)]
mod pool_in_100_lines;

use std::time::Duration;

use sv2c::channels::pow::{header, meets_target, sha256d};
use sv2c::prelude::*;
use tokio::net::{TcpListener, TcpStream};

type Conn = Framed<TcpStream, Sv2Codec<Message>>;

async fn recv(conn: &mut Conn) -> Message {
    let next = tokio::time::timeout(Duration::from_secs(10), conn.next());
    next.await
        .expect("an answer in time")
        .expect("open")
        .expect("decodes")
}

/// A channel as the miner sees it: what the pool sent when it opened it.
struct Channel {
    ok: OpenStandardMiningChannelSuccess,
    job: NewMiningJob,
    prev: SetNewPrevHash,
}

impl Channel {
    async fn open(conn: &mut Conn, request_id: u32) -> Self {
        let open = OpenStandardMiningChannel {
            request_id,
            max_target: U256([0xff; 32]),
            ..Default::default()
        };
        conn.send(open).await.unwrap();
        let (Message::OpenStandardMiningChannelSuccess(ok), Message::NewMiningJob(job)) =
            (recv(conn).await, recv(conn).await)
        else {
            panic!("no channel")
        };
        let Message::SetNewPrevHash(prev) = recv(conn).await else {
            panic!("no chain tip")
        };
        assert_eq!((ok.request_id, job.job_id), (request_id, prev.job_id));
        assert_eq!(
            (job.channel_id, prev.channel_id),
            (ok.channel_id, ok.channel_id)
        );
        assert_eq!(job.min_ntime, None, "a future job, activated by the tip");
        Channel { ok, job, prev }
    }

    fn hash(&self, nonce: u32) -> [u8; 32] {
        let (job, prev) = (&self.job, &self.prev);
        let root = &job.merkle_root.0;
        sha256d(&header(
            job.version,
            &prev.prev_hash.0,
            root,
            prev.min_ntime,
            prev.nbits,
            nonce,
        ))
    }

    /// Nonces whose share meets the channel target (`true`) or misses it.
    fn nonces(&self, good: bool) -> impl Iterator<Item = u32> + '_ {
        (0u32..).filter(move |&n| meets_target(&self.hash(n), &self.ok.target) == good)
    }

    fn share(&self, sequence_number: u32, nonce: u32) -> SubmitSharesStandard {
        SubmitSharesStandard {
            channel_id: self.ok.channel_id,
            sequence_number,
            job_id: self.job.job_id,
            nonce,
            ntime: self.prev.min_ntime,
            version: self.job.version,
        }
    }
}

#[tokio::test]
async fn a_miner_gets_every_share_answered_once_in_order() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let pool = tokio::spawn(pool_in_100_lines::serve(listener));
    let mut conn: Conn = Framed::new(TcpStream::connect(addr).await.unwrap(), Sv2Codec::new());
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        ..Default::default()
    };
    conn.send(setup).await.unwrap();
    let Message::SetupConnectionSuccess(s) = recv(&mut conn).await else {
        panic!("setup refused")
    };
    assert_eq!(s.used_version, 2);

    let (a, b) = (
        Channel::open(&mut conn, 1).await,
        Channel::open(&mut conn, 2).await,
    );
    assert_ne!(a.ok.channel_id, b.ok.channel_id);
    assert_ne!(
        a.job.merkle_root, b.job.merkle_root,
        "each its own extranonce prefix"
    );
    let good: Vec<u32> = a.nonces(true).take(3).collect();
    let unknown = SubmitSharesStandard {
        channel_id: 99,
        ..a.share(6, good[2])
    };
    let shares = [
        a.share(0, good[0]),
        a.share(1, good[1]),
        b.share(2, b.nonces(true).next().unwrap()),
        a.share(3, a.nonces(false).next().unwrap()),
        a.share(4, good[0]), // the first again
        a.share(5, good[2]),
        unknown,
    ];
    for s in &shares {
        conn.feed(s.clone()).await.unwrap();
    }
    SinkExt::<SubmitSharesStandard>::flush(&mut conn)
        .await
        .unwrap();

    // (channel, last sequence number, shares accepted) or (channel, sequence number, code).
    let mut answers = Vec::new();
    let mut covered = 0;
    while covered < shares.len() {
        answers.push(match recv(&mut conn).await {
            Message::SubmitSharesSuccess(s) => {
                covered += s.new_submits_accepted_count as usize;
                let (id, last) = (s.channel_id, s.last_sequence_number);
                (id, last, Ok(s.new_submits_accepted_count))
            }
            Message::SubmitSharesError(e) => {
                covered += 1;
                (
                    e.channel_id,
                    e.sequence_number,
                    Err(e.error_code.to_string()),
                )
            }
            other => panic!("{other:?}"),
        });
    }
    let (ida, idb) = (a.ok.channel_id, b.ok.channel_id);
    let refused = |code: &str| Err(code.to_owned());
    // One write, one read: shares 0 and 1 share an acknowledgement.
    assert_eq!(
        answers,
        [
            (ida, 1, Ok(2)),
            (idb, 2, Ok(1)),
            (ida, 3, refused("difficulty-too-low")),
            (ida, 4, refused("duplicate-share")),
            (ida, 5, Ok(1)),
            (99, 6, refused("invalid-channel-id")),
        ]
    );
    pool.abort();
}
