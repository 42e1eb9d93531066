//! The tool registry: names, owners, publication order and model-facing API
//! names, in persistent maps so that cloning it (for a candidate or a
//! snapshot) costs O(1) and publishing is a swap (H-4, H-9, M-6, INV-10).
//!
//! Architecture invariant: the registry depends only on [`super::ids`] and
//! [`super::mutant`] within the core; it knows nothing of extensions'
//! lifecycles or of the host's operations.

use std::fmt;
use std::sync::Arc;

use rpds::RedBlackTreeMapSync;
use sha2::{Digest, Sha256};
use thiserror::Error;

use super::ids::ToolRef;
use super::mutant::Mutant;
use crate::error::codes;
use crate::id::{IdError, validate_id_segment};

mod providers;
mod renamed;

pub use providers::{MAX_PROVIDER_DISPLAY_NAME_BYTES, ModelRecord, ProviderEntry, ProviderRecord};

/// The longest model-facing API name (M-6).
pub const MAX_API_NAME_BYTES: usize = 64;

/// What the core knows of a tool: pure data, no handler.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct ToolSpec {
    /// The name the tool was registered or declared under.
    pub name: String,
    /// Its description.
    pub description: String,
    /// SHA-256 of its canonical input schema, lowercase hex (M-5).
    pub schema_digest: String,
}

impl ToolSpec {
    /// A spec from its three parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        schema_digest: impl Into<String>,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            schema_digest: schema_digest.into(),
        }
    }
}

/// Who contributed a registry entry.
///
/// An extension's id is held as a shared `Arc<str>`: the entries one
/// activation commits share one, and admitting a call clones a pointer,
/// not the id's text.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde-state",
    derive(serde::Deserialize),
    serde(from = "OwnerWire")
)]
pub enum Owner {
    /// A base tool given to the host at construction.
    Base,
    /// An extension, by id.
    Extension(Arc<str>),
}

/// The serialized form of an [`Owner`].
#[cfg(feature = "serde-state")]
#[derive(serde::Deserialize)]
pub(crate) enum OwnerWire {
    Base,
    Extension(String),
}

#[cfg(feature = "serde-state")]
impl From<OwnerWire> for Owner {
    fn from(w: OwnerWire) -> Self {
        match w {
            OwnerWire::Base => Owner::Base,
            OwnerWire::Extension(id) => Owner::extension(&id),
        }
    }
}

impl Owner {
    /// The owner `Extension(id)`.
    pub fn extension(id: &str) -> Self {
        Owner::Extension(Arc::from(id))
    }

    /// The extension's id; `None` for a base tool.
    pub fn extension_id(&self) -> Option<&str> {
        match self {
            Owner::Extension(id) => Some(id),
            Owner::Base => None,
        }
    }
}

/// Serialized as the derived form of `Base | Extension(String)` was:
/// `"Base"` or `{"Extension": id}`.
impl serde::Serialize for Owner {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Owner::Base => serializer.serialize_unit_variant("Owner", 0, "Base"),
            Owner::Extension(id) => {
                serializer.serialize_newtype_variant("Owner", 1, "Extension", &**id)
            }
        }
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Owner::Base => f.write_str("base"),
            Owner::Extension(id) => f.write_str(id),
        }
    }
}

/// What calling an entry does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum Binding {
    /// A live handler, by the handle the core gave out.
    Live(ToolRef),
    /// A dormant descriptor of a declared tool (M-4): calling it first
    /// activates the owner.
    Dormant,
}

/// One entry of the registry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct RegistryEntry {
    /// Runtime name: an ID-1 segment, or `<extension>:<tool>`.
    pub name: String,
    /// Model-facing name, `[A-Za-z0-9_-]{1,64}`, unique (M-6).
    pub api_name: String,
    /// Who contributed it.
    pub owner: Owner,
    /// Live handler or dormant descriptor.
    pub binding: Binding,
    /// Description.
    pub description: String,
    /// Schema digest.
    pub schema_digest: String,
    seq: u64,
}

