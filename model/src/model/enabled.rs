//! What the environment may do next: the actions enabled in a state, and
//! the partial-order reductions that choose where the callers' commands
//! are offered.
//!
//! Architecture invariant: reads the state only; what an action does is
//! `super::observe`'s and the core's business.

use exthost_core::{Awaiting, ContextId, LiveHook, OpId, OpKind, Phase};

use super::HostModel;
use crate::action::{Action, Awaited, Reg};
use crate::scenario::DiscoveryStep;
use crate::state::{OpStatus, State};

impl HostModel {
    /// The actions enabled in `s` (the checker's [`Model::actions`]).
    pub(crate) fn enabled(&self, s: &State, out: &mut Vec<Action>) {
        let core = &s.core;
        let env = &s.env;
        let script = &self.scenario.script;
        let step = usize::from(env.script);
        // First the steps of the running operation (what the core awaits),
        // then the callers' choices: breadth-first search then prefers
        // counterexamples where things happen in their natural order.
        self.awaited_actions(s, out);
        // Partial-order reduction: discovery, requests, withdrawals and late
        // registrations touch only the discovery list and the queue (or,
        // refused, nothing), which no step of a running operation reads
        // before it settles. They commute with those steps, so offering them
        // only while no operation runs reaches the same states. `dispose`
        // does not commute with a pending activation (it fires the
        // activation's signal), so it is offered at those points too.
        let idle = core.running_op().is_none();
        let cancellable = matches!(
            core.awaiting(),
            Some(Awaiting::Factory(_) | Awaiting::Activate(_))
        );
        if core.phase() == Phase::Open
            && (idle || cancellable)
            && step > 0
            && !env.dispose_requested
        {
            out.push(Action::Request(OpKind::Dispose));
        }
        // A refused batch is offered last (below), so that depth-first
        // search, which takes the last action first, tries it first: it
        // is offered only right after the first batch, and a core that
        // keeps part of it is then caught in the first few states rather
        // than after the whole search (the same states either way).
        let mut refused = None;
        if core.phase() == Phase::Open && idle {
            if step < script.len() {
                if matches!(script[step], DiscoveryStep::Refuse { .. }) {
                    refused = Some(Action::Discover(step));
                    if let Some(j) = (step + 1..script.len())
                        .find(|&j| matches!(script[j], DiscoveryStep::Accept(_)))
                    {
                        out.push(Action::Discover(j));
                    }
                } else {
                    out.push(Action::Discover(step));
                }
            }
            if step == 0 {
                // The host discovers its first batch before any caller acts.
                return;
            }
            if env.requests_left > 0 {
                for ext in &self.scenario.extensions {
                    out.push(Action::Request(OpKind::Activate(ext.id().to_owned())));
                }
                out.push(Action::Request(OpKind::Emit));
                self.dormant_calls(s, out);
            }
            // H-12: a reload of an extension active now (what the queue
            // does with one that stopped being active by its turn is
            // covered by the host's tests).
            if env.reloads_left > 0 {
                for a in &env.active {
                    out.push(Action::Request(OpKind::Reload(a.ext.clone())));
                }
                // H-12: the manifest extension's second definition, in
                // whatever status it is once discovered.
                if let Some(second) = &self.scenario.redefinition
                    && !env.redefined
                    && env.discovered.contains(&second.id)
                {
                    out.push(Action::Request(OpKind::Redefine(Box::new(second.clone()))));
                }
            }
        }
        // Tool calls. A call touches only the core's set of calls in
        // flight, which nothing but the shutdown reads (its wait before an
        // extension's first cleanup step), and `CallStart` reads only the
        // registry's live tools, which only grow until the shutdown begins
        // (no tool leaves the registry before it, and no activation commits
        // once `dispose` was requested). So a call started at any earlier
        // point reaches, with the same observations, the states of one
        // started at the last idle point before the shutdown begins (the
        // core awaits `Begin` of the dispose): calls start only there. A
        // call ends at an idle point or while the shutdown waits for its
        // extension's calls; ending earlier is covered by ending at that
        // idle point (see `docs/model.md`).
        if idle && env.calls_left > 0 && self.call_point(s) {
            self.call_starts(s, out);
        }
        if idle {
            self.finish_actions(s, None, out);
        }
        if self.scenario.bounds.calls > 0 {
            self.call_after_shutdown(s, out);
        }
        // An abandoned call may still report its result in the next step.
        for c in &env.abandoned {
            out.push(Action::CallFinish {
                call: c.call,
                ext: self.ext_index(&c.ext),
                deadline_passed: false,
            });
        }
        if idle && env.withdraws_left > 0 {
            for p in &env.ops {
                if p.status == OpStatus::Queued && p.kind != OpKind::Dispose {
                    out.push(Action::Withdraw(p.op));
                }
            }
        }
        // The scheduler probe: try to begin the head of the queue while an
        // operation runs. The real core refuses (see `step`).
        if core.running_op().is_some()
            && let Some(p) = env.ops.iter().find(|p| p.status == OpStatus::Queued)
        {
            out.push(Action::Begin {
                op: p.op,
                kind: p.kind.clone(),
            });
        }
        if self.scenario.bounds.late {
            self.late_actions(s, out);
        }
        out.extend(refused);
    }
    /// INV-14: a dormant call of the manifest extension's declared tool
    /// (and, with providers, a selection of its declared provider), offered
    /// where the environment expects the core's admission to start the
    /// extension or refuse it for a revoked grant (M-4, M-8: it is
    /// discovered, not active, the host is open and, for a provider, no
    /// other extension's is live), and wherever the core
    /// says it would; elsewhere it is an ordinary call or selection, which
    /// starts nothing. The expectation is the environment's own, so a core
    /// whose lookup misses a declaring extension (a failed one, say)
    /// answers a call the environment makes, and breaks `protocol`. Only
    /// the manifest extension declares anything, so only it has a grant
    /// to revoke.
    fn dormant_calls(&self, s: &State, out: &mut Vec<Action>) {
        for (i, ext) in self.scenario.extensions.iter().enumerate() {
            if !ext.meta.namespaced {
                continue;
            }
            let id = ext.id();
            let expected = s.core.phase() == Phase::Open
                && s.env.discovered.iter().any(|d| d == id)
                && !s.env.active.iter().any(|a| a.ext == id);
            let ext = i as u8;
            for provider in [false, true] {
                if provider && !self.scenario.bounds.providers {
                    continue;
                }
                // A provider another extension registered is live: the
                // selection is served by it (the live registry is INV-1's).
                let live = provider
                    && s.core
                        .registry()
                        .provider(crate::scenario::PROVIDER_ID)
                        .is_some();
                if (expected && !live)
                    || self.admit_dormant(&s.core, ext, provider, s.env.redefined) != (None, None)
                {
                    out.push(Action::DormantCall { ext, provider });
                }
            }
        }
    }

