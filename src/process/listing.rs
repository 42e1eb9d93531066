//! P-7: `tools/list` with a memory bound. rmcp's `list_all_tools` follows
//! `nextCursor` for as long as the server gives one, so a server that
//! repeats a cursor, or pages forever, grows the host without limit (within
//! a startup deadline that may be ten minutes). Ours follows the pages
//! itself: a cursor seen before fails at once, and the pages, the tools and
//! the bytes of one listing are capped. Each failure is
//! `EXTENSION_PROTOCOL_ERROR` with the reason.

use std::collections::HashSet;

use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{Peer, ServiceError};

use super::error::{ProcessFault, bounded};

/// At most this many pages in one listing.
pub const MAX_LIST_PAGES: usize = 64;
/// At most this many tools (or prompts, resources, templates) in one
/// listing.
pub const MAX_LISTED_TOOLS: usize = 1024;
/// At most this many bytes of tools (as JSON) and cursors in one listing.
pub const MAX_LIST_BYTES: usize = 4 * 1024 * 1024;

/// Why a listing failed.
#[derive(Debug)]
pub(crate) enum ListError {
    /// The request failed (map it with `Session::fault_of`).
    Service(ServiceError),
    /// The server broke a bound of the listing.
    Fault(ProcessFault),
}

/// Every page of `tools/list`, within the bounds.
pub(crate) async fn list_all_tools(peer: &Peer<RoleClient>) -> Result<Vec<Tool>, ListError> {
    list_pages("tool", |params| async move {
        let page = peer.list_tools(Some(params)).await?;
        Ok((page.tools, page.next_cursor))
    })
    .await
}

/// Every page of one listing (`what` names an entry: `tool`, `prompt`,
/// ...), within the bounds: `fetch` gets each page's request and answers
/// its entries and next cursor.
pub(crate) async fn list_pages<T, F, Fut>(what: &str, mut fetch: F) -> Result<Vec<T>, ListError>
where
    T: serde::Serialize,
    F: FnMut(PaginatedRequestParams) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let fault = |why: String| ListError::Fault(ProcessFault::Protocol(why));
    let mut items: Vec<T> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut bytes = 0usize;
    for page_number in 1..=MAX_LIST_PAGES {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let (page, next_cursor) = fetch(params).await.map_err(ListError::Service)?;
        for item in &page {
            bytes = bytes.saturating_add(serde_json::to_vec(item).map_or(0, |v| v.len()));
        }
        items.extend(page);
        if items.len() > MAX_LISTED_TOOLS {
            return Err(fault(format!(
                "the {what} listing has more than {MAX_LISTED_TOOLS} entries"
            )));
        }
        if let Some(next) = &next_cursor {
            bytes = bytes.saturating_add(next.len());
        }
        if bytes > MAX_LIST_BYTES {
            return Err(fault(format!(
                "the {what} listing is over {MAX_LIST_BYTES} bytes (after {page_number} pages)"
            )));
        }
        let Some(next) = next_cursor else {
            return Ok(items);
        };
        if !seen.insert(next.clone()) {
            return Err(fault(format!(
                "the server repeated the cursor {} (page {page_number}): the listing would never end",
                bounded(&format!("{next:?}"))
            )));
        }
        cursor = Some(next);
    }
    // Every allowed page was read and the server still gave a cursor.
    Err(fault(format!(
        "the {what} listing has more than {MAX_LIST_PAGES} pages"
    )))
}
