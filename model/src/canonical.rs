//! Canonical states of the model: the core renames its handles
//! ([`exthost_core::canonical`]) and the environment applies the same
//! renaming to what it observed.
//!
//! Architecture invariants:
//!
//! - Depends on [`crate::state`] and [`crate::action`] only. The
//!   renaming itself (which handles exist and how the core holds them) is
//!   the core's; this module only adds the places where the environment
//!   holds handles.
//! - Every handle the environment holds is visited both by
//!   [`Env::handles`] and by [`Env::rename`]: a field missed by one is a
//!   panic (an unknown handle), a field missed by both is caught by the
//!   property test `model/tests/canonical.rs`.
//! - Renaming never merges states that the properties tell apart: the
//!   violation messages (which may name handles) are kept as they are, so
//!   two states merge only if neither or both record each violation.

use std::sync::Arc;

use exthost_core::canonical::{HandleSet, Renaming, rename_hook, rename_step, step_handles};
use exthost_core::{LiveHook, OpOutcome, StepFailure};

use crate::action::Action;
use crate::state::{Activation, CleanupObs, EmitObs, Env, Settled, State};

fn activation_handles(a: &Activation, set: &mut HandleSet) {
    set.add(a.op);
    set.add(a.context);
    for (tool, _) in &a.tools {
        set.add(*tool);
    }
    for hook in &a.hooks {
        set.add(*hook);
    }
    for disposer in &a.disposers {
        set.add(*disposer);
    }
}

fn rename_activation(a: &mut Activation, r: &Renaming) {
    a.op = r.rename(a.op);
    a.context = r.rename(a.context);
    for (tool, _) in &mut a.tools {
        *tool = r.rename(*tool);
    }
    for hook in &mut a.hooks {
        *hook = r.rename(*hook);
    }
    for disposer in &mut a.disposers {
        *disposer = r.rename(*disposer);
    }
}

/// True when `r` renames one of the activation's handles (a shared
/// activation is copied only then).
fn moves(a: &Activation, r: &Renaming) -> bool {
    r.rename(a.op) != a.op
        || r.rename(a.context) != a.context
        || a.tools.iter().any(|(t, _)| r.rename(*t) != *t)
        || a.hooks.iter().any(|h| r.rename(*h) != *h)
        || a.disposers.iter().any(|d| r.rename(*d) != *d)
}

fn cleanup_handles(c: &CleanupObs, set: &mut HandleSet) {
    set.add(c.op);
    step_handles(&c.step, set);
}

fn rename_cleanup(c: &mut CleanupObs, r: &Renaming) {
    c.op = r.rename(c.op);
    rename_step(&mut c.step, r);
}

fn emit_handles(e: &EmitObs, set: &mut HandleSet) {
    set.add(e.op);
    for h in &e.live {
        set.add(h.hook);
    }
    for (h, _) in &e.calls {
        set.add(h.hook);
    }
}

fn rename_emit(e: &mut EmitObs, r: &Renaming) {
    e.op = r.rename(e.op);
    for h in &mut e.live {
        rename_hook(h, r);
    }
    for (h, _) in &mut e.calls {
        rename_hook(h, r);
    }
}

fn failures(outcome: &OpOutcome) -> &[StepFailure] {
    match outcome {
        OpOutcome::ActivationFailed(f)
        | OpOutcome::ReloadFailed(f)
        | OpOutcome::DependencyFailed { failure: f, .. } => &f.cleanup_failures,
        OpOutcome::Reloaded {
            cleanup_failures, ..
        } => cleanup_failures,
        OpOutcome::Disposed { failures } => failures,
        _ => &[],
    }
}

fn failures_mut(outcome: &mut OpOutcome) -> &mut [StepFailure] {
    match outcome {
        OpOutcome::ActivationFailed(f)
        | OpOutcome::ReloadFailed(f)
        | OpOutcome::DependencyFailed { failure: f, .. } => &mut f.cleanup_failures,
        OpOutcome::Reloaded {
            cleanup_failures, ..
        } => cleanup_failures,
        OpOutcome::Disposed { failures } => failures,
        _ => &mut [],
    }
}

