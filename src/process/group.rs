//! Process groups as the kernel shows them: signal a group, tell whether
//! it still exists or has a live member, reap a child, read
//! `/proc/<pid>/stat`. The lowest layer of the process runtime: it uses no
//! other module of it.

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

/// True while any process (a zombie included) is in group `pgid`:
/// `kill(-pgid, 0)` succeeds. While it does, the group id stays reserved,
/// so signalling the group cannot reach anyone else.
pub(crate) fn group_exists(pgid: u32) -> bool {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, test_kill_process_group};
        i32::try_from(pgid)
            .ok()
            .and_then(Pid::from_raw)
            .is_some_and(|pid| test_kill_process_group(pid).is_ok())
    }
    #[cfg(not(unix))]
    {
        let _ = pgid;
        false
    }
}

/// How many `/proc` scans in a row must find no live member before the
/// group counts as gone while `kill(-pgid, 0)` still succeeds: one scan can
/// miss a process whose pid changes while it runs (a member that keeps
/// forking).
#[cfg(target_os = "linux")]
const EMPTY_SCANS: usize = 3;

/// True while a process that is not a zombie is in group `pgid`. A zombie
/// whose parent is gone waits for init (or a subreaper) to reap it; it
/// runs no code, so it does not keep the group alive (on Linux, `/proc`
/// tells them apart). But `kill(-pgid, 0)` is the truth about whether the
/// group exists, and a scan of `/proc` is not atomic: so the group counts
/// as gone only when that fails, or when [`EMPTY_SCANS`] scans in a row
/// find no live member and the same, non-empty, set of zombies (a scan
/// that sees no member at all while the group exists, or zombies that
/// change from scan to scan, means a member is moving: alive). Zombies of
/// the group that are this process's own children (reparented to it as a
/// subreaper) are reaped here, except the leader `leader`, which its own
/// task reaps.
pub(crate) fn group_alive(pgid: u32, leader: Option<u32>) -> bool {
    group_exists(pgid) && live_member(pgid, leader)
}

#[cfg(target_os = "linux")]
fn live_member(pgid: u32, leader: Option<u32>) -> bool {
    let mut first: Option<std::collections::BTreeSet<u32>> = None;
    for scan in 0..EMPTY_SCANS {
        if scan > 0 {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let Some((live, zombies)) = scan_group(pgid, leader) else {
            return true;
        };
        if !group_exists(pgid) {
            return false;
        }
        if live || zombies.is_empty() {
            return true;
        }
        match &first {
            None => first = Some(zombies),
            Some(seen) if zombies.is_subset(seen) => {}
            Some(_) => return true,
        }
    }
    false
}

#[cfg(not(target_os = "linux"))]
fn live_member(_pgid: u32, _leader: Option<u32>) -> bool {
    true
}

/// One scan of `/proc`: whether it lists a non-zombie process of group
/// `pgid`, and the zombies of the group it lists (not counting those it
/// reaps: this process's own children other than `leader`); `None` when
/// `/proc` cannot be read.
#[cfg(target_os = "linux")]
fn scan_group(pgid: u32, leader: Option<u32>) -> Option<(bool, std::collections::BTreeSet<u32>)> {
    let me = rustix::process::getpid()
        .as_raw_nonzero()
        .get()
        .unsigned_abs();
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut live = false;
    let mut zombies = std::collections::BTreeSet::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Some(stat) = proc_stat(&pid.to_string()) else {
            continue;
        };
        if stat.pgrp != pgid {
            continue;
        }
        if stat.state != 'Z' {
            live = true;
        } else if stat.ppid == me && Some(pid) != leader {
            reap(pid);
        } else {
            zombies.insert(pid);
        }
    }
    Some((live, zombies))
}

/// What `/proc/<pid>/stat` says of a process (Linux).
#[cfg(target_os = "linux")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    /// One letter: `R`, `S`, `D`, `Z` (a zombie), ...
    pub state: char,
    /// The parent's pid.
    pub ppid: u32,
    /// The process group.
    pub pgrp: u32,
    /// The session. 0 when the session's leader lives outside this PID
    /// namespace (a container started inside another's session), where
    /// `getsid(2)` also answers 0.
    pub session: u32,
}

/// Reads `/proc/<which>/stat` (`which` is a pid or `self`).
#[cfg(target_os = "linux")]
pub(crate) fn proc_stat(which: &str) -> Option<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{which}/stat")).ok()?;
    // "pid (comm) state ppid pgrp session ...": comm may hold anything, so
    // parse after its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(ProcStat {
        state,
        ppid,
        pgrp,
        session,
    })
}

/// Reaps our child `pid` if it has exited (never blocks).
#[cfg(target_os = "linux")]
pub(crate) fn reap(pid: u32) {
    use rustix::process::{Pid, WaitOptions, waitpid};
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = waitpid(Some(pid), WaitOptions::NOHANG);
    }
}
