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

use exthost::host::{ManifestDiscovery, ToolInfo};
use exthost::manifest::{
    ExposeRules, FIELD_MISMATCH_REASON_CODES, MANIFEST_FILE_NAME, Manifest, load_manifest_file,
    match_tool_fields, split_runtime_tool_name,
};
use exthost::process::ProcessMonitor;
use serde_json::Value;

/// One extension as `serve` presents it.
#[derive(Debug, Default)]
struct Extension {
    manifest: Option<Manifest>,
    monitor: Option<ProcessMonitor>,
}

/// The extensions' manifests and monitors, and the command line's rules.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    extensions: HashMap<String, Extension>,
    /// `--allow` and `--deny`, over API names.
    rules: ExposeRules,
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
            (by, "") => format!("no pattern of {by} allows it"),
            (by, pattern) => format!("{by} hides it with the pattern {pattern:?}"),
        }
    }
}

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
        Self { extensions, rules }
    }

    /// The tool as MCP lists it under its API name: the declared tool's
    /// fields when it is declared, else those of its server's latest
    /// listing; the name, description and input schema are the host's.
    pub(crate) fn whole_tool(&self, info: &ToolInfo<'_>) -> Value {
        let mut tool = serde_json::Map::new();
        if let Some((extension, name)) = split_runtime_tool_name(info.name)
            && let Some(e) = self.extensions.get(extension)
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
        if let Some((extension, name)) = split_runtime_tool_name(info.name)
            && let Some(manifest) = self
                .extensions
                .get(extension)
                .and_then(|e| e.manifest.as_ref())
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
        let e = self.extensions.get(extension)?;
        let listed = e.monitor.as_ref()?.listed_tools();
        match_tool_fields(e.manifest.as_ref()?.declared_tools(), &listed)
            .err()
            .map(|m| m.tool().to_owned())
    }
}
