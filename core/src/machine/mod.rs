//! The host's transition code, one file per operation. This file decides
//! INV-9 (liveness): every input that ends a step (a result, a deadline, a
//! lost task) reaches whatever step runs, so every operation settles;
//! INV-15: [`HostCore::apply`] takes back what a refused input put in the
//! outbox, and every refusal returns before it changes the state; and
//! INV-16: a passed deadline that cancels the running activation sends its
//! `Cancel` in the same step (a shutdown's does so in `dispose.rs`).
//!
//! Architecture invariants (imports go one way, top to bottom; no file of
//! `machine/` imports one above it):
//! - `mod.rs` (this file): [`HostCore::apply`], the running operation's
//!   inputs, and the inputs that reach whatever step runs (cleanup results,
//!   deadlines, lost steps). Nothing imports it but the core's root.
//! - `calls.rs`: tool calls in flight.
//! - `admission.rs`: building a host, requests, withdrawals, `Begin`, and
//!   the queries.
//! - `activation.rs`, `emit.rs`, `dispose.rs`, `discovery.rs`,
//!   `reload.rs`, `redefine.rs`: one operation each (`redefine.rs` checks
//!   a new definition through `discovery.rs`, and an active extension's
//!   redefinition then runs as a reload). `dispose.rs` and `reload.rs` share
//!   the cleanup steps through `state.rs`; `activation.rs` still calls
//!   `reload.rs` for a reload's candidate and commit (a reload is an
//!   activation with another purpose).
//! - `probes.rs`: the seeded bugs' bodies, one statement at each site.
//! - `canonical.rs`: the walk over every handle the host holds, for
//!   canonical states (it builds on `state.rs` and on [`crate::canonical`]
//!   only; no transition uses it).
//! - `symmetry.rs`: when two extensions are interchangeable, and their
//!   exchange in every place the host keeps an extension id, for canonical
//!   states (it builds on `state.rs` only; no transition uses it).
//! - `state.rs`: [`HostCore`] itself, the running operation, the cleanup
//!   cursor and plan.
//! - `policy.rs`: INV-14 and M-3, who may start an extension (the
//!   grants a declaration mismatch revokes, the event triggers, the eager
//!   set) and which deadline applies to a step (H-12); builds on
//!   `state.rs` and `probes.rs` only.
//! - `providers.rs`: M-8, the providers of a candidate (declaration match,
//!   clash) and provider selection; builds on `state.rs`, the core's
//!   [`crate::declarations`] and `probes.rs` only.
//!
//! The declaration checks (M-5) sit below the machine, in
//! [`crate::declarations`], as `outcome` needs their error type; they are
//! re-exported here as `machine::declarations` for existing paths.

mod activation;
mod admission;
mod calls;
mod canonical;
mod discovery;
mod dispose;
mod emit;
mod policy;
mod probes;
mod providers;
mod redefine;
mod reload;
mod state;
mod symmetry;

pub use crate::declarations;
pub use declarations::{
    DeclarationMismatch, MISMATCH_REASON_CODES, MismatchReason, check_declarations,
    check_provider_declarations,
};
pub use policy::DormantCall;
pub use providers::ProviderSelection;
pub use state::{HostCore, Phase};

use crate::error::codes;
use crate::ids::OpId;
use crate::lifecycle::Cancellation;
use crate::outcome::Failure;
use crate::protocol::{Awaiting, Effect, Input, ProtocolError};
use crate::time::Moment;
use state::{Activation, ActivationStep, Running};

impl HostCore {
    /// Applies one input of the running operation (or the `Begin` of the
    /// next); what it sets off waits in the outbox
    /// ([`HostCore::poll_command`], [`HostCore::poll_published`],
    /// [`HostCore::poll_settled`]). An input that is not valid now changes
    /// nothing, adds nothing to the outbox, and is an error.
    ///
    /// `now` is the shell's clock reading as it applies the input (H-12):
    /// the end of the step the input reports, which the core judges against
    /// that step's deadline (INV-17), and the start of whatever step the
    /// input sets off.
    pub fn apply(&mut self, input: Input, now: Moment) -> Result<(), ProtocolError> {
        let mark = self.outbox.mark();
        let due = self.due;
        self.now = now;
        let applied = self.step(input);
        self.now = Moment::ZERO;
        applied.inspect_err(|_| {
            self.outbox.roll_back(mark);
            self.due = due;
        })
    }

    /// The instant the core needs to be woken at, when the step the running
    /// operation awaits has a deadline that has not been acted on: the
    /// shell arms one timer for it and applies [`Input::Timeout`] when it
    /// fires. Changes nothing.
    pub fn poll_timeout(&self) -> Option<Moment> {
        self.due.map(|due| due.at)
    }