    /// A deadline expiry and a lost task for the step `on` of the running
    /// operation `op`, within the per-operation bounds (`deadline`: the
    /// step has a deadline that has not fired yet).
    ///
    /// Where they are offered is part of the bounds (see
    /// `docs/model.md`): a lost `activate` only before it
    /// registered anything or while it hangs (elsewhere it is exactly an
    /// `activate` error, which the model explores at every point); cleanup
    /// steps time out or are lost only in the shutdown, and each such step
    /// uses the operation's bound of failing cleanup steps.
    fn time_actions(
        &self,
        s: &State,
        op: OpId,
        on: Awaited,
        deadline: bool,
        out: &mut Vec<Action>,
    ) {
        let b = &self.scenario.bounds;
        let env = &s.env;
        // An activate times out or is lost only before it registered
        // anything (a hung one included).
        let here = match on {
            Awaited::Activate => env
                .running
                .iter()
                .rev()
                .find(|a| a.op == op)
                .is_some_and(|a| {
                    a.tool_attempts + a.provider_attempts + a.hook_attempts + a.disposer_attempts
                        == 0
                }),
            _ => true,
        };
        if here && deadline && usize::from(env.op_deadlines) < b.deadlines {
            out.push(Action::Deadline { op, on });
        }
        if here && usize::from(env.op_losses) < b.losses {
            out.push(Action::Lost { op, on });
        }
    }

