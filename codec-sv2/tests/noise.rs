//! `sv2c_codec::noise`: handshakes over real streams (duplex and loopback TCP), owned
//! messages and pooled frames through `NoiseCodec`, chunk boundaries, fragmented
//! ciphertext, hostile input, allocation in steady state, and interop with the reference
//! implementation (`noise_sv2` 2 / `codec_sv2` 7) on both roles.
#![cfg(feature = "noise")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::ErrorKind;
use std::time::Duration;

use bytes::BytesMut;
use futures::{SinkExt, StreamExt};
use sv2c_binary::{B064K, Wire, WireRef};
use sv2c_buffer_pool::BufferPool;
use sv2c_codec::noise::{
    self, ACT1_LEN, ACT2_LEN, AuthorityKeypair, AuthorityPublicKey, EphemeralKey, Initiator,
    NoiseCodec, NoiseError, Responder, StaticKeypair, Transport, unix_time_now, wire_len,
};
use sv2c_codec::{CodecError, Frame, FrameCodec, PayloadTooLarge, Sv2Codec};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, DuplexStream, duplex};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Decoder, Encoder, Framed};

// ===== messages =====

#[derive(Debug, Clone, PartialEq, Eq, Wire)]
#[sv2(msg_type = 0x1a, channel_msg)]
struct Share {
    channel_id: u32,
    sequence_number: u32,
    job_id: u32,
    nonce: u32,
    ntime: u32,
    version: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Wire)]
#[sv2(extension_type = 0x4001, msg_type = 0x02)]
struct Blob {
    id: u32,
    data: B064K,
}

fn share(channel_id: u32, i: u32) -> Share {
    Share {
        channel_id,
        sequence_number: i,
        job_id: i / 3,
        nonce: 0xdead_beef ^ i,
        ntime: 0x6650_0000 + i,
        version: 0x2000_0000,
    }
}

fn blob(id: u32, len: usize) -> Blob {
    Blob {
        id,
        data: B064K::try_from(
            (0..len)
                .map(|i| (i * 31 + id as usize) as u8)
                .collect::<Vec<_>>(),
        )
        .unwrap(),
    }
}

/// The plaintext Sv2 frame of a message, as the plain codec writes it.
fn plaintext<T: sv2c_binary::Frameable>(msg: &T) -> Vec<u8> {
    let mut dst = BytesMut::new();
    Sv2Codec::<Share>::for_set().encode(msg, &mut dst).unwrap();
    dst.to_vec()
}

// ===== setup =====

/// An authority and a responder holding a certificate it signed, valid for an hour.
fn server() -> (AuthorityKeypair, Responder) {
    let authority = AuthorityKeypair::generate().unwrap();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 60,
        now + 3_600,
    )
    .unwrap();
    (authority, responder)
}

/// A handshake run in memory: (client transport, server transport).
fn transports() -> (Transport, Transport) {
    let (authority, responder) = server();
    let (act1, initiator) = Initiator::new(authority.public_key()).unwrap().step_1();
    let (act2, server) = responder.step(&act1).unwrap();
    let client = initiator.step_2(&act2, unix_time_now()).unwrap();
    (client, server)
}

/// Client and server `Framed`s over a duplex pipe of `buf` bytes, handshake done by
/// `connect` / `accept`.
async fn framed_pair<C, D>(
    buf: usize,
    client_codec: C,
    server_codec: D,
) -> (
    Framed<DuplexStream, NoiseCodec<C>>,
    Framed<DuplexStream, NoiseCodec<D>>,
)
where
    C: noise::PayloadLimit,
    D: noise::PayloadLimit,
{
    let (authority, responder) = server();
    let (client_io, server_io) = duplex(buf);
    let (client, server) = tokio::join!(
        noise::connect(
            client_io,
            Initiator::new(authority.public_key()).unwrap(),
            client_codec
        ),
        noise::accept(server_io, &responder, server_codec),
    );
    (client.unwrap(), server.unwrap())
}

/// Deterministic xorshift64* for chunk sizes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A pooled frame of `len` payload bytes with a recognisable pattern.
fn pattern_frame(pool: &BufferPool, msg_type: u8, len: usize) -> Frame {
    let mut payload = pool.acquire(len);
    for (i, b) in payload.iter_mut().enumerate() {
        *b = (i.wrapping_mul(7) ^ (i >> 8) ^ msg_type as usize) as u8;
    }
    Frame::new(0x0003, msg_type, payload).unwrap()
}

