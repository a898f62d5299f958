//! The `pool_server` and `client` examples end to end: plain and Noise, standard and
//! extended channels, a share on each; plus the pool's answers to bad shares and unknown
//! extension frames.

#[path = "../examples/pool_server.rs"]
#[allow(dead_code, unreachable_pub)]
mod pool_server;

#[path = "../examples/client.rs"]
#[allow(dead_code, unreachable_pub)]
mod client;

use sv2c::noise::{self, AuthorityKeypair, Initiator, Responder, StaticKeypair, unix_time_now};
use sv2c::prelude::*;

fn check(summary: &client::Summary, session: &pool_server::Session) {
    assert_eq!(summary.channels, [(1, false), (2, true)]);
    assert_eq!(summary.accepted, 2);
    assert!(summary.rejected.is_empty());
    assert_eq!(session.channels.len(), 2);
    assert!(session.channels[&2].extended);
    assert!(session.channels.values().all(|c| c.accepted == 1));
}

#[tokio::test]
async fn client_and_pool_over_plain_framed() {
    let (a, b) = tokio::io::duplex(8192);
    let (summary, session) = tokio::join!(
        client::run(Framed::new(a, Sv2Codec::<Message>::new())),
        pool_server::serve(Framed::new(b, Sv2Codec::<Message>::new())),
    );
    check(&summary.unwrap(), &session.unwrap());
}

#[tokio::test]
async fn client_and_pool_over_noise_and_tcp() {
    let authority = AuthorityKeypair::generate().unwrap();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 60,
        now + 600,
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let pool = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let conn = noise::accept(tcp, &responder, Sv2Codec::<Message>::new())
            .await
            .unwrap();
        pool_server::serve(conn).await.unwrap()
    });
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let key = authority.public_key().to_string().parse().unwrap();
    let conn = noise::connect(
        tcp,
        Initiator::new(key).unwrap(),
        Sv2Codec::<Message>::new(),
    )
    .await
    .unwrap();
    let summary = client::run(conn).await.unwrap();
    check(&summary, &pool.await.unwrap());
}

#[test]
fn pool_rejects_bad_shares_and_ignores_messages_before_setup() {
    let mut s = pool_server::Session::default();
    let share = |channel_id, job_id| {
        Message::SubmitSharesStandard(SubmitSharesStandard {
            channel_id,
            job_id,
            ..Default::default()
        })
    };
    assert!(
        s.handle(share(1, 1)).is_empty(),
        "nothing before SetupConnection"
    );
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        ..Default::default()
    };
    assert!(matches!(
        s.handle(setup.into())[..],
        [Message::SetupConnectionSuccess(_)]
    ));
    let open = OpenStandardMiningChannel {
        request_id: 5,
        ..Default::default()
    };
    let replies = s.handle(open.into());
    assert!(matches!(
        replies[..],
        [
            Message::OpenStandardMiningChannelSuccess(OpenStandardMiningChannelSuccess {
                request_id: 5,
                channel_id: 1,
                ..
            }),
            Message::NewMiningJob(NewMiningJob {
                channel_id: 1,
                job_id: 1,
                ..
            }),
            Message::SetNewPrevHash(SetNewPrevHash {
                channel_id: 1,
                job_id: 1,
                ..
            }),
        ]
    ));
    let code = |m: &[Message]| match m {
        [Message::SubmitSharesError(e)] => e.error_code.to_string(),
        other => panic!("expected an error, got {other:?}"),
    };
    assert_eq!(code(&s.handle(share(9, 1))), "invalid-channel-id");
    assert_eq!(code(&s.handle(share(1, 7))), "invalid-job-id");
    assert!(matches!(
        s.handle(share(1, 1))[..],
        [Message::SubmitSharesSuccess(_)]
    ));
    let tdp = SetupConnection {
        protocol: Protocol::TemplateDistribution,
        ..Default::default()
    };
    assert_eq!(
        match &s.handle(tdp.into())[..] {
            [Message::SetupConnectionError(e)] => e.error_code.to_string(),
            other => panic!("{other:?}"),
        },
        "unsupported-protocol"
    );
}

/// An extension frame the pool does not know, mid-session: skipped, session goes on.
#[tokio::test]
async fn unknown_extension_frames_do_not_end_the_session() {
    let (a, b) = tokio::io::duplex(8192);
    let pool = tokio::spawn(pool_server::serve(Framed::new(
        b,
        Sv2Codec::<Message>::new(),
    )));
    let mut miner = Framed::new(a, Sv2Codec::<Message>::new());
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        ..Default::default()
    };
    miner.send(setup).await.unwrap();
    miner
        .send(RawMessage::new(0x4abc, 0x01, &[1, 2, 3]))
        .await
        .unwrap();
    miner
        .send(RawMessage::new(0xcabc, 0x01, &[1, 0, 0, 0]))
        .await
        .unwrap();
    miner
        .send(OpenStandardMiningChannel {
            request_id: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    let mut names = Vec::new();
    for _ in 0..4 {
        names.push(miner.next().await.unwrap().unwrap().name());
    }
    assert_eq!(
        names,
        [
            "SetupConnectionSuccess",
            "OpenStandardMiningChannelSuccess",
            "NewMiningJob",
            "SetNewPrevHash"
        ]
    );
    miner.close_frames().await.unwrap();
    assert_eq!(pool.await.unwrap().unwrap().channels.len(), 1);
}
