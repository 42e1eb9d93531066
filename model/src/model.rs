//! The stateright [`Model`]: actions are the core's [`Input`]s (plus one
//! environment-only choice, hanging an `activate`), and every transition is
//! [`HostCore::apply`] (or a caller's command), the core's outbox drained
//! once ([`HostCore::drain_outbox`]), and the environment observing the
//! reply and what was drained.
//!
//! Architecture invariants:
//!
//! - The top of the model: it builds on [`crate::action`],
//!   [`crate::state`], [`crate::scenario`], [`crate::properties`] and
//!   [`crate::render`] and [`crate::symmetry`], and nothing below it names it, except that
//!   [`crate::run`] and the binaries drive it.
//! - Its children split one step: `enabled` (what may happen next),
//!   `observe` (what the action and the core's reply tell the
//!   environment), `effects` (what the drained outbox tells it: the
//!   commands, the publication, and the record of a settled operation),
//!   `checks` (before/after checks).

mod calls;
mod checks;
mod effects;
mod enabled;
mod observe;

use std::sync::Arc;
use std::time::Duration;

use exthost_core::canonical::{Handle, HandleKind, HandleSet};
use exthost_core::{
    AdmittedCall, Awaiting, CallRefused, CallVerdict, ContextClosed, DiscoveryError, DormantCall,
    Drained, Effect, Failure, HookResults, HostCore, Input, Moment, Mutant, OpKind, OpOutcome,
    Phase, ProtocolError, ProviderSelection, Registered, Registration, Requested,
};
use stateright::{Expectation, Model, Path, Property};

use crate::properties;
use crate::render;
use crate::scenario::{
    BASE_TOOL, Bounds, DiscoveryStep, EVENT, MODEL_DEADLINE, PROVIDER_ID, Scenario, provider_record,
};
use crate::state::{Env, OpStatus, State, Violations};
use crate::symmetry::Pair;

pub use crate::action::{Action, Awaited, Ext, Reg};

/// The core's typed reply to an action (what the action set off waits in
/// the core's outbox, [`exthost_core::Drained`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// No reply: an input of the running operation, or a withdrawal.
    None,
    /// `discover`.
    Discovered(Result<(), DiscoveryError>),
    /// `request`.
    Requested(Requested),
    /// An `emit` request, after the core said which extensions the event
    /// starts first (`triggered_by`, M-3), as the host asks it.
    Emit {
        /// The extensions the event starts, in discovery order.
        triggered: Vec<String>,
        /// The `request` reply.
        reply: Requested,
    },
    /// `register`.
    Registration(Result<Registered, ContextClosed>),
    /// `call_start`.
    Call(Result<AdmittedCall, CallRefused>),
    /// `call_finished`.
    CallEnded(CallVerdict),
    /// A dormant call or a provider selection (`admit_dormant_call`,
    /// `select_provider`): the extension it starts and the request's reply,
    /// or the extension whose revoked grant refused it.
    Dormant {
        /// The extension the core starts, with its `request` reply.
        started: Option<(String, Requested)>,
        /// The extension whose grant the core says is revoked.
        revoked: Option<String>,
    },
}

/// The model: a scenario, and the seeded bug the core runs (if any).
#[derive(Debug, Clone)]
pub struct HostModel {
    /// What the environment may do.
    pub scenario: Scenario,
    /// The seeded bug, or `None` for the real core.
    pub mutant: Option<Mutant>,
    /// Every property, as [`properties::definitions`] gives them for the
    /// scenario (the checker's list is built from these, in this order).
    pub definitions: Vec<properties::Definition>,
    /// The `sometimes` properties, in order, with their conditions
    /// ([`properties::examples`]).
    pub examples: Vec<(&'static str, properties::Condition)>,
    /// The two interchangeable extensions of the scenario, when there are
    /// two ([`crate::symmetry`]); `None` also when the extension symmetry
    /// is switched off ([`HostModel::without_extension_symmetry`]).
    pub pair: Option<Pair>,
    /// A seeded bug of the cleanup reduction (tests only,
    /// [`HostModel::with_forgetful_cleanup`]): the environment also forgets
    /// the disposers of an attempt whose rollback began.
    pub forget_disposers: bool,
}

fn result(ok: bool, what: &str) -> Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(Failure::error(format!("{what} failed")))
    }
}

