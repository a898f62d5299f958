//! The options as the programs read them: flags, environment, files and the checks.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use sv2c_codec::noise::AuthorityPublicKey;
use sv2c_roles::proxy::{Failover, Upstream};

/// The command line `s` (flags and their values separated by spaces), parsed as the
/// programs parse theirs.
fn parse_line<T: clap::Args + clap::FromArgMatches>(
    s: &str,
) -> Result<CommandLine<T>, clap::Error> {
    use clap::Parser;
    CommandLine::try_parse_from(std::iter::once("test").chain(s.split_whitespace()))
}

fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/config")
        .join(name)
}

#[test]
fn the_example_files_load_and_resolve() {
    let pool: PoolOptions = load_file(&repo_file("pool.toml")).unwrap();
    assert_eq!(pool.listen.as_deref(), Some("127.0.0.1:34254"));
    let settings = pool.resolve().unwrap();
    assert_eq!(settings.pool.job_interval, Duration::from_secs(10));
    assert!(settings.metrics.is_some());
    let proxy: ProxyOptions = load_file(&repo_file("proxy.toml")).unwrap();
    let settings = proxy.resolve().unwrap();
    assert!(matches!(
        settings.mode,
        ProxyMode::Proxy { ref upstreams, upstream_flags: 4, .. }
            if upstreams[..] == [Upstream { address: "127.0.0.1:34254".into(), authority: None }]
    ));
}

#[test]
fn aggregate_is_a_proxy_flag_that_needs_upstream() {
    let line = parse_line::<ProxyOptions>("--upstream 127.0.0.1:1 --aggregate").unwrap();
    let settings = line.flags.resolve().unwrap();
    assert!(matches!(
        settings.mode,
        ProxyMode::Proxy {
            aggregate: true,
            ..
        }
    ));
    let line = parse_line::<ProxyOptions>("--upstream 127.0.0.1:1").unwrap();
    let settings = line.flags.resolve().unwrap();
    assert!(matches!(
        settings.mode,
        ProxyMode::Proxy {
            aggregate: false,
            ..
        }
    ));
    let line = parse_line::<ProxyOptions>("--aggregate").unwrap();
    assert!(matches!(
        line.flags.resolve(),
        Err(ConfigError::Value {
            key: "aggregate",
            ..
        })
    ));
}

/// `sv1_listen` is a flag and a key; it needs `upstream` and `aggregate`, and
/// `sv1_pow2_difficulty` needs it. Each error names its key.
#[test]
fn sv1_listen_needs_the_aggregating_proxy() {
    let resolve = |line: &str| parse_line::<ProxyOptions>(line).unwrap().flags.resolve();
    let ok = resolve(
        "--upstream 127.0.0.1:1 --aggregate --sv1-listen 127.0.0.1:3333 --sv1-pow2-difficulty",
    )
    .unwrap();
    assert!(matches!(
        ok.mode,
        ProxyMode::Proxy {
            sv1_listen: Some(a),
            sv1_pow2_difficulty: true,
            ..
        } if a.port() == 3333
    ));
    let key = |r: Result<ProxySettings, ConfigError>| match r {
        Err(ConfigError::Value { key, .. }) => key,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        key(resolve(
            "--upstream 127.0.0.1:1 --sv1-listen 127.0.0.1:3333"
        )),
        "sv1_listen"
    );
    assert_eq!(
        key(resolve(
            "--upstream 127.0.0.1:1 --aggregate --sv1-listen nowhere"
        )),
        "sv1_listen"
    );
    assert_eq!(key(resolve("--sv1-listen 127.0.0.1:3333")), "sv1_listen");
    assert_eq!(
        key(resolve(
            "--upstream 127.0.0.1:1 --aggregate --sv1-pow2-difficulty"
        )),
        "sv1_pow2_difficulty"
    );
    let file: ProxyOptions =
        toml::from_str("sv1_listen = \"0.0.0.0:3333\"\nsv1_pow2_difficulty = true").unwrap();
    assert_eq!(file.sv1_listen.as_deref(), Some("0.0.0.0:3333"));
}

