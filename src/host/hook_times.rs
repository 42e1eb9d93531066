//! H-12 for hooks under a deadline run in the driver where one thread runs
//! every task: each hook's completion judged against the deadline without
//! a clock reading per hook.
//!
//! Architecture invariants:
//! - Per hook, the loop loads the [`Ticker`]'s tick number and compares it
//!   with the last one it saw: one atomic load. It reads the coarse clock
//!   itself only where the tick moved (and after a hook that was pending
//!   at its first poll), and once at the start and once at the end.
//! - At the end, if the whole run took less than the deadline less the
//!   clock's resolution, every hook was on time. Otherwise each hook gets
//!   bounds: its start is no earlier than the loop's last reading before
//!   it; its end no later than the loop's first reading after it, nor than
//!   the reading of the second tick after the one seen at its end (that
//!   tick's reading was taken after the next tick was published, which
//!   came after the hook ended; [`super::ticker`]), each plus the clock's
//!   resolution. A hook is on time only if the bounds are less than the
//!   deadline apart, so one that ended after its deadline never is; a
//!   ticker that stalled only widens the bounds.
//! - With the ticker running, the bounds are within about three ticker
//!   periods and two clock ticks of the truth, which is why this path is
//!   taken only for deadlines of [`MIN_DEADLINE`] and more; shorter ones
//!   read the clock per hook ([`super::hook_watch::HookClock`]), and so do
//!   runs of fewer than [`WAKE_MIN_HOOKS`] hooks while the ticker is
//!   parked (waking it would cost them more than it saves).

use std::time::Duration;

use super::coarse_clock::{self, duration_nanos};
use super::ticker::{HISTORY, Ticker, TickerUse};
use crate::core::{Failure, HookResults};

/// The shortest hook deadline judged from ticks: the ticker's imprecision
/// (some 40 ms) is then a few percent of it at most.
pub(crate) const MIN_DEADLINE: Duration = Duration::from_secs(1);

/// The fewest hooks for which a run wakes a parked ticker: waking it costs
/// the waker about 5 µs here, some 300 hooks' clock readings. Fewer hooks
/// use the ticker only while it runs anyway, and read the clock per hook
/// otherwise.
pub(crate) const WAKE_MIN_HOOKS: usize = 256;

/// The ticker to time `count` hooks under `deadline` with, if any: see
/// [`MIN_DEADLINE`] and [`WAKE_MIN_HOOKS`].
pub(crate) fn ticker_for(count: usize, deadline: Duration) -> Option<&'static Ticker> {
    if deadline < MIN_DEADLINE {
        return None;
    }
    Ticker::get().filter(|ticker| count >= WAKE_MIN_HOOKS || ticker.is_running())
}

/// One place where the loop saw the tick move, or read the clock anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mark {
    /// How many hooks had finished: the mark sits between hook `at - 1`'s
    /// end and hook `at`'s start.
    at: usize,
    /// The tick seen there, and at every later place up to the next mark.
    tick: u64,
    /// The loop's own coarse reading there, taken after the tick was seen.
    reading: u64,
    /// The reading of tick `tick + 2`, once known.
    later: Option<u64>,
}

/// The timing of one run of hooks: see the module docs.
pub(crate) struct HookTimes {
    ticker: &'static Ticker,
    _use: TickerUse,
    deadline: Duration,
    last_tick: u64,
    /// The mark at the start, apart so that a run in which the tick never
    /// moved allocates nothing.
    first: Mark,
    /// The marks after it.
    marks: Vec<Mark>,
}

impl HookTimes {
    /// The first hook starts now, with `ticker` ticking.
    pub(crate) fn start(ticker: &'static Ticker, deadline: Duration) -> Self {
        let use_ = ticker.enter();
        let tick = ticker.tick();
        Self {
            ticker,
            _use: use_,
            deadline,
            last_tick: tick,
            first: Mark {
                at: 0,
                tick,
                reading: coarse_clock::now(),
                later: None,
            },
            marks: Vec::new(),
        }
    }

    /// `at` hooks have finished; the next starts. One atomic load unless
    /// the tick moved.
    #[inline]
    pub(crate) fn passed(&mut self, at: usize) {
        let tick = self.ticker.tick();
        if tick != self.last_tick {
            self.mark(at, tick);
        }
    }

