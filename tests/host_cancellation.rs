//! An activation deadline whose extension code waits on its cancellation
//! signal (issue 40, item 3; spec H-12 and INV-16): when the deadline
//! passes, the core decides the cancellation and the shell fires the
//! activation's token, so the extension's code sees the signal; the
//! activation fails with `EXTENSION_TIMEOUT`, nothing it registered is
//! live, and the host stays usable.
//!
//! The shell stops polling a cancelled `activate` at once (docs/host.md, "A
//! cancelled activation stops at once"), so the code that sees the signal
//! is the extension's own task, spawned from `activate` with a clone of the
//! context, as an extension's background work would be: it waits on the
//! token, then tries one more registration and raises its flag. `activate`
//! itself awaits the same token.
//!
//! Every wait on extension code is bounded ([`within`]); nothing asserts
//! how long anything took.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exthost::CancellationToken;
use exthost::core::Status;
use exthost::error::codes;
use exthost::host::{Event, ExtensionDefinition, HostError, ToolDescriptor};
use serde_json::{Value, json};
use support::{host_with, schema, within};

/// A short deadline: `activate` never returns on its own before its token
/// fires, so the deadline always passes.
const DEADLINE: Duration = Duration::from_millis(50);

/// What the waiting extension's code did.
#[derive(Default)]
struct Seen {
    /// A clone of its activation's cancellation token.
    token: Mutex<Option<CancellationToken>>,
    /// Raised by the extension's own task once the token fired.
    signalled: AtomicBool,
    /// That task's registration after the signal (an error code, or `None`
    /// if it was accepted).
    late_registration: Mutex<Option<Option<&'static str>>>,
    /// Runs of its hook (staged, never live).
    hook_runs: AtomicUsize,
    /// Runs of its disposer (staged: the rollback runs it once).
    disposer_runs: AtomicUsize,
}

/// Whose activation deadline applies.
#[derive(Clone, Copy, Debug)]
enum Deadline {
    /// The host's.
    Host,
    /// The extension's own, with no host deadline.
    Extension,
}

/// Extension `waits`: stages a tool, a hook and a disposer, spawns its own
/// task on the cancellation signal, then awaits the signal itself.
fn waiting(seen: &Arc<Seen>) -> ExtensionDefinition {
    let seen = seen.clone();
    ExtensionDefinition::from_fn("waits", move |cx| {
        let seen = seen.clone();
        async move {
            cx.register_tool(
                ToolDescriptor::new("staged", "never live", schema()),
                |_input: Value| async { Ok(json!("staged")) },
            )?;
            let hooked = seen.clone();
            cx.on_event(move |_event| {
                hooked.hook_runs.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            })?;
            let disposed = seen.clone();
            cx.on_dispose(move || {
                disposed.disposer_runs.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            })?;
            let token = cx.cancellation().clone();
            *seen.token.lock().unwrap() = Some(token.clone());
            let late = cx.clone();
            let observer = seen.clone();
            tokio::spawn(async move {
                token.cancelled().await;
                let registered = late.register_tool(
                    ToolDescriptor::new("late", "after the signal", schema()),
                    |_input: Value| async { Ok(json!("late")) },
                );
                *observer.late_registration.lock().unwrap() =
                    Some(registered.err().map(|e| e.code()));
                observer.signalled.store(true, Ordering::SeqCst);
            });
            cx.cancellation().cancelled().await;
            Ok(())
        }
    })
}

async fn a_deadline_fires_the_signal_the_code_waits_on(deadline: Deadline) {
    let (_checked, host) = host_with(|o| match deadline {
        Deadline::Host => o.with_activation_deadline(DEADLINE),
        Deadline::Extension => o.without_activation_deadline(),
    });
    let seen = Arc::new(Seen::default());
    let definition = match deadline {
        Deadline::Host => waiting(&seen),
        Deadline::Extension => waiting(&seen).with_activation_deadline(DEADLINE),
    };
    let after = ExtensionDefinition::from_fn("after", |cx| async move {
        cx.register_tool(
            ToolDescriptor::new("after_tool", "a tool", schema()),
            |_input: Value| async { Ok(json!("after")) },
        )?;
        Ok(())
    });
    host.discover([definition, after]).unwrap();

    let err = within(host.activate("waits")).await.unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_FAILED, "{err}");
    assert_eq!(err.cause_code(), Some(codes::EXTENSION_TIMEOUT), "{err}");
    assert_eq!(host.status("waits"), Some(Status::Failed));
    // The signal fired in the step that decided the cancellation, before
    // the outcome reached its caller.
    let token = seen.token.lock().unwrap().clone().expect("activate ran");
    assert!(
        token.is_cancelled(),
        "{deadline:?} deadline: the activation timed out and its signal never fired"
    );

    // The code saw the signal: its own task, waiting on the token, ran on.
    tokio::time::timeout(Duration::from_secs(60), async {
        while !seen.signalled.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!("{deadline:?} deadline: the extension's code never saw its cancellation signal")
    });

    // Nothing it registered is live, before the signal or after it.
    assert_eq!(
        *seen.late_registration.lock().unwrap(),
        Some(Some(codes::EXTENSION_CONTEXT_CLOSED)),
        "a registration after the signal is refused"
    );
    let tools = host.tools();
    assert!(tools.get("staged").is_none(), "{:?}", tools.names());
    assert!(tools.get("late").is_none(), "{:?}", tools.names());
    let err = within(host.call_tool("staged", json!({})))
        .await
        .unwrap_err();
    assert!(matches!(err, HostError::ToolNotFound { .. }), "{err}");
    assert_eq!(
        seen.disposer_runs.load(Ordering::SeqCst),
        1,
        "the rollback ran the staged disposer"
    );

    // The host stays usable.
    within(host.activate("after")).await.unwrap();
    assert_eq!(
        within(host.call_tool("after_tool", json!({})))
            .await
            .unwrap()
            .into_json(),
        json!("after")
    );
    let report = within(host.emit(Event::new("e", json!(null))))
        .await
        .unwrap();
    assert!(report.diagnostics.is_empty(), "{report:?}");
    assert_eq!(
        seen.hook_runs.load(Ordering::SeqCst),
        0,
        "its hook is not live"
    );
    within(host.dispose()).await.unwrap();
    assert_eq!(
        seen.disposer_runs.load(Ordering::SeqCst),
        1,
        "shutdown does not run a rolled-back disposer again"
    );
    assert_eq!(host.status("after"), Some(Status::Disposed));
}

#[tokio::test]
async fn the_hosts_activation_deadline_fires_the_signal_on_one_thread() {
    a_deadline_fires_the_signal_the_code_waits_on(Deadline::Host).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_activation_deadline_fires_the_signal_on_many_threads() {
    a_deadline_fires_the_signal_the_code_waits_on(Deadline::Host).await;
}

#[tokio::test]
async fn an_extensions_own_activation_deadline_fires_the_signal_on_one_thread() {
    a_deadline_fires_the_signal_the_code_waits_on(Deadline::Extension).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extensions_own_activation_deadline_fires_the_signal_on_many_threads() {
    a_deadline_fires_the_signal_the_code_waits_on(Deadline::Extension).await;
}