    fn step(&mut self, input: Input) -> Result<(), ProtocolError> {
        match input {
            Input::Begin(op) => self.begin(op),
            Input::FactoryReturned { context, result } => {
                self.judge_completion(Awaiting::Factory(context));
                self.factory_returned(context, result)
            }
            Input::ActivateReturned { context, result } => {
                self.judge_completion(Awaiting::Activate(context));
                self.activate_returned(context, result)
            }
            Input::HookFinished { op, result, span } => {
                let result = self.judge_hook(result, span);
                self.hook_finished(op, result)
            }
            Input::HooksFinished { op, results } => self.hooks_finished(op, results),
            Input::CleanupFinished { op, result } => {
                let late = self.due_passed()
                    && matches!(self.awaiting(), Some(Awaiting::Cleanup(running, _)) if running == op);
                if late {
                    return self.deadline_passed(op);
                }
                self.cleanup_finished(op, result)
            }
            Input::Timeout { op } => {
                self.check_running(op)?;
                if self.due_passed() {
                    self.deadline_passed(op)
                } else {
                    Ok(())
                }
            }
            Input::StepLost { op } => self.step_lost(op),
        }
    }

    /// Whether the deadline of the awaited step has passed at the reading
    /// of the input being applied (INV-17).
    fn due_passed(&self) -> bool {
        self.due
            .is_some_and(|due| self.judge(due, self.now).is_late())
    }

    /// A completion of the activation step `step` read at or after the
    /// activation's deadline: the deadline passes first (the activation is
    /// cancelled), and the completion is the deadline's.
    fn judge_completion(&mut self, step: Awaiting) {
        // The cheap test first: `awaiting` clones what the step awaits.
        if self.due_passed()
            && self.awaiting() == Some(step)
            && let Some(op) = self.running_op()
        {
            let _ = self.deadline_passed(op);
        }
    }

    /// `CleanupFinished`: a rollback's or the shutdown's step finished.
    fn cleanup_finished(
        &mut self,
        op: OpId,
        result: Result<(), Failure>,
    ) -> Result<(), ProtocolError> {
        match self.running.take() {
            Some(Running::Activation(Activation {
                op: running,
                extension,
                step: ActivationStep::Rollback { cause, cleanup },
                purpose,
            })) if running == op => {
                let a = Activation {
                    op,
                    extension,
                    step: ActivationStep::Factory,
                    purpose,
                };
                self.rollback_step_finished(a, cause, cleanup, result);
                Ok(())
            }
            Some(Running::Dispose(d)) if d.op == op && !d.draining => {
                self.dispose_step_finished(d, result);
                Ok(())
            }
            other => {
                self.running = other;
                Err(ProtocolError(format!(
                    "{op} is not waiting for a cleanup step"
                )))
            }
        }
    }

    /// The awaited step's deadline passed. An activation is cancelled, and
    /// whatever it returns afterwards counts as timed out; a cleanup step
    /// is recorded as failed with `EXTENSION_TIMEOUT` and the next step
    /// runs; the calls shutdown waits for are abandoned.
    fn deadline_passed(&mut self, op: OpId) -> Result<(), ProtocolError> {
        self.check_running(op)?;
        let deadline = self.due.map(|due| due.deadline);
        // Acted on: nothing more to wake the shell for until a new step.
        self.due = None;
        match HostCore::awaiting(self) {
            Some(Awaiting::Factory(context) | Awaiting::Activate(context)) => {
                let Some(Running::Activation(a)) = &mut self.running else {
                    return Err(ProtocolError(format!("{op} is not an activation")));
                };
                let a = a.extension.state_mut();
                // A shutdown that fired the signal first keeps its cause.
                if a.cancelled.is_some() {
                    return Ok(());
                }
                a.cancelled = Some(Cancellation::Deadline);
                if !self.mutant(crate::mutant::Mutant::DeadlineDropsCancel) {
                    self.command(Effect::Cancel { context });
                }
                Ok(())
            }
            Some(Awaiting::Cleanup(..)) => self.cleanup_finished(
                op,
                Err(Failure::coded(
                    codes::EXTENSION_TIMEOUT,
                    match deadline {
                        Some(d) => format!("the cleanup step did not settle within {d:?}"),
                        None => "the cleanup step did not settle within its deadline".to_owned(),
                    },
                )),
            ),
            Some(Awaiting::Calls(..)) => {
                let left = self.draining_calls();
                self.stop_draining(op, left);
                Ok(())
            }
            _ => Err(ProtocolError(format!(
                "{op} awaits no step with a deadline"
            ))),
        }
    }

    /// `StepLost`: the task performing the awaited step is gone. The step
    /// fails with `EXTENSION_TASK_LOST`, exactly as if it had returned that
    /// error, and the operation goes on with its next step.
    fn step_lost(&mut self, op: OpId) -> Result<(), ProtocolError> {
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
            Some(Awaiting::Calls(..)) => {
                let left = self.draining_calls();
                self.stop_draining(op, left);
                Ok(())
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
