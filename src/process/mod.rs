//! Process extensions (docs/spec.md section 5): any Model Context Protocol server
//! that speaks over stdio, hosted as an extension with the host's
//! guarantees.
//!
//! A [`ProcessExtension`] is an ordinary [`Extension`]: its factory spawns
//! nothing (P-1); its `activate` spawns the child, runs the handshake and
//! `tools/list` (P-2) on the official Rust SDK (`rmcp`), and registers one
//! proxy tool per listed tool, one hook forwarding the subscribed events as
//! `exthost/event` notifications, and the disposer that shuts the child down
//! (P-3). The host core then stages, checks the declarations (M-5), commits
//! once or rolls back in reverse order, so every failure kills the child.
//!
//! P-4: when the server announces a changed tool list, the watcher
//! (`list_changed.rs`) swaps the new set in through
//! [`ExtensionHost::reload`](crate::host::ExtensionHost::reload). A
//! generation activated while the latest child still serves runs on that
//! child (it lists again, it does not respawn); each generation holds a
//! lease on the session, and only the disposer giving back the last lease
//! shuts the child down.
//!
//! P-3: a child that exited while its extension is active is started again
//! by the next call that needs it (`restart.rs`), checked against the
//! declarations like an activation.
//!
//! See `docs/process.md` for the lifecycle, the deadlines and what the
//! child may see.

mod abandon;
mod bridge;
mod client;
pub mod containment;
mod error;
mod forward;
mod group;
pub mod lines;
mod list_changed;
mod listing;
mod monitor;
mod offerings;
mod progress;
mod proxy;
mod restart;
mod shutdown;
mod spawn;
mod stderr;
mod transport;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{ClientNotification, CustomNotification};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::host::{
    ActivationContext, BoxFuture, DiscoveredManifest, Event, Extension, ExtensionDefinition,
    ExtensionError, InProcessFactories, ManifestRuntime, RuntimeView, ToolDescriptor,
};
use crate::manifest::{Manifest, ProcessRuntime, Runtime};

pub use bridge::{
    CLIENT_NOT_CONNECTED, CLIENT_NOT_CONNECTED_RPC_CODE, ClientBridge, FORWARDED_METHODS, Refusal,
    Upstream,
};
pub use client::client_info;
pub use error::{
    MAX_QUOTED_BYTES, ProcessFault, bounded, escape_json_text, escape_text, quote_prefix,
};
pub use listing::{MAX_LIST_BYTES, MAX_LIST_PAGES, MAX_LISTED_TOOLS};
pub use monitor::{ListChange, MAX_KEPT_SUBSCRIPTIONS, ProcessMonitor};
pub use offerings::{PROXIED_METHODS, RequestError};
pub use shutdown::ShutdownOutcome;
pub use spawn::{BASE_ENV_ALLOW_LIST, child_environment, resolve_program};
pub use stderr::{MAX_STDERR_KEPT, STDERR_TAIL_BYTES, StderrDiagnostic};
pub use transport::{
    MAX_LINE_BYTES, MAX_REFUSED_SERVER_REQUESTS, MAX_SERVER_ANSWER_BYTES,
    MAX_SERVER_REQUESTS_IN_FLIGHT, STDIN_WRITE_DEADLINE,
};

/// Spawn, handshake and tool listing must finish within this unless the
/// manifest sets `runtime.startupTimeoutMs`.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Disposal waits this long after closing stdin, and again after SIGTERM,
/// unless the manifest sets `runtime.shutdownTimeoutMs`.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Delivering one event notification must finish within this unless the
/// manifest sets `runtime.callTimeoutMs`.
pub const DEFAULT_EVENT_TIMEOUT: Duration = Duration::from_secs(5);
/// The JSON-RPC method of forwarded host events; params `{name, payload}`.
pub const EVENT_METHOD: &str = "exthost/event";

