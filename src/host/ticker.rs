//! The ticker: one thread shared by every host in the process that reads
//! the coarse clock every [`PERIOD`] while hooks run under a deadline on
//! one thread (H-12), and publishes a tick number, so that such a hook loop
//! can tell whether time may have moved with one atomic load per hook
//! instead of a clock reading (see [`super::hook_times`]).
//!
//! Architecture invariants:
//! - Each tick's reading is stored before its number is published, and
//!   the next tick's reading is taken after that publication (the thread
//!   sleeps in between): a code path that saw tick `k` at some instant ran
//!   that instant after tick `k`'s reading and before tick `k + 2`'s.
//! - The ticker runs only while a hook loop uses it ([`Ticker::enter`])
//!   and for [`LINGER`] ticks after the last one left; then it parks, and
//!   the next user wakes it, through a [`ParkGate`] whose handshake loom
//!   checks over every interleaving (`loom-tests`). Nothing here is ever needed for soundness: a
//!   ticker that stalls, or never starts, only makes judgements lean
//!   further toward the deadline.
//! - The thread runs no extension code and takes no lock a hook loop holds
//!   for longer than a copy of one reading.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;

use super::coarse_clock;
use crate::park_gate::ParkGate;
use crate::sync::lock;

/// How often the ticker reads the clock while in use.
pub(crate) const PERIOD: Duration = Duration::from_millis(10);

/// How many ticks the ticker goes on after its last user left (one
/// second), so that a host emitting steadily does not wake it each time.
const LINGER: u32 = 100;

/// How many ticks' readings are kept: some 40 seconds' worth.
pub(crate) const HISTORY: u64 = 4096;

/// The shared ticker: see the module docs.
pub(crate) struct Ticker {
    /// The number of the last tick published.
    tick: AtomicU64,
    /// The readings of the last [`HISTORY`] ticks.
    readings: Mutex<Readings>,
    /// The hook loops using the ticker now, and whether the thread runs
    /// (the handshake that parks and wakes it, model-checked by loom).
    gate: ParkGate,
    /// The thread, to wake it.
    thread: OnceLock<Thread>,
}

/// Tick readings, the first one's number and those after it in order.
struct Readings {
    first: u64,
    values: VecDeque<u64>,
}

/// A hook loop's use of the ticker: the ticker keeps ticking while one is
/// held.
pub(crate) struct TickerUse {
    ticker: &'static Ticker,
}

impl Drop for TickerUse {
    fn drop(&mut self) {
        self.ticker.gate.leave();
    }
}

static TICKER: OnceLock<Option<&'static Ticker>> = OnceLock::new();

impl Ticker {
    /// The process's ticker, its thread started on first use; `None` if
    /// the thread could not be started (the caller then reads the clock
    /// itself).
    pub(crate) fn get() -> Option<&'static Ticker> {
        *TICKER.get_or_init(|| {
            let ticker: &'static Ticker = Box::leak(Box::new(Ticker::new()));
            let thread = std::thread::Builder::new()
                .name("exthost-ticker".into())
                .spawn(move || ticker.run())
                .ok()?;
            let _ = ticker.thread.set(thread.thread().clone());
            Some(ticker)
        })
    }

    fn new() -> Self {
        let ticker = Self {
            tick: AtomicU64::new(0),
            readings: Mutex::new(Readings {
                first: 0,
                values: VecDeque::with_capacity(HISTORY as usize),
            }),
            gate: ParkGate::new(),
            thread: OnceLock::new(),
        };
        // Tick 0 has a reading before anyone can see it.
        ticker.advance();
        ticker
    }

    /// True unless the thread is parked (or about to be): a user now
    /// would not have to wake it.
    pub(crate) fn is_running(&self) -> bool {
        self.gate.is_running()
    }

    /// The number of the last tick published.
    #[inline]
    pub(crate) fn tick(&self) -> u64 {
        self.tick.load(Ordering::Acquire)
    }

    /// The coarse clock's reading at tick `tick`, taken before the tick was
    /// published; `None` once it fell out of the history or before the
    /// tick came.
    pub(crate) fn reading(&self, tick: u64) -> Option<u64> {
        let readings = lock(&self.readings);
        let at = usize::try_from(tick.checked_sub(readings.first)?).ok()?;
        readings.values.get(at).copied()
    }

    /// A hook loop starts to use the ticker: it ticks until the use ends
    /// (and [`LINGER`] ticks longer), woken if it was parked.
    pub(crate) fn enter(&'static self) -> TickerUse {
        // Either the thread sees this user, or this user sees it stopping
        // and wakes it (`ParkGate`).
        if self.gate.enter()
            && let Some(thread) = self.thread.get()
        {
            thread.unpark();
        }
        TickerUse { ticker: self }
    }

    /// Reads the clock, stores the reading, then publishes the tick.
    fn advance(&self) {
        let reading = coarse_clock::now();
        let tick = {
            let mut readings = lock(&self.readings);
            if readings.values.len() as u64 == HISTORY {
                readings.values.pop_front();
                readings.first += 1;
            }
            readings.values.push_back(reading);
            readings.first + (readings.values.len() as u64 - 1)
        };
        // Sequentially consistent, so the next reading (after the sleep)
        // comes after this publication for every thread.
        self.tick.store(tick, Ordering::SeqCst);
    }

    /// The thread's loop: tick while in use, linger, park.
    fn run(&self) {
        let mut idle = 0;
        loop {
            std::thread::sleep(PERIOD);
            self.advance();
            if self.gate.in_use() {
                idle = 0;
                continue;
            }
            idle += 1;
            if idle < LINGER {
                continue;
            }
            idle = 0;
            if !self.gate.stop() {
                continue;
            }
            self.gate.wait_until_running();
            // Woken by a new user: its first tick now, not a period later.
            self.advance();
        }
    }
}

