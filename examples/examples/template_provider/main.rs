//! `template_provider`: a Template Provider for tests, as a node would serve Template
//! Distribution (a pool, or a job declarator client in solo mining mode, connects to it),
//! on a made-up chain.
//!
//! ```text
//! template_provider [--listen HOST:PORT] [--noise] [--authority-secret-file FILE]
//!                   [--block-interval SECONDS] [--nbits HEX | --difficulty-bits N]
//!                   [--transactions N]
//! ```
//!
//! Each template holds `N` synthetic transactions (real ones that deserialise, spending
//! made-up outpoints), the coinbase's merkle path from their txids, the BIP34 height as
//! the coinbase prefix, and the BIP141 witness commitment a node puts in as the one
//! coinbase output. `RequestTransactionData` is answered with the transactions (and the
//! witness reserved value as `excess_data`), or `stale-template-id` /
//! `template-id-not-found`. Every `SubmitSolution` is checked as a node checks a block
//! before accepting it: the block deserialises, its merkle root is the one the template's
//! path gives, its header meets the `nbits` target, its coinbase has the right BIP34
//! height and witness commitment and pays no more than the template allows. Each outcome
//! is one line on stdout, `template_provider: block accepted HASH …` or
//! `template_provider: block refused: REASON (…)`, with Bitcoin Core's reason strings. The
//! tip moves every `--block-interval` seconds (another miner's block) and right after an
//! accepted block.
//!
//! ```text
//! cargo run --example template_provider -- --noise --block-interval 30
//! ```
//!
//! The chain and its checks are in `chain.rs`, the server in `server.rs`; the tests in
//! `tests.rs` drive it in-process over Template Distribution (`cargo test -p
//! sv2c-examples --example template_provider`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use bitcoin::Target;
use sv2c::noise::AuthorityKeypair;
use tokio::net::TcpListener;

mod chain;
mod server;
#[cfg(test)]
mod tests;

use server::{Config, TemplateProvider};

const USAGE: &str = "usage:
  template_provider [--listen HOST:PORT] [--noise] [--authority-secret-file FILE]
                    [--block-interval SECONDS] [--nbits HEX | --difficulty-bits N]
                    [--transactions N]
      a Template Provider on a made-up chain until Ctrl-C; default listen address
      127.0.0.1:8442. --noise: clients must use Noise NX; the authority secret is read
      from FILE (64 hex digits) or generated, and its public key printed.
      --block-interval: the tip moves every SECONDS (default 30; 0: only with our blocks).
      --nbits: the network target in compact form (default 207fffff, regtest's);
      --difficulty-bits N: a target with N leading zero bits instead.
      --transactions: synthetic transactions per template (default 4).
      One line per block submitted on stdout: `template_provider: block accepted HASH`
      or `template_provider: block refused: REASON`.";

/// The program's options.
#[derive(Debug, PartialEq)]
struct Args {
    listen: SocketAddr,
    noise: bool,
    secret_file: Option<PathBuf>,
    block_interval: Option<Duration>,
    nbits: u32,
    transactions: usize,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut out = Args {
        listen: SocketAddr::from(([127, 0, 0, 1], 8442)),
        noise: false,
        secret_file: None,
        block_interval: Some(Duration::from_secs(30)),
        nbits: 0x207f_ffff,
        transactions: 4,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .map(String::as_str)
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--listen" => {
                let v = value()?;
                out.listen = v.parse().map_err(|e| format!("--listen {v}: {e}"))?;
            }
            "--noise" => out.noise = true,
            "--authority-secret-file" => {
                out.secret_file = Some(PathBuf::from(value()?));
                out.noise = true;
            }
            "--block-interval" => {
                let v = value()?;
                let secs: f64 = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .ok_or_else(|| format!("--block-interval {v}: expected seconds"))?;
                out.block_interval = (secs > 0.0).then(|| Duration::from_secs_f64(secs));
            }
            "--nbits" => {
                let v = value()?;
                out.nbits = u32::from_str_radix(v.trim_start_matches("0x"), 16)
                    .map_err(|e| format!("--nbits {v}: {e}"))?;
            }
            "--difficulty-bits" => {
                let v = value()?;
                let bits: u32 = v
                    .parse()
                    .ok()
                    .filter(|b| (1..=255).contains(b))
                    .ok_or_else(|| format!("--difficulty-bits {v}: expected 1 to 255"))?;
                out.nbits = nbits_for_leading_zeros(bits);
            }
            "--transactions" => {
                let v = value()?;
                out.transactions = v
                    .parse()
                    .ok()
                    .filter(|n| *n <= 10_000)
                    .ok_or_else(|| format!("--transactions {v}: expected 0 to 10000"))?;
            }
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(out)
}

/// The compact form of the target with `bits` leading zero bits (rounded down by the
/// compact form's 3-byte mantissa).
fn nbits_for_leading_zeros(bits: u32) -> u32 {
    let mut be = [0xffu8; 32];
    for (i, byte) in be.iter_mut().enumerate() {
        let bit = (i as u32) * 8;
        if bit + 8 <= bits {
            *byte = 0;
        } else if bit < bits {
            *byte = 0xff >> (bits - bit);
        }
    }
    Target::from_be_bytes(be).to_compact_lossy().to_consensus()
}

fn authority(args: &Args) -> Result<Option<AuthorityKeypair>, String> {
    if !args.noise {
        return Ok(None);
    }
    let Some(path) = &args.secret_file else {
        return AuthorityKeypair::generate()
            .map(Some)
            .map_err(|e| e.to_string());
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let secret = hex::decode(text.trim())
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .ok_or_else(|| format!("{}: expected 64 hex digits", path.display()))?;
    AuthorityKeypair::from_secret_bytes(secret)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&args) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("template_provider: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let authority = match authority(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("template_provider: {e}");
            return ExitCode::from(2);
        }
    };
    let listener = match TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("template_provider: cannot listen on {}: {e}", args.listen);
            return ExitCode::FAILURE;
        }
    };
    let config = Config {
        nbits: args.nbits,
        transactions: args.transactions,
        block_interval: args.block_interval,
        authority,
    };
    let tp = match TemplateProvider::start(listener, config) {
        Ok(tp) => tp,
        Err(e) => {
            eprintln!("template_provider: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(key) = tp.authority_public_key() {
        println!("template_provider: authority public key {key}");
    }
    println!(
        "template_provider: listening on {} (nbits {:08x}, {} transactions a template)",
        tp.local_addr(),
        args.nbits,
        args.transactions
    );
    let _ = tokio::signal::ctrl_c().await;
    let (accepted, refused) = tp.counts();
    println!("template_provider: {accepted} blocks accepted, {refused} refused");
    ExitCode::SUCCESS
}
