//! The direct loop's hooks, shared by `benches/host.rs` and
//! `examples/fixed_costs.rs` so that both measure `emit` against the same
//! floor.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use exthost::host::{BoxFuture, Event, ExtensionError};

/// A hook's closure as a host would hold it.
pub type Hook =
    Arc<dyn Fn(Arc<Event>) -> BoxFuture<'static, Result<(), ExtensionError>> + Send + Sync>;

/// `count` closures that count the events they see into `counter`, to be
/// called directly.
pub fn direct_hooks(count: usize, counter: &Arc<AtomicU64>) -> Vec<Hook> {
    (0..count)
        .map(|_| {
            let counter = counter.clone();
            Arc::new(move |_: Arc<Event>| {
                counter.fetch_add(1, Ordering::Relaxed);
                Box::pin(async { Ok(()) }) as BoxFuture<'static, Result<(), ExtensionError>>
            }) as Hook
        })
        .collect()
}
