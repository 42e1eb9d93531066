//! H-12 for hooks under a deadline: what one batch of hooks, running in a
//! task of its own, tells the watchdog in the emit's driver, at the cost of
//! one coarse clock reading (or, timed from the ticker, one look at its
//! tick) and one atomic update per hook.
//!
//! Architecture invariants:
//! - Depends in `host/` only on the clock, the ticker and [`BatchTimes`]
//!   (the ticker's side of a batch), and on the core's `Failure` and
//!   `HookResults`; only the driver uses it.
//! - A batch timed from the ticker stores, as its running hook's start,
//!   the tick it saw before the hook; its completions are judged when its
//!   results are taken ([`BatchProgress::take_results`]), from the marks
//!   it shared.
//! - A batch's progress is one atomic word: when its running hook started,
//!   whether the watchdog gave up on it, and how many hooks it finished.
//!   The batch moves the word on only while the watchdog has not given up,
//!   and the watchdog gives up only while the word still names the hook it
//!   timed, so exactly one of them has the last word on each hook.
//! - Times are read from the system's coarse monotonic clock, which costs
//!   a few nanoseconds where a precise reading costs tens (a hook that
//!   returns at once costs about 20 ns). Its readings lag the true time by
//!   up to its resolution, so every judgement leans toward the deadline:
//!   a completion counts as on time only if it is on time for every true
//!   time the readings allow, and the watchdog never fires before a hook's
//!   true start plus the deadline.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Sleep;

use super::coarse_clock::{self, duration_nanos};
use super::hook_times::{BatchTimes, tick_field};
use super::ticker::Ticker;
use crate::core::{Failure, HookResults};

/// Bits of the progress word that count finished hooks.
const DONE_BITS: u32 = 24;
const DONE_MASK: u64 = (1 << DONE_BITS) - 1;
/// The bit set once the watchdog gave up on the batch.
const ABANDONED: u64 = 1 << DONE_BITS;
/// Where the running hook's start sits in the word, in units of 2^20 ns
/// (about 1 ms) since the batch was made: 39 bits, some 18 years.
const STARTED_SHIFT: u32 = DONE_BITS + 1;
const UNIT_SHIFT: u32 = 20;
/// The start's bits, once shifted down.
const FIELD_MASK: u64 = u64::MAX >> STARTED_SHIFT;

/// The most hooks one batch runs; the watchdog starts the next batch where
/// one that finished all of its hooks stopped.
pub(crate) const MAX_BATCH: usize = DONE_MASK as usize;

/// What one batch of hooks reported: see the module docs.
pub(crate) struct BatchProgress {
    word: AtomicU64,
    /// The coarse clock when the batch was made: the origin of the word's
    /// start times.
    base: u64,
    /// The failures among the finished hooks, by their place in the batch.
    /// A batch adds one only together with moving the word on, under this
    /// lock.
    failures: Mutex<Vec<(usize, Failure)>>,
    /// Set when the batch is timed from the ticker ([`BatchTimes`]): the
    /// word's start is then the tick seen before the running hook, and the
    /// completions are judged when the results are taken.
    times: Option<BatchTimes>,
}

/// What a watchdog saw of a batch timed from the ticker: the hook it was
/// on, and the watchdog's clock reading when it first saw it there.
#[derive(Debug, Default)]
pub(crate) struct Seen(Option<(usize, u64)>);

impl Seen {
    /// The reading when the batch was first seen having finished `done`
    /// hooks, `now` if this is the first time.
    fn at(&mut self, done: usize, now: u64) -> u64 {
        match self.0 {
            Some((seen, at)) if seen == done => at,
            _ => {
                self.0 = Some((done, now));
                now
            }
        }
    }
}

/// What a watchdog read off a batch's progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Watch {
    /// The hooks the batch finished.
    pub(crate) done: usize,
    /// How long from now the watchdog waits before the running hook may be
    /// timed out: never less than the deadline from its true start.
    pub(crate) wait: Duration,
}

impl BatchProgress {
    /// A batch made now, timed with a clock reading per hook: its first
    /// hook starts no earlier than now.
    pub(crate) fn new() -> Self {
        Self::timed(None)
    }

