//! Manifests in the host (docs/spec.md section 4): discovery from a folder, hook
//! and eager triggers, dormant tools, and the grant that a declaration
//! mismatch revokes.
//!
//! Architecture invariant: depends on `code.rs`, `error.rs` and
//! `extension.rs` within `host/`; nothing below it (errors, context,
//! extension definitions) depends on it; only the shell and `mod.rs` do.
//! It never names a runtime adapter: runtimes other than in-process code
//! (the `process` runtime, `crate::process`) register themselves as a
//! [`ManifestRuntime`] in [`InProcessFactories`].

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::code::{ExtensionError, ToolDescriptor};
use super::error::{HostError, ManifestFileFailure};
use super::extension::{Extension, ExtensionDefinition, Factory};
use crate::manifest::{Classification, Manifest, Notice, Runtime, Trigger, load_manifest_dir};

/// A manifest runtime other than in-process code: it turns the manifests it
/// serves into extension definitions. The `process` runtime (MCP stdio
/// servers, `exthost::process`) is one; it registers itself in
/// [`InProcessFactories::new`] when the crate's `process` feature is on.
pub trait ManifestRuntime: Send + Sync + 'static {
    /// The definition of `manifest`'s extension, whose folder is `folder`,
    /// and what the embedding program may watch of it; `None` when
    /// `manifest` is not of this runtime.
    fn definition(
        &self,
        manifest: &Manifest,
        folder: &Path,
    ) -> Option<(ExtensionDefinition, Option<RuntimeView>)>;
}

/// What a runtime lets the embedding program watch of one discovered
/// extension (the `process` runtime's is its `ProcessMonitor`), read back
/// with [`RuntimeView::get`].
#[derive(Clone)]
pub struct RuntimeView(Arc<dyn Any + Send + Sync>);

impl RuntimeView {
    /// Wraps a runtime's view.
    pub fn new<T: Any + Send + Sync>(view: T) -> Self {
        Self(Arc::new(view))
    }

    /// The view, if it is a `T`.
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for RuntimeView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RuntimeView")
    }
}

/// Two views are equal when they are the same view.
impl PartialEq for RuntimeView {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The runtimes of a manifest folder, by the registry of runtimes: the
/// factories of in-process extensions, by extension id (a manifest says what
/// an extension is; the embedding program supplies the code of in-process
/// ones), and every other [`ManifestRuntime`].
#[derive(Clone)]
pub struct InProcessFactories {
    factories: HashMap<String, Factory>,
    runtimes: Vec<Arc<dyn ManifestRuntime>>,
}

impl std::fmt::Debug for InProcessFactories {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.factories.keys()).finish()
    }
}

impl Default for InProcessFactories {
    fn default() -> Self {
        Self::new()
    }
}

/// Without the `process` feature no runtime but in-process code is built
/// in. (With it, `InProcessFactories::new` is in `crate::process`, which
/// registers itself.)
#[cfg(not(feature = "process"))]
impl InProcessFactories {
    /// No factories, and the built-in runtimes (none without the
    /// `process` feature).
    pub fn new() -> Self {
        Self::without_runtimes()
    }
}

