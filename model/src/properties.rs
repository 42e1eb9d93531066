//! The invariants of docs/spec.md section 6 as stateright properties, named
//! `INV-1` ... `INV-10`, `INV-11a` ... `INV-11c`, `INV-12a` ... `INV-12c`
//! and `INV-13a`, `INV-13b`, plus `sometimes` properties that prove the
//! interesting states are reached (a property never exercised is a defect).
//!
//! Every check returns `Err(reason)` with the reason in the spec's words, so
//! a counterexample can say what broke, not only which property.

use std::collections::BTreeSet;

use exthost::core::{
    Binding, CleanupKind, FailureCause, LiveHook, OpOutcome, Owner, RegistryError, is_api_name,
};
use stateright::Expectation;

use crate::scenario::Scenario;

mod cleanup;
mod generations;

use crate::state::{Activation, Note, Settled, State};
use cleanup::{cleanup_matches, cleanup_steps, flag};
pub use generations::{inv11a, inv11b, inv11c, inv13a, inv13b};

/// A check with a reason: `Ok` when the state satisfies it.
pub type Check = fn(&Scenario, &State) -> Result<(), String>;

/// The names of the checked invariants, in order (INV-12 is three
/// properties: calls drained before cleanup, nothing runs after shutdown,
/// an expired deadline wins).
pub const INVARIANTS: [&str; 18] = [
    "INV-1", "INV-2", "INV-3", "INV-4", "INV-5", "INV-6", "INV-7", "INV-8", "INV-9", "INV-10",
    "INV-11a", "INV-11b", "INV-11c", "INV-12a", "INV-12b", "INV-12c", "INV-13a", "INV-13b",
];

/// The codes a deadline and a lost task give the step they end.
const TIMEOUT: &str = exthost::error::codes::EXTENSION_TIMEOUT;
const TASK_LOST: &str = exthost::error::codes::EXTENSION_TASK_LOST;

/// The property that holds when no input the environment chose was refused
/// by the core and every reply was one the environment expected.
pub const PROTOCOL: &str = "protocol";

fn show<T: std::fmt::Debug>(items: &[T]) -> String {
    format!("{items:?}")
}

/// The failure of an activation attempt that rolled back: an activation's,
/// a dependency's (H-13) or a reload's fresh generation (H-12).
fn failed(outcome: &OpOutcome) -> Option<&exthost::core::ActivationFailure> {
    match outcome {
        OpOutcome::ActivationFailed(f)
        | OpOutcome::ReloadFailed(f)
        | OpOutcome::DependencyFailed { failure: f, .. } => Some(f),
        _ => None,
    }
}

