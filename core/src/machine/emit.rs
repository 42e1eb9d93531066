//! Emit (H-10): one event to every live hook, in order; a failing hook is
//! a diagnostic and later hooks still run. Decides INV-8 (hook isolation).
//!
//! Architecture invariant: builds on `state.rs` only. The hooks an emit
//! delivers to are fixed when it begins (a persistent list, so the
//! snapshot costs O(1)) and travel with every `RunHook`.

use std::time::Duration;

use crate::error::codes;
use crate::ids::OpId;
use crate::mutant::Mutant;
use crate::outcome::{Failure, HookDiagnostic, OpOutcome};
use crate::policy::DeadlineStep;
use crate::protocol::{Effect, HookResults, ProtocolError};
use crate::time::{Due, Moment};

use super::state::{Emit, HostCore, Running};

impl HostCore {
    pub(super) fn begin_emit(&mut self, op: OpId) {
        if self.hooks.is_empty() {
            let diagnostics = Vec::new();
            return self.settle(op, OpOutcome::Emitted { diagnostics });
        }
        let emit = Emit {
            op,
            hooks: self.hooks.clone(),
            next: 0,
            diagnostics: Vec::new(),
        };
        let run = run_hook(&emit);
        self.running = Some(Running::Emit(emit));
        self.command(run);
    }

    /// The running emit `op`, or why there is none.
    fn running_emit(&mut self, op: OpId) -> Result<&mut Emit, ProtocolError> {
        match &mut self.running {
            Some(Running::Emit(e)) if e.op == op => Ok(e),
            Some(Running::Emit(_)) => Err(ProtocolError(format!("{op} is not the running emit"))),
            _ => Err(ProtocolError(format!(
                "{op} is not an emit waiting for a hook"
            ))),
        }
    }

    /// H-12, INV-17: a hook whose readings (its start and its end) are the
    /// hook deadline or more apart timed out, whatever it returned.
    pub(super) fn judge_hook(
        &self,
        result: Result<(), Failure>,
        span: Option<(Moment, Moment)>,
    ) -> Result<(), Failure> {
        match (span, self.deadline_for(DeadlineStep::Hooks)) {
            (Some((began, ended)), Some(deadline))
                if self
                    .judge(Due::from_start(began, deadline), ended)
                    .is_late() =>
            {
                Err(hook_timed_out(deadline))
            }
            _ => result,
        }
    }

    /// `HookFinished`.
    pub(super) fn hook_finished(
        &mut self,
        op: OpId,
        result: Result<(), Failure>,
    ) -> Result<(), ProtocolError> {
        let stop_on_failure = self.mutant(Mutant::HookFailureStopsLater);
        let emit = self.running_emit(op)?;
        match hook_step(emit, result.as_ref().err(), stop_on_failure).then(|| run_hook(emit)) {
            Some(next) => self.command(next),
            None => self.finish_emit(op),
        }
        Ok(())
    }

    /// `HooksFinished`: the results of every remaining hook of the running
    /// emit, in order: exactly `HookFinished` applied once per result. Only
    /// the failures take a step each; the hooks that succeeded between them
    /// move the emit on together.
    pub(super) fn hooks_finished(
        &mut self,
        op: OpId,
        results: HookResults,
    ) -> Result<(), ProtocolError> {
        let stop_on_failure = self.mutant(Mutant::HookFailureStopsLater);
        let count = results.len();
        self.running_emit(op)
            .ok()
            .filter(|e| count == e.hooks.len() - e.next)
            .ok_or_else(|| {
                ProtocolError(format!(
                    "{op} is not an emit waiting for {count} hook results"
                ))
            })?;
        // Timed results: each hook's readings are judged first (a pass
        // over the readings, one comparison per hook).
        let judged;
        let results = match self.deadline_for(DeadlineStep::Hooks) {
            Some(deadline) if results.is_timed() => {
                judged = self.judge_hooks(results, deadline);
                &judged
            }
            _ => &results,
        };
        let emit = self.running_emit(op)?;
        let first = emit.next;
        let mut stopped = false;
        for (at, failure) in results.failures() {
            emit.next = first + at;
            if !hook_step(emit, Some(failure), stop_on_failure) {
                stopped = true;
                break;
            }
        }
        if !stopped {
            emit.next = first + count;
        }
        self.finish_emit(op);
        Ok(())
    }

    /// Timed results with every hook whose readings are `deadline` or more
    /// apart failed as timed out (INV-17).
    fn judge_hooks(&self, results: HookResults, deadline: Duration) -> HookResults {
        let late: Vec<usize> = (0..results.len())
            .filter(|i| {
                results.span(*i).is_some_and(|(began, ended)| {
                    self.judge(Due::from_start(began, deadline), ended)
                        .is_late()
                })
            })
            .collect();
        if late.is_empty() {
            return results;
        }
        let mut judged = HookResults::new();
        let mut late = late.into_iter().peekable();
        for (i, (result, _)) in results.into_results().enumerate() {
            match late.next_if_eq(&i) {
                Some(_) => judged.push(Err(hook_timed_out(deadline))),
                None => judged.push(result),
            }
        }
        judged
    }

    fn finish_emit(&mut self, op: OpId) {
        let diagnostics = match &mut self.running {
            Some(Running::Emit(e)) => std::mem::take(&mut e.diagnostics),
            _ => Vec::new(),
        };
        self.settle(op, OpOutcome::Emitted { diagnostics })
    }
}

/// A hook's failure for having outlived the hook `deadline`.
fn hook_timed_out(deadline: Duration) -> Failure {
    Failure::coded(
        codes::EXTENSION_TIMEOUT,
        format!("the hook did not settle within {deadline:?}"),
    )
}

/// The command to run the emit's next hook.
fn run_hook(emit: &Emit) -> Effect {
    Effect::RunHook {
        op: emit.op,
        hooks: emit.hooks.clone(),
        next: emit.next,
    }
}

/// One hook finished: record a failure as a diagnostic and say whether
/// another hook follows. This is the only place the emit protocol advances;
/// `HookFinished` and `HooksFinished` both go through it.
#[inline]
fn hook_step(emit: &mut Emit, failure: Option<&Failure>, stop_on_failure: bool) -> bool {
    let failed = failure.is_some();
    if let Some(failure) = failure {
        let hook = &emit.hooks[emit.next];
        emit.diagnostics.push(HookDiagnostic {
            extension_id: hook.extension.clone(),
            hook_index: hook.index,
            message: failure.to_string(),
        });
    }
    emit.next += 1;
    emit.next < emit.hooks.len() && !(failed && stop_on_failure)
}