/// Why a tool could not be added to the registry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub enum RegistryError {
    /// The name is not an ID-1 segment nor `<extension>:<tool>`.
    #[error(
        "{}: tool name {name:?} is invalid: {}",
        self.code(),
        crate::error::CodedError::message(.reason)
    )]
    InvalidName {
        /// The refused name.
        name: String,
        /// Why.
        reason: IdError,
    },
    /// The name is already live, or registered twice in one batch.
    #[error("{}: tool name {name:?} is already taken by {holder}", self.code())]
    Duplicate {
        /// The refused name.
        name: String,
        /// Who holds it.
        holder: Owner,
    },
    /// The description holds a control character (other than line breaks
    /// and tab) or a bidirectional override or isolate (M-8): text that
    /// reaches a language model or a screen could hide or reorder what it
    /// says.
    #[error("{}: the description of tool {name:?} is refused: {reason}", self.code())]
    InvalidDescription {
        /// The tool.
        name: String,
        /// What is wrong, with its reason code.
        reason: crate::text::TextError,
    },
    /// A provider id is already live, or registered twice in one batch
    /// (M-8).
    #[error("{}: provider id {provider:?} is already taken by {holder}", self.code())]
    ProviderClash {
        /// The refused provider id.
        provider: String,
        /// Who holds it.
        holder: Owner,
    },
    /// A provider breaks M-1/M-8: a bad provider or model id, a repeated
    /// model id, or a display name out of bounds or with refused text.
    #[error("{}: provider {provider:?} is refused: {message}", self.code())]
    InvalidProvider {
        /// The provider id as given.
        provider: String,
        /// What is wrong.
        message: String,
    },
}

impl RegistryError {
    /// `TOOL_NAME_INVALID`, `TOOL_DUPLICATE`, `TOOL_DESCRIPTION_INVALID`,
    /// `EXTENSION_PROVIDER_CLASH` or `PROVIDER_INVALID`.
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::InvalidName { .. } => codes::TOOL_NAME_INVALID,
            RegistryError::Duplicate { .. } => codes::TOOL_DUPLICATE,
            RegistryError::InvalidDescription { .. } => codes::TOOL_DESCRIPTION_INVALID,
            RegistryError::ProviderClash { .. } => codes::EXTENSION_PROVIDER_CLASH,
            RegistryError::InvalidProvider { .. } => codes::PROVIDER_INVALID,
        }
    }
}

crate::coded_by_display!(RegistryError);

/// Checks a runtime tool name: one ID-1 segment, or two joined by `:`.
pub fn validate_tool_name(name: &str) -> Result<(), RegistryError> {
    let invalid = |reason| RegistryError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    match name.split_once(':') {
        None => validate_id_segment(name).map_err(invalid),
        Some((ext, tool)) => {
            validate_id_segment(ext).map_err(invalid)?;
            validate_id_segment(tool).map_err(invalid)
        }
    }
}

