//! What each property means, in one line: the single table the command
//! lines print next to each verdict and put in their JSON report.
//!
//! Every property [`properties::definitions`](crate::properties::definitions) can return
//! must have a row here (a unit test walks the model under every preset and
//! every seeded bug's bounds). A new property gets its meaning here, in the
//! same change.

/// `(property name, one-line meaning)`, in the order the model lists them.
pub const MEANINGS: &[(&str, &str)] = &[
    (
        "INV-1",
        "atomic publication: live tools and hooks are exactly the base tools plus what active extensions committed (and dormant declarations)",
    ),
    (
        "INV-2",
        "rollback completeness: a failed activation ran each acquired disposer once, in reverse, then the instance dispose",
    ),
    (
        "INV-3",
        "reverse disposal: shutdown attempts every cleanup step once, in reverse order, and aggregates exactly the failures",
    ),
    (
        "INV-4",
        "serialization: at most one queued operation runs at a time, and they start in call order",
    ),
    (
        "INV-5",
        "closed context: a registration after its activation settled changes nothing",
    ),
    (
        "INV-6",
        "discovery: a refused batch changes nothing and no factory runs outside an activation of itself or a dependent, or its reload",
    ),
    (
        "INV-7",
        "status: only the lifecycle transitions of H-1 occur",
    ),
    (
        "INV-8",
        "hook isolation: each emit calls every live hook exactly once, in order, whatever earlier hooks did",
    ),
    (
        "INV-9",
        "liveness: every operation eventually settles and shutdown completes",
    ),
    (
        "INV-10",
        "registry: tool names and API names are unique and map back to each other, one API name per tool, kept from dormant to live",
    ),
    (
        "INV-11a",
        "reload: exactly one generation of each active extension's tools and hooks is live, never a mix, never none",
    ),
    (
        "INV-11b",
        "reload: a failed reload never committed its fresh generation and left the old one live and untouched",
    ),
    (
        "INV-11c",
        "reload: a completed reload retired its old generation, every cleanup step once, in reverse, failures reported",
    ),
    (
        "INV-12a",
        "calls: when an extension's cleanup step starts at shutdown, none of its tool calls is running",
    ),
    (
        "INV-12b",
        "calls: after shutdown completes no call is in flight or admitted, and no extension code runs",
    ),
    (
        "INV-12c",
        "deadlines: an activation whose deadline passed never commits; a timed-out cleanup step is a failure",
    ),
    (
        "INV-13a",
        "dependencies: a dependent is never active, nor its factory run, while one of its dependencies is not active",
    ),
    (
        "INV-13b",
        "dependencies: shutdown cleans every dependent up before its dependencies",
    ),
    (
        "INV-14",
        "grants: a dormant call or provider selection never starts an extension a mismatch revoked; a revocation appears only on a mismatch and goes only with a commit",
    ),
    (
        "INV-15",
        "refusals: an input the core refuses leaves the core and its outbox exactly as they were",
    ),
    (
        "INV-16",
        "cancellation: when the core decides to cancel the running activation, it sends the Cancel in the same step",
    ),
    (
        "INV-17",
        "lateness: a completion read at or after its deadline is never on time, and one read before it never times out",
    ),
    (
        "INV-18",
        "redefinition: a new definition is the extension's exactly once it applied (at once when not active, at its fresh generation's commit when active); a failed or refused one leaves the old",
    ),
    (
        "a dormant call refused for a revoked grant (INV-14)",
        "reached: a dormant call or provider selection refused because a declaration mismatch revoked the grant",
    ),
    (
        "protocol",
        "the model's own consistency: the core accepted every input the environment chose",
    ),
    (
        "a provider live (M-8)",
        "reached: a provider an activation registered went live with its commit",
    ),
    (
        "a provider clash rejected (M-8)",
        "reached: an activation refused because its provider id was already live (EXTENSION_PROVIDER_CLASH)",
    ),
    (
        "a reload swapped in its fresh generation",
        "reached: a reload that committed its fresh generation and retired the old one",
    ),
    (
        "a failed reload left the old generation live",
        "reached: a reload whose fresh generation failed and was rolled back",
    ),
    (
        "an inactive extension redefined at once",
        "reached: a redefinition of an extension that was not active applied at once, with no code run (H-12)",
    ),
    (
        "an active extension redefined by its fresh generation",
        "reached: a redefinition whose fresh generation, checked against the new declarations, committed",
    ),
    (
        "a failed redefinition left the old definition",
        "reached: a redefinition whose fresh generation failed; the old generation and definition stayed",
    ),
    (
        "a dependent activated after its dependency",
        "reached: an extension with a dependency activated (its dependency first, H-13)",
    ),
    (
        "a failed dependency stopped its dependent",
        "reached: EXTENSION_DEPENDENCY_FAILED before the dependent's factory ran",
    ),
    (
        "an activation refused for a missing dependency",
        "reached: EXTENSION_DEPENDENCY_MISSING before anything ran",
    ),
    (
        "an activation rolled back with a failing disposer",
        "reached: a rollback in which a disposer failed",
    ),
    (
        "a shutdown aggregating two failures",
        "reached: a shutdown whose aggregate holds two or more failed steps",
    ),
    (
        "a hook failing while a later hook still runs",
        "reached: a failing hook followed by a hook that still ran",
    ),
    (
        "a tool clash rejected",
        "reached: an activation refused because a tool name was already taken",
    ),
    (
        "a retry after failure that succeeds",
        "reached: a failed extension activated again, successfully",
    ),
    (
        "a dispose that cancelled a pending activation",
        "reached: shutdown cancelled an activation in progress, which rolled back",
    ),
    (
        "a factory failure rolled back",
        "reached: a factory error handled as a failed activation",
    ),
    (
        "an activate of an unknown id",
        "reached: activate of an id never discovered (EXTENSION_NOT_FOUND)",
    ),
    (
        "an activate of an active extension",
        "reached: activate of an active extension, which succeeds without effect",
    ),
    (
        "an activation cancelled before its start",
        "reached: a queued activation cancelled by shutdown before it began",
    ),
    (
        "a late registration refused",
        "reached: a registration through a closed context, refused",
    ),
    (
        "a hung activation released by its cancellation",
        "reached: an activation that never settled on its own, ended by its cancellation signal",
    ),
    (
        "a queued request withdrawn",
        "reached: a caller dropped its request before its turn",
    ),
    (
        "a discovery batch refused",
        "reached: a discovery batch refused as a whole",
    ),
    (
        "a manifest extension active (dormant descriptor replaced)",
        "reached: a manifest extension's commit replaced its dormant tool by the live one",
    ),
    (
        "a declaration mismatch refused (M-5)",
        "reached: an activation refused because its tools differ from its declarations",
    ),
    (
        "a plain extension's `ext:tool` name refused (H-4)",
        "reached: a plain extension's namespaced tool name refused",
    ),
    (
        "a shutdown that waited for a tool call",
        "reached: shutdown cancelled an extension's call and waited for it before its cleanup",
    ),
    (
        "a tool call refused after the shutdown",
        "reached: a call of a formerly live tool refused once shutdown began",
    ),
    (
        "a tool call abandoned by the shutdown",
        "reached: a call that outlived shutdown's wait, abandoned with EXTENSION_TIMEOUT",
    ),
    (
        "an abandoned call's late result discarded",
        "reached: the result of an abandoned call arrived later and was discarded",
    ),
    (
        "an activation rolled back by its deadline",
        "reached: an activation whose deadline passed, rolled back with EXTENSION_TIMEOUT",
    ),
    (
        "a cleanup step timed out (EXTENSION_TIMEOUT)",
        "reached: a cleanup step past its deadline, recorded as failed, and the next one ran",
    ),
    (
        "a lost step counted as failed (EXTENSION_TASK_LOST)",
        "reached: a step whose task died, counted as failed, and the operation went on",
    ),
    (
        "an API name suffixed on collision",
        "reached: two runtime names with one API name, the later one suffixed",
    ),
];

