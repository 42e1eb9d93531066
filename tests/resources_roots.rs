//! R-1 (roots at creation) and R-5 (root identity at every load).
mod resources_support;

use std::cell::Cell;

use exthost::resources::{RootChangedReason, RootInvalidReason};
use exthost::{IdError, ResourceError, ResourceLoader, ResourceRoot};
use resources_support::{Scratch, write};

fn refused(roots: Vec<ResourceRoot>) -> ResourceError {
    let error = ResourceLoader::create(roots).expect_err("the roots should be refused");
    assert_eq!(error.code(), "RESOURCE_ROOT_INVALID", "{error}");
    error
}

fn reason_for(error: &ResourceError, expected_id: &str) -> RootInvalidReason {
    match error {
        ResourceError::RootInvalid {
            root_id, reason, ..
        } => {
            assert_eq!(root_id, expected_id, "the error names the offending root");
            reason.clone()
        }
        other => panic!("expected RootInvalid, got {other:?}"),
    }
}

#[test]
fn an_empty_root_list_is_refused() {
    let error = refused(Vec::new());
    assert_eq!(error, ResourceError::NoRoots);
}

#[test]
fn root_ids_obey_id_1() {
    let scratch = Scratch::new();
    let dir = scratch.dir("d");
    for (id, expected) in [
        ("", IdError::Empty),
        (
            "bad id",
            IdError::BadCharacter {
                character: ' ',
                byte: 3,
            },
        ),
        (
            "a:b",
            IdError::BadCharacter {
                character: ':',
                byte: 1,
            },
        ),
        (
            "a/b",
            IdError::BadCharacter {
                character: '/',
                byte: 1,
            },
        ),
        (".hidden", IdError::BadStart { first: '.' }),
        ("-dash", IdError::BadStart { first: '-' }),
    ] {
        let error = refused(vec![
            ResourceRoot::new("ok", &dir),
            ResourceRoot::new(id, &dir),
        ]);
        assert_eq!(
            reason_for(&error, id),
            RootInvalidReason::InvalidId(expected),
            "{id:?}"
        );
    }
    let long = "x".repeat(65);
    let error = refused(vec![ResourceRoot::new(long.clone(), &dir)]);
    assert_eq!(
        reason_for(&error, &long),
        RootInvalidReason::InvalidId(IdError::TooLong { len: 65 })
    );
    assert!(ResourceLoader::create([ResourceRoot::new("x".repeat(64), &dir)]).is_ok());
}

#[test]
fn root_ids_are_unique() {
    let scratch = Scratch::new();
    let (one, two) = (scratch.dir("one"), scratch.dir("two"));
    let error = refused(vec![
        ResourceRoot::new("same", &one),
        ResourceRoot::new("other", &two),
        ResourceRoot::new("same", &two),
    ]);
    assert_eq!(reason_for(&error, "same"), RootInvalidReason::DuplicateId);
    // The same directory under two ids is allowed.
    assert!(
        ResourceLoader::create([ResourceRoot::new("a", &one), ResourceRoot::new("b", &one)])
            .is_ok()
    );
}

#[test]
fn a_root_must_be_an_existing_directory() {
    let scratch = Scratch::new();
    let dir = scratch.dir("d");
    let file = write(&dir, "file.txt", "not a directory");
    let missing = dir.join("missing");
    let error = refused(vec![
        ResourceRoot::new("ok", &dir),
        ResourceRoot::new("gone", &missing),
    ]);
    assert_eq!(reason_for(&error, "gone"), RootInvalidReason::Missing);
    match &error {
        ResourceError::RootInvalid { directory, .. } => assert_eq!(directory, &missing),
        other => panic!("{other:?}"),
    }
    let error = refused(vec![ResourceRoot::new("file", &file)]);
    assert_eq!(reason_for(&error, "file"), RootInvalidReason::NotADirectory);
    let error = refused(vec![ResourceRoot::new("under-file", file.join("x"))]);
    assert_eq!(
        reason_for(&error, "under-file"),
        RootInvalidReason::NotADirectory
    );
    let error = refused(vec![ResourceRoot::new("empty-path", "")]);
    assert_eq!(reason_for(&error, "empty-path"), RootInvalidReason::Missing);
}

