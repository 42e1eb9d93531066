//! Text and SVG for people: actions and effects in the spec's words, a
//! state summary, and the explorer's picture of a state.
//!
//! Architecture invariant: depends on [`crate::action`], [`crate::state`]
//! and [`crate::scenario`] only (never on the `Model` impl nor on the
//! properties), so that everything above can render.

use std::fmt::Write as _;

use exthost_core::{
    Awaiting, Binding, CleanupKind, CleanupStep, Drained, Effect, FailureCause, LiveHook, OpKind,
    OpOutcome, Phase, Registration,
};

use crate::action::{Action, Awaited};
use crate::scenario::{DiscoveryStep, Scenario};
use crate::state::{Note, State};

/// An operation kind as a caller writes it.
pub fn kind(kind: &OpKind) -> String {
    match kind {
        OpKind::Activate(id) => format!("activate({id:?})"),
        OpKind::Emit => "emit".into(),
        OpKind::Dispose => "dispose".into(),
        OpKind::Reload(id) => format!("reload({id:?})"),
        OpKind::Redefine(meta) => format!("redefine({:?})", meta.id),
    }
}

/// A cleanup step: `disposer a[1]` or `instance a`.
pub fn step(step: &CleanupStep) -> String {
    match step.kind {
        CleanupKind::Disposer { index, .. } => format!("disposer {}[{index}]", step.extension),
        CleanupKind::Instance => format!("instance {}", step.extension),
    }
}

/// A list of cleanup steps.
pub fn steps<'a>(steps: impl IntoIterator<Item = &'a CleanupStep>) -> String {
    let names: Vec<String> = steps.into_iter().map(step).collect();
    format!("[{}]", names.join(", "))
}

/// A hook: `a.hook[0]`.
pub fn hook(hook: &LiveHook) -> String {
    format!("{}.hook[{}]", hook.extension, hook.index)
}

fn registration(r: &Registration) -> String {
    match r {
        Registration::Tool(spec) => format!("tool {:?}", spec.name),
        Registration::Hook => "a hook".into(),
        Registration::Disposer => "a disposer".into(),
        Registration::Provider(p) => format!("provider {:?}", p.id),
    }
}

fn ok(ok: bool, yes: &str, no: &str) -> String {
    if ok { yes.into() } else { no.into() }
}

/// An action in the spec's words.
pub fn action(m: &Scenario, action: &Action) -> String {
    match action {
        Action::Discover(i) => {
            let ids: Vec<String> = m.batch(*i).iter().map(|d| format!("{:?}", d.id)).collect();
            match &m.script[*i] {
                DiscoveryStep::Accept(_) => format!("discover [{}]", ids.join(", ")),
                DiscoveryStep::Refuse { why, .. } => {
                    format!("discover [{}] (must be refused: {why})", ids.join(", "))
                }
            }
        }
        Action::Request(k) => format!("a caller requests {}", kind(k)),
        Action::Withdraw(op) => format!("the caller of {op} drops its future before its turn"),
        Action::DormantCall { ext, provider } => {
            let id = m.ext_id(*ext);
            if *provider {
                format!("a caller selects the provider {id} declares (it may start {id})")
            } else {
                format!("a caller calls the dormant tool of {id} (it may start {id})")
            }
        }
        Action::Begin { op, kind: k } => format!("{op} {} begins", kind(k)),
        Action::Factory { ext, ok: o, .. } => format!(
            "the factory of {} {}",
            m.ext_id(*ext),
            ok(*o, "returns an instance", "fails")
        ),
        Action::Register { ext, reg, .. } => format!(
            "{}'s activate registers {}",
            m.ext_id(*ext),
            registration(&m.registration(Some(*ext), *reg))
        ),
        Action::Hang { ext, .. } => format!(
            "{}'s activate hangs (it returns only once cancelled)",
            m.ext_id(*ext)
        ),
        Action::ActivateReturned { ext, ok: o, .. } => format!(
            "{}'s activate {}",
            m.ext_id(*ext),
            ok(*o, "returns Ok", "fails")
        ),
        Action::Hook { op, hook: h, ok: o } => {
            format!("{op}: hook {} {}", hook(h), ok(*o, "returns", "fails"))
        }
        Action::Hooks { op, hooks, results } => {
            let each: Vec<String> = hooks
                .iter()
                .zip(results)
                .map(|(h, o)| format!("{} {}", hook(h), ok(*o, "returns", "fails")))
                .collect();
            format!(
                "{op}: the shell runs the remaining hooks and reports them at once: {}",
                each.join(", ")
            )
        }
        Action::Cleanup {
            op,
            step: st,
            ok: o,
        } => {
            format!("{op}: cleanup {} {}", step(st), ok(*o, "succeeds", "fails"))
        }
        Action::LateRegister { ext, context, reg } => format!(
            "{} registers {} through {context} after that activation settled",
            ext.map_or("extension code of an earlier attempt", |e| m.ext_id(e)),
            registration(&m.registration(*ext, *reg))
        ),
        Action::CallStart { ext, tool } => format!(
            "a caller calls the tool {tool:?} (of {})",
            ext.map_or("the host", |e| m.ext_id(e))
        ),
        Action::CallFinish {
            call,
            ext,
            deadline_passed,
        } => format!(
            "{call} (a tool of {}) finishes{}",
            m.ext_id(*ext),
            if *deadline_passed {
                " after its own deadline passed"
            } else {
                ""
            }
        ),
        Action::Deadline { op, on } => {
            format!("{op}: the deadline of {} passes", awaited(*on))
        }
        Action::Lost { op, on } => format!(
            "{op}: the task running {} ends without a result",
            awaited(*on)
        ),
    }
}

