//! What a caller may attach to one tool call: its own cancellation and a
//! sink for the tool's progress reports
//! ([`super::ExtensionHost::call_tool_with`]).
//!
//! Architecture invariant: plain data and one task-local (what the running
//! call's tool can ask for); depends on nothing else in `host/`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;

/// One progress report of a running tool call (the MCP `notifications/progress`
/// payload without its token).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// The progress so far; it should grow with every report.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// What the tool is doing, in words.
    pub message: Option<String>,
}

impl Progress {
    /// A report of `progress` out of an unknown total.
    pub fn new(progress: f64) -> Self {
        Self {
            progress,
            total: None,
            message: None,
        }
    }

    /// With a known total.
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// With a message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// Where a call's progress reports go: the caller's closure. It runs in the
/// tool's task, inside the tool's containment, so it should be quick (send
/// to a channel, for example).
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// Options of one tool call. The default is what
/// [`super::ExtensionHost::call_tool`] does: no caller cancellation, no
/// progress sink.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) cancellation: Option<CancellationToken>,
    pub(crate) progress: Option<ProgressSink>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("cancellation", &self.cancellation)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl CallOptions {
    /// No options.
    pub fn new() -> Self {
        Self::default()
    }

    /// The caller's cancellation. When it fires, the call's cancellation
    /// signal ([`super::current_call_cancellation`]) fires, the caller gets
    /// `TOOL_CALL_CANCELLED` at once, and the call itself stays tracked
    /// until it returns: shutdown still waits for it (bounded by the
    /// cleanup deadline) before its extension's first cleanup step (H-11).
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// A sink for the progress the tool reports
    /// ([`report_progress`]); a process extension's proxy forwards the
    /// server's `notifications/progress` for this call to it.
    pub fn with_progress(mut self, sink: impl Fn(Progress) + Send + Sync + 'static) -> Self {
        self.progress = Some(Arc::new(sink));
        self
    }
}

/// The host's two signals to one tool call in flight, in one allocation
/// shared by the shell's table and the call.
///
/// A call whose tool never asks for its cancellation signal makes no
/// [`CancellationToken`]: the token is made when the tool first asks
/// ([`super::current_call_cancellation`]), already fired if the cleanup
/// has begun. A call that finishes at its first poll takes no lock here.
#[derive(Default)]
pub(crate) struct CallSignals {
    /// Set when the core abandons the call: its caller answers at once.
    abandoned: AtomicBool,
    /// Under one lock, so that no signal is missed by a token or a waker
    /// registered while it fires.
    state: Mutex<SignalState>,
}

#[derive(Default)]
struct SignalState {
    /// The call's extension's cleanup waits for it.
    cancelled: bool,
    /// The tool's token for that, once the tool asked for it.
    token: Option<CancellationToken>,
    /// The caller waiting for the call, to wake when it is abandoned.
    waiter: Option<Waker>,
    /// The task running the tool, when it has one: aborted when the call
    /// is abandoned, whichever of the two comes first.
    task: Option<AbortHandle>,
}

impl CallSignals {
    fn state(&self) -> std::sync::MutexGuard<'_, SignalState> {
        // No extension code runs under this lock.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The call's extension is cleaned up: the tool's token fires, now or
    /// when the tool makes it.
    pub fn cancel(&self) {
        let mut state = self.state();
        state.cancelled = true;
        if let Some(token) = &state.token {
            token.cancel();
        }
    }

    /// The tool's cancellation token, made on first use.
    pub fn token(&self) -> CancellationToken {
        let mut state = self.state();
        let cancelled = state.cancelled;
        let token = state.token.get_or_insert_with(CancellationToken::new);
        if cancelled {
            token.cancel();
        }
        token.clone()
    }

    /// The core abandoned the call: its caller stops waiting, and its
    /// task, if it has one, is aborted.
    pub fn abandon(&self) {
        let (waiter, task) = {
            let mut state = self.state();
            self.abandoned.store(true, Ordering::Release);
            (state.waiter.take(), state.task.take())
        };
        if let Some(task) = task {
            task.abort();
        }
        if let Some(waiter) = waiter {
            waiter.wake();
        }
    }

    /// The call runs in `task`: abandoning the call aborts it, and a call
    /// abandoned before its task was attached aborts it now.
    pub fn attach(&self, task: AbortHandle) {
        let mut state = self.state();
        if self.abandoned.load(Ordering::Acquire) {
            drop(state);
            task.abort();
        } else {
            state.task = Some(task);
        }
    }

    /// Ready once the call is abandoned; until then the caller's task is
    /// woken when it is.
    pub fn poll_abandoned(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.abandoned.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        let mut state = self.state();
        // Read again under the lock `abandon` sets it under: either it is
        // set now, or `abandon` will find this waker.
        if self.abandoned.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        match &mut state.waiter {
            Some(waiter) => waiter.clone_from(cx.waker()),
            None => state.waiter = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

/// What the tool of the call running in a task can ask for: one
/// task-local for all three, so a call pays one scope.
pub(crate) struct CallScope {
    /// The host's signals: the cancellation fires when the call's
    /// extension is cleaned up.
    pub signals: Arc<CallSignals>,
    /// The caller's progress sink.
    pub progress: Option<ProgressSink>,
    /// The caller's own cancellation.
    pub caller: Option<CancellationToken>,
}

tokio::task_local! {
    pub(crate) static CALL: CallScope;
}

/// The cancellation of the tool call running in this task by its caller
/// ([`CallOptions::with_cancellation`]), not the host's cleanup signal
/// ([`super::current_call_cancellation`]); `None` outside a tool call or
/// when the caller gave none. A process extension's proxy forwards only
/// this one to its server: at a reload or at shutdown a proxied call may
/// finish (P-4, H-11).
pub fn current_caller_cancellation() -> Option<CancellationToken> {
    CALL.try_with(|call| call.caller.clone()).ok().flatten()
}

/// The progress sink of the tool call running in this task, if its caller
/// gave one.
pub fn current_call_progress() -> Option<ProgressSink> {
    CALL.try_with(|call| call.progress.clone()).ok().flatten()
}

/// Reports progress of the tool call running in this task to its caller.
/// Returns `false` (and does nothing) outside a tool call or when the caller
/// asked for no progress.
pub fn report_progress(progress: Progress) -> bool {
    match current_call_progress() {
        Some(sink) => {
            sink(progress);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task that waits until it is aborted.
    fn pending_task() -> tokio::task::JoinHandle<()> {
        tokio::spawn(std::future::pending())
    }

    /// How `task` ended, waited for at most a minute.
    async fn ending(task: tokio::task::JoinHandle<()>) -> tokio::task::JoinError {
        tokio::time::timeout(std::time::Duration::from_secs(60), task)
            .await
            .expect("the abort ends the task")
            .expect_err("the task only ends by its abort")
    }

    #[tokio::test]
    async fn abandoning_a_call_aborts_the_task_attached_to_it() {
        let signals = CallSignals::default();
        let task = pending_task();
        signals.attach(task.abort_handle());
        signals.abandon();
        assert!(ending(task).await.is_cancelled());
    }

    #[tokio::test]
    async fn a_task_attached_after_the_call_was_abandoned_is_aborted_at_once() {
        let signals = CallSignals::default();
        signals.abandon();
        let task = pending_task();
        signals.attach(task.abort_handle());
        assert!(ending(task).await.is_cancelled());
        assert!(signals.state().task.is_none(), "nothing is kept");
    }
}
