//! The serialized FIFO operation queue of the shell (docs/spec.md H-3, H-11, INV-4).
//!
//! Internal to the crate: public only in a `--cfg exthost_loom` build, for
//! the loom suites (`loom-tests/`); not part of the API an embedding
//! program uses.
//!
//! Every host operation (`activate`, `emit`, `dispose`, `reload`) first takes
//! a [`Ticket`] with [`SerialQueue::enqueue`], synchronously, in call order,
//! then awaits it. The ticket resolves to a [`Turn`] once every earlier ticket
//! has been released; the operation runs while it holds the turn and releases
//! the queue by dropping it, whether it settled or its future was dropped.
//!
//! The queue is runtime-agnostic: it needs only [`std::task::Waker`] and the
//! crate's `sync` shim, so it runs under any executor and under loom's model
//! checker (the `exthost-loom-tests` crate explores every interleaving of it).
//!
//! # Protocol
//!
//! The queue keeps the tickets taken and not yet released, ordered by number.
//! The smallest of them holds the turn ("granted"); the others wait and keep
//! the latest waker they were polled with.
//!
//! * Releasing the turn (dropping the [`Turn`], or dropping a granted
//!   [`Ticket`] before it was polled) removes that ticket and wakes exactly
//!   the next one, which now holds the turn.
//! * Dropping a waiting ticket removes it and wakes nobody: nothing about the
//!   other tickets changed.
//! * [`SerialQueue::enqueue_and_close`] takes the last ticket and closes the
//!   queue under the same lock, so no ticket is ever numbered after it.

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use crate::sync::{Arc, Mutex, lock};

/// FIFO ticket queue: one operation runs at a time, in the order tickets were
/// taken.
///
/// Clones share the same queue.
#[derive(Clone)]
pub struct SerialQueue {
    shared: Arc<Mutex<State>>,
}

/// The queue's state, behind its one lock.
#[derive(Default)]
struct State {
    /// The number of the next ticket.
    next: u64,
    /// Every ticket taken and not yet released, by number, with the latest
    /// waker it was polled with. The first entry holds the turn.
    live: BTreeMap<u64, Option<Waker>>,
    /// Set by `enqueue_and_close`: no further ticket is handed out.
    closed: bool,
}

impl State {
    /// Hands out the next ticket number, closing the queue behind it if
    /// `close` is set.
    fn take(&mut self, close: bool) -> Result<u64, QueueClosed> {
        if self.closed {
            return Err(QueueClosed);
        }
        let number = self.next;
        self.next += 1;
        self.live.insert(number, None);
        self.closed = close;
        Ok(number)
    }

    /// The ticket that holds the turn, if any.
    fn holder(&self) -> Option<u64> {
        self.live.first_key_value().map(|(&number, _)| number)
    }

    /// Removes ticket `number`. Returns the waker it left (to be dropped
    /// outside the lock) and, if it held the turn, the waker of the next
    /// ticket, which now holds it (to be woken outside the lock).
    fn remove(&mut self, number: u64) -> (Option<Waker>, Option<Waker>) {
        let held_turn = self.holder() == Some(number);
        let own = self.live.remove(&number).flatten();
        let next = if held_turn {
            self.live
                .first_entry()
                .and_then(|mut next| next.get_mut().take())
        } else {
            None
        };
        (own, next)
    }
}

/// Removes ticket `number` from the queue and, if the turn passed on, wakes
/// the next holder. Foreign code (the wakers' drop and wake) runs after the
/// lock is released.
fn release(shared: &Mutex<State>, number: u64) {
    let (own, next) = lock(shared).remove(number);
    drop(own);
    if let Some(waker) = next {
        waker.wake();
    }
}

impl SerialQueue {
    /// Makes an empty, open queue.
    pub fn new() -> Self {
        Self {
            shared: Arc::new(Mutex::new(State::default())),
        }
    }

    /// Takes the next ticket, synchronously, in call order.
    ///
    /// # Errors
    ///
    /// [`QueueClosed`] once [`enqueue_and_close`](Self::enqueue_and_close)
    /// has taken the queue's last ticket.
    pub fn enqueue(&self) -> Result<Ticket, QueueClosed> {
        self.take(false)
    }

