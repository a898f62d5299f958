//! The Template Distribution server: accepts clients (a pool, a job declarator client),
//! over Noise or plain TCP, sends each the current template and its previous hash once it
//! has stated its coinbase constraints, a new pair whenever the tip moves (on a timer, or
//! after a block it accepted), answers `RequestTransactionData`, and checks every
//! `SubmitSolution` ([`Chain::submit`]).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bitcoin::BlockHash;
use sv2c::noise::{self, AuthorityKeypair, AuthorityPublicKey, Responder, StaticKeypair};
use sv2c::prelude::*;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;

use crate::chain::{Chain, Lookup, Refusal};

/// How long each handshake's certificate is valid (a new one is signed per connection).
const CERTIFICATE_VALIDITY: u32 = 24 * 3600;

/// What the Template Provider serves.
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// The network target of every block (`nbits`).
    pub(crate) nbits: u32,
    /// Synthetic transactions in each template.
    pub(crate) transactions: usize,
    /// Another node finds a block this often (`None`: the tip moves only with ours).
    pub(crate) block_interval: Option<Duration>,
    /// The Noise authority: clients must use Noise NX (`None`: plain TCP).
    pub(crate) authority: Option<AuthorityKeypair>,
}

/// What became of a `SubmitSolution`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    Accepted {
        template_id: u64,
        hash: BlockHash,
        height: u32,
    },
    Refused {
        template_id: u64,
        refusal: Refusal,
    },
}

/// A running Template Provider; its tasks end when it is dropped.
#[derive(Debug)]
pub(crate) struct TemplateProvider {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    chain: Mutex<Chain>,
    /// The current template's id: connections send a new template when it changes.
    tip: watch::Sender<u64>,
    outcomes: broadcast::Sender<Outcome>,
    accepted: AtomicU64,
    refused: AtomicU64,
    noise: Option<(AuthorityKeypair, StaticKeypair)>,
}

impl Shared {
    fn chain(&self) -> std::sync::MutexGuard<'_, Chain> {
        self.chain.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Announces the chain's current template to every connection.
    fn tip_moved(&self, chain: &Chain) {
        let t = chain.current();
        println!(
            "template_provider: new tip: template {} for height {} on {}",
            t.id, t.height, t.prev_hash
        );
        self.tip.send_replace(t.id);
    }
}

impl TemplateProvider {
    /// Serves on `listener` until dropped.
    ///
    /// # Errors
    /// The listener's address cannot be read, or a Noise key cannot be made.
    pub(crate) fn start(
        listener: TcpListener,
        config: Config,
    ) -> Result<TemplateProvider, Box<dyn std::error::Error + Send + Sync>> {
        let local_addr = listener.local_addr()?;
        let chain = Chain::new(config.nbits, config.transactions, noise::unix_time_now());
        let (tip, _) = watch::channel(chain.current().id);
        let noise = match config.authority {
            Some(a) => Some((a, StaticKeypair::generate()?)),
            None => None,
        };
        let shared = Arc::new(Shared {
            chain: Mutex::new(chain),
            tip,
            outcomes: broadcast::channel(64).0,
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            noise,
        });
        let mut tasks = vec![tokio::spawn(accept_loop(listener, shared.clone()))];
        if let Some(every) = config.block_interval {
            let shared = shared.clone();
            tasks.push(tokio::spawn(async move {
                let mut timer =
                    tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    timer.tick().await;
                    let mut chain = shared.chain();
                    chain.advance(noise::unix_time_now());
                    shared.tip_moved(&chain);
                }
            }));
        }
        Ok(TemplateProvider {
            local_addr,
            shared,
            tasks,
        })
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Clients verify the server with this key (`None`: no Noise).
    pub(crate) fn authority_public_key(&self) -> Option<AuthorityPublicKey> {
        self.shared.noise.as_ref().map(|(a, _)| a.public_key())
    }

    /// Every outcome from now on (the program reads its log lines instead).
    #[cfg(test)]
    pub(crate) fn outcomes(&self) -> broadcast::Receiver<Outcome> {
        self.shared.outcomes.subscribe()
    }

    /// Blocks accepted and refused so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (
            self.shared.accepted.load(Relaxed),
            self.shared.refused.load(Relaxed),
        )
    }
}

impl Drop for TemplateProvider {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let (tcp, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("template_provider: accept: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        tokio::spawn(connection(tcp, peer, shared.clone()));
    }
}

async fn connection(tcp: TcpStream, peer: SocketAddr, shared: Arc<Shared>) {
    let _ = tcp.set_nodelay(true);
    let result = match &shared.noise {
        Some((authority, key)) => {
            let now = noise::unix_time_now();
            let responder = match Responder::from_authority(
                key.clone(),
                authority,
                now,
                now + CERTIFICATE_VALIDITY,
            ) {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("template_provider: {peer}: certificate: {e}");
                    return;
                }
            };
            match noise::accept(tcp, &responder, Sv2Codec::<Message>::new()).await {
                Ok(conn) => serve(conn, &shared).await,
                Err(e) => Err(e),
            }
        }
        None => serve(Framed::new(tcp, Sv2Codec::<Message>::new()), &shared).await,
    };
    match result {
        Ok(()) => println!("template_provider: {peer} left"),
        Err(e) => println!("template_provider: {peer} left: {e}"),
    }
}

