//! Shutdown (H-11): the registry and hooks empty at once (and the active
//! contributions keep only their disposers); then every active
//! extension is cleaned up in reverse activation order, each only once its
//! tool calls in flight finished or were abandoned (INV-12), every step
//! attempted. A reload's old generation is cleaned up by the same steps
//! (the step runner and the end of a retirement are in `state.rs`, shared
//! with `reload.rs`). Decides INV-3 (reverse disposal).
//!
//! Architecture invariant: builds on `state.rs` and `probes.rs` only.

use rpds::VectorSync;

use crate::ids::{CallId, OpId};
use crate::lifecycle::ExtensionSlot;
use crate::mutant::Mutant;
use crate::outcome::{Failure, OpOutcome, StepFailure};
use crate::protocol::Effect;

use super::state::{
    Advance, CleanupCursor, Dispose, HostCore, Running, cleanup_plan, release_unpublished,
};

impl HostCore {
    pub(super) fn begin_dispose(&mut self, op: OpId) {
        self.registry.clear();
        self.hooks = VectorSync::new_sync();
        let mut order: Vec<&String> = self.activation_order.iter().rev().collect();
        self.probe_forward_shutdown(&mut order);
        let mut steps = Vec::new();
        for id in order {
            if let ExtensionSlot::Active(active) = &self.exts[self.slot_of(id)] {
                let state = active.state();
                let disposers = &state.contribution.disposers;
                steps.extend(cleanup_plan(id, state.context, disposers, true, false));
            }
        }
        // The contributions' tools, hooks and providers left the registry;
        // the cleanup reads only contexts and disposers, so the slots keep
        // only those (the shell drops the handles at the end, `ForgetAll`).
        for slot in &mut self.exts {
            if let ExtensionSlot::Active(active) = slot {
                let _ = release_unpublished(&mut active.state_data_mut().contribution);
            }
        }
        self.publish();
        match CleanupCursor::new(steps) {
            None => self.finish_dispose(op, Vec::new()),
            Some(cleanup) => {
                self.running = Some(Running::Dispose(Dispose {
                    op,
                    cleanup,
                    draining: false,
                    retiring: None,
                }));
                self.next_dispose_step(op);
            }
        }
    }

    /// `CleanupFinished` for a shutdown step, the shutdown taken out of
    /// `running`: the extension is disposed after its last step.
    pub(super) fn dispose_step_finished(&mut self, mut d: Dispose, result: Result<(), Failure>) {
        let stop_on_failure = self.mutant(Mutant::StopCleanupAtFirstFailure);
        let done = d.cleanup.current().extension.clone();
        let advance = d.cleanup.advance(result, stop_on_failure);
        let extension_done = advance != Advance::Next || d.cleanup.current().extension != done;
        if extension_done && advance != Advance::Stopped && d.retiring.is_none() {
            self.mark_disposed(&done);
        }
        let op = d.op;
        if advance == Advance::Next {
            self.running = Some(Running::Dispose(d));
            return self.next_dispose_step(op);
        }
        match d.retiring {
            Some(retiring) => self.finish_retiring(op, retiring, d.cleanup.into_failures()),
            None => self.finish_dispose(op, d.cleanup.into_failures()),
        }
    }

    fn mark_disposed(&mut self, id: &str) {
        let ext = self.slot_of(id);
        self.exts[ext].dispose();
    }

    fn finish_dispose(&mut self, op: OpId, failures: Vec<StepFailure>) {
        self.probe_dispose_failed();
        self.phase = super::state::Phase::Disposed(op);
        self.command(Effect::ForgetAll);
        self.settle(op, OpOutcome::Disposed { failures });
    }

    /// The calls the running cleanup waits for: those of the generation
    /// its current step cleans up.
    pub(super) fn draining_calls(&self) -> Vec<CallId> {
        match &self.running {
            Some(Running::Dispose(d)) if d.draining => self.calls_of(d.cleanup.current().context),
            _ => Vec::new(),
        }
    }

    /// Ends the wait for an extension's calls: abandon what is left, then
    /// run its first cleanup step.
    pub(super) fn stop_draining(&mut self, op: OpId, abandoned: Vec<CallId>) {
        for call in &abandoned {
            self.calls.remove(call);
        }
        let Some(Running::Dispose(d)) = &mut self.running else {
            return;
        };
        d.draining = false;
        let step = d.cleanup.current().clone();
        if !abandoned.is_empty() {
            self.command(Effect::AbandonCalls { calls: abandoned });
        }
        self.command(Effect::RunCleanup { op, step });
    }
}
