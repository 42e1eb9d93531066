//! Queue scenarios, written once over [`QueueUnderTest`], which the real
//! [`SerialQueue`] and the seeded-bug [`MutantQueue`] both implement.
//!
//! Each scenario is the body of a loom model: it builds its threads from the
//! queue it is given and asserts its property with a marker from
//! [`harness`](crate::harness).
//!
//! Liveness is checked without blocking. A thread blocked for ever would make
//! loom report a deadlock while loom objects (the queue, `block_on`'s
//! notifier) are still alive on its stack, and loom 0.7 aborts the whole test
//! binary when it unwinds them. So [`dropped_waiter`] and
//! [`cancelled_while_running`] poll their last ticket with a waker that
//! records its wake-up and, once every earlier operation has ended, assert it
//! was granted *and* woken; they never wait for it. [`waker_refreshed`] does
//! the same with two wakers and asserts that the latest one is woken. The
//! callers that do wait with `block_on` (in [`mutual_exclusion`], [`fifo`],
//! [`dispose_behind_activation`], and the cancelled operation of
//! [`cancelled_while_running`], which waits at most behind a ticket that is
//! released at once) are run only against mutants that cannot leave them
//! blocked.

use std::collections::BTreeMap;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use exthost::queue::{QueueClosed, SerialQueue, Ticket, Turn};
use loom::future::block_on;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use crate::harness::{CLOSE, DISPOSE_ORDER, FIFO, MUTUAL_EXCLUSION, STALE_WAKER, WEDGED};

/// What the scenarios need from a FIFO ticket queue.
pub trait QueueUnderTest: Clone + Send + Sync + 'static {
    /// A place in the queue; resolves to the turn.
    type Ticket: Future<Output = Self::Turn> + Send + Unpin + 'static;
    /// The right to run; dropping it releases the queue.
    type Turn: Send + 'static;

    /// Takes the next ticket.
    fn enqueue(&self) -> Result<Self::Ticket, QueueClosed>;
    /// Takes a ticket and closes the queue behind it.
    fn enqueue_and_close(&self) -> Result<Self::Ticket, QueueClosed>;
    /// Tickets taken and not yet released.
    fn pending(&self) -> usize;
    /// Whether the queue refuses new tickets.
    fn is_closed(&self) -> bool;
    /// A ticket's number (call order, from 0).
    fn ticket_number(ticket: &Self::Ticket) -> u64;
    /// The number of the ticket a turn came from.
    fn turn_number(turn: &Self::Turn) -> u64;
    /// The operation settled normally and gives its turn back. (The real
    /// queue has no such call: the turn is simply dropped. It is separate
    /// here so a mutant can release only on this path, not on cancellation.)
    fn finish(turn: Self::Turn);
}

impl QueueUnderTest for SerialQueue {
    type Ticket = Ticket;
    type Turn = Turn;

    fn enqueue(&self) -> Result<Ticket, QueueClosed> {
        SerialQueue::enqueue(self)
    }
    fn enqueue_and_close(&self) -> Result<Ticket, QueueClosed> {
        SerialQueue::enqueue_and_close(self)
    }
    fn pending(&self) -> usize {
        SerialQueue::pending(self)
    }
    fn is_closed(&self) -> bool {
        SerialQueue::is_closed(self)
    }
    fn ticket_number(ticket: &Ticket) -> u64 {
        ticket.number()
    }
    fn turn_number(turn: &Turn) -> u64 {
        turn.number()
    }
    fn finish(turn: Turn) {
        drop(turn);
    }
}

/// Polls `future` once with a no-op waker.
fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
    Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
}

/// Asserts the queue is idle and healthy: nothing pending, and a fresh ticket
/// is granted at once.
fn assert_idle<Q: QueueUnderTest>(queue: &Q) {
    let pending = queue.pending();
    assert_eq!(
        pending, 0,
        "{WEDGED}: {pending} ticket(s) left pending after every operation ended"
    );
    let mut ticket = queue.enqueue().expect("the queue is open");
    let Poll::Ready(turn) = poll_once(&mut ticket) else {
        panic!("{WEDGED}: an idle queue did not grant a new ticket");
    };
    Q::finish(turn);
}

/// Spawns a loom thread running `body` on a clone of `queue`.
fn spawn<Q, T, F>(queue: &Q, body: F) -> thread::JoinHandle<T>
where
    Q: QueueUnderTest,
    T: Send + 'static,
    F: FnOnce(Q) -> T + Send + 'static,
{
    let queue = queue.clone();
    thread::spawn(move || body(queue))
}