    /// A batch made now, timed from the ticker.
    pub(crate) fn ticked(times: BatchTimes) -> Self {
        Self::timed(Some(times))
    }

    fn timed(times: Option<BatchTimes>) -> Self {
        Self {
            word: AtomicU64::new(0),
            base: coarse_clock::now(),
            failures: Mutex::new(Vec::new()),
            times,
        }
    }

    fn units_since_base(&self, at: u64) -> u64 {
        (at.saturating_sub(self.base) >> UNIT_SHIFT) & FIELD_MASK
    }

    /// Moves the word from `from` (the batch's last word) to `to`; false
    /// once the watchdog gave up on the batch. The batch is the only
    /// writer besides the watchdog's giving up, so it knows the word.
    fn advance(&self, from: u64, to: u64) -> bool {
        self.word
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// What the watchdog waits for now, for a hook deadline of `deadline`;
    /// `seen` is what it saw of the batch before (used only for a batch
    /// timed from the ticker).
    pub(crate) fn watch(&self, deadline: Duration, seen: &mut Seen) -> Watch {
        let word = self.word.load(Ordering::Acquire);
        // Read after the word: the batch was on its hook by then.
        let now = coarse_clock::now();
        let done = (word & DONE_MASK) as usize;
        let started = match &self.times {
            // The start is stored rounded down to a unit and read off a
            // clock that lags by up to its resolution: the true start may
            // be up to both later than the stored one.
            None => self
                .base
                .saturating_add((word >> STARTED_SHIFT) << UNIT_SHIFT)
                .saturating_add(1 << UNIT_SHIFT),
            // The tick seen before the hook, or the watchdog's first sight
            // of it: see `BatchTimes::started_by`.
            Some(times) => times.started_by(word >> STARTED_SHIFT, seen.at(done, now)),
        }
        .saturating_add(coarse_clock::resolution());
        let due = started.saturating_add(duration_nanos(deadline));
        // A reading of now lags too, so the wait is never short.
        let wait = Duration::from_nanos(due.saturating_sub(now));
        Watch { done, wait }
    }

    /// The watchdog gives up on the batch while it is still on the hook
    /// after the `done` finished ones; false if the batch moved on.
    pub(crate) fn abandon(&self, done: usize) -> bool {
        let done = done as u64;
        self.word
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |word| {
                (word & (ABANDONED | DONE_MASK) == done).then_some(word | ABANDONED)
            })
            .is_ok()
    }

    /// Gives up on the batch wherever it is (its driver is going away).
    pub(crate) fn abandon_now(&self) {
        self.word.fetch_or(ABANDONED, Ordering::AcqRel);
    }

    /// The results of the hooks the batch finished, in order, each that
    /// may have ended past the deadline replaced by `timed_out`'s failure
    /// where the batch is timed from the ticker (a batch timed per hook
    /// judged each as it ended). Taken once the batch ended or was given
    /// up on, so no more arrive.
    pub(crate) fn take_results(&self, timed_out: impl Fn(Duration) -> Failure) -> HookResults {
        let failures =
            std::mem::take(&mut *self.failures.lock().unwrap_or_else(|p| p.into_inner()));
        let word = self.word.load(Ordering::Acquire);
        let done = (word & DONE_MASK) as usize;
        // The batch adds failures in order, each below the count it moves
        // the word to; built so that none could be lost even if not.
        let mut results = HookResults::new();
        for (at, failure) in failures {
            results.push_ok(at.saturating_sub(results.len()));
            results.push(Err(failure));
        }
        results.push_ok(done.saturating_sub(results.len()));
        match &self.times {
            None => results,
            // Read after the word: the batch had finished them by then.
            Some(times) => times.judge(
                results,
                (word >> STARTED_SHIFT) & FIELD_MASK,
                coarse_clock::now(),
                timed_out,
            ),
        }
    }
}

