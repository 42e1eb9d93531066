//! [`HostOptions`]: how to build a host, its base tools, its deadlines
//! (H-12) and their defaults.
//!
//! Architecture invariant: data only; depends on `code` and `trace` within
//! `host/`.

use std::sync::Arc;
use std::time::Duration;

use exthost_core::Deadlines;

use super::code::{Tool, ToolDescriptor};
use super::trace::Recorder;
use crate::resources::ResourceLoader;

/// The default activation deadline (H-12): factory plus `activate`.
pub const DEFAULT_ACTIVATION_DEADLINE: Duration = Duration::from_secs(30);
/// The default deadline of one cleanup step, and of the wait for an
/// extension's calls in flight before its cleanup (H-11, H-12).
pub const DEFAULT_CLEANUP_DEADLINE: Duration = Duration::from_secs(10);
/// The default deadline of one hook (H-10, H-12).
pub const DEFAULT_HOOK_DEADLINE: Duration = Duration::from_secs(10);

/// How to build a host.
#[derive(Clone)]
pub struct HostOptions {
    pub(super) resources: ResourceLoader,
    pub(super) base_tools: Vec<(ToolDescriptor, Arc<dyn Tool>)>,
    pub(super) deadlines: Deadlines,
    pub(super) recorder: Option<Arc<Recorder>>,
}

impl std::fmt::Debug for HostOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostOptions")
            .field("resources", &self.resources)
            .field(
                "base_tools",
                &self
                    .base_tools
                    .iter()
                    .map(|(d, _)| &d.name)
                    .collect::<Vec<_>>(),
            )
            .field("deadlines", &self.deadlines)
            .finish_non_exhaustive()
    }
}

impl HostOptions {
    /// Options with this trusted resource loader, no base tools, and the
    /// default deadlines: [`DEFAULT_ACTIVATION_DEADLINE`] (30 s),
    /// [`DEFAULT_CLEANUP_DEADLINE`] (10 s per cleanup step and per wait for
    /// an extension's calls), [`DEFAULT_HOOK_DEADLINE`] (10 s per hook), and
    /// none per tool call.
    pub fn new(resources: ResourceLoader) -> Self {
        Self {
            resources,
            base_tools: Vec::new(),
            deadlines: Deadlines {
                activation: Some(DEFAULT_ACTIVATION_DEADLINE),
                cleanup: Some(DEFAULT_CLEANUP_DEADLINE),
                hook: Some(DEFAULT_HOOK_DEADLINE),
                call: None,
            },
            recorder: None,
        }
    }

    /// Adds a base tool, published before any extension's (H-9).
    pub fn with_base_tool(mut self, descriptor: ToolDescriptor, tool: impl Tool) -> Self {
        self.base_tools.push((descriptor, Arc::new(tool)));
        self
    }

    /// Cancels and rolls back an activation still pending after `deadline`
    /// (H-12); its cause carries the code `EXTENSION_TIMEOUT`.
    pub fn with_activation_deadline(mut self, deadline: Duration) -> Self {
        self.deadlines.activation = Some(deadline);
        self
    }

    /// No activation deadline: an `activate` that never returns then keeps
    /// the queue until shutdown cancels it.
    pub fn without_activation_deadline(mut self) -> Self {
        self.deadlines.activation = None;
        self
    }

    /// Records a cleanup step (disposer or `dispose`) still running after
    /// `deadline` as failed with `EXTENSION_TIMEOUT` and moves on to the
    /// next step (H-12), so one hung extension cannot wedge shutdown.
    pub fn with_cleanup_deadline(mut self, deadline: Duration) -> Self {
        self.deadlines.cleanup = Some(deadline);
        self
    }

    /// No cleanup deadline: a cleanup step that never returns, or a tool
    /// call that never finishes, then wedges shutdown.
    pub fn without_cleanup_deadline(mut self) -> Self {
        self.deadlines.cleanup = None;
        self
    }

    /// Records a hook still running after `deadline` as a failed hook
    /// (`EXTENSION_TIMEOUT`) and goes on with the next one; a hook that
    /// returns after it (having blocked its thread) fails the same way.
    ///
    /// Under a hook deadline (the default is 10 s), on either runtime
    /// flavour, the hooks run in a task other than the one awaiting
    /// `emit`, each timed by one monotonic clock reading at its end (the
    /// next hook's start); on a multi-thread runtime `emit` returns at the
    /// deadline even while a hook blocks its thread (docs/spec.md, H-12).
    pub fn with_hook_deadline(mut self, deadline: Duration) -> Self {
        self.deadlines.hook = Some(deadline);
        self
    }

    /// No hook deadline: a hook that never returns then wedges `emit`.
    pub fn without_hook_deadline(mut self) -> Self {
        self.deadlines.hook = None;
        self
    }

    /// Answers a tool call still running after `deadline` with
    /// `EXTENSION_TIMEOUT` and drops it; a result that arrives after the
    /// deadline is discarded. None by default;
    /// [`ExtensionDefinition::with_call_deadline`](super::ExtensionDefinition::with_call_deadline) overrides it per
    /// extension.
    pub fn with_call_deadline(mut self, deadline: Duration) -> Self {
        self.deadlines.call = Some(deadline);
        self
    }

    /// Records every input the shell feeds the core, the public call that
    /// caused each request, and every piece of extension code it runs, for
    /// trace validation against the model. For tests.
    #[doc(hidden)]
    pub fn with_recorder(mut self, recorder: Arc<Recorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }
}
