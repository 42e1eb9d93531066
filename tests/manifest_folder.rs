//! Loading a folder of manifests: all-or-nothing, every problem listed,
//! deterministic order, size cap and strict UTF-8.

use std::fs;
use std::path::Path;

use exthost::manifest::{
    MANIFEST_FILE_NAME, MAX_MANIFEST_BYTES, ManifestReason, RetiredKey, load_manifest_dir,
    load_manifest_file,
};
use serde_json::json;

fn manifest_text(id: &str) -> String {
    json!({
        "id": id, "runtime": {"kind": "in-process"}, "permissions": ["tools.register"],
        "deferred": {"tools": [{"name": "t", "description": "A tool.", "inputSchema": {"type": "object"}}]}
    })
    .to_string()
}

fn put(dir: &Path, folder: &str, contents: impl AsRef<[u8]>) {
    fs::create_dir_all(dir.join(folder)).unwrap();
    fs::write(dir.join(folder).join(MANIFEST_FILE_NAME), contents).unwrap();
}

#[test]
fn a_good_folder_loads_in_folder_name_order() {
    let dir = tempfile::tempdir().unwrap();
    for (folder, id) in [
        ("zeta", "z"),
        ("alpha", "a"),
        ("Mid", "m"),
        ("10-ten", "ten"),
    ] {
        put(dir.path(), folder, manifest_text(id));
    }
    fs::write(dir.path().join("README.md"), "notes").unwrap();
    fs::create_dir(dir.path().join(".cache")).unwrap();
    fs::write(dir.path().join(".hidden.json"), "not json").unwrap();

    let loaded = load_manifest_dir(dir.path()).unwrap();
    let ids: Vec<&str> = loaded.iter().map(|l| l.manifest.id()).collect();
    assert_eq!(ids, ["ten", "m", "a", "z"], "byte order of folder names");
    let first = &loaded[0];
    assert_eq!(first.directory, dir.path().join("10-ten"));
    assert_eq!(first.path, dir.path().join("10-ten").join("extension.json"));
    assert!(first.notices.is_empty());
}

#[test]
fn an_empty_folder_is_an_empty_batch() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(load_manifest_dir(dir.path()).unwrap(), []);
}

#[test]
fn one_bad_file_refuses_the_batch_and_every_problem_is_listed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    put(d, "a-good", manifest_text("good"));
    put(d, "b-syntax", "{\"id\": ");
    put(d, "c-dup", manifest_text("good"));
    put(
        d,
        "d-unknown",
        r#"{"id":"d","runtime":{"kind":"in-process"},"colour":1}"#,
    );
    fs::create_dir(d.join("e-empty")).unwrap();
    put(d, "f-utf8", b"{\"id\":\"\xc0\x80\"}");
    put(d, "g-good", manifest_text("other"));
    put(d, "h-dup", manifest_text("other"));
    fs::write(d.join("i-loose.json"), manifest_text("loose")).unwrap();

    let error = load_manifest_dir(d).unwrap_err();
    assert_eq!(error.code(), "MANIFEST_INVALID");
    assert_eq!(error.directory(), d);
    let got: Vec<(ManifestReason, String, &str)> = error
        .errors()
        .iter()
        .map(|e| {
            let file = e
                .file()
                .unwrap()
                .strip_prefix(d)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            (e.reason(), file, e.pointer())
        })
        .collect();
    let expected = [
        (ManifestReason::InvalidJson, "b-syntax/extension.json", ""),
        (
            ManifestReason::DuplicateExtensionId,
            "c-dup/extension.json",
            "/id",
        ),
        (
            ManifestReason::UnknownField,
            "d-unknown/extension.json",
            "/colour",
        ),
        (
            ManifestReason::ManifestMissing,
            "e-empty/extension.json",
            "",
        ),
        (
            ManifestReason::ManifestInvalidUtf8,
            "f-utf8/extension.json",
            "",
        ),
        (
            ManifestReason::DuplicateExtensionId,
            "h-dup/extension.json",
            "/id",
        ),
        (ManifestReason::MisplacedManifestFile, "i-loose.json", ""),
    ];
    let expected: Vec<(ManifestReason, String, &str)> = expected
        .iter()
        .map(|(r, f, p)| (*r, (*f).to_owned(), *p))
        .collect();
    assert_eq!(got, expected);

    let duplicate = &error.errors()[1];
    assert_eq!(duplicate.extension_id(), Some("good"));
    assert!(
        duplicate.message().contains("a-good"),
        "{}",
        duplicate.message()
    );
    let text = error.to_string();
    assert!(
        text.starts_with("MANIFEST_INVALID: 7 manifest problem(s)"),
        "{text}"
    );
    assert!(
        text.contains("d-unknown") && text.contains("unknown_field"),
        "{text}"
    );
    assert_eq!(error.clone().into_errors().len(), 7);
}