/// The judgement of each hook's completion against the deadline, from one
/// coarse clock reading per hook: a hook's end is the next one's start.
/// Used by a batch in a task of its own ([`BatchReporter`]) and by hooks
/// run in the driver under a deadline (one thread runs every task).
pub(crate) struct HookClock {
    /// When the running hook started (a coarse reading).
    started: u64,
    /// A hook is on time when less than this passed between the coarse
    /// readings of its start and its end: the deadline less the clock's
    /// resolution, so that it is on time for every true time the readings
    /// allow. A completion that may have come after the deadline belongs
    /// to the deadline (H-12).
    on_time_within: u64,
    deadline: Duration,
}

impl HookClock {
    /// The first hook starts now.
    pub(crate) fn start(deadline: Duration) -> Self {
        Self::start_at(coarse_clock::now(), deadline)
    }

    fn start_at(started: u64, deadline: Duration) -> Self {
        Self {
            started,
            on_time_within: duration_nanos(deadline).saturating_sub(coarse_clock::resolution()),
            deadline,
        }
    }

    /// The running hook ended now with `result`, and the next one starts:
    /// the result, or the deadline's failure if it may have come late.
    pub(crate) fn judge(
        &mut self,
        result: Result<(), Failure>,
        timed_out: impl FnOnce(Duration) -> Failure,
    ) -> Result<(), Failure> {
        self.judge_at(coarse_clock::now(), result, timed_out)
    }

    /// [`HookClock::judge`] with the clock read at `now`.
    fn judge_at(
        &mut self,
        now: u64,
        result: Result<(), Failure>,
        timed_out: impl FnOnce(Duration) -> Failure,
    ) -> Result<(), Failure> {
        let on_time = now.saturating_sub(self.started) < self.on_time_within;
        self.started = now;
        if on_time {
            result
        } else {
            Err(timed_out(self.deadline))
        }
    }
}

/// The rest of a hook run in the driver under a deadline, once it was
/// pending at its first poll: the hook, or `None` once the deadline passed
/// while it was still pending. The timer is set at its first poll, a
/// deadline from then, so never before the hook's true start plus the
/// deadline (a hook that returns at its first poll registers none). The
/// hook's future is dropped (inside its containment) as soon as the
/// deadline passes.
pub(crate) struct StillPending<F> {
    hook: Option<F>,
    deadline: Duration,
    timer: Option<Pin<Box<Sleep>>>,
}

impl<F> StillPending<F> {
    /// `hook`, pending at its first poll (which registered its waker).
    pub(crate) fn new(hook: F, deadline: Duration) -> Self {
        Self {
            hook: Some(hook),
            deadline,
            timer: None,
        }
    }
}

impl<F: Future<Output = Result<(), Failure>> + Unpin> Future for StillPending<F> {
    type Output = Option<Result<(), Failure>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let Some(hook) = this.hook.as_mut() else {
            return Poll::Ready(None);
        };
        let timer = match this.timer.as_mut() {
            Some(timer) => {
                if let Poll::Ready(result) = Pin::new(hook).poll(cx) {
                    this.hook = None;
                    return Poll::Ready(Some(result));
                }
                timer
            }
            // The hook was just polled, pending: only the timer is new.
            None => this
                .timer
                .insert(Box::pin(tokio::time::sleep(this.deadline))),
        };
        if timer.as_mut().poll(cx).is_ready() {
            this.hook = None;
            return Poll::Ready(None);
        }
        Poll::Pending
    }
}

/// The batch's side of its progress: per hook it reads the clock and
/// judges the completion against the deadline, or, timed from the ticker,
/// loads the tick (the completions are judged when the results are
/// taken); then it moves the word on.
pub(crate) struct BatchReporter {
    progress: Arc<BatchProgress>,
    /// The word as this batch last wrote it.
    word: u64,
    timing: Timing,
}

/// How a batch times its hooks.
enum Timing {
    /// A clock reading per hook.
    Clock(HookClock),
    /// From the ticker: the tick the batch saw last, the ticker, and the
    /// tick its word's fields count from.
    Ticks {
        last: u64,
        ticker: &'static Ticker,
        base_tick: u64,
    },
}

