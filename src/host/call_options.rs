//! What a caller may attach to one tool call: its own cancellation and a
//! sink for the tool's progress reports
//! ([`super::ExtensionHost::call_tool_with`]).
//!
//! Architecture invariant: plain data and one task-local (what the running
//! call's tool can ask for); depends on nothing else in `host/`.

use std::sync::Arc;

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

/// What the tool of the call running in a task can ask for: one
/// task-local for all three, so a call pays one scope.
pub(crate) struct CallScope {
    /// The host's signal: fired when the call's extension is cleaned up.
    pub cancellation: CancellationToken,
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
