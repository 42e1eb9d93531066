//! The seeded bugs of `exthost_core::Mutant`, what each must break, and
//! the small bounds under which the checker finds the break quickly.

use exthost_core::Mutant;

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
    /// The part of the default check that catches it: the test suite
    /// runs it there, and `exthost-model mutants` shows it.
    pub caught_in: &'static str,
}

/// Every seeded bug the model catches, in the order `Mutant` declares them.
pub const MUTANTS: [MutantCase; 40] = [
    MutantCase {
        mutant: Mutant::PublishBeforeValidate,
        name: "PublishBeforeValidate",
        breaks: &["INV-1"],
        summary: "a staged tool goes live at registration, before validation",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::SkipCandidateClone,
        name: "SkipCandidateClone",
        breaks: &["INV-1"],
        summary: "commit writes into the live registry, so a refused batch leaves tools behind",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::ForwardRollback,
        name: "ForwardRollback",
        breaks: &["INV-2"],
        summary: "rollback runs disposers in registration order",
        caught_in: "tools+steps",
    },
    MutantCase {
        mutant: Mutant::StopCleanupAtFirstFailure,
        name: "StopCleanupAtFirstFailure",
        breaks: &["INV-2", "INV-3"],
        summary: "rollback and shutdown stop at the first failing step",
        caught_in: "reload+discovery",
    },
    MutantCase {
        mutant: Mutant::ForwardShutdown,
        name: "ForwardShutdown",
        breaks: &["INV-3", "INV-13b"],
        summary: "shutdown cleans up extensions in activation order",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::NoContextClosedCheck,
        name: "NoContextClosedCheck",
        breaks: &["INV-5"],
        summary: "registrations are accepted after the activation settled",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::HookFailureStopsLater,
        name: "HookFailureStopsLater",
        breaks: &["INV-8"],
        summary: "a failing hook stops delivery to later hooks",
        caught_in: "requests+steps",
    },
    MutantCase {
        mutant: Mutant::StartBeforeSettled,
        name: "StartBeforeSettled",
        breaks: &["INV-4"],
        summary: "an operation may begin before the previous one settled",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::PartialDiscovery,
        name: "PartialDiscovery",
        breaks: &["INV-6"],
        summary: "a refused discovery batch keeps the entries before the bad one",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::DisposeFailedExtensions,
        name: "DisposeFailedExtensions",
        breaks: &["INV-7"],
        summary: "shutdown marks failed extensions disposed (failed -> disposed)",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::NoCancelOnDispose,
        name: "NoCancelOnDispose",
        breaks: &["INV-9"],
        summary: "shutdown does not cancel the pending activation",
        caught_in: "tools+steps",
    },
    MutantCase {
        mutant: Mutant::NoApiNameSuffix,
        name: "NoApiNameSuffix",
        breaks: &["INV-10"],
        summary: "API-name collisions are not suffixed",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::CleanupIgnoresCalls,
        name: "CleanupIgnoresCalls",
        breaks: &["INV-12a", "INV-12b"],
        summary: "shutdown cleans an extension up while its tool calls still run",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::CompletionBeatsDeadline,
        name: "CompletionBeatsDeadline",
        breaks: &["INV-12c"],
        summary: "an activate returning Ok after its deadline passed is committed",
        caught_in: "tools+steps",
    },
    MutantCase {
        mutant: Mutant::NeverFreeApiName,
        name: "NeverFreeApiName",
        breaks: &["INV-10"],
        summary: "the registry never frees an API name on removal",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::SuffixNotCheckedFree,
        name: "SuffixNotCheckedFree",
        breaks: &["INV-10"],
        summary: "the registry takes the suffix _2 without checking that it is free",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::DependencyIgnored,
        name: "DependencyIgnored",
        breaks: &["INV-13a"],
        summary: "activation starts the extension asked for, not its dependencies first",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::DependencyFailureRunsDependent,
        name: "DependencyFailureRunsDependent",
        breaks: &["INV-13a"],
        summary: "after a dependency failed, its dependent's factory runs anyway",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::ReloadBreaksBeforeMake,
        name: "ReloadBreaksBeforeMake",
        breaks: &["INV-11a"],
        summary: "a reload withdraws the old generation's tools before the fresh one validated",
        caught_in: "reload+discovery",
    },
    MutantCase {
        mutant: Mutant::ReloadNeverRetiresOld,
        name: "ReloadNeverRetiresOld",
        breaks: &["INV-11c"],
        summary: "a reload settles at its commit and never cleans the old generation up",
        caught_in: "reload+discovery",
    },
    MutantCase {
        mutant: Mutant::ReloadFailureCleansOld,
        name: "ReloadFailureCleansOld",
        breaks: &["INV-11b"],
        summary: "a failed reload's rollback also runs the live old generation's cleanup",
        caught_in: "reload+discovery",
    },
    MutantCase {
        mutant: Mutant::ProviderPublishedBeforeValidation,
        name: "ProviderPublishedBeforeValidation",
        breaks: &["INV-1"],
        summary: "a staged provider goes live at registration, before validation",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::ReloadFastPathBeforeDeclarations,
        name: "ReloadFastPathBeforeDeclarations",
        breaks: &["INV-1"],
        summary: "a reload's in-place fast path runs before the declaration check (M-5)",
        caught_in: "reload+discovery",
    },
    MutantCase {
        mutant: Mutant::ForwardRetirement,
        name: "ForwardRetirement",
        breaks: &["INV-11c"],
        summary: "a reload cleans its old generation up in registration order",
        caught_in: "reload+steps",
    },
    MutantCase {
        mutant: Mutant::ShutdownLeavesProviders,
        name: "ShutdownLeavesProviders",
        breaks: &["INV-1"],
        summary: "shutdown empties the tools but leaves the providers live",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::ProviderCheckOnlyWhenRegistered,
        name: "ProviderCheckOnlyWhenRegistered",
        breaks: &["INV-1"],
        summary: "the provider declaration check runs only when a provider was registered",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::ReloadRederivesApiName,
        name: "ReloadRederivesApiName",
        breaks: &["INV-10"],
        summary: "a reload's in-place replacement re-derives a tool's API name",
        caught_in: "reload+discovery",
    },
    MutantCase {
        mutant: Mutant::EarlyForgetNamesDisposers,
        name: "EarlyForgetNamesDisposers",
        breaks: &["protocol"],
        summary: "a rollback's early Forget also names the disposers it is about to run",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::RevokedGrantStarts,
        name: "RevokedGrantStarts",
        breaks: &["INV-14"],
        summary: "a dormant call starts an extension whose grant a declaration mismatch revoked",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::TransientFailureRevokes,
        name: "TransientFailureRevokes",
        breaks: &["INV-14"],
        summary: "a transient activation failure revokes the grant as a mismatch does",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::RefusalPopsQueue,
        name: "RefusalPopsQueue",
        breaks: &["INV-15"],
        summary: "a Begin refused while another operation runs pops the queue head first",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::TransientFailureClearsGrant,
        name: "TransientFailureClearsGrant",
        breaks: &["INV-14"],
        summary: "a transient activation failure clears the revocation a mismatch made",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::ChainCommitKeepsGrant,
        name: "ChainCommitKeepsGrant",
        breaks: &["INV-14"],
        summary: "a dependency's commit inside a chain does not restore its grant",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::DeadlineDropsCancel,
        name: "DeadlineDropsCancel",
        breaks: &["INV-16"],
        summary: "a passed deadline marks the activation cancelled but sends no Cancel",
        caught_in: "tools+steps",
    },
    MutantCase {
        mutant: Mutant::ProviderLookupSkipsFailed,
        name: "ProviderLookupSkipsFailed",
        breaks: &["protocol"],
        summary: "a provider selection finds a declaring extension only if it never started",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::TriggerStartsFailed,
        name: "TriggerStartsFailed",
        breaks: &["protocol"],
        summary: "an event also starts an extension whose activation failed",
        caught_in: "discovery+tools",
    },
    MutantCase {
        mutant: Mutant::LateReadOnTime,
        name: "LateReadOnTime",
        breaks: &["INV-17"],
        summary: "a completion read exactly at its deadline counts as on time",
        caught_in: "tools+steps",
    },
    MutantCase {
        mutant: Mutant::EarlyReadTimesOut,
        name: "EarlyReadTimesOut",
        breaks: &["INV-17"],
        summary: "a completion read one nanosecond before its deadline times out",
        caught_in: "tools+steps",
    },
    MutantCase {
        mutant: Mutant::RedefineSwapsAtBegin,
        name: "RedefineSwapsAtBegin",
        breaks: &["INV-18"],
        summary: "an active extension's redefinition takes the new definition when it begins, so a failed one keeps it",
        caught_in: "reload+discovery",
    },
    MutantCase {
        mutant: Mutant::RedefineKeepsOldDormant,
        name: "RedefineKeepsOldDormant",
        breaks: &["INV-1"],
        summary: "an inactive extension's redefinition keeps its old dormant descriptors beside the new",
        caught_in: "reload+discovery",
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
