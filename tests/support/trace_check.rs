//! Trace validation of the shell against the core.
//!
//! A host built by the test support records every input its shell fed the
//! core, the public call that caused each request, and every piece of
//! extension code it ran. [`check`] replays the inputs through a fresh copy
//! of the same pure core and checks:
//! - every input is one the core accepts where it was fed (no protocol
//!   error), so the recorded run is a run of the core;
//! - the invariants that can be read off the core's state hold on every
//!   state of the run (INV-1, tools and providers; INV-4, INV-7, INV-10,
//!   INV-12);
//! - the extension code the shell ran is exactly what the core's commands
//!   asked for ([`Effect::code_run`], read from the drained outbox), in that
//!   order (operations' code), or once per admitted call (tools);
//! - every request comes from a public call entitled to make it, as the
//!   replayed core answers it (M-3, INV-14): `emit` activates only what
//!   the core's `triggered_by` names, `activate_eager` only what its
//!   `eager` names, `call_tool_activating` and `select_provider` only the
//!   extension the core's admission starts;
//! - an operation's inputs are fed by its driver, never on behalf of a
//!   public call, also while the driver runs in its caller's task.

use std::collections::{BTreeMap, BTreeSet};

use exthost::host::{CodeRun, CoreCall, PublicCall, Query, TraceEvent};
use exthost_core::{
    Binding, DormantCall, Drained, Effect, ExtensionSlot, HostCore, Input, OpId, OpKind, OpOutcome,
    Owner, Phase, ProviderSelection, Requested, Settled, Status,
};

/// What a replay found wrong, one line per violation.
pub fn check(events: &[TraceEvent]) -> Vec<String> {
    let mut replay = Replay::default();
    for (index, event) in events.iter().enumerate() {
        replay.event(index, event);
    }
    replay.finish();
    replay.violations
}

#[derive(Default)]
struct Replay {
    core: Option<HostCore>,
    kinds: BTreeMap<OpId, OpKind>,
    /// Operation code the commands asked for, in order; `true` marks code
    /// whose step the shell reported lost (`StepLost`): it may not have run.
    expected: Vec<(CodeRun, bool)>,
    /// Operation code the shell ran, in order.
    ran: Vec<CodeRun>,
    admitted: BTreeSet<exthost_core::CallId>,
    tools_ran: Vec<exthost_core::CallId>,
    disposed: bool,
    violations: Vec<String>,
}

impl Replay {
    fn violation(&mut self, index: usize, text: String) {
        if self.violations.len() < 20 {
            self.violations.push(format!("event {index}: {text}"));
        }
    }

    fn event(&mut self, index: usize, event: &TraceEvent) {
        match event {
            TraceEvent::Created(base) => match HostCore::new(base) {
                Ok((core, _)) => self.core = Some(core),
                Err(e) => self.violation(index, format!("the base tools do not replay: {e}")),
            },
            TraceEvent::Ran(CodeRun::Tool(call)) => {
                if !self.admitted.contains(call) {
                    self.violation(index, format!("tool {call} ran without being admitted"));
                }
                self.tools_ran.push(*call);
            }
            TraceEvent::Ran(code) => {
                if self.disposed {
                    self.violation(index, format!("{code:?} ran after shutdown completed"));
                }
                self.ran.push(code.clone());
            }
            TraceEvent::Input(call, cause) => self.input(index, call, cause.as_ref()),
        }
    }

