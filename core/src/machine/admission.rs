//! Admission and queries: building a host, callers' requests joining the
//! queue (H-3), withdrawals, the head of the queue beginning, and every
//! read-only view of the state.
//!
//! Decides INV-4 (serialization): one operation runs at a time, and the
//! queue begins them in call order.
//!
//! Architecture invariant: admission dispatches a beginning operation to
//! `activation.rs`, `emit.rs` or `dispose.rs` and otherwise builds on
//! `state.rs`; no operation file depends on this one.

use std::collections::VecDeque;

use rpds::VectorSync;

use crate::ids::{ContextId, Counters, OpId, ToolRef};
use crate::lifecycle::{Cancellation, ExtensionSlot, Status};
use crate::mutant::Mutant;
use crate::outbox::Outbox;
use crate::outcome::{LiveHook, OpKind};
use crate::protocol::{Awaiting, Effect, ProtocolError, Rejection, Requested};
use crate::registry::{Binding, Owner, RegistryError, ToolRegistry, ToolSpec};

use super::state::{ActivationStep, CallTable, HostCore, Phase, Queued, Running};

impl HostCore {
    /// A host with these base tools, published first (H-9). Returns the
    /// handles the shell binds the base handlers to, in the given order.
    pub fn new(base_tools: &[ToolSpec]) -> Result<(Self, Vec<ToolRef>), RegistryError> {
        let mut core = HostCore {
            exts: Vec::new(),
            index: rpds::RedBlackTreeMapSync::new_sync(),
            registry: ToolRegistry::new(),
            hooks: VectorSync::new_sync(),
            activation_order: Vec::new(),
            queue: VecDeque::new(),
            running: None,
            phase: Phase::Open,
            counters: Counters::default(),
            calls: CallTable::default(),
            revoked: std::collections::BTreeSet::new(),
            deadlines: crate::policy::Deadlines::NONE,
            due: None,
            now: crate::time::Moment::ZERO,
            outbox: Outbox::default(),
            #[cfg(feature = "mutants")]
            mutant: None,
            #[cfg(feature = "mutants")]
            suspended: Vec::new(),
        };
        let mut refs = Vec::with_capacity(base_tools.len());
        for spec in base_tools {
            let tool = core.counters.tool();
            core.registry
                .insert(spec, Owner::Base, Binding::Live(tool))?;
            refs.push(tool);
        }
        Ok((core, refs))
    }

    /// A caller asks for an operation: it joins the queue, or joins the
    /// dispose already asked for, or is refused. A `dispose` cancels the
    /// queued activations and fires the pending activation's signal (H-11).
    pub fn request(&mut self, kind: OpKind) -> Requested {
        match (self.phase, &kind) {
            (Phase::Closing(first) | Phase::Disposed(first), OpKind::Dispose) => {
                Requested::JoinDispose(first)
            }
            (Phase::Closing(_) | Phase::Disposed(_), _) => {
                Requested::Rejected(Rejection::HostDisposed)
            }
            (Phase::Open, _) => {
                let op = self.counters.op();
                if kind == OpKind::Dispose {
                    self.phase = Phase::Closing(op);
                    for q in self.queue.iter_mut() {
                        if matches!(
                            q.kind,
                            OpKind::Activate(_) | OpKind::Reload(_) | OpKind::Redefine(_)
                        ) {
                            q.cancelled = true;
                        }
                    }
                    if !self.mutant(Mutant::NoCancelOnDispose)
                        && let Some(Running::Activation(a)) = &mut self.running
                        && !matches!(a.step, ActivationStep::Rollback { .. })
                        && a.extension.state().cancelled.is_none()
                    {
                        a.extension.state_mut().cancelled = Some(Cancellation::Shutdown);
                        let context = a.context();
                        self.command(Effect::Cancel { context });
                    }
                }
                self.queue.push_back(Queued {
                    op,
                    kind,
                    cancelled: false,
                });
                Requested::Enqueued(op)
            }
        }
    }

    /// A caller dropped its request before it began (H-3): it leaves the
    /// queue. A begun operation, or a dispose, is never withdrawn.
    pub fn withdraw(&mut self, op: OpId) -> Result<(), ProtocolError> {
        if self.running_ops().contains(&op) {
            return Err(ProtocolError(format!(
                "{op} has begun and cannot be withdrawn"
            )));
        }
        if let Some(pos) = self.queue.iter().position(|q| q.op == op) {
            if self.queue[pos].kind == OpKind::Dispose {
                return Err(ProtocolError(format!(
                    "{op} is a dispose, which is never withdrawn"
                )));
            }
            self.queue.remove(pos);
        }
        Ok(())
    }

