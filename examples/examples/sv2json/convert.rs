//! The `sv2json` tool: Stratum V2 frames ⇄ JSON, and a checker for golden-vector files.
//!
//! JSON objects use the golden vectors' format (`tests-data/sv2-vectors.jsonl`):
//!
//! ```json
//! {"name":"SubmitSharesStandard","protocol":"mining","extension_type":0,"msg_type":26,
//!  "channel_msg":true,"fields":{"channel_id":1,"sequence_number":2,"job_id":3,
//!  "nonce":3735928559,"ntime":1716518912,"version":536870912}}
//! ```
//!
//! plus `"tlvs": [{"extension_type":2,"field_type":1,"value":"<hex>"}]` when the payload
//! continues after the message's last field. Field values follow the `sv2c-binary` serde
//! mapping (hex for bytes, strings for STR0_255 — `{"hex": "…"}` if not UTF-8 —, arrays,
//! `null` for an absent OPTION).
//!
//! Every error is one line that names the input line (or frame) it comes from; nothing in
//! here panics on bad input. When decoding, an unknown message, a payload that does not
//! decode, and bytes after the message that are not well-formed TLV records are errors.
//!
//! (`examples/tests/sv2json.rs` includes this file and tests it on the vector file and on
//! bad input.)

use std::fmt::Write as _;
use std::io::{self, BufRead, Read, Write};

use serde::Serialize;
use serde_json::Value;
use sv2c_binary::DispatchError;
use sv2c_binary::messages::{
    Message, MessageInfo, MessageProtocol, MessageRef, encode_frame, frame_parts, lookup,
    lookup_name, split_frame,
};
use sv2c_binary::tlv::{TlvBuf, WithTlvs};

/// One decoded frame, serialized in the vectors' key order.
#[derive(Serialize)]
struct FrameJson<'a> {
    name: &'static str,
    protocol: &'static str,
    extension_type: u16,
    msg_type: u8,
    channel_msg: bool,
    fields: &'a Message,
    #[serde(skip_serializing_if = "Option::is_none")]
    tlvs: Option<Vec<TlvBuf>>,
}

fn dispatch_error(e: DispatchError) -> String {
    match e {
        DispatchError::Decode(e) => format!("bad payload: {e}"),
        other => other.to_string(),
    }
}

/// Decodes one frame (header + payload, nothing after it) into a JSON object on one line.
///
/// # Errors
/// A one-line description: truncated or over-long frame, unknown message, bad payload, or
/// a malformed TLV tail.
pub(crate) fn decode_frame(frame: &[u8]) -> Result<String, String> {
    let (ext, msg_type, payload) = frame_parts(frame).map_err(|e| format!("bad frame: {e}"))?;
    decode_parts(ext, msg_type, payload)
}

fn decode_parts(ext: u16, msg_type: u8, payload: &[u8]) -> Result<String, String> {
    let (msg, tail) = Message::decode_with_tail(ext, msg_type, payload).map_err(dispatch_error)?;
    let tail = tail.as_tail();
    let tlvs = if tail.is_empty() {
        None
    } else {
        Some(
            tail.to_bufs()
                .map_err(|e| format!("bad TLV tail after {}: {e}", msg.name()))?,
        )
    };
    let info = msg.info();
    let out = FrameJson {
        name: info.name,
        protocol: info.protocol.name(),
        extension_type: info.extension_type,
        msg_type: info.msg_type,
        channel_msg: ext & 0x8000 != 0,
        fields: &msg,
        tlvs,
    };
    serde_json::to_string(&out).map_err(|e| format!("cannot write JSON: {e}"))
}