/// One client, until it hangs up.
async fn serve<C>(mut conn: C, shared: &Shared) -> Result<(), CodecError>
where
    C: Stream<Item = Result<Message, CodecError>> + Sink<Message, Error = CodecError> + Unpin,
{
    let mut tip = shared.tip.subscribe();
    let mut ready = false;
    loop {
        let msg = tokio::select! {
            msg = conn.next() => match msg {
                Some(msg) => msg?,
                None => return Ok(()),
            },
            changed = tip.changed(), if ready => {
                if changed.is_err() {
                    return Ok(());
                }
                tip.borrow_and_update();
                send_current(&mut conn, shared).await?;
                continue;
            }
        };
        match msg {
            Message::SetupConnection(setup) => {
                if setup.protocol != Protocol::TemplateDistribution {
                    let error = SetupConnectionError {
                        flags: 0,
                        error_code: Str0255::try_from("unsupported-protocol").unwrap_or_default(),
                    };
                    conn.send(Message::from(error)).await?;
                    return Ok(());
                }
                conn.send(Message::from(SetupConnectionSuccess {
                    used_version: 2,
                    flags: 0,
                }))
                .await?;
            }
            Message::CoinbaseOutputConstraints(c) => {
                println!(
                    "template_provider: coinbase constraints: {} bytes, {} sigops",
                    c.coinbase_output_max_additional_size, c.coinbase_output_max_additional_sigops
                );
                if !ready {
                    ready = true;
                    tip.borrow_and_update();
                    send_current(&mut conn, shared).await?;
                }
            }
            Message::RequestTransactionData(r) => {
                let answer = match shared.chain().lookup(r.template_id) {
                    Lookup::Current(t) => Message::from(t.transaction_data()),
                    Lookup::Stale => transaction_data_error(r.template_id, "stale-template-id"),
                    Lookup::NotFound => {
                        transaction_data_error(r.template_id, "template-id-not-found")
                    }
                };
                conn.send(answer).await?;
            }
            Message::SubmitSolution(s) => submit(shared, &s),
            _ => {}
        }
    }
}

/// The current template and the previous hash that activates it.
async fn send_current<C>(conn: &mut C, shared: &Shared) -> Result<(), CodecError>
where
    C: Sink<Message, Error = CodecError> + Unpin,
{
    let (template, prev_hash) = {
        let chain = shared.chain();
        let t = chain.current();
        (t.new_template_msg(), t.prev_hash_msg())
    };
    conn.feed(Message::from(template)).await?;
    conn.send(Message::from(prev_hash)).await
}

fn transaction_data_error(template_id: u64, code: &str) -> Message {
    Message::from(RequestTransactionDataError {
        template_id,
        error_code: Str0255::try_from(code).unwrap_or_default(),
    })
}

/// Checks a solution, logs and counts its outcome; an accepted block moves the tip.
fn submit(shared: &Shared, solution: &SubmitSolution) {
    let template_id = solution.template_id;
    let mut chain = shared.chain();
    let outcome = match chain.submit(solution, noise::unix_time_now()) {
        Ok((hash, height)) => {
            shared.accepted.fetch_add(1, Relaxed);
            println!(
                "template_provider: block accepted {hash} (height {height}, template \
                 {template_id}; coinbase pays {})",
                payouts(solution)
            );
            shared.tip_moved(&chain);
            Outcome::Accepted {
                template_id,
                hash,
                height,
            }
        }
        Err(refusal) => {
            shared.refused.fetch_add(1, Relaxed);
            println!("template_provider: block refused: {refusal} (template {template_id})");
            Outcome::Refused {
                template_id,
                refusal,
            }
        }
    };
    drop(chain);
    let _ = shared.outcomes.send(outcome);
}

/// The coinbase's outputs, `VALUE sat to SCRIPT_HEX` each, comma-separated (the coinbase
/// of an accepted block, which deserialises).
fn payouts(solution: &SubmitSolution) -> String {
    let coinbase: Result<bitcoin::Transaction, _> =
        bitcoin::consensus::deserialize(solution.coinbase_tx.as_bytes());
    let Ok(coinbase) = coinbase else {
        return "?".to_owned();
    };
    let outputs: Vec<String> = coinbase
        .output
        .iter()
        .map(|o| {
            format!(
                "{} sat to {}",
                o.value.to_sat(),
                hex::encode(o.script_pubkey.as_bytes())
            )
        })
        .collect();
    outputs.join(", ")
}
