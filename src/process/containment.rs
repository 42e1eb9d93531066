//! P-7: containment of descendants beyond the child's process group.
//!
//! Each child runs in a session and process group of its own (`spawn.rs`),
//! and disposal kills the group. A descendant that calls `setsid()` or
//! `setpgid()` leaves the group; when its parent dies it is reparented, by
//! default to init. A program that makes itself a *child subreaper*
//! ([`become_subreaper`], Linux `PR_SET_CHILD_SUBREAPER`) gets those
//! orphans instead, and [`kill_adopted`] kills them at shutdown. Opt-in:
//! the `exthost` command line does it for `call` (and the long-running
//! subcommands); an embedding program calls these itself if it wants the
//! same, knowing that it then also adopts orphans of any other child it
//! starts.
//!
//! What remains: a descendant that double-forks into a new session while
//! its parent is still alive is only adopted once that parent dies, so it
//! is killed at shutdown, not before; resource limits and a hard
//! "everything this server started" boundary need a cgroup (or a PID
//! namespace); other systems have no subreaper.

use std::collections::BTreeSet;
use std::sync::Mutex;

#[cfg(target_os = "linux")]
use super::group::proc_stat;

/// Leaders of live process extensions (children this process spawned and
/// has not reaped yet).
static LEADERS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

pub(crate) fn leader_started(pid: u32) {
    if let Ok(mut leaders) = LEADERS.lock() {
        leaders.insert(pid);
    }
}

pub(crate) fn leader_reaped(pid: u32) {
    if let Ok(mut leaders) = LEADERS.lock() {
        leaders.remove(&pid);
    }
}

fn leaders() -> BTreeSet<u32> {
    LEADERS.lock().map(|l| l.clone()).unwrap_or_default()
}

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`):
/// descendants orphaned anywhere below it are reparented to it instead of
/// init, so [`kill_adopted`] can find them. Lasts for the life of the
/// process. Elsewhere: an `Unsupported` error.
pub fn become_subreaper() -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
            .map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "child subreapers are Linux only",
        ))
    }
}

/// `(pid, session id, state)` of every live child of this process (Linux).
#[cfg(target_os = "linux")]
fn children() -> Vec<(u32, u32, char)> {
    let me = rustix::process::getpid()
        .as_raw_nonzero()
        .get()
        .unsigned_abs();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = proc_stat(&pid.to_string())?;
            (stat.ppid == me).then_some((pid, stat.session, stat.state))
        })
        .collect()
}

/// This process's session id as `/proc` shows it, or `None` when it
/// cannot be read (then nothing is taken for an orphan).
#[cfg(target_os = "linux")]
fn my_session() -> Option<u32> {
    // Read from the same file as the children's sessions, so the
    // comparison holds where the session id reads 0 (see `ProcStat`).
    proc_stat("self").map(|stat| stat.session)
}

#[cfg(target_os = "linux")]
fn kill_hard(pid: u32) {
    use rustix::process::{Pid, Signal, kill_process, kill_process_group};
    if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        // Its group first (it may lead one), then itself.
        let _ = kill_process_group(p, Signal::KILL);
        let _ = kill_process(p, Signal::KILL);
    }
}

/// SIGKILLs (with their process groups) and reaps every child of this
/// process that runs in a session other than this process's own and is
/// not the leader of a live process extension: the orphans a subreaper
/// adopted from hosted servers. Repeats while killing them orphans more
/// (bounded: about two seconds). Returns how many it killed. Does nothing
/// off Linux.
pub fn kill_adopted() -> usize {
    kill_children(false)
}

/// Like [`kill_adopted`], and first SIGKILLs the process group of every
/// live process extension: the forced exit of a program interrupted twice.
/// Their disposers are not run; each leader is reaped by its own task if
/// the runtime still runs, or by init once this process exits.
pub fn kill_all_extensions() -> usize {
    kill_children(true)
}

fn kill_children(leaders_too: bool) -> usize {
    #[cfg(target_os = "linux")]
    {
        let Some(mine) = my_session() else {
            return 0;
        };
        let mut killed = 0;
        for _ in 0..100 {
            let live = leaders();
            let targets: Vec<(u32, char)> = children()
                .into_iter()
                .filter(|(pid, sid, state)| {
                    *sid != mine
                        && if live.contains(pid) {
                            leaders_too && *state != 'Z'
                        } else {
                            true
                        }
                })
                .map(|(pid, _, state)| (pid, state))
                .collect();
            if targets.is_empty() {
                break;
            }
            for (pid, state) in targets {
                if state != 'Z' {
                    kill_hard(pid);
                    killed += 1;
                }
                if !live.contains(&pid) {
                    super::group::reap(pid);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        killed
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = leaders_too;
        0
    }
}