/// Which catalog entry a JSON object names: by `extension_type` + `msg_type`, or by
/// `protocol` + `name`; when several keys are given they must agree.
fn message_of(v: &Value) -> Result<MessageInfo, String> {
    let num = |key: &str| -> Result<Option<u64>, String> {
        match v.get(key) {
            None => Ok(None),
            Some(x) => x
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("\"{key}\" must be a number")),
        }
    };
    let text = |key: &str| -> Result<Option<&str>, String> {
        match v.get(key) {
            None => Ok(None),
            Some(x) => x
                .as_str()
                .map(Some)
                .ok_or_else(|| format!("\"{key}\" must be a string")),
        }
    };
    let by_id = match (num("extension_type")?, num("msg_type")?) {
        (Some(ext), Some(t)) => {
            let (ext, t) = match (u16::try_from(ext), u8::try_from(t)) {
                (Ok(ext), Ok(t)) if ext <= 0x7fff => (ext, t),
                _ => {
                    return Err(format!(
                        "no such message: extension_type {ext}, msg_type {t}"
                    ));
                }
            };
            Some(lookup(ext, t).ok_or_else(|| {
                format!("unknown message: extension_type {ext:#06x}, msg_type {t:#04x}")
            })?)
        }
        (None, None) => None,
        _ => return Err("\"extension_type\" and \"msg_type\" go together".into()),
    };
    let by_name = match (text("protocol")?, text("name")?) {
        (Some(p), Some(n)) => {
            let proto =
                MessageProtocol::from_name(p).ok_or_else(|| format!("unknown protocol {p:?}"))?;
            Some(lookup_name(proto, n).ok_or_else(|| format!("unknown message {p}/{n}"))?)
        }
        (None, Some(n)) => {
            let mut found = sv2c_binary::messages::CATALOG
                .iter()
                .filter(|m| m.name == n);
            match (found.next(), found.next()) {
                (Some(m), None) => Some(*m),
                (Some(_), Some(_)) => return Err(format!("{n:?} is ambiguous: add \"protocol\"")),
                (None, _) => return Err(format!("unknown message {n:?}")),
            }
        }
        (Some(_), None) => return Err("\"protocol\" needs \"name\"".into()),
        (None, None) => None,
    };
    let info = match (by_id, by_name) {
        (Some(a), Some(b)) if a != b => {
            return Err(format!(
                "\"name\" says {}/{} but the ids say {}/{}",
                b.protocol, b.name, a.protocol, a.name
            ));
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => {
            return Err("say which message: \"extension_type\" + \"msg_type\", or \"name\"".into());
        }
    };
    if let Some(ch) = v.get("channel_msg")
        && ch.as_bool() != Some(info.channel_msg)
    {
        return Err(format!(
            "\"channel_msg\" must be {} for {}",
            info.channel_msg, info.name
        ));
    }
    Ok(info)
}

/// Builds the frame a JSON object describes (see the [module docs](self)); keys other than
/// the ones it reads (e.g. a vector's `case` and `frame_hex`) are ignored.
///
/// # Errors
/// A one-line description: malformed JSON, unknown message, missing or invalid fields.
pub(crate) fn encode_value(v: &Value) -> Result<Vec<u8>, String> {
    if !v.is_object() {
        return Err("expected a JSON object".into());
    }
    let info = message_of(v)?;
    let fields = v.get("fields").ok_or("missing \"fields\"")?;
    let msg = Message::deserialize_fields(info.extension_type, info.msg_type, fields)
        .map_err(|e| format!("bad fields for {}: {e}", info.name))?;
    let mut out = WithTlvs::new(msg);
    if let Some(tlvs) = v.get("tlvs") {
        let tlvs: Vec<TlvBuf> =
            serde::Deserialize::deserialize(tlvs).map_err(|e| format!("bad \"tlvs\": {e}"))?;
        for t in tlvs {
            out.push(t);
        }
    }
    encode_frame(&out).map_err(|e| format!("cannot frame {}: {e}", info.name))
}

/// [`encode_value`] on a line of JSON text.
///
/// # Errors
/// As [`encode_value`].
pub(crate) fn encode_json(line: &str) -> Result<Vec<u8>, String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("malformed JSON: {e}"))?;
    encode_value(&v)
}

/// Decodes hex text, ignoring whitespace.
fn parse_hex(line: &str) -> Result<Vec<u8>, String> {
    let digits: String = line.split_whitespace().collect();
    hex::decode(digits).map_err(|e| format!("bad hex: {e}"))
}

/// Outcome of a run over many lines or frames.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Lines or frames handled successfully.
    pub ok: usize,
    /// Lines or frames that gave an error.
    pub errors: usize,
}

