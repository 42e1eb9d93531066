//! Every code of docs/spec.md section 7 that belongs to the resource loader is
//! produced by a real scenario, and `code()` returns the shared constant.
mod resources_support;

use std::collections::BTreeSet;

use exthost::error::codes;
use exthost::{ResourceLoader, ResourceRoot};
use resources_support::{Scratch, symlink, write};

#[test]
fn every_resource_code_is_produced_by_a_real_failure() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    let outside = scratch.dir("outside");
    write(&outside, "secret.txt", "secret");
    write(&root, "file.txt", "text");
    write(
        &root,
        "big.txt",
        vec![b'x'; exthost::MAX_RESOURCE_TEXT_BYTES + 1],
    );
    write(&root, "bad.txt", b"\xC0\xAF");
    std::fs::create_dir(root.join("dir")).unwrap();
    symlink(&root, "escape.txt", "../outside/secret.txt");
    symlink(&root, "loop.txt", "loop.txt");
    let replacement = write(&root, "replacement.txt", "other");
    let loader = scratch.loader(&["root"]);

    let mut produced = Vec::new();
    produced.push(ResourceLoader::create([]).unwrap_err());
    produced.push(ResourceLoader::create([ResourceRoot::new("bad id", &root)]).unwrap_err());
    produced.push(loader.load_text("../file.txt").unwrap_err());
    produced.push(loader.load_text("escape.txt").unwrap_err());
    produced.push(loader.load_text("dir").unwrap_err());
    produced.push(
        loader
            .load_text_with_hook("file.txt", |_| {
                std::fs::rename(&replacement, root.join("file.txt")).unwrap();
            })
            .unwrap_err(),
    );
    produced.push(loader.load_text("big.txt").unwrap_err());
    produced.push(loader.load_text("bad.txt").unwrap_err());
    produced.push(loader.load_text("loop.txt").unwrap_err());
    std::fs::rename(&root, scratch.base().join("moved")).unwrap();
    produced.push(loader.load_text("file.txt").unwrap_err());

    let expected = [
        codes::RESOURCE_ROOT_INVALID,
        codes::RESOURCE_ROOT_INVALID,
        codes::RESOURCE_PATH_INVALID,
        codes::RESOURCE_PATH_ESCAPE,
        codes::RESOURCE_NOT_FILE,
        codes::RESOURCE_CHANGED_DURING_READ,
        codes::RESOURCE_TOO_LARGE,
        codes::RESOURCE_INVALID_UTF8,
        codes::RESOURCE_IO,
        codes::RESOURCE_ROOT_CHANGED,
    ];
    let got: Vec<&str> = produced.iter().map(|error| error.code()).collect();
    assert_eq!(got, expected);

    // Together they are exactly the RESOURCE_* codes of the shared table.
    let resource_codes: BTreeSet<&str> = codes::ALL
        .iter()
        .copied()
        .filter(|code| code.starts_with("RESOURCE_"))
        .collect();
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), resource_codes);

    // Every message names what it is about and is not empty.
    for error in &produced {
        let message = error.to_string();
        assert!(!message.is_empty());
        if let Some(root_id) = error.root_id() {
            assert!(message.contains(root_id), "{message}");
        }
    }
}
