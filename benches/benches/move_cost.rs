//! What the caller's move of a decoded `Message` costs: the same frame decoded through
//! `Message::decode_message`, once taken out of its `Result` (`moved`: what `?`,
//! `expect` or a `match` binding by value do) and once only looked at where it was
//! written (`in_place`: `black_box(&message)` inside the `Result`), beside the floor (one
//! `to_vec` of the frame). The difference between the two is the move, not the decode.
//! See BENCHMARKS.md, "Below target, and why".
//!
//! `cargo bench -p sv2c-benches --bench move_cost` (about 20 s). `TYPES=A,B` picks other
//! message types (names as in the golden vectors).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use sv2c_binary::MessageSet;
use sv2c_binary::messages::{Message, frame_parts};

fn move_cost(c: &mut Criterion) {
    let want = std::env::var("TYPES").unwrap_or_else(|_| {
        "SubmitSharesStandard,SubmitSharesSuccess,ChannelEndpointChanged,CloseChannel".into()
    });
    for golden in sv2c_benches::golden::frames().expect("golden vectors") {
        let name = golden.label;
        if !want.split(',').any(|w| w == name) {
            continue;
        }
        let frame = &golden.frame[..];
        let mut g = c.benchmark_group(format!("move_cost/{name}"));
        g.bench_function("moved", |b| {
            b.iter(|| {
                let (ext, ty, payload) = frame_parts(black_box(frame)).expect("a frame");
                Message::decode_message(ext, ty, payload).expect("decodes")
            })
        });
        g.bench_function("in_place", |b| {
            b.iter(|| {
                let (ext, ty, payload) = frame_parts(black_box(frame)).expect("a frame");
                let result = Message::decode_message(ext, ty, payload);
                match &result {
                    Ok(message) => {
                        black_box(message);
                    }
                    Err(e) => panic!("{e}"),
                }
            })
        });
        g.bench_function("floor", |b| b.iter(|| black_box(frame).to_vec()));
        g.finish();
    }
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1000))
        .sample_size(30)
        .configure_from_args()
}

/// `criterion_group!` makes a public function; it lives here, out of the crate root.
mod harness {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = move_cost
    }
}

criterion_main!(harness::benches);
