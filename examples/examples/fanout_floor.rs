//! `fanout_floor`: the floor under a new block's fan-out — a server that does, per miner,
//! nothing but seal one `SetNewPrevHash` frame and write it.
//!
//! ```text
//! fanout_floor [--listen HOST:PORT] [--interval SECONDS] [--threads T]
//! ```
//!
//! It accepts Noise NX miners as a pool does (printing `authority public key KEY`, which
//! `loadgen` reads), answers `SetupConnection` and `OpenStandardMiningChannel` and sends
//! each channel a job and a previous hash. Then the connection leaves its task: its
//! socket and its Noise sending state go to one of `T` threads (default: the number of
//! cores), and every `--interval` seconds (default 3) each thread, for each of its
//! connections in turn, encodes and seals one `SetNewPrevHash` for a new previous hash
//! and writes it with one non-blocking `write` call. No task wakes, nothing is decoded, no
//! job is built: what is left is the cipher, the system call and the kernel's loopback
//! delivery, on the same cores a server would use.
//!
//! `loadgen connect --fanout B` measures it exactly as it measures a pool that makes its
//! own blocks (from the first miner's arrival to each miner's):
//!
//! ```text
//! cargo run --release --example loadgen -- connect --miners 15000 --fanout 3 \
//!     --target 127.0.0.1:24290 -- target/release/examples/fanout_floor --listen 127.0.0.1:24290
//! ```
//!
//! `scripts/fanout_floor.sh` runs it beside the `pool` on the same load.

use std::error::Error;
use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use sv2c::noise::{self, AuthorityKeypair, Responder, StaticKeypair};
use sv2c::prelude::*;
use tokio::net::TcpListener;
use tokio_util::codec::Encoder;

type BoxError = Box<dyn Error + Send + Sync>;
type Codec = noise::NoiseCodec<Sv2Codec<Message>>;

const USAGE: &str = "usage: fanout_floor [--listen HOST:PORT] [--interval SECONDS] [--threads T]";

/// The job every channel works on, and the `nbits` of every previous hash.
const JOB_ID: u32 = 1;
const NBITS: u32 = 0x1703_4219;

/// One miner handed to a sending thread: its socket and its Noise sending state.
struct Miner {
    tcp: std::net::TcpStream,
    codec: Codec,
    channel_id: u32,
}

struct Options {
    listen: String,
    interval: Duration,
    threads: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        listen: "127.0.0.1:24290".into(),
        interval: Duration::from_secs(3),
        threads: std::thread::available_parallelism().map_or(2, usize::from),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .ok_or(format!("{flag} needs a value\n{USAGE}"))?;
        let bad = || format!("bad value for {flag}: {value:?}\n{USAGE}");
        match flag.as_str() {
            "--listen" => o.listen = value.clone(),
            "--interval" => {
                let s: f64 = value.parse().map_err(|_| bad())?;
                o.interval = Duration::try_from_secs_f64(s).map_err(|_| bad())?;
            }
            "--threads" => o.threads = value.parse().ok().filter(|&t| t > 0).ok_or_else(bad)?,
            _ => return Err(format!("unknown flag {flag}\n{USAGE}")),
        }
    }
    Ok(o)
}

/// A previous hash for block `n` whose first 8 bytes differ from every other block's
/// (`loadgen` tells blocks apart by them).
fn prev_hash(n: u32) -> U256 {
    let mut h = [0x44; 32];
    h[..4].copy_from_slice(&n.to_le_bytes());
    U256(h)
}

fn set_new_prev_hash(channel_id: u32, block: u32) -> Message {
    SetNewPrevHash {
        channel_id,
        job_id: JOB_ID,
        prev_hash: prev_hash(block),
        min_ntime: 1_700_000_000 + block,
        nbits: NBITS,
    }
    .into()
}