/// `aggregate_hashrate` is a flag and a key, a positive number, with `aggregate`;
/// 1e12 without it.
#[test]
fn aggregate_hashrate_is_checked() {
    let resolve = |line: &str| parse_line::<ProxyOptions>(line).unwrap().flags.resolve();
    let hashrate = |line: &str| match resolve(line) {
        Ok(ProxySettings {
            mode: ProxyMode::Proxy {
                aggregate_hashrate, ..
            },
            ..
        }) => Ok(aggregate_hashrate),
        Ok(other) => panic!("{other:?}"),
        Err(ConfigError::Value { key, .. }) => Err(key),
        Err(other) => panic!("{other:?}"),
    };
    assert_eq!(hashrate("--upstream 127.0.0.1:1 --aggregate"), Ok(1e12));
    assert_eq!(
        hashrate("--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate 50"),
        Ok(50.0)
    );
    for bad in [
        "--upstream 127.0.0.1:1 --aggregate-hashrate 50",
        "--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate 0",
        "--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate -3",
        "--upstream 127.0.0.1:1 --aggregate --aggregate-hashrate 1e60",
        "--aggregate-hashrate 50",
    ] {
        assert_eq!(hashrate(bad), Err("aggregate_hashrate"), "{bad}");
    }
    let file: ProxyOptions = toml::from_str("aggregate_hashrate = 2.5e15").unwrap();
    assert_eq!(file.aggregate_hashrate, Some(2.5e15));
}

/// The proxy's share and channel bounds and its extensions come from flags (and the
/// file), with their defaults, and need `upstream`.
#[test]
fn the_proxy_bounds_and_extensions_are_flags() {
    let mode = |line: &str| {
        let line = parse_line::<ProxyOptions>(line).unwrap();
        match line.flags.resolve().unwrap().mode {
            ProxyMode::Proxy {
                upstream_extensions,
                max_unconfirmed_shares,
                max_channels,
                ..
            } => (upstream_extensions, max_unconfirmed_shares, max_channels),
            ProxyMode::Demo { .. } => panic!("a proxy expected"),
        }
    };
    assert_eq!(mode("--upstream 127.0.0.1:1"), (vec![2], 1024, 200_000));
    assert_eq!(
        mode(
            "--upstream 127.0.0.1:1 --upstream-extensions none --max-unconfirmed-shares 8 \
             --max-channels 50"
        ),
        (vec![], 8, 50)
    );
    assert_eq!(
        mode("--upstream 127.0.0.1:1 --upstream-extensions 0x2,2").0,
        vec![2, 2]
    );
    for (line, key) in [
        ("--max-channels 5", "max_channels"),
        ("--upstream-extensions 2", "upstream_extensions"),
        ("--upstream 127.0.0.1:1 --max-channels 0", "max_channels"),
        (
            "--upstream 127.0.0.1:1 --max-unconfirmed-shares 0",
            "max_unconfirmed_shares",
        ),
        (
            "--upstream 127.0.0.1:1 --max-connections-per-address 0",
            "max_connections_per_address",
        ),
        (
            "--max-connections-per-address 4",
            "max_connections_per_address",
        ),
    ] {
        let line = parse_line::<ProxyOptions>(line).unwrap();
        assert!(
            matches!(line.flags.resolve(), Err(ConfigError::Value { key: k, .. }) if k == key),
            "{key}"
        );
    }
    assert!(parse_line::<ProxyOptions>("--upstream-extensions x").is_err());
}

