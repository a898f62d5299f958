//! `SubmitRef::parse` allocates nothing: counted by a global allocator.
//!
//! The counter is per thread, so that the test harness's own threads do not count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use sv2c_sv1::{IdRef, SubmitRef};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded to `System` unchanged; the counter is a thread-local
// `Cell` (no allocation, no reentrancy).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Share lines as firmware sends them: cgminer/bmminer (with version bits), ESP-Miner,
/// a string id, `"jsonrpc"`, members in another order, spaces, a `\r\n` ending.
const LINES: &[&[u8]] = &[
    br#"{"params": ["acct.s19", "5f2a", "0000000000000001", "6650ab12", "1d2b3c4d", "00c00000"], "id": 2197, "method": "mining.submit"}"#,
    br#"{"id":5,"method":"mining.submit","params":["bc1qexampleaddress.bitaxe","1a3","01000000","6650ab12","a5c3e2f1","01a4e000"]}"#,
    br#"{"id":"s-7","jsonrpc":"2.0","method":"mining.submit","params":["w","j","00","00000001","00000002"]}"#,
    b"{\"method\":\"mining.submit\",\"id\":1,\"worker\":[1,2,\"x\",null],\"params\":[\"w\",\"j\",\"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff\",\"1\",\"2\",\"3\"]}\r\n",
];

#[test]
fn parsing_a_share_allocates_nothing() {
    for line in LINES {
        let before = allocations();
        let share = SubmitRef::parse(line).expect("a share");
        let after = allocations();
        assert!(matches!(share.id, IdRef::Num(_) | IdRef::Str(_)));
        assert_eq!(after - before, 0, "{}", String::from_utf8_lossy(line));
        // The counter does count: an owned copy allocates.
        let owned = share.to_message();
        assert!(allocations() > after);
        drop(owned);
    }
}

#[test]
fn a_worker_name_with_escapes_is_the_exception() {
    let line = br#"{"id":1,"method":"mining.submit","params":["acct\u002ew1","j","00","1","2"]}"#;
    let before = allocations();
    let share = SubmitRef::parse(line).expect("a share");
    assert_eq!(&*share.worker, "acct.w1");
    assert!(allocations() > before);
}
