//! The `pool_ops` check: arbitrary sequences of buffer-pool operations on two threads,
//! with a canary in every live buffer.
//!
//! Input format: `capacity_sel` (capacity = `% 9`, 0..=8 slots), `shape_sel` (slot size
//! from [`SLOTS`] by `% 4`; bit 7 set: the test drops its own pool handle at once, so
//! buffers may outlive every handle), then operations of two bytes `code, arg`: bit 0 of
//! `code` picks the thread (0 = the calling thread, 1 = a second thread), `code >>
//! 1` the operation ([`Op`]), `arg` its argument. At most [`MAX_OPS`] are run.
//!
//! Every buffer holds a canary unique to the write that made it (whole length), checked
//! after every operation on it, when it changes hands and before it is dropped. A slot
//! handed out twice, released while a clone still reads it, or overlapping another
//! shows up as a wrong canary. When everything is dropped the pool must report no slot
//! in use, and its counters must match the acquisitions made.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use bytes::{BufMut, Bytes};
use sv2c_buffer_pool::{BufferPool, PoolBuf, PoolBufMut};

/// Slot sizes.
pub const SLOTS: [usize; 4] = [8, 16, 64, 100];
/// Operations run per input, at most.
pub const MAX_OPS: usize = 512;

/// The operations, by `(code >> 1) % 10`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Acquire `arg`-scaled bytes (0..=2 × slot size) from pool handle `arg % n`, fill
    /// the canary (through `BufMut` if `arg` is odd, else through `DerefMut`).
    Acquire = 0,
    /// As `Acquire` with `acquire_zeroed`; the bytes must be zero first.
    AcquireZeroed = 1,
    /// Rewrite writable buffer `arg % n` with a new canary.
    Write = 2,
    /// Freeze writable buffer `arg % n`.
    Freeze = 3,
    /// Clone frozen buffer (or `Bytes`) `arg % n`.
    Clone = 4,
    /// Turn frozen buffer `arg % n` into `Bytes`.
    IntoBytes = 5,
    /// Drop buffer `arg % n`.
    Drop = 6,
    /// Send buffer `arg % n` to the other thread.
    Send = 7,
    /// Clone pool handle `arg % n`.
    ClonePool = 8,
    /// Drop pool handle `arg % n`.
    DropPool = 9,
}

const OPS: [Op; 10] = [
    Op::Acquire,
    Op::AcquireZeroed,
    Op::Write,
    Op::Freeze,
    Op::Clone,
    Op::IntoBytes,
    Op::Drop,
    Op::Send,
    Op::ClonePool,
    Op::DropPool,
];

/// Builds a `pool_ops` input.
pub fn input(capacity_sel: u8, shape_sel: u8, ops: &[(u8, Op, u8)]) -> Vec<u8> {
    let mut v = vec![capacity_sel, shape_sel];
    for &(thread, op, arg) in ops {
        v.push(((op as u8) << 1) | (thread & 1));
        v.push(arg);
    }
    v
}

enum Handle {
    Mut(PoolBufMut),
    Frozen(PoolBuf),
    Bytes(Bytes),
}

/// A live buffer and the bytes it must hold.
struct Entry {
    handle: Handle,
    expected: Vec<u8>,
}

impl Entry {
    fn bytes(&self) -> &[u8] {
        match &self.handle {
            Handle::Mut(b) => b,
            Handle::Frozen(b) => b,
            Handle::Bytes(b) => b,
        }
    }

    fn verify(&self, when: &str) {
        assert!(
            self.bytes() == self.expected.as_slice(),
            "canary overwritten ({when}): a slot is shared by two live buffers"
        );
    }
}

static WRITES: AtomicU64 = AtomicU64::new(1);

/// A fresh canary of `len` bytes, different for every call.
fn canary(len: usize) -> Vec<u8> {
    let mut state = WRITES
        .fetch_add(1, Ordering::Relaxed)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (0..len)
        .map(|_| {
            // splitmix64 step
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as u8
        })
        .collect()
}

/// Counts shared by both threads, compared with the pool's statistics at the end.
#[derive(Default)]
struct Counts {
    acquired: AtomicU64,
    too_large: AtomicU64,
}

struct Worker {
    slot: usize,
    pools: Vec<BufferPool>,
    live: Vec<Entry>,
    tx: Option<mpsc::Sender<Entry>>,
    rx: mpsc::Receiver<Entry>,
    counts: Arc<Counts>,
}

