//! Redefinition (H-12): a known extension's definition replaced by a new
//! one of the same id, as one queued operation (a re-locked manifest, a
//! new build of an extension's code).
//!
//! - Not active (`discovered`, dormant, `failed`): the new definition
//!   replaces the old at once, in the same status (INV-7: a redefinition
//!   is no transition of H-1), its dormant descriptors the new
//!   declarations', in one publication; no code runs, and a grant a
//!   declaration mismatch revoked (INV-14) holds again, since the
//!   declarations it broke are gone.
//! - Active: a reload whose fresh generation is built from the new
//!   definition and checked against its declarations (M-5); the commit
//!   makes the new definition the extension's together with the fresh
//!   generation, and a failure anywhere keeps both the old definition and
//!   the old generation (INV-11).
//!
//! Either way the new definition is first checked as discovery checks one
//! (H-2, H-13), and a refusal changes nothing. Decides INV-18: a new
//! definition is the extension's exactly once it applied, whole or not at
//! all.
//!
//! Architecture invariant: builds on `state.rs`, `discovery.rs` and
//! `probes.rs` only;
//! an active extension's redefinition then runs as a reload through
//! `activation.rs` and `reload.rs`, which know nothing of it.

use crate::ids::OpId;
use crate::lifecycle::{DefinitionMeta, ExtensionSlot, Status};
use crate::outcome::{OpOutcome, RedefineError};

use super::state::HostCore;

impl HostCore {
    /// `Begin` of a redefinition.
    pub(super) fn begin_redefine(&mut self, op: OpId, meta: DefinitionMeta, cancelled: bool) {
        let id = meta.id.clone();
        let Some(old) = self.extension(&id) else {
            return self.settle(op, OpOutcome::NotFound { extension: id });
        };
        let status = old.status();
        let changes = if old.meta().dependencies != meta.dependencies {
            Some("dependencies")
        } else if old.meta().namespaced != meta.namespaced {
            Some("namespaced")
        } else {
            None
        };
        if cancelled {
            return self.settle(op, OpOutcome::CancelledBeforeStart { extension: id });
        }
        let refused = |error| OpOutcome::RedefineRefused {
            extension: id.clone(),
            error,
        };
        if let Err(e) = self.check_redefinition(&meta) {
            return self.settle(op, refused(RedefineError::Invalid(e)));
        }
        match (status, changes) {
            (Status::Active, Some(what)) => {
                let error = RedefineError::ActiveChange {
                    extension: id.clone(),
                    what,
                };
                self.settle(op, refused(error))
            }
            (Status::Active, None) => self.begin_active_redefinition(op, meta),
            (Status::Discovered | Status::Failed, _) => {
                if self.replace_discovered(meta) {
                    self.publish();
                }
                self.restore_grant(&id);
                self.settle(op, OpOutcome::Redefined { extension: id });
            }
            // Only a running activation holds an extension `activating`,
            // and only a shutdown disposes one: neither runs now.
            (Status::Activating | Status::Disposed, _) => self.settle(
                op,
                OpOutcome::NotActive {
                    extension: id,
                    status,
                },
            ),
        }
    }

    /// An active extension's redefinition: the fresh generation of the
    /// new definition begins with its factory, beside the live one.
    fn begin_active_redefinition(&mut self, op: OpId, meta: DefinitionMeta) {
        self.probe_swap_definition_early(&meta);
        let context = self.counters.context();
        let id = meta.id.clone();
        let Some(extension) = self
            .extension(&id)
            .and_then(ExtensionSlot::active)
            .map(|active| active.redefine_attempt(meta, context))
        else {
            let status = self
                .extension(&id)
                .map_or(Status::Discovered, ExtensionSlot::status);
            let outcome = OpOutcome::NotActive {
                extension: id,
                status,
            };
            return self.settle(op, outcome);
        };
        self.begin_fresh_generation(op, extension);
    }
}