/// INV-4 mutual exclusion: `operations` operations (one per thread, 2 or 3)
/// take tickets concurrently; inside each turn a shared `running` counter must
/// have been 0.
pub fn mutual_exclusion<Q: QueueUnderTest>(queue: Q, operations: usize) {
    fn operation<Q: QueueUnderTest>(queue: &Q, running: &AtomicUsize) {
        let turn = block_on(queue.enqueue().expect("the queue is open"));
        let others = running.fetch_add(1, SeqCst);
        assert_eq!(
            others,
            0,
            "{MUTUAL_EXCLUSION}: turn {} started while {others} other operation(s) ran",
            Q::turn_number(&turn)
        );
        running.fetch_sub(1, SeqCst);
        Q::finish(turn);
    }

    let running = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (1..operations)
        .map(|_| {
            let running = running.clone();
            spawn(&queue, move |queue| operation(&queue, &running))
        })
        .collect();
    operation(&queue, &running);
    for thread in threads {
        thread.join().expect("operation thread");
    }
    assert_idle(&queue);
}

/// INV-4 FIFO: `operations` operations take tickets concurrently; the k-th
/// operation to start must hold ticket k (tickets are numbered in call
/// order from 0).
pub fn fifo<Q: QueueUnderTest>(queue: Q, operations: usize) {
    fn operation<Q: QueueUnderTest>(queue: &Q, started: &AtomicUsize) {
        let turn = block_on(queue.enqueue().expect("the queue is open"));
        let position = started.fetch_add(1, SeqCst) as u64;
        let number = Q::turn_number(&turn);
        assert_eq!(
            number, position,
            "{FIFO}: ticket {number} started in position {position}"
        );
        Q::finish(turn);
    }

    let started = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (1..operations)
        .map(|_| {
            let started = started.clone();
            spawn(&queue, move |queue| operation(&queue, &started))
        })
        .collect();
    operation(&queue, &started);
    for thread in threads {
        thread.join().expect("operation thread");
    }
    assert_idle(&queue);
}

/// A waker that records whether it was woken, for liveness checks that must
/// not block (see the module documentation).
#[derive(Default)]
struct WakeFlag(std::sync::atomic::AtomicBool);

impl std::task::Wake for WakeFlag {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, SeqCst);
    }
}

/// A ticket that was still waiting when last polled, with the waker it left.
struct Waiting<T> {
    ticket: T,
    flag: std::sync::Arc<WakeFlag>,
}

/// Polls `ticket` once with a fresh [`WakeFlag`] waker: the turn if it was
/// granted, else the ticket and the flag to check later.
fn try_turn<Q: QueueUnderTest>(mut ticket: Q::Ticket) -> Result<Q::Turn, Waiting<Q::Ticket>> {
    let flag = std::sync::Arc::new(WakeFlag::default());
    let waker = Waker::from(flag.clone());
    match Pin::new(&mut ticket).poll(&mut Context::from_waker(&waker)) {
        Poll::Ready(turn) => Ok(turn),
        Poll::Pending => Err(Waiting { ticket, flag }),
    }
}

/// "Must complete", checked without blocking: called once every operation
/// queued before `waiting` has ended, so a live queue has granted it and woken
/// the waker it registered. The turn is then released.
fn assert_granted_and_woken<Q: QueueUnderTest>(waiting: Waiting<Q::Ticket>) {
    let Waiting { mut ticket, flag } = waiting;
    let number = Q::ticket_number(&ticket);
    let Poll::Ready(turn) = poll_once(&mut ticket) else {
        panic!(
            "{WEDGED}: ticket {number} never got its turn although every earlier operation ended"
        );
    };
    assert!(
        flag.0.load(SeqCst),
        "{WEDGED}: ticket {number} got its turn but its waker was never woken (a blocked caller would wait for ever)"
    );
    Q::finish(turn);
}