/// The timeouts of one process extension (the manifest's `runtime.*TimeoutMs`,
/// or the defaults); the host's own deadlines are `exthost_core::Deadlines`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessTimeouts {
    /// Spawn, `initialize`, `notifications/initialized` and every
    /// `tools/list` page, together.
    pub startup: Duration,
    /// Each `tools/call`: the extension's call deadline, which the host
    /// times ([`definition`] sets it with
    /// [`ExtensionDefinition::with_call_deadline`]); `None` leaves the
    /// host's. Also the bound of each forwarded event, else
    /// [`DEFAULT_EVENT_TIMEOUT`].
    pub call: Option<Duration>,
    /// Each of the two waits of disposal (after closing stdin, after
    /// SIGTERM).
    pub shutdown_grace: Duration,
}

impl ProcessTimeouts {
    /// The timeouts of a `process` manifest; `None` for another runtime.
    pub fn of_manifest(manifest: &Manifest) -> Option<Self> {
        match manifest.runtime() {
            Runtime::Process(runtime) => Some(Self::of(runtime)),
            Runtime::InProcess => None,
        }
    }

    /// The manifest's values, or the defaults.
    pub fn of(runtime: &ProcessRuntime) -> Self {
        let ms = Duration::from_millis;
        Self {
            startup: runtime
                .startup_timeout_ms()
                .map_or(DEFAULT_STARTUP_TIMEOUT, ms),
            call: runtime.call_timeout_ms().map(ms),
            shutdown_grace: runtime
                .shutdown_timeout_ms()
                .map_or(DEFAULT_SHUTDOWN_GRACE, ms),
        }
    }
}

/// One MCP stdio server as an extension. Made by its definition's factory
/// at each activation attempt; spawns nothing until `activate`.
#[derive(Clone)]
pub struct ProcessExtension {
    manifest: Arc<Manifest>,
    runtime: ProcessRuntime,
    folder: PathBuf,
    monitor: ProcessMonitor,
}

impl std::fmt::Debug for ProcessExtension {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessExtension")
            .field("id", &self.manifest.id())
            .field("folder", &self.folder)
            .finish_non_exhaustive()
    }
}

impl ProcessExtension {
    /// The extension of a `process` manifest whose folder is `folder`, or
    /// `None` for another runtime.
    pub fn new(
        manifest: &Manifest,
        folder: impl Into<PathBuf>,
        monitor: ProcessMonitor,
    ) -> Option<Self> {
        let Runtime::Process(runtime) = manifest.runtime() else {
            return None;
        };
        Some(Self {
            manifest: Arc::new(manifest.clone()),
            runtime: runtime.clone(),
            folder: folder.into(),
            monitor,
        })
    }
}

/// The `process` runtime (P-1): MCP stdio servers as extensions. It
/// registers itself in the registry of runtimes, [`InProcessFactories::new`];
/// the host never names it.
#[derive(Debug, Clone, Copy, Default)]
pub struct McpProcessRuntime;

impl ManifestRuntime for McpProcessRuntime {
    fn definition(
        &self,
        manifest: &Manifest,
        folder: &Path,
    ) -> Option<(ExtensionDefinition, Option<RuntimeView>)> {
        definition(manifest, folder)
            .map(|(definition, monitor)| (definition, Some(RuntimeView::new(monitor))))
    }
}

impl InProcessFactories {
    /// No factories, and the built-in runtimes: the `process` runtime
    /// ([`McpProcessRuntime`]).
    pub fn new() -> Self {
        Self::without_runtimes().with_runtime(McpProcessRuntime)
    }
}

impl DiscoveredManifest {
    /// For a `process` runtime, the view of its children (pid, bounded
    /// stderr, shutdown outcome, `list_changed` outcomes).
    pub fn process(&self) -> Option<ProcessMonitor> {
        self.runtime.as_ref()?.get::<ProcessMonitor>().cloned()
    }
}

