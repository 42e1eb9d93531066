//! The client in front of the host, as process extensions' servers see it:
//! the capabilities offered to every server at its `initialize`, the
//! server's own requests that reach that client (`sampling/createMessage`,
//! `roots/list`, `elicitation/create`) and back, and the server's
//! notifications for it (`notifications/resources/updated`, the prompts and
//! resources `list_changed`).
//!
//! A [`ClientBridge`] is made by the embedding program (`exthost serve`,
//! `exthost lock`) with the capabilities to offer, given to each process
//! extension's monitor ([`ProcessMonitor::connect_client`]) before it
//! starts, and connected to the client ([`ClientBridge::connect`]) once
//! that client is known. Until then, and without a bridge, a server's
//! request is answered with an error whose `data.code` is
//! [`CLIENT_NOT_CONNECTED`]; without a bridge nothing is offered.
//!
//! Bounded like every request of a child (P-7): at most
//! [`MAX_SERVER_REQUESTS_IN_FLIGHT`](super::MAX_SERVER_REQUESTS_IN_FLIGHT)
//! forwarded requests wait for the client, holding at most
//! [`MAX_SERVER_ANSWER_BYTES`](super::MAX_SERVER_ANSWER_BYTES) of request
//! text; beyond either, the request is refused like any excess request.

use std::sync::{Arc, Mutex, RwLock, Weak};

use rmcp::model::{ClientCapabilities, ClientNotification, RootsListChangedNotification};
use rmcp::{Peer, RoleClient};
use serde_json::{Value, json};

use crate::host::BoxFuture;

/// The requests of a server that are forwarded to the client.
pub const FORWARDED_METHODS: &[&str] =
    &["sampling/createMessage", "roots/list", "elicitation/create"];

/// The `data.code` of the answer to a server's request while no client is
/// connected to the bridge.
pub const CLIENT_NOT_CONNECTED: &str = "CLIENT_NOT_CONNECTED";

/// The JSON-RPC error code of that answer (a code JSON-RPC leaves to
/// implementations).
pub const CLIENT_NOT_CONNECTED_RPC_CODE: i64 = -32033;

/// A JSON-RPC error answer for a forwarded request: the client's own, or
/// the embedding program's reason for not asking it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The JSON-RPC error code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// The error's data, with a stable `code` when the refusal is the
    /// host's.
    pub data: Option<Value>,
}

impl Refusal {
    /// The refusal as a JSON-RPC `error` object.
    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// The client in front of the host, as the embedding program connects it.
pub trait Upstream: Send + Sync + 'static {
    /// Sends a server's request (`method` one of [`FORWARDED_METHODS`]) of
    /// extension `extension` to the client and returns its answer. The
    /// future is dropped when the server cancels its request or its session
    /// ends.
    fn request(
        &self,
        extension: &str,
        method: &str,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, Refusal>>;

    /// A server's notification for the client
    /// (`notifications/resources/updated` with its params,
    /// `notifications/resources/list_changed`,
    /// `notifications/prompts/list_changed`).
    fn notify(&self, extension: &str, method: &str, params: Value);
}

/// A server's session as the bridge sees it: the peer to notify while the
/// server runs (the client's session, `client.rs`).
pub(crate) trait RunningServer: Send + Sync {
    /// The session's peer, while the server runs.
    fn peer(&self) -> Option<Peer<RoleClient>>;
}

struct BridgeState {
    offered: Value,
    upstream: RwLock<Option<Arc<dyn Upstream>>>,
    sessions: Mutex<Vec<Weak<dyn RunningServer>>>,
}

/// What every process extension it is given to offers its server, and
/// where the server's requests and notifications go. Clones share it.
#[derive(Clone)]
pub struct ClientBridge(Arc<BridgeState>);

impl std::fmt::Debug for ClientBridge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBridge")
            .field("offered", &self.0.offered)
            .finish_non_exhaustive()
    }
}

impl ClientBridge {
    /// A bridge offering `capabilities` (an MCP `ClientCapabilities`
    /// object, such as `{"sampling": {}, "roots": {"listChanged": true}}`)
    /// to every server, connected to no client yet.
    pub fn new(capabilities: Value) -> Self {
        Self(Arc::new(BridgeState {
            offered: capabilities,
            upstream: RwLock::new(None),
            sessions: Mutex::new(Vec::new()),
        }))
    }

    /// The capabilities offered to every server.
    pub fn offered(&self) -> &Value {
        &self.0.offered
    }

    /// The offered capabilities as rmcp's type (unknown fields dropped).
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        serde_json::from_value(self.0.offered.clone()).unwrap_or_default()
    }

    /// From now on servers' requests and notifications go to `upstream`.
    pub fn connect(&self, upstream: Arc<dyn Upstream>) {
        if let Ok(mut slot) = self.0.upstream.write() {
            *slot = Some(upstream);
        }
    }

    /// From now on servers' requests are refused ([`CLIENT_NOT_CONNECTED`])
    /// and their notifications dropped.
    pub fn disconnect(&self) {
        if let Ok(mut slot) = self.0.upstream.write() {
            *slot = None;
        }
    }

    fn upstream(&self) -> Option<Arc<dyn Upstream>> {
        self.0.upstream.read().ok().and_then(|u| u.clone())
    }

    /// Sends `notifications/roots/list_changed` to every server that is
    /// running (the client's roots changed). Returns how many got it.
    pub async fn roots_list_changed(&self) -> usize {
        let sessions: Vec<Arc<dyn RunningServer>> = match self.0.sessions.lock() {
            Ok(mut sessions) => {
                sessions.retain(|s| s.strong_count() > 0);
                sessions.iter().filter_map(Weak::upgrade).collect()
            }
            Err(_) => return 0,
        };
        let mut sent = 0;
        for session in sessions {
            let Some(peer) = session.peer() else { continue };
            let notification = ClientNotification::RootsListChangedNotification(
                RootsListChangedNotification::default(),
            );
            if peer.send_notification(notification).await.is_ok() {
                sent += 1;
            }
        }
        sent
    }

    /// Remembers a running server's session (weakly), for
    /// [`ClientBridge::roots_list_changed`].
    pub(crate) fn register(&self, session: Weak<dyn RunningServer>) {
        if let Ok(mut sessions) = self.0.sessions.lock() {
            sessions.retain(|s| s.strong_count() > 0);
            sessions.push(session);
        }
    }

    /// Forwards one request of extension `extension`'s server.
    pub(crate) fn forward(
        &self,
        extension: &str,
        method: &str,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, Refusal>> {
        match self.upstream() {
            Some(upstream) => upstream.request(extension, method, params),
            None => {
                let refusal = Refusal {
                    code: CLIENT_NOT_CONNECTED_RPC_CODE,
                    message: format!(
                        "{CLIENT_NOT_CONNECTED}: no client is connected to the host, so {method} \
                         cannot reach one"
                    ),
                    data: Some(json!({"code": CLIENT_NOT_CONNECTED, "method": method})),
                };
                Box::pin(std::future::ready(Err(refusal)))
            }
        }
    }

    /// Passes one notification of extension `extension`'s server on.
    pub(crate) fn notify(&self, extension: &str, method: &str, params: Value) {
        if let Some(upstream) = self.upstream() {
            upstream.notify(extension, method, params);
        }
    }
}
