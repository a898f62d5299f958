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
//! path gives, its header meets the `nbits` target, it weighs at most 4 M units, its
//! coinbase script is 2 to 100 bytes and starts with the right BIP34 height, its witness
//! commitment is right and it pays no more than the template allows. A block on a tip
//! that is no longer the tip is refused (`stale-prevblk`; a node would keep it as a
//! fork). Each outcome
//! is one line on stdout, `template_provider: block accepted HASH (…; coinbase pays VALUE
//! sat to SCRIPT, …)` or
//! `template_provider: block refused: REASON (…)`, with Bitcoin Core's reason strings. The
//! tip moves every `--block-interval` seconds (another miner's block) and right after an
//! accepted block.
//!
//! ```text
//! cargo run --example template_provider -- --noise --block-interval 30
//! ```
//!
//! The chain and its checks are in `chain.rs`, the server in `server.rs`, the command line
//! in `args.rs`; `examples/tests/template_provider.rs` drives it in-process over Template
//! Distribution (`cargo test -p sv2c-examples --test template_provider`).

use std::process::ExitCode;

use sv2c::noise::AuthorityKeypair;
use tokio::net::TcpListener;

mod args;
mod chain;
mod server;

use args::{Args, USAGE, parse};
use server::{Config, TemplateProvider};

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