/// The definition of a `process` manifest found in `folder`, with the
/// monitor of its children; `None` for another runtime.
pub fn definition(
    manifest: &Manifest,
    folder: &Path,
) -> Option<(ExtensionDefinition, ProcessMonitor)> {
    if !matches!(manifest.runtime(), Runtime::Process(_)) {
        return None;
    }
    let monitor = ProcessMonitor::default();
    let (m, f, mon) = (manifest.clone(), folder.to_path_buf(), monitor.clone());
    let factory = move || {
        ProcessExtension::new(&m, f.clone(), mon.clone())
            .ok_or_else(|| ExtensionError::new("not a process runtime"))
    };
    let mut definition = ExtensionDefinition::from_manifest(manifest, factory);
    // One call deadline: the manifest's `callTimeoutMs` bounded by the
    // host's call deadline (H-12), timed by the host like any extension's;
    // without it the host's call deadline applies.
    if let Some(call) = ProcessTimeouts::of_manifest(manifest).and_then(|t| t.call) {
        definition = definition.with_call_deadline_at_most(call);
    }
    Some((definition, monitor))
}

fn host_error(context: &str, e: crate::host::HostError) -> ExtensionError {
    ExtensionError::new(format!("{context}: {e}"))
}

/// What a fresh child's handshake gives: its rmcp service, the sender and
/// receiver of its `list_changed` signals, and its listings.
pub(crate) struct Started {
    pub(crate) service: rmcp::service::RunningService<rmcp::RoleClient, client::Handler>,
    pub(crate) signals: (mpsc::UnboundedSender<()>, mpsc::UnboundedReceiver<()>),
    pub(crate) listed: (Vec<rmcp::model::Tool>, offerings::Offerings),
}

/// A listing, whole, as MCP JSON objects in the server's order.
pub(crate) fn whole_tools(tools: &[rmcp::model::Tool]) -> Vec<Value> {
    tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
        .collect()
}

impl ProcessExtension {
    /// "process extension <id>", the start of every error text.
    pub(crate) fn context(&self) -> String {
        format!("process extension {:?}", self.manifest.id())
    }

    async fn start(&self, cx: ActivationContext) -> Result<(), ExtensionError> {
        let context = self.context();
        let deadlines = ProcessTimeouts::of(&self.runtime);
        // P-4: a generation started while the latest child still serves (a
        // `list_changed` swap, or an explicit reload) runs on that child:
        // it lists again and registers fresh proxies on the same session.
        if let Some(session) = self.monitor.0.reuse_session() {
            return self.start_on(cx, session, &context, deadlines).await;
        }
        let (session, transport, bridge) = self.spawn_child(&context)?;
        let live = Arc::new(restart::Live::new(
            self.clone(),
            session.clone(),
            cx.host_handle(),
            deadlines.startup,
        ));

        // The disposer first: a later failure, a cancellation or a deadline
        // rolls back through it, so the child never outlives a failed start.
        self.on_dispose_release(&cx, &live, deadlines, &context)?;

        let started = self
            .handshake(
                &session,
                transport,
                bridge.as_ref(),
                deadlines.startup,
                cx.cancellation(),
            )
            .await?;
        self.go_live(
            &session,
            started.service,
            started.signals,
            bridge,
            cx.host_handle(),
            deadlines.startup,
        );
        // A fresh child of a generation that starts anew (a reload after
        // the child exited, or a redefinition whose monitor adopted the
        // old one's subscriptions) takes the subscriptions still held.
        restart::resubscribe(&session, &self.monitor.0, deadlines.startup).await;
        self.register_generation(&cx, &live, &started.listed, &context)
    }

