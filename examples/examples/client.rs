//! `client`: a miner-side Stratum V2 client in one file, written on the `sv2c` facade,
//! for the `pool_server` example (or any Sv2 pool). It sets the connection up, opens a
//! standard and an extended channel, waits for each channel's job and previous hash, and
//! submits one share on each.
//!
//! ```text
//! cargo run --example client                            # plain TCP to 127.0.0.1:34254
//! cargo run --example client -- --noise KEY             # Noise NX, KEY from pool_server --noise
//! cargo run --example client -- --connect HOST:PORT
//! ```

use std::error::Error;

use sv2c::noise::{self, AuthorityPublicKey, Initiator};
use sv2c::prelude::*;
use tokio::net::TcpStream;

/// What the pool answered, for the caller to check.
#[derive(Debug, Default)]
pub struct Summary {
    /// `(channel_id, extended)` of every channel opened.
    pub channels: Vec<(u32, bool)>,
    /// Shares the pool accepted.
    pub accepted: u32,
    /// Error codes of rejected shares.
    pub rejected: Vec<String>,
}

/// The next message, or an error if the pool hung up.
async fn recv<C>(conn: &mut C) -> Result<Message, Box<dyn Error>>
where
    C: Stream<Item = Result<Message, CodecError>> + Unpin,
{
    Ok(conn.next().await.ok_or("pool closed the connection")??)
}

/// Runs the session on a connected transport (plain or Noise).
pub async fn run<C>(mut conn: C) -> Result<Summary, Box<dyn Error>>
where
    C: Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin,
{
    let setup = SetupConnection {
        protocol: Protocol::Mining,
        min_version: 2,
        max_version: 2,
        endpoint_host: "127.0.0.1".parse()?,
        endpoint_port: 34254,
        vendor: "sv2c-example".parse()?,
        // Standard and extended channels are both fine; jobs must allow version rolling.
        flags: MiningSetupFlags::REQUIRES_VERSION_ROLLING.bits(),
        ..Default::default()
    };
    conn.send(setup.into()).await?;
    match recv(&mut conn).await? {
        Message::SetupConnectionSuccess(s) => {
            // The server's flags are typed apart from the client's: same bits, other meanings.
            println!("setup: version {}, {:?}", s.used_version, s.mining_flags());
        }
        other => return Err(format!("setup refused: {other:?}").into()),
    }

    let mut summary = Summary::default();
    for (request_id, extended) in [(1, false), (2, true)] {
        let open: Message = if extended {
            OpenExtendedMiningChannel {
                request_id,
                user_identity: "alice.rig2".parse()?,
                nominal_hash_rate: 1.0e14,
                max_target: U256([0xff; 32]),
                min_extranonce_size: 4,
            }
            .into()
        } else {
            OpenStandardMiningChannel {
                request_id,
                user_identity: "alice.rig1".parse()?,
                nominal_hash_rate: 1.0e13,
                max_target: U256([0xff; 32]),
            }
            .into()
        };
        conn.send(open).await?;

        // The channel, its job and the previous hash, then mine "instantly".
        let (mut channel_id, mut job_id, mut ready) = (0, 0, false);
        while !ready {
            match recv(&mut conn).await? {
                Message::OpenStandardMiningChannelSuccess(s) => channel_id = s.channel_id,
                Message::OpenExtendedMiningChannelSuccess(s) => channel_id = s.channel_id,
                Message::NewMiningJob(j) => job_id = j.job_id,
                Message::NewExtendedMiningJob(j) => job_id = j.job_id,
                Message::SetNewPrevHash(p) => ready = p.job_id == job_id,
                other => return Err(format!("unexpected while opening: {other:?}").into()),
            }
        }
        println!("channel {channel_id} (extended: {extended}): job {job_id}");
        summary.channels.push((channel_id, extended));

        let (nonce, ntime, version) = (0x1234_5678, 1_700_000_000, 0x2000_0000);
        let share: Message = if extended {
            SubmitSharesExtended {
                channel_id,
                sequence_number: 0,
                job_id,
                nonce,
                ntime,
                version,
                extranonce: B032::try_from(&[0u8; 4][..])?,
            }
            .into()
        } else {
            SubmitSharesStandard {
                channel_id,
                sequence_number: 0,
                job_id,
                nonce,
                ntime,
                version,
            }
            .into()
        };
        conn.send(share).await?;
        match recv(&mut conn).await? {
            Message::SubmitSharesSuccess(s) => summary.accepted += s.new_submits_accepted_count,
            Message::SubmitSharesError(e) => summary.rejected.push(e.error_code.to_string()),
            other => return Err(format!("unexpected answer to a share: {other:?}").into()),
        }
    }
    conn.close().await?;
    Ok(summary)
}

/// Connects (plain or Noise) and runs the session.
#[tokio::main]
pub async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
    };
    let addr = arg("--connect").map_or("127.0.0.1:34254", String::as_str);
    let tcp = TcpStream::connect(addr).await?;
    // One type for both kinds of connection.
    let conn: Connection<TcpStream> = match arg("--noise") {
        Some(key) => {
            let key: AuthorityPublicKey = key.parse()?;
            noise::connect(tcp, Initiator::new(key)?, Sv2Codec::<Message>::new())
                .await?
                .into()
        }
        None => Framed::new(tcp, Sv2Codec::<Message>::new()).into(),
    };
    let summary = run(conn).await?;
    println!("{summary:?}");
    Ok(())
}
