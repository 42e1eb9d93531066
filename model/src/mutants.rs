//! The seeded bugs of `exthost_core::Mutant`, what each must break, and
//! the small bounds under which the checker finds the break quickly.

use exthost_core::Mutant;

use crate::scenario::Bounds;

/// One seeded bug and the invariants a correct model must catch it by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutantCase {
    /// The seeded bug.
    pub mutant: Mutant,
    /// Its name, as `--mutant` takes it.
    pub name: &'static str,
    /// The invariants it must break (each with a counterexample).
    pub breaks: &'static [&'static str],
    /// What it does wrong, in one line.
    pub summary: &'static str,
}

/// Every seeded bug the model catches, in the order `Mutant` declares them.
pub const MUTANTS: [MutantCase; 30] = [
    MutantCase {
        mutant: Mutant::PublishBeforeValidate,
        name: "PublishBeforeValidate",
        breaks: &["INV-1"],
        summary: "a staged tool goes live at registration, before validation",
    },
    MutantCase {
        mutant: Mutant::SkipCandidateClone,
        name: "SkipCandidateClone",
        breaks: &["INV-1"],
        summary: "commit writes into the live registry, so a refused batch leaves tools behind",
    },
    MutantCase {
        mutant: Mutant::ForwardRollback,
        name: "ForwardRollback",
        breaks: &["INV-2"],
        summary: "rollback runs disposers in registration order",
    },
    MutantCase {
        mutant: Mutant::StopCleanupAtFirstFailure,
        name: "StopCleanupAtFirstFailure",
        breaks: &["INV-2", "INV-3"],
        summary: "rollback and shutdown stop at the first failing step",
    },
    MutantCase {
        mutant: Mutant::ForwardShutdown,
        name: "ForwardShutdown",
        breaks: &["INV-3", "INV-13b"],
        summary: "shutdown cleans up extensions in activation order",
    },
    MutantCase {
        mutant: Mutant::NoContextClosedCheck,
        name: "NoContextClosedCheck",
        breaks: &["INV-5"],
        summary: "registrations are accepted after the activation settled",
    },
    MutantCase {
        mutant: Mutant::HookFailureStopsLater,
        name: "HookFailureStopsLater",
        breaks: &["INV-8"],
        summary: "a failing hook stops delivery to later hooks",
    },
    MutantCase {
        mutant: Mutant::StartBeforeSettled,
        name: "StartBeforeSettled",
        breaks: &["INV-4"],
        summary: "an operation may begin before the previous one settled",
    },
    MutantCase {
        mutant: Mutant::PartialDiscovery,
        name: "PartialDiscovery",
        breaks: &["INV-6"],
        summary: "a refused discovery batch keeps the entries before the bad one",
    },
    MutantCase {
        mutant: Mutant::DisposeFailedExtensions,
        name: "DisposeFailedExtensions",
        breaks: &["INV-7"],
        summary: "shutdown marks failed extensions disposed (failed -> disposed)",
    },
    MutantCase {
        mutant: Mutant::NoCancelOnDispose,
        name: "NoCancelOnDispose",
        breaks: &["INV-9"],
        summary: "shutdown does not cancel the pending activation",
    },
    MutantCase {
        mutant: Mutant::NoApiNameSuffix,
        name: "NoApiNameSuffix",
        breaks: &["INV-10"],
        summary: "API-name collisions are not suffixed",
    },
    MutantCase {
        mutant: Mutant::CleanupIgnoresCalls,
        name: "CleanupIgnoresCalls",
        breaks: &["INV-12a", "INV-12b"],
        summary: "shutdown cleans an extension up while its tool calls still run",
    },
    MutantCase {
        mutant: Mutant::CompletionBeatsDeadline,
        name: "CompletionBeatsDeadline",
        breaks: &["INV-12c"],
        summary: "an activate returning Ok after its deadline passed is committed",
    },
    MutantCase {
        mutant: Mutant::NeverFreeApiName,
        name: "NeverFreeApiName",
        breaks: &["INV-10"],
        summary: "the registry never frees an API name on removal",
    },
    MutantCase {
        mutant: Mutant::SuffixNotCheckedFree,
        name: "SuffixNotCheckedFree",
        breaks: &["INV-10"],
        summary: "the registry takes the suffix _2 without checking that it is free",
    },
    MutantCase {
        mutant: Mutant::DependencyIgnored,
        name: "DependencyIgnored",
        breaks: &["INV-13a"],
        summary: "activation starts the extension asked for, not its dependencies first",
    },
    MutantCase {
        mutant: Mutant::DependencyFailureRunsDependent,
        name: "DependencyFailureRunsDependent",
        breaks: &["INV-13a"],
        summary: "after a dependency failed, its dependent's factory runs anyway",
    },
    MutantCase {
        mutant: Mutant::ReloadBreaksBeforeMake,
        name: "ReloadBreaksBeforeMake",
        breaks: &["INV-11a"],
        summary: "a reload withdraws the old generation's tools before the fresh one validated",
    },
    MutantCase {
        mutant: Mutant::ReloadNeverRetiresOld,
        name: "ReloadNeverRetiresOld",
        breaks: &["INV-11c"],
        summary: "a reload settles at its commit and never cleans the old generation up",
    },
    MutantCase {
        mutant: Mutant::ReloadFailureCleansOld,
        name: "ReloadFailureCleansOld",
        breaks: &["INV-11b"],
        summary: "a failed reload's rollback also runs the live old generation's cleanup",
    },
    MutantCase {
        mutant: Mutant::ProviderPublishedBeforeValidation,
        name: "ProviderPublishedBeforeValidation",
        breaks: &["INV-1"],
        summary: "a staged provider goes live at registration, before validation",
    },
    MutantCase {
        mutant: Mutant::ReloadFastPathBeforeDeclarations,
        name: "ReloadFastPathBeforeDeclarations",
        breaks: &["INV-1"],
        summary: "a reload's in-place fast path runs before the declaration check (M-5)",
    },
    MutantCase {
        mutant: Mutant::ForwardRetirement,
        name: "ForwardRetirement",
        breaks: &["INV-11c"],
        summary: "a reload cleans its old generation up in registration order",
    },
    MutantCase {
        mutant: Mutant::ShutdownLeavesProviders,
        name: "ShutdownLeavesProviders",
        breaks: &["INV-1"],
        summary: "shutdown empties the tools but leaves the providers live",
    },
    MutantCase {
        mutant: Mutant::ProviderCheckOnlyWhenRegistered,
        name: "ProviderCheckOnlyWhenRegistered",
        breaks: &["INV-1"],
        summary: "the provider declaration check runs only when a provider was registered",
    },
    MutantCase {
        mutant: Mutant::ReloadRederivesApiName,
        name: "ReloadRederivesApiName",
        breaks: &["INV-10"],
        summary: "a reload's in-place replacement re-derives a tool's API name",
    },
    MutantCase {
        mutant: Mutant::EarlyForgetNamesDisposers,
        name: "EarlyForgetNamesDisposers",
        breaks: &["protocol"],
        summary: "a rollback's early Forget also names the disposers it is about to run",
    },
    MutantCase {
        mutant: Mutant::RevokedGrantStarts,
        name: "RevokedGrantStarts",
        breaks: &["INV-14"],
        summary: "a dormant call starts an extension whose grant a declaration mismatch revoked",
    },
    MutantCase {
        mutant: Mutant::TransientFailureRevokes,
        name: "TransientFailureRevokes",
        breaks: &["INV-14"],
        summary: "a transient activation failure revokes the grant as a mismatch does",
    },
];

