//! A peer that announces a large frame and sends little costs memory proportional to
//! what it sent. Measured with an allocator that tracks this thread's live and peak bytes.

use bytes::BytesMut;
use sv2c_binary::{B064K, Wire};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{FrameCodec, FrameDecoder, Sv2Codec};
use tokio_util::codec::Decoder;

#[derive(Debug, Wire)]
#[sv2(msg_type = 0x01)]
struct Data {
    data: B064K,
}

#[path = "../../binary-sv2/tests/fuzz_checks/alloc.rs"]
#[allow(dead_code, unreachable_pub)]
mod alloc;

#[global_allocator]
static GLOBAL: alloc::Tracking = alloc::Tracking;

/// Peak of live bytes above the starting level while `f` runs.
fn peak_during(f: impl FnOnce()) -> usize {
    alloc::peak_during(f).1
}

/// Header announcing 16 MiB − 1 bytes (msg_length ff ff ff), then 6 payload bytes.
const HOSTILE: [u8; 12] = [0x00, 0x00, 0x01, 0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 6];

#[test]
fn sans_io_decoder_memory_follows_the_bytes_received() {
    let pool = BufferPool::new(2, 1024).unwrap();
    let mut dec = FrameDecoder::new(pool);
    let peak = peak_during(|| {
        let mut input = &HOSTILE[..];
        assert!(dec.decode_from(&mut input).unwrap().is_none());
    });
    assert!(peak <= 64 * 1024, "peak {peak} bytes for 12 received");
    assert_eq!(dec.buffered(), 12);

    // Keep feeding: memory stays within ~2x what arrived plus one growth step.
    let chunk = [0u8; 4096];
    let mut received = 12usize;
    let peak = peak_during(|| {
        for _ in 0..64 {
            let mut input = &chunk[..];
            assert!(dec.decode_from(&mut input).unwrap().is_none());
            received += chunk.len();
        }
    });
    assert!(
        peak <= 2 * received + 64 * 1024,
        "peak {peak} for {received} received"
    );
}

#[test]
fn tokio_decoders_do_not_reserve_what_the_header_announces() {
    for which in 0..2 {
        let pool = BufferPool::new(2, 1024).unwrap();
        let mut frames = FrameCodec::new(pool);
        let mut owned = Sv2Codec::<Data>::for_set();
        let mut src = BytesMut::new();
        let peak = peak_during(|| {
            src.extend_from_slice(&HOSTILE);
            // What FramedRead does: decode, and on `None` read more into the buffer.
            for _ in 0..8 {
                let got = if which == 0 {
                    frames.decode(&mut src).unwrap().is_some()
                } else {
                    owned.decode(&mut src).unwrap().is_some()
                };
                assert!(!got);
                src.extend_from_slice(&[0u8; 512]);
            }
        });
        // At most twice what arrived, or 1 KiB ahead of it (a reallocation holds both
        // the old buffer and the new one for a moment).
        assert!(
            peak <= 16 * 1024,
            "codec {which}: peak {peak} bytes for ~4 KiB received"
        );
    }
}
