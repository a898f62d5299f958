//! What the tests that run the example programs as processes share: finding a program's
//! binary, running it with its output lines on channels, and reading its HTTP endpoint.
//! Each test file uses a part of it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream as StdTcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The path of an example binary: the one `cargo test` built (it builds the examples of
/// the package with its tests), or, if there is none, built now.
pub(crate) fn example(name: &str) -> PathBuf {
    let path = example_path(name);
    if !path.exists() {
        build_example(name);
    }
    path
}

/// Builds the example `name` now (a no-op if it is up to date): for a test that needs
/// the binary of the current sources, not one built before.
pub(crate) fn build_example(name: &str) {
    let status = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--profile",
            "test",
            "-p",
            "sv2c-examples",
        ])
        .args(["--example", name])
        .status()
        .unwrap();
    assert!(status.success(), "cargo build --example {name}");
}

/// Where `cargo test` puts the example `name`.
fn example_path(name: &str) -> PathBuf {
    // target/<profile>/deps/<test>-… → target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(Path::parent).unwrap().to_owned();
    dir.join("examples").join(name)
}

/// The lines `r` gives, on a channel (read by a thread of their own).
pub(crate) fn lines(r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A program running, its output lines sent to channels (and those seen kept). Killed
/// when dropped.
pub(crate) struct Program {
    pub(crate) child: Child,
    pub(crate) stdout: mpsc::Receiver<String>,
    pub(crate) stderr: mpsc::Receiver<String>,
    /// Every stdout line seen so far.
    pub(crate) seen_stdout: Vec<String>,
    /// Every stderr line seen so far.
    pub(crate) seen_stderr: Vec<String>,
}

impl Program {
    /// The example `name` with `args`, and `RUST_LOG` set to `rust_log` (unset if `None`).
    pub(crate) fn start(name: &str, args: &[&str], rust_log: Option<&str>) -> Program {
        let mut cmd = Command::new(example(name));
        cmd.args(args);
        Program::spawn(cmd, rust_log)
    }

    /// [`Program::start`] with the open-files limit lowered to `files` (a shell's `ulimit
    /// -n`, then `exec`).
    pub(crate) fn start_with_open_files(name: &str, args: &[&str], files: u32) -> Program {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("ulimit -n {files} && exec \"$0\" \"$@\""))
            .arg(example(name))
            .args(args);
        Program::spawn(cmd, None)
    }

    pub(crate) fn spawn(mut cmd: Command, rust_log: Option<&str>) -> Program {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.env_remove("RUST_LOG");
        if let Some(level) = rust_log {
            cmd.env("RUST_LOG", level);
        }
        let mut child = cmd.spawn().unwrap();
        let stdout = lines(child.stdout.take().unwrap());
        let stderr = lines(child.stderr.take().unwrap());
        Program {
            child,
            stdout,
            stderr,
            seen_stdout: Vec::new(),
            seen_stderr: Vec::new(),
        }
    }

    /// The next line of stdout (`stdout`) or stderr containing `pattern`, within 30 s.
    pub(crate) fn line(&mut self, stdout: bool, pattern: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (rx, seen) = if stdout {
                (&self.stdout, &mut self.seen_stdout)
            } else {
                (&self.stderr, &mut self.seen_stderr)
            };
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    seen.push(line.clone());
                    if line.contains(pattern) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no line with {pattern:?}; seen: stdout {:#?}, stderr {:#?}",
                    self.seen_stdout, self.seen_stderr
                ),
            }
        }
    }

    /// The next stdout line containing `pattern`.
    pub(crate) fn stdout_line(&mut self, pattern: &str) -> String {
        self.line(true, pattern)
    }

    /// The next stderr line containing `pattern`.
    pub(crate) fn stderr_line(&mut self, pattern: &str) -> String {
        self.line(false, pattern)
    }

    /// Every line of stdout that came since the last look.
    pub(crate) fn stdout_so_far(&mut self) -> Vec<String> {
        let new: Vec<String> = self.stdout.try_iter().collect();
        self.seen_stdout.extend(new.iter().cloned());
        new
    }

    /// SIGTERM, then the exit: code 0 within 15 s.
    pub(crate) fn stop(&mut self) {
        self.sigterm();
        let status = self.wait(Duration::from_secs(15));
        assert_eq!(status.code(), Some(0), "{:?}", self.seen_stderr);
    }

    pub(crate) fn sigterm(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the exit (at most `limit`), then collects the rest of stderr into
    /// `seen_stderr`.
    pub(crate) fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                while let Ok(line) = self.stderr.recv_timeout(Duration::from_millis(200)) {
                    self.seen_stderr.push(line);
                }
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "still running after {limit:?}; stderr {:?}",
                    self.seen_stderr
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The lines of a program that exited (until its pipe closes).
pub(crate) fn rest(rx: &mpsc::Receiver<String>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(5)) {
        out.push(line);
    }
    out
}

/// The word in `line` after `marker`, up to a space, `/`, `)` or `;` (an address, a key).
pub(crate) fn after(line: &str, marker: &str) -> String {
    let rest = &line[line.find(marker).unwrap() + marker.len()..];
    rest.split([' ', '/', ')', ';']).next().unwrap().to_owned()
}

/// `GET path` on `addr`, the whole answer.
pub(crate) fn get(addr: &str, path: &str) -> String {
    let mut tcp = StdTcpStream::connect(addr).unwrap();
    tcp.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    answer
}

/// The status line of `GET path`.
pub(crate) fn status_of(addr: &str, path: &str) -> String {
    get(addr, path)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// `GET /metrics`, the body (the answer must be `200 OK`).
pub(crate) fn scrape(addr: &str) -> String {
    let answer = get(addr, "/metrics");
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    answer.split_once("\r\n\r\n").unwrap().1.to_owned()
}

/// The value of the sample `name` (with its labels, e.g. `x_total{a="b"}`) in `text`.
pub(crate) fn value(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// `GET /metrics` on `addr`, the value of the sample `name`.
pub(crate) fn metric(addr: &str, name: &str) -> u64 {
    value(&scrape(addr), name)
}
