//! The `pool` program on the `template_provider` program, both started as an operator
//! starts them: simulated miners on the pool find blocks at the Template Provider's easy
//! target, the pool submits them over Noise, the Template Provider's checks accept them
//! (as a node's would) and their coinbase pays the `--coinbase-output` given; losing the
//! Template Provider, the pool says so and dials again. A bad payout is a configuration
//! error. (A block with a broken coinbase refused by the Template Provider's checks:
//! `tests/template_provider.rs`.)
//!
//! The programs are the ones `cargo test --workspace` (or `-p sv2c-examples`) builds; for
//! this file alone, build them first: `cargo build --profile test -p sv2c-examples
//! --example pool --example template_provider`, then `cargo test -p sv2c-examples --test
//! pool_template_provider` (`--test` by itself does not rebuild them, and `--example` with
//! `cargo test` builds their test harness instead).

use std::path::Path;
use std::time::{Duration, Instant};

use bitcoin::{Address, Network, Script};
use sv2c_roles::miner::{MinerConfig, run_miner};
use tokio::net::TcpStream;

mod common;
use common::{Program, after, metric, rest, status_of};

/// The Template Provider on `listen`, over Noise with a fixed authority (so that a
/// restarted one is the same to the pool): its address and authority key.
fn template_provider(listen: &str, secret: &Path) -> (Program, String, String) {
    let mut tp = Program::start(
        "template_provider",
        &[
            "--listen",
            listen,
            "--authority-secret-file",
            secret.to_str().unwrap(),
            // One header in 65,536 is a block: tens a second from simulated miners, whose
            // shares the pool checks at about a million a second.
            "--difficulty-bits",
            "16",
            "--block-interval",
            "0",
            "--transactions",
            "5",
        ],
        None,
    );
    let key = after(
        &tp.line(true, "authority public key "),
        "authority public key ",
    );
    let addr = after(&tp.line(true, "listening on "), "listening on ");
    (tp, addr, key)
}

/// Blocks found by miners on the pool are submitted and accepted, paying the configured
/// output; the pool says when the Template Provider goes and comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_mines_on_the_template_provider_and_its_blocks_are_accepted() {
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("sv2c-pool-tp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let secret = dir.join("tp-authority.hex");
    std::fs::write(&secret, "01".repeat(32)).unwrap();
    let (tp, tp_addr, key) = template_provider("127.0.0.1:0", &secret);
    let payout = Address::p2wsh(Script::from_bytes(&[0x51]), Network::Regtest);
    let script = hex::encode(payout.script_pubkey().as_bytes());
    let payout = payout.to_string();
    let mut pool = Program::start(
        "pool",
        &[
            "--listen",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--template-provider",
            &tp_addr,
            "--tp-authority-key",
            &key,
            "--coinbase-output",
            &payout,
            "--network",
            "regtest",
            // Every share is accepted: only the network target makes a block.
            "--difficulty-bits",
            "0",
        ],
        None,
    );
    let pool_addr = after(&pool.line(true, "listening on "), "listening on ");
    let metrics = after(&pool.line(false, "metrics at http://"), "http://");
    pool.line(false, "template provider 127.0.0.1");
    let mut tp = tp;

    let miners: Vec<_> = (0..3)
        .map(|i| {
            let addr = pool_addr.clone();
            tokio::spawn(async move {
                let tcp = TcpStream::connect(&addr).await.unwrap();
                let config = MinerConfig {
                    user: format!("miner{i}"),
                    duration: Duration::from_millis(1500),
                    ..MinerConfig::default()
                };
                run_miner(tcp, config).await.unwrap()
            })
        })
        .collect();
    let mut submitted = 0;
    for miner in miners {
        let report = miner.await.unwrap();
        assert!(report.shares_accepted > 0, "{report:?}");
        assert!(
            report.prev_hashes > 1,
            "the tip moved with our blocks: {report:?}"
        );
        submitted += report.shares_submitted;
    }
    // The first block, in the pool's log and the Template Provider's, the same hash.
    let found = pool.line(false, "submitted to the template provider");
    let hash = after(&found, "block ");
    let accepted = tp.line(true, &format!("block accepted {hash}"));
    assert!(
        accepted.contains(&format!("sat to {script}")),
        "the coinbase pays {script}: {accepted}"
    );
    std::thread::sleep(Duration::from_millis(500));
    let lines = tp.stdout_so_far();
    let accepted = 1 + lines
        .iter()
        .filter(|l| l.contains("block accepted"))
        .count();
    let refused: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("block refused"))
        .collect();
    // Several shares of one job can be blocks: the first one moves the tip, the others
    // come for a template no longer on it. No other refusal.
    assert!(
        refused.iter().all(|l| l.contains("stale-prevblk")),
        "{refused:#?}"
    );
    let counted = metric(&metrics, "sv2c_pool_blocks_submitted_total");
    assert!(
        counted as usize >= accepted + refused.len(),
        "{counted} submitted"
    );
    assert_eq!(metric(&metrics, "sv2c_pool_template_provider_connected"), 1);
    eprintln!(
        "{submitted} shares, {accepted} blocks accepted, {} refused as stale, {counted} \
         submitted, in {:?}",
        refused.len(),
        started.elapsed()
    );
    assert!(accepted >= 2, "{accepted} blocks accepted");

    // The Template Provider goes: the pool says so, and dials again until it is back.
    drop(tp);
    pool.line(false, "dialling again");
    assert_eq!(metric(&metrics, "sv2c_pool_template_provider_connected"), 0);
    assert_eq!(
        status_of(&metrics, "/ready"),
        "HTTP/1.1 503 Service Unavailable"
    );
    assert_eq!(status_of(&metrics, "/health"), "HTTP/1.1 200 OK");
    let (_tp, _, _) = template_provider(&tp_addr, &secret);
    pool.line(false, ": connected");
    assert_eq!(metric(&metrics, "sv2c_pool_template_provider_connected"), 1);
    assert_eq!(status_of(&metrics, "/ready"), "HTTP/1.1 200 OK");
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("done in {:?}", started.elapsed());
}

/// A payout that is not an address of the network, or not a script, stops the pool before
/// it starts: one line naming the setting, exit code 2.
#[test]
fn a_bad_coinbase_output_is_one_line_and_exit_code_2() {
    let testnet = "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx";
    let cases: &[(&[&str], &str)] = &[
        (&["--coinbase-output", testnet], "coinbase_output"),
        (
            &["--coinbase-output", testnet, "--network", "regtest"],
            "coinbase_output",
        ),
        (&["--coinbase-output", "hex:nothex"], "coinbase_output"),
        (
            &["--coinbase-output", "1BoatSLRHtKNngkdXEeobR76b53LETtpyX"],
            "coinbase_output",
        ),
        (&["--network", "mainnet"], "network"),
        (
            &[
                "--tp-authority-key",
                "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72",
            ],
            "tp_authority_key",
        ),
    ];
    for (args, key) in cases {
        let mut pool = Program::start("pool", args, None);
        let status = pool.wait(Duration::from_secs(20));
        let err = pool.seen_stderr.clone();
        let out = rest(&pool.stdout);
        eprintln!("pool {}\n    → {err:?}", args.join(" "));
        assert_eq!(status.code(), Some(2), "{args:?}: {err:?}");
        assert_eq!(err.len(), 1, "{args:?}: one line, got {err:?}");
        assert!(
            err[0].starts_with(&format!("pool: {key} (--")),
            "{args:?}: {err:?}"
        );
        assert!(out.is_empty(), "{args:?}: nothing started, got {out:?}");
    }
}
