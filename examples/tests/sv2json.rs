//! The `sv2json` logic on the project's vector file and on bad input.

#[path = "../examples/sv2json/convert.rs"]
#[allow(dead_code)]
mod sv2json;

use std::io::Cursor;
use std::path::PathBuf;

use serde_json::Value;
use sv2json::{CheckReport, Summary};

fn vector_file() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests-data/sv2-vectors.jsonl");
    std::fs::read_to_string(path).expect("tests-data/sv2-vectors.jsonl")
}

/// How many vectors the file holds: one per non-empty line.
fn vector_count(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty()).count()
}

fn run_check(text: &str) -> (CheckReport, Vec<String>) {
    let mut out = Vec::new();
    let report = sv2json::check(Cursor::new(text), &mut out).unwrap();
    let lines = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    (report, lines)
}

fn run_decode(input: &str) -> (Summary, Vec<String>, Vec<String>) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let summary = sv2json::decode_hex_lines(Cursor::new(input), &mut out, &mut err).unwrap();
    let lines = |b: Vec<u8>| {
        String::from_utf8(b)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    (summary, lines(out), lines(err))
}

fn run_encode(input: &str) -> (Summary, Vec<String>, Vec<String>) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let summary = sv2json::encode_lines(Cursor::new(input), &mut out, &mut err).unwrap();
    let lines = |b: Vec<u8>| {
        String::from_utf8(b)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    (summary, lines(out), lines(err))
}

const SHARE: &str = "00801a180000010000000200000003000000efbeadde0000506600000020";

#[test]
fn check_passes_every_vector() {
    let text = vector_file();
    let n = vector_count(&text);
    assert!(n >= 44, "the vector file has {n} vectors");
    let (report, lines) = run_check(&text);
    assert_eq!(
        report,
        CheckReport {
            passed: n,
            failed: 0
        }
    );
    assert!(report.success());
    assert_eq!(lines, [format!("{n} passed, 0 failed")]);
}

