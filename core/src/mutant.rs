//! Seeded bugs: the names of the rules a checked build can break on purpose.
//!
//! Architecture invariant: this module depends on nothing. The probes that
//! act on these names are one statement each at their sites (in
//! `machine/` and `registry.rs`), and their bodies live in
//! `machine/probes.rs`; without the `mutants` feature every probe is `false`,
//! so the checked code is the shipped code whenever no mutant is set.

/// Seeded bugs: each breaks one rule so that a checker can show it catches
/// the break. Only a build with the `mutants` feature can give a core one
/// (`HostCore::with_mutant`, `ToolRegistry::with_mutant`); without it these
/// names are inert and every check of them compiles to `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum Mutant {
    /// A staged tool goes live at registration, before validation (INV-1).
    PublishBeforeValidate,
    /// Commit writes into the live registry instead of a candidate clone, so
    /// a failing batch leaves its first tools behind (INV-1).
    SkipCandidateClone,
    /// Rollback runs disposers in registration order (INV-2).
    ForwardRollback,
    /// Rollback and shutdown stop at the first failing step (INV-2, INV-3).
    StopCleanupAtFirstFailure,
    /// Shutdown cleans up in activation order (INV-3).
    ForwardShutdown,
    /// Registrations are accepted after the activation settled (INV-5).
    NoContextClosedCheck,
    /// A failing hook stops delivery to later hooks (INV-8).
    HookFailureStopsLater,
    /// An operation may begin before the previous one settled (INV-4).
    StartBeforeSettled,
    /// A refused discovery batch keeps the entries before the bad one (INV-6).
    PartialDiscovery,
    /// Shutdown marks failed extensions disposed: `failed -> disposed` (INV-7).
    DisposeFailedExtensions,
    /// Shutdown does not cancel the pending activation (INV-9).
    NoCancelOnDispose,
    /// API-name collisions are not suffixed (INV-10).
    NoApiNameSuffix,
    /// Shutdown cleans an extension up while its tool calls still run
    /// (INV-12).
    CleanupIgnoresCalls,
    /// An `activate` that returns `Ok` after its deadline passed is
    /// committed (INV-12).
    CompletionBeatsDeadline,
    /// The registry never frees an API name when it removes an entry, so a
    /// dormant descriptor's live tool gets another one (INV-10).
    NeverFreeApiName,
    /// The registry takes the first collision suffix (`_2`) without checking
    /// that it is free, which only a three-way collision shows (INV-10).
    SuffixNotCheckedFree,
    /// Activation ignores dependencies: an extension activates while its
    /// dependencies are not active (H-13).
    DependencyIgnored,
    /// A dependency's failure does not stop the chain: the dependent's
    /// factory still runs (H-13).
    DependencyFailureRunsDependent,
    /// Reload takes the old generation's tools out of the live registry
    /// before the fresh one validated: break before make (INV-11).
    ReloadBreaksBeforeMake,
    /// Reload never cleans the old generation up (INV-11).
    ReloadNeverRetiresOld,
    /// A failed reload also runs the old generation's cleanup, which stays
    /// live with its resources gone (INV-11).
    ReloadFailureCleansOld,
    /// A staged provider goes live at registration, before the candidate
    /// is validated: an activation that then fails leaves it live (INV-1,
    /// M-8).
    ProviderPublishedBeforeValidation,
    /// A reload's fast path (the in-place replacement of a subset of the
    /// old tools) runs before the declaration check, so a fresh generation
    /// of a manifest extension that drops a declared tool commits (M-5).
    ReloadFastPathBeforeDeclarations,
    /// A reload cleans its old generation up in registration order
    /// (INV-11).
    ForwardRetirement,
    /// Shutdown empties the registry's tools but leaves its providers live
    /// (INV-1, M-8).
    ShutdownLeavesProviders,
    /// The provider declaration check runs only when a provider was
    /// registered, so a manifest extension that registers none of its
    /// declared providers commits (M-5, M-8).
    ProviderCheckOnlyWhenRegistered,
    /// A reload's in-place replacement re-derives a tool's API name from
    /// its runtime name instead of keeping it (M-6, INV-10).
    ReloadRederivesApiName,
    /// A rollback's early `Forget` also names the disposers it is about to
    /// run (the shell would drop them before running them).
    EarlyForgetNamesDisposers,
    /// A dormant call or a provider selection starts an extension whose
    /// grant a declaration mismatch revoked (INV-14).
    RevokedGrantStarts,
    /// A transient activation failure (a factory error, say) revokes the
    /// extension's grant as a declaration mismatch does (INV-14).
    TransientFailureRevokes,
    /// A `Begin` refused while another operation runs pops the queue head
    /// before it refuses: a refused input changes the core (INV-15).
    RefusalPopsQueue,
    /// A transient activation failure clears the revocation a declaration
    /// mismatch made, so the next dormant call starts the extension
    /// (INV-14).
    TransientFailureClearsGrant,
    /// A dependency's commit inside a chain (H-13) does not restore its
    /// grant; only the extension asked for has its grant back (INV-14).
    ChainCommitKeepsGrant,
    /// A passed deadline marks the activation cancelled but sends no
    /// `Cancel`: its code never sees the signal (INV-16).
    DeadlineDropsCancel,
    /// A provider selection looks for a declaring extension only among
    /// those never started, so a failed one that declares the provider is
    /// not found (M-8).
    ProviderLookupSkipsFailed,
    /// An event (and the eager start) also starts an extension whose last
    /// activation failed, not only one still `discovered` (M-3).
    TriggerStartsFailed,
    /// A completion read exactly at its deadline counts as on time (INV-17).
    LateReadOnTime,
    /// A completion read just before its deadline times out (INV-17).
    EarlyReadTimesOut,
    /// An active extension's redefinition makes the new definition the
    /// extension's when it begins, not at its fresh generation's commit,
    /// so a failed one leaves it (INV-18).
    RedefineSwapsAtBegin,
    /// The redefinition of an extension that is not active adds the new
    /// dormant descriptors but keeps the old ones (INV-1).
    RedefineKeepsOldDormant,
}
