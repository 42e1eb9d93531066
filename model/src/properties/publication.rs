//! INV-1 (atomic publication: tools, dormant descriptors, providers and
//! hooks) and INV-10 (the registry's names and API names).
//!
//! Architecture invariant: builds on [`crate::state`], [`crate::scenario`]
//! and the leaves [`super::cleanup`] and [`super::outcome`] only.

use std::collections::BTreeSet;

use exthost_core::{Binding, LiveHook, Owner, is_api_name};

use super::cleanup::flag;
use super::outcome::show;
use crate::scenario::Scenario;
use crate::state::{Activation, State};

/// M-5, judged by the model itself: every generation of a manifest
/// extension the environment saw commit (activation and reload alike)
/// accepted exactly its declared tools, and its declared providers when it
/// declares some. The expectation is the scenario's declarations (of the
/// definition in force, H-12), not the core's check.
fn declarations_held(sc: &Scenario, s: &State) -> Result<(), String> {
    for a in &s.env.active {
        let Some(meta) = sc
            .in_force(&a.ext, s.env.redefined)
            .filter(|m| m.namespaced)
        else {
            continue;
        };
        let mut held: Vec<&str> = a.tools.iter().map(|(_, n)| n.as_str()).collect();
        held.sort_unstable();
        let mut declared: Vec<&str> = meta
            .declared_tools
            .iter()
            .flatten()
            .map(|d| d.name.as_str())
            .collect();
        declared.sort_unstable();
        if held != declared {
            return Err(format!(
                "M-5: the committed generation {} of {} holds the tools {} but declares {}",
                a.context,
                a.ext,
                show(&held),
                show(&declared)
            ));
        }
        if let Some(providers) = &meta.declared_providers {
            let mut held: Vec<&str> = a.providers.iter().map(String::as_str).collect();
            held.sort_unstable();
            let mut declared: Vec<&str> = providers.iter().map(|p| p.id.as_str()).collect();
            declared.sort_unstable();
            if held != declared {
                return Err(format!(
                    "M-5: the committed generation {} of {} holds the providers {} but declares {}",
                    a.context,
                    a.ext,
                    show(&held),
                    show(&declared)
                ));
            }
        }
    }
    Ok(())
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
        let providers: Vec<&str> = registry.providers().map(|p| p.record.id.as_str()).collect();
        if !providers.is_empty() {
            return Err(format!(
                "shutdown began but the providers {} are still live",
                show(&providers)
            ));
        }
        return Ok(());
    }
    declarations_held(sc, s)?;
    let active: BTreeSet<&str> = env.active.iter().map(|a| a.ext.as_str()).collect();
    for slot in core.extensions() {
        let is_active = slot.status() == exthost_core::Status::Active;
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
                        name_ok && e.owner.extension_id() == Some(a.ext.as_str())
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
        let meta = sc
            .in_force(id, env.redefined)
            .ok_or("unknown extension discovered")?;
        if meta.namespaced && !active.contains(id.as_str()) {
            expected_dormant += meta.declared_tools.as_ref().map_or(0, Vec::len);
        }
    }
    let mut dormant = 0;
    for e in registry.iter().filter(|e| e.binding == Binding::Dormant) {
        dormant += 1;
        let Some(id) = e.owner.extension_id() else {
            return Err(dormant_mismatch(sc, s));
        };
        let expected = env.discovered.iter().any(|d| d == id)
            && !active.contains(id)
            && sc.in_force(id, env.redefined).is_some_and(|meta| {
                meta.namespaced
                    && meta.declared_tools.iter().flatten().any(|d| {
                        e.name.strip_prefix(id).and_then(|r| r.strip_prefix(':'))
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
    let owners: Vec<Owner> = published(env).map(|a| Owner::extension(&a.ext)).collect();
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
        .filter_map(|id| env.active.iter().find(|a| a.ext == *id).map(|a| &**a))
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
                    Owner::extension(&a.ext),
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
        let Some(meta) = sc.in_force(id, s.env.redefined) else {
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
