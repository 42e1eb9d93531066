//! What the embedding program can see of a process extension while the
//! host owns it: the child's pid, its bounded stderr, how its last shutdown
//! ended, and what happened at each `list_changed` (P-4); and, kept weakly,
//! the session the extension's generations share.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, Weak};

use std::time::Duration;

use rmcp::model::{ClientRequest, CustomRequest};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::abandon::CancelOnDrop;
use super::bridge::ClientBridge;
use super::client::Session;
use super::error::{ProcessFault, bounded};
use super::offerings::{PROXIED_METHODS, RequestError, result_json};
use super::shutdown::ShutdownOutcome;
use super::stderr::StderrDiagnostic;
use crate::host::{BoxFuture, ExtensionError};
use crate::manifest::ListingKind;

/// The outcome of one `notifications/tools/list_changed` (P-4). A burst
/// of announcements that arrive while one is being handled is handled once
/// more, so it records one outcome, not one per announcement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListChange {
    /// The new listing equals the live set (names, descriptions, schema
    /// digests): nothing changes, no reload.
    Unchanged,
    /// The new listing differed and one reload (H-12) swapped the listed
    /// set in on the same child: these are the tool names live now, sorted.
    Reloaded {
        /// The extension's live tool names (without the `<extension>:`
        /// prefix), sorted.
        names: Vec<String>,
    },
    /// The new listing breaks the manifest's declarations (M-5): the reload
    /// was rolled back and the old proxies stay live and untouched.
    DeclarationMismatch {
        /// The M-5 reason code.
        reason: &'static str,
        /// Why.
        message: String,
    },
    /// The reload failed for another reason (a tool name clash or an
    /// invalid name, the child failing during the re-listing, a deadline):
    /// rolled back, the old proxies stay live and untouched.
    ReloadFailed {
        /// The failure's cause code (such as `TOOL_DUPLICATE`,
        /// `TOOL_NAME_INVALID`, `EXTENSION_PROCESS_EXITED`,
        /// `EXTENSION_TIMEOUT`).
        code: &'static str,
        /// Why.
        message: String,
    },
    /// Listing again failed; the old proxies stay live.
    ListingFailed {
        /// `EXTENSION_PROCESS_EXITED`, `EXTENSION_PROTOCOL_ERROR` or
        /// `EXTENSION_TIMEOUT`.
        code: &'static str,
        /// Why.
        message: String,
    },
}

#[derive(Debug, Default)]
pub(crate) struct MonitorState {
    pid: Mutex<Option<u32>>,
    stderr: Mutex<Option<Arc<Mutex<StderrDiagnostic>>>>,
    shutdown: Mutex<Option<ShutdownOutcome>>,
    list_changes: Mutex<Vec<ListChange>>,
    /// The session of the latest child, shared by the generations of the
    /// extension that run on it (P-4). Weak: only the generations (their
    /// proxies, hook and disposer, kept by the host) keep it alive, so a
    /// monitor the embedding program keeps never keeps a child running.
    session: Mutex<Weak<Session>>,
    /// How many times a generation was started on the running child instead
    /// of a fresh one.
    reuses: Mutex<u64>,
    /// The tools of the latest `tools/list`, whole, as MCP JSON.
    listed: Mutex<Arc<Vec<serde_json::Value>>>,
    /// The prompts, resources and templates of the latest listing.
    pub(crate) offerings: Mutex<super::offerings::Offerings>,
    /// The client in front of the host, when the program gave one.
    pub(crate) bridge: Mutex<Option<super::bridge::ClientBridge>>,
    /// The latest generation's child (weak, like the session), through
    /// which a request restarts a child that exited.
    live: Mutex<Option<Weak<dyn Restarting>>>,
    /// The resources the program subscribed to through
    /// [`ProcessMonitor::request`], subscribed again on a restarted child
    /// (at most [`MAX_KEPT_SUBSCRIPTIONS`]).
    subscriptions: Mutex<BTreeSet<String>>,
}

