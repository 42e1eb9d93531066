//! Extension code the host let go of before it ever ran (H-8, H-11): a
//! factory never called, an `activate` never polled, a disposer whose
//! cleanup step was never run, a hook never delivered to, a tool call
//! whose task was aborted before its first poll. Each holds a value whose
//! `Drop` counts itself and then panics with a payload whose own `Drop`
//! panics: it must be dropped inside containment, exactly once, before the
//! outcome of the operation that let go of it reaches its caller, and
//! change nothing else (every outcome keeps its code, the host stays
//! usable).
//!
//! Every test runs on one thread, so which task runs when is fixed by the
//! code, not by the scheduler; every await on extension code is bounded.

mod support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use exthost::CancellationToken;
use exthost::error::codes;
use exthost::host::{
    ActivationContext, BoxFuture, CallOptions, Event, Extension, ExtensionDefinition,
    ExtensionError, Reload, ToolDescriptor,
};
use serde_json::{Value, json};
use support::{Log, Script, Scripted, activation_in_progress, host, schema, within};

/// A panic payload whose own `Drop` panics.
struct Payload;

impl Drop for Payload {
    fn drop(&mut self) {
        panic!("the payload's drop panicked too");
    }
}

/// Counts its drop, then panics with a [`Payload`].
struct Bomb(Arc<AtomicUsize>);

impl Drop for Bomb {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
        std::panic::panic_any(Payload);
    }
}

fn bomb() -> (Bomb, Arc<AtomicUsize>) {
    let drops = Arc::new(AtomicUsize::new(0));
    (Bomb(drops.clone()), drops)
}

fn count(n: &AtomicUsize) -> usize {
    n.load(Ordering::SeqCst)
}

/// Polls `future` once; `None` when it is pending.
async fn poll_once<F: Future + Unpin>(future: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        Poll::Ready(match Pin::new(&mut *future).poll(cx) {
            Poll::Ready(output) => Some(output),
            Poll::Pending => None,
        })
    })
    .await
}

/// A factory never called: its activation was queued behind another and
/// shutdown cancelled it before its turn. Its closure goes with shutdown.
#[tokio::test]
async fn a_factory_never_called_is_dropped_inside_containment() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let mut holder = Script::new("holder", &log);
        holder.gate = Some(Arc::new(tokio::sync::Semaphore::new(0)));
        let (bomb, drops) = bomb();
        let calls = Arc::new(AtomicUsize::new(0));
        let factory_calls = calls.clone();
        let factory_log = log.clone();
        let bombed = ExtensionDefinition::new("bombed", move || {
            let _held = &bomb;
            factory_calls.fetch_add(1, Ordering::SeqCst);
            Ok(Scripted(Script::new("bombed", &factory_log)))
        });
        host.discover([holder.definition(), bombed]).unwrap();

        let running = activation_in_progress(&host, &log, "holder").await;
        let mut queued = Box::pin(host.activate("bombed"));
        assert!(
            poll_once(&mut queued).await.is_none(),
            "queued behind holder"
        );

        host.dispose().await.unwrap();
        assert_eq!(count(&drops), 1, "the factory went with shutdown, once");
        assert_eq!(count(&calls), 0, "the factory never ran");
        let err = queued.await.unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_CANCELLED, "{err}");
        let err = running.await.unwrap().unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_CANCELLED, "{err}");
        assert_eq!(host.dispose().await, Ok(()), "a second dispose agrees");
        assert_eq!(count(&drops), 1);
    })
    .await;
}

/// An `activate` never polled: shutdown cancelled the activation while its
/// factory ran, so the instance the factory then returned is rolled back
/// without its `activate` ever running.
#[tokio::test]
async fn an_activate_never_polled_is_dropped_inside_containment() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let (bomb, drops) = bomb();
        let bomb = Arc::new(std::sync::Mutex::new(Some(bomb)));
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let go_rx = std::sync::Mutex::new(go_rx);
        let instance_log = log.clone();
        struct Armed(Log, #[allow(dead_code)] Bomb);
        impl Extension for Armed {
            fn activate(
                &self,
                _cx: ActivationContext,
            ) -> BoxFuture<'_, Result<(), ExtensionError>> {
                self.0.push("activate");
                Box::pin(async { Ok(()) })
            }
        }
        // The factory runs on the blocking pool (the default activation
        // deadline applies): it says it started and waits to be let go.
        let armed = ExtensionDefinition::new("armed", move || {
            started_tx.send(()).unwrap();
            go_rx.lock().unwrap().recv().unwrap();
            let bomb = bomb.lock().unwrap().take().expect("one attempt");
            Ok(Armed(instance_log.clone(), bomb))
        });
        host.discover([armed]).unwrap();

        let activation = tokio::spawn({
            let host = host.clone();
            async move { host.activate("armed").await }
        });
        while started_rx.try_recv().is_err() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        let mut shutdown = Box::pin(host.dispose());
        assert!(
            poll_once(&mut shutdown).await.is_none(),
            "shutdown waits for the activation"
        );
        go_tx.send(()).unwrap();

        let err = activation.await.unwrap().unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_ACTIVATION_CANCELLED, "{err}");
        assert_eq!(
            count(&drops),
            1,
            "the rolled-back instance was dropped before the error arrived"
        );
        assert_eq!(log.count("activate"), 0, "activate never ran");
        shutdown.await.unwrap();
        assert_eq!(count(&drops), 1);
    })
    .await;
}

