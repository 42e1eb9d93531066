//! H-12 for hooks under a deadline: what one batch of hooks, running in a
//! task of its own, tells the watchdog in the emit's driver, at the cost of
//! one clock reading and two atomic updates per hook.
//!
//! Architecture invariants:
//! - Depends in `host/` on the clock only; on the core's `Failure`,
//!   `HookResults` and `Moment`. Only the driver uses it.
//! - It judges nothing. Time is read from the host's clock once per hook:
//!   a hook's end is the next one's start, and every reading goes to the
//!   core with the results ([`HookResults::timed`]), which judges each
//!   hook's two readings against the deadline (INV-17).
//! - A batch's progress is one atomic word: when its running hook started,
//!   whether the watchdog gave up on it, and how many hooks it finished.
//!   The batch moves the word on only while the watchdog has not given up,
//!   and the watchdog gives up only while the word still names the hook it
//!   watched, so exactly one of them has the last word on each hook. A
//!   hook's end reading is stored before the word moves past it, so what
//!   the word says finished has its readings.
//! - The word stores a start rounded down to 2^20 ns; the watchdog rounds
//!   it up again, so it never gives up before a hook's true start plus the
//!   deadline (and the core then judges the hook late by its readings).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exthost_core::{Failure, HookResults, Moment};

use super::clock::Clock;

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
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// What one batch of hooks reported: see the module docs.
pub(crate) struct BatchProgress {
    word: AtomicU64,
    clock: Clock,
    /// When the batch was made: the origin of the word's start times.
    base: Moment,
    /// The readings: the first hook's start, then each hook's end.
    readings: Box<[AtomicU64]>,
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
    /// How long from now the watchdog waits before it may give up on the
    /// running hook: never less than the deadline from its true start.
    pub(crate) wait: Duration,
}

impl BatchProgress {
    /// A batch of `hooks` hooks made now: its first hook's time counts
    /// from now (the batch's task may start a little later, which only
    /// counts against that hook).
    pub(crate) fn new(clock: Clock, hooks: usize) -> Self {
        let base = clock.now();
        Self {
            word: AtomicU64::new(0),
            clock,
            base,
            readings: (0..=hooks)
                .map(|i| AtomicU64::new(if i == 0 { base.as_nanos() } else { 0 }))
                .collect(),
            failures: Mutex::new(Vec::new()),
        }
    }

    /// Nanoseconds from the batch's making to `at`.
    #[inline]
    fn since_base(&self, at: Moment) -> u64 {
        at.as_nanos().saturating_sub(self.base.as_nanos())
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
        let now = self.since_base(self.clock.now());
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

    /// The results of the hooks the batch finished, in order, with their
    /// readings. Taken once the batch ended or was given up on, so no
    /// more arrive.
    pub(crate) fn take_results(&self) -> HookResults {
        let word = self.word.load(Ordering::Acquire);
        let failures =
            std::mem::take(&mut *self.failures.lock().unwrap_or_else(|p| p.into_inner()));
        let done = (word & DONE_MASK) as usize;
        let reading = |i: usize| Moment::from_nanos(self.readings[i].load(Ordering::Relaxed));
        let mut results = HookResults::timed(reading(0));
        // The batch adds failures in order, each below the count it moves
        // the word to.
        let mut failures = failures.into_iter().peekable();
        for i in 0..done {
            let result = match failures.next_if(|(at, _)| *at == i) {
                Some((_, failure)) => Err(failure),
                None => Ok(()),
            };
            results.push_at(result, reading(i + 1));
        }
        results
    }
}

/// The batch's side of its progress: per hook it reads the clock once,
/// stores the reading, and moves the word on.
pub(crate) struct BatchReporter {
    progress: Arc<BatchProgress>,
    /// The word as this batch last wrote it.
    word: u64,
}

impl BatchReporter {
    /// The batch begins to run its first hook. `None` once the watchdog
    /// gave up on it.
    pub(crate) fn begin(progress: Arc<BatchProgress>) -> Option<Self> {
        (progress.word.load(Ordering::Acquire) == 0).then_some(Self { progress, word: 0 })
    }

    /// The running hook finished with `result`, and the next one starts:
    /// one clock reading. False once the watchdog gave up on the batch:
    /// then nothing is recorded and the batch must stop.
    #[inline]
    pub(crate) fn finish(&mut self, result: Result<(), Failure>) -> bool {
        let now = self.progress.clock.now();
        self.finish_at(now, result)
    }