    /// Takes a ticket and closes the queue in one step: every later enqueue
    /// fails, and no ticket is ever numbered after this one (docs/spec.md H-11: the
    /// `dispose` operation waits for everything queued before it).
    ///
    /// # Errors
    ///
    /// [`QueueClosed`] if the queue was already closed.
    pub fn enqueue_and_close(&self) -> Result<Ticket, QueueClosed> {
        self.take(true)
    }

    fn take(&self, close: bool) -> Result<Ticket, QueueClosed> {
        let number = lock(&self.shared).take(close)?;
        Ok(Ticket {
            shared: Some(self.shared.clone()),
            number,
        })
    }

    /// Whether the queue is closed to new tickets.
    #[cfg_attr(
        not(exthost_loom),
        allow(dead_code, reason = "read by the loom suites and the unit tests")
    )]
    pub fn is_closed(&self) -> bool {
        lock(&self.shared).closed
    }

    /// Number of tickets taken and not yet released (waiting or running); for
    /// tests and diagnostics.
    #[cfg_attr(
        not(exthost_loom),
        allow(dead_code, reason = "read by the loom suites and the unit tests")
    )]
    pub fn pending(&self) -> usize {
        lock(&self.shared).live.len()
    }
}

impl Default for SerialQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for SerialQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = lock(&self.shared);
        f.debug_struct("SerialQueue")
            .field("next_ticket", &state.next)
            .field("holder", &state.holder())
            .field("pending", &state.live.len())
            .field("closed", &state.closed)
            .finish()
    }
}

/// A place in the queue.
///
/// A `Future<Output = Turn>` that resolves when every earlier ticket has been
/// released or dropped. Dropping it before its turn removes it without
/// effect; dropping it after its turn was granted but before it was polled
/// passes the turn on. Polling it again after it resolved panics.
#[must_use = "a ticket holds a place in the queue; await it to get the turn"]
pub struct Ticket {
    /// The queue; `None` once the ticket resolved and the [`Turn`] took over.
    shared: Option<Arc<Mutex<State>>>,
    number: u64,
}

impl Ticket {
    /// The ticket's number: its position in call order, counted from 0 for
    /// the queue's first ticket.
    #[cfg_attr(
        not(exthost_loom),
        allow(dead_code, reason = "read by the loom suites and the unit tests")
    )]
    pub fn number(&self) -> u64 {
        self.number
    }
}

impl Future for Ticket {
    type Output = Turn;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Turn> {
        let this = self.get_mut();
        let shared = this
            .shared
            .as_ref()
            .expect("Ticket polled after it resolved");
        let mut state = lock(shared);
        if state.holder() == Some(this.number) {
            drop(state);
            let shared = this.shared.take().expect("checked above");
            return Poll::Ready(Turn {
                shared,
                number: this.number,
            });
        }
        let slot = state
            .live
            .get_mut(&this.number)
            .expect("an unresolved ticket stays in the queue until dropped");
        if slot
            .as_ref()
            .is_some_and(|waker| waker.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        let replaced = slot.replace(cx.waker().clone());
        drop(state);
        drop(replaced);
        Poll::Pending
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            release(&shared, self.number);
        }
    }
}

impl fmt::Debug for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ticket")
            .field("number", &self.number)
            .field("resolved", &self.shared.is_none())
            .finish()
    }
}

/// The right to run.
///
/// Dropping it (the operation settled, or its future was dropped) releases
/// the queue to the next ticket and wakes it.
#[must_use = "dropping the turn at once releases the queue before the operation ran"]
pub struct Turn {
    shared: Arc<Mutex<State>>,
    number: u64,
}

impl Turn {
    /// The number of the ticket this turn came from.
    #[cfg_attr(
        not(exthost_loom),
        allow(dead_code, reason = "read by the loom suites and the unit tests")
    )]
    pub fn number(&self) -> u64 {
        self.number
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        release(&self.shared, self.number);
    }
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Turn")
            .field("number", &self.number)
            .finish()
    }
}

/// The queue was closed by [`SerialQueue::enqueue_and_close`] (the host is
/// disposed or disposing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the queue is closed")]
pub struct QueueClosed;

#[cfg(all(test, not(exthost_loom)))]
mod tests {
    use super::*;
    use std::pin::pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::task::Wake;
    use std::thread;

    /// A waker that counts its wake-ups.
    #[derive(Default)]
    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn counting() -> (Arc<CountingWaker>, Waker) {
        let counter = Arc::new(CountingWaker::default());
        (counter.clone(), Waker::from(counter))
    }

