//! `serve` watches its folder (the `notify` crate: inotify on Linux): the
//! folder itself and each extension's folder, not their subfolders, so a
//! server's own files (a `node_modules`, a virtual environment) cost no
//! watch. A burst of events is one look, once the folder has been quiet
//! for [`QUIET`] (at most [`MOST`] after the first event); each look
//! compares every `<folder>/extension.json` with what it was and applies
//! what changed, one manifest at a time:
//!
//! - **added** (a new id): discovered through the host as a batch of one
//!   (H-2): its declared tools appear dormant at once, and nothing starts
//!   before a call (M-4).
//! - **changed** only in what `serve` itself holds (`expose`,
//!   `runtime.idleTimeoutMs`): applied at once.
//! - **changed** in what the host holds (the runtime, the declarations: a
//!   re-lock): the host redefines the extension (H-12) in one operation.
//!   Not running, its new declared tools are served at once and nothing
//!   starts; running, a fresh backend is started from the new manifest and
//!   checked against it (M-5), and only if it passes does it replace the
//!   running one, which then stops. If the new manifest cannot be applied
//!   (its fresh backend fails, its tools drift from its declarations, an
//!   active extension's dependencies change), the last good one stays live
//!   and the log gives the code and reason. An in-process extension's code
//!   is only loaded at start, so its change needs a restart.
//! - **removed**: nothing of it is listed or callable any more, and its
//!   backend stops through the idle stop (`idle.rs`) once no call of it is
//!   in flight. The host keeps its id hidden: the same manifest put back
//!   shows it again, and a changed one is applied as a re-lock.
//! - **invalid**: the last good manifest stays live, and the log gives the
//!   reason code and message.
//!
//! Every change of the tools shown (what `tools/list` lists, or with
//! `--expose catalog` what the catalog searches and describes) reaches the
//! client as `notifications/tools/list_changed` ([`forward_list_changes`]),
//! and every change of the folder as the prompts and resources
//! `list_changed` too, when `serve` declares them ([`announce_listings`]).
//! Log lines are escaped by [`Log::line`](super::log::Log::line), through
//! the one escaping function (`crate::text`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use exthost::host::Redefinition;
use exthost::manifest::{MANIFEST_FILE_NAME, Manifest, load_manifest_file};
use notify::{EventKind, RecursiveMode, Watcher};
use rmcp::{Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::Notify;

use super::gateway::Gateway;
use super::listing;

/// How long the folder must be quiet before a look.
const QUIET: Duration = Duration::from_millis(200);
/// The longest a burst of events delays a look.
const MOST: Duration = Duration::from_secs(2);

/// What the watcher knows of one manifest file.
#[derive(Debug, Default)]
struct Seen {
    /// Its bytes at the last look (`None`: unreadable).
    bytes: Option<Vec<u8>>,
    /// The manifest in force from this file, if any.
    live: Option<Manifest>,
}

/// The folder as the watcher last saw it.
struct Folder {
    dir: PathBuf,
    files: BTreeMap<PathBuf, Seen>,
    watched: BTreeSet<PathBuf>,
}

/// The manifest files of `dir`: `<folder>/extension.json` for each folder
/// whose name does not start with `.`, in name order.
fn manifest_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_name().as_encoded_bytes().first() != Some(&b'.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .map(|p| p.join(MANIFEST_FILE_NAME))
        .collect();
    files.sort();
    files
}

/// Two manifests that the host holds the same way: equal but for
/// `expose` and `runtime.idleTimeoutMs`, which only `serve` reads.
fn same_for_host(a: &Manifest, b: &Manifest) -> bool {
    let strip = |m: &Manifest| {
        let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
        if let Some(map) = v.as_object_mut() {
            map.remove("expose");
            if let Some(runtime) = map.get_mut("runtime").and_then(Value::as_object_mut) {
                runtime.remove("idleTimeoutMs");
            }
        }
        v
    };
    strip(a) == strip(b)
}

impl Folder {
    /// The folder as it is now, with the manifests the host serves.
    fn new(dir: PathBuf, gateway: &Gateway) -> Self {
        let mut files = BTreeMap::new();
        for file in manifest_files(&dir) {
            let bytes = std::fs::read(&file).ok();
            let live = load_manifest_file(&file)
                .ok()
                .map(|(m, _)| m)
                .filter(|m| gateway.shape.manifest(m.id()).is_some());
            files.insert(file, Seen { bytes, live });
        }
        Self {
            dir,
            files,
            watched: BTreeSet::new(),
        }
    }

    /// Watches the folder and each extension's folder not watched yet.
    fn watch_folders(&mut self, watcher: &mut impl Watcher, gateway: &Gateway) {
        let mut wanted = vec![self.dir.clone()];
        wanted.extend(
            manifest_files(&self.dir)
                .iter()
                .filter_map(|f| f.parent().map(Path::to_path_buf)),
        );
        for folder in wanted {
            if self.watched.contains(&folder) {
                continue;
            }
            match watcher.watch(&folder, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(folder);
                }
                Err(e) => gateway.log.line(&format!(
                    "cannot watch {}: {e}; a change there is seen at the next change of the folder",
                    folder.display()
                )),
            }
        }
        // A folder that is gone is no longer watched by the system.
        self.watched.retain(|f| f.is_dir());
    }

    /// Applies every manifest that changed since the last look.
    async fn look(&mut self, gateway: &Gateway) {
        let now = manifest_files(&self.dir);
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|f| !now.contains(f) || !f.is_file())
            .cloned()
            .collect();
        for file in gone {
            if let Some(seen) = self.files.remove(&file)
                && let Some(live) = seen.live
            {
                remove(gateway, &file, &live);
            }
        }
        for file in now {
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            let seen = self.files.entry(file.clone()).or_default();
            if seen.bytes.as_ref() == Some(&bytes) {
                continue;
            }
            seen.bytes = Some(bytes);
            match load_manifest_file(&file) {
                Err(e) => gateway.log.line(&format!(
                    "{} is invalid ({}: {}); {}",
                    file.display(),
                    e.reason_code(),
                    e.message(),
                    match &seen.live {
                        Some(live) =>
                            format!("extension {:?} keeps its last good manifest", live.id()),
                        None => "nothing of it is served".to_owned(),
                    }
                )),
                Ok((manifest, _)) => {
                    let live = seen.live.take();
                    seen.live = apply(gateway, &file, live, manifest).await;
                }
            }
        }
    }
}

