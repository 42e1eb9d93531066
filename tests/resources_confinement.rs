//! R-2 (precedence, fall-through, fail closed), R-4 (confinement beneath
//! the root, symlinks), R-11 (hard links are served).
mod resources_support;

use exthost::ResourceError;
use exthost::resources::NotFileKind;
use resources_support::{Scratch, symlink, write};

fn answered_by(loader: &exthost::ResourceLoader, path: &str) -> Option<(String, String)> {
    loader
        .load_text(path)
        .unwrap_or_else(|error| panic!("{path:?}: {error}"))
        .map(|resource| {
            assert_eq!(resource.path, path);
            (resource.root_id, resource.content)
        })
}

fn code(loader: &exthost::ResourceLoader, path: &str) -> &'static str {
    loader.load_text(path).expect_err(path).code()
}

fn some(root: &str, content: &str) -> Option<(String, String)> {
    Some((root.to_owned(), content.to_owned()))
}

#[test]
fn the_first_root_holding_the_path_answers_across_three_roots() {
    let scratch = Scratch::new();
    let (a, b, c) = (scratch.dir("a"), scratch.dir("b"), scratch.dir("c"));
    for root in [&a, &b, &c] {
        write(
            root,
            "everywhere.txt",
            root.file_name().unwrap().to_str().unwrap(),
        );
    }
    write(&b, "b-and-c.txt", "from b");
    write(&c, "b-and-c.txt", "from c");
    write(&c, "only-c.txt", "from c");
    let loader = scratch.loader(&["a", "b", "c"]);
    assert_eq!(loader.root_ids(), ["a", "b", "c"]);

    assert_eq!(answered_by(&loader, "everywhere.txt"), some("a", "a"));
    assert_eq!(answered_by(&loader, "b-and-c.txt"), some("b", "from b"));
    assert_eq!(answered_by(&loader, "only-c.txt"), some("c", "from c"));
    assert_eq!(answered_by(&loader, "nowhere.txt"), None);

    // Order is the caller's: reversed roots, reversed precedence.
    let reversed = scratch.loader(&["c", "b", "a"]);
    assert_eq!(answered_by(&reversed, "everywhere.txt"), some("c", "c"));
    assert_eq!(answered_by(&reversed, "b-and-c.txt"), some("c", "from c"));
}

#[test]
fn a_missing_intermediate_directory_falls_through() {
    let scratch = Scratch::new();
    let (_a, b, c) = (scratch.dir("a"), scratch.dir("b"), scratch.dir("c"));
    // "a" has no "deep" at all; "b" has "deep" but no "deep/er".
    std::fs::create_dir(b.join("deep")).unwrap();
    write(&c, "deep/er/file.txt", "deep in c");
    let loader = scratch.loader(&["a", "b", "c"]);
    assert_eq!(
        answered_by(&loader, "deep/er/file.txt"),
        some("c", "deep in c")
    );
    assert_eq!(answered_by(&loader, "deep/er/other.txt"), None);
}

#[test]
fn a_dangling_symlink_inside_the_root_falls_through() {
    let scratch = Scratch::new();
    let (a, b) = (scratch.dir("a"), scratch.dir("b"));
    symlink(&a, "x.txt", "missing.txt");
    symlink(&a, "sub/y.txt", "../gone/y.txt");
    symlink(&a, "dangling-dir", "no-such-dir");
    write(&b, "x.txt", "b's x");
    write(&b, "sub/y.txt", "b's y");
    write(&b, "dangling-dir/z.txt", "b's z");
    let loader = scratch.loader(&["a", "b"]);
    assert_eq!(answered_by(&loader, "x.txt"), some("b", "b's x"));
    assert_eq!(answered_by(&loader, "sub/y.txt"), some("b", "b's y"));
    assert_eq!(
        answered_by(&loader, "dangling-dir/z.txt"),
        some("b", "b's z")
    );
}

#[test]
fn a_parent_that_is_a_file_is_not_a_file_and_stops_the_search() {
    let scratch = Scratch::new();
    let (a, b) = (scratch.dir("a"), scratch.dir("b"));
    write(&a, "p", "a plain file where a directory is expected");
    symlink(&a, "q", "p");
    write(&b, "p/x.txt", "b's x");
    write(&b, "q/x.txt", "b's x");
    let loader = scratch.loader(&["a", "b"]);
    for path in ["p/x.txt", "q/x.txt", "p/deeper/x.txt"] {
        match loader.load_text(path) {
            Err(error @ ResourceError::NotFile { .. }) => {
                assert_eq!(error.code(), "RESOURCE_NOT_FILE");
                assert_eq!(
                    error,
                    ResourceError::NotFile {
                        root_id: "a".into(),
                        path: path.into(),
                        kind: NotFileKind::ParentNotDirectory
                    }
                );
            }
            other => panic!("{path:?}: {other:?}"),
        }
    }
}