/// `--upstream` repeats (or takes a comma-separated list), in order of preference;
/// `--authority-key` is one key for all or one per upstream in the same order; the
/// file takes `upstream`/`upstreams` and `authority_key`/`authority_keys`, a string
/// or a list; the failover timeouts are flags with their defaults.
#[test]
fn upstreams_are_ordered_and_paired_with_their_keys() {
    const KEY: &str = "9bXiEd8boQVhq7WddEcERUL5tyyJVFYdU8th3HfbNXK3Yw6GRXh";
    let key: AuthorityPublicKey = KEY.parse().unwrap();
    let proxy = |options: ProxyOptions| match options.resolve().unwrap().mode {
        ProxyMode::Proxy {
            upstreams,
            failover,
            ..
        } => (upstreams, failover),
        ProxyMode::Demo { .. } => panic!("a proxy expected"),
    };
    let line = |l: &str| parse_line::<ProxyOptions>(l).unwrap().flags;
    let up = |address: &str, authority| Upstream {
        address: address.into(),
        authority,
    };
    let (upstreams, failover) = proxy(line("--upstream 127.0.0.1:1"));
    assert_eq!(upstreams, [up("127.0.0.1:1", None)]);
    assert_eq!(failover, Failover::default());
    let (upstreams, _) = proxy(line(&format!(
        "--upstream 127.0.0.1:1 --upstream [::1]:2 --authority-key {KEY}"
    )));
    assert_eq!(
        upstreams,
        [up("127.0.0.1:1", Some(key)), up("[::1]:2", Some(key))]
    );
    let (upstreams, failover) = proxy(line(&format!(
        "--upstream 127.0.0.1:1,127.0.0.1:2 --authority-key none --authority-key {KEY} \
         --upstream-silence-timeout 0.5 --upstream-return-hold 2"
    )));
    assert_eq!(
        upstreams,
        [up("127.0.0.1:1", None), up("127.0.0.1:2", Some(key))]
    );
    assert_eq!(
        failover,
        Failover {
            silence: Duration::from_millis(500),
            hold: Duration::from_secs(2)
        }
    );
    for text in [
        format!("upstreams = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\nauthority_key = \"{KEY}\""),
        format!(
            "upstream = [\"127.0.0.1:1\", \"127.0.0.1:2\"]\nauthority_keys = [\"{KEY}\", \"{KEY}\"]"
        ),
    ] {
        let file: ProxyOptions = toml::from_str(&text).unwrap();
        let (upstreams, _) = proxy(file);
        assert_eq!(
            upstreams,
            [up("127.0.0.1:1", Some(key)), up("127.0.0.1:2", Some(key))],
            "{text}"
        );
    }
    // A flag replaces the file's whole list.
    let file: ProxyOptions = toml::from_str("upstream = \"127.0.0.1:1\"").unwrap();
    let (upstreams, _) = proxy(file.overlay(line("--upstream 127.0.0.1:2")));
    assert_eq!(upstreams, [up("127.0.0.1:2", None)]);
    for (l, bad_key) in [
        (
            format!(
                "--upstream 127.0.0.1:1 --upstream 127.0.0.1:2 --upstream 127.0.0.1:3 --authority-key {KEY},{KEY}"
            ),
            "authority_key",
        ),
        (
            "--upstream 127.0.0.1:1 --upstream 127.0.0.1:1".to_owned(),
            "upstream",
        ),
        (
            "--upstream 127.0.0.1:1 --upstream nowhere".to_owned(),
            "upstream",
        ),
        (
            "--upstream 127.0.0.1:1 --upstream 127.0.0.1:2 --authority-key none --noise".to_owned(),
            "noise",
        ),
        (
            "--upstream 127.0.0.1:1 --upstream-silence-timeout 0".to_owned(),
            "upstream_silence_timeout",
        ),
        (
            "--upstream 127.0.0.1:1 --upstream-return-hold -1".to_owned(),
            "upstream_return_hold",
        ),
        (
            "--upstream-return-hold 1".to_owned(),
            "upstream_return_hold",
        ),
    ] {
        let e = line(&l).resolve().unwrap_err();
        assert!(
            matches!(e, ConfigError::Value { key, .. } if key == bad_key),
            "{l}: {e}"
        );
    }
    let empty: ProxyOptions = toml::from_str("upstreams = []").unwrap();
    assert!(empty.resolve().is_err());
}