/// Applies a valid manifest read from `file`, where `live` was in force;
/// returns the manifest in force afterwards.
async fn apply(
    gateway: &Gateway,
    file: &Path,
    live: Option<Manifest>,
    manifest: Manifest,
) -> Option<Manifest> {
    let id = manifest.id().to_owned();
    let log = |text: String| gateway.log.line(&text);
    if let Some(live) = live {
        if live.id() != id {
            log(format!(
                "{} now names extension {id:?} instead of {:?}; {:?} stays as it was, and a restart of serve applies the change",
                file.display(),
                live.id(),
                live.id()
            ));
            return Some(live);
        }
        if live == manifest {
            log(format!(
                "the manifest of extension {id:?} is valid again, and unchanged"
            ));
            return Some(live);
        }
        if !same_for_host(&live, &manifest) {
            return match redefine(gateway, file, manifest).await {
                Some(manifest) => Some(manifest),
                None => Some(live),
            };
        }
        gateway.shape.present(manifest.clone(), None);
        log(format!(
            "the manifest of extension {id:?} changed (expose or idleTimeoutMs): applied"
        ));
        return Some(manifest);
    }
    match gateway.shape.manifest(&id) {
        Some((known, true)) if known == manifest => {
            gateway.shape.present(manifest.clone(), None);
            log(format!(
                "extension {id:?} is back: its manifest returned unchanged"
            ));
            Some(manifest)
        }
        Some((known, true)) if same_for_host(&known, &manifest) => {
            gateway.shape.present(manifest.clone(), None);
            log(format!(
                "extension {id:?} is back, changed only in expose or idleTimeoutMs: applied"
            ));
            Some(manifest)
        }
        Some((_, true)) => redefine(gateway, file, manifest).await,
        Some((_, false)) => {
            log(format!(
                "{} declares extension {id:?}, which another folder already serves; ignored",
                file.display()
            ));
            None
        }
        None => add(gateway, file, manifest),
    }
}