fn settled_handles(s: &Settled, set: &mut HandleSet) {
    set.add(s.op);
    for f in failures(&s.outcome) {
        step_handles(&f.step, set);
    }
    if let Some(a) = &s.activation {
        activation_handles(a, set);
    }
    for c in &s.cleanup {
        cleanup_handles(c, set);
    }
    if let Some(e) = &s.emit {
        emit_handles(e, set);
    }
    for a in s.active_at_start.iter().map(|a| &**a).chain(&s.retired) {
        activation_handles(a, set);
    }
}

fn rename_settled(s: &mut Settled, r: &Renaming) {
    s.op = r.rename(s.op);
    for f in failures_mut(&mut s.outcome) {
        rename_step(&mut f.step, r);
    }
    if let Some(a) = &mut s.activation {
        rename_activation(a, r);
    }
    for c in &mut s.cleanup {
        rename_cleanup(c, r);
    }
    if let Some(e) = &mut s.emit {
        rename_emit(e, r);
    }
    for a in &mut s.active_at_start {
        rename_activation(Arc::make_mut(a), r);
    }
    if let Some(a) = &mut s.retired {
        rename_activation(a, r);
    }
}

impl Env {
    /// Adds every handle the environment holds to `set`.
    pub fn handles(&self, set: &mut HandleSet) {
        for c in self.calls.iter().chain(&self.abandoned) {
            set.add(c.call);
        }
        for p in &self.ops {
            set.add(p.op);
        }
        for a in self
            .running
            .iter()
            .chain(self.active.iter().map(|a| &**a))
            .chain(&self.retiring)
        {
            activation_handles(a, set);
        }
        if let Some((context, _)) = &self.closed {
            set.add(*context);
        }
        if let Some((open, previous)) = self.opened {
            set.add(open);
            set.add(previous);
        }
        if let Some(context) = self.last_attempt {
            set.add(context);
        }
        let f = &self.forgotten;
        f.contexts.iter().for_each(|h| set.add(*h));
        f.tools.iter().for_each(|h| set.add(*h));
        f.hooks.iter().for_each(|h| set.add(*h));
        f.disposers.iter().for_each(|h| set.add(*h));
        for c in &self.cleanup {
            cleanup_handles(c, set);
        }
        for e in &self.emits {
            emit_handles(e, set);
        }
        for s in &self.last {
            settled_handles(s, set);
        }
    }

    /// Renames every handle the environment holds by `r`.
    pub fn rename(&mut self, r: &Renaming) {
        for c in self.calls.iter_mut().chain(&mut self.abandoned) {
            c.call = r.rename(c.call);
        }
        for p in &mut self.ops {
            p.op = r.rename(p.op);
        }
        for a in self.running.iter_mut().chain(&mut self.retiring) {
            rename_activation(a, r);
        }
        for a in &mut self.active {
            if moves(a, r) {
                rename_activation(Arc::make_mut(a), r);
            }
        }
        if let Some((context, _)) = &mut self.closed {
            *context = r.rename(*context);
        }
        if let Some((open, previous)) = &mut self.opened {
            *open = r.rename(*open);
            *previous = r.rename(*previous);
        }
        if let Some(context) = &mut self.last_attempt {
            *context = r.rename(*context);
        }
        let f = &mut self.forgotten;
        f.contexts.iter_mut().for_each(|h| *h = r.rename(*h));
        f.tools.iter_mut().for_each(|h| *h = r.rename(*h));
        f.hooks.iter_mut().for_each(|h| *h = r.rename(*h));
        f.disposers.iter_mut().for_each(|h| *h = r.rename(*h));
        for c in &mut self.cleanup {
            rename_cleanup(c, r);
        }
        for e in &mut self.emits {
            rename_emit(e, r);
        }
        for s in &mut self.last {
            rename_settled(s, r);
        }
    }
}

/// A seeded bug of the canonical form, for the property test that shows it
/// is caught (`model/tests/canonical.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeededBug {
    /// The core forgets to rename the operations in its queue
    /// ([`exthost_core::canonical::CanonicalBug`]).
    CoreForgetsQueuedOps,
    /// The environment forgets to rename the operations the callers wait
    /// for.
    EnvForgetsPendingOps,
}

impl State {
    /// Every handle of the state, the core's and the environment's.
    pub fn handle_set(&self) -> HandleSet {
        let mut set = HandleSet::new();
        self.core.handles(&mut set);
        self.env.handles(&mut set);
        set
    }

