//! R-7 (identity around the read), R-8 (size cap), R-9 (strict UTF-8, one
//! BOM removed), R-10 (path as requested, no caching, concurrent loads).
mod resources_support;

use std::fs::OpenOptions;
use std::io::Write;
use std::sync::Arc;
use std::thread;

use exthost::resources::ChangeReason;
use exthost::{MAX_RESOURCE_TEXT_BYTES as CAP, ResourceError, ResourceLoader};
use resources_support::{Scratch, symlink, write};

fn one_root(scratch: &Scratch) -> (std::path::PathBuf, ResourceLoader) {
    let root = scratch.dir("root");
    (root, scratch.loader(&["root"]))
}

fn changed(path: &str, reason: ChangeReason) -> ResourceError {
    ResourceError::ChangedDuringRead {
        root_id: "root".into(),
        path: path.into(),
        reason,
    }
}

#[test]
fn a_file_replaced_between_resolution_and_read_is_refused() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    write(&root, "file.txt", "original");
    let replacement = write(&root, "replacement.txt", "replacement");
    let mut calls = Vec::new();
    let result = loader.load_text_with_hook("file.txt", |root_id| {
        calls.push(root_id.to_owned());
        std::fs::rename(&replacement, root.join("file.txt")).unwrap();
    });
    assert_eq!(
        calls,
        ["root"],
        "the seam runs once, for the root that opened the file"
    );
    let error = result.unwrap_err();
    assert_eq!(error.code(), "RESOURCE_CHANGED_DURING_READ");
    assert_eq!(error, changed("file.txt", ChangeReason::Replaced));
    // Afterwards the path loads again, as the replacement.
    assert_eq!(
        loader.load_text("file.txt").unwrap().unwrap().content,
        "replacement"
    );
}

#[test]
fn a_file_removed_during_the_read_is_refused() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    write(&root, "file.txt", "soon gone");
    let result = loader.load_text_with_hook("file.txt", |_| {
        std::fs::remove_file(root.join("file.txt")).unwrap();
    });
    assert_eq!(result, Err(changed("file.txt", ChangeReason::Gone)));
}

#[test]
fn a_file_turned_into_an_escaping_symlink_during_the_read_is_refused() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    let outside = scratch.dir("outside");
    write(&outside, "secret.txt", "secret");
    write(&root, "file.txt", "inside");
    let result = loader.load_text_with_hook("file.txt", |_| {
        std::fs::remove_file(root.join("file.txt")).unwrap();
        symlink(&root, "file.txt", "../outside/secret.txt");
    });
    assert_eq!(result, Err(changed("file.txt", ChangeReason::Escaping)));
}

#[test]
fn a_parent_directory_swapped_during_the_read_is_refused() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    write(&root, "dir/file.txt", "first");
    write(&root, "other/file.txt", "second");
    let result = loader.load_text_with_hook("dir/file.txt", |_| {
        std::fs::rename(root.join("dir"), root.join("dir.old")).unwrap();
        std::fs::rename(root.join("other"), root.join("dir")).unwrap();
    });
    assert_eq!(result, Err(changed("dir/file.txt", ChangeReason::Replaced)));
}

#[test]
fn the_same_file_under_a_new_inside_name_still_loads() {
    // Identity, not the directory entry, is compared: replacing the entry by
    // an inside symlink to the very same file is no change.
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    write(&root, "file.txt", "same file");
    let result = loader.load_text_with_hook("file.txt", |_| {
        std::fs::rename(root.join("file.txt"), root.join("moved.txt")).unwrap();
        symlink(&root, "file.txt", "moved.txt");
    });
    assert_eq!(result.unwrap().unwrap().content, "same file");
}

#[test]
fn exactly_the_cap_loads_and_one_byte_more_is_too_large() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    write(&root, "at-cap.txt", vec![b'a'; CAP]);
    write(&root, "over-cap.txt", vec![b'a'; CAP + 1]);
    write(&root, "far-over.txt", vec![b'a'; 3 * CAP]);
    let at_cap = loader.load_text("at-cap.txt").unwrap().unwrap();
    assert_eq!(at_cap.content.len(), 1_048_576);
    for path in ["over-cap.txt", "far-over.txt"] {
        let error = loader.load_text(path).unwrap_err();
        assert_eq!(error.code(), "RESOURCE_TOO_LARGE");
        assert_eq!(
            error,
            ResourceError::TooLarge {
                root_id: "root".into(),
                path: path.into(),
                limit: 1_048_576
            }
        );
    }
}