/// `decode`: one hex frame per input line (blank lines skipped) → one JSON object per
/// line on `out`; errors go to `err` as `line N: …`.
///
/// # Errors
/// Only I/O errors of the streams.
pub(crate) fn decode_hex_lines<R: BufRead, W: Write, E: Write>(
    input: R,
    mut out: W,
    mut err: E,
) -> io::Result<Summary> {
    let mut summary = Summary::default();
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match parse_hex(&line).and_then(|f| decode_frame(&f)) {
            Ok(json) => {
                writeln!(out, "{json}")?;
                summary.ok += 1;
            }
            Err(e) => {
                writeln!(err, "line {}: {e}", i + 1)?;
                summary.errors += 1;
            }
        }
    }
    Ok(summary)
}

/// `decode --binary`: frames back to back (an unencrypted Sv2 byte stream) → one JSON
/// object per frame; errors go to `err` as `frame N (byte offset O): …`. A frame that
/// does not decode is reported and skipped (its length is known); a stream that ends
/// inside a frame is reported and ends the run.
///
/// # Errors
/// Only I/O errors of the streams.
pub(crate) fn decode_binary<R: Read, W: Write, E: Write>(
    mut input: R,
    mut out: W,
    mut err: E,
) -> io::Result<Summary> {
    let mut bytes = Vec::new();
    input.read_to_end(&mut bytes)?;
    let mut summary = Summary::default();
    let mut rest = bytes.as_slice();
    let mut n = 0usize;
    while !rest.is_empty() {
        n += 1;
        let offset = bytes.len() - rest.len();
        match split_frame(rest) {
            Ok((frame, after)) => {
                match decode_parts(frame.extension_type, frame.msg_type, frame.payload) {
                    Ok(json) => {
                        writeln!(out, "{json}")?;
                        summary.ok += 1;
                    }
                    Err(e) => {
                        writeln!(err, "frame {n} (byte offset {offset}): {e}")?;
                        summary.errors += 1;
                    }
                }
                rest = after;
            }
            Err(e) => {
                writeln!(
                    err,
                    "frame {n} (byte offset {offset}): truncated frame: {e}"
                )?;
                summary.errors += 1;
                break;
            }
        }
    }
    Ok(summary)
}

/// `encode`: one JSON object per input line (blank lines skipped) → one hex frame per
/// line on `out`; errors go to `err` as `line N: …`.
///
/// # Errors
/// Only I/O errors of the streams.
pub(crate) fn encode_lines<R: BufRead, W: Write, E: Write>(
    input: R,
    mut out: W,
    mut err: E,
) -> io::Result<Summary> {
    let mut summary = Summary::default();
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match encode_json(&line) {
            Ok(frame) => {
                writeln!(out, "{}", hex::encode(frame))?;
                summary.ok += 1;
            }
            Err(e) => {
                writeln!(err, "line {}: {e}", i + 1)?;
                summary.errors += 1;
            }
        }
    }
    Ok(summary)
}

/// JSON equality, except that two non-integer numbers are equal when they are the same
/// f32 (F32 fields; the vectors print them as short exact decimals).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => (x as f32).to_bits() == (y as f32).to_bits(),
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn get<'a>(v: &'a Value, key: &str) -> Result<&'a Value, String> {
    v.get(key).ok_or_else(|| format!("missing \"{key}\""))
}

