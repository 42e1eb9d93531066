//! Emit (H-10): one event to every live hook, in order; a failing hook is
//! a diagnostic and later hooks still run. Decides INV-8 (hook isolation).
//!
//! Architecture invariant: builds on `state.rs` only. The hooks an emit
//! delivers to are fixed when it begins (a persistent list, so the
//! snapshot costs O(1)) and travel with every `RunHook`.

use crate::ids::OpId;
use crate::mutant::Mutant;
use crate::outcome::{Failure, HookDiagnostic, OpOutcome};
use crate::protocol::{Effect, HookResults, ProtocolError};

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
        let emit = self
            .running_emit(op)
            .ok()
            .filter(|e| count == e.hooks.len() - e.next)
            .ok_or_else(|| {
                ProtocolError(format!(
                    "{op} is not an emit waiting for {count} hook results"
                ))
            })?;
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

    fn finish_emit(&mut self, op: OpId) {
        let diagnostics = match &mut self.running {
            Some(Running::Emit(e)) => std::mem::take(&mut e.diagnostics),
            _ => Vec::new(),
        };
        self.settle(op, OpOutcome::Emitted { diagnostics })
    }
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
