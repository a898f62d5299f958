//! The writer: one task per pool connection that writes the router's frames and the
//! miners' forwarded reads to the pool, in batches.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Sink, SinkExt};
use sv2c_codec::{CodecError, Frame};
use tokio::sync::mpsc;

use super::messages::{Forwarded, RouterCmd, Upward};
use super::shared::{Counters, Shared};

/// Most frames written to the pool between two flushes.
const WRITE_BATCH: usize = 256;

/// The writing half of a pool connection, as a writer task holds it.
pub(crate) type UpstreamWriter = Pin<Box<dyn Sink<Upward, Error = CodecError> + Send>>;

/// Writes frames to the pool: control frames (from the router) first, then what the
/// miners' reads forward, flushing once per batch. Once the queues are empty the writer
/// yields once before it flushes, so that the miners the runtime has ready, or finds
/// ready when it next polls its sockets, add their reads to the batch: under load one
/// write carries several miners' shares instead of one read's.
///
/// A batch's write must finish within
/// [`ProxyConfig::write_timeout`](super::ProxyConfig::write_timeout): a pool that stops
/// reading (or a path to it that lost it) fills the socket's buffer, and the proxy then
/// tells the router the pool is gone ([`RouterCmd::WriteFailed`]) rather than holding every
/// miner's shares.
///
/// `generation` names the pool connection in [`RouterCmd::WriteFailed`]: the writer of a
/// connection the router left already may still be writing what was queued for it.
pub(crate) async fn write_upstream<K>(
    mut sink: K,
    mut data: mpsc::Receiver<Forwarded>,
    mut control: mpsc::UnboundedReceiver<Frame>,
    shared: Arc<Shared>,
    router: mpsc::UnboundedSender<RouterCmd>,
    generation: u64,
) where
    K: Sink<Upward, Error = CodecError> + Unpin,
{
    let limit = shared.config.write_timeout;
    let result: Result<(), CodecError> = async {
        loop {
            let (first, mut n) = tokio::select! {
                biased;
                Some(f) = control.recv() => (Upward::Frame(f), 1),
                Some(f) = data.recv() => {
                    let n = f.frames;
                    (Upward::Forwarded(f), n)
                }
                else => return Ok(()),
            };
            let write = async {
                sink.feed(first).await?;
                let mut yielded = false;
                while n < WRITE_BATCH {
                    if let Ok(f) = control.try_recv() {
                        sink.feed(Upward::Frame(f)).await?;
                        n += 1;
                    } else if let Ok(f) = data.try_recv() {
                        n += f.frames;
                        sink.feed(Upward::Forwarded(f)).await?;
                    } else if !yielded {
                        yielded = true;
                        tokio::task::yield_now().await;
                    } else {
                        break;
                    }
                }
                sink.flush().await
            };
            crate::in_time(limit, write).await?;
            Counters::add(&shared.counters.frames_to_upstream, n as u64);
        }
    }
    .await;
    if let Err(e) = result {
        tracing::warn!("upstream write failed: {e}");
        let _ = router.send(RouterCmd::WriteFailed { generation });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_binary::messages::SubmitSharesStandard;
    use sv2c_buffer_pool::BufferPool;
    use sv2c_codec::FrameCodec;
    use tokio_util::bytes::BytesMut;
    use tokio_util::codec::{Decoder, Encoder};

    #[test]
    fn forwarded_frames_reach_the_wire_intact_but_for_the_channel_id() {
        let pool = BufferPool::new(4, 256).unwrap();
        let share = SubmitSharesStandard {
            channel_id: 7,
            sequence_number: 9,
            job_id: 3,
            nonce: 0xdead_beef,
            ntime: 1_700_000_000,
            version: 0x2000_0000,
        };
        let frame = Frame::from_message(&share, &pool).unwrap();
        let h = frame.header();
        // A channel message of an unknown extension, and a payload too short for a
        // channel id.
        let unknown = [7, 0, 0, 0, 1, 2, 3];
        let mut forwarded = Forwarded::default();
        assert!(forwarded.push(h.wire_extension_type(), h.msg_type(), 42, frame.payload()));
        assert!(forwarded.push(0x8000 | 0x4001, 5, 43, &unknown));
        assert!(!forwarded.push(0x8000 | 0x4001, 5, 43, &unknown[..3]));
        assert_eq!(forwarded.frames, 2);

        let mut codec = FrameCodec::new(pool.clone());
        let mut wire = BytesMut::new();
        codec
            .encode(Upward::Forwarded(forwarded), &mut wire)
            .unwrap();
        let first = codec.decode(&mut wire).unwrap().unwrap();
        assert_eq!(
            first.decode::<SubmitSharesStandard>().unwrap(),
            SubmitSharesStandard {
                channel_id: 42,
                ..share
            }
        );
        let second = codec.decode(&mut wire).unwrap().unwrap();
        assert_eq!(
            (
                second.header().wire_extension_type(),
                second.header().msg_type()
            ),
            (0x8000 | 0x4001, 5)
        );
        assert_eq!(second.payload(), [43, 0, 0, 0, 1, 2, 3]);
        assert!(wire.is_empty());
    }

    /// A sink that records how many frames each flush carried.
    struct Flushes {
        pending: usize,
        flushed: Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl Sink<Upward> for Flushes {
        type Error = CodecError;

        fn poll_ready(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), CodecError>> {
            std::task::Poll::Ready(Ok(()))
        }

        fn start_send(mut self: std::pin::Pin<&mut Self>, item: Upward) -> Result<(), CodecError> {
            self.pending += match item {
                Upward::Frame(_) => 1,
                Upward::Forwarded(f) => f.frames,
            };
            Ok(())
        }

        fn poll_flush(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), CodecError>> {
            let n = std::mem::take(&mut self.pending);
            if n > 0 {
                self.flushed.lock().unwrap().push(n);
            }
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_close(
            self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Result<(), CodecError>> {
            self.poll_flush(cx)
        }
    }

    /// Miners whose reads become ready while the writer has a batch join it: the writer,
    /// woken by the first read, yields before it flushes, and the runtime polls its
    /// sockets meanwhile. A read that comes after that write gets a write of its own.
    #[test]
    fn reads_ready_at_the_next_poll_share_the_upstream_write() {
        use std::io::Write;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let flushed = Arc::new(std::sync::Mutex::new(Vec::new()));
        runtime.block_on(async {
            let (data_tx, data) = mpsc::channel(16);
            let (control_tx, control) = mpsc::unbounded_channel();
            let (router, _router_rx) = mpsc::unbounded_channel();
            let shared = Arc::new(Shared::for_tests());
            let sink = Flushes {
                pending: 0,
                flushed: flushed.clone(),
            };
            let writer = tokio::spawn(write_upstream(sink, data, control, shared, router, 0));
            let read = |channel| {
                let mut f = Forwarded::default();
                assert!(f.push(0, 0x1a, channel, &[0; 24]));
                f
            };
            // Two miners waiting for their sockets, as the proxy's do.
            let mut peers = Vec::new();
            let mut miners = Vec::new();
            for i in 1..=2u32 {
                let (mine, peer) = std::os::unix::net::UnixStream::pair().unwrap();
                mine.set_nonblocking(true).unwrap();
                let mine = tokio::net::UnixStream::from_std(mine).unwrap();
                let (tx, f) = (data_tx.clone(), read(i));
                miners.push(tokio::spawn(async move {
                    mine.readable().await.unwrap();
                    tx.send(f).await.is_ok()
                }));
                peers.push(peer);
            }
            tokio::task::yield_now().await;
            // Their data arrives as a third miner's read reaches the writer.
            for peer in &mut peers {
                peer.write_all(b"x").unwrap();
            }
            data_tx.send(read(0)).await.unwrap();
            for m in miners {
                assert!(m.await.unwrap());
            }
            while flushed.lock().unwrap().is_empty() {
                tokio::task::yield_now().await;
            }
            data_tx.send(read(9)).await.unwrap();
            drop((data_tx, control_tx));
            writer.await.unwrap();
        });
        assert_eq!(*flushed.lock().unwrap(), [3, 1]);
    }
}
