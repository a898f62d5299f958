//! The decode strategies do what `pool_lifecycle` says they do: what they keep, which
//! pool slots they pin, and what they allocate. The benchmark numbers mean nothing if
//! these are wrong.

use sv2c_benches::alloc::count;
use sv2c_benches::messages::{
    SeedMsg, SeedMsgRef, declare_mining_job, frame_of, new_extended_mining_job, new_template,
    seed_msg, set_new_prev_hash, setup_connection, submit_shares_extended,
};
use sv2c_benches::report::{Table, num, report_dir};
use sv2c_benches::strategy::{Lane, OwnedDirect, OwnedRelease, POOL_CAPACITY, Strategy, ZcHold};
use sv2c_binary::messages::{NewExtendedMiningJob, SubmitSharesExtended};
use sv2c_binary::{Decode, Encode, Wire, WireRef};

sv2c_benches::install_counting_allocator!();

/// Decodes `n` copies of `frame` in a lane (after a warm-up burst that sizes reusable
/// buffers) and returns the lane and the allocations of the counted burst.
fn counted_burst<S: Strategy>(s: S, frame: &[u8], n: usize) -> (Lane<S>, u64) {
    let mut lane = Lane::new(s, n);
    lane.hold(frame, n);
    lane.release();
    let ((), allocs) = count(|| lane.hold(frame, n));
    (lane, allocs.count)
}

#[test]
fn zc_hold_pins_a_slot_per_frame_and_falls_back_once_per_extra_frame() {
    let msg = seed_msg(64);
    let frame = frame_of(&msg);
    let extra = 4;
    let (mut lane, allocs) = counted_burst(ZcHold::<SeedMsg>::new(), &frame, POOL_CAPACITY + extra);

    let pool = lane.strategy.pool().expect("a pool").clone();
    let stats = pool.stats();
    assert_eq!(stats.in_use, POOL_CAPACITY);
    // Exactly one heap allocation per frame beyond the pool's capacity, nothing else.
    assert_eq!(allocs, extra as u64);
    assert_eq!(stats.fallback_exhausted, 2 * extra as u64); // warm-up burst + counted one
    let pooled = lane.held.iter().filter(|f| f.is_pooled()).count();
    assert_eq!(pooled, POOL_CAPACITY);

    // Every kept frame still holds the message.
    for f in &lane.held {
        let view = f.decode_ref::<SeedMsg>().unwrap();
        assert_eq!(view.to_owned_value(), msg);
    }
    lane.release();
    assert_eq!(pool.stats().in_use, 0);
}

#[test]
fn zc_hold_within_capacity_allocates_nothing() {
    let frame = frame_of(&new_extended_mining_job());
    let (lane, allocs) =
        counted_burst(ZcHold::<NewExtendedMiningJob>::new(), &frame, POOL_CAPACITY);
    assert_eq!(allocs, 0);
    assert!(lane.held.iter().all(|f| f.is_pooled()));
}

#[test]
fn owned_release_frees_every_slot_and_allocates_once_per_variable_message() {
    let msg = seed_msg(64);
    let frame = frame_of(&msg);
    let n = 3 * POOL_CAPACITY;
    let (lane, allocs) = counted_burst(OwnedRelease::<SeedMsg>::new(), &frame, n);
    // One per message: the copy of its one long value (binary-sv2, ADR 0001).
    assert_eq!(allocs, n as u64);
    assert!(lane.held.iter().all(|m| *m == msg));
    let stats = lane.strategy.pool().expect("a pool").stats();
    assert_eq!(stats.in_use, 0);
    assert_eq!(stats.fallbacks(), 0);
    assert_eq!(stats.high_water, 1);
}

#[test]
fn owned_strategies_allocate_nothing_for_a_fixed_size_message() {
    let msg = submit_shares_extended();
    let frame = frame_of(&msg);
    let n = 2 * POOL_CAPACITY;
    let (lane, allocs) = counted_burst(OwnedRelease::<SubmitSharesExtended>::new(), &frame, n);
    assert_eq!(allocs, 0);
    assert!(lane.held.iter().all(|m| *m == msg));
    let (lane, allocs) = counted_burst(OwnedDirect::<SubmitSharesExtended>::new(), &frame, n);
    assert_eq!(allocs, 0);
    assert!(lane.held.iter().all(|m| *m == msg));
}

#[test]
fn owned_direct_uses_no_pool_and_reuses_its_read_buffer() {
    let msg = new_extended_mining_job();
    let frame = frame_of(&msg);
    let n = 100;
    let (lane, allocs) = counted_burst(OwnedDirect::<NewExtendedMiningJob>::new(), &frame, n);
    assert!(lane.strategy.pool().is_none());
    // Two allocations per message (the copy of its payload from the first long value on,
    // and the shared header `bytes` makes when that copy is sliced for a second field;
    // ADR 0001); the read buffer is not reallocated.
    assert_eq!(allocs, 2 * n as u64);
    assert!(lane.held.iter().all(|m| *m == msg));
}

#[test]
fn fixtures_have_the_documented_shapes() {
    let nemj = new_extended_mining_job();
    assert_eq!(nemj.merkle_path.len(), 12);
    assert_eq!(nemj.coinbase_tx_prefix.len(), 64);
    assert_eq!(nemj.coinbase_tx_suffix.len(), 256);
    assert_eq!(submit_shares_extended().extranonce.len(), 8);
    let nt = new_template();
    assert_eq!(nt.merkle_path.len(), 12);
    assert_eq!(nt.coinbase_prefix.len(), 64);
    assert_eq!(nt.coinbase_tx_outputs.len(), 47);
    assert_eq!(declare_mining_job().wtxid_list.len(), 2000);
    assert_eq!(set_new_prev_hash().encoded_len(), 48);
    let sc = setup_connection();
    assert_eq!(sc.vendor.as_bytes(), b"Bitmain");

    // The seed message: 4 + 32 + 2 + suffix bytes, in a 6-byte-header frame.
    let seed = seed_msg(64);
    assert_eq!(seed.encoded_len(), 102);
    let frame = frame_of(&seed);
    assert_eq!(frame.len(), 108);
    assert_eq!(&frame[3..6], &[102, 0, 0]);
    let view = SeedMsgRef::decode_ref(&frame[6..]).unwrap();
    assert_eq!(view.coinbase_suffix.len(), 64);
    assert_eq!(SeedMsg::decode_owned(&frame[6..]).unwrap(), seed);
}

#[test]
fn tables_render_as_csv_and_markdown() {
    let mut t = Table::new(&["a", "b"]);
    t.push(vec!["1".into(), num(2.5, 2)]);
    t.push(vec![num(3.0, 2), num(1.0 / 3.0, 3)]);
    assert_eq!(t.to_csv(), "a,b\n1,2.50\n3,0.333\n");
    assert_eq!(
        t.to_markdown(),
        "| a | b |\n|---|---|\n| 1 | 2.50 |\n| 3 | 0.333 |\n"
    );
    assert_eq!(t.rows().len(), 2);

    let dir = std::env::temp_dir().join(format!("sv2c-bench-test-{}", std::process::id()));
    t.write(&dir, "t").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.join("t.csv")).unwrap(),
        t.to_csv()
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("t.md")).unwrap(),
        t.to_markdown()
    );
    std::fs::remove_dir_all(&dir).unwrap();

    if std::env::var_os("SV2C_BENCH_REPORTS").is_none() {
        assert!(report_dir().ends_with("sv2c-bench-reports"));
    }
}