impl MutantCase {
    /// The case for this mutant.
    pub fn of(mutant: Mutant) -> &'static MutantCase {
        MUTANTS
            .iter()
            .find(|c| c.mutant == mutant)
            .expect("every mutant has a case")
    }

    /// Small bounds under which every invariant this mutant breaks has a
    /// counterexample: what the mutant tests check.
    pub fn bounds(&self) -> Bounds {
        let mut b = Bounds {
            extensions: 2,
            manifest: false,
            tools: 0,
            hooks: 0,
            disposers: 0,
            ops: 1,
            withdraws: 0,
            late: false,
            hangs: 0,
            refused: 0,
            cleanup_failures: 3,
            tool_names: vec!["x".into()],
            calls: 0,
            deadlines: 0,
            losses: 0,
            reloads: 0,
            dependency: false,
            providers: false,
        };
        match self.mutant {
            Mutant::PublishBeforeValidate => b.tools = 1,
            Mutant::SkipCandidateClone => {
                // A batch whose second tool clashes with its first.
                b.tools = 2;
                b.extensions = 1;
            }
            Mutant::ForwardRollback => b.disposers = 2,
            Mutant::StopCleanupAtFirstFailure => b.disposers = 1,
            Mutant::ForwardShutdown => {
                // `a` depends on the late `m`: activating `a` activates
                // `m` first (which commits only with its declared tool),
                // and a forward shutdown cleans `m` up first.
                b.manifest = true;
                b.dependency = true;
                b.tools = 1;
            }
            Mutant::NoContextClosedCheck => {
                b.late = true;
                b.extensions = 1;
            }
            Mutant::HookFailureStopsLater => {
                b.hooks = 2;
                b.ops = 2;
                b.extensions = 1;
            }
            Mutant::StartBeforeSettled => b.ops = 2,
            Mutant::PartialDiscovery => {
                b.refused = 1;
                b.ops = 0;
            }
            Mutant::DisposeFailedExtensions => b.extensions = 1,
            Mutant::NoCancelOnDispose => {
                b.hangs = 1;
                b.extensions = 1;
            }
            Mutant::NoApiNameSuffix => {
                b.manifest = true;
                b.tools = 1;
                b.tool_names = vec!["m_x".into()];
            }
            Mutant::CleanupIgnoresCalls => {
                // An active extension with a tool, one call of it.
                b.tools = 1;
                b.calls = 1;
                b.extensions = 1;
            }
            Mutant::CompletionBeatsDeadline => {
                b.deadlines = 1;
                b.extensions = 1;
            }
            Mutant::NeverFreeApiName => {
                // The manifest extension's dormant descriptor goes live.
                b.manifest = true;
                b.tools = 1;
            }
            Mutant::DependencyIgnored | Mutant::DependencyFailureRunsDependent => {
                // `a` depends on the late manifest extension `m`.
                b.manifest = true;
                b.dependency = true;
            }
            Mutant::ReloadBreaksBeforeMake => {
                // An active extension with a tool, reloaded.
                b.tools = 1;
                b.reloads = 1;
                b.extensions = 1;
            }
            Mutant::ReloadNeverRetiresOld | Mutant::ReloadFailureCleansOld => {
                b.reloads = 1;
                b.extensions = 1;
            }
            Mutant::ProviderPublishedBeforeValidation => {
                b.providers = true;
                b.extensions = 1;
            }
            Mutant::SuffixNotCheckedFree => {
                // A three-way collision: `m_x`, `m.x` and `m:x`.
                b.manifest = true;
                b.tools = 2;
                b.tool_names = vec!["m_x".into(), "m.x".into()];
            }
            Mutant::ReloadFastPathBeforeDeclarations => {
                // The manifest extension alone, reloaded: a fresh
                // generation that registers none of its tools.
                b.extensions = 1;
                b.manifest = true;
                b.tools = 1;
                b.reloads = 1;
            }
            Mutant::ForwardRetirement => {
                b.extensions = 1;
                b.disposers = 2;
                b.reloads = 1;
            }
            Mutant::ShutdownLeavesProviders => {
                b.extensions = 1;
                b.providers = true;
            }
            Mutant::ProviderCheckOnlyWhenRegistered => {
                // The manifest extension alone, declaring the provider `p`.
                b.extensions = 1;
                b.manifest = true;
                b.tools = 1;
                b.providers = true;
            }
            Mutant::ReloadRederivesApiName => {
                // `a`'s `m_x` takes the suffix `m_x_2` once `m:x` holds
                // `m_x`; then `a` is reloaded.
                b.manifest = true;
                b.tools = 1;
                b.tool_names = vec!["m_x".into()];
                b.reloads = 1;
            }
            Mutant::EarlyForgetNamesDisposers => {
                b.extensions = 1;
                b.disposers = 1;
            }
            Mutant::RevokedGrantStarts | Mutant::TransientFailureRevokes => {
                // The manifest extension alone: an activation that fails
                // (registering nothing is a declaration mismatch; a
                // factory error is transient), then a dormant call of its
                // tool.
                b.extensions = 1;
                b.manifest = true;
                b.ops = 2;
            }
        }
        b
    }
}

/// The mutant with this name (case-insensitive; `-` and `_` ignored, so
/// `no-cancel-on-dispose` works too).
pub fn parse(name: &str) -> Option<Mutant> {
    let key = |s: &str| {
        s.chars()
            .filter(|c| *c != '-' && *c != '_')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let wanted = key(name);
    MUTANTS
        .iter()
        .find(|c| key(c.name) == wanted)
        .map(|c| c.mutant)
}