/// A cleanup step never run: a disposer offered after its activation
/// settled is refused (the context is closed) and never becomes a step.
/// The refusal drops it at once, and changes nothing else.
#[tokio::test]
async fn a_disposer_that_never_becomes_a_step_is_dropped_inside_containment() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let script = Script::new("late", &log).tools(&["t"]).disposers(1);
        host.discover([script.definition()]).unwrap();
        host.activate("late").await.unwrap();
        let cx = script.keep_context.lock().unwrap().clone().expect("kept");

        let (bomb, drops) = bomb();
        let err = cx
            .on_dispose(move || {
                let _held = &bomb;
                async { Ok(()) }
            })
            .unwrap_err();
        assert_eq!(err.code(), codes::EXTENSION_CONTEXT_CLOSED, "{err}");
        assert_eq!(count(&drops), 1, "the refused disposer is gone, once");
        drop(cx);

        assert_eq!(
            host.call_tool("t", json!(1)).await.unwrap().into_json()["tool"],
            "t"
        );
        host.dispose().await.unwrap();
        assert_eq!(log.count("late:disposer0"), 1, "the accepted disposer ran");
        assert_eq!(count(&drops), 1);
    })
    .await;
}

/// An extension whose first generation registers a hook holding a bomb
/// and a tool `t` holding another, and whose later generations register
/// plain ones. Every hook and tool call logs the generation that ran.
fn generations(
    log: &Log,
    hook_bomb: Bomb,
    tool_bomb: Bomb,
) -> (ExtensionDefinition, Arc<AtomicUsize>) {
    let made = Arc::new(AtomicUsize::new(0));
    let bombs = Arc::new(std::sync::Mutex::new(Some((hook_bomb, tool_bomb))));
    let log = log.clone();
    let generation = made.clone();
    let definition = ExtensionDefinition::from_fn("gen", move |cx| {
        let g = generation.fetch_add(1, Ordering::SeqCst);
        let armed = if g == 0 {
            bombs.lock().unwrap().take()
        } else {
            None
        };
        let log = log.clone();
        async move {
            let (hook_bomb, tool_bomb) = match armed {
                Some((h, t)) => (Some(h), Some(t)),
                None => (None, None),
            };
            let hook_log = log.clone();
            cx.on_event(move |_event: Arc<Event>| {
                let _held = &hook_bomb;
                hook_log.push(format!("hook:{g}"));
                async { Ok(()) }
            })?;
            let tool_log = log.clone();
            cx.register_tool(
                ToolDescriptor::new("t", "a tool", schema()),
                move |_input: Value| {
                    let _held = &tool_bomb;
                    tool_log.push(format!("tool:{g}"));
                    async move { Ok(json!(g)) }
                },
            )?;
            Ok(())
        }
    });
    (definition, made)
}

/// A hook never delivered to: its generation was reloaded away before any
/// event came. It goes with the reload; the fresh hook gets the events.
#[tokio::test]
async fn a_hook_never_delivered_to_is_dropped_inside_containment() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let (hook_bomb, hook_drops) = bomb();
        let (tool_bomb, tool_drops) = bomb();
        let (definition, _made) = generations(&log, hook_bomb, tool_bomb);
        host.discover([definition]).unwrap();
        host.activate("gen").await.unwrap();

        let reloaded = host.reload("gen").await.unwrap();
        assert!(matches!(reloaded, Reload::Reloaded { ref cleanup_failures } if cleanup_failures.is_empty()), "{reloaded:?}");
        assert_eq!(count(&hook_drops), 1, "the old hook went with the reload");
        assert_eq!(count(&tool_drops), 1, "the old tool went with the reload");

        let report = host.emit(Event::new("e", json!(null))).await.unwrap();
        assert!(report.diagnostics.is_empty(), "{report:?}");
        assert_eq!(log.entries(), ["hook:1"], "only the fresh hook ran");
        host.dispose().await.unwrap();
        assert_eq!((count(&hook_drops), count(&tool_drops)), (1, 1));
    })
    .await;
}

/// A tool call whose task was aborted before its first poll: its caller
/// (who passed its own cancellation, so the call has a task of its own)
/// dropped its future at once. The tool never ran; its generation is then
/// reloaded away and the tool goes with it.
#[tokio::test]
async fn a_call_aborted_before_its_first_poll_is_dropped_inside_containment() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let (hook_bomb, hook_drops) = bomb();
        let (tool_bomb, tool_drops) = bomb();
        let (definition, _made) = generations(&log, hook_bomb, tool_bomb);
        host.discover([definition]).unwrap();
        host.activate("gen").await.unwrap();

        let options = CallOptions::new().with_cancellation(CancellationToken::new());
        let mut call = Box::pin(host.call_tool_with("t", json!(1), options));
        assert!(
            poll_once(&mut call).await.is_none(),
            "the call's task has not run yet"
        );
        drop(call);
        // The aborted task is dropped at this task's next yield.
        tokio::task::yield_now().await;
        assert_eq!(log.count("tool:0"), 0, "the tool never ran");
        assert_eq!(count(&tool_drops), 0, "the live tool still holds it");

        let reloaded = host.reload("gen").await.unwrap();
        assert!(matches!(reloaded, Reload::Reloaded { .. }), "{reloaded:?}");
        assert_eq!(count(&tool_drops), 1, "the old tool went with the reload");
        assert_eq!(count(&hook_drops), 1);
        assert_eq!(
            host.call_tool("t", json!(2)).await.unwrap().into_json(),
            json!(1)
        );
        assert_eq!(log.entries(), ["tool:1"], "only the fresh tool ran");
        host.dispose().await.unwrap();
        assert_eq!((count(&hook_drops), count(&tool_drops)), (1, 1));
    })
    .await;
}