impl Worker {
    fn receive(&mut self, entry: Entry) {
        entry.verify("received from the other thread");
        self.live.push(entry);
    }

    fn drain(&mut self) {
        while let Ok(entry) = self.rx.try_recv() {
            self.receive(entry);
        }
    }

    fn retire(entry: Entry) {
        entry.verify("before drop");
        drop(entry);
    }

    fn acquire(&mut self, arg: u8, zeroed: bool) {
        let Some(pool) = self.pools.get(usize::from(arg) % self.pools.len().max(1)) else {
            return;
        };
        let len = usize::from(arg) * 2 * self.slot / 255;
        let mut buf = if zeroed {
            pool.acquire_zeroed(len)
        } else {
            pool.acquire(len)
        };
        self.counts.acquired.fetch_add(1, Ordering::Relaxed);
        if len > self.slot {
            self.counts.too_large.fetch_add(1, Ordering::Relaxed);
            assert!(
                !buf.is_pooled(),
                "{len} bytes pooled in {}-byte slots",
                self.slot
            );
        }
        assert_eq!(buf.len(), len);
        if zeroed {
            assert!(
                buf.iter().all(|&b| b == 0),
                "acquire_zeroed gave non-zero bytes"
            );
        }
        let expected = canary(len);
        if arg % 2 == 1 {
            buf.put_slice(&expected);
            assert_eq!(buf.written(), len);
        } else {
            buf.copy_from_slice(&expected);
        }
        let entry = Entry {
            handle: Handle::Mut(buf),
            expected,
        };
        entry.verify("after acquire");
        self.live.push(entry);
    }

    fn run(&mut self, op: Op, arg: u8) {
        self.drain();
        let n = self.live.len();
        let i = if n == 0 { 0 } else { usize::from(arg) % n };
        match op {
            Op::Acquire => self.acquire(arg, false),
            Op::AcquireZeroed => self.acquire(arg, true),
            Op::Write => {
                if let Some(Entry {
                    handle: Handle::Mut(buf),
                    expected,
                }) = self.live.get_mut(i)
                {
                    assert!(
                        buf.as_ref() == expected.as_slice(),
                        "canary overwritten (before write)"
                    );
                    *expected = canary(buf.len());
                    buf.copy_from_slice(expected);
                }
            }
            Op::Freeze => {
                if let Some(entry) = self.live.get_mut(i) {
                    let placeholder = Handle::Bytes(Bytes::new());
                    entry.handle = match std::mem::replace(&mut entry.handle, placeholder) {
                        Handle::Mut(buf) => {
                            let pooled = buf.is_pooled();
                            let frozen = buf.freeze();
                            assert_eq!(frozen.is_pooled(), pooled);
                            Handle::Frozen(frozen)
                        }
                        other => other,
                    };
                }
            }
            Op::Clone => {
                let copy = match self.live.get(i).map(|e| (&e.handle, &e.expected)) {
                    Some((Handle::Frozen(b), exp)) => {
                        Some((Handle::Frozen(b.clone()), exp.clone()))
                    }
                    Some((Handle::Bytes(b), exp)) => Some((Handle::Bytes(b.clone()), exp.clone())),
                    _ => None,
                };
                if let Some((handle, expected)) = copy {
                    let entry = Entry { handle, expected };
                    entry.verify("after clone");
                    self.live.push(entry);
                }
            }
            Op::IntoBytes => {
                if let Some(entry) = self.live.get_mut(i) {
                    let placeholder = Handle::Bytes(Bytes::new());
                    entry.handle = match std::mem::replace(&mut entry.handle, placeholder) {
                        Handle::Frozen(buf) => Handle::Bytes(buf.into_bytes()),
                        other => other,
                    };
                }
            }
            Op::Drop => {
                if i < n {
                    Self::retire(self.live.swap_remove(i));
                }
            }
            Op::Send => {
                if i < n {
                    let entry = self.live.swap_remove(i);
                    entry.verify("before send");
                    if let Some(tx) = &self.tx {
                        // The other thread may have finished and dropped its receiver:
                        // the entry then comes back and is dropped here.
                        if let Err(mpsc::SendError(entry)) = tx.send(entry) {
                            Self::retire(entry);
                        }
                    }
                }
            }
            Op::ClonePool => {
                if let Some(p) = self.pools.get(usize::from(arg) % self.pools.len().max(1)) {
                    let p = p.clone();
                    self.pools.push(p);
                }
            }
            Op::DropPool => {
                if !self.pools.is_empty() {
                    let k = usize::from(arg) % self.pools.len();
                    drop(self.pools.swap_remove(k));
                }
            }
        }
        if let Some(entry) = self.live.get(i) {
            entry.verify("after the operation");
        }
        if let Some(pool) = self.pools.first() {
            let s = pool.stats();
            assert!(
                s.in_use <= s.capacity && s.high_water <= s.capacity,
                "{s:?}"
            );
        }
    }

