//! Tool calls in flight, deadlines and lost steps: the inputs through which
//! time and task failures enter the core (H-11, H-12, INV-12).
//!
//! Architecture invariant: the shell never decides what a caller observes
//! here. Whether a call may start, whether a completion beat its deadline,
//! which extension's cleanup waits for which calls, and what a lost step
//! counts as are all answered by these functions, so the model checker
//! explores them.

use super::{HostCore, Mutant, Phase, Running};
use crate::core::ids::{CallId, OpId};
use crate::core::lifecycle::{Cancellation, ExtensionSlot};
use crate::core::outcome::*;
use crate::core::registry::{Binding, Owner};
use crate::error::codes;

/// One tool call in flight.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(in crate::core) struct InFlight {
    owner: Owner,
}

impl HostCore {
    /// Tool calls in flight, in the order they started, with their owners.
    pub fn calls_in_flight(&self) -> impl Iterator<Item = (CallId, &Owner)> + '_ {
        self.calls.iter().map(|(call, f)| (*call, &f.owner))
    }

    /// The calls in flight of extension `id`, in the order they started.
    fn calls_of(&self, id: &str) -> Vec<CallId> {
        self.calls
            .iter()
            .filter(|(_, f)| matches!(&f.owner, Owner::Extension(e) if e == id))
            .map(|(call, _)| *call)
            .collect()
    }

    /// `CallStart`: admit a call of a live tool, or refuse it.
    pub(super) fn call_start(&mut self, tool: &str) -> Vec<Effect> {
        let reply = match self.registry.get(tool) {
            _ if matches!(self.phase, Phase::Disposed(_)) => Err(CallRefused::HostDisposed),
            None if self.phase != Phase::Open => Err(CallRefused::HostDisposed),
            None => Err(CallRefused::NotFound),
            Some(entry) => match entry.binding {
                Binding::Dormant => Err(CallRefused::Dormant {
                    extension: entry.owner.to_string(),
                }),
                Binding::Live(handle) => {
                    let owner = entry.owner.clone();
                    let call = self.counters.call();
                    self.calls.insert(
                        call,
                        InFlight {
                            owner: owner.clone(),
                        },
                    );
                    Ok(AdmittedCall {
                        call,
                        tool: handle,
                        owner,
                    })
                }
            },
        };
        vec![Effect::CallAdmitted(reply)]
    }

    /// `CallFinished`: the call leaves the in-flight set; if shutdown waits
    /// for its extension's calls and this was the last, cleanup goes on.
    pub(super) fn call_finished(&mut self, call: CallId, deadline_passed: bool) -> Vec<Effect> {
        let Some(finished) = self.calls.remove(&call) else {
            // Abandoned by its extension's cleanup (its caller was answered
            // then), or never admitted: nothing of it is live any more.
            return vec![Effect::CallEnded(CallVerdict::Discarded)];
        };
        let verdict = if deadline_passed {
            CallVerdict::TimedOut
        } else {
            CallVerdict::Delivered
        };
        let mut effects = vec![Effect::CallEnded(verdict)];
        if let Some(Running::Dispose {
            op,
            steps,
            next,
            draining: true,
            ..
        }) = &self.running
            && finished.owner == Owner::Extension(steps[*next].extension.clone())
            && self.calls_of(&steps[*next].extension).is_empty()
        {
            let op = *op;
            effects.extend(self.stop_draining(op, Vec::new()));
        }
        effects
    }

    /// The next step of the running shutdown: before the first cleanup step
    /// of an extension, its calls in flight are cancelled and awaited.
    pub(super) fn next_dispose_step(&mut self, op: OpId) -> Vec<Effect> {
        let ignore_calls = self.mutant(Mutant::CleanupIgnoresCalls);
        let Some(Running::Dispose { steps, next, .. }) = &self.running else {
            return Vec::new();
        };
        let step = steps[*next].clone();
        let first_of_extension = *next == 0 || steps[*next - 1].extension != step.extension;
        let calls = if first_of_extension && !ignore_calls {
            self.calls_of(&step.extension)
        } else {
            Vec::new()
        };
        if calls.is_empty() {
            return vec![Effect::RunCleanup { op, step }];
        }
        if let Some(Running::Dispose { draining, .. }) = &mut self.running {
            *draining = true;
        }
        vec![Effect::CancelCalls { calls }]
    }

    /// Ends the wait for an extension's calls: abandon what is left, then
    /// run its first cleanup step.
    fn stop_draining(&mut self, op: OpId, abandoned: Vec<CallId>) -> Vec<Effect> {
        for call in &abandoned {
            self.calls.remove(call);
        }
        let Some(Running::Dispose {
            steps,
            next,
            draining,
            ..
        }) = &mut self.running
        else {
            return Vec::new();
        };
        *draining = false;
        let step = steps[*next].clone();
        let mut effects = Vec::new();
        if !abandoned.is_empty() {
            effects.push(Effect::AbandonCalls { calls: abandoned });
        }
        effects.push(Effect::RunCleanup { op, step });
        effects
    }

    /// `DeadlinePassed`: the awaited step's deadline passed. An activation
    /// is cancelled, and whatever it returns afterwards counts as timed
    /// out; a cleanup step is recorded as failed with `EXTENSION_TIMEOUT`
    /// and the next step runs; the calls shutdown waits for are abandoned.
    pub(super) fn deadline_passed(&mut self, op: OpId) -> Result<Vec<Effect>, ProtocolError> {
        self.check_running(op)?;
        match HostCore::awaiting(self) {
            Some(Awaiting::Factory(context) | Awaiting::Activate(context)) => {
                let Some(Running::Activation { ext, .. }) = &self.running else {
                    return Err(ProtocolError(format!("{op} is not an activation")));
                };
                let ext = *ext;
                let ExtensionSlot::Activating(a) = &mut self.exts[ext] else {
                    return Err(ProtocolError(format!("{op} has no activating extension")));
                };
                let a = a.state_mut();
                // A shutdown that fired the signal first keeps its cause.
                if a.cancelled.is_some() {
                    return Ok(Vec::new());
                }
                a.cancelled = Some(Cancellation::Deadline);
                Ok(vec![Effect::Cancel { context }])
            }
            Some(Awaiting::Cleanup(..)) => self.cleanup_finished(
                op,
                Err(Failure::coded(
                    codes::EXTENSION_TIMEOUT,
                    "the cleanup step did not settle within its deadline",
                )),
            ),
            Some(Awaiting::Calls(_, extension)) => {
                let left = self.calls_of(&extension);
                Ok(self.stop_draining(op, left))
            }
            _ => Err(ProtocolError(format!(
                "{op} awaits no step with a deadline"
            ))),
        }
    }

    /// `StepLost`: the task performing the awaited step is gone. The step
    /// fails with `EXTENSION_TASK_LOST`, exactly as if it had returned that
    /// error, and the operation goes on with its next step.
    pub(super) fn step_lost(&mut self, op: OpId) -> Result<Vec<Effect>, ProtocolError> {
        self.check_running(op)?;
        let lost = || {
            Err(Failure::coded(
                codes::EXTENSION_TASK_LOST,
                "the task running this step ended without a result",
            ))
        };
        match HostCore::awaiting(self) {
            Some(Awaiting::Factory(context)) => self.factory_returned(context, lost()),
            Some(Awaiting::Activate(context)) => self.activate_returned(context, lost()),
            Some(Awaiting::Hook(..)) => self.hook_finished(op, lost()),
            Some(Awaiting::Cleanup(..)) => self.cleanup_finished(op, lost()),
            Some(Awaiting::Calls(_, extension)) => {
                let left = self.calls_of(&extension);
                Ok(self.stop_draining(op, left))
            }
            _ => Err(ProtocolError(format!("{op} awaits no step"))),
        }
    }

    fn check_running(&self, op: OpId) -> Result<(), ProtocolError> {
        if self.running_op() == Some(op) {
            Ok(())
        } else {
            Err(ProtocolError(format!("{op} is not the running operation")))
        }
    }
}