/// INV-1: atomic publication.
pub fn inv1(sc: &Scenario, s: &State) -> Result<(), String> {
    let core = &s.core;
    let env = &s.env;
    let registry = core.registry();
    if env.dispose_begun {
        if !registry.is_empty() {
            return Err(format!(
                "shutdown began but the registry still holds {}",
                show(&registry.names())
            ));
        }
        if !core.live_hooks().is_empty() {
            return Err("shutdown began but hooks are still live".into());
        }
        return Ok(());
    }
    let active: BTreeSet<&str> = env.active.iter().map(|a| a.ext.as_str()).collect();
    for slot in core.extensions() {
        let is_active = slot.status() == exthost::core::Status::Active;
        if is_active != active.contains(slot.id()) {
            return Err(format!(
                "{} is {} but the activations that settled say {}",
                slot.id(),
                slot.status(),
                if active.contains(slot.id()) {
                    "active"
                } else {
                    "not active"
                }
            ));
        }
    }
    // Live entries, in publication order: the base tools, then each active
    // extension in the order its tools were published (activation order,
    // a reloaded one last), its tools in registration order.
    let expected = sc
        .base
        .iter()
        .zip(&sc.base_refs)
        .map(|(spec, r)| (None, spec.name.as_str(), Binding::Live(*r)))
        .chain(published(env).flat_map(|a| {
            a.tools
                .iter()
                .map(move |(tool, name)| (Some(a), name.as_str(), Binding::Live(*tool)))
        }));
    let mut live = registry.iter().filter(|e| e.binding != Binding::Dormant);
    let mut expected = expected.peekable();
    loop {
        match (live.next(), expected.next()) {
            (None, None) => break,
            (Some(e), Some((a, name, binding))) => {
                let runtime_ok = match a {
                    None => e.name == name && e.owner == Owner::Base,
                    Some(a) => {
                        let namespaced = sc.meta(&a.ext).is_some_and(|m| m.namespaced);
                        let name_ok = if namespaced {
                            e.name
                                .strip_prefix(a.ext.as_str())
                                .and_then(|r| r.strip_prefix(':'))
                                == Some(name)
                        } else {
                            e.name == name
                        };
                        name_ok && matches!(&e.owner, Owner::Extension(id) if *id == a.ext)
                    }
                };
                if !runtime_ok || e.binding != binding {
                    return Err(live_mismatch(sc, s));
                }
            }
            _ => return Err(live_mismatch(sc, s)),
        }
    }
    // Dormant descriptors: exactly the declared tools of discovered manifest
    // extensions that are not active. Names are unique in the registry, so
    // "each entry is expected" plus equal counts is set equality.
    let mut expected_dormant = 0;
    for id in &env.discovered {
        let meta = sc.meta(id).ok_or("unknown extension discovered")?;
        if meta.namespaced && !active.contains(id.as_str()) {
            expected_dormant += meta.declared_tools.as_ref().map_or(0, Vec::len);
        }
    }
    let mut dormant = 0;
    for e in registry.iter().filter(|e| e.binding == Binding::Dormant) {
        dormant += 1;
        let Owner::Extension(id) = &e.owner else {
            return Err(dormant_mismatch(sc, s));
        };
        let expected = env.discovered.contains(id)
            && !active.contains(id.as_str())
            && sc.meta(id).is_some_and(|meta| {
                meta.namespaced
                    && meta.declared_tools.iter().flatten().any(|d| {
                        e.name
                            .strip_prefix(id.as_str())
                            .and_then(|r| r.strip_prefix(':'))
                            == Some(d.name.as_str())
                            && e.description == d.description
                            && e.schema_digest == d.schema_digest
                    })
            });
        if !expected {
            return Err(dormant_mismatch(sc, s));
        }
    }
    if dormant != expected_dormant {
        return Err(dormant_mismatch(sc, s));
    }
    // Providers (M-8): exactly the active generations' accepted providers,
    // in publication order, each with its owner.
    let live: Vec<(&str, &Owner)> = registry
        .providers()
        .map(|p| (p.record.id.as_str(), &p.owner))
        .collect();
    let owners: Vec<Owner> = published(env)
        .map(|a| Owner::Extension(a.ext.clone()))
        .collect();
    let expected: Vec<(&str, &Owner)> = published(env)
        .zip(&owners)
        .flat_map(|(a, owner)| a.providers.iter().map(move |p| (p.as_str(), owner)))
        .collect();
    if live != expected {
        return Err(format!(
            "the live providers are {live:?} but the active contributions' are {expected:?}"
        ));
    }
    // Hooks: the hooks of active extensions in (activation, registration)
    // order.
    let mut hooks = core.live_hooks().iter();
    for a in &env.active {
        for (index, hook) in a.hooks.iter().enumerate() {
            match hooks.next() {
                Some(h) if h.extension == a.ext && h.index == index && h.hook == *hook => {}
                _ => return Err(hooks_mismatch(s)),
            }
        }
    }
    if hooks.next().is_some() {
        return Err(hooks_mismatch(s));
    }
    Ok(())
}

/// The active generations in the order their tools were published.
fn published(env: &crate::state::Env) -> impl Iterator<Item = &Activation> {
    env.published
        .iter()
        .filter_map(|id| env.active.iter().find(|a| a.ext == *id))
}

fn live_mismatch(sc: &Scenario, s: &State) -> String {
    let mut expected: Vec<(String, Owner, Binding)> = sc
        .base
        .iter()
        .zip(&sc.base_refs)
        .map(|(spec, r)| (spec.name.clone(), Owner::Base, Binding::Live(*r)))
        .collect();
    for a in published(&s.env) {
        if let Some(meta) = sc.meta(&a.ext) {
            for (tool, name) in &a.tools {
                expected.push((
                    meta.runtime_tool_name(name),
                    Owner::Extension(a.ext.clone()),
                    Binding::Live(*tool),
                ));
            }
        }
    }
    let live: Vec<(String, Owner, Binding)> = s
        .core
        .registry()
        .iter()
        .filter(|e| e.binding != Binding::Dormant)
        .map(|e| (e.name.clone(), e.owner.clone(), e.binding))
        .collect();
    format!(
        "the live tools are {} but the base tools plus the active contributions are {}",
        show(&live),
        show(&expected)
    )
}

