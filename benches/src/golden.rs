//! The golden frames (`tests-data/sv2-vectors.jsonl`, written by the reference
//! implementation) as the suites use them: the last frame of each message type.
//!
//! One loader for `enum_path`, `move_cost` and `sv2c-icount`, so the three measure the same
//! bytes. Each line of the file is a JSON object; only its `protocol`, `name` and
//! `frame_hex` string fields are read, with a plain scan (the file is ours and flat), so the
//! suites need no JSON parser.

/// The vector file, read at run time from the workspace.
pub const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests-data/sv2-vectors.jsonl"
);

/// The last golden frame of one message type.
#[derive(Debug, Clone)]
pub struct Golden {
    /// The subprotocol, as the file spells it (`mining`, `template_distribution`, ...).
    pub protocol: String,
    /// The message's name (`SubmitSharesStandard`).
    pub name: String,
    /// The name, with `-<protocol>` appended when two subprotocols define a message of that
    /// name (`SetNewPrevHash`): unique across the list, used as the benchmark's id.
    pub label: String,
    /// The whole frame: header and payload.
    pub frame: Vec<u8>,
}

/// Every message type in the vector file, in the order of its first vector, each with its
/// last frame.
pub fn frames() -> Result<Vec<Golden>, String> {
    let text = std::fs::read_to_string(VECTORS).map_err(|e| format!("{VECTORS}: {e}"))?;
    parse(&text)
}

/// The frame of the message called `name`; for a name two subprotocols share, Mining's.
///
/// Only that frame's hex is decoded, and nothing else is allocated: `sv2c-icount` calls
/// this before counting, and what the loader leaves in the allocator's free lists moves the
/// instruction count of every later allocation over 1 KiB (an index of all entries built
/// here raised `floor/NewExtendedMiningJob` from 448 to 621 instructions).
pub fn frame(name: &str) -> Result<Vec<u8>, String> {
    find(name, None)
}

/// The frame of the message called `name` in `protocol` (as the file spells it:
/// `template_distribution`), allocating no more than [`frame`] does.
pub fn frame_in(protocol: &str, name: &str) -> Result<Vec<u8>, String> {
    find(name, Some(protocol))
}

/// The last frame of `name`: in `protocol` if given, else Mining's if there is one, else
/// the last of any protocol.
fn find(name: &str, protocol: Option<&str>) -> Result<Vec<u8>, String> {
    let text = std::fs::read_to_string(VECTORS).map_err(|e| format!("{VECTORS}: {e}"))?;
    let (mut last, mut last_mining) = (None, None);
    for (number, line) in text.lines().enumerate() {
        if string_field(line, "name") != Some(name) {
            continue;
        }
        let in_protocol = string_field(line, "protocol");
        if protocol.is_none_or(|p| in_protocol == Some(p)) {
            last = Some((number, line));
        }
        if in_protocol == Some("mining") {
            last_mining = Some((number, line));
        }
    }
    let found = if protocol.is_some() {
        last
    } else {
        last_mining.or(last)
    };
    let (number, line) = found.ok_or_else(|| match protocol {
        Some(p) => format!("no vector for {p}/{name}"),
        None => format!("no vector for {name}"),
    })?;
    let digits = string_field(line, "frame_hex")
        .ok_or_else(|| format!("line {}: no \"frame_hex\"", number + 1))?;
    hex(digits).map_err(|e| format!("line {}: {e}", number + 1))
}

/// [`frames`] over the text of a vector file.
pub fn parse(text: &str) -> Result<Vec<Golden>, String> {
    let last = index(text)?;
    let shared = |name: &str| last.iter().filter(|e| e.name == name).count() > 1;
    last.iter()
        .map(|e| {
            Ok(Golden {
                protocol: e.protocol.to_owned(),
                name: e.name.to_owned(),
                label: if shared(e.name) {
                    format!("{}-{}", e.name, e.protocol)
                } else {
                    e.name.to_owned()
                },
                frame: hex(e.hex).map_err(|err| format!("line {}: {err}", e.line))?,
            })
        })
        .collect()
}

/// One line of the file, not yet decoded.
struct Entry<'t> {
    protocol: &'t str,
    name: &'t str,
    hex: &'t str,
    /// 1-based, for errors.
    line: usize,
}

/// The last line of each (protocol, name), in the order of the first.
fn index(text: &str) -> Result<Vec<Entry<'_>>, String> {
    let mut out: Vec<Entry<'_>> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = |key: &str| {
            string_field(line, key).ok_or_else(|| format!("line {}: no \"{key}\"", number + 1))
        };
        let entry = Entry {
            protocol: at("protocol")?,
            name: at("name")?,
            hex: at("frame_hex")?,
            line: number + 1,
        };
        match out
            .iter_mut()
            .find(|e| e.protocol == entry.protocol && e.name == entry.name)
        {
            Some(e) => *e = entry,
            None => out.push(entry),
        }
    }
    Ok(out)
}

