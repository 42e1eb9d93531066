//! H-12 for hooks under a deadline: what one batch of hooks, running in a
//! task of its own, tells the watchdog in the emit's driver, at the cost of
//! one clock reading and one atomic update per hook.
//!
//! Architecture invariants:
//! - Depends in `host/` on nothing; on the core's `Failure` and
//!   `HookResults`. Only the driver uses it.
//! - Time is read from [`std::time::Instant`], once per hook: a hook's end
//!   is the next one's start, and a hook whose readings are the deadline
//!   or more apart is late (a completion at the deadline belongs to it).
//! - A batch's progress is one atomic word: when its running hook started,
//!   whether the watchdog gave up on it, and how many hooks it finished.
//!   The batch moves the word on only while the watchdog has not given up,
//!   and the watchdog gives up only while the word still names the hook it
//!   timed, so exactly one of them has the last word on each hook.
//! - The word stores a start rounded down to 2^20 ns; the watchdog rounds
//!   it up again, so it never gives up before a hook's true start plus the
//!   deadline.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use exthost_core::{Failure, HookResults};

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

/// `d` in nanoseconds, saturating.
#[inline]
fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()))
}

/// What one batch of hooks reported: see the module docs.
pub(crate) struct BatchProgress {
    word: AtomicU64,
    /// When the batch was made: the origin of the word's start times.
    base: Instant,
    /// The failures among the finished hooks, by their place in the batch.
    /// A batch adds one only together with moving the word on, under this
    /// lock.
    failures: Mutex<Vec<(usize, Failure)>>,
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
    /// A batch made now: its first hook starts no earlier than now.
    pub(crate) fn new() -> Self {
        Self {
            word: AtomicU64::new(0),
            base: Instant::now(),
            failures: Mutex::new(Vec::new()),
        }
    }

    /// Nanoseconds from the batch's making to `at`.
    #[inline]
    fn since_base(&self, at: Instant) -> u64 {
        nanos(at.saturating_duration_since(self.base))
    }

