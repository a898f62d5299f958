//! A miner connection's queue from the router: bounded, one sender (the router's entry
//! for the connection), one receiver (the connection's task), and small.
//!
//! A `tokio::sync::mpsc` channel costs about 0.8 KiB per connection before anything is
//! sent (its shared state is padded to cache lines and its first block holds 32 slots);
//! this one is a mutex-guarded `VecDeque` and a [`Notify`], about 0.1 KiB, which an idle
//! miner keeps for as long as it is connected. The router never waits on it: a full
//! queue means the miner is not reading ([`Sender::try_send`] says so and the router
//! drops the miner).
//!
//! The receiver is woken by `Notify::notify_one`, which keeps a permit when the task is
//! not waiting: a message or a close between the receiver's look at the queue and its
//! wait is never missed.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// Why [`Sender::try_send`] did not queue a message (which it gives back).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TrySendError<T> {
    /// The queue holds its bound.
    Full(T),
    /// The receiver is gone.
    Closed(T),
}

#[derive(Debug)]
struct Inner<T> {
    queue: Mutex<VecDeque<T>>,
    bound: usize,
    notify: Notify,
    sender_gone: AtomicBool,
    receiver_gone: AtomicBool,
}

impl<T> Inner<T> {
    fn queue(&self) -> MutexGuard<'_, VecDeque<T>> {
        // A panic while holding the lock leaves a consistent queue: take it anyway.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The router's end (see the [module docs](self)). Dropping it closes the queue: the
/// receiver gets what is queued, then `None`.
#[derive(Debug)]
pub(crate) struct Sender<T>(Arc<Inner<T>>);

/// The connection task's end. Dropping it drops what is queued.
#[derive(Debug)]
pub(crate) struct Receiver<T>(Arc<Inner<T>>);

/// A queue holding at most `bound` messages (at least 1).
pub(crate) fn channel<T>(bound: usize) -> (Sender<T>, Receiver<T>) {
    let inner = Arc::new(Inner {
        queue: Mutex::new(VecDeque::new()),
        bound: bound.max(1),
        notify: Notify::new(),
        sender_gone: AtomicBool::new(false),
        receiver_gone: AtomicBool::new(false),
    });
    (Sender(inner.clone()), Receiver(inner))
}

impl<T> Sender<T> {
    /// Queues `msg` without waiting.
    ///
    /// # Errors
    /// [`TrySendError::Full`] if the queue holds its bound, [`TrySendError::Closed`] if
    /// the receiver is gone; either way `msg` comes back.
    pub(crate) fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        if self.0.receiver_gone.load(Ordering::Acquire) {
            return Err(TrySendError::Closed(msg));
        }
        {
            let mut queue = self.0.queue();
            if queue.len() >= self.0.bound {
                return Err(TrySendError::Full(msg));
            }
            queue.push_back(msg);
        }
        self.0.notify.notify_one();
        Ok(())
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        self.0.sender_gone.store(true, Ordering::Release);
        self.0.notify.notify_one();
    }
}

impl<T> Receiver<T> {
    /// The next message if one is queued, without waiting.
    pub(crate) fn try_recv(&mut self) -> Option<T> {
        self.0.queue().pop_front()
    }

    /// The next message; `None` once the sender is gone and the queue is empty.
    /// Cancel-safe: a message is taken only when this returns it.
    pub(crate) async fn recv(&mut self) -> Option<T> {
        loop {
            // Read the flag before the queue: a message queued before the sender went
            // is then always seen.
            let gone = self.0.sender_gone.load(Ordering::Acquire);
            if let Some(msg) = self.0.queue().pop_front() {
                return Some(msg);
            }
            if gone {
                return None;
            }
            self.0.notify.notified().await;
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.0.receiver_gone.store(true, Ordering::Release);
        // What was queued goes now, not when the router forgets the connection.
        let _dropped = std::mem::take(&mut *self.0.queue());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn bounded_then_closed_both_ways() {
        let (tx, mut rx) = channel(2);
        assert_eq!(tx.try_send(1), Ok(()));
        assert_eq!(tx.try_send(2), Ok(()));
        assert_eq!(tx.try_send(3), Err(TrySendError::Full(3)));
        assert_eq!(rx.recv().await, Some(1));
        assert_eq!(tx.try_send(4), Ok(()));
        assert_eq!(rx.try_recv(), Some(2));
        assert_eq!(rx.try_recv(), Some(4));
        assert_eq!(rx.try_recv(), None);
        assert_eq!(tx.try_send(2), Ok(()));
        assert_eq!(tx.try_send(4), Ok(()));
        // The sender goes: what is queued is still delivered, then `None`.
        drop(tx);
        assert_eq!(rx.recv().await, Some(2));
        assert_eq!(rx.recv().await, Some(4));
        assert_eq!(rx.recv().await, None);
        assert_eq!(rx.recv().await, None);

        let (tx, rx) = channel::<u8>(0);
        assert_eq!(tx.try_send(1), Ok(()), "a bound of 0 holds one");
        drop(rx);
        assert_eq!(tx.try_send(2), Err(TrySendError::Closed(2)));
    }

    /// A waiting receiver is woken by a message and by the sender going.
    #[tokio::test]
    async fn a_waiting_receiver_is_woken() {
        let (tx, mut rx) = channel(4);
        let waiter = tokio::spawn(async move {
            let first = rx.recv().await;
            let end = rx.recv().await;
            (first, end)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        tx.try_send(7u32).unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(tx);
        let got = tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("woken")
            .unwrap();
        assert_eq!(got, (Some(7), None));
    }

    /// A sender and a receiver on two threads: every message arrives once, in order,
    /// and the end is seen, with a bound small enough that the sender meets it often.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn nothing_lost_across_threads() {
        const N: u32 = 20_000;
        let (tx, mut rx) = channel(8);
        let receiver = tokio::spawn(async move {
            let mut next = 0;
            while let Some(v) = rx.recv().await {
                assert_eq!(v, next);
                next += 1;
            }
            next
        });
        let sender = tokio::task::spawn_blocking(move || {
            let mut v = 0;
            while v < N {
                match tx.try_send(v) {
                    Ok(()) => v += 1,
                    Err(TrySendError::Full(_)) => std::thread::yield_now(),
                    Err(TrySendError::Closed(_)) => panic!("closed early"),
                }
            }
        });
        sender.await.unwrap();
        let received = tokio::time::timeout(Duration::from_secs(10), receiver)
            .await
            .expect("the receiver saw the end")
            .unwrap();
        assert_eq!(received, N);
    }

    /// The state an idle connection keeps is a tenth of a tokio channel's.
    #[test]
    fn small() {
        let size = std::mem::size_of::<Inner<Box<u64>>>();
        assert!(size <= 128, "{size} bytes");
    }
}