impl InProcessFactories {
    /// No factories and no runtime but in-process code: a `process`
    /// manifest is refused (`process_runtime_unsupported`) unless a runtime
    /// is added with [`with_runtime`](Self::with_runtime).
    pub fn without_runtimes() -> Self {
        Self {
            factories: HashMap::new(),
            runtimes: Vec::new(),
        }
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

    /// Adds a runtime; the first runtime that takes a manifest defines its
    /// extension.
    pub fn with_runtime(mut self, runtime: impl ManifestRuntime) -> Self {
        self.runtimes.push(Arc::new(runtime));
        self
    }

    fn definition(
        &self,
        manifest: &Manifest,
        folder: &Path,
    ) -> Option<(ExtensionDefinition, Option<RuntimeView>)> {
        self.runtimes
            .iter()
            .find_map(|runtime| runtime.definition(manifest, folder))
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
    /// What its runtime lets the program watch: for a `process` runtime,
    /// the view of its children (pid, bounded stderr, shutdown outcome,
    /// `list_changed` outcomes), also read as `DiscoveredManifest::process`.
    pub runtime: Option<RuntimeView>,
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

fn file_failures(batch: &crate::manifest::ManifestBatchError) -> Vec<ManifestFileFailure> {
    batch
        .errors()
        .iter()
        .map(|e| ManifestFileFailure {
            file: e.file().map(Path::to_path_buf),
            extension_id: e.extension_id().map(str::to_owned),
            reason: e.reason_code(),
            message: e.message().to_owned(),
        })
        .collect()
}

/// Loads `dir` and turns every manifest into a definition, or reports every
/// file that cannot be one.
pub(crate) fn definitions_from_dir(
    dir: &Path,
    factories: &InProcessFactories,
) -> Result<(Vec<ExtensionDefinition>, ManifestDiscovery), HostError> {
    let loaded = load_manifest_dir(dir).map_err(|batch| HostError::ManifestDiscovery {
        failures: file_failures(&batch),
    })?;
    let (definitions, discovery, failures) = definitions_of(loaded, factories);
    if failures.is_empty() {
        Ok((definitions, discovery))
    } else {
        Err(HostError::ManifestDiscovery { failures })
    }
}

/// What a lenient discovery found: the definitions of the valid
/// manifests, what they are, and every manifest left out.
pub(crate) type ValidDefinitions = (
    Vec<ExtensionDefinition>,
    ManifestDiscovery,
    Vec<ManifestFileFailure>,
);

/// Like [`definitions_from_dir`], but a manifest that cannot be a
/// definition is left out and reported instead of refusing the folder.
/// Only a failure that names no manifest file (the folder itself
/// unreadable) still refuses it.
pub(crate) fn valid_definitions_from_dir(
    dir: &Path,
    factories: &InProcessFactories,
) -> Result<ValidDefinitions, HostError> {
    let (loaded, mut skipped) = match load_manifest_dir(dir) {
        Ok(loaded) => (loaded, Vec::new()),
        Err(batch) => {
            let failures = file_failures(&batch);
            if failures.iter().any(|f| f.file.is_none()) {
                return Err(HostError::ManifestDiscovery { failures });
            }
            let refused: std::collections::HashSet<PathBuf> =
                failures.iter().filter_map(|f| f.file.clone()).collect();
            (valid_manifests(dir, &refused), failures)
        }
    };
    let (definitions, discovery, failures) = definitions_of(loaded, factories);
    skipped.extend(failures);
    Ok((definitions, discovery, skipped))
}

/// The manifests of `dir`'s folders, in folder-name order, but for the
/// files in `refused` (the folder's batch already reported them).
fn valid_manifests(
    dir: &Path,
    refused: &std::collections::HashSet<PathBuf>,
) -> Vec<crate::manifest::LoadedManifest> {
    let Ok(reader) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut folders: Vec<PathBuf> = reader
        .flatten()
        .filter(|e| e.file_name().as_encoded_bytes().first() != Some(&b'.'))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort_unstable();
    folders
        .into_iter()
        .filter_map(|folder| {
            let path = folder.join(crate::manifest::MANIFEST_FILE_NAME);
            if refused.contains(&path) {
                return None;
            }
            let (manifest, notices) = crate::manifest::load_manifest_file(&path).ok()?;
            Some(crate::manifest::LoadedManifest {
                manifest,
                path,
                directory: folder,
                notices,
            })
        })
        .collect()
}

/// Turns loaded manifests into definitions; those that cannot be one are
/// the failures.
fn definitions_of(
    loaded: Vec<crate::manifest::LoadedManifest>,
    factories: &InProcessFactories,
) -> ValidDefinitions {
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
        let mut runtime = None;
        match manifest.runtime() {
            Runtime::Process(_) => match factories.definition(manifest, &entry.directory) {
                Some((definition, view)) => {
                    definitions.push(definition);
                    runtime = view;
                }
                None => failures.push(failure(
                    "process_runtime_unsupported",
                    "process (MCP stdio) extensions need exthost's `process` feature".to_owned(),
                )),
            },
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
            runtime,
        });
        discovery.notices.extend(
            entry
                .notices
                .iter()
                .map(|n| (entry.path.clone(), n.clone())),
        );
    }
    (definitions, discovery, failures)
}
