//! The dependency graph of H-13, as pure functions over "the dependencies of
//! an id" (`None`: the id is not known). With `machine/activation.rs`,
//! which asks it, it decides INV-13 (dependencies first, dependents last).
//!
//! Architecture invariant: this module knows nothing of statuses, the queue
//! or the registry; the machine asks it two questions, "does this batch close
//! a cycle?" at discovery and "in which order must these extensions be
//! active?" at activation, and decides everything else itself.

use std::collections::BTreeSet;

/// A dependency that names no known extension.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MissingDependency {
    /// The extension that names it.
    pub dependent: String,
    /// The id it names.
    pub dependency: String,
}

/// The first cycle reachable from `starts`, as the path that closes it
/// (`["a", "b", "a"]`: `a` depends on `b`, which depends on `a`), or `None`.
/// Ids that `deps_of` does not know are leaves: a missing dependency is not
/// a cycle (it is refused at activation instead). The search follows each
/// list in its own order, so the cycle reported is deterministic.
pub fn find_cycle<'a, F, I>(deps_of: F, starts: I) -> Option<Vec<String>>
where
    F: Fn(&str) -> Option<&'a [String]>,
    I: IntoIterator<Item = &'a str>,
{
    let mut done: BTreeSet<&str> = BTreeSet::new();
    for start in starts {
        if done.contains(start) {
            continue;
        }
        // An explicit stack of (id, index of its next dependency), so a
        // long chain cannot overflow the thread's stack.
        let mut path: Vec<(&str, usize)> = vec![(start, 0)];
        let mut on_path: BTreeSet<&str> = BTreeSet::from([start]);
        while let Some(&mut (id, ref mut next)) = path.last_mut() {
            let deps = deps_of(id).unwrap_or(&[]);
            let Some(dep) = deps.get(*next) else {
                done.insert(id);
                on_path.remove(id);
                path.pop();
                continue;
            };
            *next += 1;
            let dep = dep.as_str();
            if on_path.contains(dep) {
                let at = path.iter().position(|(on, _)| *on == dep).unwrap_or(0);
                let mut cycle: Vec<String> =
                    path[at..].iter().map(|(i, _)| (*i).to_owned()).collect();
                cycle.push(dep.to_owned());
                return Some(cycle);
            }
            if !done.contains(dep) && deps_of(dep).is_some() {
                on_path.insert(dep);
                path.push((dep, 0));
            }
        }
    }
    None
}

/// Every extension `target` needs, itself last, each after everything it
/// depends on (a depth-first post-order that follows each list in its own
/// order), each once. Fails with the first dependency that names no known
/// extension. The graph must be acyclic, which discovery guarantees; on a
/// cycle this still ends (each id is entered once) with some order.
pub fn activation_order<'a, F>(
    deps_of: F,
    target: &'a str,
) -> Result<Vec<&'a str>, MissingDependency>
where
    F: Fn(&str) -> Option<&'a [String]>,
{
    let mut order: Vec<&'a str> = Vec::new();
    let mut entered: BTreeSet<&'a str> = BTreeSet::new();
    let mut path: Vec<(&'a str, usize)> = vec![(target, 0)];
    entered.insert(target);
    while let Some(&mut (id, ref mut next)) = path.last_mut() {
        let deps = deps_of(id).unwrap_or(&[]);
        let Some(dep) = deps.get(*next) else {
            order.push(id);
            path.pop();
            continue;
        };
        *next += 1;
        let dep = dep.as_str();
        if deps_of(dep).is_none() {
            return Err(MissingDependency {
                dependent: id.to_owned(),
                dependency: dep.to_owned(),
            });
        }
        if entered.insert(dep) {
            path.push((dep, 0));
        }
    }
    Ok(order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        edges
            .iter()
            .map(|(id, deps)| (id.to_string(), deps.iter().map(|d| d.to_string()).collect()))
            .collect()
    }

    fn lookup<'g>(
        g: &'g BTreeMap<String, Vec<String>>,
    ) -> impl Fn(&str) -> Option<&'g [String]> + 'g {
        move |id| g.get(id).map(Vec::as_slice)
    }

    #[test]
    fn a_chain_activates_from_its_root() {
        let g = graph(&[("a", &[]), ("b", &["a"]), ("c", &["b"])]);
        assert_eq!(activation_order(lookup(&g), "c").unwrap(), ["a", "b", "c"]);
        assert_eq!(activation_order(lookup(&g), "a").unwrap(), ["a"]);
    }

    #[test]
    fn a_diamond_activates_each_extension_once_in_list_order() {
        let g = graph(&[("d", &["b", "c"]), ("b", &["a"]), ("c", &["a"]), ("a", &[])]);
        assert_eq!(
            activation_order(lookup(&g), "d").unwrap(),
            ["a", "b", "c", "d"]
        );
    }

    #[test]
    fn a_missing_dependency_names_its_dependent() {
        let g = graph(&[("c", &["b"]), ("b", &["ghost"])]);
        assert_eq!(
            activation_order(lookup(&g), "c"),
            Err(MissingDependency {
                dependent: "b".into(),
                dependency: "ghost".into()
            })
        );
    }

    #[test]
    fn cycles_are_found_with_the_path_that_closes_them() {
        let g = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]);
        assert_eq!(
            find_cycle(lookup(&g), ["d"]),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        let self_loop = graph(&[("a", &["a"])]);
        assert_eq!(
            find_cycle(lookup(&self_loop), ["a"]),
            Some(vec!["a".into(), "a".into()])
        );
    }

    #[test]
    fn shared_dependencies_and_unknown_ids_are_not_cycles() {
        let g = graph(&[
            ("d", &["b", "c"]),
            ("b", &["a"]),
            ("c", &["a", "ghost"]),
            ("a", &[]),
        ]);
        assert_eq!(find_cycle(lookup(&g), ["d", "c", "b", "a"]), None);
    }

    #[test]
    fn a_long_chain_needs_no_deep_stack() {
        let ids: Vec<String> = (0..100_000).map(|i| format!("e{i}")).collect();
        let g: BTreeMap<String, Vec<String>> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| (id.clone(), ids.get(i + 1).cloned().into_iter().collect()))
            .collect();
        assert_eq!(find_cycle(lookup(&g), ["e0"]), None);
        let order = activation_order(lookup(&g), "e0").unwrap();
        assert_eq!(order.len(), 100_000);
        assert_eq!(order[0], "e99999");
        assert_eq!(order[99_999], "e0");
    }
}
