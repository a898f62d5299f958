//! Loopback TCP: several concurrent connections share one pool, many thousands of
//! messages each; none lost, in order, and the pool's `in_use` is back to 0 at the end.

use futures::{SinkExt, StreamExt};
use sv2c_binary::{B064K, Wire, WireRef};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::{FrameCodec, Sv2Codec};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::Framed;

#[derive(Debug, Clone, PartialEq, Eq, Wire)]
#[sv2(msg_type = 0x1b, channel_msg)]
struct Share {
    channel_id: u32,
    sequence_number: u32,
    job_id: u32,
    nonce: u32,
    ntime: u32,
    version: u32,
    extra: B064K,
}

const CONNECTIONS: u32 = 4;
const MESSAGES: u32 = 5_000;

fn share(conn: u32, i: u32) -> Share {
    Share {
        channel_id: conn,
        sequence_number: i,
        job_id: i / 7,
        nonce: i.wrapping_mul(2_654_435_761),
        ntime: 0x6650_0000 + i,
        version: 0x2000_0000,
        extra: B064K::try_from(vec![conn as u8; (i % 97) as usize]).unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_connections_share_one_pool() {
    let pool = BufferPool::new(8, 4096).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();

    // Server: one task per connection, frames from the shared pool; each frame is
    // decoded borrowed, checked, and dropped on whichever worker runs the task.
    let server_pool = pool.clone();
    let server = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..CONNECTIONS {
            let (sock, _) = listener.accept().await.unwrap();
            let codec = FrameCodec::new(server_pool.clone());
            tasks.push(tokio::spawn(async move {
                let mut framed = Framed::new(sock, codec);
                let mut count = 0u32;
                let mut conn = None;
                while let Some(frame) = framed.next().await {
                    let frame = frame.unwrap();
                    let view = frame.decode_ref::<Share>().unwrap();
                    let c = *conn.get_or_insert(view.channel_id);
                    assert_eq!(
                        view.to_owned_value(),
                        share(c, count),
                        "message lost or reordered"
                    );
                    count += 1;
                }
                count
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        total
    });

    let mut clients = Vec::new();
    for conn in 0..CONNECTIONS {
        clients.push(tokio::spawn(async move {
            let sock = TcpStream::connect(addr).await.unwrap();
            let mut framed = Framed::new(sock, Sv2Codec::<Share>::for_set());
            for i in 0..MESSAGES {
                framed.feed(share(conn, i)).await.unwrap();
            }
            SinkExt::<Share>::flush(&mut framed).await.unwrap();
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    assert_eq!(server.await.unwrap(), CONNECTIONS * MESSAGES);
    let stats = pool.stats();
    assert_eq!(stats.in_use, 0);
    assert_eq!(stats.acquisitions(), u64::from(CONNECTIONS * MESSAGES));
    assert!(stats.high_water <= stats.capacity);
}
