//! The floors measured in the same process beside the servers: the AEAD and the curve of
//! the Noise handshake, and the transport alone.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};
use sv2c::noise;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use super::BoxError;
use super::measure::task_cpu;

/// Nanoseconds per call of `f`, run for about `budget`.
pub(super) fn time_per_call(budget: Duration, mut f: impl FnMut()) -> f64 {
    let mut n = 0u64;
    let start = Instant::now();
    while start.elapsed() < budget {
        for _ in 0..64 {
            f();
        }
        n += 64;
    }
    start.elapsed().as_nanos() as f64 / n as f64
}

/// ring's ChaCha20-Poly1305 seal and open of `len` plaintext bytes, ns per call.
pub(super) fn aead_ns(len: usize) -> (f64, f64) {
    use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};
    let Ok(unbound) = UnboundKey::new(&CHACHA20_POLY1305, &[7u8; 32]) else {
        return (f64::NAN, f64::NAN);
    };
    let key = LessSafeKey::new(unbound);
    let nonce = |n: u64| {
        let mut b = [0u8; 12];
        b[4..].copy_from_slice(&n.to_le_bytes());
        Nonce::assume_unique_for_key(b)
    };
    let mut buf = Vec::with_capacity(len + 16);
    let mut counter = 0u64;
    let seal = time_per_call(Duration::from_millis(150), || {
        buf.clear();
        buf.resize(len, 0x5a);
        counter += 1;
        let _ = key.seal_in_place_append_tag(nonce(counter), Aad::empty(), &mut buf);
    });
    buf.clear();
    buf.resize(len, 0x5a);
    let _ = key.seal_in_place_append_tag(nonce(0), Aad::empty(), &mut buf);
    let sealed = buf.clone();
    let open = time_per_call(Duration::from_millis(150), || {
        buf.clear();
        buf.extend_from_slice(&sealed);
        let _ = key.open_in_place(nonce(0), Aad::empty(), &mut buf);
    });
    (seal, open)
}

/// secp256k1: ElligatorSwift key generation and ElligatorSwift ECDH, µs per call. The key
/// generation is a handshake's, `EphemeralKey::generate` (OS randomness, the generator
/// multiplication and the encoding; the context's blinding renewed every 64 keys, where
/// `secp256k1`'s own `ElligatorSwift::from_seckey` renews it after every key, at about
/// 19 µs more).
pub(super) fn secp_us() -> (f64, f64) {
    use secp256k1::SecretKey;
    use secp256k1::ellswift::{ElligatorSwift, Party};
    let mut seed = 1u64;
    let mut next_secret = || {
        seed += 1;
        let mut b = [0x42u8; 32];
        b[24..].copy_from_slice(&seed.to_be_bytes());
        SecretKey::from_secret_bytes(b).ok()
    };
    let keygen = time_per_call(Duration::from_millis(200), || {
        std::hint::black_box(noise::sv2c_noise::EphemeralKey::generate().ok());
    });
    let (Some(a), Some(b)) = (next_secret(), next_secret()) else {
        return (keygen / 1e3, f64::NAN);
    };
    let (ea, eb) = (
        ElligatorSwift::from_seckey(a, None),
        ElligatorSwift::from_seckey(b, None),
    );
    let ecdh = time_per_call(Duration::from_millis(200), || {
        std::hint::black_box(ElligatorSwift::shared_secret(ea, eb, a, Party::Initiator));
    });
    (keygen / 1e3, ecdh / 1e3)
}

/// A share's frame on the wire: `SubmitSharesStandard`'s 24 bytes and a 6-byte header,
/// each sealed (16-byte tags).
pub(super) const SHARE_FRAME: usize = 6 + 16 + 24 + 16;
/// An answer's frame: `SubmitShares.Success`'s 20 bytes and its header, sealed.
pub(super) const ANSWER_FRAME: usize = 6 + 16 + 20 + 16;

/// The transport's part of a share, measured in this process: `connections` loopback
/// connections, each writing `in_flight` share-sized frames at once and waiting for one
/// answer-sized frame, served by one thread (a single-threaded tokio runtime) that reads
/// what arrived and writes one answer per complete batch: no protocol, no cipher. Returns
/// that thread's CPU per share in µs over `seconds`: its reads, its writes and, as for
/// the server measured (on loopback a write runs the receiving end's TCP input), the
/// delivery of its answers; the shares per second it served; its context switches per
/// share.
pub(super) async fn transport_floor_us(
    connections: usize,
    in_flight: usize,
    seconds: f64,
) -> Result<(f64, f64, f64), BoxError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let batch = in_flight * SHARE_FRAME;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let (tid_tx, tid_rx) = tokio::sync::oneshot::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::Builder::new()
        .name("transport-floor".into())
        .spawn(move || -> std::io::Result<()> {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .build()?;
            // "/proc/thread-self" links to "PID/task/TID".
            let tid = std::fs::read_link("/proc/thread-self")?;
            let _ = tid_tx.send(tid.file_name().map(|t| t.to_os_string()));
            runtime.block_on(async move {
                let listener = TcpListener::from_std(listener)?;
                let accept = async {
                    loop {
                        let (mut s, _) = listener.accept().await?;
                        s.set_nodelay(true)?;
                        tokio::spawn(async move {
                            let mut buf = vec![0u8; batch.max(4096)];
                            let answers = vec![0u8; ANSWER_FRAME * (buf.len() / batch + 1)];
                            let mut pending = 0;
                            loop {
                                match s.read(&mut buf).await {
                                    Ok(0) | Err(_) => return,
                                    Ok(n) => pending += n,
                                }
                                let complete = pending / batch;
                                pending %= batch;
                                if complete > 0
                                    && s.write_all(&answers[..complete * ANSWER_FRAME])
                                        .await
                                        .is_err()
                                {
                                    return;
                                }
                            }
                        });
                    }
                };
                tokio::select! {
                    r = accept => r,
                    _ = stop_rx => Ok(()),
                }
            })
        })?;
    let tid = tid_rx.await?.ok_or("no thread id")?;
    let task = std::path::Path::new("/proc/self/task").join(tid);
    let thread_cpu = || task_cpu(&task);
    let shares = Arc::new(AtomicU64::new(0));
    let (go_tx, go) = watch::channel(false);
    let mut clients = tokio::task::JoinSet::new();
    for _ in 0..connections {
        let mut s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        let (shares, mut go) = (shares.clone(), go.clone());
        clients.spawn(async move {
            let frames = vec![0x5au8; batch];
            let mut answer = [0u8; ANSWER_FRAME];
            if go.wait_for(|g| *g).await.is_err() {
                return;
            }
            while *go.borrow() {
                if s.write_all(&frames).await.is_err() || s.read_exact(&mut answer).await.is_err() {
                    return;
                }
                shares.fetch_add(in_flight as u64, Relaxed);
            }
        });
    }
    let _ = go_tx.send(true);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (n0, (c0, s0), t0) = (shares.load(Relaxed), thread_cpu(), Instant::now());
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let (n1, (c1, s1)) = (shares.load(Relaxed), thread_cpu());
    let elapsed = t0.elapsed().as_secs_f64();
    let _ = go_tx.send(false);
    clients.shutdown().await;
    let _ = stop_tx.send(());
    server
        .join()
        .map_err(|_| "the floor's server thread panicked")??;
    if n1 <= n0 {
        return Err("no share went through".into());
    }
    let n = (n1 - n0) as f64;
    Ok((
        c1.saturating_sub(c0) as f64 / 1e3 / n,
        n / elapsed,
        s1.saturating_sub(s0) as f64 / n,
    ))
}

// ===== the run =====
