//! When an operation's outcome reaches its caller, everything the operation
//! let go of has been dropped (spec H-14): a failed activation's instance
//! and its staged tool, hook and disposer; a reload's retired generation;
//! a failed reload's fresh generation. A retry that needs what they held
//! (a port, a lock file) then finds it free.
//!
//! No scheduling luck: every drop records itself (after a short pause, so
//! an outcome delivered before the drops would be seen before they
//! recorded), and the count is read at the moment the operation returns,
//! over 100 runs on the multi-thread runtime, where the operation settles
//! on a worker while its caller waits on another thread.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use exthost::error::codes;
use exthost::host::{
    ActivationContext, BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError, Reload,
    ToolDescriptor,
};
use serde_json::{Value, json};
use support::{host, schema, within};

const RUNS: usize = 100;

/// Records its drop, after a pause that gives a caller woken too early the
/// time to look.
struct Recorded(Arc<AtomicUsize>);

impl Drop for Recorded {
    fn drop(&mut self) {
        std::thread::sleep(Duration::from_millis(1));
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Each generation holds one [`Recorded`] in its instance and one in each
/// of its tool, hook and disposer: four per generation.
const PER_GENERATION: usize = 4;

struct Generation {
    dropped: Arc<AtomicUsize>,
    fail: bool,
    _held: Recorded,
}

impl Extension for Generation {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let tool = Recorded(self.dropped.clone());
            cx.register_tool(
                ToolDescriptor::new("t", "a tool", schema()),
                move |_input: Value| {
                    let _held = &tool;
                    async { Ok(json!("ok")) }
                },
            )?;
            let hook = Recorded(self.dropped.clone());
            cx.on_event(move |_event| {
                let _held = &hook;
                async { Ok(()) }
            })?;
            let disposer = Recorded(self.dropped.clone());
            cx.on_dispose(move || async move {
                drop(disposer);
                Ok(())
            })?;
            if self.fail {
                Err(ExtensionError::new("this generation fails"))
            } else {
                Ok(())
            }
        })
    }
}

/// Extension `x`, whose attempts fail where `fails` says.
fn generations(dropped: &Arc<AtomicUsize>, fails: fn(usize) -> bool) -> ExtensionDefinition {
    let made = AtomicUsize::new(0);
    let dropped = dropped.clone();
    ExtensionDefinition::new("x", move || {
        let g = made.fetch_add(1, Ordering::SeqCst);
        Ok(Generation {
            dropped: dropped.clone(),
            fail: fails(g),
            _held: Recorded(dropped.clone()),
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_activation_has_dropped_what_it_rolled_back_when_its_error_arrives() {
    for run in 0..RUNS {
        within(async {
            let (_checked, host) = host();
            let dropped = Arc::new(AtomicUsize::new(0));
            host.discover([generations(&dropped, |g| g == 0)]).unwrap();
            let err = host.activate("x").await.unwrap_err();
            let seen = dropped.load(Ordering::SeqCst);
            assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_FAILED, "{err}");
            assert_eq!(
                seen, PER_GENERATION,
                "run {run}: the rolled-back instance, tool, hook and disposer were dropped \
                 before the error arrived"
            );
            host.activate("x").await.unwrap();
            host.dispose().await.unwrap();
            assert_eq!(dropped.load(Ordering::SeqCst), 2 * PER_GENERATION);
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_has_dropped_the_generation_it_retired_or_rolled_back_when_it_returns() {
    for run in 0..RUNS {
        within(async {
            let (_checked, host) = host();
            let dropped = Arc::new(AtomicUsize::new(0));
            host.discover([generations(&dropped, |g| g == 2)]).unwrap();
            host.activate("x").await.unwrap();
            // An emit first: the live hooks' handlers are cached.
            host.emit(Event::new("e", json!(null))).await.unwrap();

            let reloaded = host.reload("x").await.unwrap();
            let seen = dropped.load(Ordering::SeqCst);
            assert!(matches!(reloaded, Reload::Reloaded { .. }), "{reloaded:?}");
            assert_eq!(
                seen, PER_GENERATION,
                "run {run}: the retired generation was dropped before the reload returned"
            );

            let err = host.reload("x").await.unwrap_err();
            let seen = dropped.load(Ordering::SeqCst);
            assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_FAILED, "{err}");
            assert_eq!(
                seen,
                2 * PER_GENERATION,
                "run {run}: the failed fresh generation was dropped before the error arrived"
            );

            host.dispose().await.unwrap();
            assert_eq!(dropped.load(Ordering::SeqCst), 3 * PER_GENERATION);
        })
        .await;
    }
}