/// Keeps of the handles the core told the shell to forget only those its
/// state still holds: a handle it no longer holds is never named again.
fn prune_forgotten(s: &mut State) {
    if s.env.forgotten.is_empty() {
        return;
    }
    let mut set = HandleSet::new();
    s.core.handles(&mut set);
    fn keep<H: Handle>(list: &mut Vec<H>, held: &[u64]) {
        list.retain(|h| held.binary_search(&h.raw()).is_ok());
    }
    let f = &mut s.env.forgotten;
    keep(&mut f.contexts, &set.of(HandleKind::Context));
    keep(&mut f.tools, &set.of(HandleKind::Tool));
    keep(&mut f.hooks, &set.of(HandleKind::Hook));
    keep(&mut f.disposers, &set.of(HandleKind::Disposer));
}

fn clamp(n: usize) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

impl HostModel {
    /// A model of the real core under these bounds.
    pub fn new(bounds: Bounds) -> Self {
        Self::with_mutant(bounds, None)
    }

    /// A model of the core running `mutant`.
    pub fn with_mutant(bounds: Bounds, mutant: Option<Mutant>) -> Self {
        let scenario = Scenario::new(bounds);
        let definitions = properties::definitions(&scenario);
        Self {
            examples: properties::examples(&definitions),
            definitions,
            pair: Pair::of(&scenario),
            scenario,
            mutant,
            forget_disposers: false,
        }
    }

    /// The same model, storing a state and its exchange of the two
    /// interchangeable extensions as two states (to measure what the
    /// extension symmetry saves, and to compare verdicts).
    pub fn without_extension_symmetry(mut self) -> Self {
        self.pair = None;
        self
    }

    /// The same model with a seeded bug of the cleanup reduction: once a
    /// rollback begins, the environment forgets the attempt's disposers
    /// too, which the rollback still runs (tests only; INV-2 must catch it).
    pub fn with_forgetful_cleanup(mut self) -> Self {
        self.forget_disposers = true;
        self
    }

    /// The state the checker stores for `s`: its handles renamed by rank
    /// ([`State::canonicalize`]), then, when the two interchangeable
    /// extensions may be exchanged, the one of it and its exchange that
    /// [`State::choose_representative`] keeps. Returns true when it
    /// exchanged them.
    pub fn representative(&self, s: &mut State) -> bool {
        self.representative_inner(s, false)
    }

    /// [`HostModel::representative`] where the exchange forgets the
    /// callers' pending operations (a seeded bug, tests only).
    pub fn representative_with_bug(&self, s: &mut State) -> bool {
        self.representative_inner(s, true)
    }

    fn representative_inner(&self, s: &mut State, bug: bool) -> bool {
        s.canonicalize();
        match &self.pair {
            Some(pair) if pair.applies(&self.scenario, s) => s.choose_representative(pair, bug),
            _ => false,
        }
    }

