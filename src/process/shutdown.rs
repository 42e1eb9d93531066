//! P-3: disposal. Close stdin, wait up to the grace period for the child to
//! exit, then SIGTERM its process group, wait again, then SIGKILL the group
//! and reap the leader. Never a zombie of ours, never a member of the group
//! left running.

use std::time::Duration;

use super::spawn::ChildGuard;

/// Signals sent to a child's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupSignal {
    Term,
    Kill,
}

/// Sends `signal` to the process group `pgid` (the child's pid: it leads
/// its own group). An error (typically "no such process") is returned as is.
pub(crate) fn signal_group(pgid: u32, signal: GroupSignal) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process_group};
        let pid = i32::try_from(pgid)
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| std::io::Error::other("pid out of range"))?;
        let signal = match signal {
            GroupSignal::Term => Signal::TERM,
            GroupSignal::Kill => Signal::KILL,
        };
        kill_process_group(pid, signal).map_err(std::io::Error::from)
    }
    #[cfg(not(unix))]
    {
        let _ = (pgid, signal);
        Err(std::io::Error::other("process groups need unix"))
    }
}

/// True while a process that is not a zombie is in group `pgid`. A zombie
/// whose parent is gone waits for init to reap it; it runs no code, so it
/// does not keep the group alive (on Linux, `/proc` tells them apart).
pub(crate) fn group_alive(pgid: u32) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, test_kill_process_group};
        let any = i32::try_from(pgid)
            .ok()
            .and_then(Pid::from_raw)
            .is_some_and(|pid| test_kill_process_group(pid).is_ok());
        if !any {
            return false;
        }
        #[cfg(target_os = "linux")]
        if let Some(live) = live_member_in_proc(pgid) {
            return live;
        }
        true
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

/// `Some(true)` when `/proc` lists a non-zombie process of group `pgid`,
/// `None` when `/proc` cannot be read.
#[cfg(target_os = "linux")]
fn live_member_in_proc(pgid: u32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold anything, so
        // parse after its last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1).and_then(|f| f.parse::<u32>().ok());
        if pgrp == Some(pgid) && state != Some("Z") {
            return Some(true);
        }
    }
    Some(false)
}

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

/// Waits up to `grace` for the leader to exit (reaping it) and for the
/// rest of its group to go.
async fn wait_gone(guard: &mut ChildGuard, grace: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + grace;
    if !guard.reaped {
        match tokio::time::timeout_at(deadline, guard.child.wait()).await {
            Ok(_) => guard.reaped = true,
            Err(_) => return false,
        }
    }
    let Some(pgid) = guard.pid() else {
        return true;
    };
    loop {
        if !group_alive(pgid) {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Shuts the child down after its stdin was closed: wait, SIGTERM, wait,
/// SIGKILL, reap.
pub(crate) async fn shutdown_child(guard: &mut ChildGuard, grace: Duration) -> ShutdownOutcome {
    if wait_gone(guard, grace).await {
        guard.done = true;
        return ShutdownOutcome::ExitedOnClose;
    }
    if let Some(pgid) = guard.pid() {
        let _ = signal_group(pgid, GroupSignal::Term);
    }
    if wait_gone(guard, grace).await {
        guard.done = true;
        return ShutdownOutcome::Terminated;
    }
    if let Some(pgid) = guard.pid() {
        let _ = signal_group(pgid, GroupSignal::Kill);
    }
    // SIGKILL cannot be ignored: the leader exits; reap it (bounded anyway,
    // so a process stuck in the kernel cannot wedge disposal).
    if !guard.reaped {
        let _ = guard.child.start_kill();
        if tokio::time::timeout(Duration::from_secs(5), guard.child.wait())
            .await
            .is_ok()
        {
            guard.reaped = true;
        }
    }
    guard.done = true;
    ShutdownOutcome::Killed
}