/// The persistent tool registry, with the live providers (M-8) beside the
/// tools, so that one value always holds both of one publication.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct ToolRegistry {
    by_name: RedBlackTreeMapSync<String, RegistryEntry>,
    order: RedBlackTreeMapSync<u64, String>,
    by_api: RedBlackTreeMapSync<String, String>,
    next_seq: u64,
    providers: providers::ProviderTable,
    #[cfg(feature = "mutants")]
    mutant: Option<Mutant>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same registry running a seeded bug (its registry probes only).
    #[cfg(feature = "mutants")]
    pub fn with_mutant(mut self, mutant: Option<Mutant>) -> Self {
        self.mutant = mutant;
        self
    }

    /// True when this registry runs the seeded bug `m`; always `false`
    /// without the `mutants` feature.
    #[cfg(feature = "mutants")]
    fn mutant(&self, m: Mutant) -> bool {
        self.mutant == Some(m)
    }

    #[cfg(not(feature = "mutants"))]
    fn mutant(&self, _: Mutant) -> bool {
        false
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.by_name.size()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The entry with this runtime name.
    pub fn get(&self, name: &str) -> Option<&RegistryEntry> {
        self.by_name.get(name)
    }

    /// The entry with this model-facing API name.
    pub fn get_by_api_name(&self, api_name: &str) -> Option<&RegistryEntry> {
        self.by_api.get(api_name).and_then(|n| self.by_name.get(n))
    }

    /// Entries in publication order (H-9).
    pub fn iter(&self) -> impl Iterator<Item = &RegistryEntry> + '_ {
        self.order.values().filter_map(|n| self.by_name.get(n))
    }

    /// Runtime names in publication order.
    pub fn names(&self) -> Vec<String> {
        self.iter().map(|e| e.name.clone()).collect()
    }

    /// Number of API names held: exactly [`ToolRegistry::len`] when every
    /// entry holds one and no removed entry still does (INV-10).
    pub fn api_name_count(&self) -> usize {
        self.by_api.size()
    }

    /// Adds one entry at the end of the publication order, validating its
    /// name and uniqueness, and assigning its API name.
    pub fn insert(
        &mut self,
        spec: &ToolSpec,
        owner: Owner,
        binding: Binding,
    ) -> Result<(), RegistryError> {
        self.insert_keeping(spec, owner, binding, None)
    }

    /// [`ToolRegistry::insert`], keeping the API name `keep` when it is free:
    /// a live tool that replaces its dormant descriptor keeps the
    /// descriptor's API name (INV-10).
    pub fn insert_keeping(
        &mut self,
        spec: &ToolSpec,
        owner: Owner,
        binding: Binding,
        keep: Option<String>,
    ) -> Result<(), RegistryError> {
        self.insert_reserving(
            spec,
            owner,
            binding,
            keep,
            &std::collections::BTreeSet::new(),
        )
    }

    /// [`ToolRegistry::insert_keeping`], where a new API name is never one
    /// of `reserved` (the API names later inserts of the same commit keep).
    pub fn insert_reserving(
        &mut self,
        spec: &ToolSpec,
        owner: Owner,
        binding: Binding,
        keep: Option<String>,
        reserved: &std::collections::BTreeSet<String>,
    ) -> Result<(), RegistryError> {
        check_spec(spec)?;
        if let Some(held) = self.by_name.get(&spec.name) {
            return Err(RegistryError::Duplicate {
                name: spec.name.clone(),
                holder: held.owner.clone(),
            });
        }
        let api_name = match keep {
            Some(api) if !self.by_api.contains_key(&api) => api,
            _ => self.free_api_name(&spec.name, reserved),
        };
        self.by_api.insert_mut(api_name.clone(), spec.name.clone());
        self.publish_last(spec, api_name, owner, binding);
        Ok(())
    }

    /// Writes the entry for `spec` at the end of the publication order.
    fn publish_last(&mut self, spec: &ToolSpec, api_name: String, owner: Owner, binding: Binding) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert_mut(seq, spec.name.clone());
        self.by_name.insert_mut(
            spec.name.clone(),
            RegistryEntry {
                name: spec.name.clone(),
                api_name,
                owner,
                binding,
                description: spec.description.clone(),
                schema_digest: spec.schema_digest.clone(),
                seq,
            },
        );
    }

    /// Replaces the entry named `spec.name` that `owner` holds bound to
    /// `held` by `spec` bound to `binding`: what [`ToolRegistry::remove`]
    /// and then [`ToolRegistry::insert_keeping`] with the removed API name
    /// do (the entry moves to the end of the publication order and keeps
    /// its API name), in fewer map updates, the API-name index untouched.
    /// Validates `spec` as an insert does, before changing anything;
    /// `Ok(false)`, changing nothing, when no such entry is held or its API
    /// name would not be freed by a removal.
    pub fn replace(
        &mut self,
        spec: &ToolSpec,
        owner: &Owner,
        held: Binding,
        binding: Binding,
    ) -> Result<bool, RegistryError> {
        check_spec(spec)?;
        let Some(entry) = self.by_name.get(&spec.name) else {
            return Ok(false);
        };
        // Removing frees the API name only when the index points at this
        // very entry (INV-10).
        if entry.owner != *owner
            || entry.binding != held
            || self.mutant(Mutant::NeverFreeApiName)
            || self.by_api.get(&entry.api_name) != Some(&spec.name)
        {
            return Ok(false);
        }
        let (old_seq, mut api_name) = (entry.seq, entry.api_name.clone());
        if self.mutant(Mutant::ReloadRederivesApiName) {
            api_name = api_name_base(&spec.name);
        }
        self.order.remove_mut(&old_seq);
        self.publish_last(spec, api_name, owner.clone(), binding);
        Ok(true)
    }

    /// Removes an entry; its API name becomes free again.
    pub fn remove(&mut self, name: &str) -> Option<RegistryEntry> {
        let entry = self.by_name.get(name)?.clone();
        self.by_name.remove_mut(name);
        self.order.remove_mut(&entry.seq);
        let free = !self.mutant(Mutant::NeverFreeApiName);
        if free && self.by_api.get(&entry.api_name).map(String::as_str) == Some(name) {
            self.by_api.remove_mut(&entry.api_name);
        }
        Some(entry)
    }

    /// Removes everything, providers included (host shutdown).
    pub fn clear(&mut self) {
        let next_seq = self.next_seq;
        *self = Self {
            next_seq,
            providers: if self.mutant(Mutant::ShutdownLeavesProviders) {
                self.providers.clone()
            } else {
                self.providers.cleared()
            },
            #[cfg(feature = "mutants")]
            mutant: self.mutant,
            ..Self::default()
        };
    }

    fn free_api_name(&self, name: &str, reserved: &std::collections::BTreeSet<String>) -> String {
        let base = api_name_base(name);
        let taken = |c: &String| self.by_api.contains_key(c) || reserved.contains(c);
        if self.mutant(Mutant::NoApiNameSuffix) || !taken(&base) {
            return base;
        }
        (2u64..)
            .map(|n| {
                let suffix = format!("_{n}");
                let keep = MAX_API_NAME_BYTES - suffix.len();
                let stem = if base.len() > keep {
                    &base[..keep]
                } else {
                    &base
                };
                format!("{stem}{suffix}")
            })
            .find(|c| self.mutant(Mutant::SuffixNotCheckedFree) || !taken(c))
            .expect("an unbounded sequence of candidates always has a free one")
    }
}

/// What every insert checks of a spec before anything else: its name, then
/// its description.
fn check_spec(spec: &ToolSpec) -> Result<(), RegistryError> {
    validate_tool_name(&spec.name)?;
    crate::text::check_description(&spec.description).map_err(|reason| {
        RegistryError::InvalidDescription {
            name: spec.name.clone(),
            reason,
        }
    })
}

/// The model-facing form of a runtime name before collisions are resolved:
/// `:` and `.` become `_`; a name over 64 bytes keeps its first 55 bytes and
/// ends in `_` plus 8 hex digits of its SHA-256, so shortening is
/// deterministic and distinct names rarely meet.
pub fn api_name_base(name: &str) -> String {
    let mapped: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if mapped.len() <= MAX_API_NAME_BYTES && !mapped.is_empty() {
        return mapped;
    }
    let digest = Sha256::digest(name.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let keep = MAX_API_NAME_BYTES - 1 - hex.len();
    format!("{}_{hex}", &mapped[..keep.min(mapped.len())])
}

/// True when `api` has the model-facing form `[A-Za-z0-9_-]{1,64}`.
pub fn is_api_name(api: &str) -> bool {
    !api.is_empty()
        && api.len() <= MAX_API_NAME_BYTES
        && api
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests;
