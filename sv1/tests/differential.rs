//! This crate beside SRI's `sv1_api` 6.0.0 on the lines of `tests/data/firmware-lines.txt`.
//!
//! Each line is read by both and summed up as one string of what the caller gets (method,
//! id, every field; for a response, what `sv1_api` classifies it as). The summaries must
//! be equal, except on the lines the corpus marks with `#! differs: <reason>`, which must
//! differ (so that the list stays true). The reasons, also listed in the crate README:
const REASONS: &[(&str, &str)] = &[
    (
        "numeric-ids-only",
        "sv1_api's ids are `u64`: a request with a string id reads as a notification and \
         then as an unknown method, a response with one does not read at all. JSON-RPC \
         allows string ids, and proxies and test clients send them.",
    ),
    (
        "suggest-difficulty-value",
        "sv1_api reads `mining.suggest_difficulty` without its parameter or id \
         (`SuggestDifficulty()`), so the difficulty ESP-Miner and WhatsMiner ask for is lost \
         and the request cannot be answered.",
    ),
    (
        "min-bit-count-string",
        "BIP 310's `version-rolling.min-bit-count` is an integer; sv1_api reads a string \
         `\"16\"` as hex (22). We read a string of digits as the decimal number it spells.",
    ),
    (
        "minimum-difficulty-fraction",
        "sv1_api refuses a fractional `minimum-difficulty.value` (it wants a `u64`); \
         difficulties are fractional elsewhere in SV1 (`mining.set_difficulty`), so we keep \
         an `f64`.",
    ),
    (
        "authorize-without-password",
        "`mining.authorize` with the name only: sv1_api requires two strings (its own docs say \
         the password may be omitted); we read the password as empty.",
    ),
    (
        "client-reconnect",
        "sv1_api has no `client.reconnect`; we type it.",
    ),
];

use sv1_api::methods::{Client2Server, Method, MethodError, Server2Client, Server2ClientResponse};
use sv1_api::server_to_client::Configure as ApiConfigureResult;
use sv1_api::utils::HexU32Be;
use sv2c_sv1::{Body, Id, Response, SUBSCRIBE_EXTRANONCE, Sv1Message};

const CORPUS: &str = include_str!("data/firmware-lines.txt");

/// A number as both sides print it: whole numbers without a fraction.
fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn opt_word(v: Option<u32>) -> String {
    v.map_or("-".into(), |v| format!("{v:08x}"))
}

