//! The live providers (M-8): a second table of the registry, so that one
//! registry value (a candidate, the live registry, a snapshot) always holds
//! the tools and the providers of the same publication, and one commit
//! swaps both (H-4, H-12, INV-1).
//!
//! Architecture invariant: a child of [`super`] (it reads the registry's
//! private fields) that depends only on [`super::Owner`], the crate's id
//! and text leaves and [`crate::error::codes`]; pure data, no handles.

use std::collections::{BTreeMap, BTreeSet};

use rpds::RedBlackTreeMapSync;

use super::{Owner, RegistryError, ToolRegistry};
use crate::id::validate_id_segment;

/// The longest provider display name, in bytes (M-1).
pub const MAX_PROVIDER_DISPLAY_NAME_BYTES: usize = 256;

/// One model of a provider, as the core knows it: its id and its boolean
/// capabilities (an absent capability is `false`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub struct ModelRecord {
    /// The model id (ID-1), unique within its provider.
    pub id: String,
    /// Capability flags by name.
    pub capabilities: BTreeMap<String, bool>,
}

/// What the core knows of a provider: pure data, no handler.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub struct ProviderRecord {
    /// The provider id (ID-1), unique across the live registry.
    pub id: String,
    /// Its human name (M-1, M-8 text hygiene).
    pub display_name: String,
    /// Its configuration schema in canonical JSON (sorted keys, no
    /// insignificant whitespace), if it has one.
    pub config_schema: Option<String>,
    /// SHA-256 of `config_schema`, lowercase hex (M-5), if it has one.
    pub config_schema_digest: Option<String>,
    /// Its models, in registration order.
    pub models: Vec<ModelRecord>,
}

impl ProviderRecord {
    /// The model with this id.
    pub fn model(&self, id: &str) -> Option<&ModelRecord> {
        self.models.iter().find(|m| m.id == id)
    }

    /// M-1/M-8 as the core checks them: the provider id and every model id
    /// are ID-1 segments, model ids are unique, the display name is 1 to 256
    /// bytes, not blank, without control or bidirectional characters and
    /// with a visible one.
    pub fn validate(&self) -> Result<(), RegistryError> {
        let invalid = |message: String| RegistryError::InvalidProvider {
            provider: self.id.clone(),
            message,
        };
        validate_id_segment(&self.id).map_err(|e| invalid(format!("provider id: {e}")))?;
        let name = &self.display_name;
        if name.is_empty() || name.len() > MAX_PROVIDER_DISPLAY_NAME_BYTES {
            return Err(invalid(format!(
                "the display name is {} bytes; 1 to {MAX_PROVIDER_DISPLAY_NAME_BYTES} are allowed",
                name.len()
            )));
        }
        crate::text::check_display_name(name)
            .map_err(|e| invalid(format!("the display name: {e}")))?;
        let mut seen = BTreeSet::new();
        for model in &self.models {
            validate_id_segment(&model.id)
                .map_err(|e| invalid(format!("model id {:?}: {e}", model.id)))?;
            if !seen.insert(model.id.as_str()) {
                return Err(invalid(format!(
                    "model id {:?} is registered twice",
                    model.id
                )));
            }
        }
        Ok(())
    }
}

/// One live provider.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct ProviderEntry {
    /// What it is.
    pub record: ProviderRecord,
    /// Who contributed it.
    pub owner: Owner,
    seq: u64,
}

/// The live providers by id, in publication order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(super) struct ProviderTable {
    by_id: RedBlackTreeMapSync<String, ProviderEntry>,
    order: RedBlackTreeMapSync<u64, String>,
    next_seq: u64,
}

impl ProviderTable {
    /// True when the sequence numbers are `0..len()` (`core::canonical`).
    pub(super) fn is_compact(&self) -> bool {
        self.next_seq == self.by_id.size() as u64
            && self
                .order
                .keys()
                .enumerate()
                .all(|(i, seq)| *seq == i as u64)
    }

    /// The same table numbered `0..len()` in publication order.
    pub(super) fn compacted(&self) -> Self {
        let mut out = Self::default();
        for id in self.order.values() {
            if let Some(entry) = self.by_id.get(id) {
                out.push(entry.record.clone(), entry.owner.clone());
            }
        }
        out
    }

    /// The same table with the owners `rename` maps replaced.
    pub(super) fn reowned(&self, rename: impl Fn(&Owner) -> Option<Owner>) -> Self {
        let mut out = self.clone();
        for entry in self.by_id.values() {
            if let Some(owner) = rename(&entry.owner) {
                let mut entry = entry.clone();
                entry.owner = owner;
                out.by_id.insert_mut(entry.record.id.clone(), entry);
            }
        }
        out
    }