#[test]
fn check_reports_each_failure_and_counts_it() {
    let text = vector_file();
    let mut lines: Vec<String> = text.lines().take(3).map(str::to_owned).collect();
    // Line 2: a field value changed; line 3: a frame byte changed; line 4: not JSON;
    // line 5: an unknown message.
    let mut v: Value = serde_json::from_str(&lines[1]).unwrap();
    v["fields"]["flags"] = Value::from(v["fields"]["flags"].as_u64().unwrap() ^ 1);
    lines[1] = v.to_string();
    let mut v: Value = serde_json::from_str(&lines[2]).unwrap();
    let mut hex = v["frame_hex"].as_str().unwrap().to_owned();
    hex.replace_range(12..14, if &hex[12..14] == "00" { "01" } else { "00" });
    v["frame_hex"] = Value::from(hex);
    lines[2] = v.to_string();
    lines.push("{\"name\": ".into());
    lines.push(r#"{"name":"X","protocol":"mining","extension_type":0,"msg_type":30,"channel_msg":true,"fields":{},"frame_hex":"00801e000000"}"#.into());
    let (report, out) = run_check(&lines.join("\n"));
    assert_eq!(
        report,
        CheckReport {
            passed: 1,
            failed: 4
        }
    );
    assert!(!report.success());
    assert_eq!(out.len(), 5);
    assert!(
        out[0].starts_with("line 2 (SetupConnection/random-1): "),
        "{}",
        out[0]
    );
    assert!(out[0].contains("fields"), "{}", out[0]);
    assert!(
        out[1].starts_with("line 3 (SetupConnection/random-2): "),
        "{}",
        out[1]
    );
    assert!(out[2].starts_with("line 4: malformed JSON"), "{}", out[2]);
    assert!(
        out[3].starts_with("line 5 (X): unknown message"),
        "{}",
        out[3]
    );
    assert_eq!(out[4], "1 passed, 4 failed");

    // A file with no vectors is not a success.
    let (report, out) = run_check("\n\n");
    assert!(!report.success());
    assert_eq!(out, ["0 passed, 0 failed"]);
}

#[test]
fn decode_then_encode_gives_back_every_vector_frame() {
    let text = vector_file();
    let frames: Vec<String> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["frame_hex"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let n = vector_count(&text);
    assert_eq!(frames.len(), n);
    let (summary, json, errors) = run_decode(&frames.join("\n"));
    assert_eq!(summary, Summary { ok: n, errors: 0 }, "{errors:?}");
    // Each decoded object carries the vector's own keys and values.
    for (line, vector) in json.iter().zip(text.lines()) {
        let ours: Value = serde_json::from_str(line).unwrap();
        let want: Value = serde_json::from_str(vector).unwrap();
        for key in [
            "name",
            "protocol",
            "extension_type",
            "msg_type",
            "channel_msg",
            "tlvs",
        ] {
            assert_eq!(ours.get(key), want.get(key), "{key}");
        }
        assert!(sv2json::json_eq(&ours["fields"], &want["fields"]));
    }
    let (summary, hex, errors) = run_encode(&json.join("\n"));
    assert_eq!(summary, Summary { ok: n, errors: 0 }, "{errors:?}");
    assert_eq!(hex, frames);
}

#[test]
fn decode_reports_bad_lines_with_their_number() {
    let input = [
        SHARE,                                                                // 1: fine
        "00801a18000001xz",                                                   // 2: bad hex
        "00801a1800000100000002",                                             // 3: truncated frame
        "",                                                                   // 4: skipped
        "00801e000000",   // 5: unknown message (reserved 0x1e)
        "000000000000",   // 6: SetupConnection with an empty payload
        "00000001000003", // 7: SetupConnection, protocol 3
        "00801b1a0000010000000200000003000000efbeadde00005066000000200421", // 8: extranonce cut
        &format!("{SHARE}01"), // 9: a byte after the frame
        "00801a1b0000010000000200000003000000efbeadde0000506600000020010203", // 10: 3-byte TLV tail
    ]
    .join("\n");
    let (summary, out, err) = run_decode(&input);
    assert_eq!(summary, Summary { ok: 1, errors: 8 });
    assert_eq!(out.len(), 1);
    assert!(out[0].starts_with(r#"{"name":"SubmitSharesStandard","protocol":"mining","extension_type":0,"msg_type":26,"channel_msg":true,"fields":{"channel_id":1,"#));
    let expect = [
        ("line 2: bad hex", ""),
        ("line 3: bad frame", "needs 24 bytes"),
        ("line 5: unknown message", "msg_type 0x1e"),
        ("line 6: bad payload", "SetupConnection.protocol"),
        ("line 7: bad payload", "value 3 is not allowed"),
        ("line 8: bad payload", "SubmitSharesExtended.extranonce"),
        ("line 9: bad frame", "left over"),
        (
            "line 10: bad TLV tail after SubmitSharesStandard",
            "needs 5 bytes, 3 available",
        ),
    ];
    assert_eq!(err.len(), expect.len(), "{err:#?}");
    for (line, (start, contains)) in err.iter().zip(expect) {
        assert!(
            line.starts_with(start) && line.contains(contains),
            "{line:?} vs {start:?}/{contains:?}"
        );
        assert!(!line.contains('\n'));
    }
}

#[test]
fn decode_binary_streams() {
    let share = hex::decode(SHARE).unwrap();
    // An experimental extension's message: unknown here, reported, skipped.
    let unknown = hex::decode("01c005010000aa").unwrap();
    let mut stream = share.clone();
    stream.extend(&unknown);
    stream.extend(&share);
    stream.extend(&share[..10]);
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let summary = sv2json::decode_binary(Cursor::new(&stream), &mut out, &mut err).unwrap();
    assert_eq!(summary, Summary { ok: 2, errors: 2 });
    let err = String::from_utf8(err).unwrap();
    let err: Vec<&str> = err.lines().collect();
    assert!(
        err[0].starts_with("frame 2 (byte offset 30): unknown message"),
        "{}",
        err[0]
    );
    assert!(
        err[1].starts_with("frame 4 (byte offset 67): truncated frame"),
        "{}",
        err[1]
    );
    assert_eq!(String::from_utf8(out).unwrap().lines().count(), 2);
}

#[test]
fn encode_reports_bad_lines_with_their_number() {
    let input = [
        r#"{"protocol":"mining","name":"SubmitSharesStandard","fields":{"channel_id":1,"sequence_number":2,"job_id":3,"nonce":3735928559,"ntime":1716518912,"version":536870912}}"#,
        r#"{"name": "#,
        r#"{"extension_type":0,"msg_type":30,"fields":{}}"#,
        r#"{"name":"SetTarget","fields":{"channel_id":1,"maximum_target":"00"}}"#,
        r#"{"name":"SetTarget","fields":{"channel_id":1}}"#,
        r#"{"name":"SetNewPrevHash","fields":{}}"#,
        r#"{"name":"CloseChannel","channel_msg":false,"fields":{"channel_id":1,"reason_code":"x"}}"#,
        r#"{"name":"CloseChannel","extension_type":0,"msg_type":21,"fields":{"channel_id":1,"reason_code":"x"}}"#,
        r#"[1, 2]"#,
        r#"{"protocol":"mining","name":"SubmitSharesExtended","fields":{"channel_id":1,"sequence_number":2,"job_id":3,"nonce":3735928559,"ntime":1716518912,"version":536870912,"extranonce":"aabbccdd"},"tlvs":[{"extension_type":2,"field_type":1,"value":"576f726b65725f303031"}]}"#,
    ]
    .join("\n");
    let (summary, out, err) = run_encode(&input);
    assert_eq!(summary, Summary { ok: 2, errors: 8 });
    assert_eq!(
        out,
        [
            SHARE,
            "00801b2c0000010000000200000003000000efbeadde000050660000002004aabbccdd0200010a00576f726b65725f303031"
        ]
    );
    let expect = [
        "line 2: malformed JSON",
        "line 3: unknown message: extension_type 0x0000, msg_type 0x1e",
        "line 4: bad fields for SetTarget",
        "line 5: bad fields for SetTarget",
        "line 6: \"SetNewPrevHash\" is ambiguous",
        "line 7: \"channel_msg\" must be true",
        "line 8: \"name\" says mining/CloseChannel but the ids say mining/NewMiningJob",
        "line 9: expected a JSON object",
    ];
    assert_eq!(err.len(), expect.len(), "{err:#?}");
    for (line, start) in err.iter().zip(expect) {
        assert!(line.starts_with(start), "{line:?} vs {start:?}");
    }
}

#[test]
fn one_frame_to_json_and_back() {
    let frame =
        hex::decode("00801a180000010000000200000003000000efbeadde0000506600000020").unwrap();
    let json = sv2json::decode_frame(&frame).unwrap();
    assert!(json.starts_with(r#"{"name":"SubmitSharesStandard","protocol":"mining""#));
    assert_eq!(sv2json::encode_json(&json).unwrap(), frame);
}
