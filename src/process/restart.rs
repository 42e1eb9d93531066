//! A generation's child, and restarting it when it exited (P-3).
//!
//! Each generation of a process extension (its proxies, its event hook,
//! its disposer) reaches its child through one [`Live`]. When the child
//! has exited (it crashed, closed its stdout, or was stopped when idle,
//! [`ProcessMonitor::stop_child`](super::ProcessMonitor::stop_child)), the
//! next call restarts it here, in the runtime, so every embedding program
//! gets it, not only `exthost serve`:
//!
//! * **One restart per call, shared.** A call that finds the child exited
//!   spawns one fresh child (the usual start: cleared environment, own
//!   process group, bounded stderr, handshake and every listing within
//!   `startupTimeoutMs`). Calls that arrive while it starts wait for it and
//!   share its outcome, failure included, so a child that dies at every
//!   start costs one start per call that asked, never a loop.
//! * **Checked like a first start (M-5).** The fresh child's tools, and
//!   its prompts, resources and templates, must match the manifest's
//!   declarations exactly as at activation. On drift the fresh child is
//!   killed, the call fails with the M-5 reason code, and the generation is
//!   refused from then on (every call fails at once with that code, nothing
//!   spawns) until the program reloads the extension
//!   ([`ExtensionHost::reload`](crate::host::ExtensionHost::reload), whose
//!   activation runs the host's own check and revokes the grant on a
//!   mismatch). A manifest without declarations has nothing pinned: when
//!   the fresh child lists a different tool set, the generation is
//!   swapped for one with the new set as after its own `list_changed`
//!   (P-4).
//! * **A call in flight is not retried.** The call that was running when
//!   the child died fails with `EXTENSION_PROCESS_EXITED`; it may have had
//!   effects. Only a child whose session ended with that code is
//!   restarted: one that broke the protocol (`EXTENSION_PROTOCOL_ERROR`)
//!   stays failed until a reload.
//! * **Nothing outlives disposal.** The generation's disposer marks it
//!   disposed, waits for a restart under way (bounded by its startup
//!   deadline), then gives back the lease of whichever child is current.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::Value;

use super::ProcessExtension;
use super::client::Session;
use super::error::ProcessFault;
use super::list_changed::tool_keys_of;
use super::monitor::{MonitorState, Restarting};
use super::shutdown::ShutdownOutcome;
use crate::host::{BoxFuture, ExtensionError, HostHandle};

/// The child of one generation, and how to start it again.
pub(crate) struct Live {
    session: Mutex<Arc<Session>>,
    /// The extension, to spawn a fresh child.
    extension: ProcessExtension,
    host: HostHandle,
    startup: Duration,
    /// The tools this generation registered, whole (MCP JSON).
    registered: Mutex<Arc<Vec<Value>>>,
    /// Held while a restart runs; holds the last failed restart.
    restarting: tokio::sync::Mutex<Option<ExtensionError>>,
    /// Restarts finished, failed or not.
    attempts: AtomicU64,
    /// Set by a restart refused for drift: every later call fails with it.
    refused: Mutex<Option<ExtensionError>>,
    /// Set by the generation's disposer: nothing starts any more.
    disposed: AtomicBool,
}

impl Live {
    pub(crate) fn new(
        extension: ProcessExtension,
        session: Arc<Session>,
        host: HostHandle,
        startup: Duration,
    ) -> Self {
        Self {
            session: Mutex::new(session),
            extension,
            host,
            startup,
            registered: Mutex::default(),
            restarting: tokio::sync::Mutex::new(None),
            attempts: AtomicU64::new(0),
            refused: Mutex::new(None),
            disposed: AtomicBool::new(false),
        }
    }

    /// The extension's id.
    pub(crate) fn id(&self) -> &str {
        self.extension.manifest.id()
    }