#[cfg(test)]
impl Ticker {
    /// A ticker whose thread never runs, its ticks from `first` on read
    /// `readings` (for tests of what is judged from ticks).
    pub(crate) fn stopped_with(first: u64, readings: &[u64]) -> &'static Ticker {
        let ticker: &'static Ticker = Box::leak(Box::new(Ticker::new()));
        {
            let mut held = lock(&ticker.readings);
            held.first = first;
            held.values = readings.iter().copied().collect();
        }
        let last = first + readings.len() as u64 - 1;
        ticker.tick.store(last, Ordering::SeqCst);
        ticker
    }

    /// The next tick, with this reading (tests).
    pub(crate) fn push_reading(&self, reading: u64) {
        let tick = {
            let mut held = lock(&self.readings);
            held.values.push_back(reading);
            held.first + held.values.len() as u64 - 1
        };
        self.tick.store(tick, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// Waits, bounded, until the ticker published a tick after `after`.
    fn tick_after(ticker: &Ticker, after: u64) -> u64 {
        let bound = Instant::now() + Duration::from_secs(30);
        loop {
            let tick = ticker.tick();
            if tick > after {
                return tick;
            }
            assert!(Instant::now() < bound, "the ticker did not tick");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_ticker_in_use_ticks_and_each_tick_has_a_reading_no_earlier_than_the_last() {
        let ticker = Ticker::get().expect("the ticker thread starts here");
        let _use = ticker.enter();
        let first = ticker.tick();
        let before = coarse_clock::now();
        let second = tick_after(ticker, first);
        let third = tick_after(ticker, second);
        let (a, b) = (
            ticker.reading(second).unwrap(),
            ticker.reading(third).unwrap(),
        );
        assert!(a <= b);
        // The third tick's reading was taken after the second tick was
        // published, which came after `before`.
        assert!(b >= before.saturating_sub(coarse_clock::resolution()));
        assert_eq!(ticker.reading(third + 1_000_000), None);
    }

    #[test]
    fn a_parked_ticker_wakes_for_its_next_user() {
        // A ticker of its own, never started: stopped as its thread would
        // be before parking, and `enter` marks it running.
        let ticker: &'static Ticker = Box::leak(Box::new(Ticker::new()));
        assert!(ticker.gate.stop());
        assert!(!ticker.is_running());
        let use_ = ticker.enter();
        assert!(ticker.is_running());
        assert!(ticker.gate.in_use());
        drop(use_);
        assert!(!ticker.gate.in_use());
    }

    #[test]
    fn the_history_keeps_the_last_ticks_only() {
        let ticker = Ticker::new();
        for _ in 0..HISTORY + 5 {
            ticker.advance();
        }
        let last = ticker.tick();
        assert_eq!(last, HISTORY + 5);
        assert!(ticker.reading(last).is_some());
        assert!(ticker.reading(last + 1 - HISTORY).is_some());
        assert_eq!(ticker.reading(last - HISTORY), None);
        assert_eq!(ticker.reading(0), None);
    }
}
