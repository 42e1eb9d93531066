//! The client's capabilities, forwarded: every backend is offered the same
//! client capabilities ([`crate::offering::offered`]: sampling, roots with `listChanged`,
//! elicitation in form and URL mode), the set `exthost lock` offers too,
//! so what a server lists under `serve` is what the lock pinned whatever
//! the client declares. A backend's `sampling/createMessage`, `roots/list`
//! or `elicitation/create` reaches the connected client when that client
//! declared the capability, and the client's answer goes back to the
//! backend; when it did not, the backend gets a JSON-RPC error
//! ([`CAPABILITY_MISSING_RPC_CODE`], `data.code`
//! [`CAPABILITY_MISSING`]) naming the capability. The client's
//! `notifications/roots/list_changed` reaches every running backend; a
//! backend's `notifications/resources/updated` (its URI namespaced) and
//! prompts and resources `list_changed` reach the client.

use std::sync::Arc;

use exthost::host::BoxFuture;
use exthost::process::{ClientBridge, ProcessMonitor, Refusal, Upstream};
use rmcp::model::{
    CustomRequest, ErrorCode, ResourceUpdatedNotificationParam, ServerNotification, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};

use super::gateway::Gateway;
use super::shape::Shape;

/// The stable code of a backend request the client declared no capability
/// for (in the JSON-RPC error's `data.code`).
pub(crate) const CAPABILITY_MISSING: &str = "CLIENT_CAPABILITY_MISSING";
/// Its JSON-RPC error code.
pub(crate) const CAPABILITY_MISSING_RPC_CODE: i64 = -32031;

/// A bridge given to every process extension of `host` now (before any
/// starts, eager ones included).
pub(crate) fn bridge_for(host: &exthost::host::ExtensionHost, shape: &Shape) -> ClientBridge {
    let bridge = crate::offering::bridge();
    for extension in host.extensions() {
        if let Some(monitor) = shape.monitor(&extension.id) {
            monitor.connect_client(bridge.clone());
        }
    }
    bridge
}

/// Gives `monitor` the gateway's bridge (idempotent), so its next start
/// offers the forwarded capabilities.
pub(crate) fn connect(gateway: &Gateway, monitor: &ProcessMonitor) {
    monitor.connect_client(gateway.bridge.clone());
}

/// Gives every process extension the gateway has the bridge.
pub(crate) fn connect_all(gateway: &Gateway) {
    for extension in gateway.host.extensions() {
        if let Some(monitor) = gateway.shape.monitor(&extension.id) {
            connect(gateway, &monitor);
        }
    }
}

/// The capability a backend's request needs of the client: its key in the
/// client's capabilities and, for a URL elicitation, the sub-capability.
fn needed(method: &str, params: &Value) -> (&'static str, Option<&'static str>) {
    match method {
        "sampling/createMessage" => ("sampling", None),
        "roots/list" => ("roots", None),
        _ if params.get("mode").and_then(Value::as_str) == Some("url") => {
            ("elicitation", Some("url"))
        }
        _ => ("elicitation", None),
    }
}

/// The connected client, as backends' requests and notifications see it.
pub(crate) struct ClientUpstream {
    pub(crate) peer: Peer<RoleServer>,
    /// The capabilities the client declared at `initialize`, as JSON.
    pub(crate) declared: Value,
}

impl ClientUpstream {
    /// The upstream of the client behind `peer`.
    pub(crate) fn new(peer: Peer<RoleServer>) -> Self {
        let declared = peer
            .peer_info()
            .and_then(|info| serde_json::to_value(&info.capabilities).ok())
            .unwrap_or_else(|| json!({}));
        Self { peer, declared }
    }