    fn activation_actions(&self, s: &State, context: ContextId, out: &mut Vec<Action>) {
        let b = &self.scenario.bounds;
        let Some(a) = s.env.activation(context) else {
            return;
        };
        let ext = self.ext_index(&a.ext);
        if a.deadline {
            // Once its deadline passed, the activate's result no longer
            // counts (the deadline's does), so it returns at once, with Ok:
            // the result a core that let a completion beat its deadline
            // would commit. Reduction: registrations commute with the
            // deadline (`Register` does not read the signal, the deadline
            // does not read what is staged), so the states where the
            // activate registers after its deadline are reached by
            // registering first; and a `dispose` requested after it fires
            // nothing, so it commutes with the return and the rollback and
            // is covered by the idle point after them.
            out.push(Action::ActivateReturned {
                ext,
                context,
                ok: true,
            });
            return;
        }
        if a.hung {
            // A hung activate returns only after its signal fired.
            if a.cancelled {
                out.push(Action::ActivateReturned {
                    ext,
                    context,
                    ok: true,
                });
            }
            self.time_actions(s, a.op, Awaited::Activate, !a.cancelled, out);
            return;
        }
        // Partial-order reduction: registrations of different kinds
        // commute (the core stages tools, providers, hooks and disposers in
        // separate lists, each kind with its own handle counter, and none
        // of them reads the others or the cancellation signal), so
        // `activate` registers its tools first, then its provider, then its
        // hooks, then its disposers.
        // Every staged contribution, and so every state where it may
        // return, hang or be cancelled, is still reached; only the orders
        // that reach the same state again are skipped (fewer edges, the
        // same states).
        let (hooks, disposers) = (a.hook_attempts, a.disposer_attempts);
        let providers = a.provider_attempts;
        if usize::from(a.tool_attempts) < b.tools && providers == 0 && hooks == 0 && disposers == 0
        {
            let pool = self.scenario.extensions[usize::from(ext)].pool.len();
            for i in 0..pool {
                out.push(Action::Register {
                    ext,
                    context,
                    reg: Reg::Tool(u8::try_from(i).expect("a small pool")),
                });
            }
        }
        if b.providers && providers == 0 && hooks == 0 && disposers == 0 {
            out.push(Action::Register {
                ext,
                context,
                reg: Reg::Provider,
            });
        }
        if usize::from(hooks) < b.hooks && disposers == 0 {
            out.push(Action::Register {
                ext,
                context,
                reg: Reg::Hook,
            });
        }
        if usize::from(a.disposer_attempts) < b.disposers {
            out.push(Action::Register {
                ext,
                context,
                reg: Reg::Disposer,
            });
        }
        if s.env.hangs_left > 0 && !a.cancelled {
            out.push(Action::Hang { ext, context });
        }
        for ok in [true, false] {
            out.push(Action::ActivateReturned { ext, context, ok });
        }
        // A deadline fires the signal; a signal that already fired (by a
        // shutdown) keeps its cause, so the deadline changes nothing then.
        self.time_actions(s, a.op, Awaited::Activate, !a.cancelled, out);
    }