/// H-3, a caller that gives up before its turn: the main thread holds the
/// turn; a second thread takes a ticket, polls it once and, unless that poll
/// already granted the turn, drops it (before its turn, or after the turn was
/// granted but before a second poll, depending on the interleaving). The main
/// thread releases, takes a third ticket and polls it; once the second thread
/// ended, that ticket must have been granted and woken, and the queue must
/// end idle. (That a dropped ticket never runs is guaranteed by ownership:
/// only polling a live ticket yields a turn.)
pub fn dropped_waiter<Q: QueueUnderTest>(queue: Q) {
    let first = block_on(queue.enqueue().expect("the queue is open"));
    let waiter = spawn(&queue, |queue| {
        let mut ticket = queue.enqueue().expect("the queue is open");
        match poll_once(&mut ticket) {
            Poll::Ready(turn) => Q::finish(turn),
            Poll::Pending => drop(ticket),
        }
    });
    Q::finish(first);
    let last = try_turn::<Q>(queue.enqueue().expect("the queue is open"));
    waiter.join().expect("waiter thread");
    match last {
        Ok(turn) => Q::finish(turn),
        Err(waiting) => assert_granted_and_woken::<Q>(waiting),
    }
    assert_idle(&queue);
}

/// H-3, a ticket polled again with another waker (an executor may move a
/// task, or a `select!` may poll it from a new context): the main thread
/// holds the turn; a second thread takes a ticket, polls it with one waker,
/// then polls it again with a different one, while the main thread releases
/// the turn. If the second poll left the ticket waiting, the release came
/// after it, so the waker woken must be the second one: the first may belong
/// to a context that no longer polls the ticket, and waking only it would
/// leave the caller blocked. Either way the ticket must then be granted and
/// the queue end idle.
pub fn waker_refreshed<Q: QueueUnderTest>(queue: Q) {
    let first = block_on(queue.enqueue().expect("the queue is open"));
    let waiter = spawn(&queue, |queue| {
        let ticket = queue.enqueue().expect("the queue is open");
        let earlier = match try_turn::<Q>(ticket) {
            Ok(turn) => {
                Q::finish(turn);
                return None;
            }
            Err(waiting) => waiting,
        };
        match try_turn::<Q>(earlier.ticket) {
            Ok(turn) => {
                Q::finish(turn);
                None
            }
            Err(latest) => Some((latest, earlier.flag)),
        }
    });
    Q::finish(first);
    if let Some((latest, earlier_flag)) = waiter.join().expect("waiter thread") {
        let number = Q::ticket_number(&latest.ticket);
        let (latest_woken, earlier_woken) =
            (latest.flag.0.load(SeqCst), earlier_flag.0.load(SeqCst));
        assert!(
            latest_woken,
            "{STALE_WAKER}: ticket {number} was re-polled with a new waker, but the release woke {}",
            if earlier_woken {
                "only the waker of its first poll"
            } else {
                "no waker"
            }
        );
        assert_granted_and_woken::<Q>(latest);
    }
    assert_idle(&queue);
}

/// H-3, a caller dropped while running: an operation future that holds its
/// turn and is suspended mid-operation is dropped (cancelled). A second
/// thread concurrently takes a ticket and polls it (running at once if its
/// ticket came first). Once both ended, the second ticket must have been
/// granted and woken, and the queue must end idle: the cancelled operation
/// released its turn.
pub fn cancelled_while_running<Q: QueueUnderTest>(queue: Q) {
    let other = spawn(&queue, |queue| {
        try_turn::<Q>(queue.enqueue().expect("the queue is open"))
            .map(Q::finish)
            .err()
    });

    let ticket = queue.enqueue().expect("the queue is open");
    let started = Arc::new(AtomicBool::new(false));
    let flag = started.clone();
    let mut operation = Box::pin(async move {
        let turn = ticket.await;
        flag.store(true, SeqCst);
        // Suspended mid-operation, for ever: only cancellation ends it.
        std::future::pending::<()>().await;
        Q::finish(turn);
    });
    // Drive the operation until it holds its turn and has started, then
    // cancel it by dropping its future.
    block_on(poll_fn(|cx| {
        assert!(operation.as_mut().poll(cx).is_pending());
        if started.load(SeqCst) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }));
    drop(operation);

    if let Some(waiting) = other.join().expect("other operation thread") {
        assert_granted_and_woken::<Q>(waiting);
    }
    assert_idle(&queue);
}

