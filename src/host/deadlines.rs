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
/// (issue 23): one thread for a current-thread runtime, several otherwise
/// (outside a runtime nothing runs beside the caller to hold a deadline
/// either, but a task of its own cannot be spawned there: the host's
/// other paths fail the same way as before).
pub(crate) fn current_executor() -> Executor {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread => {
            Executor::OneThread
        }
        _ => Executor::Threads,
    }
}
