//! Progress of proxied calls: each `tools/call` a proxy sends carries a
//! progress token (rmcp sets one on every request); while the call runs,
//! the server's `notifications/progress` with that token go to the caller's
//! sink ([`crate::host::CallOptions::with_progress`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{ProgressNotificationParam, ProgressToken};

use crate::host::{Progress, ProgressSink};

/// The sinks of the calls in flight on one session, by progress token.
#[derive(Clone, Default)]
pub(crate) struct ProgressRoutes(Arc<Mutex<HashMap<ProgressToken, ProgressSink>>>);

impl ProgressRoutes {
    /// Routes `token`'s notifications to `sink` until the guard is dropped.
    pub(crate) fn route(&self, token: ProgressToken, sink: ProgressSink) -> RouteGuard {
        if let Ok(mut routes) = self.0.lock() {
            routes.insert(token.clone(), sink);
        }
        RouteGuard {
            routes: self.clone(),
            token,
        }
    }

    /// Delivers one notification from the server; one with a token no call
    /// holds (late, or made up) is dropped.
    pub(crate) fn deliver(&self, notification: ProgressNotificationParam) {
        let sink = self
            .0
            .lock()
            .ok()
            .and_then(|routes| routes.get(&notification.progress_token).cloned());
        if let Some(sink) = sink {
            let message = notification.message.map(|m| super::error::bounded(&m));
            sink(Progress {
                progress: notification.progress,
                total: notification.total,
                message,
            });
        }
    }
}

/// Removes a call's route when the call ends or is dropped.
pub(crate) struct RouteGuard {
    routes: ProgressRoutes,
    token: ProgressToken,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        if let Ok(mut routes) = self.routes.0.lock() {
            routes.remove(&self.token);
        }
    }
}
