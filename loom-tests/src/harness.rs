//! Bounded exhaustive checking, and proof that a seeded bug is caught for the
//! right reason.
//!
//! Every assertion in the scenarios starts with one of the property markers
//! below. [`check`] runs a model over every interleaving within the preemption
//! bound and reports how many it explored; [`expect_violation`] runs a model
//! that contains a seeded bug and passes only if loom fails it *and* the
//! failure message carries the marker of the property the bug breaks, so a
//! mutant test cannot pass because of an unrelated panic.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// INV-4: two queued operations ran at the same time.
pub const MUTUAL_EXCLUSION: &str = "INV-4 mutual exclusion violated";
/// INV-4: operations did not start in ticket (call) order.
pub const FIFO: &str = "INV-4 FIFO start order violated";
/// H-3: the queue stopped granting turns although nothing holds one.
pub const WEDGED: &str = "H-3 queue wedged";
/// H-3: a ticket re-polled with a new waker was woken through a stale one (or
/// not at all), so a caller parked on the new waker would wait for ever.
pub const STALE_WAKER: &str = "H-3 latest waker not woken";
/// H-9: `Published::store` dropped the replaced snapshot while holding the
/// cell's lock, so code run by that drop could not use the cell.
pub const DROPPED_UNDER_LOCK: &str = "H-9 old snapshot dropped under the lock";
/// H-11: `dispose` ran before the operation queued ahead of it settled.
pub const DISPOSE_ORDER: &str = "H-11 dispose ran before the activation settled";
/// H-11: a ticket was handed out behind the closing (`dispose`) ticket.
pub const CLOSE: &str = "H-11 ticket taken after the queue closed";
/// INV-1: a reader saw part of the old snapshot and part of the new one.
pub const TORN: &str = "INV-1 torn snapshot";
/// What a reader sees when a reload withdraws the old generation before the
/// new one is published (INV-11).
pub const BROKEN_BEFORE_MADE: &str = "INV-11 no generation live";
/// H-9: a snapshot changed after it was taken.
pub const DETACHED: &str = "H-9 snapshot changed after it was taken";

/// Preemption bound of the [`Bound::Preemptions`] tests when
/// `LOOM_MAX_PREEMPTIONS` is not set.
pub const DEFAULT_PREEMPTIONS: usize = 4;

/// How far a model is explored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Every interleaving with at most this many preemptions (forced thread
    /// switches), or `LOOM_MAX_PREEMPTIONS` if set: for the three-thread
    /// models, whose full space is too large to finish in minutes.
    Preemptions(usize),
    /// Every interleaving, with no preemption bound: for the two-thread
    /// models, whose whole space takes milliseconds.
    Exhaustive,
}

impl Bound {
    /// The bound this suite uses for its three-thread models.
    pub const DEFAULT: Bound = Bound::Preemptions(DEFAULT_PREEMPTIONS);

    /// The preemption bound handed to loom (`None`: unbounded).
    ///
    /// # Panics
    ///
    /// If `LOOM_MAX_PREEMPTIONS` is set but is not a number.
    pub fn resolve(self) -> Option<usize> {
        match self {
            Bound::Preemptions(default) => Some(preemption_bound(default)),
            Bound::Exhaustive => None,
        }
    }
}

/// `LOOM_MAX_PREEMPTIONS` if set, else `default`.
///
/// # Panics
///
/// If `LOOM_MAX_PREEMPTIONS` is set but is not a number.
pub fn preemption_bound(default: usize) -> usize {
    match std::env::var("LOOM_MAX_PREEMPTIONS") {
        Ok(value) => value
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("LOOM_MAX_PREEMPTIONS={value:?} is not a number")),
        Err(_) => default,
    }
}

/// What one [`check`] explored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Explored {
    /// The preemption bound in force (`None`: unbounded).
    pub bound: Option<usize>,
    /// Interleavings (loom iterations) executed, the failing one included.
    pub interleavings: usize,
    /// Wall-clock time of the exploration.
    pub elapsed: Duration,
}

impl Explored {
    fn bound_text(&self) -> String {
        match self.bound {
            Some(bound) => format!("preemption bound {bound}"),
            None => String::from("no preemption bound"),
        }
    }
}

/// Runs `model` under every interleaving within `bound`, prints one line of statistics
/// (see it with `--nocapture`) and returns them.
///
/// # Panics
///
/// With the model's own panic, re-raised after the statistics line, if some
/// interleaving fails.
pub fn check<F>(name: &str, bound: Bound, model: F) -> Explored
where
    F: Fn() + Send + Sync + 'static,
{
    let (explored, outcome) = explore(bound, model);
    println!(
        "loom {name}: {}; {}; {} interleavings; {:.2?}",
        if outcome.is_ok() { "ok" } else { "FAILED" },
        explored.bound_text(),
        explored.interleavings,
        explored.elapsed
    );
    if let Err(payload) = outcome {
        panic::resume_unwind(payload);
    }
    explored
}

/// Runs a model containing a seeded bug and returns once loom has failed it
/// with a message containing one of `markers` (the properties that bug
/// breaks).
///
/// # Panics
///
/// If every interleaving within the bound passes (the bug went unnoticed), or
/// if the model failed with a message carrying none of `markers` (it failed
/// for the wrong reason).
pub fn expect_violation<F>(name: &str, bound: Bound, markers: &[&str], model: F) -> Explored
where
    F: Fn() + Send + Sync + 'static,
{
    let (explored, outcome) = explore(bound, model);
    let Err(payload) = outcome else {
        panic!(
            "seeded bug {name} went unnoticed: all {} interleavings passed ({})",
            explored.interleavings,
            explored.bound_text()
        );
    };
    let message = panic_message(payload.as_ref());
    assert!(
        markers.iter().any(|marker| message.contains(marker)),
        "seeded bug {name} failed for the wrong reason: expected one of {markers:?}, got: {message}"
    );
    println!(
        "loom {name}: seeded bug caught; {}; failed at interleaving {}; {:.2?}; {}",
        explored.bound_text(),
        explored.interleavings,
        explored.elapsed,
        message.lines().next().unwrap_or_default()
    );
    explored
}

type Outcome = Result<(), Box<dyn Any + Send>>;

/// Explores `model`, counting the interleavings it runs (the failing one
/// included) and catching the failure, if any.
fn explore<F>(bound: Bound, model: F) -> (Explored, Outcome)
where
    F: Fn() + Send + Sync + 'static,
{
    let bound = bound.resolve();
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = bound;

    let counter = Arc::new(AtomicUsize::new(0));
    let runs = counter.clone();
    let start = Instant::now();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| {
        builder.check(move || {
            runs.fetch_add(1, Ordering::Relaxed);
            model();
        });
    }));
    let explored = Explored {
        bound,
        interleavings: counter.load(Ordering::Relaxed),
        elapsed: start.elapsed(),
    };
    (explored, outcome)
}

/// The text of a panic payload (`panic!` with a literal or with a format).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        String::from("<non-string panic payload>")
    }
}