/// The one-line meaning of a property, by name.
pub fn meaning(name: &str) -> Option<&'static str> {
    MEANINGS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::{MEANINGS, meaning};
    use crate::HostModel;
    use crate::scenario::Bounds;
    use stateright::Model as _;

    #[test]
    fn every_property_the_model_returns_has_a_meaning() {
        let mut presets = vec![
            Bounds::default(),
            Bounds::ci(),
            Bounds::ci_names(),
            Bounds::lifecycle(),
        ];
        presets.extend(crate::plan::searches().into_iter().map(|s| s.bounds));
        presets.push(Bounds {
            manifest: false,
            late: false,
            hangs: 0,
            withdraws: 0,
            refused: 0,
            ..Bounds::ci()
        });
        let mut seen = BTreeSet::new();
        for bounds in presets {
            let model = HostModel::new(bounds);
            for p in model.properties() {
                assert!(
                    meaning(p.name).is_some(),
                    "property {:?} has no meaning in model/src/meaning.rs",
                    p.name
                );
                seen.insert(p.name);
            }
        }
        assert!(seen.contains("INV-1") && seen.contains("protocol"));
    }

    #[test]
    fn meanings_are_unique_one_line_and_not_empty() {
        let names: BTreeSet<&str> = MEANINGS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names.len(), MEANINGS.len(), "a property is listed twice");
        for (name, text) in MEANINGS {
            assert!(!text.trim().is_empty(), "{name} has an empty meaning");
            assert!(!text.contains('\n'), "{name}'s meaning is not one line");
        }
    }
}
