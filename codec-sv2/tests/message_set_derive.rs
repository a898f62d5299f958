//! `#[derive(MessageSet)]`: standard messages and a user's extension message on one
//! connection, received owned (`Sv2Codec<MyProtocol>`) and borrowed (`FrameCodec` +
//! `Frame::decode_ref::<MyProtocol>()`).

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{Message, MessageRef, SetupConnectionSuccess, SubmitSharesStandard};
use sv2c_binary::{Frameable, MessageSet, Str0255, Wire};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{FrameCodec, Sv2Codec};
use tokio_util::codec::Framed;

/// A user's extension message.
#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(extension_type = 0x4a11, msg_type = 0x02)]
pub struct WorkerReport {
    /// Worker name.
    pub worker: Str0255,
    /// Shares found.
    pub shares: u32,
}

/// The standard set plus the report.
#[derive(Debug, Clone, PartialEq, MessageSet)]
pub enum MyProtocol {
    /// Every standard message.
    Std(Message),
    /// The extension message.
    Report(WorkerReport),
}

fn share() -> SubmitSharesStandard {
    SubmitSharesStandard {
        channel_id: 3,
        sequence_number: 1,
        job_id: 2,
        nonce: 0xdead_beef,
        ntime: 1_700_000_000,
        version: 0x2000_0000,
    }
}

fn report() -> WorkerReport {
    WorkerReport {
        worker: Str0255::try_from("rig-7").unwrap(),
        shares: 12,
    }
}

#[test]
fn ids_are_the_concatenation_of_the_variants() {
    assert_eq!(
        MyProtocol::IDS.len(),
        <Message as MessageSet>::IDS.len() + 1
    );
    assert_eq!(MyProtocol::IDS.last(), Some(&(0x4a11, 0x02)));
    assert!(MyProtocol::IDS.contains(&(0, 0x1a))); // SubmitSharesStandard
}

#[tokio::test]
async fn standard_and_user_messages_on_one_connection_owned() {
    let (a, b) = tokio::io::duplex(4096);
    let mut client = Framed::new(a, Sv2Codec::<MyProtocol>::for_set());
    let mut server = Framed::new(b, Sv2Codec::<MyProtocol>::for_set());

    client.send(share()).await.unwrap(); // a standard message, sent by value
    client.send(&report()).await.unwrap(); // the user's, by reference
    client
        .send(MyProtocol::from(Message::SetupConnectionSuccess(
            SetupConnectionSuccess {
                used_version: 2,
                flags: 0,
            },
        )))
        .await
        .unwrap();
    drop(client);

    let mut got = Vec::new();
    while let Some(m) = server.next().await {
        got.push(m.unwrap());
    }
    assert_eq!(
        got,
        [
            MyProtocol::Std(Message::SubmitSharesStandard(share())),
            MyProtocol::Report(report()),
            MyProtocol::Std(Message::SetupConnectionSuccess(SetupConnectionSuccess {
                used_version: 2,
                flags: 0
            })),
        ]
    );
    assert_eq!(got[1].wire_extension_type(), 0x4a11);
    assert_eq!(got[1].msg_type(), 0x02);
    assert_eq!(server.codec().skipped_frames(), 0);
}

#[tokio::test]
async fn standard_and_user_messages_on_one_connection_borrowed() {
    let pool = BufferPool::new(4, 256).unwrap();
    let (a, b) = tokio::io::duplex(4096);
    let mut client = Framed::new(a, Sv2Codec::<MyProtocol>::for_set());
    let mut server = Framed::new(b, FrameCodec::new(pool.clone()));
    client.send(MyProtocol::Report(report())).await.unwrap();
    client.send(share()).await.unwrap();
    drop(client);

    let frame = server.next().await.unwrap().unwrap();
    match frame.decode_ref::<MyProtocol>().unwrap() {
        MyProtocolRef::Report(r) => {
            assert_eq!(r.worker.as_bytes(), b"rig-7");
            assert_eq!(r.shares, 12);
        }
        other => panic!("unexpected {other:?}"),
    }
    let frame = server.next().await.unwrap().unwrap();
    let view = frame.decode_ref::<MyProtocol>().unwrap();
    assert!(matches!(
        view,
        MyProtocolRef::Std(MessageRef::SubmitSharesStandard(ref s)) if s.nonce == 0xdead_beef
    ));
    // The Ref form frames and encodes like the owned one.
    assert_eq!(view.msg_type(), 0x1a);
    assert_eq!(
        sv2c_binary::Encode::encoded_len(&view),
        frame.payload().len()
    );
    assert!(server.next().await.is_none());
}