    /// [`BatchReporter::finish`] with the clock read at `now`.
    #[inline]
    fn finish_at(&mut self, now: Moment, result: Result<(), Failure>) -> bool {
        let done = self.word & DONE_MASK;
        let Some(slot) = self.progress.readings.get(done as usize + 1) else {
            return false;
        };
        slot.store(now.as_nanos(), Ordering::Relaxed);
        let next = word_for(self.progress.since_base(now), done + 1);
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

/// The word of a batch on its hook after `done` finished ones, which
/// started `started` nanoseconds after the batch was made.
#[inline]
fn word_for(started: u64, done: u64) -> u64 {
    (((started >> UNIT_SHIFT) & FIELD_MASK) << STARTED_SHIFT) | done
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(hooks: usize) -> (Arc<BatchProgress>, BatchReporter) {
        let progress = Arc::new(BatchProgress::new(Clock::start(), hooks));
        let reporter = BatchReporter::begin(progress.clone()).unwrap();
        (progress, reporter)
    }

    #[test]
    fn a_batch_records_results_in_order_with_their_failures_and_readings() {
        let (progress, mut batch) = batch(3);
        assert!(batch.finish(Ok(())));
        assert!(batch.finish(Err(Failure::error("second"))));
        assert!(batch.finish(Ok(())));
        let results = progress.take_results();
        assert!(results.is_timed());
        let results: Vec<_> = results.into_results().collect();
        assert_eq!(results.len(), 3);
        assert!(results[0].0.is_ok() && results[2].0.is_ok());
        assert_eq!(results[1].0.as_ref().unwrap_err().message, "second");
        // Each hook's end is the next one's start, rising.
        for pair in results.windows(2) {
            let (a, b) = (pair[0].1.unwrap(), pair[1].1.unwrap());
            assert_eq!(a.1, b.0);
            assert!(a.0 <= a.1 && b.0 <= b.1);
        }
    }

    #[test]
    fn readings_are_passed_on_as_taken_for_the_core_to_judge() {
        let (progress, mut batch) = batch(2);
        let start = progress.take_results().last_reading().unwrap();
        // A hook read long after its start, with its own failure: the
        // batch reports both as they are (the core judges, not the batch).
        let late = start.after(Duration::from_secs(3600));
        assert!(batch.finish_at(late, Err(Failure::error("own"))));
        assert!(batch.finish_at(late, Ok(())));
        let results: Vec<_> = progress.take_results().into_results().collect();
        assert_eq!(results[0].0.as_ref().unwrap_err().message, "own");
        assert_eq!(results[0].1, Some((start, late)));
        assert_eq!(results[1], (Ok(()), Some((late, late))));
        // No room past the batch's hooks.
        assert!(!batch.finish(Ok(())));
    }

    #[test]
    fn once_abandoned_a_batch_records_nothing_more() {
        let (progress, mut batch) = batch(3);
        assert!(batch.finish(Ok(())));
        assert!(
            !progress.abandon(0),
            "hook 0 finished: it cannot be given up on"
        );
        assert!(progress.abandon(1));
        assert!(!batch.finish(Ok(())));
        assert!(!batch.finish(Err(Failure::error("late"))));
        assert_eq!(progress.take_results().len(), 1);
        assert_eq!(progress.watch(Duration::from_secs(1)).done, 1);
        let never_begun = Arc::new(BatchProgress::new(Clock::start(), 1));
        never_begun.abandon_now();
        assert!(BatchReporter::begin(never_begun.clone()).is_none());
        assert_eq!(never_begun.take_results().len(), 0);
    }

    #[test]
    fn the_watchdog_waits_at_least_the_deadline_from_the_running_hooks_start() {
        let deadline = Duration::from_millis(300);
        let made = std::time::Instant::now();
        let progress = Arc::new(BatchProgress::new(Clock::start(), 1));
        let watch = progress.watch(deadline);
        // Due no earlier than the deadline after the batch was made, and
        // no later than a unit after that.
        assert!(made.elapsed() + watch.wait >= deadline);
        assert!(watch.wait <= deadline + Duration::from_nanos(1 << UNIT_SHIFT));
        // A later start moves the wait on.
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = BatchReporter::begin(progress.clone()).unwrap();
        let finished = std::time::Instant::now();
        assert!(batch.finish(Ok(())));
        let later = progress.watch(deadline);
        assert_eq!(later.done, 1);
        assert!(finished.elapsed() + later.wait >= deadline);
        assert!(made.elapsed() + later.wait >= deadline + Duration::from_millis(50));
    }
}
