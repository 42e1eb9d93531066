//! The host's clock: readings of the runtime's monotonic clock as the
//! core's [`Moment`]s (nanoseconds since the host was made), and back to
//! the instants a timer is armed for.
//!
//! Architecture invariant: reads the clock and decides nothing. Whether a
//! reading is late is the core's judgement (`exthost_core::time`); the
//! shell reads, reports and arms the one timer the core asks for
//! ([`exthost_core::HostCore::poll_timeout`]). Tokio's clock is read, so a
//! runtime with paused time (tests) is followed.

use std::time::Duration;

use exthost_core::Moment;
use tokio::time::Instant;

/// A host's clock, from the instant the host was made.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        Self {
            origin: Instant::now(),
        }
    }

    /// The reading now.
    #[inline]
    pub fn now(&self) -> Moment {
        self.moment(Instant::now())
    }

    /// The reading of `at`.
    #[inline]
    pub fn moment(&self, at: Instant) -> Moment {
        let nanos = at.saturating_duration_since(self.origin).as_nanos();
        Moment::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// The instant of the reading `at`, to arm a timer for (saturating far
    /// in the future: a deadline that far is never reached).
    pub fn instant(&self, at: Moment) -> Instant {
        let span = Duration::from_nanos(at.as_nanos());
        self.origin
            .checked_add(span)
            .unwrap_or_else(|| self.origin + Duration::from_secs(86_400 * 365 * 30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readings_and_instants_round_trip() {
        let clock = Clock::start();
        let later = clock.origin + Duration::from_millis(7);
        let m = clock.moment(later);
        assert_eq!(m, Moment::from_nanos(7_000_000));
        assert_eq!(clock.instant(m), later);
        // Before the origin reads as the origin.
        assert_eq!(
            clock.moment(clock.origin - Duration::from_millis(1)),
            Moment::ZERO
        );
        assert!(clock.instant(Moment::from_nanos(u64::MAX)) > later);
    }
}