    /// The state every run starts from.
    pub fn initial_state(&self) -> State {
        let b = &self.scenario.bounds;
        State {
            core: self.scenario.initial.clone().with_mutant(self.mutant),
            env: Env {
                requests_left: clamp(b.ops),
                reloads_left: clamp(b.reloads),
                redefined: false,
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
    /// (`None` for the callers' commands and [`Action::Hang`]), and the
    /// clock reading it is applied at (H-12, INV-17): a completion is read
    /// one nanosecond before the deadline of the step it ends, and the
    /// timer the core asked for fires at the deadline itself
    /// ([`Action::Deadline`]); a hook read at its deadline is that
    /// action's on an emit.
    pub fn input(&self, core: &HostCore, action: &Action) -> Option<(Input, Moment)> {
        let due = core.poll_timeout();
        let before = due.map_or(Moment::ZERO, |at| at.shifted(-1));
        let hook_span = |late: bool| {
            let end = if late {
                MODEL_DEADLINE
            } else {
                MODEL_DEADLINE - Duration::from_nanos(1)
            };
            Some((Moment::ZERO, Moment::ZERO.after(end)))
        };
        Some(match action {
            Action::Begin { op, .. } => (Input::Begin(*op), before),
            Action::Factory { context, ok, .. } => (
                Input::FactoryReturned {
                    context: *context,
                    result: result(*ok, "factory"),
                },
                before,
            ),
            Action::ActivateReturned { context, ok, .. } => (
                Input::ActivateReturned {
                    context: *context,
                    result: result(*ok, "activate"),
                },
                before,
            ),
            Action::Hook { op, ok, .. } => (
                Input::HookFinished {
                    op: *op,
                    result: result(*ok, "hook"),
                    span: hook_span(false),
                },
                before,
            ),
            Action::Hooks { op, results, .. } => {
                let (_, half) = hook_span(false)?;
                let mut timed = HookResults::timed(Moment::ZERO);
                for (i, ok) in results.iter().enumerate() {
                    let ended = Moment::from_nanos(half.as_nanos() * (i as u64 + 1));
                    timed.push_at(result(*ok, "hook"), ended);
                }
                (
                    Input::HooksFinished {
                        op: *op,
                        results: timed,
                    },
                    before,
                )
            }
            Action::Cleanup { op, ok, .. } => (
                Input::CleanupFinished {
                    op: *op,
                    result: result(*ok, "cleanup step"),
                },
                before,
            ),
            Action::Deadline {
                op,
                on: Awaited::Hook,
            } => (
                Input::HookFinished {
                    op: *op,
                    result: Ok(()),
                    span: hook_span(true),
                },
                before,
            ),
            Action::Deadline { op, .. } => (Input::Timeout { op: *op }, due.unwrap_or_default()),
            Action::Lost { op, .. } => (Input::StepLost { op: *op }, before),
            _ => return None,
        })
    }

    /// Feeds an action to the core: a caller's command through its typed
    /// method, an input of the running operation through `apply`, and
    /// returns the core's reply. `None` for [`Action::Hang`], which the
    /// core does not see. What the action set off waits in the core's
    /// outbox: the caller drains it ([`HostCore::drain_outbox`]).
    /// `redefined`: the manifest extension's second definition is in
    /// force, so a dormant call calls the tool it declares.
    pub fn perform(
        &self,
        core: &mut HostCore,
        redefined: bool,
        action: &Action,
    ) -> Option<Result<Reply, ProtocolError>> {
        let reply = match action {
            Action::Discover(step) => Reply::Discovered(core.discover(self.scenario.batch(*step))),
            Action::Request(OpKind::Emit) => Reply::Emit {
                triggered: core.triggered_by(EVENT),
                reply: core.request(OpKind::Emit),
            },
            Action::Request(kind) => Reply::Requested(core.request(kind.clone())),
            Action::Withdraw(op) => return Some(core.withdraw(*op).map(|()| Reply::None)),
            Action::Register { ext, context, reg } => {
                Reply::Registration(core.register(*context, self.registration(Some(*ext), *reg)))
            }
            Action::LateRegister { ext, context, reg } => {
                Reply::Registration(core.register(*context, self.registration(*ext, *reg)))
            }
            Action::CallStart { tool, .. } => Reply::Call(core.call_start(tool, Moment::ZERO)),
            Action::CallFinish {
                call,
                deadline_passed,
                ..
            } => {
                // Read at the call's deadline, or one nanosecond before.
                let now = match core.call_due(*call) {
                    Some(due) if *deadline_passed => due.at,
                    Some(due) => due.at.shifted(-1),
                    None => Moment::ZERO,
                };
                Reply::CallEnded(core.call_finished(*call, now))
            }
            Action::DormantCall { ext, provider } => {
                let (started, revoked) = self.admit_dormant(core, *ext, *provider, redefined);
                let started = started.map(|extension| {
                    let reply = core.request(OpKind::Activate(extension.clone()));
                    (extension, reply)
                });
                Reply::Dormant { started, revoked }
            }
            Action::Hang { .. } => return None,
            _ => {
                let (input, now) = self.input(core, action)?;
                return Some(core.apply(input, now).map(|()| Reply::None));
            }
        };
        Some(Ok(reply))
    }

    /// [`HostModel::perform`], then the core's outbox drained once: the
    /// reply and everything the action set off.
    pub fn perform_and_drain(
        &self,
        core: &mut HostCore,
        redefined: bool,
        action: &Action,
    ) -> Option<Result<(Reply, Drained), ProtocolError>> {
        let performed = self.perform(core, redefined, action)?;
        let drained = core.drain_outbox();
        Some(performed.map(|reply| (reply, drained)))
    }

    /// The core's admission of a dormant call of `ext`'s declared tool, or
    /// of a selection of the provider it declares: the extension it starts,
    /// or the one whose revoked grant refuses it (INV-14).
    pub(crate) fn admit_dormant(
        &self,
        core: &HostCore,
        ext: Ext,
        provider: bool,
        redefined: bool,
    ) -> (Option<String>, Option<String>) {
        if provider {
            let model = &provider_record().models[0].id;
            match core.select_provider(PROVIDER_ID, model) {
                ProviderSelection::Dormant { extension } => (Some(extension), None),
                ProviderSelection::Revoked { extension } => (None, Some(extension)),
                _ => (None, None),
            }
        } else {
            let id = self.ext_id(ext);
            let Some(meta) = self.scenario.meta(id) else {
                return (None, None);
            };
            let tool = self.scenario.declared_tool(id, redefined);
            match core.admit_dormant_call(&meta.runtime_tool_name(tool)) {
                DormantCall::Start { extension } => (Some(extension), None),
                DormantCall::Revoked { extension } => (None, Some(extension)),
                DormantCall::NotDormant => (None, None),
            }
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
        properties::judge_step(&self.scenario, &self.examples, s);
        let just_disposed = s
            .env
            .last
            .iter()
            .any(|st| matches!(st.outcome, OpOutcome::Disposed { .. }));
        if just_disposed && self.scenario.bounds.calls > 0 {
            s.env.call_after = Some(
                s.env
                    .call_target
                    .take()
                    .unwrap_or_else(|| (None, BASE_TOOL.into())),
            );
        }
        s.env.last.clear();
        let env = &mut s.env;
        if s.core.phase() != Phase::Open {
            // No request, discovery or new activation attempt comes any
            // more: their bounds and the previous attempt's context are
            // read by nothing.
            env.requests_left = 0;
            env.reloads_left = 0;
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
            // Calls start only before the shutdown begins, and INV-1 no
            // longer reads the publication order.
            env.calls_left = 0;
            env.published.clear();
        }
        self.forget_what_cleanups_never_read(s);
        prune_forgotten(s);
        if s.env.disposed {
            // INV-1 and INV-3 no longer read the committed activations.
            s.env.active.clear();
        }
    }
    /// The cleanup reduction (`docs/model.md`, "A cleanup keeps
    /// only what it runs"): once the shutdown began, the active
    /// generations keep only their contexts and disposers (the tool called
    /// after the shutdown is chosen first, while it is known); a rolling
    /// back attempt and a retiring generation keep the same, as the core
    /// does. INV-1, INV-11a, INV-2, INV-3 and INV-11c read nothing else of
    /// them from these points on.
    fn forget_what_cleanups_never_read(&self, s: &mut State) {
        let env = &mut s.env;
        if env.dispose_begun && env.active.iter().any(|a| a.publishes()) {
            if self.scenario.bounds.calls > 0 {
                env.call_target = Some(self.tool_after_shutdown(env));
            }
            for a in &mut env.active {
                Arc::make_mut(a).keep_cleanup_only();
            }
        }
        if !env.running.is_empty()
            && let Some(Awaiting::Cleanup(_, step)) = s.core.awaiting()
        {
            for a in env.running.iter_mut().filter(|a| a.context == step.context) {
                if a.publishes() {
                    a.keep_cleanup_only();
                }
                if self.forget_disposers {
                    a.disposers.clear();
                }
            }
        }
        if let Some(old) = &mut env.retiring {
            old.keep_cleanup_only();
        }
        // The counts of attempted registrations bound only an `activate`
        // that runs and whose deadline has not passed (after it, it only
        // returns): once it returned or its deadline passed (or before it
        // began, when they are zero) nothing reads them, so an attempt that
        // registered only disposers, or whose registrations were refused,
        // forgets them too.
        for a in env.running.iter_mut().filter(|a| !a.open || a.deadline) {
            a.forget_attempts();
        }
    }

    /// Applies `action` to a copy of `last`, drains the core's outbox and
    /// observes the reply and what the outbox held, without renaming
    /// handles (the checker's [`Model::next_state`] is this step followed
    /// by [`State::canonicalize`]). Returns `None` only
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
        let performed = self.perform(&mut s.core, s.env.redefined, action)?;
        let drained = s.core.drain_outbox();
        // Stored states never carry an outbox: what the action set off was
        // just drained, and the checker compares states with it.
        debug_assert!(
            s.core.outbox_is_empty(),
            "the core's outbox is not empty after the step was drained"
        );
        // INV-15: a refused input changes nothing, neither the core nor
        // its outbox.
        let refused = match &performed {
            Err(_) => true,
            Ok(
                Reply::Requested(Requested::Rejected(_))
                | Reply::Emit {
                    reply: Requested::Rejected(_),
                    ..
                }
                | Reply::Call(Err(_)),
            ) => true,
            Ok(_) => false,
        };
        let refusal_changed = refused && (s.core != *before || !drained.is_empty());
        if refusal_changed {
            Violations::record(
                &mut s.env.violations.inv15,
                format!(
                    "the core refused {} and yet changed {}",
                    render::action(&self.scenario, action),
                    if drained.is_empty() {
                        "its state"
                    } else {
                        "its outbox"
                    }
                ),
            );
        }
        // INV-16: a cancellation the core decided in this step is sent in
        // this step.
        if let Some(context) = s.core.cancelled_activation()
            && before.cancelled_activation() != Some(context)
            && !drained
                .commands
                .iter()
                .any(|c| matches!(c, Effect::Cancel { context: c } if *c == context))
        {
            Violations::record(
                &mut s.env.violations.inv16,
                format!(
                    "{} cancelled the activation of context {context:?} but sent no Cancel",
                    render::action(&self.scenario, action)
                ),
            );
        }
        match performed {
            Err(error) => {
                if matches!(action, Action::Begin { .. })
                    && before.running_op().is_some()
                    && !refusal_changed
                {
                    // The core refused to begin an operation while another
                    // runs, changing nothing: exactly what H-3 asks. The
                    // probe is not a step.
                    return None;
                }
                if !(matches!(action, Action::Begin { .. }) && before.running_op().is_some()) {
                    Violations::record(
                        &mut s.env.violations.protocol,
                        format!("{}: {error}", render::action(&self.scenario, action)),
                    );
                }
                self.end_step(&mut s);
                Some(s)
            }
            Ok(reply) => {
                self.observe(&mut s, last, action, reply, drained);
                Self::check_transition(before, &mut s);
                self.end_step(&mut s);
                Some(s)
            }
        }
    }
}

impl Model for HostModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let mut s = self.initial_state();
        self.representative(&mut s);
        vec![s]
    }
    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        self.enabled(s, out);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        // Symmetry reduction: every state the checker stores is canonical
        // (handles renamed by rank, see `crate::canonical`, and the two
        // interchangeable extensions in their chosen order, see
        // `crate::symmetry`), so states that differ only in handle numbers
        // or by that exchange are one state.
        let mut s = self.step(last, &action)?;
        self.representative(&mut s);
        Some(s)
    }

