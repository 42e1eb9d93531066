//! The system's coarse monotonic clock, in nanoseconds, where it has one;
//! elsewhere the precise one (H-12: hooks are timed with it). A reading
//! costs a few nanoseconds where a precise one costs tens, and lags the
//! true time by less than its [`resolution`].

use std::time::Duration;

#[cfg(any(target_os = "linux", target_os = "android"))]
use nix::time::{ClockId, clock_getres, clock_gettime};
use std::sync::OnceLock;

/// The clock's reading now: never ahead of the true time, and behind it
/// by less than [`resolution`].
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn now() -> u64 {
    // The call cannot fail for a clock the system has; should it, the
    // precise clock stands in (readings only ever lean later).
    match clock_gettime(ClockId::CLOCK_MONOTONIC_COARSE) {
        Ok(t) => nanos(t.tv_sec(), t.tv_nsec()),
        Err(_) => match clock_gettime(ClockId::CLOCK_MONOTONIC) {
            Ok(t) => nanos(t.tv_sec(), t.tv_nsec()),
            Err(_) => 0,
        },
    }
}

/// How far a reading may lag the true time.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn resolution() -> u64 {
    static RESOLUTION: OnceLock<u64> = OnceLock::new();
    *RESOLUTION.get_or_init(|| match clock_getres(ClockId::CLOCK_MONOTONIC_COARSE) {
        Ok(t) => nanos(t.tv_sec(), t.tv_nsec()),
        // Unknown: a generous tick.
        Err(_) => 10_000_000,
    })
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn nanos(secs: i64, nanos: i64) -> u64 {
    let secs = u64::try_from(secs).unwrap_or(0);
    let nanos = u64::try_from(nanos).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

/// The clock's reading now (the precise clock on this system).
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn now() -> u64 {
    static BASE: OnceLock<std::time::Instant> = OnceLock::new();
    let base = *BASE.get_or_init(std::time::Instant::now);
    u64::try_from(base.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// How far a reading may lag the true time: none on this system.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(crate) fn resolution() -> u64 {
    0
}

/// `d` in nanoseconds, saturating (a deadline on the coarse clock's scale).
pub(crate) fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_clock_goes_on_and_lags_the_precise_one_by_less_than_its_resolution() {
        let base = std::time::Instant::now();
        let first = now();
        std::thread::sleep(Duration::from_millis(30));
        let second = now();
        let elapsed = u64::try_from(base.elapsed().as_nanos()).unwrap();
        assert!(second > first, "the clock stood still: {first}, {second}");
        // Each reading lags the true time by less than the resolution, so
        // two readings differ by less than the true time plus it.
        assert!(second - first < elapsed + resolution());
        assert!(second - first + resolution() >= 30_000_000);
    }
}
