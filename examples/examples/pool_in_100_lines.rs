//! `pool_in_100_lines`: a pool that checks proof of work, on the `sv2c` facade alone.
//! Over plain TCP it accepts miners (`SetupConnection`), opens standard channels, gives each
//! a job and a chain tip, checks every share and answers a read's shares together (one
//! `SubmitShares.Success` per run of accepted shares). `cargo run --example
//! pool_in_100_lines [-- ADDR]`; the `sv2c-channels` crate docs walk through the same steps.
//! The template is fixed (no Template Provider), the payout script a placeholder.

use sv2c::channels::acks::Acks;
use sv2c::channels::server::{ChainTip, CoinbaseOutput, ServerChannel, Share};
use sv2c::channels::{codes, pow};
use sv2c::prelude::*;
use tokio::net::{TcpListener, TcpStream};

/// The block template every job is built from: height 840,000, 3.125 BTC, no transactions.
fn template() -> NewTemplate {
    NewTemplate {
        template_id: 1,
        future_template: true, // mined from the chain tip on
        version: 0x2000_0000,
        coinbase_tx_version: 2,
        coinbase_prefix: B0255::try_from(&[0x03, 0x40, 0xd1, 0x0c][..]).unwrap_or_default(),
        coinbase_tx_value_remaining: 312_500_000,
        ..Default::default()
    }
}

/// The chain tip the template's job is mined on.
fn tip() -> ChainTip {
    ChainTip {
        template_id: 1,
        prev_hash: [0x44; 32],
        min_ntime: 1_700_000_000,
        nbits: 0x1703_4219,
        network_target: pow::target_from_nbits(0x1703_4219).unwrap_or(U256([0; 32])),
    }
}

/// Channel `id` for `o`, and the messages that open it: success, job, chain tip.
fn open(id: u32, o: &OpenStandardMiningChannel) -> (ServerChannel, Vec<Message>) {
    // The miner's `max_target`, or 8 zero bits (256 hashes a share) if that is harder.
    let target = pow::harder(&o.max_target, &pow::target_with_zero_bits(8));
    let payout = CoinbaseOutput {
        value: 312_500_000,
        script_pubkey: vec![0x51],
    };
    let mut channel = ServerChannel::standard(id, id.to_be_bytes().into(), target, 0, vec![payout]);
    let ok = OpenStandardMiningChannelSuccess {
        request_id: o.request_id,
        channel_id: id,
        target,
        extranonce_prefix: B032::try_from(&id.to_be_bytes()[..]).unwrap_or_default(),
        group_channel_id: 0,
    };
    let mut out = vec![ok.into()];
    if let Ok(job) = channel.on_new_template(&template()) {
        out.push(channel.standard_job_message(&job, true).into());
        out.extend(channel.set_chain_tip(tip()).map(Message::from));
    }
    (channel, out)
}

/// One miner: `SetupConnection` first; then each read's messages are handled in order and
/// the answers sent together.
async fn connection(tcp: TcpStream) -> Result<(), CodecError> {
    let mut conn = Framed::new(tcp, Sv2Codec::<Message>::new());
    let setup = conn.next().await.transpose()?;
    if !matches!(setup, Some(Message::SetupConnection(s)) if s.protocol == Protocol::Mining) {
        return Ok(()); // anything else first: hang up
    }
    let ok = SetupConnectionSuccess {
        used_version: 2,
        flags: 0,
    };
    conn.send(ok).await?;
    let (mut channels, mut acks, mut out) =
        (std::collections::HashMap::new(), Acks::new(), Vec::new());
    while read_batch(&mut conn, |m| match m {
        MessageRef::OpenStandardMiningChannel(o) => {
            out.extend(acks.drain().map(|((), a)| Message::from(a))); // answers in order
            let (channel, messages) = open(channels.len() as u32 + 1, &o.to_owned_value());
            channels.insert(channel.channel_id(), channel);
            out.extend(messages);
        }
        MessageRef::SubmitSharesStandard(s) => {
            let (id, seq) = (s.channel_id, s.sequence_number);
            let Some(c) = channels.get_mut(&id) else {
                return acks.refused((), id, seq, codes::INVALID_CHANNEL_ID);
            };
            match c.validate_share(&Share::from(s)) {
                Ok(_) => acks.accepted((), id, seq, pow::target_to_difficulty(c.target())),
                Err(e) => acks.refused((), id, seq, e.code()),
            }
        }
        _ => {} // anything else is ignored
    })
    .await?
    .is_some()
    {
        out.extend(acks.drain().map(|((), a)| Message::from(a)));
        let mut answers = futures::stream::iter(out.drain(..).map(Ok));
        conn.send_all(&mut answers).await?;
    }
    Ok(())
}

/// Accepts miners until the listener fails, each on its own task.
pub async fn serve(listener: TcpListener) -> std::io::Result<()> {
    loop {
        let (tcp, peer) = listener.accept().await?;
        tokio::spawn(async move { connection(tcp).await.map_err(|e| eprintln!("{peer}: {e}")) });
    }
}

/// `cargo run --example pool_in_100_lines [-- ADDR]` (default 127.0.0.1:34255).
#[tokio::main]
pub async fn main() -> std::io::Result<()> {
    let addr = std::env::args().nth(1);
    let listener = TcpListener::bind(addr.as_deref().unwrap_or("127.0.0.1:34255")).await?;
    println!("pool listening on {}", listener.local_addr()?);
    serve(listener).await
}