fn id(id: &Id) -> String {
    match id {
        Id::Num(n) => n.to_string(),
        Id::Str(s) => format!("{s:?}"),
        Id::Null => "null".into(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ===== ours =====

fn ours(line: &str) -> String {
    let msg = match Sv1Message::from_line(line.as_bytes()) {
        Ok(m) => m,
        Err(_) => return "invalid".into(),
    };
    let i = id(&msg.id);
    match &msg.body {
        Body::Subscribe(s) => format!(
            "subscribe id={i} agent={} session={}",
            s.user_agent.as_deref().unwrap_or(""),
            s.session_id.as_deref().unwrap_or("-").to_lowercase()
        ),
        Body::Authorize(a) => format!("authorize id={i} name={} password={}", a.name, a.password),
        Body::Configure(c) => format!(
            "configure id={i} mask={} min-bits={} min-diff={} subscribe-extranonce={}",
            opt_word(c.version_rolling_mask),
            opt_word(c.version_rolling_min_bit_count),
            c.minimum_difficulty.map_or("-".into(), num),
            c.has_extension(SUBSCRIBE_EXTRANONCE)
        ),
        Body::SuggestDifficulty(s) => {
            format!("suggest_difficulty id={i} difficulty={}", num(s.difficulty))
        }
        Body::ExtranonceSubscribe => format!("extranonce.subscribe id={i}"),
        Body::Submit(s) => format!(
            "submit id={i} worker={} job={} en2={} ntime={:08x} nonce={:08x} version={}",
            s.worker,
            s.job_id,
            s.extranonce2,
            s.ntime,
            s.nonce,
            opt_word(s.version_bits)
        ),
        Body::Notify(n) => format!(
            "notify job={} prevhash={} coinb1={} coinb2={} branch={:?} version={:08x} nbits={:08x} ntime={:08x} clean={}",
            n.job_id,
            hex(&n.prevhash),
            hex(&n.coinb1),
            hex(&n.coinb2),
            n.merkle_branch.iter().map(|h| hex(h)).collect::<Vec<_>>(),
            n.version,
            n.nbits,
            n.ntime,
            n.clean_jobs
        ),
        Body::SetDifficulty(d) => format!("set_difficulty {}", num(d.difficulty)),
        Body::SetExtranonce(e) => {
            format!("set_extranonce {} {}", e.extranonce1, e.extranonce2_size)
        }
        Body::SetVersionMask(m) => format!("set_version_mask {:08x}", m.mask),
        Body::Reconnect(r) => format!("reconnect {r:?}"),
        Body::Response(r) => response(&i, r),
        Body::Unknown { method, .. } => format!("unknown {method}"),
        other => format!("{other:?}"),
    }
}

/// A response classified as sv1_api does: error, subscribe result, configure result,
/// boolean.
fn response(i: &str, r: &Response) -> String {
    if let Some(e) = &r.error {
        return format!("error id={i} code={} message={}", e.code, e.message);
    }
    if let Ok(s) = r.subscribe_result() {
        return format!(
            "subscribe-result id={i} subscriptions={:?} en1={} en2-size={}",
            s.subscriptions, s.extranonce1, s.extranonce2_size
        );
    }
    if let Ok(c) = r.configure_result() {
        return format!(
            "configure-result id={i} version-rolling={:?} mask={} min-diff={:?}",
            c.version_rolling,
            opt_word(c.version_rolling_mask),
            c.minimum_difficulty
        );
    }
    match r.as_bool() {
        Some(b) => format!("bool id={i} {b}"),
        None => "invalid".into(),
    }
}

// ===== sv1_api =====

fn word(v: &HexU32Be) -> String {
    format!("{:08x}", v.0)
}

fn theirs(line: &str) -> String {
    let Ok(msg) = serde_json::from_str::<sv1_api::Message>(line) else {
        return "invalid".into();
    };
    let method = match Method::try_from(msg) {
        Ok(m) => m,
        Err(MethodError::MethodNotFound(m)) => return format!("unknown {m}"),
        Err(_) => return "invalid".into(),
    };
    match method {
        Method::Client2Server(c) => match c {
            Client2Server::Subscribe(s) => format!(
                "subscribe id={} agent={} session={}",
                s.id,
                s.agent_signature,
                s.extranonce1.map_or("-".into(), |e| e.to_string())
            ),
            Client2Server::Authorize(a) => {
                format!(
                    "authorize id={} name={} password={}",
                    a.id, a.name, a.password
                )
            }
            Client2Server::Configure(c) => {
                let (mut mask, mut bits, mut diff, mut sub) =
                    ("-".into(), "-".into(), "-".into(), false);
                for ext in &c.extensions {
                    use sv1_api::client_to_server::ConfigureExtension as E;
                    match ext {
                        E::VersionRolling(p) => {
                            mask = p.get_mask().as_ref().map_or("-".into(), word);
                            bits = p.get_min_bit_count().as_ref().map_or("-".into(), word);
                        }
                        E::MinimumDifficulty(d) => diff = d.to_string(),
                        E::SubcribeExtraNonce => sub = true,
                        E::Info(_) => {}
                    }
                }
                format!(
                    "configure id={} mask={mask} min-bits={bits} min-diff={diff} subscribe-extranonce={sub}",
                    c.id
                )
            }
            Client2Server::SuggestDifficulty() => "suggest_difficulty (no id, no value)".into(),
            Client2Server::ExtranonceSubscribe(e) => format!("extranonce.subscribe id={}", e.id),
            Client2Server::Submit(s) => format!(
                "submit id={} worker={} job={} en2={} ntime={} nonce={} version={}",
                s.id,
                s.user_name,
                s.job_id,
                s.extra_nonce2,
                word(&s.time),
                word(&s.nonce),
                s.version_bits.as_ref().map_or("-".into(), word)
            ),
        },
        Method::Server2Client(s) => match s {
            Server2Client::Notify(n) => format!(
                "notify job={} prevhash={} coinb1={} coinb2={} branch={:?} version={} nbits={} ntime={} clean={}",
                n.job_id,
                String::from(n.prev_hash),
                n.coin_base1,
                n.coin_base2,
                n.merkle_branch
                    .iter()
                    .map(|h| h.to_string())
                    .collect::<Vec<_>>(),
                word(&n.version),
                word(&n.bits),
                word(&n.time),
                n.clean_jobs
            ),
            Server2Client::SetDifficulty(d) => format!("set_difficulty {}", num(d.value)),
            Server2Client::SetExtranonce(e) => {
                format!("set_extranonce {} {}", e.extra_nonce1, e.extra_nonce2_size)
            }
            Server2Client::SetVersionMask(m) => {
                format!("set_version_mask {}", word(&m.version_mask))
            }
        },
        Method::Server2ClientResponse(r) => match r {
            Server2ClientResponse::Subscribe(s) => format!(
                "subscribe-result id={} subscriptions={:?} en1={} en2-size={}",
                s.id, s.subscriptions, s.extra_nonce1, s.extra_nonce2_size
            ),
            Server2ClientResponse::Configure(c) => configure_result(&c),
            Server2ClientResponse::GeneralResponse(g) => format!("bool id={} {}", g.id, g.result),
            other => format!("{other:?}"),
        },
        Method::ErrorMessage(m) => match m {
            sv1_api::Message::ErrorResponse(r) => {
                let e = r.error.expect("an error response has an error");
                format!("error id={} code={} message={}", r.id, e.code, e.message)
            }
            other => format!("{other:?}"),
        },
    }
}

fn configure_result(c: &ApiConfigureResult) -> String {
    let (vr, mask) = match &c.version_rolling {
        Some(p) => (Some(p.version_rolling), word(&p.version_rolling_mask)),
        None => (None, "-".into()),
    };
    format!(
        "configure-result id={} version-rolling={vr:?} mask={mask} min-diff={:?}",
        c.id, c.minimum_difficulty
    )
}

#[test]
fn firmware_lines_read_alike_but_for_the_listed_differences() {
    let mut expected_reason: Option<&str> = None;
    let (mut agree, mut differ) = (0, 0);
    let mut by_reason: Vec<(&str, usize)> = REASONS.iter().map(|(k, _)| (*k, 0)).collect();
    let mut failures = Vec::new();
    for (n, line) in CORPUS.lines().enumerate() {
        let n = n + 1;
        if let Some(reason) = line.strip_prefix("#! differs: ") {
            let reason = reason.trim();
            assert!(
                REASONS.iter().any(|(k, _)| *k == reason),
                "line {n}: unknown reason {reason}"
            );
            expected_reason = Some(reason);
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (a, b) = (ours(line), theirs(line));
        match expected_reason.take() {
            None if a == b => agree += 1,
            None => failures.push(format!(
                "line {n}: unexpected difference\n  ours:    {a}\n  sv1_api: {b}"
            )),
            Some(reason) if a != b => {
                differ += 1;
                by_reason
                    .iter_mut()
                    .find(|(k, _)| *k == reason)
                    .expect("known")
                    .1 += 1;
                println!("line {n} differs ({reason}):\n  ours:    {a}\n  sv1_api: {b}");
            }
            Some(reason) => {
                failures.push(format!("line {n}: marked `{reason}` but both read: {a}"))
            }
        }
    }
    println!("\n{agree} lines read alike, {differ} differ as listed:");
    for ((reason, count), (_, why)) in by_reason.iter().zip(REASONS) {
        println!("  {count} x {reason}: {why}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        by_reason.iter().all(|(_, c)| *c > 0),
        "every reason is shown by a line"
    );
    assert!(agree >= 30, "the corpus shrank: {agree} agreeing lines");
}