    /// `Begin`: the head of the queue begins, once nothing else runs.
    pub(super) fn begin(&mut self, op: OpId) -> Result<(), ProtocolError> {
        let Some(head) = self.queue.front() else {
            return Err(ProtocolError(format!("{op} is not queued")));
        };
        if head.op != op {
            return Err(ProtocolError(format!(
                "{op} is not at the head of the queue ({} is)",
                head.op
            )));
        }
        if self.running.is_some() && !self.mutant(Mutant::StartBeforeSettled) {
            self.probe_refusal_pops_queue();
            return Err(ProtocolError(format!(
                "{op} cannot begin while another operation runs"
            )));
        }
        self.probe_suspend_running();
        let Some(queued) = self.queue.pop_front() else {
            return Err(ProtocolError(format!("{op} is not queued")));
        };
        match queued.kind {
            OpKind::Activate(id) => self.begin_activation(op, id, queued.cancelled),
            OpKind::Emit => self.begin_emit(op),
            OpKind::Dispose => self.begin_dispose(op),
            OpKind::Reload(id) => self.begin_reload(op, id, queued.cancelled),
            OpKind::Redefine(meta) => self.begin_redefine(op, *meta, queued.cancelled),
        }
        Ok(())
    }

    // ----- queries -----

    /// The context of the running activation whose cancellation the core
    /// has decided (a shutdown or a passed deadline): in the step that
    /// decided it, the core told the shell to fire its signal
    /// ([`Effect::Cancel`](crate::Effect::Cancel), INV-16).
    pub fn cancelled_activation(&self) -> Option<ContextId> {
        match &self.running {
            Some(Running::Activation(a)) if a.extension.state().cancelled.is_some() => {
                Some(a.context())
            }
            _ => None,
        }
    }

    /// Extensions in discovery order.
    pub fn extensions(&self) -> &[ExtensionSlot] {
        &self.exts
    }

    /// The extension with this id.
    pub fn extension(&self, id: &str) -> Option<&ExtensionSlot> {
        self.index.get(id).map(|&i| &self.exts[i])
    }

    /// `(id, status)` in discovery order.
    pub fn statuses(&self) -> Vec<(String, Status)> {
        self.exts
            .iter()
            .map(|e| (e.id().to_owned(), e.status()))
            .collect()
    }

    /// The live registry. Cloning it is O(1) and detached (H-9).
    pub fn registry(&self) -> &ToolRegistry {
        &self.registry
    }

    /// Live hooks in delivery order (H-10).
    pub fn live_hooks(&self) -> &VectorSync<LiveHook> {
        &self.hooks
    }

    /// Ids of active extensions in activation order.
    pub fn activation_order(&self) -> &[String] {
        &self.activation_order
    }

    /// Queued operations not yet begun, in call order.
    pub fn queued(&self) -> Vec<(OpId, OpKind)> {
        self.queue.iter().map(|q| (q.op, q.kind.clone())).collect()
    }

    /// True while `op` waits in the queue (requested, not begun, not withdrawn).
    pub fn is_queued(&self, op: OpId) -> bool {
        self.queue.iter().any(|q| q.op == op)
    }

    /// Operations begun and not settled (more than one only under a seeded bug).
    pub fn running_ops(&self) -> Vec<OpId> {
        let mut ops = self.probe_suspended_ops();
        ops.extend(self.running_op());
        ops
    }

    /// The host's phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// What the core waits for next, if anything.
    pub fn awaiting(&self) -> Option<Awaiting> {
        Some(match self.running.as_ref() {
            None => Awaiting::Begin(self.queue.front()?.op),
            Some(Running::Activation(a)) => match &a.step {
                ActivationStep::Factory => Awaiting::Factory(a.context()),
                ActivationStep::Activate => Awaiting::Activate(a.context()),
                ActivationStep::Rollback { cleanup, .. } => {
                    Awaiting::Cleanup(a.op, cleanup.current().clone())
                }
            },
            Some(Running::Emit(e)) => Awaiting::Hook(e.op, e.hooks[e.next].clone()),
            Some(Running::Dispose(d)) if d.draining => {
                Awaiting::Calls(d.op, d.cleanup.current().extension.clone())
            }
            Some(Running::Dispose(d)) => Awaiting::Cleanup(d.op, d.cleanup.current().clone()),
        })
    }

    /// The context of the activation under way whose context is open (its
    /// `activate` runs).
    pub fn open_context(&self) -> Option<ContextId> {
        match &self.running {
            Some(Running::Activation(a)) if a.step == ActivationStep::Activate => Some(a.context()),
            _ => None,
        }
    }

    /// The hooks the running emit `op` delivers to, in order.
    pub fn emit_hooks(&self, op: OpId) -> Option<&VectorSync<LiveHook>> {
        match &self.running {
            Some(Running::Emit(e)) if e.op == op => Some(&e.hooks),
            _ => None,
        }
    }
}