    /// `at` hooks have finished, the last of them after waiting: the clock
    /// is read whether or not the tick moved.
    pub(crate) fn passed_after_waiting(&mut self, at: usize) {
        let tick = self.ticker.tick();
        self.mark(at, tick);
    }

    #[cold]
    #[inline(never)]
    fn mark(&mut self, at: usize, tick: u64) {
        let reading = coarse_clock::now();
        self.last_tick = tick;
        self.resolve(tick);
        self.marks.push(Mark {
            at,
            tick,
            reading,
            later: None,
        });
    }

    /// Looks up the later readings that ticks up to `now` made known.
    fn resolve(&mut self, now: u64) {
        let ticker = self.ticker;
        let marks = self.marks.iter_mut().rev();
        for mark in marks.chain(std::iter::once(&mut self.first)) {
            // Ticks rise from mark to mark: once one is resolved, or out of
            // the history, so is every earlier one.
            if mark.later.is_some() || mark.tick.saturating_add(2 + HISTORY) <= now {
                break;
            }
            if mark.tick.saturating_add(2) <= now {
                mark.later = ticker.reading(mark.tick + 2);
            }
        }
    }

    /// The hooks' `results`, each that may have ended past its deadline
    /// replaced by `timed_out`'s failure.
    pub(crate) fn judge(
        mut self,
        results: HookResults,
        timed_out: impl Fn(Duration) -> Failure,
    ) -> HookResults {
        let end = coarse_clock::now();
        let res = coarse_clock::resolution();
        if run_on_time(self.first.reading, end, res, self.deadline) {
            return results;
        }
        let mut marks = Vec::with_capacity(self.marks.len() + 2);
        marks.push(self.first);
        marks.append(&mut self.marks);
        let tick = self.ticker.tick();
        judge_run(
            self.ticker,
            marks,
            results,
            tick,
            end,
            self.deadline,
            timed_out,
        )
    }
}

/// A batch's progress word field for tick `tick`: counted from the tick
/// `base_tick` when the batch was made, plus one, so that 0 says the batch
/// has not begun.
#[inline]
pub(crate) fn tick_field(tick: u64, base_tick: u64) -> u64 {
    tick.saturating_sub(base_tick).saturating_add(1)
}

/// The `results` of a run of hooks, each that may have ended past the
/// `deadline` replaced by `timed_out`'s failure, judged from the run's
/// `marks` (the first at its start) and a last one at its end, where the
/// run saw `tick` and then read the clock at `end`. The readings of the
/// ticks two after the marks' are looked up where the ticker has them.
fn judge_run(
    ticker: &Ticker,
    mut marks: Vec<Mark>,
    results: HookResults,
    tick: u64,
    end: u64,
    deadline: Duration,
    timed_out: impl Fn(Duration) -> Failure,
) -> HookResults {
    marks.push(Mark {
        at: results.len(),
        tick,
        reading: end,
        later: None,
    });
    let now = ticker.tick();
    for mark in &mut marks {
        if mark.later.is_none() && mark.tick.saturating_add(2) <= now {
            mark.later = ticker.reading(mark.tick + 2);
        }
    }
    let late = late_hooks(&marks, results.len(), coarse_clock::resolution(), deadline);
    if late.is_empty() {
        return results;
    }
    let mut late = late.into_iter().peekable();
    results
        .into_results()
        .enumerate()
        .map(|(i, result)| match late.next_if_eq(&i) {
            Some(_) => Err(timed_out(deadline)),
            None => result,
        })
        .collect()
}

/// True when a run read at `first` and at `end` (coarse readings lagging by
/// less than `res`) took less than `deadline`: every hook in it was on
/// time.
fn run_on_time(first: u64, end: u64, res: u64, deadline: Duration) -> bool {
    end.saturating_sub(first).saturating_add(res) < duration_nanos(deadline)
}