    /// Spawns a child (P-1) with its bounded stderr, its transport and its
    /// session, the leader watched from now on; the monitor records it.
    pub(crate) fn spawn_child(
        &self,
        context: &str,
    ) -> Result<
        (
            Arc<client::Session>,
            transport::StdioTransport,
            Option<ClientBridge>,
        ),
        ExtensionError,
    > {
        let id = self.manifest.id().to_owned();
        let spawned =
            spawn::spawn(&self.runtime, &self.folder).map_err(|f| f.to_extension_error(context))?;
        let stderr_log = Arc::new(Mutex::new(stderr::StderrDiagnostic::default()));
        stderr::capture(spawned.stderr, stderr_log.clone());
        self.monitor.0.started(spawned.child.pid(), stderr_log);
        let fault = transport::FaultCell::default();
        let bridge = self.monitor.client_bridge();
        let forwarder = bridge.as_ref().map(|b| {
            Box::new(forward::Forwarder::new(
                b.clone(),
                id.clone(),
                fault.token(),
            )) as Box<dyn transport::ServerRequests>
        });
        let transport =
            transport::StdioTransport::new(spawned.stdout, spawned.stdin, fault.clone(), forwarder);
        let session = Arc::new(client::Session::new(
            id,
            spawned.child,
            transport.closer(),
            fault,
        ));
        session.watch_leader();
        Ok((session, transport, bridge))
    }

