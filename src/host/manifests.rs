//! Manifests in the host (docs/spec.md section 4): discovery from a folder, hook
//! and eager triggers, dormant tools, and the grant that a declaration
//! mismatch revokes.
//!
//! Architecture invariant: depends on `code.rs`, `error.rs` and
//! `extension.rs` within `host/`; nothing below it (errors, context,
//! extension definitions) depends on it; only the shell and `mod.rs` do.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::code::{ExtensionError, ToolDescriptor};
use super::error::{HostError, ManifestFileFailure};
use super::extension::{Extension, ExtensionDefinition, Factory};
use crate::manifest::{Classification, Manifest, Notice, Runtime, Trigger, load_manifest_dir};

/// Factories for in-process manifest extensions, by extension id. A
/// manifest says what an extension is; the embedding program supplies the
/// code of in-process ones.
#[derive(Clone, Default)]
pub struct InProcessFactories {
    factories: HashMap<String, Factory>,
}

impl std::fmt::Debug for InProcessFactories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.factories.keys()).finish()
    }
}

impl InProcessFactories {
    /// No factories.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the factory of extension `id`.
    pub fn with<E, F>(mut self, id: impl Into<String>, factory: F) -> Self
    where
        E: Extension,
        F: Fn() -> Result<E, ExtensionError> + Send + Sync + 'static,
    {
        let id = id.into();
        let definition = ExtensionDefinition::new(id.clone(), factory);
        self.factories.insert(id, definition.factory);
        self
    }
}

/// What a successful folder discovery found.
#[derive(Debug, Clone, PartialEq)]
pub struct ManifestDiscovery {
    /// Each extension with its class and earliest trigger (M-3), in folder
    /// order.
    pub extensions: Vec<DiscoveredManifest>,
    /// One-line notices about retired keys (M-7), with their file.
    pub notices: Vec<(PathBuf, Notice)>,
}

/// One discovered manifest extension.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoveredManifest {
    /// Its id.
    pub id: String,
    /// Its class (M-3).
    pub classification: Classification,
    /// What starts it first (M-3).
    pub earliest_trigger: Trigger,
    /// For a `process` runtime, the view of its children (pid, bounded
    /// stderr, shutdown outcome, `list_changed` outcomes).
    #[cfg(feature = "process")]
    pub process: Option<crate::process::ProcessMonitor>,
}

impl ExtensionDefinition {
    /// A definition for a manifest extension: its tools are published as
    /// `<extension>:<tool>`; declared tools appear as dormant descriptors at
    /// discovery and must match what it registers (M-4, M-5); a hook
    /// lifecycle starts it on its subscribed events, and a manifest without
    /// declarations is eager (M-3).
    pub fn from_manifest<E, F>(manifest: &Manifest, factory: F) -> Self
    where
        E: Extension,
        F: Fn() -> Result<E, ExtensionError> + Send + Sync + 'static,
    {
        Self::new(manifest.id(), factory).with_manifest(manifest)
    }

    pub(crate) fn with_manifest(mut self, manifest: &Manifest) -> Self {
        self.namespaced = true;
        if !manifest.declared_tools().is_empty() {
            self.declared_tools = Some(
                manifest
                    .declared_tools()
                    .iter()
                    .map(|t| {
                        ToolDescriptor::new(t.name(), t.description(), t.input_schema().clone())
                    })
                    .collect(),
            );
        }
        // M-5, M-8: a manifest with declarations registers exactly its
        // declared providers (none, when it declares tools only).
        if manifest.has_declarations() {
            self.declared_providers = Some(
                manifest
                    .declared_providers()
                    .iter()
                    .map(crate::manifest::DeclaredProvider::record)
                    .collect(),
            );
        }
        self.triggers = manifest.triggers();
        self.dependencies = manifest.dependencies().to_vec();
        if let Some(deadline) = manifest.activation_deadline() {
            self = self.with_activation_deadline(deadline);
        }
        if let Some(deadline) = manifest.cleanup_deadline() {
            self = self.with_cleanup_deadline(deadline);
        }
        self.manifest = Some(Arc::new(manifest.clone()));
        self
    }
}

/// Loads `dir` and turns every manifest into a definition, or reports every
/// file that cannot be one.
pub(crate) fn definitions_from_dir(
    dir: &Path,
    factories: &InProcessFactories,
) -> Result<(Vec<ExtensionDefinition>, ManifestDiscovery), HostError> {
    let loaded = load_manifest_dir(dir).map_err(|batch| HostError::ManifestDiscovery {
        failures: batch
            .errors()
            .iter()
            .map(|e| ManifestFileFailure {
                file: e.file().map(Path::to_path_buf),
                extension_id: e.extension_id().map(str::to_owned),
                reason: e.reason_code(),
                message: e.message().to_owned(),
            })
            .collect(),
    })?;
    let mut failures = Vec::new();
    let mut definitions = Vec::new();
    let mut discovery = ManifestDiscovery {
        extensions: Vec::new(),
        notices: Vec::new(),
    };
    for entry in loaded {
        let manifest = &entry.manifest;
        let failure = |reason, message: String| ManifestFileFailure {
            file: Some(entry.path.clone()),
            extension_id: Some(manifest.id().to_owned()),
            reason,
            message,
        };
        #[cfg(feature = "process")]
        let mut process = None;
        match manifest.runtime() {
            #[cfg(feature = "process")]
            Runtime::Process(_) => {
                if let Some((definition, monitor)) =
                    crate::process::definition(manifest, &entry.directory)
                {
                    definitions.push(definition);
                    process = Some(monitor);
                }
            }
            #[cfg(not(feature = "process"))]
            Runtime::Process(_) => failures.push(failure(
                "process_runtime_unsupported",
                "process (MCP stdio) extensions need exthost's `process` feature".to_owned(),
            )),
            Runtime::InProcess => match factories.factories.get(manifest.id()) {
                None => failures.push(failure(
                    "no_in_process_factory",
                    format!("no in-process factory was supplied for {:?}", manifest.id()),
                )),
                Some(factory) => definitions.push(
                    ExtensionDefinition::from_factory(manifest.id(), factory.clone())
                        .with_manifest(manifest),
                ),
            },
        }
        discovery.extensions.push(DiscoveredManifest {
            id: manifest.id().to_owned(),
            classification: manifest.classification(),
            earliest_trigger: manifest.earliest_trigger(),
            #[cfg(feature = "process")]
            process,
        });
        discovery.notices.extend(
            entry
                .notices
                .iter()
                .map(|n| (entry.path.clone(), n.clone())),
        );
    }
    if failures.is_empty() {
        Ok((definitions, discovery))
    } else {
        Err(HostError::ManifestDiscovery { failures })
    }
}

/// True when `trigger` list makes the extension eager (M-3).
pub(crate) fn is_eager(triggers: &[Trigger]) -> bool {
    triggers.iter().any(|t| matches!(t, Trigger::Eager))
}

/// The events that start an extension with these triggers (M-3).
pub(crate) fn trigger_events(triggers: &[Trigger]) -> Vec<String> {
    triggers
        .iter()
        .flat_map(|t| match t {
            Trigger::HookEvent { events } => events.clone(),
            _ => Vec::new(),
        })
        .collect()
}