/// A manifest changed in what the host holds (a re-lock, the command, the
/// declarations): the host redefines the extension (H-12), as one
/// operation. Returns the manifest in force afterwards if it was applied;
/// `None` if the host kept the last good definition (the log says why).
async fn redefine(gateway: &Gateway, file: &Path, manifest: Manifest) -> Option<Manifest> {
    let id = manifest.id().to_owned();
    let folder = file.parent().unwrap_or(file);
    let Some((definition, monitor)) = exthost::process::definition(&manifest, folder) else {
        gateway.log.line(&format!(
            "the manifest of extension {id:?} changed, but an in-process extension's code is only loaded at start; the last good one stays, and a restart of serve applies it"
        ));
        return None;
    };
    // The client's subscriptions carry over to the new backend.
    if let Some(old) = gateway.shape.monitor(&id) {
        monitor.adopt_subscriptions(&old);
    }
    match gateway.host.redefine(definition).await {
        Ok(done) => {
            gateway.shape.present(manifest.clone(), Some(monitor));
            let how = match done {
                Redefinition::Reloaded { cleanup_failures } if !cleanup_failures.is_empty() => {
                    format!(
                        "its backend runs from the new manifest, checked against it; {} cleanup step(s) of the old one failed",
                        cleanup_failures.len()
                    )
                }
                Redefinition::Reloaded { .. } => {
                    "its backend runs from the new manifest, checked against it".to_owned()
                }
                _ => {
                    "its declared tools are served now, and nothing starts before a call".to_owned()
                }
            };
            gateway.log.line(&format!(
                "the manifest of extension {id:?} changed (a re-lock): applied; {how}"
            ));
            Some(manifest)
        }
        Err(e) => {
            gateway.log.line(&format!(
                "the manifest of extension {id:?} changed (a re-lock) but cannot be applied, so the last good one stays: {}",
                crate::call::describe(&e)
            ));
            None
        }
    }
}

/// Discovers a new extension through the host (H-2).
fn add(gateway: &Gateway, file: &Path, manifest: Manifest) -> Option<Manifest> {
    let id = manifest.id().to_owned();
    let folder = file.parent().unwrap_or(file);
    let Some((definition, monitor)) = exthost::process::definition(&manifest, folder) else {
        gateway.log.line(&format!(
            "extension {id:?} was added while serving, but an in-process extension's code is only loaded at start; a restart of serve adds it"
        ));
        return None;
    };
    // The shape first, so the new tools are filtered by their own rules
    // from the moment the host shows them.
    gateway.shape.present(manifest.clone(), Some(monitor));
    match gateway.host.discover([definition]) {
        Ok(()) => {
            gateway
                .log
                .line(&format!("extension {id:?} was added ({})", file.display()));
            Some(manifest)
        }
        Err(e) => {
            gateway.shape.forget(&id);
            gateway.log.line(&format!(
                "extension {id:?} was added but cannot be served: {}",
                crate::call::describe(&e)
            ));
            None
        }
    }
}

/// Hides an extension whose manifest was removed; its backend stops once
/// idle (at once when no call is in flight).
fn remove(gateway: &Gateway, file: &Path, live: &Manifest) {
    gateway.shape.remove(live.id());
    gateway.log.line(&format!(
        "{} was removed: extension {:?} is no longer listed or callable, and its backend stops",
        file.display(),
        live.id()
    ));
}