/// The hooks, of `count` run one after another, that may have taken the
/// `deadline` or longer, from the `marks` of their run (rising `at`, the
/// first at 0 and the last at `count`) and a clock resolution of `res`
/// nanoseconds.
fn late_hooks(marks: &[Mark], count: usize, res: u64, deadline: Duration) -> Vec<usize> {
    let d = duration_nanos(deadline);
    let (Some(first), Some(last)) = (marks.first(), marks.last()) else {
        return (0..count).collect();
    };
    if run_on_time(first.reading, last.reading, res, deadline) {
        return Vec::new();
    }
    let mut late = Vec::new();
    // `before`: the last mark at or before hook i's start; `after`: the
    // first mark at or after its end; `seen`: the last mark at or before
    // its end (its tick is the one seen there).
    let mut before = 0;
    let mut after = 0;
    let mut seen = 0;
    for i in 0..count {
        while before + 1 < marks.len() && marks[before + 1].at <= i {
            before += 1;
        }
        while after + 1 < marks.len() && marks[after].at < i + 1 {
            after += 1;
        }
        while seen + 1 < marks.len() && marks[seen + 1].at <= i + 1 {
            seen += 1;
        }
        let start = marks[before].reading;
        let mut end = marks[after].reading.saturating_add(res);
        if let Some(later) = marks[seen].later {
            end = end.min(later.saturating_add(res));
        }
        if end.saturating_sub(start) >= d {
            late.push(i);
        }
    }
    late
}

/// The timing of one batch of hooks run in a task of its own under a
/// watchdog (many threads, [`super::hook_watch::BatchProgress`]), judged
/// from the ticker as [`HookTimes`] judges a loop on one thread: the batch
/// loads the tick after each hook and reads the clock only where it moved,
/// after a hook that waited, and when it begins; its marks are shared, so
/// the driver judges the finished hooks whether the batch ended or its
/// watchdog gave up on it. The progress word carries, as the running
/// hook's start, the tick seen just before it (as a [field](BatchTimes::field)).
pub(crate) struct BatchTimes {
    ticker: &'static Ticker,
    _use: TickerUse,
    deadline: Duration,
    /// The tick when the batch was made: the word's fields count from it.
    base_tick: u64,
    /// The batch's marks, the one where it began first. Pushed to only
    /// where the tick moved, before the word says the hook ended.
    marks: std::sync::Mutex<Vec<Mark>>,
}

impl BatchTimes {
    /// A batch to be timed under `deadline` with `ticker`, which ticks
    /// while this lives.
    pub(crate) fn new(ticker: &'static Ticker, deadline: Duration) -> Self {
        let use_ = ticker.enter();
        Self {
            ticker,
            _use: use_,
            deadline,
            base_tick: ticker.tick(),
            marks: std::sync::Mutex::new(Vec::new()),
        }
    }

