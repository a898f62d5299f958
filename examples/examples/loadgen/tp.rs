//! A minimal Template Provider (for SRI's `pool_sv2`, which needs one): a template and a
//! chain tip on connect, a new block on demand.

use std::net::SocketAddr;
use std::sync::Arc;
use sv2c::noise::{self, AuthorityKeypair, Responder, StaticKeypair};
use sv2c::prelude::*;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::BoxError;

/// Serves Template Distribution to one pool at a time: one future template for an empty
/// block and the previous hash that activates it, once the pool states its coinbase
/// constraints; then a new block (template and previous hash) whenever `blocks` changes.
pub(super) async fn template_provider(
    addr: SocketAddr,
    blocks: watch::Receiver<u32>,
) -> Result<(), BoxError> {
    let listener = TcpListener::bind(addr).await?;
    let authority = AuthorityKeypair::generate()?;
    let now = noise::unix_time_now();
    let responder = Arc::new(Responder::from_authority(
        StaticKeypair::generate()?,
        &authority,
        now,
        now + 86_400,
    )?);
    loop {
        let (tcp, _) = listener.accept().await?;
        let responder = responder.clone();
        let mut blocks = blocks.clone();
        tokio::spawn(async move {
            let Ok(mut conn) = noise::accept(tcp, &responder, Sv2Codec::<Message>::new()).await
            else {
                return;
            };
            let mut ready = false;
            loop {
                let block = tokio::select! {
                    msg = conn.next() => match msg {
                        Some(Ok(Message::SetupConnection(_))) => {
                            let ok = SetupConnectionSuccess { used_version: 2, flags: 0 };
                            if conn.send(Message::from(ok)).await.is_err() {
                                return;
                            }
                            continue;
                        }
                        Some(Ok(Message::CoinbaseOutputConstraints(_))) if !ready => {
                            ready = true;
                            *blocks.borrow_and_update()
                        }
                        Some(Ok(_)) => continue,
                        Some(Err(_)) | None => return,
                    },
                    changed = blocks.changed(), if ready => match changed {
                        Ok(()) => *blocks.borrow_and_update(),
                        Err(_) => return,
                    },
                };
                if send_block(&mut conn, block).await.is_err() {
                    return;
                }
            }
        });
    }
}

/// Block `n` of the Template Provider: a future template and the previous hash that
/// activates it.
pub(super) async fn send_block<T>(conn: &mut T, n: u32) -> Result<(), CodecError>
where
    T: futures::Sink<Message, Error = CodecError> + Unpin,
{
    let template_id = u64::from(n) + 1;
    let height = 840_000 + n;
    let template = NewTemplate {
        template_id,
        future_template: true,
        version: 0x2000_0000,
        coinbase_tx_version: 2,
        coinbase_prefix: B0255::try_from(vec![
            0x03,
            height as u8,
            (height >> 8) as u8,
            (height >> 16) as u8,
        ])
        .unwrap_or_default(),
        coinbase_tx_input_sequence: 0xffff_ffff,
        coinbase_tx_value_remaining: 625_000_000,
        coinbase_tx_outputs_count: 0,
        coinbase_tx_outputs: B064K::default(),
        coinbase_tx_locktime: 0,
        merkle_path: Seq0255::default(),
    };
    let mut prev_hash = [0x11; 32];
    prev_hash[..4].copy_from_slice(&n.to_le_bytes());
    let prev_hash = SetNewPrevHashTdp {
        template_id,
        prev_hash: U256(prev_hash),
        header_timestamp: noise::unix_time_now(),
        n_bits: 0x1d00_ffff,
        target: U256([0; 32]),
    };
    conn.feed(Message::from(template)).await?;
    conn.send(Message::from(prev_hash)).await
}

// ===== floors =====