    /// After the last operation: stop sending, take in what the other thread still
    /// sends, and drop everything, checking each canary.
    fn finish(mut self) {
        drop(self.tx.take());
        while let Ok(entry) = self.rx.recv() {
            self.receive(entry);
        }
        for entry in self.live.drain(..) {
            Self::retire(entry);
        }
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// The second thread: started once and reused, because spawning a thread per input
/// costs more than the input (and, under the fuzzer, frees thread memory after the
/// input ends, which triggers a leak scan every time).
struct Helper {
    jobs: mpsc::SyncSender<Job>,
    done: Mutex<mpsc::Receiver<()>>,
}

static RUNNING: Mutex<()> = Mutex::new(());

fn helper() -> &'static Helper {
    static HELPER: OnceLock<Helper> = OnceLock::new();
    HELPER.get_or_init(|| {
        let (jobs, job_rx) = mpsc::sync_channel::<Job>(0);
        let (done_tx, done) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("pool_ops-second".into())
            .spawn(move || {
                while let Ok(job) = job_rx.recv() {
                    job();
                    if done_tx.send(()).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the helper thread");
        Helper {
            jobs,
            done: Mutex::new(done),
        }
    })
}

/// Runs the check on a `pool_ops` input.
pub fn check_input(data: &[u8]) {
    let Some((&[capacity_sel, shape_sel], rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let capacity = usize::from(capacity_sel % 9);
    let slot = SLOTS[usize::from(shape_sel) % SLOTS.len()];
    let keep_handle = shape_sel & 0x80 == 0;
    let pool = BufferPool::new(capacity, slot).expect("small pool");

    let mut ops = [Vec::new(), Vec::new()];
    for pair in rest.chunks_exact(2).take(MAX_OPS) {
        let (code, arg) = (pair[0], pair[1]);
        ops[usize::from(code & 1)].push((OPS[usize::from(code >> 1) % OPS.len()], arg));
    }

    let counts = Arc::new(Counts::default());
    let (to_second, from_first) = mpsc::channel();
    let (to_first, from_second) = mpsc::channel();
    let first = Worker {
        slot,
        pools: vec![pool.clone()],
        live: Vec::new(),
        tx: Some(to_second),
        rx: from_second,
        counts: counts.clone(),
    };
    let second = Worker {
        slot,
        pools: vec![pool.clone()],
        live: Vec::new(),
        tx: Some(to_first),
        rx: from_first,
        counts: counts.clone(),
    };
    let kept = keep_handle.then_some(pool);
    let [first_ops, second_ops] = ops;
    let run = |mut w: Worker, ops: Vec<(Op, u8)>| {
        for (op, arg) in ops {
            w.run(op, arg);
        }
        w.finish();
    };
    {
        // One input at a time on the helper thread (tests may call this in parallel).
        let _one = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let helper = helper();
        helper
            .jobs
            .send(Box::new(move || run(second, second_ops)))
            .expect("the helper thread is gone (a check failed on it earlier)");
        run(first, first_ops);
        helper
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .recv()
            .expect("a check failed on the second thread");
    }

    // Both threads are joined: the statistics are exact now.
    if let Some(pool) = kept {
        let s = pool.stats();
        assert_eq!(
            s.in_use, 0,
            "slots still in use after every buffer was dropped: {s:?}"
        );
        assert!(s.high_water <= s.capacity, "{s:?}");
        assert_eq!(
            s.acquisitions(),
            counts.acquired.load(Ordering::Relaxed),
            "{s:?}"
        );
        assert_eq!(
            s.fallback_too_large,
            counts.too_large.load(Ordering::Relaxed),
            "{s:?}"
        );
        if capacity == 0 {
            assert_eq!(s.pooled, 0, "{s:?}");
        }
    }
}
