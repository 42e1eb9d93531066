//! The stateright [`Model`]: actions are the core's [`Input`]s (plus one
//! environment-only choice, hanging an `activate`), and every transition is
//! [`HostCore::apply`] followed by the environment observing the effects.

use exthost::core::{
    AdmittedCall, Awaiting, Binding, CallId, CallRefused, CallVerdict, ContextClosed, ContextId,
    DiscoveryError, Effect, Failure, HostCore, Input, LiveHook, Mutant, OpId, OpKind, OpOutcome,
    Owner, Phase, ProtocolError, Registered, Registration, Requested, Status,
};
use stateright::{Model, Path, Property};

use crate::properties;
use crate::render;
use crate::scenario::{BASE_TOOL, Bounds, DiscoveryStep, Scenario};
use crate::state::{
    Activation, CallObs, CleanupObs, EmitObs, Env, Note, OpStatus, PendingOp, Settled, State,
    Violations,
};

pub use crate::action::{Action, Awaited, Ext, Reg};

/// The core's typed reply to an action, apart from the commands it set off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// No reply: an input of the running operation, or a withdrawal.
    None,
    /// `discover`.
    Discovered(Result<(), DiscoveryError>),
    /// `request`.
    Requested(Requested),
    /// `register`.
    Registration(Result<Registered, ContextClosed>),
    /// `call_start`.
    Call(Result<AdmittedCall, CallRefused>),
    /// `call_finished`.
    CallEnded(CallVerdict),
}

/// The model: a scenario, and the seeded bug the core runs (if any).
#[derive(Debug, Clone)]
pub struct HostModel {
    /// What the environment may do.
    pub scenario: Scenario,
    /// The seeded bug, or `None` for the real core.
    pub mutant: Option<Mutant>,
    /// The `sometimes` properties, in order, with their conditions
    /// ([`properties::examples`]).
    pub examples: Vec<(&'static str, properties::Condition)>,
}

fn result(ok: bool, what: &str) -> Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(Failure::error(format!("{what} failed")))
    }
}

