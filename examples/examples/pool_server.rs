//! `pool_server`: a minimal Stratum V2 mining pool in one file, written on the `sv2c`
//! facade. It accepts standard and extended channels, hands each a job and a previous
//! block hash, and answers every share (accepted when it names the current job; there is
//! no block template and no hashing here, so the proof of work is not checked).
//!
//! ```text
//! cargo run --example pool_server                       # plain TCP on 127.0.0.1:34254
//! cargo run --example pool_server -- --noise            # Noise NX; prints the authority key
//! cargo run --example client -- [--noise KEY]           # in another terminal
//! ```
//!
//! The connection loop is an ordinary `while let Some(msg) = conn.next().await`: messages
//! the pool does not know (extensions) are skipped by the codec (spec §2.4), so they never
//! end the connection.

use std::collections::HashMap;
use std::error::Error;

use sv2c::noise::{self, AuthorityKeypair, Responder, StaticKeypair, unix_time_now};
use sv2c::prelude::*;
use tokio::net::TcpListener;

/// Share difficulty target handed to every channel (low difficulty: most shares pass).
const SHARE_TARGET: U256 = U256([0xff; 32]);
/// Bytes of extranonce an extended channel's miner rolls itself.
const EXTRANONCE_SIZE: u16 = 8;
/// The `SetupConnection` flags this pool honours: it sends standard jobs to standard
/// channels and lets every job roll the version, but takes no custom jobs.
const SUPPORTED: MiningSetupFlags =
    MiningSetupFlags::REQUIRES_STANDARD_JOBS.union(MiningSetupFlags::REQUIRES_VERSION_ROLLING);

/// What the pool remembers about one open channel.
#[derive(Debug, Default)]
pub struct Channel {
    /// Extended (the miner builds the merkle root) or standard.
    pub extended: bool,
    /// The job shares must name.
    pub job_id: u32,
    /// Shares accepted so far.
    pub accepted: u32,
}

/// One downstream connection: channels and jobs. Sans-io, so tests can drive it.
#[derive(Debug, Default)]
pub struct Session {
    /// Open channels by id.
    pub channels: HashMap<u32, Channel>,
    next_id: u32,
    setup_done: bool,
}

impl Session {
    /// The pool's answers to one message, in sending order.
    pub fn handle(&mut self, msg: Message) -> Vec<Message> {
        match msg {
            Message::SetupConnection(m) if m.protocol == Protocol::Mining && m.min_version <= 2 => {
                // Typed by the connection's protocol; refuse, by name, what is not honoured.
                let refused = m.mining_flags().unwrap_or_default().unsupported(SUPPORTED);
                if !refused.is_empty() {
                    return vec![
                        SetupConnectionError {
                            flags: refused.bits(),
                            error_code: Str0255::from_static_str("unsupported-feature-flags")
                                .unwrap_or_default(),
                        }
                        .into(),
                    ];
                }
                self.setup_done = true;
                vec![
                    SetupConnectionSuccess {
                        used_version: 2,
                        flags: 0,
                    }
                    .into(),
                ]
            }
            Message::SetupConnection(m) => vec![
                SetupConnectionError {
                    flags: m.flags,
                    error_code: Str0255::from_static_str("unsupported-protocol")
                        .unwrap_or_default(),
                }
                .into(),
            ],
            _ if !self.setup_done => Vec::new(), // nothing before SetupConnection
            Message::OpenStandardMiningChannel(m) => {
                let channel_id = self.open(false);
                let success = OpenStandardMiningChannelSuccess {
                    request_id: m.request_id,
                    channel_id,
                    target: SHARE_TARGET,
                    extranonce_prefix: B032::try_from(&channel_id.to_le_bytes()[..])
                        .unwrap_or_default(),
                    group_channel_id: 0,
                };
                let job = NewMiningJob {
                    channel_id,
                    job_id: 1,
                    min_ntime: None, // future job: becomes active with SetNewPrevHash
                    version: 0x2000_0000,
                    merkle_root: U256([0x11; 32]),
                };
                vec![success.into(), job.into(), prev_hash(channel_id, 1).into()]
            }
            Message::OpenExtendedMiningChannel(m) => {
                let channel_id = self.open(true);
                let success = OpenExtendedMiningChannelSuccess {
                    request_id: m.request_id,
                    channel_id,
                    target: SHARE_TARGET,
                    extranonce_size: EXTRANONCE_SIZE.max(m.min_extranonce_size),
                    extranonce_prefix: B032::try_from(&channel_id.to_le_bytes()[..])
                        .unwrap_or_default(),
                    group_channel_id: 0,
                };
                let job = NewExtendedMiningJob {
                    channel_id,
                    job_id: 1,
                    version: 0x2000_0000,
                    version_rolling_allowed: true,
                    coinbase_tx_prefix: B064K::try_from(&[0x01, 0x00, 0x00, 0x00][..])
                        .unwrap_or_default(),
                    coinbase_tx_suffix: B064K::try_from(&[0xff, 0xff, 0xff, 0xff][..])
                        .unwrap_or_default(),
                    ..Default::default()
                };
                vec![success.into(), job.into(), prev_hash(channel_id, 1).into()]
            }
            Message::SubmitSharesStandard(s) => {
                vec![self.share(s.channel_id, s.sequence_number, s.job_id)]
            }
            Message::SubmitSharesExtended(s) => {
                vec![self.share(s.channel_id, s.sequence_number, s.job_id)]
            }
            Message::CloseChannel(c) => {
                self.channels.remove(&c.channel_id);
                Vec::new()
            }
            _ => Vec::new(), // known but not for a pool: ignored
        }
    }

