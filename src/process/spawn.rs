//! P-1: starting the child. A cleared environment plus an allow-list, the
//! extension's folder (made absolute) as working directory, its own session
//! and process group, piped stdio, a task that reaps the leader the moment
//! it exits, and a guard that kills the whole group if it is ever dropped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use super::error::ProcessFault;
use crate::manifest::ProcessRuntime;

/// Host variables every child gets when the host has them; the manifest's
/// `runtime.env` adds more names. `SSL_CERT_FILE` and `SSL_CERT_DIR` say
/// where the TLS trust store is (OpenSSL, rustls' native roots, uv, pip,
/// Node with `--use-openssl-ca`): a child that downloads its package
/// (`uvx`, `npx`) fails TLS without them on a machine that sets them.
/// They name certificates, which are public; they carry no secret.
pub const BASE_ENV_ALLOW_LIST: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "TERM",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The environment the child gets: the base allow-list, then the manifest's
/// names, each with the host's value when the host has that variable.
pub fn child_environment(runtime: &ProcessRuntime) -> Vec<(String, OsString)> {
    let mut names: Vec<&str> = BASE_ENV_ALLOW_LIST.to_vec();
    for name in runtime.env() {
        if !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (name.to_owned(), value)))
        .collect()
}

/// The program to run: a command with a `/` is a path, relative to the
/// extension's folder; a bare name is looked up on the child's `PATH`.
/// The folder is made absolute first (against the host's working
/// directory), so the path stays right once the child runs in the folder.
pub fn resolve_program(command: &str, folder: &Path) -> PathBuf {
    let path = Path::new(command);
    if command.contains('/') && path.is_relative() {
        absolute(folder).join(path)
    } else {
        path.to_path_buf()
    }
}

/// `folder` as an absolute path (unchanged when it cannot be made one).
fn absolute(folder: &Path) -> PathBuf {
    std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf())
}

/// Where `program` is: itself when it is a path, else the first match on
/// the child's `PATH`; `None` when nothing executable is there.
fn locate(program: &Path, path_var: Option<&OsString>) -> Option<PathBuf> {
    let executable = |p: &Path| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            p.is_file()
        }
    };
    if program.components().count() > 1 || program.is_absolute() {
        return executable(program).then(|| program.to_path_buf());
    }
    std::env::split_paths(path_var?)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// The `setsid` program that starts each child as a session of its own
/// (no controlling terminal: it cannot open the host's terminal, and
/// Ctrl-C in the host's terminal does not reach it). The standard library
/// has no stable `setsid` for commands and the crate forbids `unsafe` (a
/// `pre_exec` hook), so the child is started through `setsid PROGRAM
/// ARGS...`, which calls `setsid()` and `exec`s in place (same pid: it is
/// not a group leader, so it does not fork). Where no `setsid` program is
/// installed the child gets its own process group only.
#[cfg(unix)]
fn setsid_program() -> Option<&'static Path> {
    ["/usr/bin/setsid", "/bin/setsid"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file())
}

/// A started child: its guard and its three pipes.
pub(crate) struct Spawned {
    pub(crate) child: ChildGuard,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
}

/// Spawns the child of `runtime` in `folder`.
pub(crate) fn spawn(runtime: &ProcessRuntime, folder: &Path) -> Result<Spawned, ProcessFault> {
    let folder = absolute(folder);
    let environment = child_environment(runtime);
    let path_var = environment
        .iter()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| value);
    let cannot_start = |why: &dyn std::fmt::Display| {
        ProcessFault::Exited(format!(
            "could not start {:?} in {}: {why}",
            runtime.command(),
            folder.display()
        ))
    };
    let program = resolve_program(runtime.command(), &folder);
    let located = locate(&program, path_var)
        .ok_or_else(|| cannot_start(&"no such executable file (on the child's PATH)"))?;
    #[cfg(unix)]
    let mut command = match setsid_program() {
        Some(setsid) => {
            let mut c = Command::new(setsid);
            c.arg(&located);
            c
        }
        None => {
            let mut c = Command::new(&located);
            c.process_group(0);
            c
        }
    };
    #[cfg(not(unix))]
    let mut command = Command::new(&located);
    command
        .args(runtime.args())
        .env_clear()
        .envs(environment)
        .current_dir(&folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| cannot_start(&e))?;
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ProcessFault::Exited(
            "the child's stdio pipes were not available".to_owned(),
        ));
    };
    // The leader is reaped the moment it exits (crash detection races this
    // against the transport); the guard watches the outcome.
    let (exited_tx, exited) = watch::channel(None);
    if let Some(pid) = pid {
        super::containment::leader_started(pid);
    }
    tokio::spawn(async move {
        let status = child.wait().await;
        if let Some(pid) = pid {
            super::containment::leader_reaped(pid);
        }
        let _ = exited_tx.send(Some(
            status.map_or_else(|e| format!("unknown status: {e}"), |s| s.to_string()),
        ));
    });
    Ok(Spawned {
        child: ChildGuard {
            pid,
            exited,
            done: false,
        },
        stdin,
        stdout,
        stderr,
    })
}

/// Owns the child's process group. The leader itself is owned by a task
/// that reaps it as soon as it exits (and kills it if the runtime drops
/// the task). Dropping the guard without a clean [`super::shutdown`] kills
/// the whole group at once, so no path leaves the child or its
/// descendants running.
pub(crate) struct ChildGuard {
    pub(crate) pid: Option<u32>,
    /// `Some(status)` once the leader has exited and been reaped.
    pub(crate) exited: watch::Receiver<Option<String>>,
    /// Set once the shutdown saw the group gone (or killed it): the group id
    /// may then be reused, so it must not be signalled again.
    pub(crate) done: bool,
}

impl ChildGuard {
    /// The child's pid, which is also its process group id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// True once the leader has exited and been reaped.
    pub(crate) fn reaped(&self) -> bool {
        self.exited.borrow().is_some()
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let (Some(pid), false) = (self.pid, self.done) {
            // The leader may be gone while its group lives on. Once the
            // leader is reaped, the group id stays reserved only while a
            // member lives: check first, so a reused id is never signalled.
            if !self.reaped() || super::group::group_exists(pid) {
                let _ = super::group::signal_group(pid, super::group::GroupSignal::Kill);
            }
        }
    }
}