fn clamp(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// H-1: the only status transitions.
fn allowed(before: Option<Status>, after: Status) -> bool {
    use Status::*;
    matches!(
        (before, after),
        (None, Discovered)
            | (Some(Discovered), Activating)
            | (Some(Activating), Active)
            | (Some(Activating), Failed)
            | (Some(Failed), Activating)
            | (Some(Active), Disposed)
    ) || before == Some(after)
}

impl HostModel {
    /// A model of the real core under these bounds.
    pub fn new(bounds: Bounds) -> Self {
        Self::with_mutant(bounds, None)
    }

    /// A model of the core running `mutant`.
    pub fn with_mutant(bounds: Bounds, mutant: Option<Mutant>) -> Self {
        let mut model = Self {
            scenario: Scenario::new(bounds),
            mutant,
            examples: Vec::new(),
        };
        model.examples = properties::examples(&model);
        model
    }

    /// The state every run starts from.
    pub fn initial_state(&self) -> State {
        let b = &self.scenario.bounds;
        State {
            core: self.scenario.initial.clone().with_mutant(self.mutant),
            env: Env {
                requests_left: clamp(b.ops),
                withdraws_left: clamp(b.withdraws),
                hangs_left: clamp(b.hangs),
                calls_left: clamp(b.calls),
                ..Env::default()
            },
        }
    }

    /// The index of the extension with this id.
    pub fn ext_index(&self, id: &str) -> Ext {
        let i = self
            .scenario
            .extensions
            .iter()
            .position(|e| e.id() == id)
            .expect("an extension of the scenario");
        Ext::try_from(i).expect("few extensions")
    }

    /// The id of an extension by index.
    pub fn ext_id(&self, ext: Ext) -> &str {
        self.scenario.ext_id(ext)
    }

    /// The registration a [`Reg`] stands for.
    pub fn registration(&self, ext: Option<Ext>, reg: Reg) -> Registration {
        self.scenario.registration(ext, reg)
    }

    /// The input of the running operation an action feeds to the core
    /// (`None` for the callers' commands and [`Action::Hang`]).
    pub fn input(&self, action: &Action) -> Option<Input> {
        Some(match action {
            Action::Begin { op, .. } => Input::Begin(*op),
            Action::Factory { context, ok, .. } => Input::FactoryReturned {
                context: *context,
                result: result(*ok, "factory"),
            },
            Action::ActivateReturned { context, ok, .. } => Input::ActivateReturned {
                context: *context,
                result: result(*ok, "activate"),
            },
            Action::Hook { op, ok, .. } => Input::HookFinished {
                op: *op,
                result: result(*ok, "hook"),
            },
            Action::Hooks { op, results, .. } => Input::HooksFinished {
                op: *op,
                results: results.iter().map(|ok| result(*ok, "hook")).collect(),
            },
            Action::Cleanup { op, ok, .. } => Input::CleanupFinished {
                op: *op,
                result: result(*ok, "cleanup step"),
            },
            Action::Deadline { op, .. } => Input::DeadlinePassed { op: *op },
            Action::Lost { op, .. } => Input::StepLost { op: *op },
            _ => return None,
        })
    }

    /// Feeds an action to the core: a caller's command through its typed
    /// method, an input of the running operation through `apply`. `None`
    /// for [`Action::Hang`], which the core does not see.
    pub fn perform(
        &self,
        core: &mut HostCore,
        action: &Action,
    ) -> Option<Result<(Reply, Vec<Effect>), ProtocolError>> {
        let answered = |reply, effects| Some(Ok((reply, effects)));
        match action {
            Action::Discover(step) => {
                let a = core.discover(self.scenario.batch(*step));
                answered(Reply::Discovered(a.reply), a.effects)
            }
            Action::Request(kind) => {
                let a = core.request(kind.clone());
                answered(Reply::Requested(a.reply), a.effects)
            }
            Action::Withdraw(op) => Some(core.withdraw(*op).map(|()| (Reply::None, Vec::new()))),
            Action::Register { ext, context, reg } => {
                let a = core.register(*context, self.registration(Some(*ext), *reg));
                answered(Reply::Registration(a.reply), a.effects)
            }
            Action::LateRegister { ext, context, reg } => {
                let a = core.register(*context, self.registration(*ext, *reg));
                answered(Reply::Registration(a.reply), a.effects)
            }
            Action::CallStart { tool, .. } => {
                answered(Reply::Call(core.call_start(tool)), Vec::new())
            }
            Action::CallFinish {
                call,
                deadline_passed,
                ..
            } => {
                let a = core.call_finished(*call, *deadline_passed);
                answered(Reply::CallEnded(a.reply), a.effects)
            }
            Action::Hang { .. } => None,
            _ => Some(
                core.apply(self.input(action)?)
                    .map(|effects| (Reply::None, effects)),
            ),
        }
    }

    /// A deadline expiry and a lost task for the step `on` of the running
    /// operation `op`, within the per-operation bounds (`deadline`: the
    /// step has a deadline that has not fired yet).
    ///
    /// Where they are offered is part of the bounds (see
    /// `docs/model-checking.md`): a lost `activate` only before it
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
                .find(|a| a.op == op)
                .is_some_and(|a| a.tool_attempts + a.hook_attempts + a.disposer_attempts == 0),
            _ => true,
        };
        if here && deadline && usize::from(env.op_deadlines) < b.deadlines {
            out.push(Action::Deadline { op, on });
        }
        if here && usize::from(env.op_losses) < b.losses {
            out.push(Action::Lost { op, on });
        }
    }

    /// Each call in flight ends, with or without its own deadline passed.
    fn finish_actions(&self, s: &State, ext: Option<&str>, out: &mut Vec<Action>) {
        for c in s
            .env
            .calls
            .iter()
            .filter(|c| ext.is_none_or(|e| e == c.ext))
        {
            for deadline_passed in [false, true] {
                out.push(Action::CallFinish {
                    call: c.call,
                    ext: self.ext_index(&c.ext),
                    deadline_passed,
                });
            }
        }
    }

    /// Tool calls a caller may start: one per extension with a live tool
    /// (the first, in publication order). The core records only a call's
    /// owner, so calling another tool of the same extension reaches the
    /// same state.
    fn call_starts(&self, s: &State, out: &mut Vec<Action>) {
        let mut seen: Vec<&str> = Vec::new();
        for e in s.core.registry().iter() {
            if let (Owner::Extension(id), Binding::Live(_)) = (&e.owner, e.binding)
                && !seen.contains(&id.as_str())
            {
                seen.push(id);
                out.push(Action::CallStart {
                    ext: Some(self.ext_index(id)),
                    tool: e.name.clone(),
                });
            }
        }
    }

    /// Right after the shutdown completed, a caller calls a tool that was
    /// live before it (the first tool of the last extension activated, or
    /// the base tool): the core must refuse it (INV-12).
    fn call_after_shutdown(&self, s: &State, out: &mut Vec<Action>) {
        if let Some((ext, tool)) = &s.env.call_after {
            out.push(Action::CallStart {
                ext: *ext,
                tool: tool.clone(),
            });
        }
    }

    /// The tool a caller calls right after the shutdown completed: the
    /// first tool of the last extension activated, or the base tool.
    fn tool_after_shutdown(&self, env: &Env) -> (Option<Ext>, String) {
        env.active
            .iter()
            .rev()
            .find_map(|a| {
                let meta = self.scenario.meta(&a.ext)?;
                let (_, name) = a.tools.first()?;
                Some((Some(self.ext_index(&a.ext)), meta.runtime_tool_name(name)))
            })
            .unwrap_or((None, BASE_TOOL.into()))
    }

    /// The end of every step: judges what settled (then forgets it), and
    /// forgets what no property and no later choice reads any more, so
    /// that histories the rest of the run cannot tell apart merge.
    fn end_step(&self, s: &mut State) {
        properties::judge_step(self, s);
        let just_disposed = s
            .env
            .last
            .iter()
            .any(|st| matches!(st.outcome, OpOutcome::Disposed { .. }));
        if just_disposed && self.scenario.bounds.calls > 0 {
            s.env.call_after = Some(self.tool_after_shutdown(&s.env));
        }
        s.env.last.clear();
        let env = &mut s.env;
        if s.core.phase() != Phase::Open {
            // No request, discovery or new activation attempt comes any
            // more: their bounds and the previous attempt's context are
            // read by nothing.
            env.requests_left = 0;
            env.script = clamp(self.scenario.script.len());
            if env.running.iter().all(|a| a.cancelled || a.hung) {
                env.hangs_left = 0;
            }
            let queued = env
                .ops
                .iter()
                .any(|p| p.status == OpStatus::Queued && p.kind != OpKind::Dispose);
            if !queued {
                env.withdraws_left = 0;
                if env.running.is_empty() {
                    env.last_attempt = None;
                }
            }
        }
        if env.dispose_begun {
            // Calls start only before the shutdown begins.
            env.calls_left = 0;
        }
        if env.disposed {
            // INV-1 and INV-3 no longer read the committed activations.
            env.active.clear();
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
        // commute (the core stages tools, hooks and disposers in separate
        // lists, each kind with its own handle counter, and none of them
        // reads the others or the cancellation signal), so `activate`
        // registers its tools first, then its hooks, then its disposers.
        // Every staged contribution, and so every state where it may
        // return, hang or be cancelled, is still reached; only the orders
        // that reach the same state again are skipped (fewer edges, the
        // same states).
        let (hooks, disposers) = (a.hook_attempts, a.disposer_attempts);
        if usize::from(a.tool_attempts) < b.tools && hooks == 0 && disposers == 0 {
            let pool = self.scenario.extensions[usize::from(ext)].pool.len();
            for i in 0..pool {
                out.push(Action::Register {
                    ext,
                    context,
                    reg: Reg::Tool(u8::try_from(i).expect("a small pool")),
                });
            }
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
                // Hooks have no deadline in the core; their task may die.
                self.time_actions(s, op, Awaited::Hook, false, out);
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

    /// True when calls may start now: the core awaits `Begin` of the
    /// dispose (see the partial-order reduction in [`Model::actions`]).
    fn call_point(&self, s: &State) -> bool {
        match s.core.awaiting() {
            Some(Awaiting::Begin(op)) => s
                .env
                .ops
                .iter()
                .any(|p| p.op == op && p.kind == OpKind::Dispose),
            _ => false,
        }
    }

    /// Applies `action` to a copy of `last` and observes the effects,
    /// without renaming handles (the checker's [`Model::next_state`] is
    /// this step followed by [`State::canonicalize`]). Returns `None` only
    /// for a refused scheduler probe (see [`Action::Begin`]).
    pub fn step(&self, last: &State, action: &Action) -> Option<State> {
        let mut s = last.clone();
        s.env.last.clear();
        s.env.note = None;
        s.env.shown = 0;
        s.env.call_after = None;
        s.env.closed = None;
        s.env.opened = None;
        s.env.abandoned.clear();
        if !matches!(action, Action::Discover(_)) {
            // Refused batches are tried only right after the first batch,
            // before anything else happens (they change nothing, so trying
            // them later would only repeat states).
            let script = &self.scenario.script;
            while usize::from(s.env.script) < script.len()
                && matches!(
                    script[usize::from(s.env.script)],
                    DiscoveryStep::Refuse { .. }
                )
                && s.env.script > 0
            {
                s.env.script += 1;
            }
        }
        if let Action::Hang { context, .. } = action {
            s.env.hangs_left -= 1;
            if let Some(a) = s.env.activation_mut(*context) {
                a.hung = true;
            }
            self.end_step(&mut s);
            return Some(s);
        }
        let before = &last.core;
        let performed = self.perform(&mut s.core, action)?;
        match performed {
            Err(error) => {
                if matches!(action, Action::Begin { .. }) && before.running_op().is_some() {
                    // The core refused to begin an operation while another
                    // runs: exactly what H-3 asks. The probe is not a step.
                    return None;
                }
                Violations::record(
                    &mut s.env.violations.protocol,
                    format!("{}: {error}", render::action(&self.scenario, action)),
                );
                self.end_step(&mut s);
                Some(s)
            }
            Ok((reply, effects)) => {
                self.observe(&mut s, last, action, reply, effects);
                check_statuses(before, &mut s);
                check_api_names(before, &mut s);
                check_calls(&mut s);
                self.end_step(&mut s);
                Some(s)
            }
        }
    }

    fn observe(
        &self,
        s: &mut State,
        last: &State,
        action: &Action,
        reply: Reply,
        effects: Vec<Effect>,
    ) {
        let before = &last.core;
        let was = &last.env;
        let drained = matches!(action, Action::CallFinish { .. })
            && effects
                .iter()
                .any(|e| matches!(e, Effect::RunCleanup { .. }));
        let env = &mut s.env;
        let protocol = |env: &mut Env, message: String| {
            Violations::record(&mut env.violations.protocol, message);
        };
        // What the action itself tells the environment.
        match action {
            Action::Discover(step) => env.script = clamp(step + 1),
            Action::Request(OpKind::Dispose) => env.dispose_requested = true,
            Action::Request(_) => env.requests_left -= 1,
            Action::Withdraw(op) => {
                env.withdraws_left -= 1;
                env.ops.retain(|p| p.op != *op);
                env.note = Some(Note::Withdrawn);
                if s.core.queued().iter().any(|(q, _)| q == op) {
                    protocol(env, format!("{op} is still queued after its withdrawal"));
                }
            }
            Action::Begin { op, .. } => {
                let expected = env.ops.iter().find(|p| p.status == OpStatus::Queued);
                if expected.map(|p| p.op) != Some(*op) {
                    Violations::record(
                        &mut env.violations.inv4,
                        format!(
                            "{op} began, but the first request not begun is {}",
                            expected.map_or("none".into(), |p| p.op.to_string())
                        ),
                    );
                }
                if let Some(p) = env.ops.iter_mut().find(|p| p.op == *op) {
                    p.status = OpStatus::Begun;
                    match p.kind {
                        OpKind::Emit => env.emits.push(EmitObs {
                            op: *op,
                            live: before.live_hooks().iter().cloned().collect(),
                            calls: Vec::new(),
                        }),
                        OpKind::Dispose => env.dispose_begun = true,
                        // The environment requests no reload yet (issue 11).
                        OpKind::Activate(_) | OpKind::Reload(_) => {}
                    }
                }
            }
            Action::Factory { context, ok, .. } => {
                if *ok && let Some(a) = env.activation_mut(*context) {
                    a.instance = true;
                }
            }
            Action::Register { context, reg, .. } => {
                if let Some(a) = env.activation_mut(*context) {
                    match reg {
                        Reg::Tool(_) | Reg::LateTool => a.tool_attempts += 1,
                        Reg::Hook => a.hook_attempts += 1,
                        Reg::Disposer => a.disposer_attempts += 1,
                    }
                }
            }
            Action::ActivateReturned { context, .. } => {
                if let Some(a) = env.activation_mut(*context) {
                    a.open = false;
                    let ext = a.ext.clone();
                    // After a deadline the late window is not opened: the
                    // same registrations are tried after the ordinary
                    // returns, and a refused one changes nothing.
                    if self.scenario.bounds.late && !a.deadline {
                        env.closed = Some((*context, ext));
                    }
                }
            }
            Action::Hook { op, .. } => {
                let failed = self.failed(action);
                if let Some(call) = env
                    .emits
                    .iter_mut()
                    .find(|e| e.op == *op)
                    .and_then(|e| e.calls.last_mut())
                {
                    call.1 = Some(failed);
                }
            }
            Action::Hooks { op, hooks, results } => {
                if let Some(e) = env.emits.iter_mut().find(|e| e.op == *op) {
                    // The first was asked for (`RunHook`); the shell ran the
                    // rest from the emit's list.
                    if let Some(first) = e.calls.last_mut() {
                        first.1 = Some(!results[0]);
                    }
                    for (hook, ok) in hooks.iter().zip(results).skip(1) {
                        e.calls.push((hook.clone(), Some(!ok)));
                    }
                }
            }
            Action::Cleanup { op, .. } => {
                let failed = self.failed(action);
                if let Some(obs) = env
                    .cleanup
                    .iter_mut()
                    .rev()
                    .find(|c| c.op == *op && c.failed.is_none())
                {
                    obs.failed = Some(failed);
                }
            }
            Action::LateRegister { context, .. } => {
                let changed = [
                    (before.registry() != s.core.registry(), "the registry"),
                    (before.live_hooks() != s.core.live_hooks(), "the live hooks"),
                    (before.extensions() != s.core.extensions(), "the extensions"),
                ];
                for (did, what) in changed {
                    if did {
                        Violations::record(
                            &mut env.violations.inv5,
                            format!("a registration on closed {context} changed {what}"),
                        );
                    }
                }
            }
            Action::Hang { .. } => unreachable!("handled before apply"),
            Action::CallStart { .. } => {
                // The probe after the shutdown uses no bound (it lasts one
                // step).
                if !was.disposed {
                    env.calls_left = env.calls_left.saturating_sub(1);
                }
            }
            Action::CallFinish { .. } => {
                if drained {
                    env.note = Some(Note::CallDrained);
                }
            }
            Action::Deadline { op, on } => {
                env.op_deadlines += 1;
                match on {
                    Awaited::Factory | Awaited::Activate => {
                        if let Some(a) = env.running.iter_mut().find(|a| a.op == *op) {
                            a.deadline = true;
                        }
                    }
                    Awaited::Cleanup => {
                        if let Some(obs) = running_cleanup(env, *op) {
                            obs.failed = Some(true);
                            obs.deadline = true;
                        }
                    }
                    Awaited::Hook | Awaited::Calls => {}
                }
            }
            Action::Lost { op, on } => {
                env.op_losses += 1;
                match on {
                    Awaited::Activate => {
                        if let Some(a) = env.running.iter_mut().find(|a| a.op == *op) {
                            a.open = false;
                        }
                    }
                    Awaited::Cleanup => {
                        if let Some(obs) = running_cleanup(env, *op) {
                            obs.failed = Some(true);
                        }
                    }
                    Awaited::Hook => {
                        if let Some(call) = env
                            .emits
                            .iter_mut()
                            .find(|e| e.op == *op)
                            .and_then(|e| e.calls.last_mut())
                        {
                            call.1 = Some(true);
                        }
                    }
                    Awaited::Factory | Awaited::Calls => {}
                }
            }
        }
        // INV-12b: after the shutdown completed, no extension code runs.
        let after_shutdown = |env: &mut Env, what: String| {
            if was.disposed {
                Violations::record(
                    &mut env.violations.inv12b,
                    format!("after the shutdown completed the core asked to {what}"),
                );
            }
        };
        // What the core's reply tells it.
        'reply: {
            match reply {
                Reply::None => {}
                Reply::Discovered(reply) => {
                    let Action::Discover(step) = action else {
                        protocol(env, "a discovery reply to another input".into());
                        break 'reply;
                    };
                    match (&self.scenario.script[*step], reply) {
                        (DiscoveryStep::Accept(ids), Ok(())) => env.discovered.extend(
                            ids.iter()
                                .map(|&i| self.scenario.extensions[i].id().to_owned()),
                        ),
                        (DiscoveryStep::Accept(_), Err(e)) => {
                            protocol(env, format!("a valid batch was refused: {e:?}"))
                        }
                        (DiscoveryStep::Refuse { why, .. }, Ok(())) => Violations::record(
                            &mut env.violations.inv6,
                            format!("a batch where {why} was accepted"),
                        ),
                        (DiscoveryStep::Refuse { why, .. }, Err(_)) => {
                            env.note = Some(Note::DiscoveryRefused);
                            if before.statuses() != s.core.statuses()
                                || before.registry() != s.core.registry()
                            {
                                Violations::record(
                                    &mut env.violations.inv6,
                                    format!(
                                        "a refused batch (where {why}) changed the extensions \
                                     or the registry"
                                    ),
                                );
                            }
                        }
                    }
                }
                Reply::Requested(Requested::Enqueued(op)) => match action {
                    Action::Request(kind) => env.ops.push(PendingOp {
                        op,
                        kind: kind.clone(),
                        status: OpStatus::Queued,
                    }),
                    _ => protocol(env, format!("{op} enqueued by another input")),
                },
                Reply::Requested(Requested::Rejected(r)) => {
                    protocol(env, format!("a request was rejected while open: {r:?}"))
                }
                Reply::Requested(Requested::JoinDispose(op)) => {
                    protocol(env, format!("a single dispose was joined to {op}"))
                }
                Reply::Registration(reply) => self.registration_reply(env, action, reply),
                Reply::Call(reply) => self.call_reply(env, was, action, reply),
                Reply::CallEnded(verdict) => {
                    let Action::CallFinish {
                        call,
                        deadline_passed,
                        ..
                    } = action
                    else {
                        protocol(env, "a call verdict for another input".into());
                        break 'reply;
                    };
                    let expected = if let Some(i) = env.calls.iter().position(|c| c.call == *call) {
                        env.calls.remove(i);
                        if *deadline_passed {
                            CallVerdict::TimedOut
                        } else {
                            CallVerdict::Delivered
                        }
                    } else if was.abandoned.iter().any(|c| c.call == *call) {
                        env.note = Some(Note::AbandonedCallDiscarded);
                        CallVerdict::Discarded
                    } else {
                        protocol(env, format!("{call} ended but was never admitted"));
                        break 'reply;
                    };
                    if verdict != expected {
                        protocol(
                            env,
                            format!("{call} ended with {verdict:?} where {expected:?} was due"),
                        );
                    }
                }
            }
        }
        // What the core's effects tell it, in order.
        for effect in effects {
            match effect {
                Effect::CallFactory {
                    op,
                    extension,
                    context,
                } => {
                    let own = matches!(action, Action::Begin { op: begun, kind: OpKind::Activate(id) }
                        if *begun == op && *id == extension);
                    if !own {
                        Violations::record(
                            &mut env.violations.inv6,
                            format!(
                                "the factory of {extension} was called outside an activation \
                                 of {extension} ({op}, by: {})",
                                render::action(&self.scenario, action)
                            ),
                        );
                    }
                    after_shutdown(env, format!("call the factory of {extension}"));
                    env.running.push(Activation::new(op, extension, context));
                }
                Effect::RunActivate { context, extension } => {
                    after_shutdown(env, format!("run the activate of {extension}"));
                    match env.activation_mut(context) {
                        Some(a) => {
                            a.open = true;
                            if self.scenario.bounds.late
                                && let Some(previous) = env.last_attempt
                            {
                                env.opened = Some((context, previous));
                            }
                        }
                        None => protocol(env, format!("activate run for unknown {context}")),
                    }
                }
                Effect::Cancel { context } => match env.activation_mut(context) {
                    Some(a) => a.cancelled = true,
                    None => protocol(env, format!("cancel of unknown {context}")),
                },
                Effect::RunHook { op, hooks, next } => {
                    let hook = hooks[next].clone();
                    after_shutdown(env, format!("run the hook {}", render::hook(&hook)));
                    match env.emits.iter_mut().find(|e| e.op == op) {
                        Some(e) => e.calls.push((hook, None)),
                        None => protocol(env, format!("a hook run for {op}, not an emit")),
                    }
                }
                Effect::RunCleanup { op, step } => {
                    after_shutdown(env, format!("run the cleanup step {}", render::step(&step)));
                    // INV-12a: a shutdown cleanup step starts only once no
                    // call of its extension runs.
                    let shutdown = env
                        .ops
                        .iter()
                        .any(|p| p.op == op && p.kind == OpKind::Dispose);
                    let running: Vec<String> = env
                        .calls
                        .iter()
                        .filter(|c| c.ext == step.extension)
                        .map(|c| c.call.to_string())
                        .collect();
                    if shutdown && !running.is_empty() {
                        Violations::record(
                            &mut env.violations.inv12a,
                            format!(
                                "{op}: the cleanup step {} started while the tool calls [{}] \
                                 of {} were running",
                                render::step(&step),
                                running.join(", "),
                                step.extension
                            ),
                        );
                    }
                    env.cleanup.push(CleanupObs {
                        op,
                        step,
                        failed: None,
                        deadline: false,
                    });
                }
                Effect::Publish | Effect::Forget { .. } | Effect::ForgetAll => {}
                Effect::Settle { op, outcome } => settle(env, op, outcome),
                Effect::CancelCalls { calls } => {
                    for call in calls {
                        match env.calls.iter_mut().find(|c| c.call == call) {
                            Some(c) => c.cancelled = true,
                            None => protocol(env, format!("cancel of {call}, not in flight")),
                        }
                    }
                }
                Effect::AbandonCalls { calls } => {
                    for call in calls {
                        match env.calls.iter().position(|c| c.call == call) {
                            Some(i) => {
                                let c = env.calls.remove(i);
                                env.abandoned.push(c);
                            }
                            None => protocol(env, format!("abandon of {call}, not in flight")),
                        }
                    }
                    env.note = Some(Note::CallsAbandoned);
                }
            }
        }
    }

    /// The reply to `CallStart`: before the shutdown began the call of a
    /// live tool is admitted; afterwards every call is refused (INV-12b).
    fn call_reply(
        &self,
        env: &mut Env,
        was: &Env,
        action: &Action,
        reply: Result<AdmittedCall, CallRefused>,
    ) {
        let Action::CallStart { ext, tool } = action else {
            Violations::record(
                &mut env.violations.protocol,
                "a call reply to another input".into(),
            );
            return;
        };
        match reply {
            Ok(admitted) => {
                if was.dispose_begun {
                    Violations::record(
                        &mut env.violations.inv12b,
                        format!(
                            "the call of {tool} was admitted ({}) after the shutdown began",
                            admitted.call
                        ),
                    );
                }
                let id = ext.map(|e| self.ext_id(e).to_owned());
                let owner_ok = match &id {
                    Some(id) => admitted.owner == Owner::Extension(id.clone()),
                    None => admitted.owner == Owner::Base,
                };
                if !owner_ok {
                    Violations::record(
                        &mut env.violations.protocol,
                        format!("the call of {tool} runs a tool of {}", admitted.owner),
                    );
                }
                if let Some(ext) = id {
                    env.calls.push(CallObs {
                        call: admitted.call,
                        ext,
                        cancelled: false,
                    });
                }
            }
            Err(CallRefused::HostDisposed) if was.dispose_begun => {
                env.note = Some(Note::CallRefusedAfterShutdown);
            }
            Err(refused) => Violations::record(
                &mut env.violations.protocol,
                format!("the call of live {tool} was refused: {refused:?}"),
            ),
        }
    }

    fn failed(&self, action: &Action) -> bool {
        matches!(
            action,
            Action::Hook { ok: false, .. } | Action::Cleanup { ok: false, .. }
        )
    }

    fn registration_reply(
        &self,
        env: &mut Env,
        action: &Action,
        reply: Result<Registered, exthost::core::ContextClosed>,
    ) {
        match action {
            Action::Register { ext, context, reg } => {
                let registration = self.registration(Some(*ext), *reg);
                let Some(a) = env.activation_mut(*context) else {
                    Violations::record(
                        &mut env.violations.protocol,
                        format!("a registration on unknown {context}"),
                    );
                    return;
                };
                match (reply, &registration) {
                    (Ok(Registered::Tool(t)), Registration::Tool(spec)) => {
                        a.tools.push((t, spec.name.clone()))
                    }
                    (Ok(Registered::Hook(h)), Registration::Hook) => a.hooks.push(h),
                    (Ok(Registered::Disposer(d)), Registration::Disposer) => a.disposers.push(d),
                    (reply, _) => Violations::record(
                        &mut env.violations.protocol,
                        format!("open {context} answered a registration with {reply:?}"),
                    ),
                }
            }
            Action::LateRegister { context, .. } => match reply {
                Err(_) => env.note = Some(Note::LateRefused),
                Ok(handle) => {
                    env.note = Some(Note::LateAccepted);
                    Violations::record(
                        &mut env.violations.inv5,
                        format!("closed {context} accepted a registration ({handle:?})"),
                    );
                }
            },
            _ => Violations::record(
                &mut env.violations.protocol,
                "a registration reply to another input".into(),
            ),
        }
    }
}

/// The cleanup step of `op` that runs now.
fn running_cleanup(env: &mut Env, op: OpId) -> Option<&mut CleanupObs> {
    env.cleanup
        .iter_mut()
        .rev()
        .find(|c| c.op == op && c.failed.is_none())
}

/// The environment's calls in flight are exactly the core's, in start
/// order: nothing the core forgot still runs, and nothing it tracks was
/// answered.
fn check_calls(s: &mut State) {
    let core: Vec<CallId> = s.core.calls_in_flight().map(|(c, _)| c).collect();
    let env: Vec<CallId> = s.env.calls.iter().map(|c| c.call).collect();
    if core != env {
        Violations::record(
            &mut s.env.violations.protocol,
            format!("the core tracks the calls {core:?} but {env:?} are in flight"),
        );
    }
}

fn settle(env: &mut Env, op: OpId, outcome: OpOutcome) {
    env.op_deadlines = 0;
    env.op_losses = 0;
    let Some(pos) = env.ops.iter().position(|p| p.op == op) else {
        Violations::record(
            &mut env.violations.protocol,
            format!("{op} settled but no caller waits for it"),
        );
        return;
    };
    let pending = env.ops.remove(pos);
    if pending.status != OpStatus::Begun {
        Violations::record(
            &mut env.violations.protocol,
            format!("{op} settled before it began"),
        );
    }
    let activation = env
        .running
        .iter()
        .position(|a| a.op == op)
        .map(|i| env.running.remove(i));
    if let Some(a) = &activation {
        env.last_attempt = Some(a.context);
    }
    let mut cleanup = Vec::new();
    env.cleanup.retain(|c| {
        if c.op == op {
            cleanup.push(c.clone());
            false
        } else {
            true
        }
    });
    let emit = env
        .emits
        .iter()
        .position(|e| e.op == op)
        .map(|i| env.emits.remove(i));
    let mut active_at_start = Vec::new();
    match &outcome {
        OpOutcome::Activated { extension } => match &activation {
            Some(a) => env.active.push(a.committed()),
            None => Violations::record(
                &mut env.violations.protocol,
                format!("{extension} activated by {op}, which ran no activation"),
            ),
        },
        OpOutcome::Disposed { .. } => {
            env.disposed = true;
            active_at_start = env.active.clone();
        }
        _ => {}
    }
    env.last.push(Settled {
        op,
        kind: pending.kind,
        outcome,
        activation,
        cleanup,
        emit,
        active_at_start,
    });
}

/// INV-7: every status change of this step is one H-1 lists.
fn check_statuses(before: &HostCore, s: &mut State) {
    let old = before.extensions();
    let new = s.core.extensions();
    if new.len() < old.len() {
        Violations::record(
            &mut s.env.violations.inv7,
            "an extension disappeared".into(),
        );
    }
    for (i, slot) in new.iter().enumerate() {
        let status = slot.status();
        let prev = old
            .get(i)
            .filter(|p| p.id() == slot.id())
            .map(|p| p.status());
        if !allowed(prev, status) {
            Violations::record(
                &mut s.env.violations.inv7,
                format!(
                    "{}: {} -> {status}, a transition H-1 does not have",
                    slot.id(),
                    prev.map_or("(unknown)".into(), |p| p.to_string())
                ),
            );
        }
    }
}

/// INV-10 (M-6): a tool's API name never changes while it stays live, nor
/// when its dormant descriptor goes live.
fn check_api_names(before: &HostCore, s: &mut State) {
    let old = before.registry();
    for entry in s.core.registry().iter() {
        if let Some(prev) = old.get(&entry.name)
            && (prev.binding == entry.binding || prev.binding == Binding::Dormant)
            && prev.api_name != entry.api_name
        {
            let when = if prev.binding == entry.binding {
                "while live"
            } else {
                "when its dormant descriptor went live"
            };
            Violations::record(
                &mut s.env.violations.inv10,
                format!(
                    "{} changed its API name from {} to {} {when}",
                    entry.name, prev.api_name, entry.api_name
                ),
            );
        }
    }
}

impl Model for HostModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        vec![self.initial_state().canonical()]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
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
        if core.phase() == Phase::Open && idle {
            if step < script.len() {
                out.push(Action::Discover(step));
                if matches!(script[step], DiscoveryStep::Refuse { .. })
                    && let Some(j) = (step + 1..script.len())
                        .find(|&j| matches!(script[j], DiscoveryStep::Accept(_)))
                {
                    out.push(Action::Discover(j));
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
        // idle point (see `docs/model-checking.md`).
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
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        // Symmetry reduction: every state the checker stores is canonical
        // (handles renamed by rank, see `crate::canonical`), so states that
        // differ only in handle numbers are one state.
        let mut s = self.step(last, &action)?;
        s.canonicalize();
        Some(s)
    }

    fn format_action(&self, action: &Action) -> String {
        render::action(&self.scenario, action)
    }

    fn format_step(&self, last: &State, action: Action) -> Option<String> {
        let mut core = last.core.clone();
        let effects = match self.perform(&mut core, &action) {
            None => "(no input: the environment's choice)".to_owned(),
            Some(Ok((Reply::None, effects))) => render::effects(&effects),
            Some(Ok((reply, effects))) => {
                format!("  - reply: {reply:?}\n{}", render::effects(&effects))
            }
            Some(Err(e)) => format!("refused: {e}"),
        };
        let next = self.step(last, &action)?;
        Some(format!(
            "{}\n\neffects:\n{effects}\n\n{}",
            render::action(&self.scenario, &action),
            render::summary(&next)
        ))
    }

    fn as_svg(&self, path: Path<State, Action>) -> Option<String> {
        Some(render::svg(&self.scenario, path.last_state()))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        properties::all(self)
    }
}