/// A generation's child that restarts when it exited (`restart.rs`
/// implements it): the session a request should use.
pub(crate) trait Restarting: Send + Sync {
    /// The current session, or a fresh one when its child exited.
    fn for_call(&self) -> BoxFuture<'_, Result<Arc<Session>, ExtensionError>>;
}

/// At most this many subscriptions are kept to be renewed on a restarted
/// child; later ones still reach the running child, but are not renewed.
pub const MAX_KEPT_SUBSCRIPTIONS: usize = 1024;

impl MonitorState {
    /// Records the latest generation's child.
    pub(crate) fn set_live(&self, live: Weak<dyn Restarting>) {
        if let Ok(mut slot) = self.live.lock() {
            *slot = Some(live);
        }
    }

    fn live(&self) -> Option<Arc<dyn Restarting>> {
        self.live.lock().ok()?.as_ref()?.upgrade()
    }

    /// The resources to subscribe to again on a restarted child.
    pub(crate) fn subscriptions(&self) -> Vec<String> {
        self.subscriptions
            .lock()
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets a subscription (unsubscribed, or refused by a restarted
    /// child).
    pub(crate) fn forget_subscription(&self, uri: &str) {
        if let Ok(mut s) = self.subscriptions.lock() {
            s.remove(uri);
        }
    }

    fn keep_subscription(&self, uri: &str) {
        if let Ok(mut s) = self.subscriptions.lock()
            && s.len() < MAX_KEPT_SUBSCRIPTIONS
        {
            s.insert(uri.to_owned());
        }
    }

    /// The latest child's session, if it is still serving and takes one
    /// more lease for a new generation.
    pub(crate) fn reuse_session(&self) -> Option<Arc<Session>> {
        let session = self.session.lock().ok()?.upgrade()?;
        if !session.acquire() {
            return None;
        }
        if let Ok(mut n) = self.reuses.lock() {
            *n += 1;
        }
        Some(session)
    }

    /// The latest child's session, if it is still there (no lease taken).
    pub(crate) fn session(&self) -> Option<Arc<Session>> {
        self.session.lock().ok()?.upgrade()
    }

    /// Records the prompts, resources and templates of the latest listing.
    pub(crate) fn set_offerings(&self, offerings: super::offerings::Offerings) {
        if let Ok(mut slot) = self.offerings.lock() {
            *slot = offerings;
        }
    }

    /// Records the session of a freshly spawned child.
    pub(crate) fn set_session(&self, session: &Arc<Session>) {
        if let Ok(mut s) = self.session.lock() {
            *s = Arc::downgrade(session);
        }
    }

    /// The pid of the latest child, if one started.
    pub(crate) fn current_pid(&self) -> Option<u32> {
        self.pid.lock().ok().and_then(|p| *p)
    }

    pub(crate) fn started(&self, pid: Option<u32>, stderr: Arc<Mutex<StderrDiagnostic>>) {
        if let Ok(mut p) = self.pid.lock() {
            *p = pid;
        }
        if let Ok(mut s) = self.stderr.lock() {
            *s = Some(stderr);
        }
        if let Ok(mut s) = self.shutdown.lock() {
            *s = None;
        }
        if let Ok(mut changes) = self.list_changes.lock() {
            changes.clear();
        }
    }

    pub(crate) fn stopped(&self, outcome: Option<ShutdownOutcome>) {
        if let Ok(mut s) = self.shutdown.lock() {
            *s = outcome;
        }
    }

    pub(crate) fn record_list_change(&self, change: ListChange) {
        if let Ok(mut changes) = self.list_changes.lock() {
            // Bounded: a child cannot grow the host's memory by announcing.
            if changes.len() >= 64 {
                changes.remove(0);
            }
            changes.push(change);
        }
    }

    /// Records the tools of the latest listing.
    pub(crate) fn set_listed(&self, tools: Vec<serde_json::Value>) {
        if let Ok(mut listed) = self.listed.lock() {
            *listed = Arc::new(tools);
        }
    }

    /// The tools of the latest listing.
    pub(crate) fn listed(&self) -> Arc<Vec<serde_json::Value>> {
        self.listed.lock().map(|l| l.clone()).unwrap_or_default()
    }

    pub(crate) fn stderr_now(&self) -> StderrDiagnostic {
        self.stderr
            .lock()
            .ok()
            .and_then(|s| s.clone())
            .and_then(|s| s.lock().ok().map(|d| d.clone()))
            .unwrap_or_default()
    }
}

/// A read-only view of one process extension, across its activation
/// attempts, reloads and restarts (a first activation, a reload after the
/// child died, or the first call after it died starts a new child; a
/// reload while it serves reuses it, P-4).
#[derive(Debug, Clone, Default)]
pub struct ProcessMonitor(pub(crate) Arc<MonitorState>);

impl PartialEq for ProcessMonitor {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl ProcessMonitor {
    /// Takes over the resource subscriptions `from` holds (at most
    /// [`MAX_KEPT_SUBSCRIPTIONS`]), so that this monitor's next child
    /// subscribes to them again: for a new definition of the same
    /// extension (`ExtensionHost::redefine`), whose fresh child replaces
    /// the one the program subscribed through.
    pub fn adopt_subscriptions(&self, from: &ProcessMonitor) {
        for uri in from.0.subscriptions() {
            self.0.keep_subscription(&uri);
        }
    }

    /// How many resource subscriptions this monitor holds for its child
    /// (subscribed through [`ProcessMonitor::request`] and not yet
    /// unsubscribed; at most [`MAX_KEPT_SUBSCRIPTIONS`]). A program that
    /// stops idle children keeps one with subscriptions running, since a
    /// stopped child sends no `notifications/resources/updated`.
    pub fn subscription_count(&self) -> usize {
        self.0.subscriptions.lock().map_or(0, |s| s.len())
    }

    /// The pid (and process group id) of the latest child, if one started.
    pub fn pid(&self) -> Option<u32> {
        self.0.pid.lock().ok().and_then(|p| *p)
    }

    /// Whether the latest child serves: started, its handshake done, not
    /// exited, stopped or failed. An extension whose child does not run
    /// stays `active` in the host (its generation is registered); its next
    /// call or request restarts a child that exited (docs/process.md,
    /// "Restarting a child that exited").
    pub fn running(&self) -> bool {
        self.0.session().is_some_and(|s| s.serving())
    }

    /// The latest child's stderr: at most 64 KiB kept, and the byte count.
    pub fn stderr(&self) -> StderrDiagnostic {
        self.0.stderr_now()
    }

    /// How the latest child's shutdown ended, once it did.
    pub fn shutdown_outcome(&self) -> Option<ShutdownOutcome> {
        self.0.shutdown.lock().ok().and_then(|s| *s)
    }

    /// Every `list_changed` outcome of the current child, oldest first (the
    /// last 64).
    pub fn list_changes(&self) -> Vec<ListChange> {
        self.0
            .list_changes
            .lock()
            .map(|c| c.clone())
            .unwrap_or_default()
    }

    /// The tools of the latest `tools/list` the extension read (at a start,
    /// a reload or a `list_changed`), whole, as MCP JSON objects in the
    /// server's order: `name`, `title`, `description`, `inputSchema`,
    /// `outputSchema`, `annotations`, `icons`, `_meta` as the server gave
    /// them. Empty before the first listing.
    pub fn listed_tools(&self) -> Arc<Vec<serde_json::Value>> {
        self.0.listed()
    }

    /// How many generations were started on an already running child (a
    /// `list_changed` swap or an explicit reload, P-4) instead of a fresh
    /// one, over the monitor's lifetime.
    pub fn session_reuses(&self) -> u64 {
        self.0.reuses.lock().map(|n| *n).unwrap_or(0)
    }

    /// Stops the latest child, if it still runs, through the shutdown
    /// ladder of its disposal (P-3: close stdin, wait `grace`, SIGTERM the
    /// group, wait `grace`, SIGKILL the group, reap), and records how it
    /// ended. The extension's generation stays registered in the host
    /// (`active`); its next call (or [`request`](Self::request)) starts a
    /// fresh child and checks its tools against the declarations again
    /// (M-5), as after a crash. For a program that stops idle backends
    /// (`exthost serve`) and makes sure no call is in flight first. `None`
    /// when no child was running.
    pub async fn stop_child(&self, grace: std::time::Duration) -> Option<ShutdownOutcome> {
        let session = self.0.session.lock().ok()?.upgrade()?;
        let outcome = session.shutdown(grace).await;
        if outcome.is_some() && session.pid() == self.0.current_pid() {
            self.0.stopped(outcome);
        }
        outcome
    }
}

impl ProcessMonitor {
    /// Gives the extension the bridge to the client in front of the host:
    /// its next start offers the bridge's capabilities, and its server's
    /// requests and notifications for the client go through it. A server
    /// already running keeps what it was offered.
    pub fn connect_client(&self, bridge: ClientBridge) {
        if let Ok(mut slot) = self.0.bridge.lock() {
            *slot = Some(bridge);
        }
    }

    pub(crate) fn client_bridge(&self) -> Option<ClientBridge> {
        self.0.bridge.lock().ok().and_then(|b| b.clone())
    }
}

impl ProcessMonitor {
    /// The latest listing of `kind` (at a start or a reload), whole, as MCP
    /// JSON objects in the server's order; `None` before the first listing
    /// or when the server does not offer the capability.
    pub fn listed(&self, kind: ListingKind) -> Option<Arc<Vec<Value>>> {
        self.0
            .offerings
            .lock()
            .ok()
            .and_then(|o| o.get(kind).cloned().map(Arc::new))
    }

    /// Sends one request (`method` one of [`PROXIED_METHODS`], `params` its
    /// params) to the running server and returns its result as JSON. The
    /// caller's `cancel` sends `notifications/cancelled` and ends the wait;
    /// `deadline`, when given, ends it with `EXTENSION_TIMEOUT`.
    pub async fn request(
        &self,
        method: &str,
        params: Value,
        cancel: CancellationToken,
        deadline: Option<Duration>,
    ) -> Result<Value, RequestError> {
        if !PROXIED_METHODS.contains(&method) {
            return Err(RequestError::Unsupported);
        }
        // The latest generation restarts a child that exited, as for a
        // call (`restart.rs`).
        let session = match self.0.live() {
            Some(live) => live.for_call().await.map_err(RequestError::from_restart)?,
            None => self.0.session().ok_or(RequestError::NotRunning)?,
        };
        let peer = session.peer().map_err(|_| RequestError::NotRunning)?;
        let subscribed = match method {
            "resources/subscribe" | "resources/unsubscribe" => params
                .get("uri")
                .and_then(Value::as_str)
                .map(|uri| (method == "resources/subscribe", uri.to_owned())),
            _ => None,
        };
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| RequestError::Fault(session.fault_of(&e)))?;
        let mut abandon = CancelOnDrop {
            peer: peer.clone(),
            id: Some(handle.id.clone()),
        };
        let timeout = past(deadline);
        let outcome = tokio::select! {
            outcome = handle.await_response() => outcome,
            () = cancel.cancelled() => return Err(RequestError::Cancelled),
            () = timeout => {
                return Err(RequestError::Fault(ProcessFault::Timeout(format!(
                    "no answer to {method} within {} ms",
                    deadline.unwrap_or_default().as_millis()
                ))));
            }
        };
        abandon.id = None;
        match outcome {
            Ok(result) => {
                match subscribed {
                    Some((true, uri)) => self.0.keep_subscription(&uri),
                    Some((false, uri)) => self.0.forget_subscription(&uri),
                    None => {}
                }
                Ok(result_json(&result))
            }
            Err(ServiceError::McpError(data)) if session.fault.get().is_none() => {
                Err(RequestError::Server {
                    code: data.code.0,
                    message: bounded(&data.message),
                    data: data.data,
                })
            }
            Err(e) => Err(RequestError::Fault(session.fault_of(&e))),
        }
    }
}

/// Resolves once `deadline` has passed; never without one.
async fn past(deadline: Option<Duration>) {
    match deadline {
        Some(limit) => tokio::time::sleep(limit).await,
        None => std::future::pending().await,
    }
}
