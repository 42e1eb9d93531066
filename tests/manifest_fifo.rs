//! Loading manifests never blocks (issue 9, item 7): a FIFO in place of
//! `extension.json`, whether it is there from the start or swapped in while
//! the folder is being loaded, is refused (`manifest_io_error`) and the load
//! returns. Each load runs on its own thread with a generous guard, so a
//! blocking open fails the test instead of hanging it (a guard, not a timing
//! assertion).

use std::fs;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use exthost::manifest::{
    LoadedManifest, MANIFEST_FILE_NAME, ManifestBatchError, ManifestReason, load_manifest_dir,
};

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(status.success(), "mkfifo {path:?} failed");
}

fn manifest_text(id: &str) -> String {
    format!(r#"{{"id": "{id}", "runtime": {{"kind": "in-process"}}}}"#)
}

/// Loads `dir` on a thread of its own; panics if the load has not returned
/// after 10 s (it blocked).
fn load_guarded(dir: &Path) -> Result<Vec<LoadedManifest>, ManifestBatchError> {
    let (sender, receiver) = mpsc::channel();
    let dir = dir.to_path_buf();
    thread::spawn(move || {
        let _ = sender.send(load_manifest_dir(&dir));
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("load_manifest_dir blocked instead of returning")
}

#[test]
fn a_fifo_in_place_of_the_manifest_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["a-fifo", "b-good", "c-link"] {
        fs::create_dir(dir.path().join(folder)).unwrap();
    }
    // No writer ever opens these FIFOs: a blocking open would wait forever.
    mkfifo(&dir.path().join("a-fifo").join(MANIFEST_FILE_NAME));
    fs::write(
        dir.path().join("b-good").join(MANIFEST_FILE_NAME),
        manifest_text("good"),
    )
    .unwrap();
    mkfifo(&dir.path().join("pipe"));
    std::os::unix::fs::symlink(
        dir.path().join("pipe"),
        dir.path().join("c-link").join(MANIFEST_FILE_NAME),
    )
    .unwrap();

    let error = load_guarded(dir.path()).unwrap_err();
    let refused: Vec<(ManifestReason, &Path)> = error
        .errors()
        .iter()
        .map(|e| (e.reason(), e.file().unwrap()))
        .collect();
    let a = dir.path().join("a-fifo").join(MANIFEST_FILE_NAME);
    let c = dir.path().join("c-link").join(MANIFEST_FILE_NAME);
    assert_eq!(
        refused,
        [
            (ManifestReason::ManifestIoError, a.as_path()),
            (ManifestReason::ManifestIoError, c.as_path()),
        ]
    );
    for error in error.errors() {
        assert!(error.message().contains("regular file"), "{error}");
    }
}

/// What one load of the raced folder gave.
#[derive(Debug, Default)]
struct Outcomes {
    /// One of the two manifests loaded.
    loaded: usize,
    /// The type check saw the FIFO.
    fifo_at_check: usize,
    /// The FIFO was swapped in between the type check and the open: the
    /// open returned at once and the handle was refused.
    fifo_at_open: usize,
    /// The other regular file was swapped in between check and open.
    replaced: usize,
}

/// A swapper thread keeps renaming a FIFO, then one regular file, then
/// another, over `extension.json` (each rename is atomic: the path always
/// exists) while the main thread loads the folder in a loop. Whatever the
/// interleaving (FIFO seen by the type check, FIFO swapped in between the
/// type check and the open, another file swapped in), every load returns,
/// and it either loads one of the two manifests or refuses the file with
/// `manifest_io_error`.
#[test]
fn swapping_a_fifo_and_regular_files_in_while_loading_never_blocks() {
    const LOADS: usize = 600;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("ext");
    fs::create_dir(&folder).unwrap();
    let target = folder.join(MANIFEST_FILE_NAME);
    // The sources live in the extension's own folder, which the loader does
    // not list: only `extension.json` is read there.
    let fifo = folder.join(".fifo");
    let one = folder.join(".one");
    let two = folder.join(".two");
    mkfifo(&fifo);
    fs::write(&one, manifest_text("one")).unwrap();
    fs::write(&two, manifest_text("two")).unwrap();
    fs::hard_link(&one, &target).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let swapper = {
        let (stop, swaps, target) = (stop.clone(), swaps.clone(), target.clone());
        let staged = folder.join(".staged");
        let sources = [fifo, one, two];
        thread::spawn(move || {
            let mut next = 0;
            while !stop.load(Ordering::Relaxed) {
                // A hard link keeps the source; the rename replaces the
                // manifest atomically.
                fs::hard_link(&sources[next % 3], &staged).unwrap();
                fs::rename(&staged, &target).unwrap();
                next += 1;
                swaps.store(next, Ordering::Relaxed);
            }
        })
    };

    let mut outcomes = Outcomes::default();
    for _ in 0..LOADS {
        match load_guarded(dir.path()) {
            Ok(loaded) => {
                assert_eq!(loaded.len(), 1);
                let id = loaded[0].manifest.id();
                assert!(id == "one" || id == "two", "loaded {id}");
                assert_eq!(loaded[0].path, target);
                outcomes.loaded += 1;
            }
            Err(error) => {
                let [error] = error.errors() else {
                    panic!("one problem expected: {error}");
                };
                assert_eq!(
                    (error.reason(), error.file()),
                    (ManifestReason::ManifestIoError, Some(target.as_path())),
                    "{error}"
                );
                let message = error.message();
                if message.contains("not a regular file while it was being opened") {
                    outcomes.fifo_at_open += 1;
                } else if message.contains("not a regular file") {
                    outcomes.fifo_at_check += 1;
                } else if message.contains("replaced by another file") {
                    outcomes.replaced += 1;
                } else {
                    panic!("unexpected refusal: {error}");
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper thread");
    println!(
        "{LOADS} loads during {} swaps: {outcomes:?}",
        swaps.load(Ordering::Relaxed)
    );
    assert_eq!(
        outcomes.loaded + outcomes.fifo_at_check + outcomes.fifo_at_open + outcomes.replaced,
        LOADS
    );
    // The swapper really ran during the loads.
    assert!(swaps.load(Ordering::Relaxed) > 0);
}
