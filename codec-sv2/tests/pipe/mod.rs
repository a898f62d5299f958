//! A peer writing a byte stream into an in-memory pipe in pieces, for the read-loop tests
//! (`read_batch.rs`, `read_batch_frames.rs`).
// Each test file uses part of this module.
#![allow(dead_code)]

use tokio::io::{AsyncWriteExt, DuplexStream, duplex};
use tokio::task::JoinHandle;

/// Writes `bytes` to `io` in pieces of `piece` bytes, yielding between them, then closes it.
pub(crate) async fn write_in_pieces(mut io: DuplexStream, bytes: Vec<u8>, piece: usize) {
    for chunk in bytes.chunks(piece) {
        io.write_all(chunk).await.unwrap();
        tokio::task::yield_now().await;
    }
    io.shutdown().await.unwrap();
}

/// The read end of a pipe holding at most `capacity` bytes, into which a task writes
/// `stream` in pieces of the sizes `pieces` gives (cycling through them), yielding between
/// pieces, then closes it. The task stops early, without panicking, if the reader goes away
/// (a reader that stopped at a fatal error).
pub(crate) fn pipe_in_pieces(
    stream: Vec<u8>,
    pieces: Vec<usize>,
    capacity: usize,
) -> (DuplexStream, JoinHandle<()>) {
    let (mut tx, rx) = duplex(capacity);
    let writer = tokio::spawn(async move {
        let mut rest = &stream[..];
        for &p in pieces.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (now, later) = rest.split_at(p.min(rest.len()));
            if tx.write_all(now).await.is_err() {
                return;
            }
            rest = later;
            tokio::task::yield_now().await;
        }
        let _ = tx.shutdown().await;
    });
    (rx, writer)
}