fn awaited(on: Awaited) -> &'static str {
    match on {
        Awaited::Factory => "the factory",
        Awaited::Activate => "activate",
        Awaited::Hook => "the hook",
        Awaited::Cleanup => "the cleanup step",
        Awaited::Calls => "the wait for the extension's tool calls",
    }
}

fn outcome(o: &OpOutcome) -> String {
    match o {
        OpOutcome::Activated { extension } => format!("activated {extension}"),
        OpOutcome::AlreadyActive { extension } => format!("{extension} already active"),
        OpOutcome::DependencyMissing {
            extension,
            dependent,
            dependency,
        } => format!("{extension} not activated: {dependent} depends on missing {dependency}"),
        OpOutcome::Reloaded {
            extension,
            cleanup_failures,
        } => format!(
            "reloaded {extension}; old generation cleanup failures [{}]",
            cleanup_failures
                .iter()
                .map(|s| step(&s.step))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        OpOutcome::ReloadFailed(f) => {
            format!("reload of {} failed; old generation live", f.extension)
        }
        OpOutcome::NotActive { extension, status } => {
            format!("{extension} not reloaded: {status}")
        }
        OpOutcome::Redefined { extension } => {
            format!("{extension} redefined, not active: its new declarations are dormant")
        }
        OpOutcome::RedefineRefused { extension, error } => {
            format!("redefinition of {extension} refused: {error:?}")
        }
        OpOutcome::DependencyFailed { extension, failure } => {
            format!(
                "{extension} not activated: dependency {} failed",
                failure.extension
            )
        }
        OpOutcome::ActivationFailed(f) => {
            let cause = match &f.cause {
                FailureCause::Factory(e) => format!("factory: {e}"),
                FailureCause::Activate(e) => format!("activate: {e}"),
                FailureCause::Registry(e) => format!("{}: {e}", e.code()),
                FailureCause::Declaration(d) => format!("declaration: {} {}", d.reason(), d.tool()),
                FailureCause::Cancelled => "cancelled".into(),
                FailureCause::DeadlinePassed => "deadline passed".into(),
            };
            let failed: Vec<String> = f.cleanup_failures.iter().map(|s| step(&s.step)).collect();
            if failed.is_empty() {
                format!("{} failed ({cause})", f.extension)
            } else {
                format!(
                    "{} failed ({cause}); rollback failures [{}]",
                    f.extension,
                    failed.join(", ")
                )
            }
        }
        OpOutcome::CancelledBeforeStart { extension } => {
            format!("{extension} cancelled before its start")
        }
        OpOutcome::NotFound { extension } => format!("{extension:?} not found"),
        OpOutcome::Emitted { diagnostics } => {
            let d: Vec<String> = diagnostics
                .iter()
                .map(|d| format!("{}.hook[{}]", d.extension_id, d.hook_index))
                .collect();
            format!("emitted; failed hooks [{}]", d.join(", "))
        }
        OpOutcome::Disposed { failures } => {
            let f: Vec<String> = failures.iter().map(|s| step(&s.step)).collect();
            format!("disposed; failed steps [{}]", f.join(", "))
        }
    }
}

/// One command in words.
pub fn effect(e: &Effect) -> String {
    match e {
        Effect::CallFactory {
            op,
            extension,
            context,
        } => format!("{op}: call the factory of {extension} ({context})"),
        Effect::RunActivate { extension, context } => {
            format!("open {context} and run {extension}'s activate")
        }
        Effect::Cancel { context } => format!("fire the cancellation signal of {context}"),
        Effect::RunHook { op, hooks, next } => format!("{op}: run hook {}", hook(&hooks[*next])),
        Effect::RunCleanup { op, step: s } => format!("{op}: run cleanup {}", step(s)),
        Effect::Forget { .. } => "forget the attempt's handles".into(),
        Effect::ForgetAll => "forget every handle".into(),
        Effect::CancelCalls { calls } => {
            format!("fire the cancellation signals of the calls {calls:?} and wait for them")
        }
        Effect::AbandonCalls { calls } => {
            format!("abandon the calls {calls:?} (their callers get EXTENSION_TIMEOUT)")
        }
    }
}

/// What one step left in the core's outbox, in the order a driver takes it:
/// the commands, then the publication, then the settled operations.
pub fn drained(d: &Drained) -> Vec<String> {
    let commands = d.commands.iter().map(effect);
    let published = d.published.then(|| "publish a new snapshot".to_owned());
    let settled = d
        .settled
        .iter()
        .map(|s| format!("settle {}: {}", s.op, outcome(&s.outcome)));
    commands.chain(published).chain(settled).collect()
}

/// What one step left in the core's outbox, one line each ([`drained`]).
pub fn effects(d: &Drained) -> String {
    if d.is_empty() {
        return "  (none)".into();
    }
    drained(d)
        .iter()
        .map(|e| format!("  - {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The host's phase in words.
pub fn phase(p: Phase) -> String {
    match p {
        Phase::Open => "open".into(),
        Phase::Closing(op) => format!("closing (dispose {op} queued)"),
        Phase::Disposed(op) => format!("disposed (by {op})"),
    }
}

fn awaiting(s: &State) -> String {
    match s.core.awaiting() {
        None => "nothing".into(),
        Some(Awaiting::Begin(op)) => format!("{op} to begin"),
        Some(Awaiting::Factory(c)) => format!("the factory of {c}"),
        Some(Awaiting::Activate(c)) => format!("activate of {c} (context open)"),
        Some(Awaiting::Hook(op, h)) => format!("{op}: hook {}", hook(&h)),
        Some(Awaiting::Cleanup(op, st)) => format!("{op}: cleanup {}", step(&st)),
        Some(Awaiting::Calls(op, ext)) => format!("{op}: the tool calls of {ext}"),
    }
}

/// The lines that describe a state, for the text summary and the SVG.
pub fn lines(s: &State) -> Vec<(String, String)> {
    let core = &s.core;
    let env = &s.env;
    let mut out = Vec::new();
    out.push(("phase".into(), phase(core.phase())));
    let exts: Vec<String> = core
        .extensions()
        .iter()
        .map(|e| format!("{}={}", e.id(), e.status()))
        .collect();
    out.push(("extensions".into(), exts.join("  ")));
    out.push((
        "activation order".into(),
        core.activation_order().join(", "),
    ));
    let tools: Vec<String> = core
        .registry()
        .iter()
        .map(|e| {
            let binding = match e.binding {
                Binding::Live(t) => format!("{t}"),
                Binding::Dormant => "dormant".into(),
            };
            format!("{} [api {}] ({}, {binding})", e.name, e.api_name, e.owner)
        })
        .collect();
    out.push(("registry".into(), tools.join("; ")));
    let hooks: Vec<String> = core.live_hooks().iter().map(hook).collect();
    out.push(("live hooks".into(), hooks.join(", ")));
    let queue: Vec<String> = core
        .queued()
        .iter()
        .map(|(op, k)| format!("{op} {}", kind(k)))
        .collect();
    out.push(("queue".into(), queue.join(", ")));
    out.push(("awaiting".into(), awaiting(s)));
    for a in &env.running {
        let mut flags = Vec::new();
        if a.instance {
            flags.push("instance");
        }
        if a.open {
            flags.push("context open");
        }
        if a.hung {
            flags.push("hung");
        }
        if a.cancelled {
            flags.push("cancelled");
        }
        let tools: Vec<&str> = a.tools.iter().map(|(_, n)| n.as_str()).collect();
        out.push((
            format!("activation {}", a.ext),
            format!(
                "{} {}: {}; staged tools {tools:?}, {} hooks, {} disposers",
                a.op,
                a.context,
                flags.join(", "),
                a.hooks.len(),
                a.disposers.len()
            ),
        ));
    }
    let log: Vec<String> = env
        .cleanup
        .iter()
        .map(|c| {
            let result = match c.failed {
                None => "running",
                Some(true) => "failed",
                Some(false) => "ok",
            };
            format!("{} {} {result}", c.op, step(&c.step))
        })
        .collect();
    if !log.is_empty() {
        out.push(("cleanup log".into(), log.join(", ")));
    }
    for e in &env.emits {
        let calls: Vec<String> = e
            .calls
            .iter()
            .map(|(h, r)| {
                let result = match r {
                    None => "running",
                    Some(true) => "failed",
                    Some(false) => "ok",
                };
                format!("{} {result}", hook(h))
            })
            .collect();
        out.push((format!("emit {}", e.op), calls.join(", ")));
    }
    for st in &env.last {
        let log: Vec<String> = st
            .cleanup
            .iter()
            .map(|c| {
                format!(
                    "{}{}",
                    step(&c.step),
                    if c.failed == Some(true) {
                        " (failed)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        let mut text = format!("{} {}: {}", st.op, kind(&st.kind), outcome(&st.outcome));
        if !log.is_empty() {
            let _ = write!(text, "; cleanup ran [{}]", log.join(", "));
        }
        out.push(("settled".into(), text));
    }
    if !env.calls.is_empty() {
        let calls: Vec<String> = env
            .calls
            .iter()
            .map(|c| {
                format!(
                    "{} of {}{}",
                    c.call,
                    c.ext,
                    if c.cancelled { " (cancelled)" } else { "" }
                )
            })
            .collect();
        out.push(("calls in flight".into(), calls.join(", ")));
    }
    if !env.abandoned.is_empty() {
        let calls: Vec<String> = env.abandoned.iter().map(|c| c.call.to_string()).collect();
        out.push(("calls abandoned".into(), calls.join(", ")));
    }
    if let Some(n) = env.note {
        let text = match n {
            Note::DiscoveryRefused => "a discovery batch was refused",
            Note::Withdrawn => "a request was withdrawn",
            Note::LateRefused => "a late registration was refused",
            Note::LateAccepted => "a late registration was accepted",
            Note::CallDrained => "the shutdown waited for a tool call, then went on",
            Note::CallsAbandoned => "the shutdown abandoned tool calls",
            Note::AbandonedCallDiscarded => "an abandoned call's late result was discarded",
            Note::CallRefusedAfterShutdown => "a tool call after the shutdown was refused",
            Note::GrantRefused => "a dormant call was refused: a mismatch revoked the grant",
        };
        out.push(("note".into(), text.into()));
    }
    out.push((
        "left".into(),
        format!(
            "{} requests, {} withdrawals, {} hangs, {} calls{}",
            env.requests_left,
            env.withdraws_left,
            env.hangs_left,
            env.calls_left,
            if env.dispose_requested {
                ", dispose requested"
            } else {
                ""
            }
        ),
    ));
    let v = &env.violations;
    for (name, slot) in [
        ("INV-4", &v.inv4),
        ("INV-5", &v.inv5),
        ("INV-6", &v.inv6),
        ("INV-7", &v.inv7),
        ("INV-10", &v.inv10),
        ("INV-12a", &v.inv12a),
        ("INV-12b", &v.inv12b),
        ("INV-12c", &v.inv12c),
        ("protocol", &v.protocol),
    ] {
        if let Some(msg) = slot {
            out.push((format!("violated {name}"), msg.clone()));
        }
    }
    out
}

/// A multi-line text summary of a state.
pub fn summary(s: &State) -> String {
    lines(s)
        .into_iter()
        .map(|(k, v)| format!("  {k}: {v}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The explorer's picture of a state: one box per extension with its
/// status, then the registry, the hooks, and the cleanup log.
pub fn svg(_: &Scenario, s: &State) -> String {
    let mut body = String::new();
    let mut y = 20;
    for (i, e) in s.core.extensions().iter().enumerate() {
        let x = 10 + 130 * i;
        let fill = match e.status() {
            exthost_core::Status::Discovered => "#eeeeee",
            exthost_core::Status::Activating => "#fff3b0",
            exthost_core::Status::Active => "#c8f0c8",
            exthost_core::Status::Failed => "#f6c0c0",
            exthost_core::Status::Disposed => "#c8d8f0",
        };
        let _ = write!(
            body,
            r##"<rect x="{x}" y="{y}" width="120" height="40" rx="6" fill="{fill}" stroke="#555"/><text x="{}" y="{}" font-size="13" text-anchor="middle">{} · {}</text>"##,
            x + 60,
            y + 25,
            escape(e.id()),
            e.status()
        );
    }
    y += 70;
    let lines: Vec<(String, String)> = lines(s)
        .into_iter()
        .filter(|(k, _)| k != "extensions")
        .collect();
    // Monospace at 12 px: about 7.3 px a character.
    let widest = lines
        .iter()
        .map(|(k, v)| k.len() + v.len() + 2)
        .max()
        .unwrap_or(0);
    let width = (20 + widest * 73 / 10).max(20 + 130 * s.core.extensions().len());
    for (k, v) in lines {
        let _ = write!(
            body,
            r##"<text x="10" y="{y}" font-size="12"><tspan font-weight="bold">{}:</tspan> {}</text>"##,
            escape(&k),
            escape(&v)
        );
        y += 18;
    }
    format!(
        r#"<svg version="1.1" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{}" font-family="monospace">{body}</svg>"#,
        y + 10
    )
}

impl std::fmt::Debug for State {
    /// The summary, in place of the core's raw fields.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&summary(self))
    }
}