    /// `initialize`, `notifications/initialized` and every listing on a
    /// fresh child, within `startup`. On failure the group is killed at
    /// once and the error quotes the end of its stderr; on `cancel` the
    /// error says so and the child is left to the disposer.
    pub(crate) async fn handshake(
        &self,
        session: &Arc<client::Session>,
        transport: transport::StdioTransport,
        bridge: Option<&ClientBridge>,
        startup: Duration,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Started, ExtensionError> {
        let context = self.context();
        let (signals_tx, signals_rx) = mpsc::unbounded_channel();
        let handler = client::Handler {
            list_changed: signals_tx.clone(),
            progress: session.progress.clone(),
            bridge: bridge.cloned().map(|b| (b, self.manifest.id().to_owned())),
        };
        let handshake = async {
            let service = rmcp::serve_client(handler, transport).await.map_err(|e| {
                session.fault.get().unwrap_or_else(|| {
                    ProcessFault::Protocol(format!(
                        "the handshake failed: {}",
                        bounded(&e.to_string())
                    ))
                })
            })?;
            let tools = listing::list_all_tools(service.peer())
                .await
                .map_err(|e| session.list_fault(e))?;
            let offered = offerings::list_offerings(service.peer())
                .await
                .map_err(|e| session.list_fault(e))?;
            Ok::<_, ProcessFault>((service, (tools, offered)))
        };
        let started = tokio::select! {
            started = tokio::time::timeout(startup, handshake) => started,
            _ = cancel.cancelled() => {
                return Err(ExtensionError::new(format!("{context}: activation cancelled")));
            }
        };
        let fault = match started {
            Ok(Ok((service, listed))) => {
                return Ok(Started {
                    service,
                    signals: (signals_tx, signals_rx),
                    listed,
                });
            }
            Ok(Err(fault)) => fault,
            Err(_) => ProcessFault::Timeout(format!(
                "the server did not finish the handshake and tools/list within {} ms",
                startup.as_millis()
            )),
        };
        session.kill_now().await;
        self.monitor.0.stopped(Some(ShutdownOutcome::Killed));
        Err(self.with_stderr(fault.to_extension_error(&context)))
    }

    /// A child that finished its handshake serves: the session keeps its
    /// service, the monitor and the bridge know it, and its `list_changed`
    /// watcher runs (P-4). Returns the sender of its watcher's signals.
    pub(crate) fn go_live(
        &self,
        session: &Arc<client::Session>,
        service: rmcp::service::RunningService<rmcp::RoleClient, client::Handler>,
        (signals_tx, signals_rx): (mpsc::UnboundedSender<()>, mpsc::UnboundedReceiver<()>),
        bridge: Option<ClientBridge>,
        host: crate::host::HostHandle,
        startup: Duration,
    ) -> mpsc::UnboundedSender<()> {
        session.attach(service);
        self.monitor.0.set_session(session);
        if let Some(bridge) = &bridge {
            bridge.register(Arc::downgrade(session) as std::sync::Weak<dyn bridge::RunningServer>);
        }
        list_changed::Watcher {
            session: Arc::downgrade(session),
            host,
            extension: self.manifest.id().to_owned(),
            monitor: self.monitor.0.clone(),
            deadline: startup,
        }
        .spawn(session.stop.clone(), signals_rx);
        signals_tx
    }

    /// A generation on the running child (P-4): one lease taken (by the
    /// caller), the disposer that gives it back, a fresh `tools/list`, and
    /// fresh proxies and hook on the same session. A failure rolls back
    /// through the disposer, which leaves the child to the generations
    /// still holding it.
    async fn start_on(
        &self,
        cx: ActivationContext,
        session: Arc<client::Session>,
        context: &str,
        deadlines: ProcessTimeouts,
    ) -> Result<(), ExtensionError> {
        let live = Arc::new(restart::Live::new(
            self.clone(),
            session.clone(),
            cx.host_handle(),
            deadlines.startup,
        ));
        if let Err(e) = self.on_dispose_release(&cx, &live, deadlines, context) {
            if session.release() {
                session.shutdown(deadlines.shutdown_grace).await;
            }
            return Err(e);
        }
        let peer = session.peer().map_err(|f| f.to_extension_error(context))?;
        let both = async {
            let tools = listing::list_all_tools(&peer).await?;
            let offered = offerings::list_offerings(&peer).await?;
            Ok((tools, offered))
        };
        let listed = tokio::select! {
            listed = tokio::time::timeout(deadlines.startup, both) => listed,
            _ = cx.cancellation().cancelled() => {
                return Err(ExtensionError::new(format!("{context}: activation cancelled")));
            }
        };
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(e)) => return Err(session.list_fault(e).to_extension_error(context)),
            Err(_) => {
                return Err(ProcessFault::Timeout(format!(
                    "the server did not answer tools/list within {} ms",
                    deadlines.startup.as_millis()
                ))
                .to_extension_error(context));
            }
        };
        self.register_generation(&cx, &live, &tools, context)
    }

    /// Registers the disposer of one generation: it gives the generation's
    /// lease back, and the last lease shuts the child down (P-3).
    fn on_dispose_release(
        &self,
        cx: &ActivationContext,
        live: &Arc<restart::Live>,
        deadlines: ProcessTimeouts,
        context: &str,
    ) -> Result<(), ExtensionError> {
        let (live, grace) = (live.clone(), deadlines.shutdown_grace);
        cx.on_dispose(move || async move {
            live.dispose(grace).await;
            Ok(())
        })
        .map_err(|e| host_error(context, e))
    }

    /// The checks of a listing beyond the host's own: every other field of
    /// each declared tool, and the pinned prompts, resources and templates
    /// (M-5). With `tools_too`, the declared names, descriptions and input
    /// schemas as well (the host checks those at an activation, but not at
    /// a restart, which it does not see).
    pub(crate) fn check_listing(
        &self,
        tools: &[rmcp::model::Tool],
        whole: &[Value],
        offered: &offerings::Offerings,
        context: &str,
        tools_too: bool,
    ) -> Result<(), ExtensionError> {
        if tools_too && !self.manifest.declared_tools().is_empty() {
            let schemas: Vec<Value> = tools
                .iter()
                .map(|t| Value::Object((*t.input_schema).clone()))
                .collect();
            let registered = registered_tools(tools, &schemas);
            self.manifest
                .match_registered_tools(&registered)
                .map_err(|mismatch| {
                    ExtensionError::coded(
                        mismatch.reason_code(),
                        format!(
                            "{context}: the restarted server does not list its declared tools: {}; \
                             review the change, then run `exthost lock` to accept it",
                            escape_text(mismatch.message())
                        ),
                    )
                })?;
        }
        self.check_tool_fields(tools, whole, context)?;
        offerings::check_offerings(&self.manifest, offered).map_err(|mismatch| {
            ExtensionError::coded(
                mismatch.reason_code(),
                format!("{context}: {}", escape_text(mismatch.message())),
            )
        })
    }

    /// One proxy per listed tool and the event hook, on `live`.
    fn register_generation(
        &self,
        cx: &ActivationContext,
        live: &Arc<restart::Live>,
        (tools, offered): &(Vec<rmcp::model::Tool>, offerings::Offerings),
        context: &str,
    ) -> Result<(), ExtensionError> {
        let whole = whole_tools(tools);
        let checked = self.check_listing(tools, &whole, offered, context, false);
        self.monitor.0.set_listed(whole.clone());
        self.monitor.0.set_offerings(offered.clone());
        checked?;
        live.set_registered(whole);
        self.monitor
            .0
            .set_live(Arc::downgrade(live) as std::sync::Weak<dyn monitor::Restarting>);
        for tool in tools {
            let descriptor = ToolDescriptor::new(
                tool.name.to_string(),
                tool.description.as_deref().unwrap_or_default(),
                Value::Object((*tool.input_schema).clone()),
            );
            let proxy = proxy::ProxyTool {
                live: live.clone(),
                name: tool.name.to_string(),
            };
            cx.register_tool(descriptor, proxy)
                .map_err(|e| host_error(context, e))?;
        }

        if !self.manifest.hooks().is_empty() {
            let subscribed: Arc<Vec<String>> = Arc::new(self.manifest.hooks().to_vec());
            let l = live.clone();
            let limit = ProcessTimeouts::of(&self.runtime)
                .call
                .unwrap_or(DEFAULT_EVENT_TIMEOUT);
            cx.on_event(move |event: Arc<Event>| {
                let (session, subscribed) = (l.current(), subscribed.clone());
                async move { forward_event(&session, &subscribed, &event, limit).await }
            })
            .map_err(|e| host_error(context, e))?;
        }
        Ok(())
    }

    /// M-5 beyond the name, description and input schema: when the listing
    /// passes the host's declaration match (which runs after registration
    /// and reports its own reason otherwise), every other field of each
    /// declared tool (`title`, `annotations`, `outputSchema`, `icons`,
    /// `_meta`) must equal the listed one. A difference fails the
    /// activation with the field's reason code
    /// ([`FieldMismatch`](crate::manifest::FieldMismatch)), so the child is
    /// rolled back like any failed start.
    fn check_tool_fields(
        &self,
        tools: &[rmcp::model::Tool],
        whole: &[Value],
        context: &str,
    ) -> Result<(), ExtensionError> {
        let declared = self.manifest.declared_tools();
        if declared.is_empty() {
            return Ok(());
        }
        let schemas: Vec<Value> = tools
            .iter()
            .map(|t| Value::Object((*t.input_schema).clone()))
            .collect();
        let registered = registered_tools(tools, &schemas);
        if self.manifest.match_registered_tools(&registered).is_err() {
            // The host's own check reports it, with its reason.
            return Ok(());
        }
        crate::manifest::match_tool_fields(declared, whole).map_err(|mismatch| {
            ExtensionError::coded(
                mismatch.reason_code(),
                format!(
                    "{context}: {} (tool {:?}); review the change, then run `exthost lock` to accept it",
                    escape_text(mismatch.message()),
                    mismatch.tool()
                ),
            )
        })
    }

    /// Adds the last [`STDERR_TAIL_BYTES`] of the child's stderr,
    /// escaped ([`escape_text`]), to an activation error: a program's own
    /// hint about why it failed comes last.
    fn with_stderr(&self, error: ExtensionError) -> ExtensionError {
        let log = self.monitor.stderr();
        if log.total_bytes == 0 {
            return error;
        }
        let what = if log.total_bytes > log.tail.len() as u64 {
            format!(
                "stderr ({} bytes, the last {})",
                log.total_bytes,
                log.tail.len()
            )
        } else {
            format!("stderr ({} bytes)", log.total_bytes)
        };
        let text = format!(
            "{}; {what}: \"{}\"",
            error.message(),
            escape_text(&String::from_utf8_lossy(&log.tail)).replace('"', "\\\"")
        );
        match error.code() {
            Some(code) => ExtensionError::coded(code, text),
            None => ExtensionError::new(text),
        }
    }
}