/// The value of the string field `key` in a flat JSON object (no escapes inside); the first
/// `"key":"` of the line, so a top-level key written before the nested fields wins.
fn string_field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(at) = line.get(from..)?.find(key) {
        let start = from + at;
        let after = start + key.len();
        if line[..start].ends_with('"') && line[after..].starts_with("\":\"") {
            let value = after + 3;
            let len = line[value..].find('"')?;
            return Some(&line[value..value + len]);
        }
        from = after;
    }
    None
}

fn hex(s: &str) -> Result<Vec<u8>, String> {
    if !s.len().is_multiple_of(2) {
        return Err(format!("odd-length hex ({} digits)", s.len()));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("bad hex at digit {i}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use sv2c_binary::messages::CATALOG;

    #[test]
    fn keeps_the_last_frame_per_type_and_labels_shared_names() {
        let text = concat!(
            r#"{"protocol":"mining","name":"A","frame_hex":"0001"}"#,
            "\n",
            r#"{"protocol":"mining","name":"SetNewPrevHash","frame_hex":"02"}"#,
            "\n",
            r#"{"protocol":"template_distribution","name":"SetNewPrevHash","frame_hex":"03"}"#,
            "\n",
            r#"{"protocol":"mining","name":"A","frame_hex":"ff10"}"#,
            "\n",
        );
        let got = parse(text).unwrap();
        let summary: Vec<(&str, &[u8])> = got
            .iter()
            .map(|g| (g.label.as_str(), g.frame.as_slice()))
            .collect();
        assert_eq!(
            summary,
            [
                ("A", &[0xff, 0x10][..]),
                ("SetNewPrevHash-mining", &[0x02][..]),
                ("SetNewPrevHash-template_distribution", &[0x03][..]),
            ]
        );
    }

    #[test]
    fn reports_bad_lines() {
        let missing = parse(r#"{"protocol":"mining","frame_hex":"00"}"#).unwrap_err();
        assert_eq!(missing, "line 1: no \"name\"");
        let odd = parse(r#"{"protocol":"mining","name":"A","frame_hex":"0"}"#).unwrap_err();
        assert_eq!(odd, "line 1: odd-length hex (1 digits)");
        let bad = parse(r#"{"protocol":"mining","name":"A","frame_hex":"0g"}"#).unwrap_err();
        assert_eq!(bad, "line 1: bad hex at digit 0");
    }

    #[test]
    fn reads_every_type_of_the_committed_vectors() {
        let all = frames().unwrap();
        // One entry per message of the catalog, and nothing else.
        let catalog: Vec<(&str, &str)> = CATALOG
            .iter()
            .map(|m| (m.protocol.name(), m.name))
            .collect();
        let golden: Vec<(&str, &str)> = all
            .iter()
            .map(|g| (g.protocol.as_str(), g.name.as_str()))
            .collect();
        for (protocol, name) in &catalog {
            assert!(
                golden.contains(&(protocol, name)),
                "{protocol}/{name} is in CATALOG but has no golden vector: add its frames to \
                 tests-data/sv2-vectors.jsonl"
            );
        }
        for (protocol, name) in &golden {
            assert!(
                catalog.contains(&(protocol, name)),
                "tests-data/sv2-vectors.jsonl has {protocol}/{name}, which CATALOG lacks"
            );
        }
        assert_eq!(all.len(), CATALOG.len(), "one entry per message type");
        assert_eq!(all.iter().filter(|g| g.name == "SetNewPrevHash").count(), 2);
        for g in &all {
            assert_eq!(
                frame_in(&g.protocol, &g.name).unwrap(),
                g.frame,
                "{}",
                g.label
            );
            if g.name != "SetNewPrevHash" || g.protocol == "mining" {
                assert_eq!(frame(&g.name).unwrap(), g.frame, "{}", g.label);
            }
        }
        assert_eq!(
            frame("NoSuchMessage").unwrap_err(),
            "no vector for NoSuchMessage"
        );
        assert_eq!(
            frame_in("common", "SetTarget").unwrap_err(),
            "no vector for common/SetTarget"
        );
        let share = frame("SubmitSharesStandard").unwrap();
        // Header: extension type 0 with the channel bit, message type 0x1a, length 24 (six
        // u32 fields).
        assert_eq!(&share[..6], &[0x00, 0x80, 0x1a, 24, 0, 0]);
        assert_eq!(share.len(), 6 + 24);
    }
}
