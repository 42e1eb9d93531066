//! Policy: who may start an extension, and which deadline applies. Decides
//! INV-14 (revoked grants): a dormant call or a provider selection never
//! starts an extension whose grant a declaration mismatch revoked (M-5),
//! until an explicit `activate` of it succeeds, and a transient failure
//! never revokes a grant. Also decides the M-3 triggers (the extensions an
//! event or the eager start begins) and which deadline applies to a step
//! (H-12), from the definitions' [`DefinitionPolicy`](crate::DefinitionPolicy).
//!
//! Architecture invariants:
//! - Builds on `state.rs` and `probes.rs` only. The grants change in two
//!   places of `activation.rs`, through [`HostCore::revoke_on_failure`] (a
//!   rollback of an activation settles) and [`HostCore::restore_grant`] (an
//!   activation commits); everything else here is a query that changes
//!   nothing.
//! - The shell asks these queries and does exactly what they answer; it
//!   keeps no trigger, grant or deadline of its own.

use std::time::Duration;

use crate::lifecycle::Status;
use crate::mutant::Mutant;
use crate::outcome::FailureCause;
use crate::policy::{DeadlineStep, Deadlines, Executor, Placement};
use crate::protocol::AdmittedCall;
use crate::registry::{Binding, Owner};

use super::state::{HostCore, Phase};

/// What a call of a tool that may start its extension gets (M-4, M-5,
/// INV-14): the answer of [`HostCore::admit_dormant_call`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DormantCall {
    /// The tool is not a dormant descriptor (live, unknown, or the host is
    /// shutting down): call it as it is, nothing starts.
    NotDormant,
    /// Start this extension (the owner of the dormant descriptor) with an
    /// `activate` request, then call the tool.
    Start {
        /// The extension to start.
        extension: String,
    },
    /// Refused (`TOOL_ACTIVATION_DENIED`): a declaration mismatch revoked
    /// this extension's grant, and nothing starts.
    Revoked {
        /// The extension whose grant is revoked.
        extension: String,
    },
}

impl HostCore {
    /// True when a declaration mismatch revoked `id`'s grant to be started
    /// by a dormant call or a provider selection (M-5, INV-14), and no
    /// activation of it has committed since.
    pub fn is_revoked(&self, id: &str) -> bool {
        self.revoked.contains(id)
    }