    fn input(&mut self, index: usize, call: &CoreCall, cause: Option<&PublicCall>) {
        let Some(mut core) = self.core.take() else {
            self.violation(index, "an input before the host was created".into());
            return;
        };
        if let CoreCall::Ask(query) = call {
            // A question changes nothing: the replayed core must answer it
            // as the shell's did at the same point.
            let replayed = ask(&core, query);
            if replayed != **query {
                self.violation(
                    index,
                    format!("the shell acted on {query:?}; the core answers {replayed:?}"),
                );
            }
            self.core = Some(core);
            return;
        }
        let before = core.clone();
        let accepted = match call {
            CoreCall::Discover(batch) => {
                let _ = core.discover(batch.clone());
                Ok(())
            }
            CoreCall::Request(kind) => {
                self.entitled(index, &core, kind, cause);
                if let Requested::Enqueued(op) = core.request(kind.clone()) {
                    self.kinds.insert(op, kind.clone());
                }
                Ok(())
            }
            CoreCall::Withdraw(op) => core.withdraw(*op),
            CoreCall::Register {
                context,
                registration,
            } => {
                let _ = core.register(*context, registration.clone());
                Ok(())
            }
            CoreCall::SetDeadlines(deadlines) => {
                core.set_deadlines(*deadlines);
                Ok(())
            }
            CoreCall::CallStart { tool, now } => {
                if let Ok(admitted) = core.call_start(tool, *now) {
                    if self.disposed {
                        self.violation(index, "INV-12: a call admitted after shutdown".into());
                    }
                    self.admitted.insert(admitted.call);
                }
                Ok(())
            }
            CoreCall::CallFinished { call, now } => {
                let _ = core.call_finished(*call, *now);
                Ok(())
            }
            CoreCall::Ask(_) => unreachable!("answered above"),
            CoreCall::Step(input, now) => {
                if let Some(cause) = cause {
                    // An operation's inputs come from its driver, which
                    // serves no public call even while it runs in its
                    // caller's task.
                    self.violation(
                        index,
                        format!("{input:?} is fed on behalf of {cause:?}, not by its driver"),
                    );
                }
                self.step_input(&core, input);
                core.apply(input.clone(), *now)
            }
        };
        let said = core.drain_outbox();
        match accepted {
            Err(e) => self.violation(index, format!("the core refuses {call:?}: {e}")),
            Ok(()) => {
                self.outbox(index, &core, &said);
                self.invariants(index, &before, &core);
            }
        }
        self.core = Some(core);
    }

    /// What one input set off: the code its commands ask for, and what
    /// each settled operation says.
    fn outbox(&mut self, index: usize, core: &HostCore, said: &Drained) {
        for command in &said.commands {
            self.command(index, core, command);
        }
        for settled in &said.settled {
            self.settled(index, core, settled);
        }
    }

    /// What an input of the running operation says about the code run.
    fn step_input(&mut self, core: &HostCore, input: &Input) {
        // What a batch of hook results covers: the emit's list from the
        // hook asked for.
        if let Input::HooksFinished { op, results } = input
            && let Some(exthost_core::Awaiting::Hook(_, first)) = core.awaiting()
            && let Some(list) = core.emit_hooks(*op)
            && let Some(start) = list.iter().position(|h| h.hook == first.hook)
        {
            // The first was already expected from its RunHook effect.
            for hook in list
                .iter()
                .skip(start + 1)
                .take(results.len().saturating_sub(1))
            {
                self.expected.push((CodeRun::Hook(*op, hook.hook), false));
            }
        }
        if let Input::StepLost { .. } = input
            && let Some(last) = self.expected.last_mut()
        {
            // The step the core awaited ends without a result; whether its
            // code ran depends on when its task died.
            last.1 = true;
        }
    }

    fn command(&mut self, index: usize, core: &HostCore, command: &Effect) {
        if let Effect::RunCleanup { op, step } = command {
            if self.kinds.get(op) == Some(&OpKind::Dispose) {
                let busy: Vec<_> = core
                    .calls_in_flight()
                    .filter(|(_, owner)| **owner == Owner::extension(&step.extension))
                    .map(|(c, _)| c)
                    .collect();
                if !busy.is_empty() {
                    self.violation(
                        index,
                        format!(
                            "INV-12: cleanup of {} starts with calls {busy:?} in flight",
                            step.extension
                        ),
                    );
                }
            }
            if let Some(OpKind::Reload(_)) = self.kinds.get(op) {
                // A reload retires one generation while the next one's
                // calls go on: none of the retired generation's calls
                // may run when its cleanup starts.
                let busy = core.calls_of_generation(step.context);
                if !busy.is_empty() {
                    self.violation(
                            index,
                            format!(
                                "INV-12: cleanup of the old generation of {} starts with calls {busy:?} in flight",
                                step.extension
                            ),
                        );
                }
            }
        }
        if let Some(code) = command.code_run() {
            self.expect(code);
        }
    }

    fn settled(&mut self, index: usize, core: &HostCore, settled: &Settled) {
        if let OpOutcome::Disposed { .. } = settled.outcome {
            let left: Vec<_> = core
                .calls_in_flight()
                .filter(|(_, owner)| **owner != Owner::Base)
                .map(|(c, _)| c)
                .collect();
            if !left.is_empty() {
                self.violation(
                    index,
                    format!("INV-12: shutdown completed with calls {left:?} in flight"),
                );
            }
            self.disposed = true;
        }
    }

    fn expect(&mut self, code: CodeRun) {
        self.expected.push((code, false));
    }

