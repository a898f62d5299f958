//! The check of the `sv1_decode` fuzz target, replayed on stable by
//! `tests/fuzz_regressions.rs`.
//!
//! Input: byte 0 picks the line limit (16 to 4 111 bytes), byte 1 the size of the reads
//! (1 to 256 bytes); the rest is the stream. Checked: no panic; the read buffer never holds
//! more than the limit plus a `\r` plus one read; the items are the same whatever the read
//! size (but for the excerpt of a line too long); every message, written again, reads back as itself; a line `SubmitRef` accepts
//! reads as the same share with `Sv1Message::from_line`.

use bytes::BytesMut;
use sv2c_sv1::{SubmitRef, Sv1Codec, Sv1Item, Sv1Message};
use tokio_util::codec::Decoder;

/// The items of `stream`, read `chunk` bytes at a time.
fn items(max: usize, chunk: usize, stream: &[u8]) -> Vec<Sv1Item> {
    let mut codec = Sv1Codec::new().with_max_line_len(max);
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in stream.chunks(chunk) {
        buf.extend_from_slice(piece);
        while let Some(item) = codec.decode(&mut buf).expect("only I/O fails") {
            out.push(item);
        }
        assert!(
            buf.len() <= max + 1 + chunk,
            "buffered {} bytes, limit {max}, reads of {chunk}",
            buf.len()
        );
    }
    while let Some(item) = codec.decode_eof(&mut buf).expect("only I/O fails") {
        out.push(item);
    }
    out
}

pub(crate) fn check_input(data: &[u8]) {
    let [max, chunk, stream @ ..] = data else {
        return;
    };
    let max = 16 + usize::from(*max) * 16;
    let chunk = 1 + usize::from(*chunk);
    let got = items(max, chunk, stream);
    let whole = items(max, stream.len().max(1), stream);
    // The excerpt of a line too long is what had arrived when it was reported: compare
    // the kinds only.
    let summary = |items: &[Sv1Item]| -> Vec<String> {
        items
            .iter()
            .map(|i| match i {
                Sv1Item::Message(m) => format!("{m:?}"),
                Sv1Item::Invalid(e) => format!("{:?}", e.kind),
            })
            .collect()
    };
    assert_eq!(
        summary(&got),
        summary(&whole),
        "read size changed the items"
    );

    for item in &got {
        let Sv1Item::Message(msg) = item else {
            continue;
        };
        let line = msg.to_line();
        let back = Sv1Message::from_line(line.as_bytes())
            .unwrap_or_else(|e| panic!("{msg:?} wrote {line:?}, which reads as {e}"));
        assert_eq!(&back, msg, "{line}");
    }
    for line in stream.split(|&b| b == b'\n') {
        if let Ok(share) = SubmitRef::parse(line) {
            assert_eq!(Sv1Message::from_line(line).ok(), Some(share.to_message()));
        }
    }
}