// ===== allocation counting (this thread only) =====

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count() {
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards every call unchanged to the system allocator; the counter is a
// const-initialised thread-local that never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ===== owned messages over real streams =====

#[tokio::test]
async fn duplex_handshake_then_owned_messages_both_ways() {
    // A small pipe: the handshake acts and the frames arrive in several reads.
    let (mut client, mut server) = framed_pair(
        100,
        Sv2Codec::<Share>::for_set(),
        Sv2Codec::<Share>::for_set(),
    )
    .await;

    // What each side learned from the handshake.
    assert_eq!(
        client.codec().handshake_hash(),
        server.codec().handshake_hash()
    );
    let cert = client.codec().server_certificate().expect("client sees it");
    assert!(cert.valid_from() <= unix_time_now());
    assert!(client.codec().server_static_key().is_some());
    assert!(server.codec().server_certificate().is_none());

    let echo = tokio::spawn(async move {
        let mut n = 0;
        while let Some(msg) = server.next().await {
            let mut msg = msg.unwrap();
            msg.nonce = msg.nonce.wrapping_add(1);
            server.send(msg).await.unwrap();
            n += 1;
        }
        n
    });
    for i in 0..200 {
        client.send(share(5, i)).await.unwrap();
        let back = client.next().await.unwrap().unwrap();
        let mut expected = share(5, i);
        expected.nonce = expected.nonce.wrapping_add(1);
        assert_eq!(back, expected);
    }
    drop(client);
    assert_eq!(echo.await.unwrap(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_tcp_several_connections() {
    const CONNECTIONS: u32 = 3;
    const MESSAGES: u32 = 300;
    let (authority, responder) = server();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();

    let server = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..CONNECTIONS {
            let (sock, _) = listener.accept().await.unwrap();
            let responder = responder.clone();
            tasks.push(tokio::spawn(async move {
                let mut framed = noise::accept(sock, &responder, Sv2Codec::<Blob>::for_set())
                    .await
                    .unwrap();
                let mut n = 0;
                while let Some(msg) = framed.next().await {
                    let msg = msg.unwrap();
                    // Answer with a different size so both directions vary.
                    let len = msg.data.len();
                    framed.send(blob(msg.id, (len * 3) % 5000)).await.unwrap();
                    n += 1;
                }
                n
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        total
    });

    let mut clients = Vec::new();
    for c in 0..CONNECTIONS {
        let key = authority.public_key();
        clients.push(tokio::spawn(async move {
            let sock = TcpStream::connect(addr).await.unwrap();
            let mut framed = noise::connect(
                sock,
                Initiator::new(key).unwrap(),
                Sv2Codec::<Blob>::for_set(),
            )
            .await
            .unwrap();
            for i in 0..MESSAGES {
                let len = ((i * 37 + c * 11) % 3000) as usize;
                framed.send(blob(i, len)).await.unwrap();
                let back = framed.next().await.unwrap().unwrap();
                assert_eq!(back, blob(i, (len * 3) % 5000));
            }
        }));
    }
    for c in clients {
        c.await.unwrap();
    }
    assert_eq!(server.await.unwrap(), CONNECTIONS * MESSAGES);
}

// ===== pooled frames =====

#[tokio::test]
async fn proxy_forwards_pooled_frames_with_channel_rewrite() {
    const N: u32 = 100;
    let pool = BufferPool::new(8, 256).unwrap();
    let (authority, responder) = server();
    let (down_client_io, down_proxy_io) = duplex(4096);
    let (up_proxy_io, up_server_io) = duplex(4096);

    // Upstream: owned messages; checks the rewritten channel id and echoes.
    let up_responder = responder.clone();
    let upstream = tokio::spawn(async move {
        let mut framed = noise::accept(up_server_io, &up_responder, Sv2Codec::<Share>::for_set())
            .await
            .unwrap();
        let mut n = 0;
        while let Some(msg) = framed.next().await {
            let msg = msg.unwrap();
            assert_eq!(msg, share(1000 + n % 4, n));
            framed.send(msg).await.unwrap();
            n += 1;
        }
        n
    });

    // Proxy: frames from one pool on both connections, channel id rewritten in place.
    let proxy_pool = pool.clone();
    let key = authority.public_key();
    let proxy = tokio::spawn(async move {
        let (down, up) = tokio::join!(
            noise::accept(
                down_proxy_io,
                &responder,
                FrameCodec::new(proxy_pool.clone())
            ),
            noise::connect(
                up_proxy_io,
                Initiator::new(key).unwrap(),
                FrameCodec::new(proxy_pool.clone())
            ),
        );
        let (mut down, mut up) = (down.unwrap(), up.unwrap());
        while let Some(frame) = down.next().await {
            let mut frame = frame.unwrap();
            assert!(frame.is_pooled());
            let id = frame.channel_id().unwrap();
            frame.set_channel_id(id + 1000).unwrap();
            up.send(frame).await.unwrap();

            let mut answer = up.next().await.unwrap().unwrap();
            let id = answer.channel_id().unwrap();
            answer.set_channel_id(id - 1000).unwrap();
            down.send(&answer).await.unwrap();
        }
    });

    let mut client = noise::connect(
        down_client_io,
        Initiator::new(authority.public_key()).unwrap(),
        Sv2Codec::<Share>::for_set(),
    )
    .await
    .unwrap();
    for i in 0..N {
        client.send(share(i % 4, i)).await.unwrap();
        assert_eq!(client.next().await.unwrap().unwrap(), share(i % 4, i));
    }
    drop(client);
    proxy.await.unwrap();
    assert_eq!(upstream.await.unwrap(), N);

    let stats = pool.stats();
    assert_eq!(stats.in_use, 0, "every frame released");
    assert_eq!(
        stats.pooled,
        2 * u64::from(N),
        "one slot per frame read by the proxy"
    );
    assert_eq!(stats.fallbacks(), 0);
}

#[tokio::test]
async fn frames_across_chunk_boundaries_both_ways() {
    // 65 519 is one full chunk, 65 520 the first size needing two.
    let sizes = [0, 1, 65_519, 65_520, 1 << 20];
    let pool = BufferPool::new(4, 4096).unwrap();
    let (mut client, mut server) = framed_pair(
        64 * 1024,
        FrameCodec::new(pool.clone()),
        FrameCodec::new(pool.clone()),
    )
    .await;
    let echo = tokio::spawn(async move {
        while let Some(frame) = server.next().await {
            let frame = frame.unwrap();
            server.send(frame).await.unwrap();
        }
    });
    for (i, &len) in sizes.iter().enumerate() {
        let frame = pattern_frame(&pool, i as u8, len);
        let expected = frame.to_vec();
        client.send(frame).await.unwrap();
        let back = client.next().await.unwrap().unwrap();
        assert_eq!(back.header().msg_length(), len);
        assert!(back.to_vec() == expected, "{len}-byte payload changed");
    }
    drop(client);
    echo.await.unwrap();
    assert_eq!(pool.stats().in_use, 0);
}

#[test]
fn ciphertext_size_is_wire_len_of_the_payload() {
    let pool = BufferPool::new(2, 64).unwrap();
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, FrameCodec::new(pool.clone()));
    let mut rx = NoiseCodec::new(server, FrameCodec::new(pool.clone()));
    for len in [0, 1, 65_519, 65_520, 140_009, 1 << 20] {
        let frame = pattern_frame(&pool, 9, len);
        let expected = frame.to_vec();
        let mut wire = BytesMut::new();
        tx.encode(&frame, &mut wire).unwrap();
        assert_eq!(wire.len(), wire_len(len), "{len}");
        let chunks = len.div_ceil(65_519);
        assert_eq!(wire.len(), 22 + len + 16 * chunks);

        let got = rx.decode(&mut wire).unwrap().expect("one frame");
        assert!(wire.is_empty());
        assert!(got.to_vec() == expected);
        assert_eq!(rx.decode(&mut wire).unwrap().map(|f| f.header()), None);
    }
}

// ===== fragmented ciphertext =====

#[test]
fn every_split_of_an_encrypted_frame_yields_it_once() {
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
    let mut rx = NoiseCodec::new(server, Sv2Codec::<Share>::for_set());
    for i in 0..=62u32 {
        let mut wire = BytesMut::new();
        tx.encode(share(1, i), &mut wire).unwrap();
        assert_eq!(wire.len(), 62); // 22 + 24 + 16
        let cut = i as usize;
        let mut first = BytesMut::from(&wire[..cut]);
        let got = rx.decode(&mut first).unwrap();
        assert!(first.is_empty(), "all ciphertext taken in");
        let got = match got {
            Some(m) => {
                assert_eq!(cut, 62);
                m
            }
            None => {
                let mut second = BytesMut::from(&wire[cut..]);
                let m = rx.decode(&mut second).unwrap().expect("complete");
                assert!(second.is_empty());
                m
            }
        };
        assert_eq!(got, share(1, i));
        assert_eq!(rx.decode(&mut BytesMut::new()).unwrap(), None);
    }
}

#[test]
fn decode_all_with_hands_out_every_decrypted_message_from_any_pieces() {
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
    let mut rx = NoiseCodec::new(server, Sv2Codec::<Share>::for_set());
    let mut wire = BytesMut::new();
    for i in 0..200u32 {
        tx.encode(share(1, i), &mut wire).unwrap();
    }
    let mut got = Vec::new();
    let mut buf = BytesMut::new();
    let mut handed = 0;
    // Pieces of 1 to 97 bytes: every kind of cut through headers, payloads and MACs.
    for (k, piece) in wire
        .chunks(1)
        .take(70)
        .chain(wire[70..].chunks(97))
        .enumerate()
    {
        buf.extend_from_slice(piece);
        handed += rx
            .decode_all_with(&mut buf, |s: &Share| got.push(s.clone()))
            .unwrap();
        assert!(
            buf.is_empty(),
            "piece {k}: the decryptor takes all ciphertext in"
        );
    }
    assert_eq!(handed, 200);
    assert_eq!(got, (0..200).map(|i| share(1, i)).collect::<Vec<_>>());

    // A damaged frame after two good ones: the two are handed out, then the typed error.
    let mut wire = BytesMut::new();
    for i in 200..203u32 {
        tx.encode(share(1, i), &mut wire).unwrap();
    }
    let last = wire.len() - 1;
    wire[last] ^= 1;
    let mut seqs = Vec::new();
    let err = rx
        .decode_all_with(&mut wire, |s: &Share| seqs.push(s.sequence_number))
        .unwrap_err();
    assert!(matches!(err, CodecError::Noise(_)), "{err:?}");
    assert_eq!(seqs, [200, 201]);
}

/// Writes `wire` into `io` in pieces of random sizes (many of one byte), yielding between
/// writes so the reader sees every kind of boundary.
async fn write_in_pieces(mut io: DuplexStream, wire: Vec<u8>, seed: u64) {
    let mut rng = Rng(seed);
    let mut rest = &wire[..];
    while !rest.is_empty() {
        let n = match rng.below(4) {
            0 => 1,
            1 => 1 + rng.below(8),
            2 => 1 + rng.below(100),
            _ => 1 + rng.below(5000),
        }
        .min(rest.len());
        io.write_all(&rest[..n]).await.unwrap();
        rest = &rest[n..];
        if rng.below(3) == 0 {
            tokio::task::yield_now().await;
        }
    }
    io.shutdown().await.unwrap();
}

/// Our client's encrypting codec for `Blob`s, and the server's transport.
fn blob_sender() -> (NoiseCodec<Sv2Codec<Blob>>, Transport) {
    let (client, server) = transports();
    (NoiseCodec::new(client, Sv2Codec::<Blob>::for_set()), server)
}

/// Sixty blobs of 0 to 65 535 bytes, and their ciphertext as `tx` encrypts them.
fn sixty_blobs(tx: &mut NoiseCodec<Sv2Codec<Blob>>) -> (Vec<Blob>, BytesMut) {
    let msgs: Vec<Blob> = (0..60u32)
        .map(|i| blob(i, [0, 1, 7, 300, 4000, 65_535][i as usize % 6]))
        .collect();
    let mut wire = BytesMut::new();
    for m in &msgs {
        tx.encode(m, &mut wire).unwrap();
    }
    (msgs, wire)
}

/// The server's `Framed` reading `wire` with `inner` inside its Noise codec; a task writes
/// `wire` in random pieces into a pipe that holds at most 7 bytes (so reads are fragmented
/// as well).
fn reader_in_pieces<C: noise::PayloadLimit>(
    server: Transport,
    wire: BytesMut,
    seed: u64,
    inner: C,
) -> (
    tokio::task::JoinHandle<()>,
    Framed<DuplexStream, NoiseCodec<C>>,
) {
    let (writer, reader) = duplex(7);
    let writing = tokio::spawn(write_in_pieces(writer, wire.to_vec(), seed));
    let framed = Framed::new(reader, NoiseCodec::new(server, inner));
    (writing, framed)
}

#[tokio::test]
async fn ciphertext_written_in_random_pieces() {
    for seed in [1, 0x5eed, 0xdead_beef, 42] {
        let (mut tx, server) = blob_sender();
        let (msgs, wire) = sixty_blobs(&mut tx);
        let (writing, mut framed) =
            reader_in_pieces(server, wire, seed, Sv2Codec::<Blob>::for_set());
        let mut got = Vec::new();
        while let Some(m) = framed.next().await {
            got.push(m.unwrap());
        }
        writing.await.unwrap();
        assert!(
            got == msgs,
            "seed {seed}: messages lost, changed or reordered"
        );
    }
}

/// Sixty blobs encrypted, then 10 bytes of one more frame, written in random pieces (`seed`)
/// to a server reading with `read_batch` and `inner` inside its Noise codec. Every item
/// goes to `each`; returns the blobs that were sent once the read has failed, after
/// checking that it failed with the Noise codec's truncation error.
async fn read_batch_until_truncated<C, F>(seed: u64, inner: C, mut each: F) -> Vec<Blob>
where
    C: noise::PayloadLimit + sv2c_codec::BatchDecoder,
    F: for<'a, 'b> FnMut(&'b C::Item<'a>),
{
    let (mut tx, server) = blob_sender();
    let (msgs, mut wire) = sixty_blobs(&mut tx);
    let whole = wire.len();
    tx.encode(blob(99, 50), &mut wire).unwrap();
    wire.truncate(whole + 10);
    let (writing, mut framed) = reader_in_pieces(server, wire, seed, inner);
    let err = loop {
        match sv2c_codec::read_batch(&mut framed, &mut each).await {
            Ok(Some(n)) => assert!(n >= 1),
            Ok(None) => panic!("seed {seed}: a clean end inside a frame"),
            Err(e) => break e,
        }
    };
    writing.await.unwrap();
    assert!(
        matches!(
            err,
            CodecError::Noise(NoiseError::Truncated { buffered: 10 })
        ),
        "seed {seed}: {err:?}"
    );
    msgs
}

#[tokio::test]
async fn read_batch_over_noise_in_random_pieces_then_a_truncated_end() {
    for seed in [3, 0xfeed] {
        let mut got = Vec::new();
        let msgs = read_batch_until_truncated(seed, Sv2Codec::<Blob>::for_set(), |b| {
            got.push(b.to_owned_value())
        })
        .await;
        assert!(
            got == msgs,
            "seed {seed}: messages lost, changed or reordered"
        );
    }
}

#[tokio::test]
async fn read_batch_of_frames_over_noise_in_random_pieces_then_a_truncated_end() {
    let pool = BufferPool::new(8, 1024).unwrap();
    for seed in [5, 0xbeef] {
        // Each frame, borrowed, written back out as a plaintext frame.
        let mut got = Vec::new();
        let msgs = read_batch_until_truncated(seed, FrameCodec::new(pool.clone()), |f| {
            got.push(sv2c_binary::messages::encode_frame(f).unwrap())
        })
        .await;
        let sent: Vec<Vec<u8>> = msgs.iter().map(plaintext).collect();
        assert!(
            got == sent,
            "seed {seed}: frames lost, changed or reordered"
        );
    }
    let stats = pool.stats();
    assert_eq!(
        (
            stats.pooled,
            stats.fallback_exhausted,
            stats.fallback_too_large
        ),
        (0, 0, 0),
        "no payload buffer was taken: the frames were borrowed"
    );
}

// ===== hostile input =====

/// Encrypts `msgs`, lets `corrupt` damage the last one, writes it all into a pipe and
/// collects what the reading `Framed` yields, up to and including the first error.
async fn read_damaged(
    msgs: &[Share],
    corrupt: impl FnOnce(&mut [u8]),
) -> (Vec<Share>, Option<CodecError>, bool) {
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
    let mut wire = BytesMut::new();
    let mut last_start = 0;
    for m in msgs {
        last_start = wire.len();
        tx.encode(m, &mut wire).unwrap();
    }
    corrupt(&mut wire[last_start..]);

    let (mut writer, reader) = duplex(1 << 16);
    writer.write_all(&wire).await.unwrap();
    drop(writer);
    let mut framed = Framed::new(
        reader,
        NoiseCodec::new(server, Sv2Codec::<Share>::for_set()),
    );
    let mut good = Vec::new();
    let mut error = None;
    while let Some(item) = framed.next().await {
        match item {
            Ok(m) => good.push(m),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    // After a fatal error the stream ends (tokio-util yields None next).
    let ended = framed.next().await.is_none();
    (good, error, ended)
}

#[tokio::test]
async fn corrupted_ciphertext_is_a_typed_error_that_ends_the_stream() {
    let msgs = [share(1, 1), share(1, 2), share(1, 3)];
    // Byte offsets inside the last 62-byte encrypted frame: header, header tag, payload,
    // payload tag.
    for (at, expected) in [
        (0, NoiseError::HeaderDecrypt),
        (21, NoiseError::HeaderDecrypt),
        (22, NoiseError::ChunkDecrypt { index: 0 }),
        (61, NoiseError::ChunkDecrypt { index: 0 }),
    ] {
        let (good, error, ended) = read_damaged(&msgs, |f| f[at] ^= 0x01).await;
        assert_eq!(good, msgs[..2], "frames before the damage are delivered");
        let error = error.expect("an error");
        assert!(!error.is_recoverable());
        match error {
            CodecError::Noise(e) => assert_eq!(e, expected, "byte {at}"),
            other => panic!("byte {at}: unexpected {other:?}"),
        }
        assert!(ended);
    }
}

#[tokio::test]
async fn frame_from_another_session_fails_authentication() {
    // Right format, wrong key: a frame encrypted for another connection.
    let (other_client, _) = transports();
    let mut other = NoiseCodec::new(other_client, Sv2Codec::<Share>::for_set());
    let mut foreign = BytesMut::new();
    other.encode(share(3, 3), &mut foreign).unwrap();
    let (good, error, _) = read_damaged(&[share(1, 1), share(1, 2)], |f| {
        f.copy_from_slice(&foreign);
    })
    .await;
    assert_eq!(good, [share(1, 1)]);
    assert!(matches!(
        error,
        Some(CodecError::Noise(NoiseError::HeaderDecrypt))
    ));
}

#[tokio::test]
async fn stream_ending_inside_an_encrypted_frame_is_a_typed_error() {
    for keep in [1, 21, 22, 40, 61] {
        let (client, server) = transports();
        let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
        let mut wire = BytesMut::new();
        tx.encode(share(2, 1), &mut wire).unwrap();
        tx.encode(share(2, 2), &mut wire).unwrap();
        wire.truncate(62 + keep);

        let (mut writer, reader) = duplex(1 << 16);
        writer.write_all(&wire).await.unwrap();
        drop(writer);
        let mut framed = Framed::new(
            reader,
            NoiseCodec::new(server, Sv2Codec::<Share>::for_set()),
        );
        assert_eq!(framed.next().await.unwrap().unwrap(), share(2, 1));
        match framed.next().await {
            Some(Err(CodecError::Noise(NoiseError::Truncated { buffered }))) => {
                assert_eq!(buffered, keep);
            }
            other => panic!("{keep} bytes kept: unexpected {other:?}"),
        }
    }

    // Ending exactly between frames is a clean end.
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
    let mut wire = BytesMut::new();
    tx.encode(share(2, 1), &mut wire).unwrap();
    let (mut writer, reader) = duplex(1 << 16);
    writer.write_all(&wire).await.unwrap();
    drop(writer);
    let mut framed = Framed::new(
        reader,
        NoiseCodec::new(server, Sv2Codec::<Share>::for_set()),
    );
    assert_eq!(framed.next().await.unwrap().unwrap(), share(2, 1));
    assert!(framed.next().await.is_none());
}

#[test]
fn oversize_plaintext_is_refused_before_any_payload_is_buffered() {
    let pool = BufferPool::new(2, 256).unwrap();
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, FrameCodec::new(pool.clone()));
    let mut wire = BytesMut::new();
    tx.encode(pattern_frame(&pool, 1, 5000), &mut wire).unwrap();
    let before = pool.stats().acquisitions();

    let mut rx = NoiseCodec::new(server, FrameCodec::new(pool.clone()).max_payload(4096));
    assert_eq!(
        rx.max_payload_len(),
        4096,
        "the inner limit reaches the decryptor"
    );
    // Only the 22-byte encrypted header: the refusal needs nothing more.
    let mut header = BytesMut::from(&wire[..22]);
    match rx.decode(&mut header) {
        Err(CodecError::Noise(NoiseError::PayloadTooLarge(e))) => {
            assert_eq!((e.len, e.max), (5000, 4096));
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(pool.stats().acquisitions(), before, "no buffer taken");
    // The connection is over: anything further is refused.
    let mut rest = BytesMut::from(&wire[22..]);
    assert!(matches!(
        rx.decode(&mut rest),
        Err(CodecError::Noise(NoiseError::Poisoned))
    ));

    // Owned-message codec: same limit, same error.
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Blob>::for_set());
    let mut rx = NoiseCodec::new(server, Sv2Codec::<Blob>::for_set().max_payload(100));
    let mut wire = BytesMut::new();
    tx.encode(blob(1, 95), &mut wire).unwrap(); // 4 + 2 + 95 = 101 bytes
    wire.truncate(22);
    assert!(matches!(
        rx.decode(&mut wire),
        Err(CodecError::Noise(NoiseError::PayloadTooLarge(
            PayloadTooLarge { len: 101, max: 100 }
        )))
    ));

    // Sending above the inner limit is refused by the inner codec, nothing written.
    let (client, _) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Blob>::for_set().max_payload(100));
    let mut out = BytesMut::new();
    assert!(matches!(
        tx.encode(blob(1, 95), &mut out),
        Err(CodecError::FrameTooLarge { len: 101, max: 100 })
    ));
    assert!(out.is_empty());
}

#[test]
fn inner_codec_errors_keep_their_recoverability() {
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
    let mut rx = NoiseCodec::new(server, Sv2Codec::<Share>::for_set());
    let mut wire = BytesMut::new();
    tx.encode(blob(1, 10), &mut wire).unwrap(); // not a Share
    tx.encode(share(4, 4), &mut wire).unwrap();
    // The unknown frame is skipped by the inner codec (spec §2.4) and the next one decodes.
    assert_eq!(rx.decode(&mut wire).unwrap(), Some(share(4, 4)));
    assert_eq!(rx.inner().skipped_frames(), 1);
    assert!(wire.is_empty());
}

// ===== handshake failures =====

#[tokio::test]
async fn wrong_authority_key_fails_the_handshake() {
    let (_, responder) = server();
    let stranger = AuthorityKeypair::generate().unwrap();
    let (client_io, server_io) = duplex(1024);
    let (client, server) = tokio::join!(
        noise::connect(
            client_io,
            Initiator::new(stranger.public_key()).unwrap(),
            Sv2Codec::<Share>::for_set()
        ),
        noise::accept(server_io, &responder, Sv2Codec::<Share>::for_set()),
    );
    match client {
        Err(e @ CodecError::Noise(NoiseError::CertificateSignature)) => {
            assert!(!e.is_recoverable());
        }
        other => panic!("unexpected {:?}", other.map(|_| ())),
    }
    // The server finished its side; the client hung up, so its stream just ends.
    let mut server = server.unwrap();
    assert!(server.next().await.is_none());
}

#[tokio::test]
async fn expired_certificate_fails_the_handshake() {
    let authority = AuthorityKeypair::generate().unwrap();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 7_200,
        now - 3_600,
    )
    .unwrap();
    let (client_io, server_io) = duplex(1024);
    let (client, _server) = tokio::join!(
        noise::connect(
            client_io,
            Initiator::new(authority.public_key()).unwrap(),
            Sv2Codec::<Share>::for_set()
        ),
        noise::accept(server_io, &responder, Sv2Codec::<Share>::for_set()),
    );
    assert!(matches!(
        client,
        Err(CodecError::Noise(NoiseError::CertificateExpired { .. }))
    ));
}

/// A fake server that reads act 1, answers with the first `keep` bytes of a real act 2
/// (optionally damaged), and hangs up.
async fn fake_server(mut io: DuplexStream, responder: Responder, keep: usize, flip: Option<usize>) {
    let mut act1 = [0u8; ACT1_LEN];
    io.read_exact(&mut act1).await.unwrap();
    let (mut act2, _) = responder.step(&act1).unwrap();
    if let Some(at) = flip {
        act2[at] ^= 0x80;
    }
    io.write_all(&act2[..keep]).await.unwrap();
}

#[tokio::test]
async fn truncated_or_corrupted_act2_fails_the_handshake() {
    for keep in [0, 1, 64, 233] {
        let (authority, responder) = server();
        let (client_io, server_io) = duplex(1024);
        let (client, ()) = tokio::join!(
            noise::connect(
                client_io,
                Initiator::new(authority.public_key()).unwrap(),
                Sv2Codec::<Share>::for_set()
            ),
            fake_server(server_io, responder, keep, None),
        );
        match client {
            Err(CodecError::Io(e)) => assert_eq!(e.kind(), ErrorKind::UnexpectedEof, "{keep}"),
            other => panic!("{keep} bytes: unexpected {:?}", other.map(|_| ())),
        }
    }

    for (at, part) in [
        (100, noise::Act2Part::StaticKey),
        (200, noise::Act2Part::Certificate),
    ] {
        let (authority, responder) = server();
        let (client_io, server_io) = duplex(1024);
        let (client, ()) = tokio::join!(
            noise::connect(
                client_io,
                Initiator::new(authority.public_key()).unwrap(),
                Sv2Codec::<Share>::for_set()
            ),
            fake_server(server_io, responder, ACT2_LEN, Some(at)),
        );
        assert!(
            matches!(client, Err(CodecError::Noise(NoiseError::HandshakeDecrypt(p))) if p == part),
            "byte {at}"
        );
    }
}

#[tokio::test]
async fn truncated_act1_fails_the_accept() {
    let (_, responder) = server();
    let (mut client_io, server_io) = duplex(1024);
    client_io.write_all(&[7; 63]).await.unwrap();
    drop(client_io);
    match noise::accept(server_io, &responder, Sv2Codec::<Share>::for_set()).await {
        Err(CodecError::Io(e)) => assert_eq!(e.kind(), ErrorKind::UnexpectedEof),
        other => panic!("unexpected {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn accept_with_sends_the_key_it_is_given_and_the_session_works() {
    let (authority, responder) = server();
    let key = EphemeralKey::generate().unwrap();
    let sent = *key.ellswift();
    let (mut client_io, server_io) = duplex(4096);
    let initiator = Initiator::new(authority.public_key()).unwrap();
    let (act1, waiting) = initiator.step_1();
    client_io.write_all(&act1).await.unwrap();
    let calls = Cell::new(0);
    let take = || {
        calls.set(calls.get() + 1);
        Ok(key)
    };
    let mut server = noise::accept_with(server_io, &responder, Sv2Codec::<Share>::for_set(), take)
        .await
        .unwrap();
    assert_eq!(calls.get(), 1);
    let mut act2 = [0u8; ACT2_LEN];
    client_io.read_exact(&mut act2).await.unwrap();
    // Act 2 opens with the responder's ephemeral key: the one handed in.
    assert_eq!(act2[..64], sent[..]);
    let transport = waiting.step_2(&act2, unix_time_now()).unwrap();
    let mut client = Framed::new(
        client_io,
        NoiseCodec::new(transport, Sv2Codec::<Share>::for_set()),
    );
    let share = share(1, 2);
    client.send(share.clone()).await.unwrap();
    assert_eq!(server.next().await.unwrap().unwrap(), share);
}

#[tokio::test]
async fn accept_with_a_failing_key_source_is_a_noise_error() {
    let (_, responder) = server();
    let (mut client_io, server_io) = duplex(4096);
    let initiator = Initiator::new(AuthorityKeypair::generate().unwrap().public_key()).unwrap();
    client_io.write_all(&initiator.step_1().0).await.unwrap();
    let failing = || Err(NoiseError::RandomSource(None));
    match noise::accept_with(server_io, &responder, Sv2Codec::<Share>::for_set(), failing).await {
        Err(CodecError::Noise(NoiseError::RandomSource(None))) => {}
        other => panic!("unexpected {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn handshake_reads_nothing_beyond_act2() {
    // The server sends its first encrypted frame right behind act 2, in the same write:
    // `connect` must leave it on the stream for the codec.
    let (authority, responder) = server();
    let (client_io, mut server_io) = duplex(4096);
    let serve = async move {
        let mut act1 = [0u8; ACT1_LEN];
        server_io.read_exact(&mut act1).await.unwrap();
        let (act2, transport) = responder.step(&act1).unwrap();
        let mut codec = NoiseCodec::new(transport, Sv2Codec::<Share>::for_set());
        let mut out = BytesMut::from(&act2[..]);
        codec.encode(share(9, 9), &mut out).unwrap();
        server_io.write_all(&out).await.unwrap();
        server_io
    };
    let (client, _server_io) = tokio::join!(
        noise::connect(
            client_io,
            Initiator::new(authority.public_key()).unwrap(),
            Sv2Codec::<Share>::for_set()
        ),
        serve,
    );
    let mut client = client.unwrap();
    assert_eq!(client.next().await.unwrap().unwrap(), share(9, 9));
}

// ===== allocations =====

#[test]
fn steady_state_allocations() {
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
    let mut rx = NoiseCodec::new(server, Sv2Codec::<Share>::for_set());
    // Warm up: the scratch buffer gets its allocation, and so do the two decode buffers
    // (the assembly and the plaintext buffer, which swap roles on every frame).
    for i in 0..2 {
        let mut wire = BytesMut::new();
        tx.encode(share(1, i), &mut wire).unwrap();
        assert_eq!(rx.decode(&mut wire).unwrap(), Some(share(1, i)));
    }

    let mut wire = BytesMut::with_capacity(100 * 62);
    let before = allocations();
    for i in 2..=101 {
        tx.encode(share(1, i), &mut wire).unwrap();
    }
    assert_eq!(allocations() - before, 0, "encoding allocates nothing");
    assert_eq!(wire.len(), 100 * 62);

    // Decoding: the decryptor assembles each frame in a reused buffer, which is swapped
    // to the plaintext codec; a fixed-size message decodes without allocating.
    let before = allocations();
    for i in 2..=101 {
        assert_eq!(rx.decode(&mut wire).unwrap(), Some(share(1, i)));
    }
    assert_eq!(allocations() - before, 0, "decoding allocates nothing");
    assert!(wire.is_empty());
}

/// A batch (`decode_all_with`, what `read_batch` calls) makes at most two allocations
/// however many frames its bytes hold: the plaintext buffer, sized for the whole read,
/// and the buffer the later frames are decrypted in; both are given back when it ends.
#[test]
fn a_batch_allocates_twice_whatever_its_frame_count() {
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, Sv2Codec::<Share>::for_set());
    let mut rx = NoiseCodec::new(server, Sv2Codec::<Share>::for_set());
    let mut seq = 0;
    for frames in [1, 2, 32, 500] {
        let mut wire = BytesMut::new();
        for _ in 0..frames {
            tx.encode(share(1, seq), &mut wire).unwrap();
            seq += 1;
        }
        let mut got = 0;
        let before = allocations();
        let handed = rx.decode_all_with(&mut wire, |_: &Share| got += 1).unwrap();
        let made = allocations() - before;
        assert_eq!((handed, got), (frames, frames));
        assert!(made <= 2, "{frames} frames: {made} allocations");
        assert!(made >= 1, "{frames} frames: the counter counts");
    }
}

/// Sends `rounds` frames of `len` payload bytes through `NoiseCodec<FrameCodec>` one at a
/// time, the way a connection does: encode into the write buffer, which is drained (as a
/// flush would), then the ciphertext arrives in reads of `read_size` bytes into the read
/// buffer, which `decode` consumes. Returns the heap allocations made by all the encodes
/// and by all the decodes.
fn frame_codec_allocations(len: usize, read_size: usize, rounds: usize) -> (u64, u64) {
    let pool = BufferPool::new(4, len.max(64)).unwrap();
    let (client, server) = transports();
    let mut tx = NoiseCodec::new(client, FrameCodec::new(pool.clone()));
    let mut rx = NoiseCodec::new(server, FrameCodec::new(pool.clone()));
    let frame = pattern_frame(&pool, 0x1a, len);
    assert!(frame.is_pooled());
    let mut write_buf = BytesMut::new();
    let mut read_buf = BytesMut::new();
    let (mut encode, mut decode) = (0, 0);
    let fallbacks = pool.stats().fallbacks();
    for round in 0..rounds {
        let a = allocations();
        tx.encode(&frame, &mut write_buf).unwrap();
        let b = allocations();
        assert_eq!(write_buf.len(), wire_len(len));

        let mut received = None;
        let mut decode_allocs = 0;
        let mut wire: &[u8] = &write_buf;
        while !wire.is_empty() {
            let (piece, rest) = wire.split_at(wire.len().min(read_size));
            wire = rest;
            read_buf.extend_from_slice(piece); // the "socket read", not counted
            let c = allocations();
            let got = rx.decode(&mut read_buf).unwrap();
            decode_allocs += allocations() - c;
            if let Some(got) = got {
                assert!(received.is_none() && wire.is_empty());
                received = Some(got);
            }
        }
        let got = received.expect("a frame per round");
        assert_eq!(got.header(), frame.header());
        assert_eq!(got.payload(), frame.payload());
        assert!(read_buf.is_empty());
        drop(got); // back to the pool
        write_buf.clear(); // flushed
        // The first two rounds are warm-up: buffers and pool caches reach their size.
        if round >= 2 {
            encode += b - a;
            decode += decode_allocs;
        }
    }
    assert_eq!(
        pool.stats().fallbacks(),
        fallbacks,
        "every payload from the pool"
    );
    (encode, decode)
}

#[test]
fn frame_codec_small_frames_allocate_nothing_in_steady_state() {
    // SubmitSharesStandard (24-byte payload) and an 80-byte payload, each arriving in one
    // read, and split into 7-byte reads.
    for len in [24, 80] {
        for read_size in [usize::MAX, 7] {
            assert_eq!(
                frame_codec_allocations(len, read_size, 50),
                (0, 0),
                "{len}-byte payload, reads of {read_size}"
            );
        }
    }
}

#[test]
fn frame_codec_multi_chunk_frames_allocate_nothing_in_steady_state() {
    // Two chunks (65 519 + 34 481 bytes), read at once and in 16 KiB reads.
    let len = 100_000;
    for read_size in [usize::MAX, 16 * 1024] {
        assert_eq!(
            frame_codec_allocations(len, read_size, 6),
            (0, 0),
            "{len}-byte payload, reads of {read_size}"
        );
    }
}

#[test]
fn allocation_counter_is_the_global_allocator() {
    // Otherwise the zero counts above would hold vacuously.
    let before = allocations();
    drop(std::hint::black_box(Vec::<u8>::with_capacity(64)));
    assert_eq!(allocations() - before, 1);
}

// ===== interop with the reference implementation =====

use codec_sv2::{Decrypted, Handshake, NoiseDecoder, NoiseEncoder};
use codec_sv2::{TransportDecryptState, TransportEncryptState};
use framing_sv2::framing::SerializedFrame;

/// The reference's Noise encoder and decoder on one end of a stream.
struct Reference {
    encoder: NoiseEncoder,
    tx: TransportEncryptState,
    decoder: NoiseDecoder,
    rx: Option<TransportDecryptState>,
}

impl Reference {
    fn new(transport: codec_sv2::Transport) -> Self {
        let (tx, rx) = transport.split();
        Reference {
            encoder: NoiseEncoder::new(),
            tx,
            decoder: NoiseDecoder::new(),
            rx: Some(rx),
        }
    }

    fn encrypt(&mut self, plaintext: Vec<u8>) -> Vec<u8> {
        let frame = SerializedFrame::from_bytes(plaintext).unwrap();
        let wire = self.encoder.encode_transport(frame, &mut self.tx).unwrap();
        AsRef::<[u8]>::as_ref(&wire).to_vec()
    }

    /// Reads one frame from `io` the way the reference's own users do: fill exactly
    /// `writable()`, then ask for the next frame.
    async fn read_frame<R: AsyncRead + Unpin>(&mut self, io: &mut R) -> Vec<u8> {
        let mut state = self.rx.take().unwrap();
        loop {
            io.read_exact(self.decoder.writable()).await.unwrap();
            match self.decoder.next_transport_frame(state) {
                Ok(Decrypted::Frame(frame, s)) => {
                    self.rx = Some(s);
                    return frame.as_bytes().to_vec();
                }
                Ok(Decrypted::Incomplete(_, s)) => state = s,
                Err(e) => panic!("reference decoder failed: {e:?}"),
            }
        }
    }
}

/// Blob sizes for the interop runs: empty data, tiny, exactly one full chunk (4 + 2 +
/// 65 513 = 65 519 payload bytes), and two chunks.
const INTEROP_SIZES: [usize; 4] = [0, 1, 65_513, 65_535];

#[tokio::test]
async fn our_connect_against_the_reference_responder() {
    let authority = AuthorityKeypair::generate().unwrap();
    let public = authority.public_key().to_bytes();
    let secret = authority.to_secret_bytes();
    let (client_io, mut server_io) = duplex(8192);

    let reference = async move {
        let responder =
            noise_sv2::Responder::from_authority_kp(&public, &secret, Duration::from_secs(3_600))
                .unwrap();
        let mut act1 = [0u8; ACT1_LEN];
        server_io.read_exact(&mut act1).await.unwrap();
        let (act2, transport) = Handshake::responder(responder).step_1(act1).unwrap();
        server_io.write_all(act2.payload()).await.unwrap();
        let mut theirs = Reference::new(transport);
        for (i, &len) in INTEROP_SIZES.iter().enumerate() {
            // Reference -> ours.
            let wire = theirs.encrypt(plaintext(&blob(i as u32, len)));
            server_io.write_all(&wire).await.unwrap();
            // Ours -> reference.
            let got = theirs.read_frame(&mut server_io).await;
            assert_eq!(got, plaintext(&blob(100 + i as u32, len)), "{len}");
        }
    };
    let ours = async move {
        let key = AuthorityPublicKey::from_bytes(public).unwrap();
        let mut framed = noise::connect(
            client_io,
            Initiator::new(key).unwrap(),
            Sv2Codec::<Blob>::for_set(),
        )
        .await
        .unwrap();
        for (i, &len) in INTEROP_SIZES.iter().enumerate() {
            let msg = framed.next().await.unwrap().unwrap();
            assert_eq!(msg, blob(i as u32, len));
            framed.send(blob(100 + i as u32, len)).await.unwrap();
        }
        framed
    };
    let ((), _framed) = tokio::join!(reference, ours);
}

#[tokio::test]
async fn reference_initiator_against_our_accept() {
    let (authority, responder) = server();
    let public = authority.public_key().to_bytes();
    let (mut client_io, server_io) = duplex(8192);

    let reference = async move {
        let initiator = noise_sv2::Initiator::from_raw_k(public).unwrap();
        let (act1, waiting) = Handshake::initiator(initiator).step_0().unwrap();
        client_io.write_all(act1.payload()).await.unwrap();
        let mut act2 = [0u8; ACT2_LEN];
        client_io.read_exact(&mut act2).await.unwrap();
        let mut theirs = Reference::new(waiting.step_2(act2).unwrap());
        for (i, &len) in INTEROP_SIZES.iter().enumerate() {
            // Reference -> ours, then ours -> reference.
            let wire = theirs.encrypt(plaintext(&blob(i as u32, len)));
            client_io.write_all(&wire).await.unwrap();
            let got = theirs.read_frame(&mut client_io).await;
            assert_eq!(got, plaintext(&blob(200 + i as u32, len)), "{len}");
        }
    };
    let ours = async move {
        let mut framed = noise::accept(server_io, &responder, Sv2Codec::<Blob>::for_set())
            .await
            .unwrap();
        for (i, &len) in INTEROP_SIZES.iter().enumerate() {
            let msg = framed.next().await.unwrap().unwrap();
            assert_eq!(msg, blob(i as u32, len));
            framed.send(blob(200 + i as u32, len)).await.unwrap();
        }
        framed
    };
    let ((), _framed) = tokio::join!(reference, ours);
}

#[test]
fn a_frame_announced_large_and_sent_in_part_gets_room_for_what_arrived() {
    let (mut tx, server) = blob_sender();
    let mut rx = NoiseCodec::new(server, Sv2Codec::<Blob>::for_set());
    let mut wire = BytesMut::new();
    tx.encode(&blob(1, 65_535), &mut wire).unwrap();
    // The authenticated header and 100 bytes of the payload, then nothing.
    let mut src = BytesMut::from(&wire[..22 + 100]);
    assert!(rx.decode(&mut src).unwrap().is_none());
    // Room for about as much again (at least 1 KiB), not for the 64 KiB announced.
    assert!(
        src.capacity() <= 2 * 1024,
        "{} bytes reserved",
        src.capacity()
    );

    // The rest, in pieces that fill the room each time: the frame arrives whole.
    let mut at = 122;
    let mut reads = 0;
    let got = loop {
        let n = (src.capacity() - src.len()).min(wire.len() - at);
        assert!(
            n > 0,
            "no room reserved with {} bytes missing",
            wire.len() - at
        );
        src.extend_from_slice(&wire[at..at + n]);
        at += n;
        reads += 1;
        if let Some(b) = rx.decode(&mut src).unwrap() {
            break b;
        }
    };
    assert_eq!(got, blob(1, 65_535));
    // The room doubles with what arrived: a few reads, not one per KiB.
    assert!(reads <= 8, "{reads} reads");
}

#[tokio::test]
async fn between_batches_the_bytes_of_an_unfinished_encrypted_frame_are_counted() {
    use sv2c_codec::{BatchRead, read_batch};

    let (mut tx, server) = blob_sender();
    let (mut peer, ours) = duplex(256 * 1024);
    let mut framed = Framed::new(ours, NoiseCodec::new(server, Sv2Codec::<Blob>::for_set()));
    let mut wire = BytesMut::new();
    tx.encode(&blob(1, 10), &mut wire).unwrap();
    let first = wire.len();
    // A frame of two Noise chunks.
    tx.encode(&blob(2, 65_535), &mut wire).unwrap();
    assert!(wire.len() - first > 65_535 + 16);
    // The first frame and 40,000 bytes of the second (inside its first chunk), then up
    // to 10 bytes before its end (inside its second chunk).
    let mut sent = 0;
    for (upto, whole) in [(first + 40_000, 1), (wire.len() - 10, 0)] {
        peer.write_all(&wire[sent..upto]).await.unwrap();
        sent = upto;
        let mut got = 0;
        while got < whole {
            got += read_batch(&mut framed, |_| {}).await.unwrap().unwrap();
        }
        let waiting = read_batch(&mut framed, |_| panic!("the frame is not complete"));
        assert!(
            tokio::time::timeout(Duration::from_millis(50), waiting)
                .await
                .is_err()
        );
        // The reader's buffer is empty: the decryptor holds the frame's bytes.
        assert_eq!(framed.read_buffer().len(), 0);
        assert_eq!(framed.partial_frame_len(), sent - first);
    }
    peer.write_all(&wire[sent..]).await.unwrap();
    assert_eq!(read_batch(&mut framed, |_| {}).await.unwrap(), Some(1));
    assert_eq!(framed.partial_frame_len(), 0);
}
