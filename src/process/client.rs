//! The MCP client side of a process extension, on rmcp: the handler that
//! answers the child (client info, `notifications/tools/list_changed`), the
//! live session (the child, its transport, its rmcp service) and the
//! mapping of rmcp's errors to the three codes of docs/spec.md section 5.

use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam,
    ResourceUpdatedNotificationParam,
};
use rmcp::service::{NotificationContext, Peer, RunningService, ServiceError};
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bridge::ClientBridge;
use super::error::{ProcessFault, bounded};
use super::progress::ProgressRoutes;
use super::shutdown::{ShutdownOutcome, shutdown_child};
use super::spawn::ChildGuard;
use super::transport::{FaultCell, StdinCloser};

/// What the client tells the server about itself: name `exthost`, this
/// crate's version, no optional client capabilities.
pub fn client_info() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("exthost", env!("CARGO_PKG_VERSION")),
    )
}

/// rmcp's client handler: answers with [`client_info`] (offering the
/// bridge's capabilities, when there is a bridge), turns every
/// `notifications/tools/list_changed` into a signal for the watcher, and
/// passes the notifications meant for the client in front of the host to
/// the bridge.
#[derive(Clone)]
pub(crate) struct Handler {
    pub(crate) list_changed: mpsc::UnboundedSender<()>,
    /// Where the server's progress notifications go.
    pub(crate) progress: ProgressRoutes,
    /// The client in front of the host, and this extension's id.
    pub(crate) bridge: Option<(ClientBridge, String)>,
}

impl Handler {
    fn to_client(&self, method: &str, params: serde_json::Value) {
        if let Some((bridge, extension)) = &self.bridge {
            bridge.notify(extension, method, params);
        }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut info = client_info();
        if let Some((bridge, _)) = &self.bridge {
            info.capabilities = bridge.capabilities();
        }
        info
    }

    fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.to_client(
            "notifications/resources/updated",
            serde_json::to_value(params).unwrap_or_default(),
        );
        std::future::ready(())
    }

    fn on_resource_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.to_client(
            "notifications/resources/list_changed",
            serde_json::Value::Null,
        );
        std::future::ready(())
    }

    fn on_prompt_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.to_client(
            "notifications/prompts/list_changed",
            serde_json::Value::Null,
        );
        std::future::ready(())
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self.list_changed.send(());
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.progress.deliver(params);
        std::future::ready(())
    }
}

/// One running child and everything attached to it. Shared by the
/// disposer, the proxies, the hook and the list watcher.
pub(crate) struct Session {
    pub(crate) extension: String,
    pid: Option<u32>,
    exited: tokio::sync::watch::Receiver<Option<String>>,
    child: tokio::sync::Mutex<Option<ChildGuard>>,
    closer: StdinCloser,
    pub(crate) fault: FaultCell,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    peer: Mutex<Option<Peer<RoleClient>>>,
    pub(crate) stop: CancellationToken,
    /// The progress sinks of the proxied calls in flight.
    pub(crate) progress: ProgressRoutes,
    /// How many generations of the extension use this session (P-4): each
    /// activation that registers proxies on it holds one lease, and its
    /// disposer gives it back; the last one shuts the child down.
    leases: Mutex<usize>,
}

impl Session {
    pub(crate) fn new(
        extension: String,
        child: ChildGuard,
        closer: StdinCloser,
        fault: FaultCell,
    ) -> Self {
        Self {
            extension,
            pid: child.pid(),
            exited: child.exited.clone(),
            child: tokio::sync::Mutex::new(Some(child)),
            closer,
            fault,
            service: Mutex::new(None),
            peer: Mutex::new(None),
            stop: CancellationToken::new(),
            progress: ProgressRoutes::default(),
            leases: Mutex::new(1),
        }
    }

    /// The child's pid.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// True while the session can serve: not stopped, no fault recorded,
    /// the handshake done.
    pub(crate) fn serving(&self) -> bool {
        !self.stop.is_cancelled() && self.fault.get().is_none() && self.peer().is_ok()
    }

    /// True once the child has gone (it exited, crashed, closed its stdout
    /// or was stopped): the session ended with `EXTENSION_PROCESS_EXITED`.
    pub(crate) fn exited(&self) -> bool {
        matches!(self.fault.get(), Some(ProcessFault::Exited(_)))
    }

    /// Takes one more lease for a new generation, or `false` when the
    /// session has stopped serving (or its last lease is already gone).
    pub(crate) fn acquire(&self) -> bool {
        let Ok(mut leases) = self.leases.lock() else {
            return false;
        };
        if *leases == 0 || !self.serving() {
            return false;
        }
        *leases += 1;
        true
    }

    /// Gives one lease back; `true` when it was the last one, so the caller
    /// must shut the child down.
    pub(crate) fn release(&self) -> bool {
        let Ok(mut leases) = self.leases.lock() else {
            return true;
        };
        *leases = leases.saturating_sub(1);
        *leases == 0
    }