    fn format_action(&self, action: &Action) -> String {
        render::action(&self.scenario, action)
    }

    fn format_step(&self, last: &State, action: Action) -> Option<String> {
        let mut core = last.core.clone();
        let effects = match self.perform_and_drain(&mut core, last.env.redefined, &action) {
            None => "(no input: the environment's choice)".to_owned(),
            Some(Ok((Reply::None, drained))) => render::effects(&drained),
            Some(Ok((reply, drained))) => {
                format!("  - reply: {reply:?}\n{}", render::effects(&drained))
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

    /// The checker's properties, built from [`HostModel::definitions`]: an
    /// `always` or `eventually` property judges its condition on the state;
    /// a `sometimes` property reads the mark [`properties::judge_step`]
    /// left, so that the checker judges it on the stored state.
    fn properties(&self) -> Vec<Property<Self>> {
        let mut sometimes = 0;
        self.definitions
            .iter()
            .enumerate()
            .map(|(i, d)| {
                assert!(i < AT.len(), "too many properties");
                match d.expectation {
                    Expectation::Always => Property::always(d.name, AT[i]),
                    Expectation::Eventually => Property::eventually(d.name, AT[i]),
                    Expectation::Sometimes => {
                        assert!(sometimes < SHOWN.len(), "too many sometimes properties");
                        sometimes += 1;
                        Property::sometimes(d.name, SHOWN[sometimes - 1])
                    }
                }
            })
            .collect()
    }
}

/// The property number `I`'s condition, judged on the state.
fn at<const I: usize>(m: &HostModel, s: &State) -> bool {
    (m.definitions[I].condition)(&m.scenario, s)
}

/// The `sometimes` property number `I`: the step that led to the state
/// showed it ([`properties::judge_step`]).
fn shown<const I: usize>(_: &HostModel, s: &State) -> bool {
    s.env.shown & (1 << I) != 0
}

macro_rules! table {
    ($f:ident: $($i:literal)*) => { [$($f::<$i>),*] };
}

/// One condition per property, by its position.
const AT: [fn(&HostModel, &State) -> bool; 96] = table!(at:
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63 64 65 66 67 68 69 70 71 72 73 74 75 76 77 78 79 80 81 82 83 84 85 86 87 88 89 90 91
    92 93 94 95
);

/// One mark per `sometimes` property, by its position among them.
const SHOWN: [fn(&HostModel, &State) -> bool; 64] = table!(shown:
    0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
    32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61
    62 63
);