    /// The current child's session.
    pub(crate) fn current(&self) -> Arc<Session> {
        self.session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Records the tools this generation registered.
    pub(crate) fn set_registered(&self, whole: Vec<Value>) {
        *self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(whole);
    }

    fn monitor(&self) -> &Arc<MonitorState> {
        &self.extension.monitor.0
    }

    /// The session a call should use: the current one, or, when its child
    /// exited, a fresh one (one restart, shared by the calls that wait for
    /// it). A restart's failure is the call's error.
    pub(crate) async fn for_call(&self) -> Result<Arc<Session>, ExtensionError> {
        if let Some(refused) = self.refused() {
            return Err(refused);
        }
        let seen = self.attempts.load(Ordering::Acquire);
        let current = self.current();
        if !current.exited() {
            return Ok(current);
        }
        let mut last = self.restarting.lock().await;
        let current = self.current();
        if !current.exited() {
            return Ok(current);
        }
        if let Some(refused) = self.refused() {
            return Err(refused);
        }
        // Another call's restart ended while this one waited, and failed:
        // its outcome is this call's too (one start per failure, not one
        // per waiting call).
        if self.attempts.load(Ordering::Acquire) != seen
            && let Some(failed) = last.clone()
        {
            return Err(failed);
        }
        let outcome = self.restart().await;
        self.attempts.fetch_add(1, Ordering::AcqRel);
        *last = outcome.as_ref().err().cloned();
        outcome
    }

    fn refused(&self) -> Option<ExtensionError> {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Spawns a fresh child, checks it, and makes it current.
    async fn restart(&self) -> Result<Arc<Session>, ExtensionError> {
        let ext = &self.extension;
        let context = ext.context();
        let disposed = || {
            ProcessFault::Exited("the extension was disposed".to_owned())
                .to_extension_error(&context)
        };
        if self.disposed.load(Ordering::Acquire) {
            return Err(disposed());
        }
        tracing::info!(
            extension = %ext.manifest.id(),
            "restarting a process extension whose child exited"
        );
        let (session, transport, bridge) = ext.spawn_child(&context)?;
        // Never cancelled: a call that stops waiting drops this future, and
        // with it the fresh child's guard, which kills its group.
        let never = tokio_util::sync::CancellationToken::new();
        let started = ext
            .handshake(&session, transport, bridge.as_ref(), self.startup, &never)
            .await?;
        let (tools, offered) = &started.listed;
        let whole = super::whole_tools(tools);
        if let Err(refusal) = ext.check_listing(tools, &whole, offered, &context, true) {
            session.kill_now().await;
            self.monitor().stopped(Some(ShutdownOutcome::Killed));
            *self.refused.lock().unwrap_or_else(PoisonError::into_inner) = Some(refusal.clone());
            return Err(refusal);
        }
        if self.disposed.load(Ordering::Acquire) {
            session.kill_now().await;
            return Err(disposed());
        }
        let registered = self
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let changed = tool_keys_of(&registered) != tool_keys_of(&whole);
        self.monitor().set_listed(whole);
        self.monitor().set_offerings(offered.clone());
        let signals = ext.go_live(
            &session,
            started.service,
            started.signals,
            bridge,
            self.host.clone(),
            self.startup,
        );
        let old = std::mem::replace(
            &mut *self.session.lock().unwrap_or_else(PoisonError::into_inner),
            session.clone(),
        );
        if old.release() {
            old.kill_now().await;
        }
        // Nothing pinned and a different tool set: the watcher swaps a
        // generation with the new set in (P-4), as after `list_changed`.
        if changed {
            let _ = signals.send(());
        }
        resubscribe(&session, self.monitor(), self.startup).await;
        Ok(session)
    }

    /// The generation's cleanup: nothing starts from now on; a restart
    /// under way ends first; then the current child's lease is given back,
    /// and the last lease shuts it down (P-3).
    pub(crate) async fn dispose(&self, grace: Duration) {
        self.disposed.store(true, Ordering::Release);
        let _held = self.restarting.lock().await;
        let session = self.current();
        if session.release() {
            let pid = session.pid();
            let outcome = session.shutdown(grace).await;
            // A later child (a reload after a crash) may already be the
            // monitor's: only the current one's outcome is recorded.
            if outcome.is_some() && pid == self.monitor().current_pid() {
                self.monitor().stopped(outcome);
            }
        }
    }
}

impl Restarting for Live {
    fn for_call(&self) -> BoxFuture<'_, Result<Arc<Session>, ExtensionError>> {
        Box::pin(Live::for_call(self))
    }
}

/// Subscribes the fresh child to the resources the program subscribed to
/// on the one before (`resources/subscribe` through
/// [`ProcessMonitor::request`](super::ProcessMonitor::request)), within
/// `deadline` in all; a refusal is logged and the subscription forgotten.
pub(super) async fn resubscribe(session: &Session, monitor: &MonitorState, deadline: Duration) {
    let uris = monitor.subscriptions();
    if uris.is_empty() {
        return;
    }
    let Ok(peer) = session.peer() else {
        return;
    };
    let all = async {
        for uri in uris {
            let request =
                rmcp::model::ClientRequest::CustomRequest(rmcp::model::CustomRequest::new(
                    "resources/subscribe",
                    Some(serde_json::json!({"uri": uri})),
                ));
            if let Err(e) = peer.send_request(request).await {
                tracing::warn!(
                    extension = %session.extension,
                    uri = %super::escape_text(&uri),
                    "the restarted server refused a subscription: {}",
                    super::bounded(&e.to_string())
                );
                monitor.forget_subscription(&uri);
            }
        }
    };
    if tokio::time::timeout(deadline, all).await.is_err() {
        tracing::warn!(
            extension = %session.extension,
            "the restarted server did not take its subscriptions back within {} ms",
            deadline.as_millis()
        );
    }
}
