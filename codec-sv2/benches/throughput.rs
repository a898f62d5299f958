//! Decode throughput of a stream of SubmitSharesStandard frames (30 bytes each):
//! `FramedRead` over an in-memory stream with the owned codec and with the frame codec,
//! plus the sans-io decoder, all on one core.
//!
//! `cargo bench -p sv2c-codec --bench throughput`

// `criterion_group!` generates an undocumented `pub fn`.
#![allow(missing_docs)]

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use sv2c_binary::messages::{Message, SubmitSharesStandard};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{FrameCodec, FrameDecoder, Sv2Codec};
use tokio_util::codec::{Encoder, FramedRead};

const FRAMES: usize = 100_000;

fn stream() -> Vec<u8> {
    let mut codec = Sv2Codec::<Message>::new();
    let mut out = BytesMut::with_capacity(FRAMES * 30);
    for i in 0..FRAMES as u32 {
        let share = SubmitSharesStandard {
            channel_id: i % 64,
            sequence_number: i,
            job_id: i / 100,
            nonce: i.wrapping_mul(2_654_435_761),
            ntime: 0x6650_0000,
            version: 0x2000_0000,
        };
        codec.encode(share, &mut out).expect("encodes");
    }
    out.to_vec()
}

fn bench(c: &mut Criterion) {
    let bytes = stream();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let mut g = c.benchmark_group("framed_decode_submit_shares_standard");
    g.throughput(Throughput::Elements(FRAMES as u64));
    g.sample_size(20);

    g.bench_function("owned_sv2codec", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut framed =
                    FramedRead::with_capacity(&bytes[..], Sv2Codec::<Message>::new(), 64 * 1024);
                let mut n = 0u64;
                while let Some(m) = framed.next().await {
                    if let Ok(Message::SubmitSharesStandard(s)) = m {
                        n += u64::from(s.nonce & 1);
                    }
                }
                black_box(n)
            })
        })
    });

    let pool = BufferPool::new(8, 4096).expect("pool");
    g.bench_function("frames_framecodec", |b| {
        b.iter(|| {
            rt.block_on(async {
                let codec = FrameCodec::new(pool.clone());
                let mut framed = FramedRead::with_capacity(&bytes[..], codec, 64 * 1024);
                let mut n = 0u64;
                while let Some(f) = framed.next().await {
                    if let Ok(f) = f {
                        n += u64::from(f.channel_id().unwrap_or(0) & 1);
                    }
                }
                black_box(n)
            })
        })
    });

    g.bench_function("frames_framecodec_then_owned", |b| {
        b.iter(|| {
            rt.block_on(async {
                let codec = FrameCodec::new(pool.clone());
                let mut framed = FramedRead::with_capacity(&bytes[..], codec, 64 * 1024);
                let mut n = 0u64;
                while let Some(f) = framed.next().await {
                    if let Ok(Ok(Message::SubmitSharesStandard(s))) =
                        f.map(|f| f.decode::<Message>())
                    {
                        n += u64::from(s.nonce & 1);
                    }
                }
                black_box(n)
            })
        })
    });

    g.bench_function("sans_io_decoder", |b| {
        b.iter(|| {
            let mut dec = FrameDecoder::new(pool.clone());
            let mut input = &bytes[..];
            let mut n = 0u64;
            while let Ok(Some(f)) = dec.decode_from(&mut input) {
                n += u64::from(f.channel_id().unwrap_or(0) & 1);
            }
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