    /// Crash detection (P-7): the moment the leader exits (its task has
    /// reaped it), the session ends with `EXTENSION_PROCESS_EXITED`, even
    /// while a descendant keeps the child's stdout open. A short pause
    /// first lets the reader take what the leader wrote before it exited.
    pub(crate) fn watch_leader(&self) {
        let (mut exited, fault, stop) =
            (self.exited.clone(), self.fault.clone(), self.stop.clone());
        tokio::spawn(async move {
            let status = tokio::select! {
                _ = stop.cancelled() => return,
                status = exited.wait_for(Option::is_some) => match status {
                    Ok(status) => status.clone().unwrap_or_default(),
                    Err(_) => return,
                },
            };
            tokio::time::sleep(Duration::from_millis(50)).await;
            if !stop.is_cancelled() {
                fault.set(ProcessFault::Exited(format!(
                    "the server exited ({status})"
                )));
            }
        });
    }

    /// Keeps the rmcp service once the handshake is done.
    pub(crate) fn attach(&self, service: RunningService<RoleClient, Handler>) {
        if let Ok(mut peer) = self.peer.lock() {
            *peer = Some(service.peer().clone());
        }
        if let Ok(mut slot) = self.service.lock() {
            *slot = Some(service);
        }
    }

    /// The session's peer, or the fault that ended it.
    pub(crate) fn peer(&self) -> Result<Peer<RoleClient>, ProcessFault> {
        self.peer
            .lock()
            .ok()
            .and_then(|p| p.clone())
            .ok_or_else(|| self.ended())
    }

    /// The recorded fault, or "exited" when none was recorded.
    pub(crate) fn ended(&self) -> ProcessFault {
        self.fault
            .get()
            .unwrap_or_else(|| ProcessFault::Exited("the child's session has ended".to_owned()))
    }

    /// Maps an rmcp error of a request to a fault.
    pub(crate) fn fault_of(&self, error: &ServiceError) -> ProcessFault {
        if let Some(fault) = self.fault.get() {
            return fault;
        }
        match error {
            ServiceError::Timeout { .. } => ProcessFault::Timeout(format!(
                "the request timed out: {}",
                bounded(&error.to_string())
            )),
            ServiceError::UnexpectedResponse | ServiceError::McpError(_) => {
                ProcessFault::Protocol(format!(
                    "the child answered out of protocol: {}",
                    bounded(&error.to_string())
                ))
            }
            _ => ProcessFault::Exited(format!(
                "the child's session ended: {}",
                bounded(&error.to_string())
            )),
        }
    }

    /// Maps a failed listing to a fault.
    pub(crate) fn list_fault(&self, error: super::listing::ListError) -> ProcessFault {
        match error {
            super::listing::ListError::Service(e) => self.fault_of(&e),
            super::listing::ListError::Fault(fault) => fault,
        }
    }

    /// Kills the whole group at once (a failed start) and reaps the leader.
    pub(crate) async fn kill_now(&self) {
        self.stop.cancel();
        let guard = self.child.lock().await.take();
        if let Some(mut guard) = guard {
            self.closer.close();
            shutdown_child(&mut guard, Duration::ZERO).await;
        }
        self.drop_service();
    }

    /// P-3: close stdin, wait `grace`, SIGTERM the group, wait `grace`,
    /// SIGKILL the group, reap. Idempotent: a second call does nothing.
    /// Nothing here waits on the child's stdin (closing it never waits), so
    /// whatever the child writes, this ends within twice `grace` plus the
    /// bounded wait after SIGKILL.
    pub(crate) async fn shutdown(&self, grace: Duration) -> Option<ShutdownOutcome> {
        self.stop.cancel();
        let guard = self.child.lock().await.take();
        let outcome = match guard {
            Some(mut guard) => {
                self.closer.close();
                let outcome = shutdown_child(&mut guard, grace).await;
                if outcome != ShutdownOutcome::ExitedOnClose {
                    tracing::warn!(
                        extension = %self.extension,
                        ?outcome,
                        "a process extension did not exit when its stdin closed"
                    );
                }
                Some(outcome)
            }
            None => None,
        };
        self.fault.set(ProcessFault::Exited(
            "the extension was disposed".to_owned(),
        ));
        self.drop_service();
        outcome
    }

    fn drop_service(&self) {
        let service = self.service.lock().ok().and_then(|mut s| s.take());
        if let Ok(mut peer) = self.peer.lock() {
            *peer = None;
        }
        if let Some(service) = service {
            service.cancellation_token().cancel();
            drop(service);
        }
    }
}

impl super::bridge::RunningServer for Session {
    fn peer(&self) -> Option<Peer<RoleClient>> {
        Session::peer(self).ok()
    }
}
