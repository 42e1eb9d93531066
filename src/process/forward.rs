//! The child's requests for the client in front of the host
//! (`sampling/createMessage`, `roots/list`, `elicitation/create`), sent
//! through the extension's [`ClientBridge`] and answered with the client's
//! answer, under the bounds of P-7: at most
//! [`MAX_SERVER_REQUESTS_IN_FLIGHT`] wait for the client, and each holds
//! its line's bytes against [`MAX_SERVER_ANSWER_BYTES`] until its answer
//! is written. The child's `notifications/cancelled` for one of them, or
//! the end of its session, drops the wait (and so the request to the
//! client).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::RxJsonRpcMessage;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::bridge::ClientBridge;
use super::transport::{
    MAX_SERVER_ANSWER_BYTES, MAX_SERVER_REQUESTS_IN_FLIGHT, Outgoing, ServerRequests,
};

/// One extension's forwarding: its bridge, its id, and the requests
/// waiting for the client (by their JSON id).
pub(crate) struct Forwarder {
    bridge: ClientBridge,
    extension: String,
    waiting: Arc<Mutex<HashMap<String, CancellationToken>>>,
    stop: CancellationToken,
}

impl Forwarder {
    /// Forwarding for `extension` through `bridge`, until `stop`.
    pub(crate) fn new(bridge: ClientBridge, extension: String, stop: CancellationToken) -> Self {
        Self {
            bridge,
            extension,
            waiting: Arc::default(),
            stop,
        }
    }
}

impl ServerRequests for Forwarder {
    /// Whether one more request of `bytes` may wait for the client; when
    /// it may, its bytes are counted in `queued`.
    fn has_room(&self, bytes: usize, queued: &AtomicUsize) -> bool {
        let waiting = self.waiting.lock().map_or(usize::MAX, |w| w.len());
        waiting < MAX_SERVER_REQUESTS_IN_FLIGHT
            && queued
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |q| {
                    (q + bytes <= MAX_SERVER_ANSWER_BYTES).then_some(q + bytes)
                })
                .is_ok()
    }

    /// Sends the request to the client and queues the answer for the
    /// child; `counted` bytes (reserved by `has_room`) are
    /// released once the answer is written, or at once when none is.
    fn forward(
        &self,
        id: Value,
        method: String,
        params: Value,
        counted: usize,
        outgoing: &mpsc::Sender<Outgoing>,
    ) {
        let key = id.to_string();
        let token = self.stop.child_token();
        if let Ok(mut waiting) = self.waiting.lock() {
            waiting.insert(key.clone(), token.clone());
        }
        let request = self.bridge.forward(&self.extension, &method, params);
        let (waiting, outgoing) = (self.waiting.clone(), outgoing.clone());
        tokio::spawn(async move {
            let answered = tokio::select! {
                answered = request => Some(answered),
                () = token.cancelled() => None,
            };
            if let Ok(mut waiting) = waiting.lock() {
                waiting.remove(&key);
            }
            // Cancelled by the child, or its session ended: no answer, and
            // an empty write releases the reservation all the same.
            let bytes = match answered {
                Some(answered) => {
                    let reply = match answered {
                        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                        Err(refusal) => {
                            json!({"jsonrpc": "2.0", "id": id, "error": refusal.to_json()})
                        }
                    };
                    let mut bytes = reply.to_string().into_bytes();
                    bytes.push(b'\n');
                    bytes
                }
                None => Vec::new(),
            };
            let _ = outgoing
                .send(Outgoing {
                    bytes,
                    done: None,
                    answer: false,
                    counted,
                })
                .await;
        });
    }

    /// Sees each message of the child on its way to rmcp: a
    /// `notifications/cancelled` for a request waiting for the client ends
    /// that wait.
    fn on_message(&self, message: &RxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Notification(notification) = message else {
            return;
        };
        let ServerNotification::CancelledNotification(cancelled) = &notification.notification
        else {
            return;
        };
        let Some(id) = &cancelled.params.request_id else {
            return;
        };
        let key = serde_json::to_value(id)
            .map(|v| v.to_string())
            .unwrap_or_default();
        if let Some(token) = self.waiting.lock().ok().and_then(|mut w| w.remove(&key)) {
            token.cancel();
        }
    }
}