fn dormant_mismatch(sc: &Scenario, s: &State) -> String {
    let mut expected = BTreeSet::new();
    for id in &s.env.discovered {
        let Some(meta) = sc.meta(id) else {
            continue;
        };
        if !meta.namespaced || s.env.active.iter().any(|a| &a.ext == id) {
            continue;
        }
        for spec in meta.declared_tools.iter().flatten() {
            expected.insert(meta.runtime_tool_name(&spec.name));
        }
    }
    let dormant: BTreeSet<String> = s
        .core
        .registry()
        .iter()
        .filter(|e| e.binding == Binding::Dormant)
        .map(|e| e.name.clone())
        .collect();
    format!(
        "the dormant descriptors are {dormant:?} but the declared tools of inactive \
         manifest extensions are {expected:?}"
    )
}

fn hooks_mismatch(s: &State) -> String {
    let hooks: Vec<LiveHook> = s.core.live_hooks().iter().cloned().collect();
    let expected: Vec<LiveHook> = s
        .env
        .active
        .iter()
        .flat_map(|a| {
            a.hooks.iter().enumerate().map(|(index, hook)| LiveHook {
                extension: a.ext.clone(),
                index,
                hook: *hook,
            })
        })
        .collect();
    format!(
        "the live hooks are {} but the hooks of active extensions in (activation, \
         registration) order are {}",
        show(&hooks),
        show(&expected)
    )
}

/// INV-2: rollback completeness (judged when the rollback settles, see
/// [`judge_step`]).
pub fn inv2(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv2)
}

fn settled_inv2(s: &State) -> Result<(), String> {
    for settled in &s.env.last {
        let Some(failure) = failed(&settled.outcome) else {
            continue;
        };
        let Some(a) = &settled.activation else {
            return Err(format!(
                "{} failed without running an activation",
                settled.op
            ));
        };
        cleanup_matches(
            settled,
            &cleanup_steps(a, a.instance),
            &failure.cleanup_failures,
            "the rollback of",
        )?;
    }
    Ok(())
}

/// INV-3: reverse disposal, every step once, exact aggregate (judged when
/// the shutdown settles, see [`judge_step`]).
pub fn inv3(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv3)
}

fn settled_inv3(s: &State) -> Result<(), String> {
    for settled in &s.env.last {
        let OpOutcome::Disposed { failures } = &settled.outcome else {
            continue;
        };
        let mut expected = Vec::new();
        for a in settled.active_at_start.iter().rev() {
            // A committed activation always has an instance.
            expected.extend(cleanup_steps(a, true));
        }
        cleanup_matches(settled, &expected, failures, "the shutdown")?;
    }
    Ok(())
}

/// INV-4: serialization.
pub fn inv4(_: &Scenario, s: &State) -> Result<(), String> {
    let running = s.core.running_ops();
    if running.len() > 1 {
        return Err(format!(
            "{} operations run at once: {running:?}",
            running.len()
        ));
    }
    let begun: Vec<_> = s
        .env
        .ops
        .iter()
        .filter(|p| p.status == crate::state::OpStatus::Begun)
        .map(|p| p.op)
        .collect();
    if begun.len() > 1 {
        return Err(format!("the callers saw {begun:?} begun and not settled"));
    }
    match &s.env.violations.inv4 {
        Some(v) => Err(v.clone()),
        None => Ok(()),
    }
}

/// INV-5: a registration on a closed context changes nothing.
pub fn inv5(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv5)
}

/// INV-6: a refused batch changes nothing; factories run only inside an
/// activation of their own id.
pub fn inv6(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv6)
}

/// INV-7: only H-1 transitions.
pub fn inv7(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv7)
}