    /// H-3/M-3/M-4: who may ask for what.
    fn entitled(
        &mut self,
        index: usize,
        core: &HostCore,
        kind: &OpKind,
        cause: Option<&PublicCall>,
    ) {
        let ok = match (kind, cause) {
            (OpKind::Activate(id), Some(PublicCall::Activate(asked))) => id == asked,
            (OpKind::Activate(id), Some(PublicCall::Emit(event))) => {
                core.triggered_by(event).contains(id)
            }
            (OpKind::Activate(id), Some(PublicCall::ActivateEager)) => core.eager().contains(id),
            (OpKind::Activate(id), Some(PublicCall::CallToolActivating(name))) => {
                core.admit_dormant_call(name)
                    == DormantCall::Start {
                        extension: id.clone(),
                    }
            }
            (OpKind::Activate(id), Some(PublicCall::SelectProvider { provider, model })) => {
                matches!(
                    core.select_provider(provider, model),
                    ProviderSelection::Dormant { extension } if extension == *id
                )
            }
            (OpKind::Emit, Some(PublicCall::Emit(_))) => true,
            (OpKind::Dispose, Some(PublicCall::Dispose)) => true,
            (OpKind::Reload(id), Some(PublicCall::Reload(asked))) => id == asked,
            (OpKind::Redefine(meta), Some(PublicCall::Redefine(asked))) => meta.id == *asked,
            _ => false,
        };
        if !ok {
            self.violation(
                index,
                format!("request {kind:?} by {cause:?}, which may not ask for it"),
            );
        }
    }

    fn invariants(&mut self, index: usize, before: &HostCore, core: &HostCore) {
        // INV-4: one operation at a time.
        if core.running_ops().len() > 1 {
            self.violation(index, "INV-4: two operations run at once".into());
        }
        // INV-7: only H-1's transitions.
        for slot in core.extensions() {
            let prev = before.extension(slot.id()).map(|e| e.status());
            let now = slot.status();
            use Status::*;
            let allowed = prev == Some(now)
                || matches!(
                    (prev, now),
                    (None, Discovered)
                        | (Some(Discovered), Activating)
                        | (Some(Activating), Active | Failed)
                        | (Some(Failed), Activating)
                        | (Some(Active), Disposed)
                );
            if !allowed {
                self.violation(
                    index,
                    format!("INV-7: {} went {prev:?} -> {now:?}", slot.id()),
                );
            }
        }
        // INV-1: live tools are exactly the base tools and the active
        // extensions' contributions; dormant ones belong to extensions not
        // active.
        let mut live = BTreeSet::new();
        for entry in core.registry().iter() {
            match (&entry.owner, entry.binding) {
                (Owner::Base, Binding::Live(_)) => {}
                (Owner::Extension(id), Binding::Live(tool)) => {
                    let ok = matches!(core.extension(id), Some(ExtensionSlot::Active(a))
                        if a.state().contribution.tools.iter().any(|(t, _)| *t == tool));
                    if !ok {
                        self.violation(
                            index,
                            format!(
                                "INV-1: {} is live but {id} is not active with it",
                                entry.name
                            ),
                        );
                    }
                    live.insert(tool);
                }
                (Owner::Extension(id), Binding::Dormant) => {
                    if core.extension(id).map(|e| e.status()) == Some(Status::Active) {
                        self.violation(
                            index,
                            format!("INV-1: {} stays dormant though {id} is active", entry.name),
                        );
                    }
                }
                (Owner::Base, Binding::Dormant) => {
                    self.violation(index, format!("INV-1: base tool {} is dormant", entry.name))
                }
            }
            // INV-10: the API name maps back.
            let back = core
                .registry()
                .get_by_api_name(&entry.api_name)
                .map(|e| e.name.clone());
            if back.as_deref() != Some(entry.name.as_str()) {
                self.violation(
                    index,
                    format!(
                        "INV-10: {} does not map back from {}",
                        entry.name, entry.api_name
                    ),
                );
            }
        }
        // Shutdown empties the registry in its first step and then cleans
        // the extensions up one by one.
        let shutting_down = matches!(core.phase(), Phase::Disposed(_))
            || core.running_op().and_then(|op| self.kinds.get(&op)) == Some(&OpKind::Dispose);
        for slot in core.extensions().iter().filter(|_| !shutting_down) {
            if let Some(contribution) = slot.live() {
                for (tool, spec) in &contribution.tools {
                    if !live.contains(tool) {
                        self.violation(
                            index,
                            format!("INV-1: {}'s {} is not live", slot.id(), spec.name),
                        );
                    }
                }
                // M-8: an active contribution's providers are live as
                // committed.
                for provider in &contribution.providers {
                    let entry = core.registry().provider(&provider.id);
                    if entry.map(|e| &e.record) != Some(provider) {
                        self.violation(
                            index,
                            format!(
                                "INV-1: {}'s provider {} is not live",
                                slot.id(),
                                provider.id
                            ),
                        );
                    }
                }
            }
        }
        // M-8: a live provider belongs to the contribution of an active
        // extension, never to a discovered, activating or failed one.
        for entry in core.registry().providers() {
            let Owner::Extension(id) = &entry.owner else {
                self.violation(
                    index,
                    format!("INV-1: provider {} has no owner", entry.record.id),
                );
                continue;
            };
            let committed = core
                .extension(id)
                .and_then(ExtensionSlot::live)
                .is_some_and(|c| c.providers.contains(&entry.record));
            if !committed {
                self.violation(
                    index,
                    format!(
                        "INV-1: provider {} is live but {id} is not active with it",
                        entry.record.id
                    ),
                );
            }
        }
    }

