//! The activation context (H-6): exactly five capabilities.
//!
//! Architecture invariants:
//! - Depends on `code.rs`, `contain.rs`, `error.rs` and `provider.rs`
//!   only. It registers through [`HostLink`], a weak link to the host that
//!   the shell implements (`shell.rs`), so it never names the shell and
//!   never keeps the host alive: `extension.rs` -> `context.rs` and
//!   `shell.rs` -> `extension.rs` point one way, with no circle.
//! - It does not depend on `extension.rs`, `manifests.rs` or the drivers.

use std::future::Future;
use std::sync::{Arc, Weak};

use tokio_util::sync::CancellationToken;

use super::code::{DisposerFn, Event, ExtensionError, HookFn, Tool, ToolDescriptor};
use super::contain::Contained;
use super::error::HostError;
use super::provider::ProviderSpec;
use crate::resources::ResourceLoader;
use exthost_core::{ContextId, Registration};

/// What the shell keeps of an accepted registration, beside the core's
/// record of it: the extension's code, by the handle the core gave.
pub(crate) enum Kept {
    /// A tool's descriptor and handler.
    Tool(ToolDescriptor, Arc<dyn Tool>),
    /// A hook's handler.
    Hook(HookFn),
    /// A disposer.
    Disposer(DisposerFn),
    /// Nothing (a provider is data only, kept by the core).
    Nothing,
}

/// The host as an activation context reaches it (implemented by the
/// shell): stage a registration in the core and keep its code.
pub(crate) trait HostLink: Send + Sync + 'static {
    /// Stages `registration` through `context`, keeping `kept` under the
    /// handle the core gives it; false (nothing kept, nothing changed)
    /// when the context is closed.
    fn register(&self, context: ContextId, registration: Registration, kept: Kept) -> bool;

    /// The host itself, for [`ActivationContext::host_handle`].
    fn host(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// What an extension's `activate` receives: the trusted resource loader, a
/// cancellation signal, and four ways to register (tool, hook, disposer,
/// provider).
///
/// Registrations are staged privately and published only if the whole
/// activation succeeds (H-4). Once the activation settles, the context is
/// closed: every registration fails with `EXTENSION_CONTEXT_CLOSED` and
/// changes nothing (H-6). The context may be cloned and kept; that does not
/// reopen it.
#[derive(Clone)]
pub struct ActivationContext {
    pub(crate) host: Weak<dyn HostLink>,
    pub(crate) context: ContextId,
    pub(crate) extension: String,
    pub(crate) resources: ResourceLoader,
    pub(crate) cancellation: CancellationToken,
}

impl std::fmt::Debug for ActivationContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActivationContext")
            .field("extension", &self.extension)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl ActivationContext {
    /// The id of the extension being activated.
    pub fn extension_id(&self) -> &str {
        &self.extension
    }

    /// The host's trusted resource loader.
    pub fn resources(&self) -> &ResourceLoader {
        &self.resources
    }

    /// Fires when the activation is cancelled (host shutdown or an expired
    /// deadline). A cancelled activation is rolled back.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// Stages a tool. It becomes callable only when the activation commits.
    pub fn register_tool(
        &self,
        descriptor: ToolDescriptor,
        tool: impl Tool,
    ) -> Result<(), HostError> {
        let spec = descriptor.spec();
        let tool: Arc<dyn Tool> = Arc::new(Contained::new(tool));
        self.register(Registration::Tool(spec), Kept::Tool(descriptor, tool))
    }

    /// Stages a provider (M-8). It is checked at once by the rules of a
    /// manifest's declared provider ([`ProviderSpec`]); a refused one is
    /// `PROVIDER_INVALID` (its manifest reason code is
    /// [`HostError::cause_code`]) and stages nothing, so the activation may
    /// go on. A staged provider is published with the rest of the
    /// contribution in the activation's one commit (H-4), or never: its id
    /// must not be live already (`EXTENSION_PROVIDER_CLASH` fails the
    /// activation), and a manifest extension with declarations must register
    /// exactly its declared providers (M-5). It leaves with the rest at
    /// rollback, reload and shutdown.
    pub fn register_provider(&self, provider: ProviderSpec) -> Result<(), HostError> {
        let record = provider.record()?;
        self.register(Registration::Provider(record), Kept::Nothing)
    }

    /// Stages an event hook. Hooks run in activation order, then
    /// registration order (H-10).
    pub fn on_event<F, Fut>(&self, hook: F) -> Result<(), HostError>
    where
        F: Fn(Arc<Event>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), ExtensionError>> + Send + 'static,
    {
        let hook = Contained::new(hook);
        let hook: HookFn = Arc::new(move |event| match hook.get() {
            Some(hook) => Box::pin(hook(event)),
            None => Box::pin(async { Err(ExtensionError::new("the hook is gone")) }),
        });
        self.register(Registration::Hook, Kept::Hook(hook))
    }

    /// Stages a disposer. Disposers run in reverse registration order, at
    /// rollback or at shutdown, each exactly once (H-5, H-11).
    pub fn on_dispose<F, Fut>(&self, disposer: F) -> Result<(), HostError>
    where
        F: FnOnce() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), ExtensionError>> + Send + 'static,
    {
        let mut disposer = Contained::new(disposer);
        let disposer: DisposerFn = Box::new(move || match disposer.take() {
            Some(disposer) => Box::pin(disposer()),
            None => Box::pin(async { Err(ExtensionError::new("the disposer is gone")) }),
        });
        self.register(Registration::Disposer, Kept::Disposer(disposer))
    }

    fn register(&self, registration: Registration, kept: Kept) -> Result<(), HostError> {
        let closed = || HostError::ContextClosed {
            extension: self.extension.clone(),
        };
        let host = self.host.upgrade().ok_or_else(closed)?;
        if host.register(self.context, registration, kept) {
            Ok(())
        } else {
            Err(closed())
        }
    }
}