    fn push(&mut self, record: ProviderRecord, owner: Owner) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert_mut(seq, record.id.clone());
        self.by_id
            .insert_mut(record.id.clone(), ProviderEntry { record, owner, seq });
    }

    /// Keeps the sequence counter, empties the rest (host shutdown).
    pub(super) fn cleared(&self) -> Self {
        Self {
            next_seq: self.next_seq,
            ..Self::default()
        }
    }
}

impl ToolRegistry {
    /// The live providers in publication order: each extension in
    /// activation order, each in registration order (M-8).
    pub fn providers(&self) -> impl Iterator<Item = &ProviderEntry> + '_ {
        self.providers
            .order
            .values()
            .filter_map(|id| self.providers.by_id.get(id))
    }

    /// The live provider with this id.
    pub fn provider(&self, id: &str) -> Option<&ProviderEntry> {
        self.providers.by_id.get(id)
    }

    /// Number of live providers.
    pub fn provider_count(&self) -> usize {
        self.providers.by_id.size()
    }

    /// Adds a provider at the end of the publication order, validating it
    /// ([`ProviderRecord::validate`]) and its id's uniqueness across the
    /// registry (`EXTENSION_PROVIDER_CLASH`).
    pub fn insert_provider(
        &mut self,
        record: &ProviderRecord,
        owner: Owner,
    ) -> Result<(), RegistryError> {
        record.validate()?;
        if let Some(held) = self.providers.by_id.get(&record.id) {
            return Err(RegistryError::ProviderClash {
                provider: record.id.clone(),
                holder: held.owner.clone(),
            });
        }
        self.providers.push(record.clone(), owner);
        Ok(())
    }

    /// Removes a provider.
    pub fn remove_provider(&mut self, id: &str) -> Option<ProviderEntry> {
        let entry = self.providers.by_id.get(id)?.clone();
        self.providers.by_id.remove_mut(id);
        self.providers.order.remove_mut(&entry.seq);
        Some(entry)
    }
}

#[cfg(test)]
impl ProviderRecord {
    /// A provider `id` named "Provider `id`", without a config schema, with
    /// these models and no capabilities (the unit tests' provider).
    pub(crate) fn for_tests(id: &str, models: &[&str]) -> Self {
        Self {
            id: id.into(),
            display_name: format!("Provider {id}"),
            config_schema: None,
            config_schema_digest: None,
            models: models
                .iter()
                .map(|m| ModelRecord {
                    id: (*m).into(),
                    capabilities: BTreeMap::new(),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, models: &[&str]) -> ProviderRecord {
        ProviderRecord::for_tests(id, models)
    }

    #[test]
    fn providers_keep_publication_order_and_refuse_clashes() {
        let mut r = ToolRegistry::new();
        let a = Owner::extension("a");
        r.insert_provider(&record("zeta", &["m"]), a.clone())
            .unwrap();
        r.insert_provider(&record("alpha", &[]), a.clone()).unwrap();
        let err = r
            .insert_provider(&record("zeta", &[]), Owner::extension("b"))
            .unwrap_err();
        assert_eq!(err.code(), "EXTENSION_PROVIDER_CLASH");
        let ids: Vec<_> = r.providers().map(|p| p.record.id.clone()).collect();
        assert_eq!(ids, ["zeta", "alpha"]);
        let snapshot = r.clone();
        r.remove_provider("zeta").unwrap();
        assert_eq!(r.provider_count(), 1);
        assert_eq!(snapshot.provider_count(), 2);
        assert!(!r.providers.is_compact());
        assert!(r.providers.compacted().is_compact());
    }

    #[test]
    fn invalid_providers_are_refused_with_provider_invalid() {
        let mut r = ToolRegistry::new();
        let mut bad_name = record("p", &[]);
        bad_name.display_name = "a\u{202e}b".into();
        let mut blank = record("p", &[]);
        blank.display_name = " ".into();
        for bad in [
            record("a:b", &[]),
            record("p", &["m", "m"]),
            record("p", &["bad model"]),
            bad_name,
            blank,
        ] {
            let err = r.insert_provider(&bad, Owner::Base).unwrap_err();
            assert_eq!(err.code(), "PROVIDER_INVALID", "{bad:?}");
        }
        assert_eq!(r.provider_count(), 0);
    }
}
