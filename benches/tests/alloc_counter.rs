//! The counting allocator counts what the benchmarks report: every allocation call of the
//! counting thread inside `count`, with its size; nothing else.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sv2c_benches::alloc::{Allocs, count};

sv2c_benches::install_counting_allocator!();

#[test]
fn counts_one_allocation_with_its_size() {
    let (v, a) = count(|| black_box(Vec::<u8>::with_capacity(100)));
    assert_eq!(
        a,
        Allocs {
            count: 1,
            bytes: 100
        }
    );
    drop(v);

    let (b, a) = count(|| black_box(Box::new([7u64; 3])));
    assert_eq!(
        a,
        Allocs {
            count: 1,
            bytes: 24
        }
    );
    assert_eq!(b[2], 7);
}

#[test]
fn counts_zeroed_allocations() {
    // `vec![0; n]` asks the allocator for zeroed memory.
    let (v, a) = count(|| black_box(vec![0u8; 64]));
    assert_eq!(
        a,
        Allocs {
            count: 1,
            bytes: 64
        }
    );
    assert!(v.iter().all(|&b| b == 0));
}

#[test]
fn counts_a_reallocation_as_an_allocation_of_the_new_size() {
    let mut v: Vec<u8> = Vec::with_capacity(8);
    v.extend_from_slice(b"12345678");
    let ((), a) = count(|| v.reserve_exact(92));
    assert_eq!(
        a,
        Allocs {
            count: 1,
            bytes: 100
        }
    );
    assert_eq!(v, b"12345678");
}

#[test]
fn frees_and_work_outside_count_are_not_counted() {
    let v = black_box(vec![1u8; 10]);
    let ((), a) = count(|| drop(v));
    assert_eq!(a, Allocs::default());

    let ((), a) = count(|| {
        black_box(1 + 1);
    });
    assert_eq!(a, Allocs::default());

    // Allocations after a count are not added to the next one.
    let _after = black_box(vec![2u8; 10]);
    let (_, a) = count(|| black_box(Box::new(1u8)));
    assert_eq!(a.count, 1);
}

#[test]
fn other_threads_are_not_counted() {
    static GO: AtomicBool = AtomicBool::new(false);
    static DONE: AtomicUsize = AtomicUsize::new(0);
    let worker = std::thread::spawn(|| {
        while !GO.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        for i in 0..1000 {
            black_box(vec![i as u8; 32]);
        }
        DONE.store(1, Ordering::Release);
    });
    let ((), a) = count(|| {
        GO.store(true, Ordering::Release);
        while DONE.load(Ordering::Acquire) == 0 {
            std::hint::spin_loop();
        }
    });
    worker.join().unwrap();
    assert_eq!(a, Allocs::default());
}

#[test]
fn per_operation_figures() {
    let a = Allocs {
        count: 18,
        bytes: 900,
    };
    assert_eq!(a.per_op(6), 3.0);
    assert_eq!(a.bytes_per_op(6), 150.0);
    assert_eq!(a.per_op(0), 18.0);
}
