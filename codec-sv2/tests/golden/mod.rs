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
