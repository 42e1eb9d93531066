//! M-8, the shell's side of providers: what an extension registers
//! ([`ProviderSpec`], [`ModelSpec`]), what a snapshot shows
//! ([`ProviderSnapshot`], [`ProviderInfo`]) and what a selection returns
//! ([`SelectedProvider`]).
//!
//! Architecture invariant: depends only on `error.rs` and `snapshot.rs`
//! within `host/` (and on the manifest's provider validators, which it
//! reuses rather than restates); every decision is the core's.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::error::HostError;
use super::snapshot::ToolSnapshot;
use exthost_core::{ModelRecord, Owner, ProviderEntry, ProviderRecord};

/// One model of a provider: an id (ID-1, unique within its provider) and
/// boolean capabilities (`"vision": true`); a capability not given is
/// `false` for [`ProviderInfo::has_capability`], but M-5 compares the
/// given sets exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    id: String,
    capabilities: BTreeMap<String, bool>,
}

impl ModelSpec {
    /// A model with no capabilities.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            capabilities: BTreeMap::new(),
        }
    }

    /// The same model with the capability `name` set to `value`.
    pub fn capability(mut self, name: impl Into<String>, value: bool) -> Self {
        self.capabilities.insert(name.into(), value);
        self
    }

    /// The model id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The capabilities given.
    pub fn capabilities(&self) -> &BTreeMap<String, bool> {
        &self.capabilities
    }
}

/// A provider an extension registers through
/// [`ActivationContext::register_provider`](super::ActivationContext::register_provider):
/// an id, a display name, an optional config schema and its models.
///
/// It is checked by the same rules as a manifest's declared provider (M-1,
/// M-8), with the same reason codes: the id and every model id obey ID-1,
/// model ids are unique, at most 64 models; the display name is 1 to 256
/// bytes, not blank, without control characters or bidirectional
/// overrides and isolates, with a visible character; the config schema is
/// a JSON object of at most 64 KiB in canonical form.
///
/// ```
/// use exthost::host::{ModelSpec, ProviderSpec};
/// use serde_json::json;
///
/// let spec = ProviderSpec::new("acme", "Acme Models")
///     .config_schema(json!({"type": "object"}))
///     .model(ModelSpec::new("fast").capability("vision", false))
///     .model(ModelSpec::new("large").capability("vision", true));
/// assert_eq!(spec.id(), "acme");
/// assert_eq!(spec.models().len(), 2);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSpec {
    id: String,
    display_name: String,
    config_schema: Option<Value>,
    models: Vec<ModelSpec>,
}

impl ProviderSpec {
    /// A provider with no config schema and no models yet.
    pub fn new(id: impl Into<String>, display_name: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            display_name: display_name.into(),
            config_schema: None,
            models: Vec::new(),
        }
    }

    /// The same provider with this config schema (a JSON object).
    pub fn config_schema(mut self, schema: Value) -> Self {
        self.config_schema = Some(schema);
        self
    }

    /// The same provider with one more model.
    pub fn model(mut self, model: ModelSpec) -> Self {
        self.models.push(model);
        self
    }

    /// The provider id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The display name.
    pub fn display_name(&self) -> &str {
        &self.display_name
    }

    /// The models, in the order given.
    pub fn models(&self) -> &[ModelSpec] {
        &self.models
    }

    /// Checks it with the manifest's validators and turns it into the
    /// core's record; `PROVIDER_INVALID` with the manifest reason code.
    pub(crate) fn record(&self) -> Result<ProviderRecord, HostError> {
        let mut provider = Map::new();
        provider.insert("id".into(), Value::String(self.id.clone()));
        provider.insert(
            "displayName".into(),
            Value::String(self.display_name.clone()),
        );
        if let Some(schema) = &self.config_schema {
            provider.insert("configSchema".into(), schema.clone());
        }
        let models = self
            .models
            .iter()
            .map(|m| {
                let mut model = Map::new();
                model.insert("id".into(), Value::String(m.id.clone()));
                let capabilities = m
                    .capabilities
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::Bool(*v)))
                    .collect();
                model.insert("capabilities".into(), Value::Object(capabilities));
                Value::Object(model)
            })
            .collect();
        provider.insert("models".into(), Value::Array(models));
        crate::manifest::validate_provider_value(Value::Object(provider))
            .map(|declared| declared.record())
            .map_err(|e| HostError::InvalidProvider {
                provider: self.id.clone(),
                reason: e.reason_code(),
                pointer: e.pointer().to_owned(),
                message: e.message().to_owned(),
            })
    }
}

