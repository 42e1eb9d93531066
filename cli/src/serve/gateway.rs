//! The MCP server side of `exthost serve` (P-6): rmcp's `ServerHandler`
//! over one [`ExtensionHost`]. Listing reads a snapshot and starts nothing;
//! a call starts only the owning extension, through the host's
//! transactional path (`call_tool_activating`, H-4, M-4), and proxies the
//! call; the client's cancellation and progress token travel with it.
//!
//! A backend whose process exited (it crashed, or was stopped when idle)
//! is restarted by the process runtime at its next call
//! (`exthost::process`, docs/process.md), not here: `serve` only waits for
//! an idle stop under way to end before a call goes through.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use exthost::CancellationToken;
use exthost::core::Status;
use exthost::host::{CallOptions, ExtensionHost, Progress};
use rmcp::model::{
    CallToolResult, ErrorCode, JsonObject, ProgressNotificationParam, ProgressToken,
};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Value, json};

use super::answer;
use super::listing::{close_names, find, owner_of};
use super::log::Log;
use super::shape::Shape;

/// How `tools/list` presents the host's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Expose {
    /// Every tool, with its schema, under its API name (M-6).
    Tools,
    /// Three meta-tools: search the tools, describe one, call one.
    Catalog,
}

/// Progress reports a slow client has not taken yet, per call; more are
/// dropped (progress is advisory).
const PROGRESS_BUFFER: usize = 64;

/// The default of `--max-calls-in-flight`.
pub(crate) const DEFAULT_MAX_CALLS_IN_FLIGHT: u32 = 128;

/// The JSON-RPC error code of a call refused because the session already
/// has its limit of calls in flight (in the range JSON-RPC leaves to
/// servers); `data.code` is [`TOO_MANY_CALLS`].
pub(crate) const TOO_MANY_CALLS_RPC_CODE: i32 = -32030;
/// The stable code in such an error's `data.code`.
pub(crate) const TOO_MANY_CALLS: &str = "TOO_MANY_CALLS_IN_FLIGHT";

/// The error of a call over the limit of `max` calls in flight.
pub(crate) fn too_many_calls(max: usize) -> McpError {
    McpError::new(
        ErrorCode(TOO_MANY_CALLS_RPC_CODE),
        format!(
            "{TOO_MANY_CALLS}: this session already has {max} tool calls in flight; \
             retry once one has answered (exthost serve --max-calls-in-flight)"
        ),
        Some(json!({"code": TOO_MANY_CALLS, "limit": max})),
    )
}

/// The gateway: the host and what `serve` remembers between calls.
#[derive(Clone)]
pub(crate) struct Gateway {
    pub(crate) host: ExtensionHost,
    pub(crate) expose: Expose,
    pub(crate) warm: bool,
    pub(crate) log: Log,
    /// One gate per extension: its idle stop runs under it, and a call
    /// passes it before it goes through.
    gates: Arc<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
    /// One permit per call in flight, `max_calls` in all.
    pub(crate) calls: Arc<tokio::sync::Semaphore>,
    pub(crate) max_calls: usize,
    /// Set once the session with the client ended: failing calls are
    /// counted, not logged one by one.
    ending: Arc<AtomicBool>,
    /// Calls that ended cancelled or cut off by the end of the session.
    abandoned: Arc<AtomicU64>,
    /// The whole tools and which are shown.
    pub(crate) shape: Arc<Shape>,
    /// Calls in flight per extension, for the idle stop (`idle.rs`).
    pub(crate) idle: Arc<super::busy::Idle>,
    /// Extensions whose listed tools' other fields (title, annotations,
    /// output schema, ...) differed from their declarations: like a grant
    /// revoked by the host (M-5), they stay stopped for the session.
    pub(crate) revoked: Arc<Mutex<HashSet<String>>>,
    /// The client's capabilities, forwarded (`capabilities.rs`).
    pub(crate) bridge: exthost::process::ClientBridge,
}

/// The stable code of a call of a hidden tool (in the JSON-RPC error's
/// `data.code`; the JSON-RPC code is `-32602`, as for an unknown tool).
pub(crate) const TOOL_HIDDEN: &str = "TOOL_HIDDEN";

impl Gateway {
    pub(crate) fn new(
        host: ExtensionHost,
        expose: Expose,
        warm: bool,
        log: Log,
        max_calls: usize,
        shape: Arc<Shape>,
    ) -> Self {
        Self {
            host,
            expose,
            warm,
            log,
            gates: Arc::default(),
            calls: Arc::new(tokio::sync::Semaphore::new(max_calls)),
            max_calls,
            ending: Arc::default(),
            abandoned: Arc::default(),
            shape,
            idle: Arc::default(),
            revoked: Arc::default(),
            bridge: crate::offering::bridge(),
        }
    }

    /// The gate of extension `id`: its idle stop runs under it.
    pub(crate) fn gate(&self, id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = self
            .gates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        gates.entry(id.to_owned()).or_default().clone()
    }

    /// Waits for an idle stop of `id` under way to end, so that a call
    /// never meets a stopping backend (the caller holds its [`Busy`]
    /// guard already, so no stop starts after this). The process runtime
    /// restarts a backend that exited at the call itself.
    ///
    /// [`Busy`]: super::busy::Busy
    pub(crate) async fn wait_for_stop(&self, id: &str) {
        drop(self.gate(id).lock().await);
    }

