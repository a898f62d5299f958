//! The installed programs' command line, run as processes: `--help` and `--version`,
//! settings from `SV2C_…` environment variables, the precedence flag > environment >
//! file, a single-value flag given twice refused with one line and exit code 2, and
//! `--upstream` repeated (pools in order of preference) with its keys checked, and an
//! address in use refused at start with one line and exit code 1.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

const POOL: &str = env!("CARGO_BIN_EXE_sv2c-pool");
const PROXY: &str = env!("CARGO_BIN_EXE_sv2c-proxy");

/// `program args` in an environment holding no `SV2C_` variable, stdin closed.
fn command(program: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(program);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SV2C_") {
            cmd.env_remove(key);
        }
    }
    cmd.args(args).stdin(Stdio::null());
    cmd
}

/// `program args` with `env` added to an environment holding no other `SV2C_` variable.
fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = command(program, args);
    cmd.envs(env.iter().copied()).output().unwrap()
}

/// The exit code and the stderr lines of a run that must not start.
fn refused(program: &str, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Vec<String>) {
    let out = run(program, args, env);
    assert!(
        out.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    (out.status.code(), err.lines().map(str::to_owned).collect())
}

#[test]
fn help_lists_every_flag_with_its_environment_variable() {
    for (program, flags) in [
        (
            POOL,
            &["--listen", "--noise", "--max-channels", "--coinbase-output"][..],
        ),
        (
            PROXY,
            &[
                "--upstream",
                "--aggregate",
                "--upstream-extensions",
                "--sv1-listen",
            ][..],
        ),
    ] {
        let out = run(program, &["--help"], &[]);
        assert_eq!(out.status.code(), Some(0));
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("Usage:"), "{help}");
        assert!(help.contains("--config <FILE>") && help.contains("[env: SV2C_CONFIG="));
        for flag in flags {
            let env = format!("[env: SV2C_{}=", flag[2..].replace('-', "_").to_uppercase());
            assert!(
                help.contains(flag) && help.contains(&env),
                "{flag} {env}: {help}"
            );
        }
    }
}

#[test]
fn version_is_the_package_version() {
    for (program, name) in [(POOL, "sv2c-pool"), (PROXY, "sv2c-proxy")] {
        let out = run(program, &["--version"], &[]);
        assert_eq!(out.status.code(), Some(0));
        let version = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            version.trim(),
            format!("{name} {}", env!("CARGO_PKG_VERSION"))
        );
    }
}

