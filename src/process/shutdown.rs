//! P-3: disposal. Close stdin, wait up to the grace period for the child to
//! exit, then SIGTERM its process group, wait again, then SIGKILL the group
//! and reap the leader; and SIGKILL the group whenever any member is still
//! in it at the end. Never a zombie of ours, never a member of the group
//! left running.

use std::time::Duration;

use super::group::{GroupSignal, group_alive, group_exists, signal_group};
use super::spawn::ChildGuard;

/// How a shutdown ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShutdownOutcome {
    /// Everything in the group was gone within the grace period after stdin
    /// closed.
    ExitedOnClose,
    /// SIGTERM emptied the group.
    Terminated,
    /// SIGKILL was needed.
    Killed,
}

/// Waits up to `grace` for the leader to exit (its task reaps it) and for
/// the rest of its group to go.
async fn wait_gone(guard: &mut ChildGuard, grace: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + grace;
    let mut exited = guard.exited.clone();
    if tokio::time::timeout_at(deadline, exited.wait_for(Option::is_some))
        .await
        .is_err()
    {
        return false;
    }
    let Some(pgid) = guard.pid() else {
        return true;
    };
    loop {
        if !group_alive(pgid, guard.pid()) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Shuts the child down after its stdin was closed: wait, SIGTERM, wait,
/// SIGKILL, reap. While `kill(-pgid, 0)` still succeeds at the end (a
/// member the scans missed, or zombies), the ladder ends with SIGKILL of
/// the group: the id is reserved while any member exists, so it reaches no
/// one else.
pub(crate) async fn shutdown_child(guard: &mut ChildGuard, grace: Duration) -> ShutdownOutcome {
    let outcome = if wait_gone(guard, grace).await {
        ShutdownOutcome::ExitedOnClose
    } else {
        if let Some(pgid) = guard.pid() {
            let _ = signal_group(pgid, GroupSignal::Term);
        }
        if wait_gone(guard, grace).await {
            ShutdownOutcome::Terminated
        } else {
            ShutdownOutcome::Killed
        }
    };
    if let Some(pgid) = guard.pid()
        && group_exists(pgid)
    {
        let _ = signal_group(pgid, GroupSignal::Kill);
    }
    if outcome == ShutdownOutcome::Killed {
        // SIGKILL cannot be ignored: wait for the leader to be reaped and
        // the group to empty (bounded anyway, so a process stuck in the
        // kernel cannot wedge disposal).
        let _ = wait_gone(guard, Duration::from_secs(5)).await;
    }
    guard.done = true;
    outcome
}