    fn wakes(counter: &CountingWaker) -> usize {
        counter.0.load(Ordering::SeqCst)
    }

    fn poll_with(ticket: &mut Ticket, waker: &Waker) -> Poll<Turn> {
        Pin::new(ticket).poll(&mut Context::from_waker(waker))
    }

    fn poll_now(ticket: &mut Ticket) -> Poll<Turn> {
        poll_with(ticket, Waker::noop())
    }

    fn granted(ticket: &mut Ticket) -> Turn {
        match poll_now(ticket) {
            Poll::Ready(turn) => turn,
            Poll::Pending => panic!("ticket {} should hold the turn", ticket.number()),
        }
    }

    /// A minimal thread-parking executor, so the threaded test needs no
    /// runtime.
    fn block_on<F: Future>(future: F) -> F::Output {
        struct Unpark(thread::Thread);
        impl Wake for Unpark {
            fn wake(self: Arc<Self>) {
                self.0.unpark();
            }
        }
        let mut future = pin!(future);
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
                return output;
            }
            thread::park();
        }
    }

    #[test]
    fn primitives_are_thread_safe() {
        fn send_sync_unpin<T: Send + Sync + Unpin>() {}
        fn send_sync<T: Send + Sync>() {}
        send_sync_unpin::<Ticket>();
        send_sync::<Turn>();
        send_sync::<SerialQueue>();
    }

    #[test]
    fn tickets_are_numbered_in_call_order() {
        let queue = SerialQueue::new();
        let tickets: Vec<Ticket> = (0..4).map(|_| queue.enqueue().unwrap()).collect();
        let numbers: Vec<u64> = tickets.iter().map(Ticket::number).collect();
        assert_eq!(numbers, [0, 1, 2, 3]);
        assert_eq!(queue.pending(), 4);
        drop(tickets);
        assert_eq!(queue.pending(), 0);
        assert_eq!(queue.enqueue().unwrap().number(), 4);
    }

    #[test]
    fn one_turn_at_a_time_in_ticket_order() {
        let queue = SerialQueue::new();
        let mut first = queue.enqueue().unwrap();
        let mut second = queue.enqueue().unwrap();
        let (counter, waker) = counting();
        assert!(poll_with(&mut second, &waker).is_pending());
        let turn = granted(&mut first);
        assert_eq!(turn.number(), 0);
        assert!(poll_with(&mut second, &waker).is_pending());
        assert_eq!(wakes(&counter), 0);
        assert_eq!(queue.pending(), 2);
        drop(turn);
        assert_eq!(wakes(&counter), 1);
        let turn = granted(&mut second);
        assert_eq!(turn.number(), 1);
        assert_eq!(queue.pending(), 1);
        drop(turn);
        assert_eq!(queue.pending(), 0);
    }

    #[test]
    fn release_wakes_exactly_the_next_ticket_with_its_latest_waker() {
        let queue = SerialQueue::new();
        let mut first = queue.enqueue().unwrap();
        let mut second = queue.enqueue().unwrap();
        let mut third = queue.enqueue().unwrap();
        let (stale, stale_waker) = counting();
        let (latest, latest_waker) = counting();
        let (behind, behind_waker) = counting();
        assert!(poll_with(&mut second, &stale_waker).is_pending());
        assert!(poll_with(&mut second, &latest_waker).is_pending());
        assert!(poll_with(&mut third, &behind_waker).is_pending());
        drop(granted(&mut first));
        assert_eq!((wakes(&stale), wakes(&latest), wakes(&behind)), (0, 1, 0));
        drop(granted(&mut second));
        assert_eq!((wakes(&stale), wakes(&latest), wakes(&behind)), (0, 1, 1));
        drop(granted(&mut third));
    }

    #[test]
    fn a_waiting_ticket_dropped_leaves_without_effect() {
        let queue = SerialQueue::new();
        let mut first = queue.enqueue().unwrap();
        let mut second = queue.enqueue().unwrap();
        let mut third = queue.enqueue().unwrap();
        let (second_counter, second_waker) = counting();
        let (third_counter, third_waker) = counting();
        assert!(poll_with(&mut second, &second_waker).is_pending());
        assert!(poll_with(&mut third, &third_waker).is_pending());
        let turn = granted(&mut first);
        drop(second);
        assert_eq!(queue.pending(), 2);
        assert_eq!(wakes(&third_counter), 0);
        drop(turn);
        assert_eq!((wakes(&second_counter), wakes(&third_counter)), (0, 1));
        assert_eq!(granted(&mut third).number(), 2);
    }

    #[test]
    fn a_granted_ticket_dropped_unpolled_passes_the_turn_on() {
        let queue = SerialQueue::new();
        let first = queue.enqueue().unwrap();
        let mut second = queue.enqueue().unwrap();
        let (counter, waker) = counting();
        assert!(poll_with(&mut second, &waker).is_pending());
        drop(first); // granted (it is first) but never polled
        assert_eq!(wakes(&counter), 1);
        assert_eq!(granted(&mut second).number(), 1);
    }

    #[test]
    fn an_empty_queue_grants_at_once() {
        let queue = SerialQueue::default();
        let mut ticket = queue.enqueue().unwrap();
        assert_eq!(granted(&mut ticket).number(), 0);
        assert_eq!(queue.pending(), 0);
        let mut ticket = queue.enqueue().unwrap();
        assert_eq!(granted(&mut ticket).number(), 1);
    }

    #[test]
    #[should_panic(expected = "Ticket polled after it resolved")]
    fn polling_a_resolved_ticket_panics() {
        let queue = SerialQueue::new();
        let mut ticket = queue.enqueue().unwrap();
        let _turn = granted(&mut ticket);
        let _ = poll_now(&mut ticket);
    }

    #[test]
    fn enqueue_and_close_waits_behind_earlier_tickets_and_refuses_later_ones() {
        let queue = SerialQueue::new();
        let mut activation = queue.enqueue().unwrap();
        assert!(!queue.is_closed());
        let mut dispose = queue.enqueue_and_close().unwrap();
        assert!(queue.is_closed());
        assert_eq!(queue.enqueue().unwrap_err(), QueueClosed);
        assert_eq!(queue.enqueue_and_close().unwrap_err(), QueueClosed);
        assert_eq!(QueueClosed.to_string(), "the queue is closed");
        assert!(poll_now(&mut dispose).is_pending());
        let turn = granted(&mut activation);
        assert!(poll_now(&mut dispose).is_pending());
        drop(turn);
        assert_eq!(granted(&mut dispose).number(), 1);
        assert_eq!(queue.pending(), 0);
        assert!(queue.enqueue().is_err());
    }

    #[test]
    fn clones_share_the_queue_and_debug_shows_its_state() {
        let queue = SerialQueue::new();
        let clone = queue.clone();
        let mut ticket = clone.enqueue().unwrap();
        let waiting = queue.enqueue().unwrap();
        assert_eq!(waiting.number(), 1);
        assert_eq!(
            format!("{queue:?}"),
            "SerialQueue { next_ticket: 2, holder: Some(0), pending: 2, closed: false }"
        );
        assert_eq!(
            format!("{waiting:?}"),
            "Ticket { number: 1, resolved: false }"
        );
        let turn = granted(&mut ticket);
        assert_eq!(format!("{turn:?}"), "Turn { number: 0 }");
        assert_eq!(
            format!("{ticket:?}"),
            "Ticket { number: 0, resolved: true }"
        );
    }

    /// Real threads, no runtime: every operation runs alone, and they start
    /// in ticket order.
    #[test]
    fn threads_run_one_at_a_time_in_ticket_order() {
        const THREADS: usize = 8;
        const ROUNDS: usize = 25;
        let queue = SerialQueue::new();
        let running = Arc::new(AtomicUsize::new(0));
        let started = Arc::new(Mutex::new(Vec::new()));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let queue = queue.clone();
                let running = running.clone();
                let started = started.clone();
                thread::spawn(move || {
                    for _ in 0..ROUNDS {
                        let ticket = queue.enqueue().unwrap();
                        let turn = block_on(ticket);
                        assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0);
                        started.lock().unwrap().push(turn.number());
                        thread::yield_now();
                        assert_eq!(running.fetch_sub(1, Ordering::SeqCst), 1);
                        drop(turn);
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        let started = started.lock().unwrap();
        let expected: Vec<u64> = (0..(THREADS * ROUNDS) as u64).collect();
        assert_eq!(*started, expected);
        assert_eq!(queue.pending(), 0);
    }
}