/// INV-8: each emit calls every hook live at its start exactly once, in
/// order, and reports exactly the failed ones.
pub fn inv8(_: &Scenario, s: &State) -> Result<(), String> {
    for e in &s.env.emits {
        let called: Vec<&LiveHook> = e.calls.iter().map(|c| &c.0).collect();
        let prefix: Vec<&LiveHook> = e.live.iter().take(called.len()).collect();
        if called.len() > e.live.len() || called != prefix {
            return Err(format!(
                "emit {} called {} but the hooks live at its start are {}",
                e.op,
                show(&called),
                show(&e.live)
            ));
        }
    }
    flag(&s.env.violations.inv8)
}

fn settled_inv8(s: &State) -> Result<(), String> {
    for settled in &s.env.last {
        let OpOutcome::Emitted { diagnostics } = &settled.outcome else {
            continue;
        };
        let Some(e) = &settled.emit else {
            return Err(format!("{} emitted without beginning an emit", settled.op));
        };
        let called: Vec<&LiveHook> = e.calls.iter().map(|c| &c.0).collect();
        let live: Vec<&LiveHook> = e.live.iter().collect();
        if called != live {
            return Err(format!(
                "emit {} called {} but the hooks live at its start were {}",
                e.op,
                show(&called),
                show(&e.live)
            ));
        }
        let failed: Vec<(&str, usize)> = e
            .calls
            .iter()
            .filter(|c| c.1 == Some(true))
            .map(|c| (c.0.extension.as_str(), c.0.index))
            .collect();
        let reported: Vec<(&str, usize)> = diagnostics
            .iter()
            .map(|d| (d.extension_id.as_str(), d.hook_index))
            .collect();
        if failed != reported || e.calls.iter().any(|c| c.1.is_none()) {
            return Err(format!(
                "emit {} reports the failed hooks {reported:?} but {failed:?} failed",
                e.op
            ));
        }
    }
    Ok(())
}

/// INV-9's goal: shutdown completed and every request settled (or was
/// withdrawn). `eventually` holds when every complete path reaches it.
pub fn inv9_goal(_: &Scenario, s: &State) -> Result<(), String> {
    let mut missing = Vec::new();
    if !s.env.disposed {
        missing.push(format!(
            "shutdown has not completed (the host is {})",
            crate::render::phase(s.core.phase())
        ));
    }
    for p in &s.env.ops {
        missing.push(format!(
            "{} {} has not settled",
            p.op,
            crate::render::kind(&p.kind)
        ));
    }
    if let Some(a) = s.env.running.iter().find(|a| a.hung) {
        missing.push(format!(
            "the activate of {} hangs and its signal {}",
            a.ext,
            if a.cancelled { "fired" } else { "never fired" }
        ));
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("no step is left and {}", missing.join("; ")))
    }
}

/// INV-10: live names and API names unique, API names well formed, the
/// mapping reversible, exactly one API name held per tool (and stable
/// while a tool stays live, and from its dormant descriptor to its live
/// tool).
pub fn inv10(_: &Scenario, s: &State) -> Result<(), String> {
    let registry = s.core.registry();
    let mut count = 0;
    for e in registry.iter() {
        count += 1;
        if !is_api_name(&e.api_name) {
            return Err(format!(
                "{}'s API name {:?} is not [A-Za-z0-9_-]{{1,64}}",
                e.name, e.api_name
            ));
        }
        // Two entries with one API name cannot both map back to themselves,
        // so this also proves API names unique.
        let back = registry
            .get_by_api_name(&e.api_name)
            .map(|b| b.name.as_str());
        if back != Some(e.name.as_str()) {
            return Err(format!(
                "{} has the API name {}, which maps back to {back:?}",
                e.name, e.api_name
            ));
        }
    }
    // Names are map keys; the publication order must hold each once.
    if count != registry.len() {
        return Err("the publication order and the names disagree".into());
    }
    // Every entry maps back from its API name, so exactly one API name per
    // entry means no removed entry still holds one.
    if registry.api_name_count() != count {
        return Err(format!(
            "{} API names are held for {count} tools",
            registry.api_name_count()
        ));
    }
    flag(&s.env.violations.inv10)
}

/// INV-12a: when a shutdown cleanup step of an extension starts, none of
/// its tool calls is running (checked on every `RunCleanup` of the
/// shutdown against the calls the environment sees in flight).
pub fn inv12a(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv12a)
}