/// After a change of the folder, which may add or remove prompts and
/// resources too: `notifications/prompts/list_changed` and
/// `notifications/resources/list_changed`, each when `serve` declares it.
/// `false` once the client is gone.
pub(crate) async fn announce_listings(gateway: &Gateway, peer: &Peer<RoleServer>) -> bool {
    let capabilities = ServerHandler::get_info(gateway).capabilities;
    if capabilities
        .prompts
        .is_some_and(|p| p.list_changed == Some(true))
        && peer.notify_prompt_list_changed().await.is_err()
    {
        return false;
    }
    if capabilities
        .resources
        .is_some_and(|r| r.list_changed == Some(true))
        && peer.notify_resource_list_changed().await.is_err()
    {
        return false;
    }
    true
}

/// Watches `dir` until the session ends (the caller aborts it).
pub(crate) async fn watch(gateway: Gateway, dir: PathBuf) {
    let wake = Arc::new(Notify::new());
    let signal = wake.clone();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        // Reads (the watcher's own, a server's) change nothing.
        if !matches!(&event, Ok(e) if matches!(e.kind, EventKind::Access(_))) {
            signal.notify_one();
        }
    });
    let mut watcher = match watcher {
        Ok(watcher) => watcher,
        Err(e) => {
            gateway.log.line(&format!(
                "cannot watch {}: {e}; changes to the folder take effect at the next start",
                dir.display()
            ));
            return;
        }
    };
    let mut folder = Folder::new(dir, &gateway);
    folder.watch_folders(&mut watcher, &gateway);
    loop {
        wake.notified().await;
        let first = tokio::time::Instant::now();
        while first.elapsed() < MOST && tokio::time::timeout(QUIET, wake.notified()).await.is_ok() {
        }
        // New folders are watched before they are read, so a manifest
        // written into one after this look is seen by the next.
        folder.watch_folders(&mut watcher, &gateway);
        folder.look(&gateway).await;
    }
}

/// Sends `notifications/tools/list_changed` whenever the tools shown
/// change (a backend's `list_changed` reload, a reload after a crash, the
/// folder's change, shutdown), until the host or the client is gone. The
/// same in both modes: with `--expose catalog` the three meta-tools stay,
/// but what `search_tools` finds and `describe_tool` knows is what changed.
pub(crate) async fn forward_list_changes(gateway: Gateway, peer: Peer<RoleServer>) {
    let (host, shape) = (&gateway.host, &gateway.shape);
    let mut changes = host.tool_changes();
    let mut folder = shape.changes();
    let mut last = listing::fingerprint(&host.tools(), shape);
    loop {
        // A publication of the host, or a change of the folder (`watch.rs`).
        let folder_changed = tokio::select! {
            alive = changes.changed() => if alive { false } else { return },
            changed = folder.changed() => if changed.is_ok() { true } else { return },
        };
        let now = listing::fingerprint(&host.tools(), shape);
        if now != last {
            last = now;
            if peer.notify_tool_list_changed().await.is_err() {
                return;
            }
        }
        if folder_changed && !announce_listings(&gateway, &peer).await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(text: &str) -> Manifest {
        exthost::manifest::parse_manifest(text).unwrap().0
    }

    #[test]
    fn expose_and_the_idle_timeout_are_serve_s_own() {
        let base = manifest(r#"{"id":"x","runtime":{"kind":"process","command":"srv"}}"#);
        let idle = manifest(
            r#"{"id":"x","runtime":{"kind":"process","command":"srv","idleTimeoutMs":500}}"#,
        );
        let other = manifest(r#"{"id":"x","runtime":{"kind":"process","command":"other"}}"#);
        assert!(same_for_host(&base, &idle));
        assert!(!same_for_host(&base, &other));
    }
}
