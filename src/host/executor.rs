//! Each extension's own deadlines (H-12): an extension definition, or its
//! manifest, may set or turn off its activation, cleanup and call deadlines;
//! whatever it leaves alone is the host's.
//!
//! The types are the core's ([`crate::core::Deadlines`] and the overrides
//! carried by each definition's [`crate::core::DefinitionPolicy`]): the
//! core decides which deadline applies to a step
//! ([`crate::core::HostCore::deadline_for`]); the shell only arms the
//! timers it answers.

use crate::core::Executor;

pub(crate) use crate::core::{
    DeadlineOverride as Override, DeadlineOverrides as Overrides, Deadlines,
};

/// The executor of the running task, as the core's placement asks for it
/// (issue 23): one thread for a current-thread runtime, several for any
/// other. Outside a tokio runtime it answers several, so the host behaves
/// there as it did before this input existed (code under a deadline needs
/// a runtime either way, for its timer or its task).
pub(crate) fn current_executor() -> Executor {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread => {
            Executor::OneThread
        }
        _ => Executor::Threads,
    }
}