impl BatchReporter {
    /// The batch begins to run now: its first hook's deadline counts from
    /// here. `None` once the watchdog gave up on it.
    pub(crate) fn begin(progress: Arc<BatchProgress>, deadline: Duration) -> Option<Self> {
        let (word, timing) = match &progress.times {
            None => {
                let started = coarse_clock::now();
                (
                    progress.units_since_base(started) << STARTED_SHIFT,
                    Timing::Clock(HookClock::start_at(started, deadline)),
                )
            }
            Some(times) => {
                let tick = times.begin();
                let (ticker, base_tick) = times.source();
                (
                    (times.field(tick) & FIELD_MASK) << STARTED_SHIFT,
                    Timing::Ticks {
                        last: tick,
                        ticker,
                        base_tick,
                    },
                )
            }
        };
        progress.advance(0, word).then(|| Self {
            progress,
            word,
            timing,
        })
    }

    /// The running hook finished with `result` (after waiting, if
    /// `waited`), and the next one starts. A result that came too late is
    /// the deadline's. False once the watchdog gave up on the batch: then
    /// nothing is recorded and the batch must stop.
    /// Timed from the ticker, a hook that returned `Ok` costs one load of
    /// the tick and the word's compare-and-swap (about 20 instructions in
    /// all, inlined into the batch's loop).
    #[inline]
    pub(crate) fn finish(
        &mut self,
        result: Result<(), Failure>,
        waited: bool,
        timed_out: impl FnOnce(Duration) -> Failure,
    ) -> bool {
        let Timing::Ticks {
            last,
            ticker,
            base_tick,
        } = &mut self.timing
        else {
            return self.finish_at(coarse_clock::now(), result, timed_out);
        };
        let done = self.word & DONE_MASK;
        let tick = ticker.tick();
        if tick != *last || waited {
            *last = tick;
            // The mark goes in before the word says the hook ended.
            if let Some(times) = &self.progress.times {
                times.mark(done as usize + 1, tick);
            }
        }
        let next = ((tick_field(tick, *base_tick) & FIELD_MASK) << STARTED_SHIFT) | (done + 1);
        match result {
            Ok(()) => {
                let moved = self.progress.advance(self.word, next);
                self.word = next;
                moved
            }
            failed => self.record(next, failed),
        }
    }

    /// [`BatchReporter::finish`] with the clock read at `now`, for a batch
    /// timed per hook.
    fn finish_at(
        &mut self,
        now: u64,
        result: Result<(), Failure>,
        timed_out: impl FnOnce(Duration) -> Failure,
    ) -> bool {
        let result = match &mut self.timing {
            Timing::Clock(clock) => clock.judge_at(now, result, timed_out),
            Timing::Ticks { .. } => result,
        };
        let done = self.word & DONE_MASK;
        let next = (self.progress.units_since_base(now) << STARTED_SHIFT) | (done + 1);
        self.record(next, result)
    }

    /// The running hook's start, for a batch timed per hook.
    #[cfg(test)]
    fn clock_started(&self) -> u64 {
        match &self.timing {
            Timing::Clock(clock) => clock.started,
            Timing::Ticks { .. } => 0,
        }
    }

