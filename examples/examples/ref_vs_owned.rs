//! `ref_vs_owned`: the same frames decoded borrowed and owned, with the buffer pool's
//! statistics after each one, to show what "a `Ref` pins its slot" means.
//!
//! Twelve `NewExtendedMiningJob` frames go through a `FrameCodec` whose pool has eight
//! slots.
//!
//! * **Borrowed**: a `MessageRef` points into its frame's payload, so the frame, and its
//!   pool slot, must live as long as the view. Holding twelve views means holding twelve
//!   frames: the pool runs out after eight and the last four frames come from the heap
//!   (counted as `fallback_exhausted`; nothing blocks).
//! * **Owned**: a `Message` has no lifetime. Decode it, drop the frame, and the slot is
//!   free for the next frame: one slot serves all twelve.
//!
//! Run it from the workspace root: `cargo run --example ref_vs_owned`. It checks its own
//! output with `assert!`s.

use std::error::Error;

use sv2c_binary::messages::{Message, MessageRef, NewExtendedMiningJob, encode_frame_into};
use sv2c_binary::{B064K, Seq0255, U256};
use sv2c_buffer_pool::{BufferPool, PoolStats};
use sv2c_codec::{Frame, FrameCodec};
use tokio_util::bytes::BytesMut;
use tokio_util::codec::Decoder;

const FRAMES: u32 = 12;
const SLOTS: usize = 8;

fn job(i: u32) -> Result<NewExtendedMiningJob, Box<dyn Error>> {
    Ok(NewExtendedMiningJob {
        channel_id: 1,
        job_id: i,
        min_ntime: None,
        version: 0x2000_0000,
        version_rolling_allowed: true,
        merkle_path: Seq0255::from_slice(&[U256([i as u8; 32]), U256([0x22; 32])])?,
        coinbase_tx_prefix: B064K::try_from(vec![0x01; 42])?,
        coinbase_tx_suffix: B064K::try_from(vec![0x02; 60])?,
    })
}

fn line(after: &str, s: &PoolStats) {
    println!(
        "  {after:<22} in_use {}/{}  high_water {}  fallbacks {}",
        s.in_use,
        s.capacity,
        s.high_water,
        s.fallbacks()
    );
}

/// Decodes the frames both ways and prints the pool statistics (`pub` so that the
/// crate's tests can run it).
pub fn main() -> Result<(), Box<dyn Error>> {
    // The byte stream: twelve frames back to back, as a socket would deliver them.
    let mut wire = BytesMut::new();
    let mut jobs = Vec::new();
    for i in 0..FRAMES {
        let msg = Message::from(job(i)?);
        encode_frame_into(&msg, &mut wire)?;
        jobs.push(msg);
    }
    println!(
        "{FRAMES} NewExtendedMiningJob frames ({} bytes each) through a FrameCodec on a pool of {SLOTS} slots\n",
        wire.len() / FRAMES as usize
    );

    // Borrowed: every view needs its frame.
    println!("borrowed (MessageRef borrows its Frame; the Frame holds its slot):");
    let pool = BufferPool::new(SLOTS, 1024)?;
    let mut codec = FrameCodec::new(pool.clone());
    let mut input = wire.clone();
    let mut frames: Vec<Frame> = Vec::new();
    while let Some(frame) = codec.decode(&mut input)? {
        frames.push(frame);
        line(&format!("frame {:>2} kept:", frames.len()), &pool.stats());
    }
    let views: Vec<MessageRef<'_>> = frames
        .iter()
        .map(|f| f.decode_ref::<Message>())
        .collect::<Result<_, _>>()?;
    let s = pool.stats();
    line(&format!("{} views alive:", views.len()), &s);
    assert_eq!((s.in_use, s.high_water), (SLOTS, SLOTS));
    assert_eq!(s.fallback_exhausted, u64::from(FRAMES) - SLOTS as u64);
    assert_eq!(
        frames.iter().filter(|f| !f.is_pooled()).count(),
        FRAMES as usize - SLOTS
    );
    for (view, original) in views.iter().zip(&jobs) {
        assert_eq!(&view.to_owned_value(), original);
    }
    drop(views);
    drop(frames);
    line("views dropped:", &pool.stats());
    assert_eq!(pool.stats().in_use, 0);

    // Owned: decode, drop the frame, keep the message.
    println!("\nowned (Message has no lifetime; each frame is dropped after decoding):");
    let pool = BufferPool::new(SLOTS, 1024)?;
    let mut codec = FrameCodec::new(pool.clone());
    let mut input = wire.clone();
    let mut messages: Vec<Message> = Vec::new();
    while let Some(frame) = codec.decode(&mut input)? {
        messages.push(frame.decode::<Message>()?);
        drop(frame);
        line(
            &format!("message {:>2} kept:", messages.len()),
            &pool.stats(),
        );
    }
    let s = pool.stats();
    assert_eq!((s.in_use, s.high_water, s.fallbacks()), (0, 1, 0));
    assert_eq!(messages, jobs);
    println!(
        "\n{} owned messages alive, {} slots in use; the borrowed run needed {SLOTS} slots and {} heap fallbacks",
        messages.len(),
        s.in_use,
        u64::from(FRAMES) - SLOTS as u64
    );
    Ok(())
}