    fn marks(&self) -> std::sync::MutexGuard<'_, Vec<Mark>> {
        crate::sync::lock(&self.marks)
    }

    /// The word's field for tick `tick` ([`tick_field`]).
    pub(crate) fn field(&self, tick: u64) -> u64 {
        tick_field(tick, self.base_tick)
    }

    /// The ticker, and the tick the fields count from: what the batch
    /// needs per hook.
    pub(crate) fn source(&self) -> (&'static Ticker, u64) {
        (self.ticker, self.base_tick)
    }

    /// The tick a field stands for; `None` for 0 (not begun).
    fn tick_of(&self, field: u64) -> Option<u64> {
        field.checked_sub(1).map(|t| t + self.base_tick)
    }

    /// The batch begins now: its first mark, with a clock reading. Returns
    /// the tick seen, for the word.
    pub(crate) fn begin(&self) -> u64 {
        let tick = self.ticker.tick();
        let reading = coarse_clock::now();
        self.marks().push(Mark {
            at: 0,
            tick,
            reading,
            later: None,
        });
        tick
    }

    /// `at` hooks of the batch have finished and the batch saw `tick`,
    /// which moved since the last hook, or the last hook waited: a mark,
    /// with a clock reading.
    #[cold]
    #[inline(never)]
    pub(crate) fn mark(&self, at: usize, tick: u64) {
        let reading = coarse_clock::now();
        self.marks().push(Mark {
            at,
            tick,
            reading,
            later: None,
        });
    }

    /// The latest coarse instant, less the clock's resolution, at which the
    /// batch can have started the hook it is on, from its word's `field`
    /// and `seen_at`, the watchdog's reading when it first saw the batch
    /// on that hook: the batch began the hook no later than the next tick's
    /// publication, which came before the second tick's reading.
    pub(crate) fn started_by(&self, field: u64, seen_at: u64) -> u64 {
        let later = self
            .tick_of(field)
            .and_then(|tick| self.ticker.reading(tick.saturating_add(2)));
        later.map_or(seen_at, |later| later.min(seen_at))
    }

    /// The first `results.len()` hooks' results, each that may have ended
    /// past the deadline replaced by `timed_out`'s failure. `field` is the
    /// word's field when the batch had finished them, and `end` a clock
    /// reading taken after it did.
    pub(crate) fn judge(
        &self,
        results: HookResults,
        field: u64,
        end: u64,
        timed_out: impl Fn(Duration) -> Failure,
    ) -> HookResults {
        let count = results.len();
        let (first, marks) = {
            let held = self.marks();
            match held.first() {
                // Not begun (nothing finished), or every hook on time.
                None => return results,
                Some(first)
                    if run_on_time(
                        first.reading,
                        end,
                        coarse_clock::resolution(),
                        self.deadline,
                    ) =>
                {
                    return results;
                }
                Some(&first) => (
                    first,
                    held.iter()
                        .copied()
                        .filter(|mark| mark.at <= count)
                        .collect::<Vec<Mark>>(),
                ),
            }
        };
        let tick = self.tick_of(field).unwrap_or(first.tick);
        judge_run(
            self.ticker,
            marks,
            results,
            tick,
            end,
            self.deadline,
            timed_out,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: u64 = 1_000_000;

    fn mark(at: usize, tick: u64, reading: u64, later: Option<u64>) -> Mark {
        Mark {
            at,
            tick,
            reading,
            later,
        }
    }

    #[test]
    fn a_run_shorter_than_the_deadline_has_no_late_hook() {
        let marks = [mark(0, 7, 100 * MS, None), mark(1000, 7, 104 * MS, None)];
        assert!(late_hooks(&marks, 1000, 4 * MS, Duration::from_millis(10)).is_empty());
        // One resolution more and the run may have taken the deadline:
        // with no tick between, every hook may have.
        let marks = [mark(0, 7, 100 * MS, None), mark(3, 7, 106 * MS, None)];
        assert_eq!(
            late_hooks(&marks, 3, 4 * MS, Duration::from_millis(10)),
            [0, 1, 2]
        );
    }

    #[test]
    fn ticks_during_a_blocking_hook_clear_its_neighbours() {
        // Hooks 0 and 1 at once, hook 2 blocks 2 s, hooks 3 and 4 at once;
        // the ticker ticks every 10 ms from tick 50 on.
        let marks = [
            mark(0, 50, 1_000 * MS, Some(1_020 * MS)),
            // Tick 51 seen at the end of hook 2 (two seconds of ticks
            // later the loop sees tick 250).
            mark(3, 250, 3_001 * MS, None),
            mark(5, 250, 3_001 * MS, None),
        ];
        assert_eq!(
            late_hooks(&marks, 5, 4 * MS, Duration::from_secs(1)),
            [2],
            "only the blocking hook"
        );
    }

    #[test]
    fn a_later_ticks_reading_bounds_an_end_only_with_the_clock_resolution_added() {
        // Hook 0 truly runs from 0 to 1,002 ms, the deadline: late. The
        // loop saw tick 9 at both ends (the ticker stalled), and tick 11
        // was read at 1,002.5 ms, which a 4 ms clock reads as 1,000 ms:
        // the end is bounded by 1,004 ms, not 1,000. Hook 1 ran to 3 s.
        let marks = [
            mark(0, 9, 0, Some(1_000 * MS)),
            mark(2, 300, 3_000 * MS, None),
        ];
        assert_eq!(
            late_hooks(&marks, 2, 4 * MS, Duration::from_millis(1_002)),
            [0, 1]
        );
    }

    #[test]
    fn a_stalled_ticker_leaves_every_hook_of_a_long_run_late() {
        let marks = [mark(0, 50, 1_000 * MS, None), mark(5, 50, 3_001 * MS, None)];
        assert_eq!(
            late_hooks(&marks, 5, 4 * MS, Duration::from_secs(1)),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(late_hooks(&[], 2, 0, Duration::from_secs(1)), [0, 1]);
    }

    /// A run of hooks as it truly happened, and what the loop and the
    /// ticker observed of it, following the protocol of both: a coarse
    /// clock that reads the true time rounded down to `RES`, tick `k`
    /// (from 1) read at `ticks[k - 1]` and published `publish_delay`
    /// later, each tick read after the last one was published.
    #[derive(Debug)]
    struct Run {
        /// Each hook's true duration, the first starting at time 0.
        durations: Vec<u64>,
        ticks: Vec<u64>,
        publish_delay: u64,
    }

    const RES: u64 = 4 * MS;
    const DEADLINE: u64 = 1_000 * MS;

    impl Run {
        fn read(t: u64) -> u64 {
            t - t % RES
        }

        /// The tick seen at true time `t`: the last one published by then
        /// (0, read before the run, if none was).
        fn seen(&self, t: u64) -> u64 {
            self.ticks
                .iter()
                .take_while(|&&at| at + self.publish_delay <= t)
                .count() as u64
        }

        /// The marks the loop makes: where it saw the tick move, at the
        /// start, and at the end (with the later readings known by then).
        fn marks(&self) -> Vec<Mark> {
            let mut boundaries = vec![0];
            let mut t = 0;
            for d in &self.durations {
                t += d;
                boundaries.push(t);
            }
            let end_tick = self.seen(t);
            let mut marks: Vec<Mark> = Vec::new();
            for (at, &b) in boundaries.iter().enumerate() {
                let tick = self.seen(b);
                let moved = marks.last().is_none_or(|m| m.tick != tick);
                if moved || at == boundaries.len() - 1 {
                    let later = (tick + 2 <= end_tick)
                        .then(|| {
                            self.ticks
                                .get((tick + 1) as usize)
                                .map(|&at| Self::read(at))
                        })
                        .flatten();
                    marks.push(mark(at, tick, Self::read(b), later));
                }
            }
            marks
        }

        fn late(&self) -> Vec<usize> {
            let marks = self.marks();
            late_hooks(
                &marks,
                self.durations.len(),
                RES,
                Duration::from_nanos(DEADLINE),
            )
        }
    }

    /// When each tick is read: every `period` plus its `jitter`, and 1.5 s
    /// more where `stalls` says the ticker stalled.
    fn ticks(period: u64, jitter: &[u64], stalls: &[bool]) -> Vec<u64> {
        let mut t = 0;
        jitter
            .iter()
            .enumerate()
            .map(|(n, j)| {
                let stall = if stalls.get(n).copied().unwrap_or(false) {
                    1_500 * MS
                } else {
                    0
                };
                t += period + j + stall;
                t
            })
            .collect()
    }

    fn durations() -> impl Strategy<Value = Vec<u64>> {
        prop::collection::vec(
            prop_oneof![0..2 * MS, 900 * MS..1_100 * MS, 0..3_000 * MS],
            1..12,
        )
    }

    /// Readings of a ticker ticking every 10 ms from 1 s.
    fn steady(ticks: u64) -> Vec<u64> {
        (0..ticks).map(|k| 1_000 * MS + k * 10 * MS).collect()
    }

    #[test]
    fn a_batchs_running_hook_started_by_the_second_ticks_reading_or_when_first_seen() {
        let ticker = Ticker::stopped_with(0, &steady(5));
        let times = BatchTimes::new(ticker, Duration::from_secs(1));
        for k in 5..8 {
            ticker.push_reading(1_000 * MS + k * 10 * MS);
        }
        let seen_at = 2_000 * MS;
        // Not begun: only the watchdog's sight bounds it, however many
        // ticks came since the batch was made.
        assert_eq!(times.started_by(0, seen_at), seen_at);
        // On a hook after tick 5: begun before tick 7's reading.
        assert_eq!(times.started_by(times.field(5), seen_at), 1_070 * MS);
        // After tick 6: tick 8 has not come, so the sight it is.
        assert_eq!(times.started_by(times.field(6), seen_at), seen_at);
        // Seen earlier than the tick's reading: the sight.
        assert_eq!(times.started_by(times.field(5), 1_060 * MS), 1_060 * MS);
    }

    #[test]
    fn a_given_up_batchs_finished_hooks_are_judged_from_its_marks_and_ticks() {
        let ticker = Ticker::stopped_with(0, &steady(5));
        let times = BatchTimes::new(ticker, Duration::from_secs(1));
        for reading in &steady(200)[5..] {
            ticker.push_reading(*reading);
        }
        // Hook 0 quick; hook 1 blocked the thread about 1.4 s (the tick
        // moved from 5 to 150 meanwhile); hook 2 quick; the batch then hung
        // on hook 3 and was given up on at 3.6 s.
        times
            .marks()
            .extend([mark(0, 5, 1_050 * MS, None), mark(2, 150, 2_500 * MS, None)]);
        let mut results = HookResults::new();
        results.push(Ok(()));
        results.push(Ok(()));
        results.push(Err(Failure::error("its own")));
        let judged: Vec<_> = times
            .judge(results, times.field(150), 3_600 * MS, late)
            .into_results()
            .map(|r| r.err().map(|f| f.to_string()))
            .collect();
        assert_eq!(
            judged,
            [
                None,
                Some(late(Duration::from_secs(1)).to_string()),
                Some(Failure::error("its own").to_string())
            ]
        );
    }

    fn late(d: Duration) -> Failure {
        Failure::error(format!("late after {d:?}"))
    }

    proptest! {
        /// No hook that took the deadline or longer is judged on time,
        /// however the ticker behaved: any period, jitter, publication
        /// delay, and stalls of 1.5 s.
        #[test]
        fn no_late_hook_counts_as_on_time(
            durations in durations(),
            period in MS..25 * MS,
            jitter in prop::collection::vec(0..40 * MS, 0..600),
            stalls in prop::collection::vec(any::<bool>(), 0..600),
            publish_delay in 0..MS,
        ) {
            let ticks = ticks(period, &jitter, &stalls);
            let run = Run { durations, ticks, publish_delay };
            let late = run.late();
            for (i, &took) in run.durations.iter().enumerate() {
                if took >= DEADLINE {
                    prop_assert!(late.contains(&i), "hook {i} took {took} ns: {run:?} {late:?}");
                }
            }
        }

        /// The watchdog never takes a batch's running hook to have begun
        /// before it did: whatever the ticker did, the bound it reads off
        /// the tick in the batch's word (and its own sight of the batch,
        /// no earlier than the moment the batch saw that tick) plus the
        /// clock's resolution is later than that moment.
        #[test]
        fn a_batchs_hook_is_never_taken_to_have_begun_before_it_did(
            period in MS..25 * MS,
            jitter in prop::collection::vec(0..40 * MS, 1..300),
            stalls in prop::collection::vec(any::<bool>(), 0..300),
            publish_delay in 0..MS,
            moment in 0..1_000u64,
            sight_after in prop_oneof![0..2 * MS, 0..3_000 * MS],
        ) {
            let ticks = ticks(period, &jitter, &stalls);
            let span = ticks.last().copied().unwrap_or(0);
            let run = Run { durations: Vec::new(), ticks, publish_delay };
            let moment = span * moment / 1_000;
            let sight = moment + sight_after;
            // The batch was made before the first tick came, and the
            // watchdog knows the ticks published by its sight.
            let ticker = Ticker::stopped_with(0, &[0]);
            let times = BatchTimes::new(ticker, Duration::from_secs(1));
            for k in 1..=run.seen(sight) {
                ticker.push_reading(Run::read(run.ticks[(k - 1) as usize]));
            }
            let started = times.started_by(times.field(run.seen(moment)), Run::read(sight));
            prop_assert!(
                started + RES > moment,
                "taken to begin by {started}, began at {moment}: {run:?}"
            );
        }

        /// With a ticker that ticked every 10 ms without stalling, a hook
        /// is judged late only if it took within three periods and two
        /// clock ticks of the deadline.
        #[test]
        fn a_steady_ticker_judges_within_three_periods(
            durations in durations(),
            phase in 0..10 * MS,
        ) {
            let total: u64 = durations.iter().sum();
            let ticks: Vec<u64> = (0..total / (10 * MS) + 3).map(|k| phase + k * 10 * MS).collect();
            let run = Run { durations, ticks, publish_delay: 0 };
            for i in run.late() {
                prop_assert!(
                    run.durations[i] + 30 * MS + 2 * RES >= DEADLINE,
                    "hook {i} took {} ns: {run:?}", run.durations[i]
                );
            }
        }
    }
}