    /// The extensions whose grant is revoked, in id order.
    pub fn revoked(&self) -> impl Iterator<Item = &str> + '_ {
        self.revoked.iter().map(String::as_str)
    }

    /// M-4, INV-14: a caller that may start extensions calls the tool with
    /// this runtime name. A dormant descriptor starts its owner, unless a
    /// mismatch revoked the owner's grant. Changes nothing.
    pub fn admit_dormant_call(&self, tool: &str) -> DormantCall {
        if self.phase != Phase::Open {
            return DormantCall::NotDormant;
        }
        match self.registry.get(tool) {
            Some(entry) if entry.binding == Binding::Dormant => {
                let Owner::Extension(extension) = &entry.owner else {
                    return DormantCall::NotDormant;
                };
                if self.grant_refused(extension) {
                    DormantCall::Revoked {
                        extension: extension.to_string(),
                    }
                } else {
                    DormantCall::Start {
                        extension: extension.to_string(),
                    }
                }
            }
            _ => DormantCall::NotDormant,
        }
    }

    /// Whether a dormant call or a provider selection may not start `id`
    /// (under `RevokedGrantStarts`, every grant holds).
    pub(super) fn grant_refused(&self, id: &str) -> bool {
        self.is_revoked(id) && !self.mutant(Mutant::RevokedGrantStarts)
    }

    /// M-5, INV-14: an activation attempt of `id` (not a reload) rolled
    /// back with `cause`. A declaration mismatch revokes its grant; a
    /// transient failure (a factory or `activate` error, a deadline, a lost
    /// step, a panic, a shutdown) leaves the grant as it was.
    pub(super) fn revoke_on_failure(&mut self, id: &str, cause: &FailureCause) {
        if matches!(cause, FailureCause::Declaration(_))
            || self.mutant(Mutant::TransientFailureRevokes)
        {
            self.revoked.insert(id.to_owned());
        } else if self.mutant(Mutant::TransientFailureClearsGrant) {
            self.revoked.remove(id);
        }
    }

    /// INV-14: an activation of `id` committed (the extension asked for, or
    /// a dependency the same explicit request activated first): its grant
    /// holds again.
    pub(super) fn restore_grant(&mut self, id: &str) {
        self.revoked.remove(id);
    }

    /// M-3: the extensions an `emit` of `event` starts first: those still
    /// `discovered` whose definition subscribes to `event`, in discovery
    /// order. Changes nothing.
    pub fn triggered_by(&self, event: &str) -> Vec<String> {
        self.startable(|meta| meta.policy.events.iter().any(|e| e == event))
    }

    /// M-3: the eager extensions still `discovered`, in discovery order:
    /// what `activate_eager` starts. Changes nothing.
    pub fn eager(&self) -> Vec<String> {
        self.startable(|meta| meta.policy.eager)
    }

    fn startable(&self, wanted: impl Fn(&crate::lifecycle::DefinitionMeta) -> bool) -> Vec<String> {
        if self.phase != Phase::Open {
            return Vec::new();
        }
        self.exts
            .iter()
            .filter(|slot| {
                (slot.status() == Status::Discovered
                    || (self.mutant(Mutant::TriggerStartsFailed)
                        && slot.status() == Status::Failed))
                    && wanted(slot.meta())
            })
            .map(|slot| slot.id().to_owned())
            .collect()
    }

    /// The host's deadlines (H-12), from which the core chooses each
    /// step's.
    pub fn deadlines(&self) -> Deadlines {
        self.deadlines
    }

    /// Sets the host's deadlines (H-12); they hold for every step that
    /// starts from now on.
    pub fn set_deadlines(&mut self, deadlines: Deadlines) {
        self.deadlines = deadlines;
    }

    /// H-12: the deadline of `step`: the host's, unless the extension's
    /// definition overrides it (a duration of its own, or none). The hooks
    /// of an emit always have the host's (one watchdog for every
    /// extension's hooks). Changes nothing.
    pub fn deadline_for(&self, step: DeadlineStep<'_>) -> Option<Duration> {
        // Only the extension the step names is looked up, and none for the
        // hooks (a call asks on every call).
        let overrides = step
            .extension()
            .and_then(|id| self.extension(id))
            .map(|slot| &slot.meta().policy.deadlines);
        self.deadlines.for_step(step, overrides)
    }

    /// Where a call of a tool of `owner` (`None`: a base tool) runs when
    /// the caller's executor is `executor`: in a task of its own, bounded
    /// by the deadline, when the caller can walk away from a call that
    /// goes on (`outlives_caller`: the caller passed a cancellation
    /// signal, on which it returns at once while the tool runs to its end
    /// and shutdown still drains it), or when a deadline applies and
    /// another thread can hold it while the tool blocks its own; otherwise
    /// in its caller's task, bounded by the deadline if one applies.
    /// Changes nothing.
    pub fn call_placement(
        &self,
        owner: Option<&str>,
        outlives_caller: bool,
        executor: Executor,
    ) -> Placement {
        let deadline = self.deadline_for(DeadlineStep::Call(owner));
        call_placement(deadline, outlives_caller, executor)
    }

    /// [`HostCore::call_placement`] of a call just admitted, from the
    /// deadline its admission chose (its `due`), with no second look-up
    /// of its extension. Changes nothing.
    pub fn admitted_call_placement(
        &self,
        admitted: &AdmittedCall,
        outlives_caller: bool,
        executor: Executor,
    ) -> Placement {
        let deadline = admitted.due.map(|due| due.deadline);
        call_placement(deadline, outlives_caller, executor)
    }

    /// Where the hooks of an emit run: in the operation's driver
    /// when the host has no hook deadline (nothing would stop waiting for
    /// a hook), or when the executor runs every task on one thread (each
    /// hook bounded there); else in tasks of their own under a watchdog.
    /// Changes nothing.
    pub fn hook_placement(&self, executor: Executor) -> Placement {
        placement(self.deadline_for(DeadlineStep::Hooks), executor)
    }

    /// Where the factory and `activate` of `id` run: in the
    /// operation's driver when no activation deadline applies (nothing
    /// would stop waiting for them), else in tasks of their own bounded by
    /// it. Changes nothing.
    pub fn activation_placement(&self, id: &str) -> Placement {
        match self.deadline_for(DeadlineStep::Activation(id)) {
            None => Placement::Inline,
            deadline => Placement::Task(deadline),
        }
    }
}
/// Where a call bounded by `deadline` runs: in a task of its own when it
/// must outlive its caller's wait, else as [`placement`] says.
fn call_placement(
    deadline: Option<Duration>,
    outlives_caller: bool,
    executor: Executor,
) -> Placement {
    if outlives_caller {
        return Placement::Task(deadline);
    }
    placement(deadline, executor)
}

/// Where code bounded by `deadline` runs when nothing needs it to outlive
/// its waiter: in the waiting task when no deadline applies, or
/// when a task of its own would hold it no better (one thread runs every
/// task); else in a task of its own.
fn placement(deadline: Option<Duration>, executor: Executor) -> Placement {
    match (deadline, executor) {
        (None, _) => Placement::Inline,
        (Some(d), Executor::OneThread) => Placement::InlineBounded(d),
        (Some(d), Executor::Threads) => Placement::Task(Some(d)),
    }
}
