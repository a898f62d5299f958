//! The golden vectors (`tests-data/sv2-vectors.jsonl`, written by the reference
//! implementation), shared by the integration tests that replay them.

/// Every vector's JSON record, in file order.
pub(crate) fn records() -> Vec<serde_json::Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests-data/sv2-vectors.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("tests-data/sv2-vectors.jsonl");
    text.lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect()
}

/// A record's frame bytes.
pub(crate) fn frame(record: &serde_json::Value) -> Vec<u8> {
    hex::decode(record["frame_hex"].as_str().expect("frame_hex")).expect("hex")
}

/// Panics unless every message of the catalog has a frame among `frames`, naming the first
/// that has none: the suite replaying the vectors reaches every message, whatever their
/// number.
pub(crate) fn assert_frames_cover_the_catalog<'a>(frames: impl IntoIterator<Item = &'a [u8]>) {
    use sv2c_binary::messages::{CATALOG, frame_parts};
    let seen: std::collections::BTreeSet<(u16, u8)> = frames
        .into_iter()
        .filter_map(|f| frame_parts(f).ok())
        .map(|(ext, msg_type, _)| (ext & !sv2c_binary::CHANNEL_BIT, msg_type))
        .collect();
    for m in CATALOG {
        assert!(
            seen.contains(&(m.extension_type, m.msg_type)),
            "{}/{} is in CATALOG but has no vector in tests-data/sv2-vectors.jsonl",
            m.protocol,
            m.name
        );
    }
}