/// Serves one miner until its channel is open with a job, then hands it over.
async fn open(
    tcp: tokio::net::TcpStream,
    responder: &Responder,
    channel_id: u32,
) -> Result<Miner, BoxError> {
    tcp.set_nodelay(true)?;
    let mut conn = noise::accept(tcp, responder, Sv2Codec::<Message>::new()).await?;
    loop {
        match conn.next().await.ok_or("closed before its channel")?? {
            Message::SetupConnection(_) => {
                let ok = SetupConnectionSuccess {
                    used_version: 2,
                    flags: 0,
                };
                conn.send(Message::from(ok)).await?;
            }
            Message::OpenStandardMiningChannel(o) => {
                let ok = OpenStandardMiningChannelSuccess {
                    request_id: o.request_id,
                    channel_id,
                    target: U256([0xff; 32]),
                    extranonce_prefix: B032::try_from(&channel_id.to_be_bytes()[..])?,
                    group_channel_id: 0,
                };
                let job = NewMiningJob {
                    channel_id,
                    job_id: JOB_ID,
                    min_ntime: None,
                    version: 0x2000_0000,
                    merkle_root: U256([0x55; 32]),
                };
                conn.feed(Message::from(ok)).await?;
                conn.feed(Message::from(job)).await?;
                conn.send(set_new_prev_hash(channel_id, 0)).await?;
                break;
            }
            _ => {}
        }
    }
    let parts = conn.into_parts();
    let tcp = parts.io.into_std()?;
    tcp.set_nonblocking(true)?;
    Ok(Miner {
        tcp,
        codec: parts.codec,
        channel_id,
    })
}

/// One sending thread: for every block, each of its miners gets one sealed frame and one
/// write.
fn sender(joined: mpsc::Receiver<Miner>, blocks: mpsc::Receiver<u32>) {
    let mut miners: Vec<Miner> = Vec::new();
    let mut out = BytesMut::with_capacity(256);
    while let Ok(block) = blocks.recv() {
        miners.extend(joined.try_iter());
        miners.retain_mut(|m| {
            out.clear();
            if m.codec
                .encode(set_new_prev_hash(m.channel_id, block), &mut out)
                .is_err()
            {
                return false;
            }
            write_all(&mut m.tcp, &out)
        });
    }
}

/// Writes `bytes` to a non-blocking socket; `false` if the miner is gone.
fn write_all(tcp: &mut std::net::TcpStream, mut bytes: &[u8]) -> bool {
    while !bytes.is_empty() {
        match tcp.write(bytes) {
            Ok(0) => return false,
            Ok(n) => bytes = &bytes[n..],
            // An idle miner's socket has room for a 100-byte frame; a full one is a miner
            // that stopped reading, which only a slow block reveals.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(_) => return false,
        }
    }
    true
}

fn main() -> std::process::ExitCode {
    let options = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("fanout_floor: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(options.threads)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fanout_floor: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(options)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fanout_floor: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(options: Options) -> Result<(), BoxError> {
    let authority = AuthorityKeypair::generate()?;
    let now = noise::unix_time_now();
    let responder = std::sync::Arc::new(Responder::from_authority(
        StaticKeypair::generate()?,
        &authority,
        now,
        now + 86_400,
    )?);
    let listener = TcpListener::bind(&options.listen).await?;
    println!(
        "fanout_floor: listening on {}, authority public key {}",
        listener.local_addr()?,
        authority.public_key()
    );
    let (mut joins, mut ticks) = (Vec::new(), Vec::new());
    for _ in 0..options.threads {
        let (join, joined) = mpsc::channel();
        let (tick, blocks) = mpsc::channel();
        std::thread::spawn(move || sender(joined, blocks));
        joins.push(join);
        ticks.push(tick);
    }
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(options.interval);
        interval.tick().await;
        for block in 1u32.. {
            interval.tick().await;
            for tick in &ticks {
                let _ = tick.send(block);
            }
        }
    });
    for channel_id in 1u32.. {
        let (tcp, _) = listener.accept().await?;
        let responder = responder.clone();
        let join = joins[channel_id as usize % joins.len()].clone();
        tokio::spawn(async move {
            if let Ok(miner) = open(tcp, &responder, channel_id).await {
                let _ = join.send(miner);
            }
        });
    }
    Ok(())
}