#[test]
fn the_size_cap_is_exact() {
    let dir = tempfile::tempdir().unwrap();
    let body = manifest_text("a");
    let padded = |len: usize| format!("{body}{}", " ".repeat(len - body.len()));
    put(dir.path(), "a", padded(MAX_MANIFEST_BYTES));
    assert_eq!(load_manifest_dir(dir.path()).unwrap().len(), 1);
    put(dir.path(), "a", padded(MAX_MANIFEST_BYTES + 1));
    let error = load_manifest_dir(dir.path()).unwrap_err();
    assert_eq!(error.errors()[0].reason(), ManifestReason::ManifestTooLarge);
}

#[test]
fn a_leading_byte_order_mark_is_removed_and_invalid_utf8_refused() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "a", format!("\u{feff}{}", manifest_text("a")));
    assert_eq!(load_manifest_dir(dir.path()).unwrap()[0].manifest.id(), "a");

    let cases: [(&[u8], ManifestReason); 4] = [
        // Only one byte-order mark is removed; the second is not JSON.
        (b"\xef\xbb\xbf\xef\xbb\xbf{}", ManifestReason::InvalidJson),
        // A surrogate, an overlong encoding, a sequence cut off at the end.
        (
            b"{\"id\":\"\xed\xa0\x80\"}",
            ManifestReason::ManifestInvalidUtf8,
        ),
        (
            b"{\"id\":\"\xc0\x80\"}",
            ManifestReason::ManifestInvalidUtf8,
        ),
        (b"{\"id\":\"a\xe2\x82", ManifestReason::ManifestInvalidUtf8),
    ];
    for (bad, reason) in cases {
        put(dir.path(), "a", bad);
        let error = load_manifest_dir(dir.path()).unwrap_err();
        assert_eq!(error.errors()[0].reason(), reason, "{bad:?}");
    }
    put(dir.path(), "a", b"{\"id\":\"\xed\xa0\x80\"}");
    let error = load_manifest_dir(dir.path()).unwrap_err();
    assert_eq!(
        error.errors()[0].reason(),
        ManifestReason::ManifestInvalidUtf8
    );
    assert!(
        error.errors()[0].message().contains("offset 7"),
        "{}",
        error.errors()[0].message()
    );
}

#[test]
fn a_missing_folder_is_an_io_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let error = load_manifest_dir(&missing).unwrap_err();
    assert_eq!(error.errors().len(), 1);
    assert_eq!(error.errors()[0].reason(), ManifestReason::ManifestIoError);
    assert_eq!(error.errors()[0].file(), Some(missing.as_path()));
}

#[test]
fn retired_keys_load_with_their_notices() {
    let dir = tempfile::tempdir().unwrap();
    put(
        dir.path(),
        "a",
        json!({"id": "a", "runtime": {"kind": "in-process"}, "deferred": {"context_providers": [1]}}).to_string(),
    );
    let loaded = load_manifest_dir(dir.path()).unwrap();
    let keys: Vec<RetiredKey> = loaded[0].notices.iter().map(|n| n.key()).collect();
    assert_eq!(keys, [RetiredKey::DeferredContextProviders]);
}

#[test]
fn one_file_loads_alone_with_its_path_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    put(dir.path(), "a", manifest_text("a"));
    let path = dir.path().join("a").join(MANIFEST_FILE_NAME);
    assert_eq!(load_manifest_file(&path).unwrap().0.id(), "a");
    put(dir.path(), "a", "[]");
    let error = load_manifest_file(&path).unwrap_err();
    assert_eq!(
        (error.reason(), error.file()),
        (ManifestReason::InvalidFieldType, Some(path.as_path()))
    );
    assert!(error.to_string().contains(&path.display().to_string()));
}

#[cfg(unix)]
#[test]
fn symlinked_extension_folders_are_followed() {
    let outside = tempfile::tempdir().unwrap();
    put(outside.path(), "real", manifest_text("linked"));
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path().join("real"), dir.path().join("linked")).unwrap();
    let loaded = load_manifest_dir(dir.path()).unwrap();
    assert_eq!(loaded[0].manifest.id(), "linked");
    assert_eq!(loaded[0].directory, dir.path().join("linked"));
}

#[cfg(unix)]
#[test]
fn a_fifo_manifest_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("a")).unwrap();
    let fifo = dir.path().join("a").join(MANIFEST_FILE_NAME);
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let error = load_manifest_dir(dir.path()).unwrap_err();
    assert_eq!(error.errors()[0].reason(), ManifestReason::ManifestIoError);
    assert!(error.errors()[0].message().contains("regular file"));
}
