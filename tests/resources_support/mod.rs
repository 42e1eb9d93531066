//! Shared fixtures for the resource loader's integration tests: real
//! temporary directories, real symlinks, real FIFOs and sockets.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use exthost::{ResourceLoader, ResourceRoot};
use tempfile::TempDir;

/// A scratch area holding any number of named roots and an `outside`
/// directory that no root contains.
pub struct Scratch {
    pub temp: TempDir,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch {
            temp: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// The canonical base of the scratch area.
    pub fn base(&self) -> PathBuf {
        std::fs::canonicalize(self.temp.path()).expect("canonical tempdir")
    }

    /// A directory beneath the base, created if needed.
    pub fn dir(&self, name: &str) -> PathBuf {
        let dir = self.base().join(name);
        std::fs::create_dir_all(&dir).expect("create dir");
        dir
    }

    /// A loader over the named directories (created if needed), in order,
    /// each root's id being the directory's name.
    pub fn loader(&self, names: &[&str]) -> ResourceLoader {
        ResourceLoader::create(
            names
                .iter()
                .map(|name| ResourceRoot::new(*name, self.dir(name))),
        )
        .expect("loader")
    }
}

/// Writes `content` to `dir/relative`, creating parent directories.
pub fn write(dir: &Path, relative: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parents");
    }
    std::fs::write(&path, content).expect("write file");
    path
}

/// Creates the symlink `dir/link` pointing at `target` (taken literally).
pub fn symlink(dir: &Path, link: &str, target: impl AsRef<Path>) {
    let path = dir.join(link);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parents");
    }
    std::os::unix::fs::symlink(target, path).expect("symlink");
}

/// Creates a named pipe at `path` with the `mkfifo` program.
pub fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {path:?} failed");
}

/// Runs `work` on its own thread and returns its result, failing the test
/// (instead of hanging it) if the work does not finish. The bound is a
/// guard against a regression that blocks forever, not a timing assertion.
pub fn finishes<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let _ = sender.send(work());
    });
    receiver
        .recv_timeout(Duration::from_secs(60))
        .expect("the operation blocked instead of returning")
}
