//! What a cleanup had to run, compared with what it ran: shared by the
//! rollback (INV-2), shutdown (INV-3) and retirement (INV-11c) judgements.
//!
//! Architecture invariant: builds on [`crate::state`] and
//! [`crate::render`] only.

use exthost_core::{CleanupKind, CleanupStep};

use crate::state::{Activation, Settled};

/// A recorded transition violation as a check's result.
pub(super) fn flag(v: &Option<String>) -> Result<(), String> {
    match v {
        Some(v) => Err(v.clone()),
        None => Ok(()),
    }
}

/// The cleanup an activation's contribution needs: its acquired disposers
/// in reverse registration order, then the instance (if it has one).
pub(super) fn cleanup_steps(a: &Activation, instance: bool) -> Vec<CleanupStep> {
    let step = |kind| CleanupStep {
        extension: a.ext.clone(),
        context: a.context,
        kind,
    };
    let mut steps: Vec<CleanupStep> = a
        .disposers
        .iter()
        .enumerate()
        .rev()
        .map(|(index, disposer)| {
            step(CleanupKind::Disposer {
                index,
                disposer: *disposer,
            })
        })
        .collect();
    if instance {
        steps.push(step(CleanupKind::Instance));
    }
    steps
}

/// Compares the observed cleanup of a settled operation with what it had to
/// do, and the reported failures with the observed ones.
pub(super) fn cleanup_matches(
    settled: &Settled,
    expected: &[CleanupStep],
    reported: &[exthost_core::StepFailure],
    what: &str,
) -> Result<(), String> {
    let observed: Vec<&CleanupStep> = settled.cleanup.iter().map(|c| &c.step).collect();
    let expected_refs: Vec<&CleanupStep> = expected.iter().collect();
    if observed != expected_refs {
        return Err(format!(
            "{what} {} ran the cleanup steps {} but had to run {}",
            settled.op,
            crate::render::steps(observed.iter().copied()),
            crate::render::steps(expected.iter()),
        ));
    }
    if settled.cleanup.iter().any(|c| c.failed.is_none()) {
        return Err(format!(
            "{what} {} settled while a cleanup step still ran",
            settled.op
        ));
    }
    let failed: Vec<&CleanupStep> = settled
        .cleanup
        .iter()
        .filter(|c| c.failed == Some(true))
        .map(|c| &c.step)
        .collect();
    let reported: Vec<&CleanupStep> = reported.iter().map(|f| &f.step).collect();
    if failed != reported {
        return Err(format!(
            "{what} {} reports the failed steps {} but {} failed",
            settled.op,
            crate::render::steps(reported.iter().copied()),
            crate::render::steps(failed.iter().copied()),
        ));
    }
    Ok(())
}
