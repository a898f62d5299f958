//! `cargo bench --bench vs_sri`: the same operations done by sv2c and by the reference
//! implementation's crates (SRI: `binary_sv2` 7, `common_messages_sv2` 9, `mining_sv2` 12,
//! `template_distribution_sv2` 7, `job_declaration_sv2` 10), in the same run, on the same
//! bytes.
//!
//! For each message (group `vs_sri`, ids `<message>/<operation>/<implementation>`):
//! * `decode_owned`: payload → a value that borrows nothing. sv2c: `Foo::from_bytes`.
//!   SRI: `binary_sv2::from_bytes::<Foo<'_>>` then `.into_owned()` (`FooOwned`).
//! * `decode_ref`: payload → a value borrowing the payload. sv2c: `FooRef::from_bytes`
//!   (for messages of fixed-size fields only, `FooRef` is `Foo`). SRI:
//!   `binary_sv2::from_bytes::<Foo<'_>>`.
//! * `encode`: message → payload bytes in a reused buffer. sv2c: `Encode::encode` into a
//!   cleared `Vec` (no reallocation). SRI: `Encodable::to_bytes(msg, &mut buf)` into a
//!   preallocated slice; it consumes the message, so each call gets a clone of a decoded
//!   message, made outside the timed region.
//!
//! Decoded values are dropped inside the timed region (decode + drop), for both sides.
//! Time is the benchmark thread's CPU time (`sv2c_benches::clock`).
//! Before timing, each row checks that SRI decodes sv2c's bytes and re-encodes them
//! identically. Allocations per message are counted by the counting allocator (outside
//! the timed runs) and written to `<target>/sv2c-bench-reports/vs_sri_allocs.{csv,md}`.

use std::hint::black_box;

use binary_sv2::{Decodable, Encodable, EncodableField, GetSize};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use sv2c_benches::alloc::{Allocs, count};
use sv2c_benches::clock::BenchClock;
use sv2c_benches::messages::{
    declare_mining_job, new_extended_mining_job, new_template, set_new_prev_hash, setup_connection,
    submit_shares_extended,
};
use sv2c_benches::report::{Table, criterion_config, emit, num};
use sv2c_binary::{Wire, from_bytes_ref};

sv2c_benches::install_counting_allocator!();

const BENCH: &str = "vs_sri";

/// Operations per allocation count.
const ALLOC_REPS: u64 = 64;

/// A message of the reference implementation: its borrowed form (what `from_bytes`
/// returns and `to_bytes` consumes) and its owned form.
trait SriMsg {
    type Msg<'a>: Decodable<'a> + Clone + GetSize + Into<EncodableField<'a>>;
    type Owned;
    fn into_owned(m: Self::Msg<'_>) -> Self::Owned;
}

macro_rules! sri_msg {
    ($($marker:ident => $krate:ident :: $ty:ident, $owned:ident;)*) => { $(
        struct $marker;
        impl SriMsg for $marker {
            type Msg<'a> = $krate::$ty<'a>;
            type Owned = $krate::$owned;
            fn into_owned(m: Self::Msg<'_>) -> Self::Owned {
                m.into_owned()
            }
        }
    )* };
}

sri_msg! {
    SriSetupConnection => common_messages_sv2::SetupConnection, SetupConnectionOwned;
    SriNewExtendedMiningJob => mining_sv2::NewExtendedMiningJob, NewExtendedMiningJobOwned;
    SriSubmitSharesExtended => mining_sv2::SubmitSharesExtended, SubmitSharesExtendedOwned;
    SriSetNewPrevHash => mining_sv2::SetNewPrevHash, SetNewPrevHashOwned;
    SriNewTemplate => template_distribution_sv2::NewTemplate, NewTemplateOwned;
    SriDeclareMiningJob => job_declaration_sv2::DeclareMiningJob, DeclareMiningJobOwned;
}

/// SRI's borrowed decode of `bytes`.
fn sri_decode<S: SriMsg>(bytes: &mut [u8]) -> S::Msg<'_> {
    binary_sv2::from_bytes::<S::Msg<'_>>(bytes).expect("SRI decodes the payload")
}

/// Counts the allocations of `ALLOC_REPS` runs of `op`.
fn allocs_of(mut op: impl FnMut()) -> Allocs {
    count(|| {
        for _ in 0..ALLOC_REPS {
            op();
        }
    })
    .1
}

