//! A request the caller stopped waiting for: [`CancelOnDrop`] sends
//! `notifications/cancelled` for it, so the server does not keep working
//! on a result nobody reads. Shared by the proxies (`proxy.rs`) and the
//! monitor's requests (`monitor.rs`).

use rmcp::model::{CancelledNotificationParam, RequestId};
use rmcp::{Peer, RoleClient};

/// Sends `notifications/cancelled` for a request the caller stops waiting
/// for (its call was cancelled, timed out, or dropped), so the server does
/// not keep working on a result nobody reads.
pub(crate) struct CancelOnDrop {
    pub(crate) peer: Peer<RoleClient>,
    pub(crate) id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let params = CancelledNotificationParam::new(
                Some(id),
                Some("the caller stopped waiting for the call".to_owned()),
            );
            let _ = peer.notify_cancelled(params).await;
        });
    }
}