/// A listing as the declarations compare it: name, description and the
/// input schema (`schemas`, one per tool, in order).
fn registered_tools<'a>(
    tools: &'a [rmcp::model::Tool],
    schemas: &'a [Value],
) -> Vec<crate::manifest::RegisteredTool<'a>> {
    tools
        .iter()
        .zip(schemas)
        .map(|(t, schema)| {
            crate::manifest::RegisteredTool::new(
                &t.name,
                t.description.as_deref().unwrap_or_default(),
                schema,
            )
        })
        .collect()
}

/// P-2: a subscribed event as an `exthost/event` notification.
async fn forward_event(
    session: &client::Session,
    subscribed: &[String],
    event: &Event,
    limit: Duration,
) -> Result<(), ExtensionError> {
    if !subscribed.contains(&event.name) {
        return Ok(());
    }
    let context = format!(
        "event {:?} to process extension {:?}",
        event.name, session.extension
    );
    let peer = session.peer().map_err(|f| f.to_extension_error(&context))?;
    let notification = ClientNotification::CustomNotification(CustomNotification::new(
        EVENT_METHOD,
        Some(json!({"name": event.name, "payload": event.payload})),
    ));
    match tokio::time::timeout(limit, peer.send_notification(notification)).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(session.fault_of(&e).to_extension_error(&context)),
        Err(_) => Err(ProcessFault::Timeout(format!(
            "the notification was not delivered within {} ms",
            limit.as_millis()
        ))
        .to_extension_error(&context)),
    }
}