/// Checks one vector (a parsed line of a vector file): decodes `frame_hex` on the owned
/// and borrowed paths and compares header, name, protocol, `fields` and `tlvs`; encodes
/// `fields` and `tlvs` and compares the bytes with `frame_hex`.
///
/// # Errors
/// The first difference found, on one line.
pub(crate) fn check_vector(v: &Value) -> Result<(), String> {
    let frame = parse_hex(
        get(v, "frame_hex")?
            .as_str()
            .ok_or("\"frame_hex\" must be a string")?,
    )?;
    let (ext, msg_type, payload) = frame_parts(&frame).map_err(|e| format!("bad frame: {e}"))?;
    let want = message_of(v)?;
    if (ext & 0x7fff, msg_type, ext & 0x8000 != 0)
        != (want.extension_type, want.msg_type, want.channel_msg)
    {
        return Err(format!(
            "header {ext:#06x}/{msg_type:#04x} does not match {}/{}",
            want.protocol, want.name
        ));
    }

    let (owned, tail_buf) =
        Message::decode_with_tail(ext, msg_type, payload).map_err(dispatch_error)?;
    let (borrowed, tail) = MessageRef::decode_with_tail(ext, msg_type, payload)
        .map_err(|e| format!("borrowed path: {}", dispatch_error(e)))?;
    if owned.info() != want || borrowed.info() != want {
        return Err(format!(
            "decoded as {} instead of {}",
            owned.name(),
            want.name
        ));
    }
    let want_fields = get(v, "fields")?;
    let json = |m: &Message| serde_json::to_value(m).map_err(|e| format!("cannot write JSON: {e}"));
    let ours = json(&owned)?;
    if !json_eq(&ours, want_fields) {
        return Err(format!(
            "owned decode gives fields {ours}, expected {want_fields}"
        ));
    }
    let ours_ref = json(&borrowed.to_owned_value())?;
    if !json_eq(&ours_ref, want_fields) {
        return Err(format!(
            "borrowed decode gives fields {ours_ref}, expected {want_fields}"
        ));
    }
    if tail_buf.as_bytes() != tail.as_bytes() {
        return Err("owned and borrowed paths disagree on the TLV tail".into());
    }
    let tlvs = tail.to_bufs().map_err(|e| format!("bad TLV tail: {e}"))?;
    match v.get("tlvs") {
        Some(want_tlvs) => {
            let ours =
                serde_json::to_value(&tlvs).map_err(|e| format!("cannot write JSON: {e}"))?;
            if &ours != want_tlvs {
                return Err(format!("decoded tlvs {ours}, expected {want_tlvs}"));
            }
        }
        None if !tlvs.is_empty() => {
            return Err(format!("{} unexpected bytes after the message", tail.len()));
        }
        None => {}
    }

    let encoded = encode_value(v)?;
    if encoded != frame {
        let at = encoded
            .iter()
            .zip(&frame)
            .take_while(|(a, b)| a == b)
            .count();
        return Err(format!(
            "re-encoding differs from frame_hex at byte {at} ({} bytes vs {})",
            encoded.len(),
            frame.len()
        ));
    }
    Ok(())
}

/// Outcome of [`check`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CheckReport {
    /// Vectors that passed.
    pub passed: usize,
    /// Vectors that failed, malformed lines included.
    pub failed: usize,
}

impl CheckReport {
    /// `true` if every vector passed and there was at least one.
    pub(crate) fn success(&self) -> bool {
        self.failed == 0 && self.passed > 0
    }
}

/// ` (name/case)` of a vector, for failure lines; empty if it has no name.
fn label_of(v: &Value) -> String {
    let mut label = String::new();
    if let Some(name) = v.get("name").and_then(Value::as_str) {
        let _ = write!(label, " ({name}");
        if let Some(case) = v.get("case").and_then(Value::as_str) {
            let _ = write!(label, "/{case}");
        }
        label.push(')');
    }
    label
}

/// `check`: runs [`check_vector`] on every line of a vector file; writes one line per
/// failure (`line N (name/case): …`, malformed lines included) and ends with the line
/// `N passed, M failed`.
///
/// # Errors
/// Only I/O errors of the streams.
pub(crate) fn check<R: BufRead, W: Write>(input: R, mut out: W) -> io::Result<CheckReport> {
    let mut report = CheckReport::default();
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let (label, result) = match serde_json::from_str::<Value>(&line) {
            Ok(v) => (label_of(&v), check_vector(&v)),
            Err(e) => (String::new(), Err(format!("malformed JSON: {e}"))),
        };
        match result {
            Ok(()) => report.passed += 1,
            Err(e) => {
                writeln!(out, "line {}{label}: {e}", i + 1)?;
                report.failed += 1;
            }
        }
    }
    writeln!(out, "{} passed, {} failed", report.passed, report.failed)?;
    Ok(report)
}