/// INV-12b: once the shutdown completed, no extension call is in flight
/// (each finished or was abandoned); no call was admitted after the
/// shutdown began; no extension code (factory, `activate`, hook, cleanup
/// step) was asked to run after it completed.
pub fn inv12b(_: &Scenario, s: &State) -> Result<(), String> {
    if s.env.disposed
        && let Some(c) = s.env.calls.first()
    {
        return Err(format!(
            "the shutdown completed while {} of {} still runs",
            c.call, c.ext
        ));
    }
    flag(&s.env.violations.inv12b)
}

/// INV-12c: an expired deadline wins. An activation whose deadline passed
/// never settles `Activated`; a cleanup step whose deadline passed is
/// reported failed with `EXTENSION_TIMEOUT` (the settled part judged when
/// the operation settles, see [`judge_step`]).
pub fn inv12c(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv12c)
}

fn settled_inv12c(s: &State) -> Result<(), String> {
    for settled in &s.env.last {
        if let (OpOutcome::Activated { extension }, Some(a)) =
            (&settled.outcome, &settled.activation)
            && a.deadline
        {
            return Err(format!(
                "{} activated {extension} although its deadline had passed",
                settled.op
            ));
        }
        let reported = match &settled.outcome {
            OpOutcome::ActivationFailed(f) => f.cleanup_failures.as_slice(),
            OpOutcome::Disposed { failures } => failures.as_slice(),
            _ => &[],
        };
        for c in settled.cleanup.iter().filter(|c| c.deadline) {
            let timed_out = reported
                .iter()
                .any(|f| f.step == c.step && f.failure.code == Some(TIMEOUT));
            if !timed_out {
                return Err(format!(
                    "{}: the deadline of the cleanup step {} passed but it is not reported \
                     failed with {TIMEOUT}",
                    settled.op,
                    crate::render::step(&c.step)
                ));
            }
        }
    }
    Ok(())
}

/// The environment's protocol: no chosen input refused, no unexpected reply.
pub fn protocol(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.protocol)
}

/// The check behind an `always` or `eventually` property, by name.
pub fn check(name: &str) -> Option<Check> {
    Some(match name {
        "INV-1" => inv1,
        "INV-2" => inv2,
        "INV-3" => inv3,
        "INV-4" => inv4,
        "INV-5" => inv5,
        "INV-6" => inv6,
        "INV-7" => inv7,
        "INV-8" => inv8,
        "INV-9" => inv9_goal,
        "INV-10" => inv10,
        "INV-11a" => inv11a,
        "INV-11b" => inv11b,
        "INV-11c" => inv11c,
        "INV-12a" => inv12a,
        "INV-12b" => inv12b,
        "INV-12c" => inv12c,
        "INV-13a" => inv13a,
        "INV-13b" => inv13b,
        PROTOCOL => protocol,
        _ => return None,
    })
}

fn any_settled(s: &State, pred: impl Fn(&Settled) -> bool) -> bool {
    s.env.last.iter().any(pred)
}

/// A cleanup step of this settled operation failed with `code`.
fn cleanup_failed_with(settled: &Settled, code: &str) -> bool {
    let failures = match &settled.outcome {
        OpOutcome::ActivationFailed(f) => f.cleanup_failures.as_slice(),
        OpOutcome::Disposed { failures } => failures.as_slice(),
        _ => &[],
    };
    failures.iter().any(|f| f.failure.code == Some(code))
}

fn cause(settled: &Settled) -> Option<&FailureCause> {
    failed(&settled.outcome).map(|f| &f.cause)
}

fn sometimes(name: &'static str, condition: Condition) -> Definition {
    Definition {
        name,
        expectation: Expectation::Sometimes,
        condition,
    }
}

/// A condition on a state, judged with the scenario it runs in.
pub type Condition = fn(&Scenario, &State) -> bool;

/// One property as this module defines it: the checker's
/// [`stateright::Property`] list is built from these on top (see
/// `crate::model`), so that the judgements do not depend on the `Model`
/// impl.
#[derive(Debug, Clone)]
pub struct Definition {
    /// Its name (`INV-1`, ..., `protocol`, or the sentence of a `sometimes`
    /// property).
    pub name: &'static str,
    /// Always, eventually or sometimes.
    pub expectation: Expectation,
    /// The condition: for a `sometimes` property, judged on the step that
    /// led to the state, with what settled in it ([`judge_step`]).
    pub condition: Condition,
}