/// One live provider as a snapshot shows it.
#[derive(Debug, Clone, Copy)]
pub struct ProviderInfo<'a> {
    entry: &'a ProviderEntry,
}

impl<'a> ProviderInfo<'a> {
    /// The provider id.
    pub fn id(&self) -> &'a str {
        &self.entry.record.id
    }

    /// Its display name.
    pub fn display_name(&self) -> &'a str {
        &self.entry.record.display_name
    }

    /// Who contributed it.
    pub fn owner(&self) -> &'a Owner {
        &self.entry.owner
    }

    /// Its config schema, if it has one.
    pub fn config_schema(&self) -> Option<Value> {
        let text = self.entry.record.config_schema.as_deref()?;
        serde_json::from_str(text).ok()
    }

    /// SHA-256 of its canonical config schema, lowercase hex (M-5).
    pub fn config_schema_digest(&self) -> Option<&'a str> {
        self.entry.record.config_schema_digest.as_deref()
    }

    /// Its models, in registration order.
    pub fn models(&self) -> &'a [ModelRecord] {
        &self.entry.record.models
    }

    /// True when the model `model` has the capability `capability` set to
    /// `true`.
    pub fn has_capability(&self, model: &str, capability: &str) -> bool {
        self.entry
            .record
            .model(model)
            .and_then(|m| m.capabilities.get(capability))
            .copied()
            .unwrap_or(false)
    }

    /// The core's record of it.
    pub fn record(&self) -> &'a ProviderRecord {
        &self.entry.record
    }
}

/// A detached, immutable view of the live providers (M-8), taken from the
/// same publication as a [`ToolSnapshot`]: the tools and providers it
/// shows always belong to the same commit ([`ProviderSnapshot::tools`]).
#[derive(Clone)]
pub struct ProviderSnapshot {
    pub(crate) snapshot: Arc<ToolSnapshot>,
}

impl std::fmt::Debug for ProviderSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.ids()).finish()
    }
}

impl ProviderSnapshot {
    /// Number of live providers.
    pub fn len(&self) -> usize {
        self.snapshot.registry.provider_count()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Provider ids in publication order: each extension in activation
    /// order, each in registration order.
    pub fn ids(&self) -> Vec<String> {
        self.iter().map(|p| p.id().to_owned()).collect()
    }

    /// Every live provider in publication order.
    pub fn iter(&self) -> impl Iterator<Item = ProviderInfo<'_>> + '_ {
        self.snapshot
            .registry
            .providers()
            .map(|entry| ProviderInfo { entry })
    }

    /// The live provider with this id.
    pub fn get(&self, id: &str) -> Option<ProviderInfo<'_>> {
        self.snapshot
            .registry
            .provider(id)
            .map(|entry| ProviderInfo { entry })
    }

    /// The tools of the same publication.
    pub fn tools(&self) -> &Arc<ToolSnapshot> {
        &self.snapshot
    }
}

/// What [`ExtensionHost::select_provider`](super::ExtensionHost::select_provider)
/// returns: the live provider and the selected model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SelectedProvider {
    /// The provider as published.
    pub provider: ProviderRecord,
    /// The selected model.
    pub model: ModelRecord,
    /// Who contributed it.
    pub owner: Owner,
    /// True when this selection started the declaring extension (the
    /// provider trigger of M-3); false when the provider was already live.
    pub activated: bool,
}
