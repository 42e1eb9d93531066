//! Tool calls in flight (H-11, INV-12): admitted by the core, tracked until
//! they end, so that the shutdown waits for an extension's calls before its
//! first cleanup step.
//!
//! Architecture invariants:
//! - The shell never decides what a caller observes here: whether a call
//!   may start and what its caller gets when it ends are these methods'
//!   replies, so the model checker explores them.
//! - Builds on `state.rs` and `dispose.rs` (a call that ends may let the
//!   shutdown go on); nothing but `mod.rs` builds on this one.

use crate::ids::{CallId, ContextId};
use crate::policy::DeadlineStep;
use crate::protocol::{AdmittedCall, CallRefused, CallVerdict};
use crate::registry::{Binding, Owner};
use crate::time::{Due, Moment};

use super::state::{Dispose, HostCore, InFlight, Phase, Running};

impl HostCore {
    /// Tool calls in flight, in the order they started, with their owners.
    pub fn calls_in_flight(&self) -> impl Iterator<Item = (CallId, &Owner)> + '_ {
        self.calls.iter().map(|(call, f)| (*call, &f.owner))
    }

    /// The calls in flight of one generation of an extension (the context
    /// of the activation or reload that made it live), in the order they
    /// started: what the cleanup of that generation waits for.
    pub fn calls_of_generation(&self, generation: ContextId) -> Vec<CallId> {
        self.calls_of(generation)
    }

    /// When the deadline of call `call` in flight passes; `None` when no
    /// call deadline applies to it or it is not in flight. Changes nothing.
    pub fn call_due(&self, call: CallId) -> Option<Due> {
        self.calls
            .0
            .iter()
            .find(|(c, _)| *c == call)
            .and_then(|(_, f)| f.due)
    }

    /// A caller starts calling the live tool with this runtime name: the
    /// call is admitted (and is in flight until [`HostCore::call_finished`])
    /// or refused, and nothing runs. `now` is the shell's clock reading as
    /// the call starts: its deadline (H-12) counts from it.
    pub fn call_start(&mut self, tool: &str, now: Moment) -> Result<AdmittedCall, CallRefused> {
        let entry = match self.registry.get(tool) {
            _ if matches!(self.phase, Phase::Disposed(_)) => return Err(CallRefused::HostDisposed),
            None if self.phase != Phase::Open => return Err(CallRefused::HostDisposed),
            None => return Err(CallRefused::NotFound),
            Some(entry) => entry,
        };
        let Binding::Live(handle) = entry.binding else {
            return Err(CallRefused::Dormant {
                extension: entry.owner.to_string(),
            });
        };
        let owner = entry.owner.clone();
        let generation = match &owner {
            Owner::Extension(id) => self
                .extension(id)
                .and_then(|e| e.active())
                .map(|e| e.state().context),
            Owner::Base => None,
        };
        let extension = match &owner {
            Owner::Extension(id) => Some(&**id),
            Owner::Base => None,
        };
        let due = self
            .deadline_for(DeadlineStep::Call(extension))
            .map(|deadline| Due::from_start(now, deadline));
        let call = self.counters.call();
        self.calls.insert(
            call,
            InFlight {
                owner: owner.clone(),
                generation,
                due,
            },
        );
        Ok(AdmittedCall {
            call,
            tool: handle,
            owner,
            due,
        })
    }

    /// A call admitted by [`HostCore::call_start`] ended, read at `now`: it
    /// returned, or the shell's timer for its deadline fired. The core
    /// judges the reading against the call's deadline (INV-17): the reply
    /// says what its caller gets; when the shutdown waited for this call
    /// and it was its extension's last, the shutdown goes on (its next
    /// commands are in the outbox, its next step's deadline counting from
    /// `now`).
    pub fn call_finished(&mut self, call: CallId, now: Moment) -> CallVerdict {
        let Some(finished) = self.calls.remove(&call) else {
            // Abandoned by its extension's cleanup (its caller was answered
            // then), or never admitted: nothing of it is live any more.
            return CallVerdict::Discarded;
        };
        let late = finished
            .due
            .is_some_and(|due| self.judge(due, now).is_late());
        let verdict = if late {
            CallVerdict::TimedOut
        } else {
            CallVerdict::Delivered
        };
        if let Some(Running::Dispose(Dispose {
            op,
            cleanup,
            draining: true,
            ..
        })) = &self.running
            && let generation = cleanup.current().context
            && finished.generation == Some(generation)
            && self.calls_of(generation).is_empty()
        {
            let op = *op;
            self.now = now;
            self.stop_draining(op, Vec::new());
            self.now = Moment::ZERO;
        }
        verdict
    }
}