    /// The session with the client ended: from now on failing calls are
    /// only counted.
    pub(crate) fn end_session(&self) {
        self.ending.store(true, Ordering::Release);
    }

    /// Waits (at most `limit`) for the calls still in flight to settle,
    /// then returns how many calls were abandoned (cancelled, or cut off
    /// by the end of the session).
    pub(crate) async fn abandoned_calls(&self, limit: std::time::Duration) -> u64 {
        let every = u32::try_from(self.max_calls).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(limit, self.calls.acquire_many(every)).await;
        self.abandoned.load(Ordering::Acquire)
    }

    /// Calls the tool a client named (API or runtime name), starting its
    /// extension if it is dormant.
    pub(crate) async fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        cancel: CancellationToken,
        progress: Option<(ProgressToken, Peer<RoleServer>)>,
    ) -> Result<CallToolResult, McpError> {
        let snapshot = self.host.tools();
        let Some(info) = find(&snapshot, name) else {
            let close = close_names(&snapshot, &self.shape, name);
            return Err(McpError::invalid_params(
                format!(
                    "TOOL_NOT_FOUND: no tool named {name:?}{}",
                    if close.is_empty() {
                        String::new()
                    } else {
                        format!("; close names: {}", close.join(", "))
                    }
                ),
                Some(json!({"code": "TOOL_NOT_FOUND", "closeNames": close})),
            ));
        };
        if let Some(hidden) = self.shape.hidden(&info) {
            return Err(McpError::invalid_params(
                format!(
                    "{TOOL_HIDDEN}: the tool {:?} is hidden from this client: {}",
                    info.api_name,
                    hidden.describe()
                ),
                Some(json!({"code": TOOL_HIDDEN, "tool": info.api_name, "hiddenBy": hidden.by})),
            ));
        }
        let runtime_name = info.name.to_owned();
        let api_name = info.api_name.to_owned();
        let extension = owner_of(&info);
        drop(snapshot);

        if let Some(id) = &extension
            && self.revoked.lock().is_ok_and(|r| r.contains(id))
        {
            return Ok(answer::revoked(&api_name, id));
        }

        // Held until the call has answered: an idle stop never meets it.
        let _busy = extension.as_deref().map(|id| self.idle.enter(id));
        if let Some(id) = &extension {
            self.wait_for_stop(id).await;
        }
        // A backend whose process exited is restarted by this call (the
        // process runtime does it); the log says so.
        let exited = extension.as_deref().and_then(|id| {
            let monitor = self.shape.monitor(id)?;
            let was = monitor.pid()?;
            (self.host.status(id) == Some(Status::Active) && !monitor.running()).then_some((
                id.to_owned(),
                monitor,
                was,
            ))
        });

        let cancelled = cancel.clone();
        let mut options = CallOptions::new().with_cancellation(cancel);
        if let Some((token, peer)) = progress {
            let (sender, mut receiver) = tokio::sync::mpsc::channel::<Progress>(PROGRESS_BUFFER);
            options = options.with_progress(move |p| {
                let _ = sender.try_send(p);
            });
            tokio::spawn(async move {
                while let Some(p) = receiver.recv().await {
                    let mut param = ProgressNotificationParam::new(token.clone(), p.progress);
                    param.total = p.total;
                    param.message = p.message;
                    if peer.notify_progress(param).await.is_err() {
                        return;
                    }
                }
            });
        }
        let input = Value::Object(arguments.unwrap_or_default());
        let outcome = self
            .host
            .call_tool_activating_with(&runtime_name, input, options)
            .await;
        if let Some((id, monitor, was)) = exited
            && monitor.running()
            && let Some(now) = monitor.pid().filter(|now| *now != was)
        {
            self.log.line(&format!(
                "restarted extension {id:?} (pid {now}): its process (pid {was}) had exited"
            ));
        }
        match outcome {
            Ok(output) => Ok(answer::from_output(output)),
            Err(e) => {
                if cancelled.is_cancelled()
                    || self.ending.load(Ordering::Acquire)
                    || matches!(e, exthost::host::HostError::Disposed)
                {
                    // One count at shutdown, not a line per call.
                    self.abandoned.fetch_add(1, Ordering::AcqRel);
                } else {
                    self.log.line(&format!("call {api_name}: {e}"));
                }
                let drifted = extension.as_deref().and_then(|id| {
                    let cause = e.cause_code()?;
                    let tool = self
                        .shape
                        .drifted_tool(id, cause)
                        .or_else(|| self.shape.drifted_item(id, cause))?;
                    if let Ok(mut revoked) = self.revoked.lock() {
                        revoked.insert(id.to_owned());
                    }
                    Some((cause, tool))
                });
                Ok(answer::from_error_with(
                    &api_name,
                    extension.as_deref(),
                    &e,
                    drifted,
                ))
            }
        }
    }

    /// `--warm`: starts every extension not started yet, one after
    /// another, in discovery order.
    pub(crate) fn warm_up(&self) {
        let gateway = self.clone();
        tokio::spawn(async move {
            for extension in gateway.host.extensions() {
                if extension.status != Status::Discovered {
                    continue;
                }
                if let Err(e) = gateway.host.activate(&extension.id).await {
                    gateway
                        .log
                        .line(&format!("warm start of {:?} failed: {e}", extension.id));
                }
            }
        });
    }
}
