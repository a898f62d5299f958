//! The server under test as a process: started from the command after `--`, waited for
//! until it listens and is quiet.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};
use sv2c::noise::AuthorityPublicKey;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;

use super::BoxError;
use super::measure::cpu;

/// Starts `command`, returns it and the authority key it prints (if asked to find one).
pub(super) async fn spawn_target(
    command: &[String],
    want_key: bool,
) -> Result<(tokio::process::Child, Option<AuthorityPublicKey>), BoxError> {
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let mut key = None;
    if want_key {
        let found = tokio::time::timeout(Duration::from_secs(20), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(k) = line.split("authority public key ").nth(1) {
                    return k.split_whitespace().next().map(str::to_owned);
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .ok_or("the command printed no `authority public key` line")?;
        key = Some(found.parse::<AuthorityPublicKey>()?);
    }
    // Keep draining its output so that it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Ok((child, key))
}

/// Waits until something accepts connections at `addr`.
pub(super) async fn wait_listening(addr: SocketAddr) -> Result<(), BoxError> {
    for _ in 0..400 {
        if TcpStream::connect(addr).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Err(format!("nothing listens at {addr}").into())
}

/// Waits until `pid` uses less than a tenth of a core over 200 ms (at most 30 s).
pub(super) async fn wait_quiet(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let (before, _) = cpu(pid);
        tokio::time::sleep(Duration::from_millis(200)).await;
        if cpu(pid).0.saturating_sub(before) < 20_000_000 {
            return;
        }
    }
}