#[test]
fn a_multibyte_character_straddling_the_cap_is_too_large_not_invalid() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    let emoji = "\u{1F600}"; // four bytes
    // Ends exactly at the cap: loads whole.
    let fits = format!("{}{emoji}", "a".repeat(CAP - 4));
    // Starts one byte before the cap: bytes CAP-1 .. CAP+2.
    let straddles = format!("{}{emoji}", "a".repeat(CAP - 1));
    // Starts at the last byte inside, cut after its first two bytes by the
    // cap + 1 read.
    let cut = format!("{}{emoji}", "a".repeat(CAP - 2));
    write(&root, "fits.txt", &fits);
    write(&root, "straddles.txt", &straddles);
    write(&root, "cut.txt", &cut);
    assert_eq!(loader.load_text("fits.txt").unwrap().unwrap().content, fits);
    assert_eq!(
        loader.load_text("straddles.txt").unwrap_err().code(),
        "RESOURCE_TOO_LARGE"
    );
    assert_eq!(
        loader.load_text("cut.txt").unwrap_err().code(),
        "RESOURCE_TOO_LARGE"
    );
}

#[test]
fn the_bom_counts_toward_the_cap() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    let mut at_cap = b"\xEF\xBB\xBF".to_vec();
    at_cap.resize(CAP, b'b');
    let mut over = at_cap.clone();
    over.push(b'b');
    write(&root, "bom-at-cap.txt", &at_cap);
    write(&root, "bom-over.txt", &over);
    assert_eq!(
        loader
            .load_text("bom-at-cap.txt")
            .unwrap()
            .unwrap()
            .content
            .len(),
        CAP - 3
    );
    assert_eq!(
        loader.load_text("bom-over.txt").unwrap_err().code(),
        "RESOURCE_TOO_LARGE"
    );
}

#[test]
fn a_file_that_grows_past_the_cap_during_the_read_is_refused() {
    // The size seen when the file was opened is the cap; the file grows
    // before the read. The cap holds on the bytes actually read.
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    let path = write(&root, "growing.txt", vec![b'g'; CAP]);
    let result = loader.load_text_with_hook("growing.txt", |_| {
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&vec![b'g'; 4096]).unwrap();
    });
    assert_eq!(result.unwrap_err().code(), "RESOURCE_TOO_LARGE");
}

#[test]
fn a_file_that_grows_under_the_cap_during_the_read_is_read_whole() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    let path = write(&root, "growing.txt", "start");
    let result = loader.load_text_with_hook("growing.txt", |_| {
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all("-and-more".repeat(2000).as_bytes()).unwrap();
    });
    let content = result.unwrap().unwrap().content;
    assert_eq!(content, format!("start{}", "-and-more".repeat(2000)));
}

fn invalid_utf8(bytes: &[u8]) -> (usize, Option<usize>) {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    write(&root, "bad.txt", bytes);
    match loader.load_text("bad.txt") {
        Err(error @ ResourceError::InvalidUtf8 { .. }) => {
            assert_eq!(error.code(), "RESOURCE_INVALID_UTF8");
            match error {
                ResourceError::InvalidUtf8 {
                    valid_up_to,
                    error_len,
                    root_id,
                    path,
                } => {
                    assert_eq!((root_id.as_str(), path.as_str()), ("root", "bad.txt"));
                    (valid_up_to, error_len)
                }
                _ => unreachable!(),
            }
        }
        other => panic!("{bytes:?}: {other:?}"),
    }
}

#[test]
fn overlong_encodings_are_invalid() {
    assert_eq!(invalid_utf8(b"ab\xC0\xAF"), (2, Some(1))); // '/' in two bytes
    assert_eq!(invalid_utf8(b"\xC1\xBF"), (0, Some(1)));
    assert_eq!(invalid_utf8(b"x\xE0\x80\xAF"), (1, Some(1))); // '/' in three bytes
    assert_eq!(invalid_utf8(b"\xF0\x80\x80\xAF"), (0, Some(1))); // '/' in four bytes
}

#[test]
fn surrogates_are_invalid() {
    assert_eq!(invalid_utf8(b"\xED\xA0\x80"), (0, Some(1))); // U+D800
    assert_eq!(invalid_utf8(b"ok \xED\xBF\xBF"), (3, Some(1))); // U+DFFF
    assert_eq!(invalid_utf8(b"\xED\xA0\xBD\xED\xB8\x80"), (0, Some(1))); // CESU-8 pair
}

