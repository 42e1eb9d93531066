//! The invariants of docs/spec.md section 6 as stateright properties, named
//! `INV-1` ... `INV-10`, `INV-11a` ... `INV-11c`, `INV-12a` ... `INV-12c`
//! and `INV-13a`, `INV-13b`, and `INV-14`, plus `sometimes` properties that prove the
//! interesting states are reached (a property never exercised is a defect).
//!
//! Every check returns `Err(reason)` with the reason in the spec's words, so
//! a counterexample can say what broke, not only which property.
//!
//! Architecture invariants: this module holds the property list, the
//! settled-step judgement and INV-2 to INV-9 and INV-12; its children hold
//! INV-1 and INV-10 (`publication`), INV-11 and INV-13
//! (`generations`) and the `sometimes` properties (`reached`). The
//! children build on the leaves `definition`, `outcome` and
//! `cleanup`, never on this module nor on each other, and nothing here
//! names the `Model` impl (`crate::model` builds the checker's list on
//! top).

use exthost_core::{LiveHook, OpOutcome};
use stateright::Expectation;

use crate::scenario::Scenario;

mod cleanup;
mod definition;
mod generations;
mod outcome;
mod publication;
mod reached;

use crate::state::State;
use cleanup::{cleanup_matches, cleanup_steps, flag};
pub use definition::{Condition, Definition};
pub use generations::{inv11a, inv11b, inv11c, inv13a, inv13b};
use outcome::{TIMEOUT, failed, show};
pub use publication::{inv1, inv10};

/// A check with a reason: `Ok` when the state satisfies it.
pub type Check = fn(&Scenario, &State) -> Result<(), String>;

/// The names of the checked invariants, in order (INV-12 is three
/// properties: calls drained before cleanup, nothing runs after shutdown,
/// an expired deadline wins).
pub const INVARIANTS: [&str; 21] = [
    "INV-1", "INV-2", "INV-3", "INV-4", "INV-5", "INV-6", "INV-7", "INV-8", "INV-9", "INV-10",
    "INV-11a", "INV-11b", "INV-11c", "INV-12a", "INV-12b", "INV-12c", "INV-13a", "INV-13b",
    "INV-14", "INV-15", "INV-16",
];

/// The property that holds when no input the environment chose was refused
/// by the core and every reply was one the environment expected.
pub const PROTOCOL: &str = "protocol";

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
    if inv9_reached(s) {
        return Ok(());
    }
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

/// INV-9's goal without the reason: the checker judges it on every
/// state, and formats the reason only for the one it reports.
fn inv9_reached(s: &State) -> bool {
    s.env.disposed && s.env.ops.is_empty() && !s.env.running.iter().any(|a| a.hung)
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

/// INV-14: revoked grants, judged on the answers (when a dormant call or a
/// provider selection asks the core, see `model/observe.rs`: the core
/// never starts an extension whose grant the environment saw a
/// declaration mismatch revoke and no commit restore, and never refuses
/// one for a grant no mismatch revoked) and on the revocation state after
/// every step (`model/checks.rs`: the core's revoked grants are exactly
/// the environment's, so a revocation appears only on a mismatch and goes
/// only with a commit, a dependency's inside a chain included).
pub fn inv14(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv14)
}

/// INV-15: a refused input changes nothing (judged after every refused
/// input, see `model.rs`): the core and its outbox are exactly as they
/// were.
pub fn inv15(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv15)
}

/// INV-16: a cancellation the core decides is sent in the same step
/// (judged after every step, see `model.rs`).
pub fn inv16(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv16)
}

/// INV-17: lateness is judged on the readings. A completion read at or
/// after its deadline is never reported on time, and one read before it
/// never times out: a call's verdict follows the side of its deadline its
/// end was read on, an activation rolls back for its deadline only when
/// it was read at or after it, and a hook read at its deadline is
/// reported as timed out.
pub fn inv17(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv17)
}

/// INV-18: a redefinition applies whole or not at all. The manifest
/// extension's definition in the core is its second one exactly when the
/// environment saw a redefinition of it settle (not active) or its fresh
/// generation commit (active, H-12); before that, and after one that
/// failed or was refused, it is its first.
pub fn inv18(sc: &Scenario, s: &State) -> Result<(), String> {
    let Some(second) = &sc.redefinition else {
        return Ok(());
    };
    let Some(slot) = s.core.extension(&second.id) else {
        return Ok(());
    };
    let expected = sc
        .in_force(&second.id, s.env.redefined)
        .ok_or("unknown extension")?;
    if slot.meta() == expected {
        return Ok(());
    }
    let which = |redefined: bool| if redefined { "second" } else { "first" };
    Err(format!(
        "{} is {} under its {} definition, but the {} is in force",
        second.id,
        slot.status(),
        which(!s.env.redefined),
        which(s.env.redefined)
    ))
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
        "INV-14" => inv14,
        "INV-15" => inv15,
        "INV-16" => inv16,
        "INV-17" => inv17,
        "INV-18" => inv18,
        PROTOCOL => protocol,
        _ => return None,
    })
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

/// The `sometimes` properties among `definitions` (those the bounds can
/// reach), in order, with the condition each is judged by on the state a
/// step leads to (with what settled in that step).
pub fn examples(definitions: &[Definition]) -> Vec<(&'static str, Condition)> {
    definitions
        .iter()
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
        Definition::eventually("INV-9", |_, s| inv9_reached(s)),
        Definition::always("INV-10", |sc, s| inv10(sc, s).is_ok()),
        Definition::always("INV-12a", |sc, s| inv12a(sc, s).is_ok()),
        Definition::always("INV-12b", |sc, s| inv12b(sc, s).is_ok()),
        Definition::always("INV-12c", |sc, s| inv12c(sc, s).is_ok()),
        Definition::always("INV-15", |sc, s| inv15(sc, s).is_ok()),
        Definition::always("INV-16", |sc, s| inv16(sc, s).is_ok()),
        Definition::always("INV-17", |sc, s| inv17(sc, s).is_ok()),
        Definition::always(PROTOCOL, |sc, s| protocol(sc, s).is_ok()),
    ];
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
        before_protocol(
            &mut p,
            [
                Definition::always("INV-13a", |sc, s| inv13a(sc, s).is_ok()),
                Definition::always("INV-13b", |sc, s| inv13b(sc, s).is_ok()),
            ],
        );
    }
    // INV-14 only where a grant can be revoked: a manifest extension's
    // declarations can mismatch, and its dormant calls ask the core.
    if sc.has_manifest() {
        before_protocol(
            &mut p,
            [Definition::always("INV-14", |sc, s| inv14(sc, s).is_ok())],
        );
    }
    // INV-18 where a redefinition can run: a reload and the manifest
    // extension.
    if sc.redefinition.is_some() {
        before_protocol(
            &mut p,
            [Definition::always("INV-18", |sc, s| inv18(sc, s).is_ok())],
        );
    }
    reached::push(sc, &mut p);
    p
}

/// Inserts `definitions` just before `protocol`, which closes the list of
/// invariants.
fn before_protocol(p: &mut Vec<Definition>, definitions: impl IntoIterator<Item = Definition>) {
    let at = p
        .iter()
        .position(|d| d.name == PROTOCOL)
        .expect("protocol is listed");
    p.splice(at..at, definitions);
}

/// The expectation of a property, by name.
pub fn expectation(sc: &Scenario, name: &str) -> Option<Expectation> {
    definitions(sc)
        .into_iter()
        .find(|p| p.name == name)
        .map(|p| p.expectation)
}
