//! The use of each extension's backend, as the idle stop reads it: calls
//! in flight (each a [`Busy`] guard) and since when nothing was in flight.
//! The stop itself is `idle.rs`'s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How each extension's backend is used: calls in flight and the end of
/// the last one.
#[derive(Debug, Default)]
pub(crate) struct Idle {
    uses: Mutex<HashMap<String, Use>>,
}

#[derive(Debug, Default)]
struct Use {
    in_flight: usize,
    /// Since when nothing was in flight (the end of the last call, or when
    /// the backend was first seen active).
    since: Option<Instant>,
    /// Stopped, and not called since.
    stopped: bool,
}

/// One call in flight on an extension's backend; dropping it ends it.
pub(crate) struct Busy {
    idle: Arc<Idle>,
    id: String,
}

impl Drop for Busy {
    fn drop(&mut self) {
        let mut uses = self
            .idle
            .uses
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(u) = uses.get_mut(&self.id) {
            u.in_flight = u.in_flight.saturating_sub(1);
            u.since = Some(Instant::now());
        }
    }
}

impl Idle {
    /// A call of extension `id` begins.
    pub(crate) fn enter(self: &Arc<Self>, id: &str) -> Busy {
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        let u = uses.entry(id.to_owned()).or_default();
        u.in_flight += 1;
        u.stopped = false;
        Busy {
            idle: self.clone(),
            id: id.to_owned(),
        }
    }

    /// Whether `id` has had nothing in flight for `timeout` at `now` (the
    /// clock starts the first time it is asked) and was not stopped since
    /// its last call. With `claim`, a `true` also marks it stopped.
    pub(crate) fn due(&self, id: &str, timeout: Duration, now: Instant, claim: bool) -> bool {
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        let u = uses.entry(id.to_owned()).or_default();
        if u.stopped || u.in_flight > 0 {
            return false;
        }
        let since = *u.since.get_or_insert(now);
        let due = now.saturating_duration_since(since) >= timeout;
        if due && claim {
            u.stopped = true;
        }
        due
    }

    /// `id` is not active: its idle clock starts again when it is.
    pub(crate) fn forget(&self, id: &str) {
        let mut uses = self.uses.lock().unwrap_or_else(PoisonError::into_inner);
        if uses.get(id).is_some_and(|u| u.in_flight == 0) {
            uses.remove(id);
        }
    }
}

/// One process extension that may be stopped when idle.
pub(crate) struct IdleBackend {
    pub(crate) id: String,
    pub(crate) timeout: Duration,
    /// Each wait of its shutdown ladder (`shutdownTimeoutMs`).
    pub(crate) grace: Duration,
    pub(crate) monitor: exthost::process::ProcessMonitor,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_in_flight_is_never_idle() {
        let idle = Arc::new(Idle::default());
        let start = Instant::now();
        let busy = idle.enter("a");
        let later = start + Duration::from_secs(10);
        assert!(!idle.due("a", Duration::from_millis(1), later, true));
        drop(busy);
        assert!(!idle.due("a", Duration::from_secs(5), Instant::now(), true));
        let much_later = Instant::now() + Duration::from_secs(6);
        assert!(idle.due("a", Duration::from_secs(5), much_later, true));
        // Claimed: not due again until the next call.
        assert!(!idle.due("a", Duration::from_secs(5), much_later, true));
        drop(idle.enter("a"));
        assert!(idle.due(
            "a",
            Duration::from_secs(5),
            Instant::now() + Duration::from_secs(6),
            false
        ));
    }
}