#[test]
fn an_error_in_an_earlier_root_is_never_masked_by_a_later_one() {
    let scratch = Scratch::new();
    let (a, b) = (scratch.dir("a"), scratch.dir("b"));
    let outside = scratch.dir("outside");
    write(&outside, "secret.txt", "secret");
    std::fs::create_dir(a.join("dir.txt")).unwrap();
    symlink(&a, "escape.txt", "../outside/secret.txt");
    write(&a, "bad.txt", b"\xff\xfe");
    write(
        &a,
        "big.txt",
        vec![b'x'; exthost::MAX_RESOURCE_TEXT_BYTES + 1],
    );
    symlink(&a, "loop.txt", "loop.txt");
    for name in ["dir.txt", "escape.txt", "bad.txt", "big.txt", "loop.txt"] {
        write(&b, name, "b would answer");
    }
    let loader = scratch.loader(&["a", "b"]);
    for (path, expected) in [
        ("dir.txt", "RESOURCE_NOT_FILE"),
        ("escape.txt", "RESOURCE_PATH_ESCAPE"),
        ("bad.txt", "RESOURCE_INVALID_UTF8"),
        ("big.txt", "RESOURCE_TOO_LARGE"),
        ("loop.txt", "RESOURCE_IO"),
    ] {
        let error = loader.load_text(path).expect_err(path);
        assert_eq!(error.code(), expected, "{path:?}: {error}");
        assert_eq!(error.root_id(), Some("a"), "{path:?}");
        assert_eq!(error.path(), Some(path));
    }
}

#[test]
fn a_symlink_inside_to_inside_is_served() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    write(&root, "real.txt", "the real text");
    write(&root, "sub/deep.txt", "deep text");
    symlink(&root, "link.txt", "real.txt");
    symlink(&root, "sub/up.txt", "../real.txt");
    symlink(&root, "sub/parent", "..");
    symlink(&root, "alias", "sub");
    let loader = scratch.loader(&["root"]);
    assert_eq!(
        answered_by(&loader, "link.txt"),
        some("root", "the real text")
    );
    assert_eq!(
        answered_by(&loader, "sub/up.txt"),
        some("root", "the real text")
    );
    assert_eq!(
        answered_by(&loader, "sub/parent/real.txt"),
        some("root", "the real text")
    );
    assert_eq!(
        answered_by(&loader, "alias/deep.txt"),
        some("root", "deep text")
    );
    assert_eq!(
        answered_by(&loader, "alias/parent/alias/deep.txt"),
        some("root", "deep text")
    );
}

#[test]
fn a_symlink_inside_to_outside_is_an_escape() {
    let scratch = Scratch::new();
    let (root, later) = (scratch.dir("root"), scratch.dir("later"));
    let outside = scratch.dir("outside");
    write(&outside, "secret.txt", "secret");
    symlink(&root, "out.txt", "../outside/secret.txt");
    symlink(&root, "sub/out.txt", "../../outside/secret.txt");
    symlink(&root, "sub/top", "../..");
    write(&later, "out.txt", "later root");
    let loader = scratch.loader(&["root", "later"]);
    for path in ["out.txt", "sub/out.txt", "sub/top/outside/secret.txt"] {
        assert_eq!(
            loader.load_text(path),
            Err(ResourceError::PathEscape {
                root_id: "root".into(),
                path: path.into()
            }),
            "{path:?}"
        );
    }
}

#[test]
fn a_dangling_symlink_leading_outside_is_an_escape() {
    let scratch = Scratch::new();
    let (root, later) = (scratch.dir("root"), scratch.dir("later"));
    symlink(&root, "dangling.txt", "../nowhere/missing.txt");
    symlink(
        &root,
        "dangling-abs.txt",
        "/nonexistent-exthost-test/missing.txt",
    );
    symlink(&root, "sub/far.txt", "../../../../../../../../missing");
    for name in ["dangling.txt", "dangling-abs.txt", "sub/far.txt"] {
        write(&later, name, "must not be reached");
    }
    let loader = scratch.loader(&["root", "later"]);
    for path in ["dangling.txt", "dangling-abs.txt", "sub/far.txt"] {
        assert_eq!(code(&loader, path), "RESOURCE_PATH_ESCAPE", "{path:?}");
    }
}

