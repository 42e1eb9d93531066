//! Shared helpers: a real host, manifest folders in a tempdir, wedge guards
//! and `/proc` checks that a child (and its process group) is gone.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use exthost::host::{ExtensionHost, HostOptions, InProcessFactories, ManifestDiscovery};
use exthost::process::ProcessMonitor;
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::{Value, json};

/// The hand-written fixture server.
pub const FIXTURE: &str = env!("CARGO_BIN_EXE_mcp-fixture");

/// Fails the test instead of hanging it.
pub async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(90), f)
        .await
        .expect("the test wedged: a process extension step did not settle")
}

pub struct World {
    pub _resources: tempfile::TempDir,
    pub folder: tempfile::TempDir,
    pub host: ExtensionHost,
}

pub fn world() -> World {
    let resources = tempfile::tempdir().unwrap();
    let loader = ResourceLoader::create([ResourceRoot::new("test", resources.path())]).unwrap();
    let host = ExtensionHost::new(HostOptions::new(loader)).unwrap();
    World {
        _resources: resources,
        folder: tempfile::tempdir().unwrap(),
        host,
    }
}

impl World {
    /// Writes `<folder>/<name>/extension.json`.
    pub fn write(&self, name: &str, manifest: &Value) -> PathBuf {
        let dir = self.folder.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("extension.json"),
            serde_json::to_string_pretty(manifest).unwrap(),
        )
        .unwrap();
        dir
    }

    /// Discovers the folder; returns the monitor of extension `id`.
    pub fn discover(&self, id: &str) -> (ManifestDiscovery, ProcessMonitor) {
        let discovery = self
            .host
            .discover_manifest_dir(self.folder.path(), &InProcessFactories::new())
            .unwrap();
        let monitor = discovery
            .extensions
            .iter()
            .find(|e| e.id == id)
            .and_then(|e| e.process())
            .expect("a process extension has a monitor");
        (discovery, monitor)
    }
}

/// A manifest running the fixture in `mode`, with extra runtime keys.
pub fn fixture_manifest(id: &str, mode: &str, runtime_extra: Value) -> Value {
    let mut runtime = json!({"kind": "process", "command": FIXTURE, "args": [mode]});
    if let (Some(r), Some(extra)) = (runtime.as_object_mut(), runtime_extra.as_object()) {
        for (k, v) in extra {
            r.insert(k.clone(), v.clone());
        }
    }
    json!({"id": id, "runtime": runtime, "permissions": ["tools.register"]})
}

/// The same, declaring `tools` (M-4, M-5).
pub fn declared(mut manifest: Value, tools: Vec<Value>) -> Value {
    manifest["deferred"] = json!({"tools": tools});
    manifest
}

/// `(state, pgrp)` of a process from `/proc/<pid>/stat`, or `None` when no
/// such process exists (not even a zombie).
pub fn proc_stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 2..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Live (non-zombie) processes in group `pgid`.
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(
            |pid| matches!(proc_stat(*pid), Some((state, pgrp)) if pgrp == pgid && state != 'Z'),
        )
        .collect()
}

/// Asserts the child is gone and reaped (no zombie) and no live process is
/// left in its group.
pub fn assert_gone(pid: u32) {
    assert_eq!(
        proc_stat(pid),
        None,
        "the child {pid} is still there (running or a zombie)"
    );
    assert_eq!(
        live_group_members(pid),
        Vec::<u32>::new(),
        "processes of the child's group {pid} are still running"
    );
}

/// Asserts a grandchild is not running (a zombie waiting for init to reap
/// it counts as gone: it is not ours to reap).
pub fn assert_not_running(pid: u32) {
    let state = proc_stat(pid).map(|(s, _)| s);
    assert!(
        state.is_none() || state == Some('Z'),
        "process {pid} is still running (state {state:?})"
    );
}

/// Polls `check` until it is true; the wedge guard of the caller bounds it.
pub async fn eventually(mut check: impl FnMut() -> bool) {
    while !check() {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A path as a string.
pub fn s(p: &Path) -> String {
    p.display().to_string()
}