    fn missing(&self, extension: &str, method: &str, params: &Value) -> Option<Refusal> {
        let (capability, sub) = needed(method, params);
        let declared = self.declared.get(capability).filter(|v| !v.is_null());
        let has = match (declared, sub) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(c), Some(sub)) => c.get(sub).is_some_and(|v| !v.is_null()),
        };
        if has {
            return None;
        }
        let what = sub.map_or_else(|| capability.to_owned(), |s| format!("{capability}.{s}"));
        Some(Refusal {
            code: CAPABILITY_MISSING_RPC_CODE,
            message: format!(
                "{CAPABILITY_MISSING}: the client connected to exthost serve did not declare the \
                 {what} capability, so {method} from extension {extension:?} cannot reach it"
            ),
            data: Some(json!({
                "code": CAPABILITY_MISSING,
                "capability": what,
                "method": method,
                "extension": extension,
            })),
        })
    }
}

/// Sends `notifications/cancelled` to the client for a forwarded request
/// the backend stopped waiting for.
struct CancelOnDrop {
    peer: Peer<RoleServer>,
    id: Option<rmcp::model::RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let params = rmcp::model::CancelledNotificationParam::new(
                Some(id),
                Some("the backend stopped waiting".to_owned()),
            );
            let _ = peer.notify_cancelled(params).await;
        });
    }
}

impl Upstream for ClientUpstream {
    fn request(
        &self,
        extension: &str,
        method: &str,
        params: Value,
    ) -> BoxFuture<'static, Result<Value, Refusal>> {
        if let Some(refusal) = self.missing(extension, method, &params) {
            return Box::pin(std::future::ready(Err(refusal)));
        }
        let peer = self.peer.clone();
        let method = method.to_owned();
        Box::pin(async move {
            let failed = |e: ServiceError| match e {
                ServiceError::McpError(data) => Refusal {
                    code: i64::from(data.code.0),
                    message: data.message.to_string(),
                    data: data.data,
                },
                other => Refusal {
                    code: i64::from(ErrorCode::INTERNAL_ERROR.0),
                    message: format!("the client did not answer {method}: {other}"),
                    data: Some(json!({"code": "CLIENT_UNREACHABLE"})),
                },
            };
            let request =
                ServerRequest::CustomRequest(CustomRequest::new(method.clone(), Some(params)));
            let handle = peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
                .map_err(&failed)?;
            let mut abandon = CancelOnDrop {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            let answer = handle.await_response().await;
            abandon.id = None;
            let result = answer.map_err(&failed)?;
            Ok(serde_json::to_value(result).unwrap_or_else(|_| json!({})))
        })
    }

    fn notify(&self, extension: &str, method: &str, params: Value) {
        let peer = self.peer.clone();
        let notification = match method {
            "notifications/resources/updated" => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    return;
                };
                let param = ResourceUpdatedNotificationParam::new(super::offered::namespaced_uri(
                    extension, uri,
                ));
                ServerNotification::ResourceUpdatedNotification(
                    rmcp::model::ResourceUpdatedNotification::new(param),
                )
            }
            "notifications/resources/list_changed" => {
                ServerNotification::ResourceListChangedNotification(Default::default())
            }
            "notifications/prompts/list_changed" => {
                ServerNotification::PromptListChangedNotification(Default::default())
            }
            _ => return,
        };
        tokio::spawn(async move {
            let _ = peer.send_notification(notification).await;
        });
    }
}

impl Gateway {
    /// The gateway with `bridge` as its bridge to the client.
    pub(crate) fn with_bridge(mut self, bridge: ClientBridge) -> Self {
        self.bridge = bridge;
        self
    }

    /// Connects the bridge to the client behind `peer` (at `initialized`).
    pub(crate) fn connect_client(&self, peer: Peer<RoleServer>) {
        self.bridge.connect(Arc::new(ClientUpstream::new(peer)));
        connect_all(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_forwarded_request_needs_its_capability() {
        assert_eq!(
            needed("sampling/createMessage", &json!({})),
            ("sampling", None)
        );
        assert_eq!(needed("roots/list", &json!({})), ("roots", None));
        assert_eq!(
            needed("elicitation/create", &json!({"mode": "url"})),
            ("elicitation", Some("url"))
        );
        assert_eq!(
            needed("elicitation/create", &json!({})),
            ("elicitation", None)
        );
        for key in ["sampling", "roots", "elicitation"] {
            assert!(crate::offering::offered().get(key).is_some(), "{key}");
        }
    }
}
