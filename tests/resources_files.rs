//! regular files only; opening a FIFO never blocks.
mod resources_support;

use std::os::unix::net::UnixListener;

use exthost::ResourceError;
use exthost::resources::NotFileKind;
use resources_support::{Scratch, finishes, mkfifo, symlink, write};

fn not_file(root_id: &str, path: &str, kind: NotFileKind) -> ResourceError {
    ResourceError::NotFile {
        root_id: root_id.into(),
        path: path.into(),
        kind,
    }
}

#[test]
fn a_fifo_is_not_a_file_and_opening_it_does_not_block() {
    let scratch = Scratch::new();
    let (root, later) = (scratch.dir("root"), scratch.dir("later"));
    mkfifo(&root.join("pipe"));
    symlink(&root, "pipe-link", "pipe");
    write(&later, "pipe", "must not be reached");
    let loader = scratch.loader(&["root", "later"]);
    // No writer ever opens the FIFO: a blocking open would wait forever, and
    // the guard turns that into a failure instead of a hung test.
    let results = finishes(move || (loader.load_text("pipe"), loader.load_text("pipe-link")));
    assert_eq!(results.0, Err(not_file("root", "pipe", NotFileKind::Fifo)));
    assert_eq!(
        results.1,
        Err(not_file("root", "pipe-link", NotFileKind::Fifo))
    );
    assert_eq!(results.0.unwrap_err().code(), "RESOURCE_NOT_FILE");
}

#[test]
fn a_unix_socket_is_not_a_file() {
    let scratch = Scratch::new();
    let (root, later) = (scratch.dir("root"), scratch.dir("later"));
    let _listener = UnixListener::bind(root.join("sock")).expect("bind a unix socket");
    write(&later, "sock", "must not be reached");
    let loader = scratch.loader(&["root", "later"]);
    let result = finishes(move || loader.load_text("sock"));
    assert_eq!(result, Err(not_file("root", "sock", NotFileKind::Socket)));
}

#[test]
fn a_directory_is_not_a_file() {
    let scratch = Scratch::new();
    let (root, later) = (scratch.dir("root"), scratch.dir("later"));
    std::fs::create_dir_all(root.join("docs/inner")).unwrap();
    symlink(&root, "docs-link", "docs");
    write(&later, "docs/inner", "must not be reached");
    let loader = scratch.loader(&["root", "later"]);
    for path in ["docs", "docs/inner", "docs-link"] {
        let error = loader.load_text(path).expect_err(path);
        assert_eq!(error.code(), "RESOURCE_NOT_FILE");
        assert_eq!(error, not_file("root", path, NotFileKind::Directory));
    }
}

#[test]
fn a_device_is_not_a_file_and_opening_it_does_not_block() {
    // Making a device node needs CAP_MKNOD (root in most containers). Where
    // the system refuses it, the refusal itself is checked and the load part
    // cannot run.
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let node = root.join("zero");
    let made = std::process::Command::new("mknod")
        .arg(&node)
        .args(["c", "1", "5"])
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run mknod");
    if !made.success() {
        assert!(!node.exists(), "mknod failed but left a node behind");
        eprintln!("mknod is not permitted here; the device case is covered where it is");
        return;
    }
    let loader = scratch.loader(&["root"]);
    let result = finishes(move || loader.load_text("zero"));
    assert_eq!(
        result,
        Err(not_file("root", "zero", NotFileKind::CharDevice))
    );
}

#[test]
fn regular_files_through_symlinks_are_served() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    write(&root, "plain.txt", "plain");
    symlink(&root, "to-plain", "plain.txt");
    let loader = scratch.loader(&["root"]);
    assert_eq!(
        loader.load_text("to-plain").unwrap().unwrap().content,
        "plain"
    );
}