    /// Moves the word on to `next` with the running hook's `result`; false
    /// once the watchdog gave up on the batch.
    fn record(&mut self, next: u64, result: Result<(), Failure>) -> bool {
        let done = self.word & DONE_MASK;
        let moved = match result {
            Ok(()) => self.progress.advance(self.word, next),
            Err(failure) => {
                let mut failures = self
                    .progress
                    .failures
                    .lock()
                    .unwrap_or_else(|p| p.into_inner());
                let moved = self.progress.advance(self.word, next);
                if moved {
                    failures.push((done as usize, failure));
                }
                moved
            }
        };
        self.word = next;
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn late(d: Duration) -> Failure {
        Failure::error(format!("late after {d:?}"))
    }

    #[test]
    fn a_batch_records_results_in_order_with_their_failures() {
        let progress = Arc::new(BatchProgress::new());
        let mut batch = BatchReporter::begin(progress.clone(), Duration::from_secs(60)).unwrap();
        assert!(batch.finish(Ok(()), false, late));
        assert!(batch.finish(Err(Failure::error("second")), false, late));
        assert!(batch.finish(Ok(()), false, late));
        let results: Vec<_> = progress.take_results(late).into_results().collect();
        assert_eq!(results.len(), 3);
        assert!(results[0].is_ok() && results[2].is_ok());
        assert_eq!(results[1].as_ref().unwrap_err().message, "second");
    }

    #[test]
    fn once_abandoned_a_batch_records_nothing_more() {
        let progress = Arc::new(BatchProgress::new());
        let mut batch = BatchReporter::begin(progress.clone(), Duration::from_secs(60)).unwrap();
        assert!(batch.finish(Ok(()), false, late));
        assert!(!progress.abandon(0), "hook 0 finished: it cannot time out");
        assert!(progress.abandon(1));
        assert!(!batch.finish(Ok(()), false, late));
        assert!(!batch.finish(Err(Failure::error("late")), false, late));
        assert_eq!(progress.take_results(late).len(), 1);
        assert_eq!(
            progress
                .watch(Duration::from_secs(1), &mut Seen::default())
                .done,
            1
        );
        let never_begun = Arc::new(BatchProgress::new());
        never_begun.abandon_now();
        assert!(BatchReporter::begin(never_begun, Duration::from_secs(60)).is_none());
    }

    #[test]
    fn a_completion_that_may_be_late_belongs_to_the_deadline() {
        let deadline = Duration::from_millis(20);
        let progress = Arc::new(BatchProgress::new());
        let mut batch = BatchReporter::begin(progress.clone(), deadline).unwrap();
        std::thread::sleep(deadline);
        assert!(batch.finish(Ok(()), false, late));
        // The next hook's time starts at the last one's end (read at once
        // here, so no scheduling delay can make it late).
        let ended = batch.clock_started();
        assert!(batch.finish_at(ended, Ok(()), late));
        let results: Vec<_> = progress.take_results(late).into_results().collect();
        assert_eq!(results[0].as_ref().unwrap_err().message, "late after 20ms");
        assert!(
            results[1].is_ok(),
            "the next hook's time starts at the last one's end"
        );
    }

    #[test]
    fn a_completion_is_on_time_only_if_every_true_time_the_readings_allow_is() {
        let deadline = Duration::from_millis(100);
        let d = u64::try_from(deadline.as_nanos()).unwrap();
        let res = coarse_clock::resolution();
        let progress = Arc::new(BatchProgress::new());
        let mut batch = BatchReporter::begin(progress.clone(), deadline).unwrap();
        let start = batch.clock_started();
        // Readings one tick short of the deadline apart: the true times may
        // be a whole deadline apart, so the completion is the deadline's.
        assert!(batch.finish_at(start + d - res, Ok(()), late));
        // One nanosecond less than that: on time whatever the true times.
        let next = batch.clock_started();
        assert!(batch.finish_at(next + d - res - 1, Ok(()), late));
        let results: Vec<_> = progress.take_results(late).into_results().collect();
        assert_eq!(results[0].as_ref().unwrap_err().message, "late after 100ms");
        assert!(results[1].is_ok());
    }

    #[test]
    fn the_watchdog_waits_at_least_the_deadline_from_the_running_hooks_start() {
        let deadline = Duration::from_millis(300);
        let res = Duration::from_nanos(coarse_clock::resolution());
        let made = std::time::Instant::now();
        let progress = Arc::new(BatchProgress::new());
        let watch = progress.watch(deadline, &mut Seen::default());
        // Due no earlier than the deadline after the batch was made, and
        // no later than a unit and two ticks after that.
        assert!(made.elapsed() + watch.wait >= deadline);
        assert!(watch.wait <= deadline + Duration::from_nanos(1 << UNIT_SHIFT) + 2 * res);
        // A later start moves the wait on.
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = BatchReporter::begin(progress.clone(), deadline).unwrap();
        let finished = std::time::Instant::now();
        assert!(batch.finish(Ok(()), false, late));
        let later = progress.watch(deadline, &mut Seen::default());
        assert_eq!(later.done, 1);
        assert!(finished.elapsed() + later.wait >= deadline);
        assert!(made.elapsed() + later.wait >= deadline + Duration::from_millis(50));
    }
}
