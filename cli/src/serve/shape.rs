//! What a client sees of each tool: the whole tool (`title`,
//! `annotations`, `outputSchema`, `icons`, `_meta` beside the name,
//! description and input schema) and whether it is shown at all.
//!
//! A declared tool's fields are its manifest's (`exthost lock` pinned them,
//! and a live server whose fields differ fails its activation, M-5). A live
//! tool without a declaration (a legacy-eager server) shows the fields of
//! its server's latest listing.
//!
//! Filtering: a tool is shown when its manifest's `expose` rules show its
//! own name and `serve --allow`/`--deny` show its API name. It happens
//! after the declaration match, on what the client sees only: a hidden
//! tool is still declared, listed by its server and checked.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use exthost::host::{ManifestDiscovery, ToolInfo};
use exthost::manifest::{
    ExposeRules, FIELD_MISMATCH_REASON_CODES, ListingKind, MANIFEST_FILE_NAME, Manifest, Runtime,
    load_manifest_file, match_listing, match_tool_fields, split_runtime_tool_name,
};
use exthost::process::ProcessMonitor;
use serde_json::Value;

/// One extension as `serve` presents it.
#[derive(Debug, Default)]
struct Extension {
    manifest: Option<Manifest>,
    monitor: Option<ProcessMonitor>,
    /// Its manifest was removed from the folder while serving: nothing of
    /// it is shown or callable, and its backend stops (`watch.rs`).
    removed: bool,
}

/// The extensions' manifests and monitors, and the command line's rules.
#[derive(Debug)]
pub(crate) struct Shape {
    /// Changed while serving when the folder changes (`watch.rs`).
    extensions: RwLock<HashMap<String, Extension>>,
    /// `--allow` and `--deny`, over API names.
    rules: ExposeRules,
    /// Counts the changes of what the shape shows, for the `list_changed`
    /// forwarder.
    changes: tokio::sync::watch::Sender<u64>,
}

/// Why a tool is hidden: by its manifest or by the command line, and the
/// pattern (empty when no `allow` pattern matched).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hidden {
    pub(crate) by: &'static str,
    pub(crate) pattern: String,
}

impl Hidden {
    /// In words, for an error message.
    pub(crate) fn describe(&self) -> String {
        match (self.by, self.pattern.as_str()) {
            (REMOVED, _) => "its manifest was removed from the served folder".to_owned(),
            (by, "") => format!("no pattern of {by} allows it"),
            (by, pattern) => format!("{by} hides it with the pattern {pattern:?}"),
        }
    }
}

/// [`Hidden::by`] of a tool whose manifest was removed while serving.
pub(crate) const REMOVED: &str = "removed";

