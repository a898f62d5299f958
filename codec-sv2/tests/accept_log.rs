//! A Noise responder logs a failed handshake at `info`, once per reason per 10 s: a
//! plaintext client is named as such, and a storm of them writes one line. Alone in its
//! test binary, because the rate limit is process-wide.
#![cfg(feature = "noise")]

use std::sync::{Arc, Mutex};

use sv2c_codec::noise::{self, AuthorityKeypair, Responder, StaticKeypair, unix_time_now};
use sv2c_codec::{CodecError, Sv2Codec};
use tokio::io::{AsyncReadExt, AsyncWriteExt, duplex};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Records every event as `LEVEL message key=value…`.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}{}", self.0);
        } else {
            self.0.push_str(&format!(" {}={value:?}", field.name()));
        }
    }
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut line = Line(String::new());
        event.record(&mut line);
        let level = *event.metadata().level();
        self.0.lock().unwrap().push(format!("{level} {}", line.0));
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

/// The spec's SetupConnection example (SV2-WIRE §3.1), in the clear.
const PLAIN_SETUP: [u8; 44] = [
    0x00, 0x00, 0x00, 0x26, 0x00, 0x00, // header: SetupConnection, 38 bytes
    0x00, 0x02, 0x00, 0x02, 0x00, 0x06, 0x00, 0x00, 0x00, 0x0c, b'p', b'o', b'o', b'l', b'.', b'e',
    b'x', b'a', b'm', b'p', b'l', b'e', 0x05, 0x0d, 0x04, b'a', b'c', b'm', b'e', 0x03, b'h', b'w',
    b'1', 0x03, b'f', b'w', b'1', 0x00,
];

#[tokio::test(flavor = "current_thread")]
async fn a_storm_of_plaintext_clients_is_one_info_line_naming_the_cause() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());
    let authority = AuthorityKeypair::generate().unwrap();
    let now = unix_time_now();
    let responder = Responder::from_authority(
        StaticKeypair::generate().unwrap(),
        &authority,
        now - 60,
        now + 600,
    )
    .unwrap();

    for _ in 0..50 {
        let (mut client, server) = duplex(4096);
        // A plain client: sends SetupConnection and waits for the answer, connection open.
        client.write_all(&PLAIN_SETUP).await.unwrap();
        let err = noise::accept(
            server,
            &responder,
            Sv2Codec::<sv2c_binary::messages::Message>::new(),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(err, CodecError::PlaintextPeer { received: 44 }),
            "{err:?}"
        );
        // The server dropped the connection without a byte: the client sees the end.
        let mut buf = [0u8; 1];
        assert_eq!(client.read(&mut buf).await.unwrap(), 0);
    }

    let lines = capture.0.lock().unwrap().clone();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    assert!(
        lines[0]
            .starts_with("INFO Noise handshake failed: the peer sent a plaintext SetupConnection"),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains("reason=\"plaintext\""), "{}", lines[0]);
    assert!(lines[0].contains("suppressed=0"), "{}", lines[0]);
}