#[test]
fn the_proxy_runs_a_worker_per_core_unless_told() {
    let workers = |line: &str| {
        let line = parse_line::<ProxyOptions>(line).unwrap();
        match line.flags.resolve().unwrap().mode {
            ProxyMode::Proxy { workers, .. } => workers,
            ProxyMode::Demo { .. } => unreachable!("a proxy was configured"),
        }
    };
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(workers("--upstream 127.0.0.1:1"), cores.min(256));
    assert_eq!(workers("--upstream 127.0.0.1:1 --workers 3"), 3);
    // Workers of more threads: one runtime thread per core, at least one worker.
    assert_eq!(
        workers("--upstream 127.0.0.1:1 --threads 2"),
        (cores / 2).max(1)
    );
    assert_eq!(default_workers(1024), 1);
}

/// A flag that takes one value, given twice, is an error (`--upstream` takes several);
/// a switch alone is `true`,
/// and `--noise=false` turns off the file's `noise = true`.
#[test]
fn a_flag_given_twice_is_an_error_and_a_switch_can_be_turned_off() {
    for line in [
        "--listen 127.0.0.1:1 --listen 127.0.0.1:2",
        "--noise --noise",
        "--config a.toml --config b.toml",
    ] {
        let e = parse_line::<PoolOptions>(line).unwrap_err().to_string();
        assert!(e.contains("cannot be used multiple times"), "{line}: {e}");
    }
    let e = parse_line::<ProxyOptions>("--listen 127.0.0.1:1 --listen 127.0.0.1:2");
    assert!(e.is_err());
    // But for `--upstream`, which names pools in order of preference.
    let line = parse_line::<ProxyOptions>("--upstream 127.0.0.1:1 --upstream 127.0.0.1:2");
    assert_eq!(line.unwrap().flags.upstream.unwrap().len(), 2);
    let file: PoolOptions = toml::from_str("noise = true").unwrap();
    let off = parse_line::<PoolOptions>("--noise=false").unwrap().flags;
    assert_eq!(file.overlay(off).noise, Some(false));
    assert_eq!(
        parse_line::<PoolOptions>("--noise").unwrap().flags.noise,
        Some(true)
    );
    assert_eq!(parse_line::<PoolOptions>("").unwrap().flags.noise, None);
    // A switch's value follows `=`: the next word is not taken as its value.
    assert!(parse_line::<PoolOptions>("--noise true").is_err());
    let flags = parse_line::<ProxyOptions>("--upstream-flags 0x6")
        .unwrap()
        .flags;
    assert_eq!(flags.upstream_flags, Some(6));
}

#[test]
fn flags_override_the_file() {
    let file: PoolOptions =
        toml::from_str("difficulty_bits = 12\nlisten = \"127.0.0.1:1\"").unwrap();
    let line = parse_line::<PoolOptions>("--difficulty-bits 3 --noise").unwrap();
    let merged = file.overlay(line.flags);
    assert_eq!(merged.difficulty_bits, Some(3));
    assert_eq!(merged.listen.as_deref(), Some("127.0.0.1:1"));
    assert_eq!(merged.noise, Some(true));
}

#[test]
fn errors_name_the_key() {
    let e = toml::from_str::<PoolOptions>("listen = \"x\"\nbogus = 1\n").unwrap_err();
    assert!(e.message().contains("unknown field `bogus`"), "{e}");
    let e = PoolOptions {
        listen: Some("nowhere".into()),
        ..Default::default()
    }
    .resolve()
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("listen (--listen, SV2C_LISTEN): \"nowhere\""),
        "{e}"
    );
    let e = ProxyOptions {
        upstream: Some(vec!["127.0.0.1:1".into()]),
        authority_key: Some(vec!["not-a-key".into()]),
        ..Default::default()
    }
    .resolve()
    .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("authority_key (--authority-key, SV2C_AUTHORITY_KEY): \"not-a-key\""),
        "{e}"
    );
}

#[test]
fn pool_threads_are_one_to_256() {
    let line = parse_line::<PoolOptions>("--threads 1").unwrap();
    assert_eq!(line.flags.resolve().unwrap().threads, Some(1));
    assert_eq!(PoolOptions::default().resolve().unwrap().threads, None);
    for bad in ["0", "257"] {
        let line = parse_line::<PoolOptions>(&format!("--threads {bad}")).unwrap();
        let e = line.flags.resolve().unwrap_err();
        assert!(
            e.to_string()
                .starts_with("threads (--threads, SV2C_THREADS)"),
            "{e}"
        );
    }
}