/// H-11 with H-3: an activation is queued; `dispose` is queued behind it with
/// `enqueue_and_close` while a third caller races to enqueue. `dispose` must
/// start only after the activation settled, and the racing caller either got
/// a ticket numbered before `dispose`'s and ran before it, or was refused
/// with [`QueueClosed`]. Afterwards the queue is closed and empty.
pub fn dispose_behind_activation<Q: QueueUnderTest>(queue: Q) {
    let activation = queue.enqueue().expect("the queue is open");
    let settled = Arc::new(AtomicBool::new(false));
    let disposed = Arc::new(AtomicBool::new(false));

    let dispose = {
        let settled = settled.clone();
        let disposed = disposed.clone();
        spawn(&queue, move |queue| {
            let ticket = queue
                .enqueue_and_close()
                .expect("only dispose closes the queue");
            let number = Q::ticket_number(&ticket);
            let turn = block_on(ticket);
            assert!(settled.load(SeqCst), "{DISPOSE_ORDER}");
            disposed.store(true, SeqCst);
            Q::finish(turn);
            number
        })
    };
    let late = spawn(&queue, move |queue| {
        queue.enqueue().map(|ticket| {
            let number = Q::ticket_number(&ticket);
            let turn = block_on(ticket);
            assert!(
                !disposed.load(SeqCst),
                "{CLOSE}: operation {number} was accepted and ran after dispose"
            );
            Q::finish(turn);
            number
        })
    });

    let turn = block_on(activation);
    settled.store(true, SeqCst);
    Q::finish(turn);

    let dispose = dispose.join().expect("dispose thread");
    // A refused caller got `QueueClosed`; an accepted one must be ahead of
    // `dispose` (and so has settled before it ran).
    if let Ok(late) = late.join().expect("late caller thread") {
        assert!(
            late < dispose,
            "{CLOSE}: ticket {late} was handed out after the closing ticket {dispose}"
        );
    }
    assert!(queue.is_closed());
    assert_eq!(
        queue.enqueue().err(),
        Some(QueueClosed),
        "{CLOSE}: enqueue accepted after dispose ran"
    );
    assert_eq!(
        queue.pending(),
        0,
        "{WEDGED}: tickets left after dispose ran"
    );
}

/// The seeded bugs of [`MutantQueue`], one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// No bug: the control, which must pass every scenario.
    None,
    /// The turn is released as soon as it is granted, before the operation
    /// settles.
    EarlyRelease,
    /// A release grants the most recently taken waiting ticket (LIFO).
    LifoGrant,
    /// A release wakes every waiter and the first to poll takes the turn.
    WakeAllFirstWins,
    /// A ticket dropped after its turn was granted, before it was polled,
    /// keeps the turn instead of passing it on.
    GrantedDropKeepsTurn,
    /// A waiting ticket dropped before its turn stays in the queue as a
    /// ghost.
    DroppedWaiterStays,
    /// The turn is released only when the operation settles normally
    /// ([`QueueUnderTest::finish`]), not when its future is dropped.
    ReleaseOnlyOnFinish,
    /// `enqueue_and_close` enqueues, unlocks, then closes in a second step.
    CloseInTwoSteps,
    /// A release passes the turn to the next ticket but does not wake it (a
    /// lost wake-up: its caller stays blocked).
    ReleaseWithoutWake,
    /// A waiting ticket keeps the waker of its first poll and ignores the
    /// wakers of later polls, so a release wakes a stale waker.
    KeepsFirstWaker,
}

/// A queue written like [`SerialQueue`] but with an explicit holder and one
/// seeded [`Bug`]. With [`Bug::None`] it is correct and passes every
/// scenario, so each mutant's failure is due to its seeded bug alone.
#[derive(Clone)]
pub struct MutantQueue {
    bug: Bug,
    shared: Arc<Mutex<MutantState>>,
}

#[derive(Default)]
struct MutantState {
    next: u64,
    /// The ticket that holds the turn (granted; maybe not yet polled).
    holder: Option<u64>,
    /// Tickets waiting for the turn, with their latest waker.
    waiting: BTreeMap<u64, Option<Waker>>,
    closed: bool,
}

impl MutantQueue {
    /// An empty queue with `bug` seeded.
    pub fn new(bug: Bug) -> Self {
        Self {
            bug,
            shared: Arc::new(Mutex::new(MutantState::default())),
        }
    }