    fn finish(&mut self) {
        // A run may end mid-operation (its hooks ran, their results not yet
        // fed): the code run may go beyond what was asked so far, never
        // fall short of it or differ from it, except for steps reported
        // lost, which may not have run.
        let mut ran = self.ran.iter().peekable();
        for (i, (asked, lost)) in self.expected.iter().enumerate() {
            match ran.peek() {
                Some(code) if *code == asked => {
                    ran.next();
                }
                _ if *lost => {}
                other => {
                    self.violations.push(format!(
                        "the extension code run differs from what the core asked for, first at \
                         {i}: asked {asked:?}, ran {other:?} ({} asked, {} ran)",
                        self.expected.len(),
                        self.ran.len()
                    ));
                    break;
                }
            }
        }
        let mut ran = self.tools_ran.clone();
        ran.sort();
        let before = ran.len();
        ran.dedup();
        if ran.len() != before {
            self.violations.push("a tool call ran twice".into());
        }
    }
}

/// `query` as the replayed `core` answers it.
fn ask(core: &HostCore, query: &Query) -> Query {
    match query.clone() {
        Query::TriggeredBy { event, .. } => Query::TriggeredBy {
            answer: core.triggered_by(&event),
            event,
        },
        Query::Eager { .. } => Query::Eager {
            answer: core.eager(),
        },
        Query::AdmitDormantCall { tool, .. } => Query::AdmitDormantCall {
            answer: core.admit_dormant_call(&tool),
            tool,
        },
        Query::SelectProvider {
            provider, model, ..
        } => Query::SelectProvider {
            answer: core.select_provider(&provider, &model),
            provider,
            model,
        },
        Query::IsRevoked { extension, .. } => Query::IsRevoked {
            answer: core.is_revoked(&extension),
            extension,
        },
        Query::CallPlacement {
            owner,
            outlives_caller,
            executor,
            ..
        } => Query::CallPlacement {
            answer: core.call_placement(owner.as_deref(), outlives_caller, executor),
            owner,
            outlives_caller,
            executor,
        },
        Query::HookPlacement { executor, .. } => Query::HookPlacement {
            answer: core.hook_placement(executor),
            executor,
        },
        Query::ActivationPlacement { extension, .. } => Query::ActivationPlacement {
            answer: core.activation_placement(&extension),
            extension,
        },
        Query::PollTimeout { .. } => Query::PollTimeout {
            answer: core.poll_timeout(),
        },
        Query::Awaiting { .. } => Query::Awaiting {
            answer: core.awaiting(),
        },
        Query::RunningOp { .. } => Query::RunningOp {
            answer: core.running_op(),
        },
        Query::IsQueued { op, .. } => Query::IsQueued {
            answer: core.is_queued(op),
            op,
        },
        Query::Statuses { .. } => Query::Statuses {
            answer: core.statuses(),
        },
        Query::Status { extension, .. } => Query::Status {
            answer: core.extension(&extension).map(|e| e.status()),
            extension,
        },
        Query::Active { .. } => Query::Active {
            answer: core
                .activation_order()
                .iter()
                .filter(|id| core.extension(id).map(|e| e.status()) == Some(Status::Active))
                .cloned()
                .collect(),
        },
    }
}
