//! Time as data (H-12, INV-17): the core reads no clock. Every input that
//! ends a step carries the shell's reading of its monotonic clock, as a
//! [`Moment`]; the core chooses each step's deadline, keeps the instant it
//! is due, judges a reading against it ([`Due::judge`]), and says the next
//! instant it needs to be woken at
//! ([`HostCore::poll_timeout`](crate::HostCore::poll_timeout)).
//!
//! Architecture invariant: this module depends on nothing but `std`'s
//! [`Duration`]. The one comparison of a reading with a due instant is
//! [`Due::judge`]; nothing else in the core or the shell decides whether
//! something was late.

use std::time::Duration;

/// A reading of the shell's monotonic clock: nanoseconds since an origin
/// the shell chose (its host's creation). Only differences and order
/// matter; the core never asks what time it is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Moment(u64);

impl Moment {
    /// The origin.
    pub const ZERO: Moment = Moment(0);

    /// The reading `nanos` nanoseconds after the origin.
    pub const fn from_nanos(nanos: u64) -> Self {
        Moment(nanos)
    }

    /// Nanoseconds since the origin.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// The instant `span` after this one (saturating: a deadline too far
    /// away to count is never reached).
    pub fn after(self, span: Duration) -> Self {
        let nanos = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
        Moment(self.0.saturating_add(nanos))
    }

    /// How long after `earlier` this reading is (zero when it is not).
    pub fn since(self, earlier: Moment) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// This instant moved by `by` nanoseconds, for a canonical form that
    /// shifts every instant of a state alike (order and differences kept).
    pub fn shifted(self, by: i128) -> Self {
        let nanos = (i128::from(self.0) + by).clamp(0, i128::from(u64::MAX));
        Moment(u64::try_from(nanos).unwrap_or(u64::MAX))
    }
}

/// How a reading stands against the instant a step was due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Timing {
    /// Read before the deadline: the completion is the step's own.
    OnTime,
    /// Read at or after the deadline: the step timed out, whatever it
    /// returned (a completion at the deadline belongs to the deadline).
    Late,
}

impl Timing {
    /// True when late.
    pub fn is_late(self) -> bool {
        self == Timing::Late
    }
}

/// The instant a step's deadline passes, with the deadline it came from
/// (for the message of a timeout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Due {
    /// When the deadline passes.
    pub at: Moment,
    /// The deadline, counted from the step's start.
    pub deadline: Duration,
}

impl Due {
    /// The step that started at `start` under `deadline`.
    pub fn from_start(start: Moment, deadline: Duration) -> Self {
        Due {
            at: start.after(deadline),
            deadline,
        }
    }

    /// INV-17: how `reading` stands against this deadline. A reading at or
    /// after it is late; one before it is on time. `seeded` is the seeded
    /// bug a checked build asks for (`None` in shipped code).
    pub fn judge_seeded(self, reading: Moment, seeded: Option<TimingBug>) -> Timing {
        let late = match seeded {
            None => reading >= self.at,
            // A reading exactly at the deadline counts as on time.
            Some(TimingBug::AtDeadlineOnTime) => reading > self.at,
            // A reading one nanosecond before the deadline times out.
            Some(TimingBug::EarlyTimesOut) => reading.0.saturating_add(1) >= self.at.0,
        };
        if late { Timing::Late } else { Timing::OnTime }
    }

    /// INV-17: how `reading` stands against this deadline (see
    /// [`Due::judge_seeded`]).
    pub fn judge(self, reading: Moment) -> Timing {
        self.judge_seeded(reading, None)
    }
}

/// The two ways a checked build can misjudge a reading (the two halves of
/// INV-17), named by [`crate::mutant::Mutant::LateReadOnTime`] and
/// [`crate::mutant::Mutant::EarlyReadTimesOut`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimingBug {
    /// A reading at the deadline is on time.
    AtDeadlineOnTime,
    /// A reading just before the deadline is late.
    EarlyTimesOut,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_at_the_deadline_is_late_and_one_before_it_is_on_time() {
        let due = Due::from_start(Moment::from_nanos(100), Duration::from_nanos(10));
        assert_eq!(due.at, Moment::from_nanos(110));
        assert_eq!(due.judge(Moment::from_nanos(109)), Timing::OnTime);
        assert_eq!(due.judge(Moment::from_nanos(110)), Timing::Late);
        assert_eq!(due.judge(Moment::from_nanos(5_000)), Timing::Late);
        // Each seeded bug breaks exactly its half.
        let at = Some(TimingBug::AtDeadlineOnTime);
        assert_eq!(
            due.judge_seeded(Moment::from_nanos(110), at),
            Timing::OnTime
        );
        assert_eq!(
            due.judge_seeded(Moment::from_nanos(109), at),
            Timing::OnTime
        );
        let early = Some(TimingBug::EarlyTimesOut);
        assert_eq!(
            due.judge_seeded(Moment::from_nanos(109), early),
            Timing::Late
        );
        assert_eq!(
            due.judge_seeded(Moment::from_nanos(108), early),
            Timing::OnTime
        );
    }

    #[test]
    fn a_deadline_too_far_away_saturates_and_is_never_reached() {
        let due = Due::from_start(Moment::from_nanos(u64::MAX - 1), Duration::MAX);
        assert_eq!(due.at, Moment::from_nanos(u64::MAX));
        assert_eq!(due.judge(Moment::from_nanos(u64::MAX - 1)), Timing::OnTime);
        assert_eq!(
            Moment::from_nanos(3).since(Moment::from_nanos(9)),
            Duration::ZERO
        );
        assert_eq!(Moment::from_nanos(3).shifted(-10), Moment::ZERO);
    }
}