#[test]
fn input_cut_off_at_the_end_is_invalid() {
    assert_eq!(invalid_utf8(b"euro \xE2\x82"), (5, None));
    assert_eq!(invalid_utf8(b"\xF0\x9F\x98"), (0, None));
    assert_eq!(invalid_utf8(b"\xC3"), (0, None));
    assert_eq!(
        invalid_utf8(b"\xEF\xBB"),
        (0, None),
        "a cut byte-order mark"
    );
}

#[test]
fn lone_continuation_and_impossible_bytes_are_invalid() {
    assert_eq!(invalid_utf8(b"\x80"), (0, Some(1)));
    assert_eq!(invalid_utf8(b"ab\xBFcd"), (2, Some(1)));
    assert_eq!(invalid_utf8(b"\xFF"), (0, Some(1)));
    assert_eq!(
        invalid_utf8(b"\xFE\xFF"),
        (0, Some(1)),
        "a UTF-16 byte-order mark"
    );
    assert_eq!(
        invalid_utf8(b"\xF4\x90\x80\x80"),
        (0, Some(1)),
        "above U+10FFFF"
    );
    assert_eq!(
        invalid_utf8(b"\xE2\x28\xA1"),
        (0, Some(1)),
        "a broken sequence mid-file"
    );
    // Offsets count the byte-order mark.
    assert_eq!(invalid_utf8(b"\xEF\xBB\xBFok\x80"), (5, Some(1)));
}

#[test]
fn exactly_one_leading_bom_is_removed() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    for (name, bytes, expected) in [
        ("one.txt", &b"\xEF\xBB\xBFtext"[..], "text"),
        (
            "two.txt",
            &b"\xEF\xBB\xBF\xEF\xBB\xBFtext"[..],
            "\u{FEFF}text",
        ),
        ("only.txt", &b"\xEF\xBB\xBF"[..], ""),
        ("middle.txt", &b"a\xEF\xBB\xBFb"[..], "a\u{FEFF}b"),
        ("none.txt", &b"plain"[..], "plain"),
        ("empty.txt", &b""[..], ""),
    ] {
        write(&root, name, bytes);
        assert_eq!(
            loader.load_text(name).unwrap().unwrap().content,
            expected,
            "{name}"
        );
    }
}

#[test]
fn the_path_is_kept_as_requested_and_nothing_is_cached() {
    let scratch = Scratch::new();
    let (root, loader) = one_root(&scratch);
    write(&root, "real.txt", "first");
    symlink(&root, "alias.txt", "real.txt");
    let via_alias = loader.load_text("alias.txt").unwrap().unwrap();
    assert_eq!(via_alias.path, "alias.txt");
    assert_eq!(via_alias.content, "first");
    write(&root, "real.txt", "second");
    assert_eq!(
        loader.load_text("alias.txt").unwrap().unwrap().content,
        "second"
    );
    std::fs::remove_file(root.join("real.txt")).unwrap();
    assert_eq!(loader.load_text("alias.txt").unwrap(), None);
    write(&root, "real.txt", "third");
    assert_eq!(
        loader.load_text("real.txt").unwrap().unwrap().content,
        "third"
    );
}

#[test]
fn many_threads_load_concurrently_from_clones_of_one_loader() {
    let scratch = Scratch::new();
    let (a, b) = (scratch.dir("a"), scratch.dir("b"));
    let mut expected = Vec::new();
    for n in 0..16 {
        let path = format!("dir{}/file{n}.txt", n % 4);
        let (dir, root_id) = if n % 2 == 0 { (&a, "a") } else { (&b, "b") };
        let content = format!("{root_id}:{n}:{}", "\u{e9}".repeat(n * 100));
        write(dir, &path, &content);
        expected.push((path, root_id, content));
    }
    let loader = scratch.loader(&["a", "b"]);
    let expected = Arc::new(expected);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let loader = loader.clone();
            let expected = Arc::clone(&expected);
            thread::spawn(move || {
                for round in 0..50 {
                    let (path, root_id, content) = &expected[(t * 7 + round) % expected.len()];
                    let found = loader.load_text(path).unwrap().unwrap();
                    assert_eq!(&found.root_id, root_id);
                    assert_eq!(&found.content, content);
                    assert_eq!(loader.load_text("missing/file.txt").unwrap(), None);
                    assert_eq!(
                        loader.load_text("../x").unwrap_err().code(),
                        "RESOURCE_PATH_INVALID"
                    );
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a loading thread panicked");
    }
}