    fn open(&mut self, extended: bool) -> u32 {
        self.next_id += 1;
        self.channels.insert(
            self.next_id,
            Channel {
                extended,
                job_id: 1,
                accepted: 0,
            },
        );
        self.next_id
    }

    fn share(&mut self, channel_id: u32, sequence_number: u32, job_id: u32) -> Message {
        let error = |code: &'static str| {
            let error_code = Str0255::from_static_str(code).unwrap_or_default();
            SubmitSharesError {
                channel_id,
                sequence_number,
                error_code,
            }
            .into()
        };
        let Some(channel) = self.channels.get_mut(&channel_id) else {
            return error("invalid-channel-id");
        };
        if job_id != channel.job_id {
            return error("invalid-job-id");
        }
        channel.accepted += 1;
        SubmitSharesSuccess {
            channel_id,
            last_sequence_number: sequence_number,
            new_submits_accepted_count: 1,
            new_shares_sum: 1,
        }
        .into()
    }
}

fn prev_hash(channel_id: u32, job_id: u32) -> SetNewPrevHash {
    SetNewPrevHash {
        channel_id,
        job_id,
        prev_hash: U256([0x22; 32]),
        min_ntime: 1_700_000_000,
        nbits: 0x1703_4219,
    }
}

/// Serves one connection (plain or Noise) until the miner hangs up.
pub async fn serve<C>(mut conn: C) -> Result<Session, CodecError>
where
    C: Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin,
{
    let mut session = Session::default();
    while let Some(msg) = conn.next().await {
        for reply in session.handle(msg?) {
            conn.feed(reply).await?;
        }
        conn.flush().await?;
    }
    Ok(session)
}

/// Listens and serves each connection in its own task.
#[tokio::main]
pub async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let listen = args
        .iter()
        .position(|a| a == "--listen")
        .and_then(|i| args.get(i + 1))
        .map_or("127.0.0.1:34254", String::as_str);
    let responder = if args.iter().any(|a| a == "--noise") {
        let authority = AuthorityKeypair::generate()?;
        let now = unix_time_now();
        let responder = Responder::from_authority(
            StaticKeypair::generate()?,
            &authority,
            now - 60,
            now + 86_400,
        )?;
        println!("authority key: {}", authority.public_key());
        Some(responder)
    } else {
        None
    };
    let listener = TcpListener::bind(listen).await?;
    println!("pool listening on {listen}");
    loop {
        let (tcp, peer) = listener.accept().await?;
        let responder = responder.clone();
        tokio::spawn(async move {
            // One type for both kinds of connection.
            let conn: Result<Connection<_>, _> = match responder {
                Some(r) => noise::accept(tcp, &r, Sv2Codec::<Message>::new())
                    .await
                    .map(Connection::from),
                None => Ok(Framed::new(tcp, Sv2Codec::<Message>::new()).into()),
            };
            let result = match conn {
                Ok(conn) => serve(conn).await,
                Err(e) => Err(e),
            };
            match result {
                Ok(s) => println!("{peer}: closed, {} channel(s)", s.channels.len()),
                Err(e) => println!("{peer}: {e}"),
            }
        });
    }
}