impl Shape {
    /// Reads the manifest of every discovered extension in `dir` (one
    /// `<folder>/extension.json` each; a manifest that no longer loads
    /// contributes nothing) and takes each one's process monitor.
    pub(crate) fn new(dir: &Path, discovery: &ManifestDiscovery, rules: ExposeRules) -> Self {
        let mut extensions: HashMap<String, Extension> = discovery
            .extensions
            .iter()
            .map(|d| {
                (
                    d.id.clone(),
                    Extension {
                        manifest: None,
                        monitor: d.process(),
                        removed: false,
                    },
                )
            })
            .collect();
        let mut folders: Vec<_> = std::fs::read_dir(dir)
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        folders.sort();
        for folder in folders {
            let file = folder.join(MANIFEST_FILE_NAME);
            if !file.is_file() {
                continue;
            }
            if let Ok((manifest, _)) = load_manifest_file(&file)
                && let Some(extension) = extensions.get_mut(manifest.id())
                && extension.manifest.is_none()
            {
                extension.manifest = Some(manifest);
            }
        }
        Self {
            extensions: RwLock::new(extensions),
            rules,
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, Extension>> {
        self.extensions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Changes the extensions under the write lock, then tells the
    /// `list_changed` forwarder.
    fn change<T>(&self, f: impl FnOnce(&mut HashMap<String, Extension>) -> T) -> T {
        let out = f(&mut self
            .extensions
            .write()
            .unwrap_or_else(PoisonError::into_inner));
        self.changes.send_modify(|n| *n += 1);
        out
    }

    /// A receiver that sees every change of the shape.
    pub(crate) fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The process monitor of extension `id`, if it is a process one.
    pub(crate) fn monitor(&self, id: &str) -> Option<ProcessMonitor> {
        self.read().get(id)?.monitor.clone()
    }

    /// The manifest `serve` presents extension `id` with, and whether it
    /// was removed.
    pub(crate) fn manifest(&self, id: &str) -> Option<(Manifest, bool)> {
        let extensions = self.read();
        let e = extensions.get(id)?;
        Some((e.manifest.clone()?, e.removed))
    }

    /// Whether a served extension (not removed) pins completions
    /// (`deferred.completions`).
    pub(crate) fn declares_completions(&self) -> bool {
        self.read().values().any(|e| {
            !e.removed
                && e.manifest
                    .as_ref()
                    .is_some_and(Manifest::declares_completions)
        })
    }

    /// Presents a manifest: a new extension's (with its monitor), or a new
    /// manifest of a known one whose tools and runtime the host already
    /// holds (its `expose` rules or idle timeout changed), or a removed
    /// one back.
    pub(crate) fn present(&self, manifest: Manifest, monitor: Option<ProcessMonitor>) {
        self.change(|extensions| {
            let e = extensions.entry(manifest.id().to_owned()).or_default();
            e.manifest = Some(manifest);
            e.removed = false;
            if monitor.is_some() {
                e.monitor = monitor;
            }
        });
    }

    /// Hides extension `id`, whose manifest was removed.
    pub(crate) fn remove(&self, id: &str) {
        self.change(|extensions| {
            if let Some(e) = extensions.get_mut(id) {
                e.removed = true;
            }
        });
    }

    /// Forgets extension `id` (a new one the host refused).
    pub(crate) fn forget(&self, id: &str) {
        self.change(|extensions| extensions.remove(id));
    }

    /// The process extensions that stop when idle, with their timeouts: a
    /// removed one at once, others after their manifest's `idleTimeoutMs`,
    /// or else `default` (`serve --idle-stop`).
    pub(crate) fn idle_backends(&self, default: Option<Duration>) -> Vec<super::busy::IdleBackend> {
        self.read()
            .iter()
            .filter_map(|(id, e)| {
                let Runtime::Process(runtime) = e.manifest.as_ref()?.runtime() else {
                    return None;
                };
                let timeout = if e.removed {
                    Duration::ZERO
                } else {
                    runtime
                        .idle_timeout_ms()
                        .map(Duration::from_millis)
                        .or(default)?
                };
                Some(super::busy::IdleBackend {
                    id: id.clone(),
                    timeout,
                    grace: runtime.shutdown_timeout_ms().map_or(
                        exthost::process::DEFAULT_SHUTDOWN_GRACE,
                        Duration::from_millis,
                    ),
                    monitor: e.monitor.clone()?,
                })
            })
            .collect()
    }

    /// The tool as MCP lists it under its API name: the declared tool's
    /// fields when it is declared, else those of its server's latest
    /// listing; the name, description and input schema are the host's.
    pub(crate) fn whole_tool(&self, info: &ToolInfo<'_>) -> Value {
        let mut tool = serde_json::Map::new();
        let extensions = self.read();
        if let Some((extension, name)) = split_runtime_tool_name(info.name)
            && let Some(e) = extensions.get(extension)
        {
            let declared = e
                .manifest
                .as_ref()
                .and_then(|m| m.declared_tools().iter().find(|t| t.name() == name))
                .map(exthost::manifest::DeclaredTool::to_mcp_json);
            let listed = || {
                e.monitor.as_ref().and_then(|m| {
                    m.listed_tools()
                        .iter()
                        .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
                        .cloned()
                })
            };
            if let Some(Value::Object(map)) = declared.or_else(listed) {
                tool = map;
            }
        }
        tool.insert("name".to_owned(), Value::String(info.api_name.to_owned()));
        tool.insert(
            "description".to_owned(),
            Value::String(info.description.to_owned()),
        );
        let schema = match info.input_schema {
            Value::Object(_) => info.input_schema.clone(),
            _ => serde_json::json!({"type": "object"}),
        };
        tool.insert("inputSchema".to_owned(), schema);
        Value::Object(tool)
    }

    /// Why the tool is hidden, or `None` when it is shown.
    pub(crate) fn hidden(&self, info: &ToolInfo<'_>) -> Option<Hidden> {
        let extensions = self.read();
        let owner = split_runtime_tool_name(info.name)
            .and_then(|(extension, name)| Some((extensions.get(extension)?, name)));
        if owner.is_some_and(|(e, _)| e.removed) {
            return Some(Hidden {
                by: REMOVED,
                pattern: String::new(),
            });
        }
        if let Some((e, name)) = owner
            && let Some(manifest) = e.manifest.as_ref()
            && let Some((list, pattern)) = manifest.expose().hidden_by(name)
        {
            return Some(Hidden {
                by: if list == "deny" {
                    "the manifest's expose.deny"
                } else {
                    "the manifest's expose.allow"
                },
                pattern: pattern.to_owned(),
            });
        }
        self.rules
            .hidden_by(info.api_name)
            .map(|(list, pattern)| Hidden {
                by: if list == "deny" {
                    "serve --deny"
                } else {
                    "serve --allow"
                },
                pattern: pattern.to_owned(),
            })
    }

    /// Whether the tool is shown.
    pub(crate) fn shows(&self, info: &ToolInfo<'_>) -> bool {
        self.hidden(info).is_none()
    }

    /// For an activation that failed because a listed tool's other fields
    /// differ from its declaration (`cause` one of the field-mismatch
    /// codes): the drifted tool, from the extension's latest listing.
    pub(crate) fn drifted_tool(&self, extension: &str, cause: &str) -> Option<String> {
        if !FIELD_MISMATCH_REASON_CODES.contains(&cause) {
            return None;
        }
        let extensions = self.read();
        let e = extensions.get(extension)?;
        let listed = e.monitor.as_ref()?.listed_tools();
        match_tool_fields(e.manifest.as_ref()?.declared_tools(), &listed)
            .err()
            .map(|m| m.tool().to_owned())
    }

    /// For an activation that failed because a pinned list (prompts,
    /// resources, resource templates) differs from the server's listing
    /// (`cause` one of those reason codes): the first entry that differs.
    pub(crate) fn drifted_item(&self, extension: &str, cause: &str) -> Option<String> {
        let kind = ListingKind::ALL
            .into_iter()
            .find(|k| k.mismatch_code() == cause)?;
        let (manifest, _) = self.manifest(extension)?;
        let live = self
            .monitor(extension)?
            .listed(kind)
            .map(|l| l.as_ref().clone())
            .unwrap_or_default();
        match_listing(kind, manifest.declared_listing(kind)?, &live)
            .err()
            .map(|m| m.item().to_owned())
    }
}
