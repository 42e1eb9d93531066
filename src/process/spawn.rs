//! P-1: starting the child. A cleared environment plus an allow-list, the
//! extension's folder as working directory, its own process group, piped
//! stdio, and a guard that kills the whole group if it is ever dropped.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::error::ProcessFault;
use crate::manifest::ProcessRuntime;

/// Host variables every child gets when the host has them; the manifest's
/// `runtime.env` adds more names.
pub const BASE_ENV_ALLOW_LIST: &[&str] = &["PATH", "HOME", "LANG", "TERM"];

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
pub fn resolve_program(command: &str, folder: &Path) -> PathBuf {
    let path = Path::new(command);
    if command.contains('/') && path.is_relative() {
        folder.join(path)
    } else {
        path.to_path_buf()
    }
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
    let program = resolve_program(runtime.command(), folder);
    let mut command = Command::new(&program);
    command
        .args(runtime.args())
        .env_clear()
        .envs(child_environment(runtime))
        .current_dir(folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    let mut child = command.spawn().map_err(|e| {
        ProcessFault::Exited(format!(
            "could not start {:?} in {}: {e}",
            runtime.command(),
            folder.display()
        ))
    })?;
    let pid = child.id();
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ProcessFault::Exited(
            "the child's stdio pipes were not available".to_owned(),
        ));
    };
    Ok(Spawned {
        child: ChildGuard {
            child,
            pid,
            reaped: false,
            done: false,
        },
        stdin,
        stdout,
        stderr,
    })
}

/// Owns the child. Dropping it without a clean [`super::shutdown`] kills
/// the whole process group at once (and tokio reaps the leader), so no
/// path leaves the child or its descendants running.
pub(crate) struct ChildGuard {
    pub(crate) child: Child,
    pub(crate) pid: Option<u32>,
    pub(crate) reaped: bool,
    /// Set once the shutdown saw the group gone (or killed it): the group id
    /// may then be reused, so it must not be signalled again.
    pub(crate) done: bool,
}

impl ChildGuard {
    /// The child's pid, which is also its process group id.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let (Some(pid), false) = (self.pid, self.done) {
            // The leader may be gone while its group lives on. Once the
            // leader is reaped, the group id stays reserved only while a
            // member lives: check first, so a reused id is never signalled.
            if !self.reaped || super::shutdown::group_alive(pid) {
                let _ = super::shutdown::signal_group(pid, super::shutdown::GroupSignal::Kill);
            }
        }
    }
}
