//! The one way to the pure core: every input the shell feeds it and every
//! question it asks it, each recorded (a question with its answer) when a
//! test records the run, so a trace replay sees all of them.
//!
//! Architecture invariants:
//! - The only module of `host/` that makes or holds a [`HostCore`]; the
//!   shell owns the one [`CoreLink`] and calls it under its lock, so inputs
//!   and questions are recorded in the order the core saw them.
//! - Depends on `trace` and `clock` only. It decides nothing: each method
//!   is the core's method of the same name, recorded; an input that ends
//!   or starts a step goes with the clock reading taken as it is applied,
//!   and the core judges it (H-12, INV-17).

use std::sync::Arc;

use exthost_core::{
    AdmittedCall, Awaiting, CallId, CallRefused, CallVerdict, ContextId, Deadlines, DefinitionMeta,
    DiscoveryError, DormantCall, Effect, Executor, HostCore, Input, OpId, OpKind, Placement,
    ProtocolError, ProviderSelection, Registered, Registration, RegistryError, Requested, Settled,
    Status, ToolRef, ToolRegistry, ToolSpec,
};

use super::clock::Clock;
use super::trace::{CoreCall, Query, Recorder, TraceEvent};

/// The core, the host's clock its inputs are read on, and the recording
/// of both.
pub(crate) struct CoreLink {
    core: HostCore,
    clock: Clock,
    recorder: Option<Arc<Recorder>>,
}

impl CoreLink {
    /// A new core with these base tools (recorded first, when recording),
    /// and the handles it gave them, in order.
    pub fn create(
        base_tools: Vec<ToolSpec>,
        deadlines: Deadlines,
        recorder: Option<Arc<Recorder>>,
    ) -> Result<(Self, Vec<ToolRef>), RegistryError> {
        let (mut core, refs) = HostCore::new(&base_tools)?;
        if let Some(recorder) = &recorder {
            recorder.note(TraceEvent::Created(base_tools));
        }
        core.set_deadlines(deadlines);
        let link = Self {
            core,
            clock: Clock::start(),
            recorder,
        };
        link.record(|| CoreCall::SetDeadlines(deadlines));
        Ok((link, refs))
    }

    /// The host's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Records a call into the core, when recording.
    fn record(&self, call: impl FnOnce() -> CoreCall) {
        if let Some(recorder) = &self.recorder {
            recorder.input(call());
        }
    }

    /// Records a question and its answer, when recording.
    fn asked(&self, query: impl FnOnce() -> Query) {
        self.record(|| CoreCall::Ask(Box::new(query())));
    }

    // Inputs.

    pub fn apply(&mut self, input: Input) -> Result<(), ProtocolError> {
        let now = self.clock.now();
        self.record(|| CoreCall::Step(input.clone(), now));
        self.core.apply(input, now)
    }

    pub fn discover(&mut self, batch: Vec<DefinitionMeta>) -> Result<(), DiscoveryError> {
        self.record(|| CoreCall::Discover(batch.clone()));
        self.core.discover(batch)
    }

    pub fn request(&mut self, kind: OpKind) -> Requested {
        self.record(|| CoreCall::Request(kind.clone()));
        self.core.request(kind)
    }

    pub fn withdraw(&mut self, op: OpId) -> Result<(), ProtocolError> {
        self.record(|| CoreCall::Withdraw(op));
        self.core.withdraw(op)
    }

    pub fn register(
        &mut self,
        context: ContextId,
        registration: Registration,
    ) -> Result<Registered, exthost_core::ContextClosed> {
        self.record(|| CoreCall::Register {
            context,
            registration: registration.clone(),
        });
        self.core.register(context, registration)
    }

    pub fn call_start(&mut self, tool: &str) -> Result<AdmittedCall, CallRefused> {
        let now = self.clock.now();
        self.record(|| CoreCall::CallStart {
            tool: tool.to_owned(),
            now,
        });
        self.core.call_start(tool, now)
    }

    pub fn call_finished(&mut self, call: CallId) -> CallVerdict {
        let now = self.clock.now();
        self.record(|| CoreCall::CallFinished { call, now });
        self.core.call_finished(call, now)
    }

    // The outbox: what the inputs set off (a replay drains its own).