    /// The state with its handles renamed by `r` (which must know each of
    /// them); the core's counters follow (see [`exthost_core::canonical`]).
    pub fn renamed(&self, r: &Renaming) -> State {
        let mut s = self.clone();
        s.rename(r, None);
        s
    }

    fn rename(&mut self, r: &Renaming, bug: Option<SeededBug>) {
        match bug {
            Some(SeededBug::CoreForgetsQueuedOps) => self.core.rename_handles_with_bug(
                r,
                Some(exthost_core::canonical::CanonicalBug::ForgetQueuedOps),
            ),
            _ => self.core.rename_handles(r),
        }
        if r.is_identity() {
            return;
        }
        if bug == Some(SeededBug::EnvForgetsPendingOps) {
            let kept: Vec<_> = self.env.ops.iter().map(|p| p.op).collect();
            self.env.rename(r);
            for (p, op) in self.env.ops.iter_mut().zip(kept) {
                p.op = op;
            }
        } else {
            self.env.rename(r);
        }
    }

    /// The canonical form: every handle renamed by its rank among the
    /// handles of its kind in the whole state (core and environment), the
    /// counters set to the number of handles of each kind. Every state that
    /// differs from this one only by a strictly increasing renaming of
    /// handles has the same canonical form.
    pub fn canonical(&self) -> State {
        let mut s = self.clone();
        s.canonicalize();
        s
    }

    /// [`State::canonical`] in place.
    pub fn canonicalize(&mut self) {
        let r = self.handle_set().ranks();
        self.rename(&r, None);
    }

    /// [`State::canonical`] with a seeded bug (tests only).
    pub fn canonical_with_bug(&self, bug: SeededBug) -> State {
        let mut s = self.clone();
        let r = s.handle_set().ranks();
        s.rename(&r, Some(bug));
        s
    }
}

impl stateright::Representative for State {
    fn representative(&self) -> Self {
        self.canonical()
    }
}

fn rename_hooks(hooks: &[LiveHook], r: &Renaming) -> Vec<LiveHook> {
    hooks
        .iter()
        .map(|h| {
            let mut h = h.clone();
            rename_hook(&mut h, r);
            h
        })
        .collect()
}

impl Action {
    /// The same action with its handles renamed by `r` (which must know
    /// each of them).
    pub fn renamed(&self, r: &Renaming) -> Action {
        match self.clone() {
            a @ (Action::Discover(_)
            | Action::Request(_)
            | Action::CallStart { .. }
            | Action::DormantCall { .. }) => a,
            Action::Withdraw(op) => Action::Withdraw(r.rename(op)),
            Action::Begin { op, kind } => Action::Begin {
                op: r.rename(op),
                kind,
            },
            Action::Factory { ext, context, ok } => Action::Factory {
                ext,
                context: r.rename(context),
                ok,
            },
            Action::Register { ext, context, reg } => Action::Register {
                ext,
                context: r.rename(context),
                reg,
            },
            Action::Hang { ext, context } => Action::Hang {
                ext,
                context: r.rename(context),
            },
            Action::ActivateReturned { ext, context, ok } => Action::ActivateReturned {
                ext,
                context: r.rename(context),
                ok,
            },
            Action::Hook { op, mut hook, ok } => {
                rename_hook(&mut hook, r);
                Action::Hook {
                    op: r.rename(op),
                    hook,
                    ok,
                }
            }
            Action::Hooks { op, hooks, results } => Action::Hooks {
                op: r.rename(op),
                hooks: rename_hooks(&hooks, r),
                results,
            },
            Action::Cleanup { op, mut step, ok } => {
                rename_step(&mut step, r);
                Action::Cleanup {
                    op: r.rename(op),
                    step,
                    ok,
                }
            }
            Action::LateRegister { ext, context, reg } => Action::LateRegister {
                ext,
                context: r.rename(context),
                reg,
            },
            Action::CallFinish {
                call,
                ext,
                deadline_passed,
            } => Action::CallFinish {
                call: r.rename(call),
                ext,
                deadline_passed,
            },
            Action::Deadline { op, on } => Action::Deadline {
                op: r.rename(op),
                on,
            },
            Action::Lost { op, on } => Action::Lost {
                op: r.rename(op),
                on,
            },
        }
    }
}