#[test]
fn the_key_stock_is_zero_to_a_million_keys() {
    let stock = |line: &str| {
        let line = parse_line::<PoolOptions>(line).unwrap();
        let pool = line.flags.resolve().unwrap().pool;
        pool.noise.unwrap().keys_in_stock()
    };
    assert_eq!(stock("--noise --key-stock 0"), 0);
    // The stock's thread fills it in the background.
    let line = parse_line::<PoolOptions>("--noise --key-stock 3").unwrap();
    let identity = line.flags.resolve().unwrap().pool.noise.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while identity.keys_in_stock() < 3 {
        assert!(std::time::Instant::now() < deadline, "no stock made");
        std::thread::sleep(Duration::from_millis(5));
    }
    for line in [
        "--noise --key-stock 1000001",
        "--upstream 127.0.0.1:1 --listen-noise --key-stock 1000001",
    ] {
        let e = if line.starts_with("--noise") {
            let line = parse_line::<PoolOptions>(line).unwrap();
            line.flags.resolve().map(|_| ()).unwrap_err()
        } else {
            let line = parse_line::<ProxyOptions>(line).unwrap();
            line.flags.resolve().map(|_| ()).unwrap_err()
        };
        assert!(
            e.to_string()
                .starts_with("key_stock (--key-stock, SV2C_KEY_STOCK)"),
            "{e}"
        );
    }
}

