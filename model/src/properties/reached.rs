//! The `sometimes` properties: situations each check must reach, so that
//! no invariant holds only because what it is about never happens. Each
//! is listed only when the bounds can reach it.
//!
//! Architecture invariant: builds on [`crate::state`], [`crate::scenario`]
//! and the leaves [`super::definition`] and [`super::outcome`] only.

use exthost_core::{CleanupKind, FailureCause, OpKind, OpOutcome, RegistryError};

use super::definition::{Definition, sometimes};
use super::outcome::{TASK_LOST, TIMEOUT, any_settled, cause, cleanup_failed_with, failed};
use crate::scenario::Scenario;
use crate::state::Note;

/// Appends the `sometimes` properties the bounds of `sc` can reach, in
/// their order.
pub(super) fn push(sc: &Scenario, p: &mut Vec<Definition>) {
    let b = &sc.bounds;
    p.extend([
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
                        exthost_core::ExtensionSlot::Active(a) => a.attempts() >= 2,
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
    ]);
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
    if sc.has_manifest() {
        p.push(sometimes(
            "a dormant call refused for a revoked grant (INV-14)",
            |_, s| s.env.note == Some(Note::GrantRefused),
        ));
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
    if sc.redefinition.is_some() {
        p.push(sometimes(
            "an inactive extension redefined at once",
            |_, s| any_settled(s, |st| matches!(st.outcome, OpOutcome::Redefined { .. })),
        ));
        p.push(sometimes(
            "an active extension redefined by its fresh generation",
            |_, s| {
                any_settled(s, |st| {
                    matches!(st.kind, OpKind::Redefine(_))
                        && matches!(st.outcome, OpOutcome::Reloaded { .. })
                })
            },
        ));
        p.push(sometimes(
            "a failed redefinition left the old definition",
            |_, s| {
                any_settled(s, |st| {
                    matches!(st.kind, OpKind::Redefine(_))
                        && matches!(st.outcome, OpOutcome::ReloadFailed(_))
                })
            },
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
}
