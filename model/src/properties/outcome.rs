//! What an operation's outcome says: the failure it carries, the cause,
//! the failed cleanup steps; shared by the invariants and the `sometimes`
//! properties.
//!
//! Architecture invariant: a leaf (it names [`crate::state`] only).

use exthost_core::{FailureCause, OpOutcome};

use crate::state::{Settled, State};

/// The codes a deadline and a lost task give the step they end.
pub(super) const TIMEOUT: &str = exthost_core::error::codes::EXTENSION_TIMEOUT;
pub(super) const TASK_LOST: &str = exthost_core::error::codes::EXTENSION_TASK_LOST;

/// Debug text of a list.
pub(super) fn show<T: std::fmt::Debug>(items: &[T]) -> String {
    format!("{items:?}")
}

/// The failure of an activation attempt that rolled back: an activation's,
/// a dependency's (H-13) or a reload's fresh generation (H-12).
pub(super) fn failed(outcome: &OpOutcome) -> Option<&exthost_core::ActivationFailure> {
    match outcome {
        OpOutcome::ActivationFailed(f)
        | OpOutcome::ReloadFailed(f)
        | OpOutcome::DependencyFailed { failure: f, .. } => Some(f),
        _ => None,
    }
}

pub(super) fn any_settled(s: &State, pred: impl Fn(&Settled) -> bool) -> bool {
    s.env.last.iter().any(pred)
}

/// A cleanup step of this settled operation failed with `code`.
pub(super) fn cleanup_failed_with(settled: &Settled, code: &str) -> bool {
    let failures = match &settled.outcome {
        OpOutcome::ActivationFailed(f) => f.cleanup_failures.as_slice(),
        OpOutcome::Disposed { failures } => failures.as_slice(),
        _ => &[],
    };
    failures.iter().any(|f| f.failure.code == Some(code))
}

pub(super) fn cause(settled: &Settled) -> Option<&FailureCause> {
    failed(&settled.outcome).map(|f| &f.cause)
}