/// One message: the three operations on both sides, timed, then counted.
fn row<T: Wire, S: SriMsg>(c: &mut Criterion<BenchClock>, allocs: &mut Table, name: &str, msg: T) {
    let payload = msg.encode_to_vec();

    // The two implementations agree on these bytes.
    let mut check = payload.clone();
    let sri_bytes = binary_sv2::to_bytes(sri_decode::<S>(&mut check)).expect("SRI re-encodes");
    assert_eq!(
        sri_bytes, payload,
        "{name}: SRI re-encodes sv2c's bytes differently"
    );

    let mut sri_buf = payload.clone();
    let mut sri_src = payload.clone();
    let sri_msg = sri_decode::<S>(&mut sri_src);
    let mut sri_out = vec![0u8; sri_msg.get_size()];
    let mut out: Vec<u8> = Vec::with_capacity(msg.encoded_len());

    let mut g = c.benchmark_group("vs_sri");
    g.bench_function(
        BenchmarkId::new(format!("{name}/decode_owned"), "sv2c"),
        |b| b.iter(|| T::decode_owned(black_box(&payload)).expect("valid")),
    );
    g.bench_function(
        BenchmarkId::new(format!("{name}/decode_owned"), "sri"),
        |b| b.iter(|| S::into_owned(sri_decode::<S>(black_box(&mut sri_buf)))),
    );
    g.bench_function(
        BenchmarkId::new(format!("{name}/decode_ref"), "sv2c"),
        |b| {
            b.iter(|| {
                let m = from_bytes_ref::<T::Ref<'_>>(black_box(&payload)).expect("valid");
                black_box(&m);
            })
        },
    );
    g.bench_function(BenchmarkId::new(format!("{name}/decode_ref"), "sri"), |b| {
        b.iter(|| {
            let m = sri_decode::<S>(black_box(&mut sri_buf));
            black_box(&m);
        })
    });
    g.bench_function(BenchmarkId::new(format!("{name}/encode"), "sv2c"), |b| {
        b.iter(|| {
            out.clear();
            black_box(&msg).encode(&mut out);
            black_box(&out);
        })
    });
    g.bench_function(BenchmarkId::new(format!("{name}/encode"), "sri"), |b| {
        b.iter_batched(
            || sri_msg.clone(),
            |m| black_box(m.to_bytes(&mut sri_out).expect("fits")),
            BatchSize::SmallInput,
        )
    });
    g.finish();

    // Allocations per operation.
    let ours_owned = allocs_of(|| drop(black_box(T::decode_owned(&payload))));
    let sri_owned = allocs_of(|| drop(black_box(S::into_owned(sri_decode::<S>(&mut sri_buf)))));
    let ours_ref = allocs_of(|| drop(black_box(from_bytes_ref::<T::Ref<'_>>(&payload))));
    let sri_ref = allocs_of(|| drop(black_box(sri_decode::<S>(&mut sri_buf))));
    let ours_enc = allocs_of(|| {
        out.clear();
        msg.encode(&mut out);
    });
    let mut clones: Vec<S::Msg<'_>> = (0..ALLOC_REPS).map(|_| sri_msg.clone()).collect();
    let sri_enc = allocs_of(|| {
        if let Some(m) = clones.pop() {
            black_box(m.to_bytes(&mut sri_out).expect("fits"));
        }
    });
    let reps = ALLOC_REPS;
    for (op, ours, sri) in [
        ("decode_owned", ours_owned, sri_owned),
        ("decode_ref", ours_ref, sri_ref),
        ("encode", ours_enc, sri_enc),
    ] {
        allocs.push(vec![
            name.to_string(),
            op.to_string(),
            payload.len().to_string(),
            num(ours.per_op(reps), 2),
            num(sri.per_op(reps), 2),
            num(ours.bytes_per_op(reps), 0),
            num(sri.bytes_per_op(reps), 0),
        ]);
    }
}

fn vs_sri(c: &mut Criterion<BenchClock>) {
    // `cargo bench pool_lifecycle` at the root: no id here matches, skip the allocation table.
    if sv2c_benches::report::filtered_to_other_suite(BENCH) {
        return;
    }
    let mut allocs = Table::new(&[
        "message",
        "operation",
        "payload bytes",
        "sv2c allocs/msg",
        "SRI allocs/msg",
        "sv2c bytes/msg",
        "SRI bytes/msg",
    ]);
    row::<_, SriSetupConnection>(c, &mut allocs, "SetupConnection", setup_connection());
    row::<_, SriNewExtendedMiningJob>(
        c,
        &mut allocs,
        "NewExtendedMiningJob",
        new_extended_mining_job(),
    );
    row::<_, SriSubmitSharesExtended>(
        c,
        &mut allocs,
        "SubmitSharesExtended",
        submit_shares_extended(),
    );
    row::<_, SriSetNewPrevHash>(c, &mut allocs, "SetNewPrevHash", set_new_prev_hash());
    row::<_, SriNewTemplate>(c, &mut allocs, "NewTemplate", new_template());
    row::<_, SriDeclareMiningJob>(c, &mut allocs, "DeclareMiningJob", declare_mining_job());
    emit(
        &allocs,
        "vs_sri_allocs",
        "Heap allocations per operation, sv2c vs SRI",
    );
}

fn config() -> Criterion<BenchClock> {
    criterion_config(BENCH)
}

/// `criterion_group!` makes a public function; it lives here, out of the crate root.
mod harness {
    use super::*;

    criterion_group! {
        name = benches;
        config = config();
        targets = vs_sri
    }
}

criterion_main!(harness::benches);
