//! Discovery cost: loading 1,000 manifests with `load_manifest_dir`
//! (read, strict parse, full validation, schema digests, id uniqueness)
//! against the floor of reading the same files and parsing them into
//! `serde_json::Value` with no validation at all.
//!
//! Run: `cargo bench --bench discovery`.

use std::fs;
use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use exthost::manifest::{MANIFEST_FILE_NAME, load_manifest_dir};
use serde_json::{Value, json};

const EXTENSIONS: usize = 1_000;

/// A realistic manifest: a process runtime, hooks, and for most extensions
/// three declared tools with small schemas; every fourth one also declares a
/// provider with two models.
fn manifest(index: usize) -> Value {
    let tools: Vec<Value> = (0..3)
        .map(|t| {
            json!({
                "name": format!("tool-{t}"),
                "description": format!("Tool {t} of extension {index}: does one useful thing."),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "A path inside the workspace."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100}
                    },
                    "required": ["path"]
                }
            })
        })
        .collect();
    let mut deferred = json!({"tools": tools});
    if index.is_multiple_of(4) {
        deferred["providers"] = json!([{
            "id": "local", "displayName": "Local models",
            "configSchema": {"type": "object", "properties": {"endpoint": {"type": "string"}}},
            "models": [
                {"id": "small", "displayName": "Small", "capabilities": {"tools": true, "vision": false}},
                {"id": "large", "displayName": "Large", "capabilities": {"tools": true, "vision": true}}
            ]
        }]);
    }
    json!({
        "id": format!("ext-{index:04}"),
        "version": "1.0.0",
        "displayName": format!("Extension {index}"),
        "description": "A generated extension for the discovery benchmark.",
        "runtime": {"kind": "process", "command": "node", "args": ["server.js", "--stdio"], "env": ["PATH", "HOME"]},
        "permissions": ["tools.register", "providers.register", "hooks.subscribe"],
        "hooks": ["session.start"],
        "deferred": deferred
    })
}

fn populate(dir: &Path) {
    for index in 0..EXTENSIONS {
        let folder = dir.join(format!("ext-{index:04}"));
        fs::create_dir(&folder).expect("create extension folder");
        let text = serde_json::to_string_pretty(&manifest(index)).expect("serialise manifest");
        fs::write(folder.join(MANIFEST_FILE_NAME), text).expect("write manifest");
    }
}

/// The floor: list, sort, read and parse each file into a `Value`.
fn read_and_parse_values(dir: &Path) -> Vec<Value> {
    let mut folders: Vec<_> = fs::read_dir(dir)
        .expect("read folder")
        .map(|entry| entry.expect("entry").path())
        .collect();
    folders.sort_unstable();
    folders
        .iter()
        .map(|folder| {
            let text = fs::read_to_string(folder.join(MANIFEST_FILE_NAME)).expect("read manifest");
            serde_json::from_str::<Value>(&text).expect("parse manifest")
        })
        .collect()
}

fn discovery(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    populate(dir.path());
    assert_eq!(
        load_manifest_dir(dir.path()).expect("valid batch").len(),
        EXTENSIONS
    );

    let mut group = c.benchmark_group("discover_1000_manifests");
    group.sample_size(30);
    group.bench_function("load_manifest_dir", |b| {
        b.iter(|| load_manifest_dir(black_box(dir.path())).expect("valid batch"))
    });
    group.bench_function("read_and_parse_value", |b| {
        b.iter(|| read_and_parse_values(black_box(dir.path())))
    });
    group.finish();
}

criterion_group!(benches, discovery);
criterion_main!(benches);
