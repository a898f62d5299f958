//! The fault table's first row, small: two `pool` programs, `mining_proxy --upstream A
//! --upstream B` in front of them, and `loadgen faults` with 50 miners that reconnect by
//! themselves. Pool A is killed (SIGKILL): every miner has a share accepted again within
//! 2 s (p99), none is lost. `scripts/faults.sh` runs every fault at 5,000 miners.
//!
//! The example binaries are the ones `cargo test` builds with the tests (`cargo test -p
//! sv2c-examples --test faults --example pool --example mining_proxy --example loadgen`
//! for this file alone). `cargo test` builds `loadgen` only as its unit-test harness: the
//! first run here builds the program (about a minute in CI's test step, where CI's
//! `loadgen` step then finds it built).

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use common::{Program, after, example, lines};

const MINERS: usize = 50;

/// A `pool` program on a port of its own: the program and its miners' address.
fn pool() -> (Program, String) {
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--difficulty-bits",
        "0",
        "--metrics",
        "127.0.0.1:0",
    ];
    let mut pool = Program::start("pool", &args, None);
    let addr = after(&pool.stdout_line("listening on "), "listening on ");
    (pool, addr)
}

/// The `name=value` field of a `loadgen faults` answer.
fn field(line: &str, name: &str) -> String {
    after(line, &format!(" {name}="))
}

fn fault_a(mode_flags: &[&str]) {
    let (mut first, a) = pool();
    let (_second, b) = pool();
    let mut args = vec![
        "--upstream",
        &a,
        "--upstream",
        &b,
        "--upstream-return-hold",
        "1",
        "--listen",
        "127.0.0.1:0",
        "--listen-noise",
    ];
    args.extend_from_slice(mode_flags);
    let mut proxy = Program::start("mining_proxy", &args, None);
    let key = after(
        &proxy.stdout_line("authority public key "),
        "authority public key ",
    );
    let addr = after(
        &proxy.stderr_line("miners connect to "),
        "miners connect to ",
    );

    let mut cmd = Command::new(example("loadgen"));
    cmd.args(["faults", "--miners", &MINERS.to_string(), "--rate", "2"])
        .args([
            "--deadline",
            "10",
            "--target",
            &addr,
            "--authority-key",
            &key,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = lines(child.stdout.take().unwrap());
    let stderr = lines(child.stderr.take().unwrap());
    let mut loadgen = Program {
        child,
        stdout,
        stderr,
        seen_stdout: Vec::new(),
        seen_stderr: Vec::new(),
    };
    let ready = loadgen.stdout_line("ready ");
    assert_eq!(field(&ready, "accepted_miners"), MINERS.to_string());

    writeln!(stdin, "fault a").unwrap();
    let _ = first.child.kill();
    let _ = first.child.wait();
    let r = loadgen.stdout_line("recovered a ");
    eprintln!("{mode_flags:?}: {r}");
    assert_eq!(field(&r, "lost"), "0", "{r}");
    let p99: u64 = field(&r, "p99_ms").parse().unwrap();
    assert!(p99 <= 2000, "{r}");
    writeln!(stdin, "quit").unwrap();
    drop(stdin);
    assert!(loadgen.wait(std::time::Duration::from_secs(10)).success());
}

/// Forwarding mode: pool A killed, every miner mining on B within 2 s (p99), none lost.
#[test]
fn miners_recover_from_a_killed_pool_through_the_forwarding_proxy() {
    fault_a(&[]);
}

/// Aggregating mode: the same.
#[test]
fn miners_recover_from_a_killed_pool_through_the_aggregating_proxy() {
    fault_a(&["--aggregate"]);
}