impl Extension for ProcessExtension {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(self.start(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_come_from_the_manifest_or_the_defaults() {
        let (m, _) = crate::manifest::parse_manifest(
            r#"{"id":"x","runtime":{"kind":"process","command":"srv","startupTimeoutMs":1500,"callTimeoutMs":250}}"#,
        )
        .unwrap();
        let Runtime::Process(runtime) = m.runtime() else {
            panic!("a process runtime")
        };
        let d = ProcessTimeouts::of(runtime);
        assert_eq!(d.startup, Duration::from_millis(1500));
        assert_eq!(d.call, Some(Duration::from_millis(250)));
        assert_eq!(d.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
        let (m, _) = crate::manifest::parse_manifest(
            r#"{"id":"x","runtime":{"kind":"process","command":"srv"}}"#,
        )
        .unwrap();
        let Runtime::Process(runtime) = m.runtime() else {
            panic!("a process runtime")
        };
        assert_eq!(
            ProcessTimeouts::of(runtime),
            ProcessTimeouts {
                startup: DEFAULT_STARTUP_TIMEOUT,
                call: None,
                shutdown_grace: DEFAULT_SHUTDOWN_GRACE
            }
        );
    }

    #[test]
    fn the_child_environment_is_the_allow_list_only() {
        let (m, _) = crate::manifest::parse_manifest(
            r#"{"id":"x","runtime":{"kind":"process","command":"srv","env":["PATH","EXTHOST_SURELY_UNSET_VARIABLE"]}}"#,
        )
        .unwrap();
        let Runtime::Process(runtime) = m.runtime() else {
            panic!("a process runtime")
        };
        let env = child_environment(runtime);
        for (name, _) in &env {
            assert!(
                BASE_ENV_ALLOW_LIST.contains(&name.as_str()),
                "{name} is not allowed"
            );
        }
        let names: Vec<&str> = env.iter().map(|(n, _)| n.as_str()).collect();
        let unique: std::collections::BTreeSet<&str> = names.iter().copied().collect();
        assert_eq!(unique.len(), names.len(), "PATH listed once");
    }
}