    fn lock(&self) -> loom::sync::MutexGuard<'_, MutantState> {
        self.shared.lock().expect("mutant queue lock")
    }

    fn take(&self, close: bool) -> Result<MutantTicket, QueueClosed> {
        let number = {
            let mut state = self.lock();
            if state.closed {
                return Err(QueueClosed);
            }
            let number = state.next;
            state.next += 1;
            if state.holder.is_none() && state.waiting.is_empty() {
                state.holder = Some(number);
            } else {
                state.waiting.insert(number, None);
            }
            if close && self.bug != Bug::CloseInTwoSteps {
                state.closed = true;
            }
            number
        };
        if close && self.bug == Bug::CloseInTwoSteps {
            self.lock().closed = true;
        }
        Ok(MutantTicket {
            queue: Some(self.clone()),
            number,
        })
    }

    /// The holder `number` gives the turn up; wakes whoever may take it next.
    fn release(&self, number: u64) {
        let wake: Vec<Waker> = {
            let mut state = self.lock();
            assert_eq!(state.holder, Some(number), "only the holder releases");
            match self.bug {
                Bug::WakeAllFirstWins => {
                    state.holder = None;
                    state
                        .waiting
                        .values_mut()
                        .filter_map(Option::take)
                        .collect()
                }
                Bug::LifoGrant => {
                    let next = state.waiting.pop_last();
                    state.holder = next.as_ref().map(|&(number, _)| number);
                    next.and_then(|(_, waker)| waker).into_iter().collect()
                }
                _ => {
                    let next = state.waiting.pop_first();
                    state.holder = next.as_ref().map(|&(number, _)| number);
                    next.and_then(|(_, waker)| waker).into_iter().collect()
                }
            }
        };
        if self.bug != Bug::ReleaseWithoutWake {
            wake.into_iter().for_each(Waker::wake);
        }
    }
}

impl QueueUnderTest for MutantQueue {
    type Ticket = MutantTicket;
    type Turn = MutantTurn;

    fn enqueue(&self) -> Result<MutantTicket, QueueClosed> {
        self.take(false)
    }
    fn enqueue_and_close(&self) -> Result<MutantTicket, QueueClosed> {
        self.take(true)
    }
    fn pending(&self) -> usize {
        let state = self.lock();
        usize::from(state.holder.is_some()) + state.waiting.len()
    }
    fn is_closed(&self) -> bool {
        self.lock().closed
    }
    fn ticket_number(ticket: &MutantTicket) -> u64 {
        ticket.number
    }
    fn turn_number(turn: &MutantTurn) -> u64 {
        turn.number
    }
    fn finish(mut turn: MutantTurn) {
        if let Some(queue) = turn.queue.take() {
            queue.release(turn.number);
        }
    }
}

/// [`MutantQueue`]'s ticket.
pub struct MutantTicket {
    /// `None` once resolved.
    queue: Option<MutantQueue>,
    number: u64,
}

impl Future for MutantTicket {
    type Output = MutantTurn;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<MutantTurn> {
        let this = self.get_mut();
        let queue = this.queue.as_ref().expect("polled after it resolved");
        let granted = {
            let mut state = queue.lock();
            if queue.bug == Bug::WakeAllFirstWins && state.holder.is_none() {
                state.waiting.remove(&this.number);
                state.holder = Some(this.number);
            }
            if state.holder == Some(this.number) {
                true
            } else {
                let waker = state
                    .waiting
                    .get_mut(&this.number)
                    .expect("a waiting ticket is in the queue");
                if waker.is_none() || queue.bug != Bug::KeepsFirstWaker {
                    *waker = Some(cx.waker().clone());
                }
                false
            }
        };
        if !granted {
            return Poll::Pending;
        }
        let queue = this.queue.take().expect("checked above");
        let number = this.number;
        if queue.bug == Bug::EarlyRelease {
            queue.release(number);
            return Poll::Ready(MutantTurn {
                queue: None,
                number,
            });
        }
        Poll::Ready(MutantTurn {
            queue: Some(queue),
            number,
        })
    }
}

impl Drop for MutantTicket {
    fn drop(&mut self) {
        let Some(queue) = self.queue.take() else {
            return;
        };
        let holds_turn = {
            let mut state = queue.lock();
            if state.holder == Some(self.number) {
                true
            } else {
                if queue.bug != Bug::DroppedWaiterStays {
                    state.waiting.remove(&self.number);
                }
                false
            }
        };
        if holds_turn && queue.bug != Bug::GrantedDropKeepsTurn {
            queue.release(self.number);
        }
    }
}

/// [`MutantQueue`]'s turn.
pub struct MutantTurn {
    /// `None` once released.
    queue: Option<MutantQueue>,
    number: u64,
}

impl Drop for MutantTurn {
    fn drop(&mut self) {
        if let Some(queue) = self.queue.take()
            && queue.bug != Bug::ReleaseOnlyOnFinish
        {
            queue.release(self.number);
        }
    }
}
