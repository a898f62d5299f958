//! Every golden vector through `Framed` over `tokio::io::duplex`, in both directions,
//! with the byte stream cut into pseudo-random chunks (1-byte writes included): every
//! message arrives equal and in order, through the owned codec and the frame codec.

use futures::{SinkExt, StreamExt};
use sv2c_binary::MessageSet;
use sv2c_binary::messages::Message;
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{Frame, FrameCodec, Header, Sv2Codec};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{FramedRead, FramedWrite};

mod golden;

struct Vector {
    frame: Vec<u8>,
    has_tlv: bool,
}

fn vectors() -> Vec<Vector> {
    golden::records()
        .iter()
        .map(|v| Vector {
            frame: golden::frame(v),
            has_tlv: v.get("tlvs").is_some(),
        })
        .collect()
}

fn expected(frame: &[u8]) -> Message {
    let h = Header::from_prefix(frame).unwrap();
    Message::decode_message(h.wire_extension_type(), h.msg_type(), &frame[6..]).unwrap()
}

/// Deterministic chunk sizes: runs of 1-byte writes mixed with larger ones.
struct Chunks(u64);
impl Chunks {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        match (self.0 >> 33) % 8 {
            0..=2 => 1,
            3 => 2 + (self.0 >> 40) as usize % 16,
            _ => 1 + (self.0 >> 40) as usize % 8192,
        }
    }
}

async fn write_chunked(mut w: tokio::io::DuplexStream, bytes: Vec<u8>, seed: u64) {
    let mut chunks = Chunks(seed);
    let mut rest = &bytes[..];
    while !rest.is_empty() {
        let n = chunks.next().min(rest.len());
        w.write_all(&rest[..n]).await.unwrap();
        rest = &rest[n..];
    }
    w.shutdown().await.unwrap();
}

#[tokio::test]
async fn every_vector_decodes_through_framed_in_random_chunks() {
    let vectors = vectors();
    golden::assert_frames_cover_the_catalog(vectors.iter().map(|v| v.frame.as_slice()));
    let stream: Vec<u8> = vectors.iter().flat_map(|v| v.frame.clone()).collect();

    for seed in [1u64, 7, 42] {
        // Owned messages.
        let (r, w) = tokio::io::duplex(64 * 1024);
        let writer = tokio::spawn(write_chunked(w, stream.clone(), seed));
        let mut framed = FramedRead::new(r, Sv2Codec::<Message>::new());
        for (i, v) in vectors.iter().enumerate() {
            let got = framed.next().await.expect("a message").expect("decodes");
            assert_eq!(got, expected(&v.frame), "vector {i}, seed {seed}");
        }
        assert!(framed.next().await.is_none());
        writer.await.unwrap();

        // Pooled frames, byte-identical.
        let pool = BufferPool::new(8, 64 * 1024).unwrap();
        let (r, w) = tokio::io::duplex(64 * 1024);
        let writer = tokio::spawn(write_chunked(w, stream.clone(), seed + 1));
        let mut framed = FramedRead::new(r, FrameCodec::new(pool.clone()));
        for (i, v) in vectors.iter().enumerate() {
            let frame: Frame = framed.next().await.expect("a frame").expect("frames");
            assert_eq!(frame.to_vec(), v.frame, "vector {i}");
            assert_eq!(frame.decode::<Message>().unwrap(), expected(&v.frame));
            let view = frame.decode_ref::<Message>().unwrap();
            assert_eq!(view.to_owned_value(), expected(&v.frame));
        }
        assert!(framed.next().await.is_none());
        writer.await.unwrap();
        assert_eq!(pool.stats().in_use, 0);
    }
}

#[tokio::test]
async fn every_vector_encodes_through_framed_to_the_reference_bytes() {
    let vectors = vectors();
    let (r, w) = tokio::io::duplex(64 * 1024);
    let msgs: Vec<Message> = vectors.iter().map(|v| expected(&v.frame)).collect();
    let writer = tokio::spawn(async move {
        let mut framed = FramedWrite::new(w, Sv2Codec::<Message>::new());
        for (i, m) in msgs.iter().enumerate() {
            // By reference and by value, alternately.
            if i % 2 == 0 {
                framed.send(m).await.unwrap();
            } else {
                framed.send(m.clone()).await.unwrap();
            }
        }
        framed.into_inner().shutdown().await.unwrap();
    });
    let mut got = Vec::new();
    let mut r = r;
    r.read_to_end(&mut got).await.unwrap();
    writer.await.unwrap();

    // The TLV vectors re-encode without their tail (the codec encodes the message).
    let want: Vec<u8> = vectors
        .iter()
        .flat_map(|v| {
            if v.has_tlv {
                let m = expected(&v.frame);
                let mut f = Header::for_message(&m).unwrap().to_bytes().to_vec();
                f.extend(sv2c_binary::Encode::encode_to_vec(&m));
                f
            } else {
                v.frame.clone()
            }
        })
        .collect();
    assert_eq!(got.len(), want.len());
    assert!(
        got == want,
        "encoded stream differs from the reference frames"
    );
}
