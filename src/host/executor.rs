//! The executor of the running task, as the core's placement questions ask
//! for it: the core decides where a step runs and which deadline bounds it
//! (H-12: the host's, or an extension's own override); the shell only
//! tells it what can run while extension code blocks a thread.

use exthost_core::Executor;

/// The executor of the running task, as the core's placement asks for it
///: one thread for a current-thread runtime, several for any
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