/// `SV2C_LISTEN` sets where the pool listens: it says so, then stops on SIGTERM.
#[test]
fn a_setting_from_the_environment_takes_effect() {
    let mut cmd = Command::new(POOL);
    cmd.env("SV2C_LISTEN", "127.0.0.2:0")
        .env_remove("SV2C_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let line = stdout
        .lines()
        .map_while(Result::ok)
        .find(|l| l.contains("listening on"));
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("a listening line");
    assert!(
        line.starts_with("sv2c-pool: listening on 127.0.0.2:"),
        "{line}"
    );
}

/// The same setting in the file, the environment and a flag: the flag wins, then the
/// environment, then the file (seen in the value the refusal names).
#[test]
fn a_flag_overrides_the_environment_which_overrides_the_file() {
    let dir = std::env::temp_dir().join(format!("sv2c-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pool.toml");
    std::fs::write(&file, "difficulty_bits = 300\n").unwrap();
    let file = file.to_str().unwrap();
    let env = [("SV2C_DIFFICULTY_BITS", "301")];
    for (args, env, value) in [
        (
            &["--config", file, "--difficulty-bits", "302"][..],
            &env[..],
            "302",
        ),
        (&["--config", file][..], &env[..], "301"),
        (&["--config", file][..], &[][..], "300"),
    ] {
        let (code, err) = refused(POOL, args, env);
        assert_eq!(code, Some(2), "{err:?}");
        assert_eq!(
            err,
            [format!(
                "sv2c-pool: difficulty_bits (--difficulty-bits, SV2C_DIFFICULTY_BITS): {value}: takes a number from 0 to 255"
            )]
        );
    }
    let (code, err) = refused(
        PROXY,
        &[],
        &[("SV2C_MAX_CHANNELS", "0"), ("SV2C_UPSTREAM", "127.0.0.1:1")],
    );
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        [
            "sv2c-proxy: max_channels (--max-channels, SV2C_MAX_CHANNELS): 0: takes a number from 1 to 10000000"
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_flag_given_twice_is_one_line_and_exit_code_2() {
    for (program, args) in [
        (
            POOL,
            &["--listen", "127.0.0.1:0", "--listen", "127.0.0.1:1"][..],
        ),
        (POOL, &["--noise", "--noise"][..]),
        (
            PROXY,
            &["--listen", "127.0.0.1:1", "--listen", "127.0.0.1:2"][..],
        ),
    ] {
        let (code, err) = refused(program, args, &[]);
        assert_eq!(code, Some(2), "{args:?}: {err:?}");
        assert_eq!(err.len(), 1, "{args:?}: {err:?}");
        assert!(err[0].contains("cannot be used multiple times"), "{err:?}");
        assert!(err[0].contains(args[0]), "{err:?} names {}", args[0]);
    }
    // `--upstream` is the one that repeats (pools in order of preference); a key count
    // that pairs with no upstream list is one line naming authority_key.
    let key = "9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh";
    let (code, err) = refused(
        PROXY,
        &[
            "--upstream",
            "127.0.0.1:1",
            "--upstream",
            "127.0.0.1:2",
            "--upstream",
            "127.0.0.1:3",
            "--authority-key",
            key,
            "--authority-key",
            key,
        ],
        &[],
    );
    assert_eq!(code, Some(2), "{err:?}");
    assert_eq!(
        err,
        [
            "sv2c-proxy: authority_key (--authority-key, SV2C_AUTHORITY_KEY): 2 keys for 3 \
             upstreams: give one key for all, or one per upstream in the same order (none for \
             a plain-TCP one)"
        ]
    );
    let (code, err) = refused(
        PROXY,
        &["--upstream", "127.0.0.1:1", "--upstream", "127.0.0.1:1"],
        &[],
    );
    assert_eq!(code, Some(2), "{err:?}");
    assert_eq!(
        err,
        ["sv2c-proxy: upstream (--upstream, SV2C_UPSTREAM): \"127.0.0.1:1\" is named twice"]
    );
    // A misspelt flag: one line, with clap's suggestion.
    let (code, err) = refused(PROXY, &["--listen-nois"], &[]);
    assert_eq!(code, Some(2));
    assert_eq!(
        err,
        [
            "sv2c-proxy: unexpected argument '--listen-nois' found; a similar argument exists: \
          '--listen-noise' (--help shows the usage)"
        ]
    );
    // A value of the wrong type, from a flag or the environment: one line too.
    let (code, err) = refused(POOL, &[], &[("SV2C_MAX_CHANNELS", "many")]);
    assert_eq!(code, Some(2));
    assert_eq!(err.len(), 1, "{err:?}");
    assert!(err[0].contains("--max-channels"), "{err:?}");
}

/// `program args` that must stop on its own within 20 s (killed otherwise): its exit code
/// and stderr lines.
fn exits_soon(program: &str, args: &[&str]) -> (Option<i32>, Vec<String>) {
    let mut child = command(program, args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} still running after 20 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let err = BufReader::new(child.stderr.take().unwrap());
    (status.code(), err.lines().map_while(Result::ok).collect())
}

#[test]
fn an_address_in_use_is_one_line_at_start() {
    // Another program listens here. The proxy has not dialled its pool (nothing answers
    // at 127.0.0.1:1) when it finds out: it does not keep retrying as if the pool were
    // to blame.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    for (program, args, says) in [
        (
            POOL,
            vec!["--listen", &addr],
            format!("cannot listen on {addr}"),
        ),
        (
            PROXY,
            vec!["--upstream", "127.0.0.1:1", "--listen", &addr],
            format!("cannot listen on {addr}"),
        ),
        (
            PROXY,
            vec![
                "--upstream",
                "127.0.0.1:1",
                "--listen",
                "127.0.0.1:0",
                "--aggregate",
                "--sv1-listen",
                &addr,
            ],
            format!("cannot listen for SV1 miners on {addr}"),
        ),
    ] {
        let (code, err) = exits_soon(program, &args);
        assert_eq!(code, Some(1), "{args:?}: {err:?}");
        let said: Vec<&String> = err.iter().filter(|l| l.contains(&says)).collect();
        assert_eq!(said.len(), 1, "{args:?}: {err:?}");
        assert!(said[0].contains("in use"), "{err:?}");
    }
}
