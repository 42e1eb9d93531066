//! Idle backends stop: a process extension whose manifest sets
//! `runtime.idleTimeoutMs` (or, without it, `serve --idle-stop SECONDS`)
//! and that had no call in flight for that long has its child stopped
//! through the shutdown ladder of its disposal (P-3); its next call
//! restarts it: the process runtime starts a fresh child and checks its
//! tools against the lock again (M-5), the same path as a backend that
//! crashed (docs/process.md, "Restarting a child that exited").
//!
//! Why in `serve` and not in the host: the host core has four operations
//! (activate, emit, reload, dispose) and none returns one active extension
//! to dormant, so the host cannot decide an idle stop without a new core
//! operation checked by the model. What `serve` does instead uses only the
//! library's public parts ([`exthost::process::ProcessMonitor::stop_child`];
//! the restart at the next call is the process runtime's), so an embedding
//! program can do the same.
//!
//! A backend the client holds a resource subscription at is never idle:
//! a stopped child would send no `notifications/resources/updated`. Its
//! idle clock starts when the last subscription is withdrawn.
//!
//! No call ever meets a stopping backend: each call holds a [`Busy`] guard
//! of its extension from before it passes the extension's gate until it
//! has answered, and the stop happens under
//! that gate and only when no guard is held. A call that came first is
//! served by the running child, which is then not stopped; a call that
//! comes during the stop waits at the gate and starts a fresh child.

use std::time::{Duration, Instant};

use exthost::core::Status;

use super::busy::IdleBackend;
use super::gateway::Gateway;

/// The shortest pause between two looks at the backends.
const MIN_PERIOD: Duration = Duration::from_millis(50);
/// The longest.
const MAX_PERIOD: Duration = Duration::from_secs(1);

/// The pause between two looks: a quarter of the shortest idle timeout,
/// within [`MIN_PERIOD`] and [`MAX_PERIOD`].
fn period(shortest: Option<Duration>) -> Duration {
    shortest.map_or(MAX_PERIOD, |t| (t / 4).clamp(MIN_PERIOD, MAX_PERIOD))
}

/// Stops idle backends until the session ends (the caller aborts it).
/// `default` is `serve --idle-stop`.
pub(crate) async fn watch(gateway: Gateway, default: Option<Duration>) {
    loop {
        let backends = gateway.shape.idle_backends(default);
        tokio::time::sleep(period(backends.iter().map(|b| b.timeout).min())).await;
        for backend in backends {
            if gateway.host.status(&backend.id) != Some(Status::Active)
                || backend.monitor.subscription_count() > 0
            {
                // Not active, or the client awaits its resource updates:
                // not idle, and its clock starts again from here.
                gateway.idle.forget(&backend.id);
                continue;
            }
            if gateway
                .idle
                .due(&backend.id, backend.timeout, Instant::now(), false)
            {
                gateway.stop_idle(&backend).await;
            }
        }
    }
}

impl Gateway {
    /// Stops `backend`'s child if it is still idle once its gate is held;
    /// its next call restarts it (the process runtime does).
    async fn stop_idle(&self, backend: &IdleBackend) {
        let gate = self.gate(&backend.id);
        let _held = gate.lock().await;
        if self.host.status(&backend.id) != Some(Status::Active)
            || !self
                .idle
                .due(&backend.id, backend.timeout, Instant::now(), true)
        {
            return;
        }
        let pid = backend.monitor.pid();
        if let Some(outcome) = backend.monitor.stop_child(backend.grace).await {
            self.log.line(&format!(
                "stopped extension {:?} (pid {}) after {} ms without a call ({}); its next call starts it again",
                backend.id,
                pid.map_or_else(|| "unknown".to_owned(), |p| p.to_string()),
                backend.timeout.as_millis(),
                outcome_words(outcome),
            ));
        }
    }
}

fn outcome_words(outcome: exthost::process::ShutdownOutcome) -> &'static str {
    use exthost::process::ShutdownOutcome as O;
    match outcome {
        O::ExitedOnClose => "it exited when its stdin closed",
        O::Terminated => "it exited on SIGTERM",
        O::Killed => "it was killed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_period_is_a_quarter_of_the_shortest_timeout_within_bounds() {
        assert_eq!(period(None), MAX_PERIOD);
        assert_eq!(period(Some(Duration::from_millis(1))), MIN_PERIOD);
        assert_eq!(
            period(Some(Duration::from_millis(800))),
            Duration::from_millis(200)
        );
        assert_eq!(period(Some(Duration::from_secs(60))), MAX_PERIOD);
    }
}