    pub fn poll_command(&mut self) -> Option<Effect> {
        self.core.poll_command()
    }

    pub fn poll_published(&mut self) -> bool {
        self.core.poll_published()
    }

    pub fn poll_settled(&mut self) -> Option<Settled> {
        self.core.poll_settled()
    }

    /// The registry the last publication committed.
    pub fn registry(&self) -> &ToolRegistry {
        self.core.registry()
    }

    // Questions.

    pub fn triggered_by(&self, event: &str) -> Vec<String> {
        let answer = self.core.triggered_by(event);
        self.asked(|| Query::TriggeredBy {
            event: event.to_owned(),
            answer: answer.clone(),
        });
        answer
    }

    pub fn eager(&self) -> Vec<String> {
        let answer = self.core.eager();
        self.asked(|| Query::Eager {
            answer: answer.clone(),
        });
        answer
    }

    pub fn admit_dormant_call(&self, tool: &str) -> DormantCall {
        let answer = self.core.admit_dormant_call(tool);
        self.asked(|| Query::AdmitDormantCall {
            tool: tool.to_owned(),
            answer: answer.clone(),
        });
        answer
    }

    pub fn select_provider(&self, provider: &str, model: &str) -> ProviderSelection {
        let answer = self.core.select_provider(provider, model);
        self.asked(|| Query::SelectProvider {
            provider: provider.to_owned(),
            model: model.to_owned(),
            answer: answer.clone(),
        });
        answer
    }

    pub fn is_revoked(&self, extension: &str) -> bool {
        let answer = self.core.is_revoked(extension);
        self.asked(|| Query::IsRevoked {
            extension: extension.to_owned(),
            answer,
        });
        answer
    }

    /// `call_placement` of a call just admitted (the core answers from
    /// the deadline its admission chose).
    pub fn call_placement(
        &self,
        admitted: &AdmittedCall,
        outlives_caller: bool,
        executor: Executor,
    ) -> Placement {
        let answer = self
            .core
            .admitted_call_placement(admitted, outlives_caller, executor);
        self.asked(|| Query::CallPlacement {
            owner: admitted.owner.extension_id().map(str::to_owned),
            outlives_caller,
            executor,
            answer,
        });
        answer
    }

    pub fn hook_placement(&self, executor: Executor) -> Placement {
        let answer = self.core.hook_placement(executor);
        self.asked(|| Query::HookPlacement { executor, answer });
        answer
    }

    pub fn activation_placement(&self, extension: &str) -> Placement {
        let answer = self.core.activation_placement(extension);
        self.asked(|| Query::ActivationPlacement {
            extension: extension.to_owned(),
            answer,
        });
        answer
    }

    /// The instant the core needs to be woken at, as a timer's instant.
    pub fn poll_timeout(&self) -> Option<tokio::time::Instant> {
        let answer = self.core.poll_timeout();
        self.asked(|| Query::PollTimeout { answer });
        answer.map(|at| self.clock.instant(at))
    }

    pub fn awaiting(&self) -> Option<Awaiting> {
        let answer = self.core.awaiting();
        self.asked(|| Query::Awaiting {
            answer: answer.clone(),
        });
        answer
    }

    pub fn running_op(&self) -> Option<OpId> {
        let answer = self.core.running_op();
        self.asked(|| Query::RunningOp { answer });
        answer
    }

    pub fn is_queued(&self, op: OpId) -> bool {
        let answer = self.core.is_queued(op);
        self.asked(|| Query::IsQueued { op, answer });
        answer
    }

    pub fn statuses(&self) -> Vec<(String, Status)> {
        let answer = self.core.statuses();
        self.asked(|| Query::Statuses {
            answer: answer.clone(),
        });
        answer
    }

    pub fn status(&self, extension: &str) -> Option<Status> {
        let answer = self.core.extension(extension).map(|e| e.status());
        self.asked(|| Query::Status {
            extension: extension.to_owned(),
            answer,
        });
        answer
    }

    pub fn active(&self) -> Vec<String> {
        let answer: Vec<String> = self
            .core
            .activation_order()
            .iter()
            .filter(|id| self.core.extension(id).map(|e| e.status()) == Some(Status::Active))
            .cloned()
            .collect();
        self.asked(|| Query::Active {
            answer: answer.clone(),
        });
        answer
    }
}