impl Definition {
    fn always(name: &'static str, condition: Condition) -> Self {
        Self {
            name,
            expectation: Expectation::Always,
            condition,
        }
    }

    fn eventually(name: &'static str, condition: Condition) -> Self {
        Self {
            name,
            expectation: Expectation::Eventually,
            condition,
        }
    }
}

/// Judges what settled in the step that led to `s` (the transient
/// `s.env.last`, which the step clears afterwards): INV-2, INV-3, INV-8 and
/// INV-12c are about the observations of an operation when it settles, and
/// a broken one is recorded in `s.env.violations`, so that the settled
/// observations need not stay in the state. Then records in `s.env.shown`
/// which of the `examples` (the `sometimes` properties, in order) this
/// state shows.
pub fn judge_step(sc: &Scenario, examples: &[(&'static str, Condition)], s: &mut State) {
    if !s.env.last.is_empty() {
        let judged = [
            settled_inv2(s),
            settled_inv3(s),
            settled_inv8(s),
            generations::settled_inv11b(s),
            generations::settled_inv11c(s),
            settled_inv12c(s),
            generations::settled_inv13b(sc, s),
        ];
        let v = &mut s.env.violations;
        let slots = [
            &mut v.inv2,
            &mut v.inv3,
            &mut v.inv8,
            &mut v.inv11b,
            &mut v.inv11c,
            &mut v.inv12c,
            &mut v.inv13b,
        ];
        for (result, slot) in judged.into_iter().zip(slots) {
            if let Err(reason) = result {
                crate::state::Violations::record(slot, reason);
            }
        }
    }
    let mut shown = 0u64;
    for (i, (_, condition)) in examples.iter().enumerate() {
        if condition(sc, s) {
            shown |= 1 << i;
        }
    }
    s.env.shown = shown;
}

/// The `sometimes` properties the bounds can reach, in order, with the
/// condition each is judged by on the state a step leads to (with what
/// settled in that step).
pub fn examples(sc: &Scenario) -> Vec<(&'static str, Condition)> {
    definitions(sc)
        .into_iter()
        .filter(|p| p.expectation == Expectation::Sometimes)
        .map(|p| (p.name, p.condition))
        .collect()
}

/// Every property of a model of this scenario, as defined: the
/// invariants, `protocol`, and the `sometimes` properties the bounds can
/// reach (whose conditions read the transient record of what settled).
pub fn definitions(sc: &Scenario) -> Vec<Definition> {
    let b = &sc.bounds;
    let mut p: Vec<Definition> = vec![
        Definition::always("INV-1", |sc, s| inv1(sc, s).is_ok()),
        Definition::always("INV-2", |sc, s| inv2(sc, s).is_ok()),
        Definition::always("INV-3", |sc, s| inv3(sc, s).is_ok()),
        Definition::always("INV-4", |sc, s| inv4(sc, s).is_ok()),
        Definition::always("INV-5", |sc, s| inv5(sc, s).is_ok()),
        Definition::always("INV-6", |sc, s| inv6(sc, s).is_ok()),
        Definition::always("INV-7", |sc, s| inv7(sc, s).is_ok()),
        Definition::always("INV-8", |sc, s| inv8(sc, s).is_ok()),
        Definition::eventually("INV-9", |sc, s| inv9_goal(sc, s).is_ok()),
        Definition::always("INV-10", |sc, s| inv10(sc, s).is_ok()),
        Definition::always("INV-12a", |sc, s| inv12a(sc, s).is_ok()),
        Definition::always("INV-12b", |sc, s| inv12b(sc, s).is_ok()),
        Definition::always("INV-12c", |sc, s| inv12c(sc, s).is_ok()),
        Definition::always(PROTOCOL, |sc, s| protocol(sc, s).is_ok()),
        sometimes(
            "an activation rolled back with a failing disposer",
            |_, s| {
                any_settled(s, |st| {
                    failed(&st.outcome).is_some_and(|f| {
                        f.cleanup_failures
                            .iter()
                            .any(|c| matches!(c.step.kind, CleanupKind::Disposer { .. }))
                    })
                })
            },
        ),
        sometimes("a shutdown aggregating two failures", |_, s| {
            any_settled(
                s,
                |st| matches!(&st.outcome, OpOutcome::Disposed { failures } if failures.len() >= 2),
            )
        }),
        sometimes("a hook failing while a later hook still runs", |_, s| {
            any_settled(s, |st| {
                st.emit.as_ref().is_some_and(|e| {
                    e.calls
                        .iter()
                        .position(|c| c.1 == Some(true))
                        .is_some_and(|i| i + 1 < e.calls.len())
                })
            })
        }),
        sometimes("a tool clash rejected", |_, s| {
            any_settled(s, |st| {
                matches!(
                    cause(st),
                    Some(FailureCause::Registry(RegistryError::Duplicate { .. }))
                )
            })
        }),
        sometimes("a retry after failure that succeeds", |_, s| {
            any_settled(s, |st| match &st.outcome {
                OpOutcome::Activated { extension } => {
                    s.core.extension(extension).is_some_and(|e| match e {
                        exthost::core::ExtensionSlot::Active(a) => a.attempts() >= 2,
                        _ => false,
                    })
                }
                _ => false,
            })
        }),
        sometimes("a dispose that cancelled a pending activation", |_, s| {
            any_settled(s, |st| matches!(cause(st), Some(FailureCause::Cancelled)))
        }),
        sometimes("a factory failure rolled back", |_, s| {
            any_settled(s, |st| matches!(cause(st), Some(FailureCause::Factory(_))))
        }),
        sometimes("an activate of an unknown id", |_, s| {
            any_settled(s, |st| matches!(st.outcome, OpOutcome::NotFound { .. }))
        }),
        sometimes("an activate of an active extension", |_, s| {
            any_settled(s, |st| {
                matches!(st.outcome, OpOutcome::AlreadyActive { .. })
            })
        }),
        sometimes("an activation cancelled before its start", |_, s| {
            any_settled(s, |st| {
                matches!(st.outcome, OpOutcome::CancelledBeforeStart { .. })
            })
        }),
    ];
    if b.late {
        p.push(sometimes("a late registration refused", |_, s| {
            s.env.note == Some(Note::LateRefused)
        }));
    }
    if b.hangs > 0 {
        p.push(sometimes(
            "a hung activation released by its cancellation",
            |_, s| {
                any_settled(s, |st| {
                    matches!(cause(st), Some(FailureCause::Cancelled))
                        && st.activation.as_ref().is_some_and(|a| a.hung)
                })
            },
        ));
    }
    if b.withdraws > 0 {
        p.push(sometimes("a queued request withdrawn", |_, s| {
            s.env.note == Some(Note::Withdrawn)
        }));
    }
    if b.refused > 0 {
        p.push(sometimes("a discovery batch refused", |_, s| {
            s.env.note == Some(Note::DiscoveryRefused)
        }));
    }
    if sc.has_manifest() {
        p.push(sometimes(
            "a manifest extension active (dormant descriptor replaced)",
            |sc, s| {
                any_settled(s, |st| match &st.outcome {
                    OpOutcome::Activated { extension } => {
                        sc.meta(extension).is_some_and(|meta| meta.namespaced)
                    }
                    _ => false,
                })
            },
        ));
        p.push(sometimes("a declaration mismatch refused (M-5)", |_, s| {
            any_settled(s, |st| {
                matches!(cause(st), Some(FailureCause::Declaration(_)))
            })
        }));
    }
    if b.calls > 0 {
        p.push(sometimes(
            "a shutdown that waited for a tool call",
            |_, s| s.env.note == Some(Note::CallDrained),
        ));
        p.push(sometimes(
            "a tool call refused after the shutdown",
            |_, s| s.env.note == Some(Note::CallRefusedAfterShutdown),
        ));
        if b.deadlines > 0 || b.losses > 0 {
            p.push(sometimes(
                "a tool call abandoned by the shutdown",
                |_, s| s.env.note == Some(Note::CallsAbandoned),
            ));
            p.push(sometimes(
                "an abandoned call's late result discarded",
                |_, s| s.env.note == Some(Note::AbandonedCallDiscarded),
            ));
        }
    }
    if b.deadlines > 0 {
        p.push(sometimes(
            "an activation rolled back by its deadline",
            |_, s| {
                any_settled(s, |st| {
                    matches!(cause(st), Some(FailureCause::DeadlinePassed))
                })
            },
        ));
        p.push(sometimes(
            "a cleanup step timed out (EXTENSION_TIMEOUT)",
            |_, s| any_settled(s, |st| cleanup_failed_with(st, TIMEOUT)),
        ));
    }
    if b.losses > 0 {
        p.push(sometimes(
            "a lost step counted as failed (EXTENSION_TASK_LOST)",
            |_, s| {
                any_settled(s, |st| {
                    cleanup_failed_with(st, TASK_LOST)
                        || matches!(
                            cause(st),
                            Some(FailureCause::Factory(f) | FailureCause::Activate(f))
                                if f.code == Some(TASK_LOST)
                        )
                })
            },
        ));
    }
    // INV-11 and INV-13 are listed only where the bounds exercise them
    // (a property that holds because nothing it is about can happen would
    // read as a guarantee it is not); `check --lifecycle` does.
    if b.reloads > 0 {
        let at = p
            .iter()
            .position(|d| d.name == "INV-12a")
            .expect("INV-12a is listed");
        p.splice(
            at..at,
            [
                Definition::always("INV-11a", |sc, s| inv11a(sc, s).is_ok()),
                Definition::always("INV-11b", |sc, s| inv11b(sc, s).is_ok()),
                Definition::always("INV-11c", |sc, s| inv11c(sc, s).is_ok()),
            ],
        );
    }
    if sc.has_dependency() {
        let at = p
            .iter()
            .position(|d| d.name == PROTOCOL)
            .expect("protocol is listed");
        p.splice(
            at..at,
            [
                Definition::always("INV-13a", |sc, s| inv13a(sc, s).is_ok()),
                Definition::always("INV-13b", |sc, s| inv13b(sc, s).is_ok()),
            ],
        );
    }
    if b.providers {
        p.push(sometimes("a provider live (M-8)", |_, s| {
            s.core.registry().provider_count() > 0
        }));
        p.push(sometimes("a provider clash rejected (M-8)", |_, s| {
            any_settled(s, |st| {
                matches!(
                    cause(st),
                    Some(FailureCause::Registry(RegistryError::ProviderClash { .. }))
                )
            })
        }));
    }
    if b.reloads > 0 {
        p.push(sometimes(
            "a reload swapped in its fresh generation",
            |_, s| any_settled(s, |st| matches!(st.outcome, OpOutcome::Reloaded { .. })),
        ));
        p.push(sometimes(
            "a failed reload left the old generation live",
            |_, s| any_settled(s, |st| matches!(st.outcome, OpOutcome::ReloadFailed(_))),
        ));
    }
    if sc.has_dependency() {
        p.push(sometimes(
            "a dependent activated after its dependency",
            |sc, s| {
                any_settled(s, |st| match &st.outcome {
                    OpOutcome::Activated { extension } => sc
                        .meta(extension)
                        .is_some_and(|m| !m.dependencies.is_empty()),
                    _ => false,
                })
            },
        ));
        p.push(sometimes(
            "a failed dependency stopped its dependent",
            |_, s| {
                any_settled(s, |st| {
                    matches!(st.outcome, OpOutcome::DependencyFailed { .. })
                })
            },
        ));
        p.push(sometimes(
            "an activation refused for a missing dependency",
            |_, s| {
                any_settled(s, |st| {
                    matches!(st.outcome, OpOutcome::DependencyMissing { .. })
                })
            },
        ));
    }
    if sc.has_invalid_plain_name() {
        p.push(sometimes(
            "a plain extension's `ext:tool` name refused (H-4)",
            |_, s| {
                any_settled(s, |st| {
                    matches!(
                        cause(st),
                        Some(FailureCause::Registry(RegistryError::InvalidName { .. }))
                    )
                })
            },
        ));
    }
    if sc.has_api_collision() {
        p.push(sometimes("an API name suffixed on collision", |_, s| {
            // A suffix makes the API name longer than the runtime name
            // (the scenario's names are short, so no name is shortened).
            s.core
                .registry()
                .iter()
                .any(|e| e.api_name.len() > e.name.len())
        }));
    }
    p
}

/// The expectation of a property, by name.
pub fn expectation(sc: &Scenario, name: &str) -> Option<Expectation> {
    definitions(sc)
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.expectation)
}