#[test]
fn roots_keep_their_order_and_are_canonicalised_once() {
    let scratch = Scratch::new();
    let real = scratch.dir("real");
    write(&real, "file.txt", "via the real directory");
    std::os::unix::fs::symlink(&real, scratch.base().join("alias")).unwrap();
    let relative_base = scratch.dir("rel");
    let loader = ResourceLoader::create([
        ResourceRoot::new("zeta", scratch.base().join("alias")),
        ResourceRoot::new("alpha", scratch.base().join("rel/../real")),
        ResourceRoot::new("mid", &relative_base),
    ])
    .unwrap();
    assert_eq!(loader.root_ids(), ["zeta", "alpha", "mid"]);
    // The configured symlink was resolved at creation: retargeting it later
    // does not move the root.
    let elsewhere = scratch.dir("elsewhere");
    write(&elsewhere, "file.txt", "via the retargeted symlink");
    std::fs::remove_file(scratch.base().join("alias")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, scratch.base().join("alias")).unwrap();
    let found = loader.load_text("file.txt").unwrap().unwrap();
    assert_eq!(
        (found.root_id.as_str(), found.content.as_str()),
        ("zeta", "via the real directory")
    );
    assert!(format!("{loader:?}").contains(real.to_str().unwrap()));
}

/// A loader over `root` and `later`; both hold `file.txt`.
fn two_roots(scratch: &Scratch) -> ResourceLoader {
    write(&scratch.dir("root"), "file.txt", "root's file");
    write(&scratch.dir("later"), "file.txt", "later's file");
    let loader = scratch.loader(&["root", "later"]);
    assert_eq!(
        loader.load_text("file.txt").unwrap().unwrap().root_id,
        "root"
    );
    loader
}

/// Loads `file.txt` and expects RESOURCE_ROOT_CHANGED for `root`, with the
/// read seam never reached: nothing was opened in the root.
fn expect_root_changed(loader: &ResourceLoader, expected: RootChangedReason) {
    let opened = Cell::new(false);
    let error = loader
        .load_text_with_hook("file.txt", |_| opened.set(true))
        .expect_err("the root changed");
    assert_eq!(error.code(), "RESOURCE_ROOT_CHANGED", "{error}");
    match error {
        ResourceError::RootChanged {
            root_id, reason, ..
        } => {
            assert_eq!(root_id, "root");
            assert_eq!(reason, expected);
        }
        other => panic!("{other:?}"),
    }
    assert!(!opened.get(), "nothing may be read from a changed root");
}

#[test]
fn a_root_renamed_away_and_replaced_by_another_directory_is_refused() {
    let scratch = Scratch::new();
    let loader = two_roots(&scratch);
    let root = scratch.base().join("root");
    std::fs::rename(&root, scratch.base().join("root.old")).unwrap();
    expect_root_changed(&loader, RootChangedReason::Missing);
    // The replacement holds the same path; it is still not the trusted root.
    write(&scratch.dir("root"), "file.txt", "impostor");
    expect_root_changed(&loader, RootChangedReason::OtherDirectory);
}

#[test]
fn a_root_replaced_by_a_symlink_is_refused_even_to_the_original_directory() {
    let scratch = Scratch::new();
    let loader = two_roots(&scratch);
    let root = scratch.base().join("root");
    let moved = scratch.base().join("root.moved");
    std::fs::rename(&root, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &root).unwrap();
    expect_root_changed(&loader, RootChangedReason::Symlink);
}

#[test]
fn a_deleted_root_is_refused_and_does_not_fall_through() {
    let scratch = Scratch::new();
    let loader = two_roots(&scratch);
    std::fs::remove_dir_all(scratch.base().join("root")).unwrap();
    expect_root_changed(&loader, RootChangedReason::Missing);
    // A file where the root was.
    write(&scratch.base(), "root", "a file now");
    expect_root_changed(&loader, RootChangedReason::NotADirectory);
}

#[test]
fn a_root_renamed_back_is_the_same_root_again() {
    let scratch = Scratch::new();
    let loader = two_roots(&scratch);
    let root = scratch.base().join("root");
    let aside = scratch.base().join("aside");
    std::fs::rename(&root, &aside).unwrap();
    expect_root_changed(&loader, RootChangedReason::Missing);
    std::fs::rename(&aside, &root).unwrap();
    let found = loader.load_text("file.txt").unwrap().unwrap();
    assert_eq!(
        (found.root_id.as_str(), found.content.as_str()),
        ("root", "root's file")
    );
}

#[test]
fn only_the_roots_that_are_asked_are_checked() {
    let scratch = Scratch::new();
    let loader = two_roots(&scratch);
    std::fs::remove_dir_all(scratch.base().join("later")).unwrap();
    // "root" answers before "later" is asked.
    assert_eq!(
        loader.load_text("file.txt").unwrap().unwrap().root_id,
        "root"
    );
    // A path "root" lacks reaches "later", which changed.
    let error = loader.load_text("absent.txt").unwrap_err();
    assert_eq!(error.code(), "RESOURCE_ROOT_CHANGED");
    assert_eq!(error.root_id(), Some("later"));
}
