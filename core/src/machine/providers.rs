//! M-8, providers in the transition code: the providers of a candidate
//! (the declaration match of M-5, then each provider added to the
//! candidate, where a live id is a clash), and provider selection (the
//! provider trigger of M-3), decided here so the shell only performs it.
//!
//! Architecture invariant: builds on `state.rs`, `declarations.rs`,
//! `policy.rs` (the grants) and `probes.rs` only; `activation.rs` calls in here while it builds a
//! candidate, `reload.rs` to take an old generation's providers out.

use crate::lifecycle::{Contribution, DefinitionMeta, ExtensionSlot, Status};
use crate::mutant::Mutant;
use crate::outcome::FailureCause;
use crate::registry::{ModelRecord, Owner, ProviderRecord, ToolRegistry};

use super::state::{HostCore, Phase};
use crate::declarations::check_provider_declarations;

/// What selecting a provider and one of its models resolves to (M-8). The
/// core decides; the shell performs (an activation for
/// [`ProviderSelection::Dormant`], then a second selection).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ProviderSelection {
    /// The provider is live and has the model.
    Live {
        /// The provider as published.
        provider: ProviderRecord,
        /// The selected model.
        model: ModelRecord,
        /// Who contributed it.
        owner: Owner,
    },
    /// The provider is not live but this extension, which is not active,
    /// declares it with the model: activating it is the provider trigger
    /// of M-3.
    Dormant {
        /// The declaring extension (the first in discovery order).
        extension: String,
    },
    /// As [`ProviderSelection::Dormant`], but a declaration mismatch
    /// revoked the declaring extension's grant (M-5, INV-14): nothing
    /// starts (`PROVIDER_ACTIVATION_DENIED`).
    Revoked {
        /// The declaring extension whose grant is revoked.
        extension: String,
    },
    /// No live provider and no inactive extension's declaration has the id.
    ProviderNotFound,
    /// Shutdown has begun: nothing is selected any more.
    Disposed,
    /// The provider (live, or declared by an inactive extension) has no
    /// model with that id; nothing starts.
    ModelNotFound {
        /// Who holds or declares the provider.
        owner: Owner,
    },
}

impl HostCore {
    /// M-8 selection: once shutdown has begun, nothing; else a live
    /// provider wins; otherwise the first extension in discovery order that
    /// is not active and declares the provider, unless a mismatch revoked
    /// its grant (INV-14, `policy.rs`). Changes nothing.
    pub fn select_provider(&self, provider: &str, model: &str) -> ProviderSelection {
        if self.phase != Phase::Open {
            return ProviderSelection::Disposed;
        }
        if let Some(entry) = self.registry.provider(provider) {
            return match entry.record.model(model) {
                Some(m) => ProviderSelection::Live {
                    provider: entry.record.clone(),
                    model: m.clone(),
                    owner: entry.owner.clone(),
                },
                None => ProviderSelection::ModelNotFound {
                    owner: entry.owner.clone(),
                },
            };
        }
        let declaring = self.exts.iter().find_map(|slot| {
            if slot.status() == Status::Active
                || (self.mutant(Mutant::ProviderLookupSkipsFailed)
                    && slot.status() != Status::Discovered)
            {
                return None;
            }
            let declared = slot.meta().declared_providers.as_ref()?;
            let record = declared.iter().find(|p| p.id == provider)?;
            Some((slot.id().to_owned(), record))
        });
        match declaring {
            None => ProviderSelection::ProviderNotFound,
            Some((extension, record)) if record.model(model).is_some() => {
                if self.grant_refused(&extension) {
                    ProviderSelection::Revoked { extension }
                } else {
                    ProviderSelection::Dormant { extension }
                }
            }
            Some((extension, _)) => ProviderSelection::ModelNotFound {
                owner: Owner::extension(&extension),
            },
        }
    }

    /// H-4 and M-5 for providers: the staged providers must equal the
    /// declared ones (when there are declarations), then each is added to
    /// the candidate, where an id already live (or staged twice) is
    /// `EXTENSION_PROVIDER_CLASH`. Nothing live changes here.
    pub(super) fn stage_providers(
        &self,
        meta: &DefinitionMeta,
        staged: &Contribution,
        candidate: &mut ToolRegistry,
    ) -> Result<(), FailureCause> {
        if let Some(declared) = &meta.declared_providers
            && !(self.mutant(Mutant::ProviderCheckOnlyWhenRegistered)
                && staged.providers.is_empty())
        {
            check_provider_declarations(declared, &staged.providers)
                .map_err(FailureCause::Declaration)?;
        }
        let owner = Owner::extension(&meta.id);
        for record in &staged.providers {
            candidate
                .insert_provider(record, owner.clone())
                .map_err(FailureCause::Registry)?;
        }
        Ok(())
    }

    /// H-12: a reload's candidate starts without the old generation's
    /// providers, so the fresh generation may register the same ids.
    pub(super) fn without_old_providers(
        &self,
        meta: &DefinitionMeta,
        candidate: &mut ToolRegistry,
    ) {
        let Some(old) = self.extension(&meta.id).and_then(ExtensionSlot::active) else {
            return;
        };
        let owner = Owner::extension(&meta.id);
        for record in &old.state().contribution.providers {
            if candidate
                .provider(&record.id)
                .is_some_and(|e| e.owner == owner)
            {
                candidate.remove_provider(&record.id);
            }
        }
    }
}

#[cfg(test)]
mod tests;