    /// Moves the word from `from` (the batch's last word) to `to`; false
    /// once the watchdog gave up on the batch. The batch is the only
    /// writer besides the watchdog's giving up, so it knows the word.
    fn advance(&self, from: u64, to: u64) -> bool {
        self.word
            .compare_exchange(from, to, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// What the watchdog waits for now, for a hook deadline of `deadline`.
    pub(crate) fn watch(&self, deadline: Duration) -> Watch {
        let word = self.word.load(Ordering::Acquire);
        // Read after the word: the batch was on its hook by then.
        let now = self.since_base(Instant::now());
        let done = (word & DONE_MASK) as usize;
        // The start is stored rounded down to a unit: the true start may
        // be up to a unit later.
        let started = ((word >> STARTED_SHIFT) << UNIT_SHIFT).saturating_add(1 << UNIT_SHIFT);
        let due = started.saturating_add(nanos(deadline));
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

    /// The results of the hooks the batch finished, in order. Taken once
    /// the batch ended or was given up on, so no more arrive.
    pub(crate) fn take_results(&self) -> HookResults {
        let failures =
            std::mem::take(&mut *self.failures.lock().unwrap_or_else(|p| p.into_inner()));
        let done = (self.word.load(Ordering::Acquire) & DONE_MASK) as usize;
        // The batch adds failures in order, each below the count it moves
        // the word to; built so that none could be lost even if not.
        let mut results = HookResults::new();
        for (at, failure) in failures {
            results.push_ok(at.saturating_sub(results.len()));
            results.push(Err(failure));
        }
        results.push_ok(done.saturating_sub(results.len()));
        results
    }
}

/// The batch's side of its progress: per hook it reads the clock once,
/// judges the completion against the deadline, and moves the word on.
pub(crate) struct BatchReporter {
    progress: Arc<BatchProgress>,
    /// The word as this batch last wrote it.
    word: u64,
    /// When the running hook started, in nanoseconds since the batch's
    /// making.
    started: u64,
    deadline: Duration,
    /// The deadline in nanoseconds.
    deadline_nanos: u64,
}

impl BatchReporter {
    /// The batch begins to run now: its first hook's deadline counts from
    /// here. `None` once the watchdog gave up on it.
    pub(crate) fn begin(progress: Arc<BatchProgress>, deadline: Duration) -> Option<Self> {
        let started = progress.since_base(Instant::now());
        let word = ((started >> UNIT_SHIFT) & FIELD_MASK) << STARTED_SHIFT;
        progress.advance(0, word).then(|| Self {
            progress,
            word,
            started,
            deadline,
            deadline_nanos: nanos(deadline),
        })
    }

    /// The running hook finished with `result`, and the next one starts:
    /// one clock reading. A result that came at or after the deadline is
    /// `timed_out`'s. False once the watchdog gave up on the batch: then
    /// nothing is recorded and the batch must stop.
    #[inline]
    pub(crate) fn finish(
        &mut self,
        result: Result<(), Failure>,
        timed_out: impl FnOnce(Duration) -> Failure,
    ) -> bool {
        let now = self.progress.since_base(Instant::now());
        self.finish_at(now, result, timed_out)
    }

    /// [`BatchReporter::finish`] with the clock read at `now` (nanoseconds
    /// since the batch's making).
    #[inline]
    fn finish_at(
        &mut self,
        now: u64,
        result: Result<(), Failure>,
        timed_out: impl FnOnce(Duration) -> Failure,
    ) -> bool {
        let on_time = now.saturating_sub(self.started) < self.deadline_nanos;
        self.started = now;
        let done = self.word & DONE_MASK;
        let next = (((now >> UNIT_SHIFT) & FIELD_MASK) << STARTED_SHIFT) | (done + 1);
        let moved = match result {
            Ok(()) if on_time => self.progress.advance(self.word, next),
            result => {
                let failure = match result {
                    Err(failure) if on_time => failure,
                    _ => timed_out(self.deadline),
                };
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
        assert!(batch.finish(Ok(()), late));
        assert!(batch.finish(Err(Failure::error("second")), late));
        assert!(batch.finish(Ok(()), late));
        let results: Vec<_> = progress.take_results().into_results().collect();
        assert_eq!(results.len(), 3);
        assert!(results[0].is_ok() && results[2].is_ok());
        assert_eq!(results[1].as_ref().unwrap_err().message, "second");
    }

    #[test]
    fn once_abandoned_a_batch_records_nothing_more() {
        let progress = Arc::new(BatchProgress::new());
        let mut batch = BatchReporter::begin(progress.clone(), Duration::from_secs(60)).unwrap();
        assert!(batch.finish(Ok(()), late));
        assert!(!progress.abandon(0), "hook 0 finished: it cannot time out");
        assert!(progress.abandon(1));
        assert!(!batch.finish(Ok(()), late));
        assert!(!batch.finish(Err(Failure::error("late")), late));
        assert_eq!(progress.take_results().len(), 1);
        assert_eq!(progress.watch(Duration::from_secs(1)).done, 1);
        let never_begun = Arc::new(BatchProgress::new());
        never_begun.abandon_now();
        assert!(BatchReporter::begin(never_begun, Duration::from_secs(60)).is_none());
    }

    #[test]
    fn a_completion_at_or_after_the_deadline_belongs_to_it() {
        let deadline = Duration::from_millis(20);
        let d = nanos(deadline);
        let progress = Arc::new(BatchProgress::new());
        let mut batch = BatchReporter::begin(progress.clone(), deadline).unwrap();
        let start = batch.started;
        // Readings exactly the deadline apart: late.
        assert!(batch.finish_at(start + d, Ok(()), late));
        // The next hook's time starts at the last one's end: one
        // nanosecond short of the deadline is on time.
        assert!(batch.finish_at(start + 2 * d - 1, Ok(()), late));
        // A hook's own failure stays its own when on time, and becomes
        // the deadline's when late.
        assert!(batch.finish_at(start + 2 * d, Err(Failure::error("own")), late));
        assert!(batch.finish_at(start + 4 * d, Err(Failure::error("own")), late));
        let results: Vec<_> = progress
            .take_results()
            .into_results()
            .map(|r| r.err().map(|f| f.message))
            .collect();
        let timed_out = Some("late after 20ms".to_owned());
        assert_eq!(
            results,
            [timed_out.clone(), None, Some("own".to_owned()), timed_out]
        );
        // Through the real clock: a hook that slept the deadline is late.
        let progress = Arc::new(BatchProgress::new());
        let mut batch = BatchReporter::begin(progress.clone(), deadline).unwrap();
        std::thread::sleep(deadline);
        assert!(batch.finish(Ok(()), late));
        assert!(progress.take_results().into_results().all(|r| r.is_err()));
    }

    #[test]
    fn the_watchdog_waits_at_least_the_deadline_from_the_running_hooks_start() {
        let deadline = Duration::from_millis(300);
        let made = Instant::now();
        let progress = Arc::new(BatchProgress::new());
        let watch = progress.watch(deadline);
        // Due no earlier than the deadline after the batch was made, and
        // no later than a unit after that.
        assert!(made.elapsed() + watch.wait >= deadline);
        assert!(watch.wait <= deadline + Duration::from_nanos(1 << UNIT_SHIFT));
        // A later start moves the wait on.
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = BatchReporter::begin(progress.clone(), deadline).unwrap();
        let finished = Instant::now();
        assert!(batch.finish(Ok(()), late));
        let later = progress.watch(deadline);
        assert_eq!(later.done, 1);
        assert!(finished.elapsed() + later.wait >= deadline);
        assert!(made.elapsed() + later.wait >= deadline + Duration::from_millis(50));
    }
}