#[test]
fn shares_per_minute_turns_vardiff_on_within_its_range() {
    let line = parse_line::<PoolOptions>("--shares-per-minute 20").unwrap();
    let pool = line.flags.resolve().unwrap().pool;
    assert_eq!(pool.vardiff.map(|v| v.shares_per_minute), Some(20.0));
    assert_eq!(PoolOptions::default().resolve().unwrap().pool.vardiff, None);
    for bad in ["0", "-3", "7000", "NaN"] {
        let line = parse_line::<PoolOptions>(&format!("--shares-per-minute {bad}"));
        let e = line.unwrap().flags.resolve().unwrap_err();
        assert!(
            e.to_string()
                .starts_with("shares_per_minute (--shares-per-minute, SV2C_SHARES_PER_MINUTE)"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn the_pool_budgets_come_from_flags_and_file_and_must_admit_something() {
    let file: PoolOptions = toml::from_str(
        "max_channels = 500\nmax_channels_per_connection = 50\n\
         max_connections_per_address = 4\nmax_workers = 7\n",
    )
    .unwrap();
    let line =
        parse_line::<PoolOptions>("--max-channels 600 --max-workers 0 --worker-active 60").unwrap();
    let pool = file.overlay(line.flags).resolve().unwrap().pool;
    assert_eq!(
        (
            pool.max_channels,
            pool.max_channels_per_connection,
            pool.max_connections_per_address,
            pool.max_workers
        ),
        (600, 50, Some(4), 0)
    );
    assert_eq!(pool.worker_active, Duration::from_secs(60));
    let line = parse_line::<PoolOptions>("--worker-active 0").unwrap();
    let e = line.flags.resolve().unwrap_err();
    assert_eq!(
        e.to_string(),
        "worker_active (--worker-active, SV2C_WORKER_ACTIVE): 0: takes seconds from 1 to 86400"
    );
    let defaults = PoolOptions::default().resolve().unwrap().pool;
    assert_eq!(
        defaults.max_channels,
        sv2c_roles::pool::DEFAULT_MAX_CHANNELS
    );
    assert_eq!(defaults.max_connections_per_address, None);
    for flag in [
        "max-channels",
        "max-channels-per-connection",
        "max-connections-per-address",
    ] {
        let line = parse_line::<PoolOptions>(&format!("--{flag} 0")).unwrap();
        let e = line.flags.resolve().unwrap_err();
        let key = flag.replace('-', "_");
        assert_eq!(
            e.to_string(),
            format!(
                "{key} (--{flag}, SV2C_{}): takes a positive number",
                key.to_uppercase()
            )
        );
    }
}

/// The payout: an address of the network (mainnet by default), or `hex:` and a script;
/// anything else names its key. Without it, `OP_TRUE`.
#[test]
fn the_coinbase_output_is_an_address_of_the_network_or_a_script() {
    let output = |line: &str| {
        let line = parse_line::<PoolOptions>(line).unwrap();
        line.flags.resolve().map(|s| s.pool.coinbase_output)
    };
    let program = [
        &[0x00, 0x14][..],
        &hex::decode("751e76e8199196d454941c45d1b3a323f1433bd6").unwrap(),
    ]
    .concat();
    assert_eq!(output("").unwrap(), [0x51]);
    assert_eq!(
        output("--coinbase-output bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4").unwrap(),
        program
    );
    assert_eq!(
        output("--coinbase-output tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx --network testnet4")
            .unwrap(),
        program
    );
    let regtest = bitcoin::Address::p2wsh(
        bitcoin::Script::from_bytes(&[0x51]),
        bitcoin::Network::Regtest,
    );
    let line = format!("--coinbase-output {regtest} --network regtest");
    assert_eq!(output(&line).unwrap(), regtest.script_pubkey().into_bytes());
    assert_eq!(
        output("--coinbase-output hex:0014aa").unwrap(),
        [0x00, 0x14, 0xaa]
    );
    for (line, starts) in [
        (
            "--coinbase-output tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx",
            "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT): \"tb1q",
        ),
        (
            "--coinbase-output bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5",
            "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT): \"bc1q",
        ),
        (
            "--coinbase-output hex:zz",
            "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT)",
        ),
        (
            "--coinbase-output hex:",
            "coinbase_output (--coinbase-output, SV2C_COINBASE_OUTPUT)",
        ),
        (
            "--network mainnet",
            "network (--network, SV2C_NETWORK): \"mainnet\"",
        ),
        (
            "--coinbase-output hex:51 --network x",
            "network (--network, SV2C_NETWORK)",
        ),
    ] {
        let e = output(line).unwrap_err().to_string();
        assert!(e.starts_with(starts), "{line}: {e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn the_template_provider_and_its_key() {
    let tp = |line: &str| {
        let line = parse_line::<PoolOptions>(line).unwrap();
        line.flags.resolve().map(|s| s.pool.template_provider)
    };
    assert_eq!(tp("").unwrap(), None);
    let plain = tp("--template-provider 127.0.0.1:8442").unwrap().unwrap();
    assert_eq!(
        (plain.address.as_str(), plain.authority_key),
        ("127.0.0.1:8442", None)
    );
    let key = "9auqWEzQDVyd2oe1JVGFLMLHZtCo2FFqZwtKA5gd9xbuEu7PH72";
    let noise = tp(&format!(
        "--template-provider 127.0.0.1:8442 --tp-authority-key {key}"
    ));
    assert_eq!(
        noise.unwrap().unwrap().authority_key.unwrap().to_string(),
        key
    );
    let e = tp(&format!("--tp-authority-key {key}"))
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "tp_authority_key (--tp-authority-key, SV2C_TP_AUTHORITY_KEY): needs template_provider"
    );
    let e = tp("--template-provider 127.0.0.1:1 --tp-authority-key x").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("tp_authority_key (--tp-authority-key, SV2C_TP_AUTHORITY_KEY): \"x\""),
        "{e}"
    );
    let e = tp("--template-provider nowhere").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("template_provider (--template-provider, SV2C_TEMPLATE_PROVIDER)"),
        "{e}"
    );
    let file: PoolOptions = toml::from_str(
        "template_provider = \"127.0.0.1:1\"\ncoinbase_output = \"hex:51\"\nnetwork = \"regtest\"\n",
    )
    .unwrap();
    let pool = file.resolve().unwrap().pool;
    assert_eq!(pool.template_provider.unwrap().address, "127.0.0.1:1");
}