#[test]
fn an_absolute_symlink_is_an_escape_even_to_inside_the_root() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let target = write(&root, "real.txt", "inside");
    symlink(&root, "abs.txt", &target);
    symlink(&root, "abs-dir", &root);
    let loader = scratch.loader(&["root"]);
    assert_eq!(answered_by(&loader, "real.txt"), some("root", "inside"));
    assert_eq!(code(&loader, "abs.txt"), "RESOURCE_PATH_ESCAPE");
    assert_eq!(code(&loader, "abs-dir/real.txt"), "RESOURCE_PATH_ESCAPE");
}

#[test]
fn symlink_chains_are_followed_while_they_stay_inside() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let outside = scratch.dir("outside");
    write(&outside, "secret.txt", "secret");
    write(&root, "real.txt", "end of the chain");
    symlink(&root, "l3", "real.txt");
    symlink(&root, "d/l2", "../l3");
    symlink(&root, "l1", "d/l2");
    // A chain whose last link leaves the root.
    symlink(&root, "e3", "../outside/secret.txt");
    symlink(&root, "e2", "e3");
    symlink(&root, "e1", "e2");
    let loader = scratch.loader(&["root"]);
    assert_eq!(answered_by(&loader, "l1"), some("root", "end of the chain"));
    assert_eq!(code(&loader, "e1"), "RESOURCE_PATH_ESCAPE");
}

#[test]
fn a_symlinked_directory_component_pointing_outside_is_an_escape() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let outside = scratch.dir("outside");
    write(&outside, "secret.txt", "secret");
    symlink(&root, "d", "../outside");
    symlink(&root, "nested/d", "../../outside");
    symlink(&root, "abs", &outside);
    let loader = scratch.loader(&["root"]);
    for path in [
        "d/secret.txt",
        "nested/d/secret.txt",
        "abs/secret.txt",
        "d/missing.txt",
    ] {
        assert_eq!(code(&loader, path), "RESOURCE_PATH_ESCAPE", "{path:?}");
    }
}

#[test]
fn a_symlink_loop_is_an_io_error() {
    let scratch = Scratch::new();
    let (root, later) = (scratch.dir("root"), scratch.dir("later"));
    symlink(&root, "self", "self");
    symlink(&root, "ping", "pong");
    symlink(&root, "pong", "ping");
    symlink(&root, "dir-loop", "dir-loop/x");
    for name in ["self", "ping", "dir-loop/x"] {
        write(&later, name, "must not be reached");
    }
    let loader = scratch.loader(&["root", "later"]);
    for path in ["self", "ping", "pong/x", "dir-loop/x"] {
        let error = loader.load_text(path).expect_err(path);
        assert_eq!(error.code(), "RESOURCE_IO", "{path:?}: {error}");
        assert_eq!(error.root_id(), Some("root"));
    }
}

#[test]
fn a_chain_of_more_than_forty_links_is_an_io_error() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    write(&root, "target.txt", "reached");
    // link0 -> target.txt, linkN -> link(N-1): following linkN takes N + 1
    // symlink expansions.
    symlink(&root, "link0", "target.txt");
    for n in 1..=40 {
        symlink(&root, &format!("link{n}"), format!("link{}", n - 1));
    }
    let loader = scratch.loader(&["root"]);
    assert_eq!(
        answered_by(&loader, "link39"),
        some("root", "reached"),
        "40 links"
    );
    let error = loader.load_text("link40").expect_err("41 links");
    assert_eq!(error.code(), "RESOURCE_IO", "{error}");
}

#[test]
fn a_hard_link_to_a_file_outside_the_root_is_served() {
    // the loader is a file boundary over names, not over inodes. A hard
    // link inside a root is an entry of that root, wherever else the file
    // is also linked.
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let outside = scratch.dir("outside");
    let secret = write(&outside, "secret.txt", "linked from outside");
    std::fs::hard_link(&secret, root.join("hard.txt")).unwrap();
    let loader = scratch.loader(&["root"]);
    assert_eq!(
        answered_by(&loader, "hard.txt"),
        some("root", "linked from outside")
    );
}