    /// The inputs the core awaits now: the queue head's `Begin`, or the
    /// result of the factory, `activate` (with registrations and hangs),
    /// a hook or a cleanup step, each succeeding or failing.
    fn awaited_actions(&self, s: &State, out: &mut Vec<Action>) {
        let core = &s.core;
        let env = &s.env;
        match core.awaiting() {
            Some(Awaiting::Begin(op)) => {
                if let Some(p) = env.ops.iter().find(|p| p.op == op) {
                    out.push(Action::Begin {
                        op,
                        kind: p.kind.clone(),
                    });
                }
            }
            Some(Awaiting::Factory(context)) => {
                if let Some(a) = env.activation(context) {
                    for ok in [true, false] {
                        out.push(Action::Factory {
                            ext: self.ext_index(&a.ext),
                            context,
                            ok,
                        });
                    }
                    self.time_actions(s, a.op, Awaited::Factory, !a.cancelled, out);
                }
            }
            Some(Awaiting::Activate(context)) => self.activation_actions(s, context, out),
            Some(Awaiting::Hook(op, hook)) => {
                for ok in [true, false] {
                    out.push(Action::Hook {
                        op,
                        hook: hook.clone(),
                        ok,
                    });
                }
                // At an emit's first hook the shell may instead run the
                // whole list and report every result at once.
                let first = env
                    .emits
                    .iter()
                    .find(|e| e.op == op)
                    .is_some_and(|e| e.calls.len() == 1);
                if first
                    && let Some(list) = core.emit_hooks(op)
                    && let Some(start) = list.iter().position(|h| *h == hook)
                {
                    let hooks: Vec<LiveHook> = list.iter().skip(start).cloned().collect();
                    let n = hooks.len().min(8);
                    for bits in 0..(1u32 << n) {
                        out.push(Action::Hooks {
                            op,
                            hooks: hooks.clone(),
                            results: (0..n).map(|i| bits & (1 << i) == 0).collect(),
                        });
                    }
                }
                // A hook may be read at its deadline (the core judges its
                // two readings), and its task may die.
                self.time_actions(s, op, Awaited::Hook, true, out);
            }
            Some(Awaiting::Cleanup(op, step)) => {
                let failed = env
                    .cleanup
                    .iter()
                    .filter(|c| c.op == op && c.failed == Some(true))
                    .count();
                let outcomes: &[bool] = if failed < self.scenario.bounds.cleanup_failures {
                    &[true, false]
                } else {
                    &[true]
                };
                for &ok in outcomes {
                    out.push(Action::Cleanup {
                        op,
                        step: step.clone(),
                        ok,
                    });
                }
                // Only in the shutdown, and a timed-out or lost step is a
                // failing step: it uses the operation's bound of failing
                // cleanup steps too.
                let shutdown = env
                    .ops
                    .iter()
                    .any(|p| p.op == op && p.kind == OpKind::Dispose);
                // The first cleanup step of each extension (the one the wait
                // for its calls precedes).
                let first = env
                    .cleanup
                    .iter()
                    .rev()
                    .filter(|c| c.op == op)
                    .nth(1)
                    .is_none_or(|prev| prev.step.extension != step.extension);
                if shutdown && first && outcomes.len() == 2 {
                    self.time_actions(s, op, Awaited::Cleanup, true, out);
                }
            }
            Some(Awaiting::Calls(op, ext)) => {
                self.finish_actions(s, Some(&ext), out);
                self.time_actions(s, op, Awaited::Calls, true, out);
            }
            None => {}
        }
    }

    /// Registrations through closed contexts: the one that closed in the
    /// last step (tool, hook, disposer), and, right after a new context
    /// opened, the previous attempt's context (tool, hook): the core must
    /// tell the contexts apart. Both windows last one step, so a refused
    /// registration (which changes nothing) never repeats a state.
    fn late_actions(&self, s: &State, out: &mut Vec<Action>) {
        if let Some((context, ext)) = &s.env.closed {
            let ext = self.ext_index(ext);
            for reg in [Reg::LateTool, Reg::Hook, Reg::Disposer] {
                out.push(Action::LateRegister {
                    ext: Some(ext),
                    context: *context,
                    reg,
                });
            }
        }
        if let Some((open, stale)) = s.env.opened
            && s.core.open_context() == Some(open)
        {
            for reg in [Reg::LateTool, Reg::Hook] {
                out.push(Action::LateRegister {
                    ext: None,
                    context: stale,
                    reg,
                });
            }
        }
    }
}
