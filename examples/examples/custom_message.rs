//! `custom_message`: an extension message of your own, defined once with
//! `#[derive(Wire)]`, sent through a tokio `Framed`, and received both ways: owned (no
//! lifetime) and borrowed (a `Ref` view into a pooled frame).
//!
//! Run it from the workspace root: `cargo run --example custom_message`. It checks its own
//! output with `assert!`s.

use std::error::Error;

use futures::{SinkExt, StreamExt};
use sv2c_binary::messages::{Message, MessageOrRaw};
use sv2c_binary::{MessageType, Seq0255, Str0255, U256, Wire, WireRef};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{FrameCodec, Sv2Codec};
use tokio_util::codec::Framed;

/// A hash-board status report: message 0x01 of an experimental extension (ids
/// 0x4000–0x7FFF are the experimental range, SV2-WIRE §2.1). It is a channel message, so
/// its first field is the channel id and a proxy can route it without knowing it.
///
/// The derive writes the borrowed twin `BoardStatusRef<'a>` (`worker` borrowed as
/// `Str0255Ref<'a>`, `temperatures` as `Seq0255Ref<'a, u16>`), the encoders and decoders
/// of both, the conversions and the header constants.
#[derive(Debug, Clone, PartialEq, Wire)]
#[sv2(extension_type = 0x4a11, msg_type = 0x01, channel_msg)]
pub struct BoardStatus {
    /// The channel the boards mine on.
    pub channel_id: u32,
    /// Worker name.
    pub worker: Str0255,
    /// Temperature of each hash board, in tenths of a degree Celsius.
    pub temperatures: Seq0255<u16>,
    /// Hash of the best share found since the last report.
    pub best_share: U256,
}

/// Sends the message both ways and receives it owned and borrowed (`pub` so that the
/// crate's tests can run it).
#[tokio::main(flavor = "current_thread")]
pub async fn main() -> Result<(), Box<dyn Error>> {
    let report = BoardStatus {
        channel_id: 7,
        worker: Str0255::try_from("rig-01.board-a")?,
        temperatures: Seq0255::from_slice(&[612, 655, 640])?,
        best_share: U256([0xab; 32]),
    };
    println!(
        "{}: extension {:#06x}, msg_type {:#04x}, channel message: {}, header extension_type field {:#06x}",
        BoardStatus::NAME,
        BoardStatus::EXTENSION_TYPE,
        BoardStatus::MSG_TYPE,
        BoardStatus::CHANNEL_MSG,
        BoardStatus::wire_extension_type(),
    );

    // 1. Owned, both directions: `Sv2Codec<BoardStatus>` on each end of a pipe (a
    //    TcpStream works the same). The codec's message set is this one type.
    let (a, b) = tokio::io::duplex(4096);
    let mut firmware = Framed::new(a, Sv2Codec::<BoardStatus>::for_set());
    let mut pool = Framed::new(b, Sv2Codec::<BoardStatus>::for_set());

    firmware.send(&report).await?;
    let received: BoardStatus = pool.next().await.ok_or("pipe closed")??;
    println!("pool received (owned):      {received:?}");
    assert_eq!(received, report);

    let answer = BoardStatus {
        worker: Str0255::try_from("rig-01.board-b")?,
        ..received
    };
    pool.send(answer.clone()).await?;
    let echoed = firmware.next().await.ok_or("pipe closed")??;
    println!("firmware received (owned):  {echoed:?}");
    assert_eq!(echoed, answer);

    // 2. As a pooled frame, decoded borrowed: `FrameCodec` yields frames whose payload is
    //    in a `BufferPool` slot; `decode_ref` points into it (no allocation, no copy).
    let buffers = BufferPool::new(4, 1024)?;
    let (a, b) = tokio::io::duplex(4096);
    let mut sender = Framed::new(a, Sv2Codec::<BoardStatus>::for_set());
    let mut receiver = Framed::new(b, FrameCodec::new(buffers.clone()));
    sender.send(&report).await?;
    let frame = receiver.next().await.ok_or("pipe closed")??;
    println!(
        "frame received:             {:?}, channel id {:?}",
        frame.header(),
        frame.channel_id()
    );
    assert_eq!(frame.channel_id(), Some(7));
    {
        let view: BoardStatusRef<'_> = frame.decode_ref::<BoardStatus>()?;
        let temperatures: Vec<u16> = view.temperatures.iter().collect();
        println!(
            "borrowed view:              worker {:?}, temperatures {:?}",
            view.worker.as_str()?,
            temperatures
        );
        assert_eq!(view.worker.as_str()?, "rig-01.board-a");
        assert_eq!(temperatures, [612, 655, 640]);
        assert_eq!(view.to_owned_value(), report);
        // The frame (and the view borrowing it) hold one pool slot.
        assert_eq!(buffers.stats().in_use, 1);
    }

    // 3. Code that does not know the extension (the standard message set) keeps the
    //    frame's bytes, so a proxy can forward it unchanged (SV2-WIRE §2.4).
    let h = frame.header();
    match Message::decode_or_raw(h.wire_extension_type(), h.msg_type(), frame.payload())? {
        MessageOrRaw::Raw(raw) => {
            println!(
                "as an unknown message:      extension {:#06x}, channel {:?}, {} payload bytes kept raw",
                raw.extension_id(),
                raw.channel_id(),
                raw.payload.len()
            );
            assert_eq!(raw.channel_id(), Some(7));
        }
        MessageOrRaw::Known(m) => return Err(format!("unexpectedly known: {m:?}").into()),
    }
    drop(frame);
    assert_eq!(buffers.stats().in_use, 0);
    println!("ok");
    Ok(())
}
