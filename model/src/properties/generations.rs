//! INV-11 (reload, H-12) and INV-13 (dependencies, H-13) as judgements on
//! the core's state and on what the environment observed of a settled
//! reload or shutdown.
//!
//! Architecture invariant: builds on [`crate::state`], [`crate::scenario`]
//! and the cleanup helpers of [`super::cleanup`] only; the property list
//! that names these is the parent's.

use std::collections::BTreeSet;

use exthost_core::{Binding, HookRef, OpOutcome, Owner, Status, ToolRef};

use super::cleanup::{cleanup_matches, cleanup_steps, flag};
use crate::scenario::Scenario;
use crate::state::State;

/// INV-11a: exactly one generation of each active extension's contribution
/// is live: its live tools and hooks are exactly those of the generation
/// the environment saw committed last (never a mix of two generations,
/// never none).
pub fn inv11a(_: &Scenario, s: &State) -> Result<(), String> {
    let env = &s.env;
    if env.dispose_begun {
        return Ok(());
    }
    for a in &env.active {
        let owner = Owner::extension(&a.ext);
        let live: BTreeSet<ToolRef> = s
            .core
            .registry()
            .iter()
            .filter(|e| e.owner == owner)
            .filter_map(|e| match e.binding {
                Binding::Live(t) => Some(t),
                Binding::Dormant => None,
            })
            .collect();
        let expected: BTreeSet<ToolRef> = a.tools.iter().map(|(t, _)| *t).collect();
        let hooks: Vec<HookRef> = s
            .core
            .live_hooks()
            .iter()
            .filter(|h| h.extension == a.ext)
            .map(|h| h.hook)
            .collect();
        let providers: Vec<&str> = s
            .core
            .registry()
            .providers()
            .filter(|p| p.owner == owner)
            .map(|p| p.record.id.as_str())
            .collect();
        if live != expected || hooks != a.hooks || providers != a.providers {
            let none = live.is_empty() && hooks.is_empty() && providers.is_empty();
            return Err(format!(
                "{}: {} live (tools {live:?}, hooks {hooks:?}, providers {providers:?}) where \
                 its generation {} has the tools {expected:?}, the hooks {:?} and the \
                 providers {:?}",
                a.ext,
                if none {
                    "no generation is"
                } else {
                    "not one generation is"
                },
                a.context,
                a.hooks,
                a.providers
            ));
        }
    }
    Ok(())
}

/// INV-11b: a failed reload leaves the old generation exactly as it was
/// (judged when the reload settles).
pub fn inv11b(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv11b)
}

/// INV-11b on what settled in the last step: the fresh generation was
/// never committed, the old one is still the live one, and no cleanup step
/// of the operation touched it.
pub(super) fn settled_inv11b(s: &State) -> Result<(), String> {
    for settled in &s.env.last {
        let OpOutcome::ReloadFailed(failure) = &settled.outcome else {
            continue;
        };
        let ext = &failure.extension;
        if let Some(old) = &settled.retired {
            return Err(format!(
                "{}: the reload of {ext} failed, but it had committed its fresh generation \
                 over {}",
                settled.op, old.context
            ));
        }
        let live = s
            .core
            .extension(ext)
            .and_then(|slot| slot.active())
            .map(|e| e.state().context);
        let old = s.env.active.iter().find(|a| a.ext == *ext);
        if live.is_none() || live != old.map(|a| a.context) {
            return Err(format!(
                "{}: the reload of {ext} failed, and its live generation is {live:?}, not the \
                 old one {:?}",
                settled.op,
                old.map(|a| a.context)
            ));
        }
        let fresh = settled.activation.as_ref().map(|a| a.context);
        if let Some(c) = settled
            .cleanup
            .iter()
            .find(|c| Some(c.step.context) != fresh)
        {
            return Err(format!(
                "{}: the failed reload of {ext} ran the cleanup step {} of another \
                 generation",
                settled.op,
                crate::render::step(&c.step)
            ));
        }
    }
    Ok(())
}

/// INV-11c: a reload that swapped its fresh generation in retires the old
/// one: every cleanup step of the old generation once, in reverse order,
/// the failures reported (judged when the reload settles).
pub fn inv11c(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv11c)
}

/// INV-11c on what settled in the last step.
pub(super) fn settled_inv11c(s: &State) -> Result<(), String> {
    for settled in &s.env.last {
        let OpOutcome::Reloaded {
            extension,
            cleanup_failures,
        } = &settled.outcome
        else {
            continue;
        };
        let Some(old) = &settled.retired else {
            return Err(format!(
                "{}: {extension} reloaded, but no commit of a fresh generation retired the \
                 old one",
                settled.op
            ));
        };
        // A committed generation always has an instance.
        cleanup_matches(
            settled,
            &cleanup_steps(old, true),
            cleanup_failures,
            "the retirement of the old generation by",
        )?;
    }
    Ok(())
}

/// INV-13a: a dependent is never active, nor its factory run, while one of
/// its dependencies is not active.
pub fn inv13a(sc: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv13a)?;
    for slot in s.core.extensions() {
        if slot.status() != Status::Active {
            continue;
        }
        for d in sc.meta(slot.id()).map_or(&[][..], |m| &m.dependencies) {
            let status = s.core.extension(d).map(|x| x.status());
            if status != Some(Status::Active) {
                return Err(format!(
                    "{} is active while its dependency {d} is {}",
                    slot.id(),
                    status.map_or("unknown".into(), |x| x.to_string())
                ));
            }
        }
    }
    Ok(())
}

/// INV-13b: the shutdown cleans every dependent up before its
/// dependencies (judged when it settles).
pub fn inv13b(_: &Scenario, s: &State) -> Result<(), String> {
    flag(&s.env.violations.inv13b)
}

/// INV-13b on what settled in the last step: for each active dependent,
/// its last cleanup step comes before the first one of each dependency.
pub(super) fn settled_inv13b(sc: &Scenario, s: &State) -> Result<(), String> {
    for settled in &s.env.last {
        if !matches!(settled.outcome, OpOutcome::Disposed { .. }) {
            continue;
        }
        let steps = &settled.cleanup;
        for a in &settled.active_at_start {
            let Some(last) = steps.iter().rposition(|c| c.step.extension == a.ext) else {
                continue;
            };
            for d in sc.meta(&a.ext).map_or(&[][..], |m| &m.dependencies) {
                if let Some(first) = steps.iter().position(|c| c.step.extension == *d)
                    && first < last
                {
                    return Err(format!(
                        "{}: the shutdown cleaned {d} up ({}) before its dependent {} ({})",
                        settled.op,
                        crate::render::step(&steps[first].step),
                        a.ext,
                        crate::render::step(&steps[last].step)
                    ));
                }
            }
        }
    }
    Ok(())
}
