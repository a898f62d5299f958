//! Running SRI's published programs in the interop tests (`translator_interop.rs`,
//! `pool_sv2_interop.rs`): finding the installed binary, and starting it on a free port.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep};

/// The program `name`: the path in the environment variable `env_var` if it is set, else
/// `$CARGO_HOME/bin/<name>` if it exists. When it is missing, a test under CI fails, saying
/// how to install it (`install`); otherwise this returns `None` and the test passes with
/// that note.
pub(crate) fn binary_or_skip(name: &str, env_var: &str, install: &str) -> Option<PathBuf> {
    let found = std::env::var_os(env_var).map(PathBuf::from).or_else(|| {
        let home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
        let path = home.join("bin").join(name);
        path.exists().then_some(path)
    });
    if found.is_none() {
        let msg = format!("{name} not installed: {install} (or set {env_var})");
        assert!(std::env::var_os("CI").is_none(), "{msg}");
        eprintln!("skipped: {msg}");
    }
    found
}

/// A free loopback port for a program to listen on, bound and released here. It lies below
/// the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`): a released
/// port from `bind(0)` is one of those, which any socket may take next (an outgoing
/// connection, its TIME_WAIT, another `bind(0)`) before the program binds it. Below the
/// range only an explicit bind takes a port, and the pick is random, so that the tests
/// running at once do not pick the same one.
pub(crate) async fn free_port() -> u16 {
    use std::hash::{BuildHasher, Hasher};
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let below = ephemeral.saturating_sub(10_000);
    if below >= 1_000 {
        for _ in 0..100 {
            let random = std::collections::hash_map::RandomState::new()
                .build_hasher()
                .finish();
            let port = 10_000 + (random % u64::from(below)) as u16;
            if TcpListener::bind(("127.0.0.1", port)).await.is_ok() {
                return port;
            }
        }
    }
    // No room below the range (or every pick taken): one of the range's.
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap().port()
}

/// Starts `binary` with `args`, its output going to `log`, and waits up to 30 s for it to
/// listen on `addr`. The child is killed when dropped.
pub(crate) async fn spawn_listening(
    binary: &Path,
    args: &[&OsStr],
    log: &Path,
    addr: SocketAddr,
) -> Child {
    let out = std::fs::File::create(log).unwrap();
    let child = Command::new(binary)
        .args(args)
        .stdout(Stdio::from(out.try_clone().unwrap()))
        .stderr(Stdio::from(out))
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(addr).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "{} did not listen on {addr} within 30 s; see {}",
            binary.display(),
            log.display()
        );
        sleep(Duration::from_millis(100)).await;
    }
    child
}

/// Starts our `mining_proxy` program (`program`) aggregating one worker's miners onto
/// `upstream` over Noise (checked against `authority`) and serving SV1 miners on a port
/// of its own, with `extra` flags; its log is `dir/mining_proxy.log`. Returns the child
/// (killed on drop) and the SV1 address.
pub(crate) async fn start_sv1_proxy(
    program: &Path,
    dir: &Path,
    upstream: SocketAddr,
    authority: &str,
    extra: &[&str],
) -> (Child, SocketAddr) {
    let sv1: SocketAddr = format!("127.0.0.1:{}", free_port().await).parse().unwrap();
    let (upstream, sv1_text) = (upstream.to_string(), sv1.to_string());
    let mut args = vec![
        "--upstream",
        &upstream,
        "--authority-key",
        authority,
        "--listen",
        "127.0.0.1:0",
        "--aggregate",
        "--workers",
        "1",
        "--sv1-listen",
        &sv1_text,
    ];
    args.extend_from_slice(extra);
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    let child = spawn_listening(program, &args, &dir.join("mining_proxy.log"), sv1).await;
    (child, sv1)
}

pub(crate) mod sv1_api_miner;
