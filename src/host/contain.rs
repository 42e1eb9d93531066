//! H-7 and H-8: the reentrancy marker and panic containment around every
//! piece of extension code the host runs.
//!
//! Architecture invariant: depends only on `code.rs` and `output.rs`
//! within `host/`; the shell, the drivers and the context use it, never
//! the reverse.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;

use super::code::{BoxFuture, ExtensionError, Tool};
use super::output::ToolOutput;
use exthost_core::Failure;

tokio::task_local! {
    /// The id of the host whose queue the current task runs under.
    static UNDER_QUEUE: u64;
}

std::thread_local! {
    /// The id of the host whose queue the synchronous extension code on
    /// this thread (a factory on the blocking pool) runs under; 0 for none.
    static UNDER_QUEUE_THREAD: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// True when the current task runs extension code under host `host`'s queue.
pub(crate) fn under_queue_of(host: u64) -> bool {
    UNDER_QUEUE.try_with(|id| *id == host).unwrap_or(false)
        || UNDER_QUEUE_THREAD.with(|id| id.get() == host)
}

/// Runs synchronous extension code marked as under host `host`'s queue.
pub(crate) fn under_queue_thread<T>(host: u64, f: impl FnOnce() -> T) -> T {
    struct Reset(u64);
    impl Drop for Reset {
        fn drop(&mut self) {
            UNDER_QUEUE_THREAD.with(|id| id.set(self.0));
        }
    }
    let _reset = Reset(UNDER_QUEUE_THREAD.with(|id| id.replace(host)));
    f()
}

/// Runs `future` marked as running under host `host`'s queue.
pub(crate) fn under_queue<F: Future>(host: u64, future: F) -> impl Future<Output = F::Output> {
    UNDER_QUEUE.scope(host, future)
}

/// The text of a panic payload. The payload is extension data: it is
/// dropped inside containment, since its `Drop` may panic too.
pub(crate) fn panic_message(payload: Box<dyn Any + Send>) -> String {
    let message = if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    };
    drop_contained(payload);
    message
}

/// Drops extension data, containing a panic in its `Drop`. The payload of
/// such a panic is dropped the same way once more; a payload whose `Drop`
/// panics again is leaked rather than dropped, so no chain of hostile
/// payloads can unwind into the host.
pub(crate) fn drop_contained<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value)))
        && let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload)))
    {
        std::mem::forget(again);
    }
}

/// Extension data whose `Drop` runs inside containment wherever the last
/// owner lets go of it: under a lock, in a snapshot held by a caller, or at
/// shutdown.
pub(crate) struct Contained<T>(Option<T>);

impl<T> Contained<T> {
    pub(crate) fn new(value: T) -> Self {
        Self(Some(value))
    }

    /// The value; `None` only after [`Contained::take`].
    pub(crate) fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }

    /// Takes the value out (its drop is then the taker's business).
    pub(crate) fn take(&mut self) -> Option<T> {
        self.0.take()
    }
}

impl<T> Drop for Contained<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            drop_contained(value);
        }
    }
}

/// Calls `f`, turning a panic into a [`Failure`].
pub(crate) fn catch_sync<T>(f: impl FnOnce() -> Result<T, ExtensionError>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(failure_of(&e)),
        Err(payload) => Err(Failure::panic(panic_message(payload))),
    }
}

/// An extension's error as a [`Failure`], keeping its code when it has one.
fn failure_of(e: &ExtensionError) -> Failure {
    match e.code() {
        Some(code) => Failure::coded(code, e.message()),
        None => Failure::error(e.message()),
    }
}

/// Extension code that returns a future, called and polled with a panic
/// turned into a [`Failure`]: in the call that makes the future, in each
/// poll, and in the future's `Drop`. The future is dropped inside
/// containment as soon as it finishes, and when this wrapper is dropped
/// unfinished (cancelled, timed out or abandoned).
///
/// One flat future, not an `async` wrapper around one: code that finishes
/// at its first poll (most hooks and tools) pays one call, one poll and one
/// contained drop, with no state machine of the host's own around them.
pub(crate) struct Contain<'a, T, M> {
    /// The call that makes the future, until the first poll.
    make: Option<M>,
    /// The running future, between its call and its end.
    running: Option<BoxFuture<'a, Result<T, ExtensionError>>>,
}

/// Calls a step that returns a future, containing a panic in the call, in
/// each poll and in the drop (see [`Contain`]).
pub(crate) fn contain<'a, T, M>(make: M) -> Contain<'a, T, M>
where
    M: FnOnce() -> BoxFuture<'a, Result<T, ExtensionError>>,
{
    Contain {
        make: Some(make),
        running: None,
    }
}

// Neither field is structurally pinned: the future is boxed and pinned on
// its own, and `make` is only ever moved out, never polled.
impl<T, M> Unpin for Contain<'_, T, M> {}

impl<'a, T, M> Future for Contain<'a, T, M>
where
    M: FnOnce() -> BoxFuture<'a, Result<T, ExtensionError>>,
{
    type Output = Result<T, Failure>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(make) = this.make.take() {
            match catch_unwind(AssertUnwindSafe(make)) {
                Ok(future) => this.running = Some(future),
                Err(payload) => return Poll::Ready(Err(Failure::panic(panic_message(payload)))),
            }
        }
        let Some(running) = this.running.as_mut() else {
            return Poll::Ready(Err(Failure::error("polled after it finished")));
        };
        // The future stays outside the unwinding closure, so a panic in
        // its poll does not drop it during the unwind (a second panic in
        // its `Drop` there would abort): it is dropped below, contained.
        let result = match catch_unwind(AssertUnwindSafe(|| running.as_mut().poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Ok(value))) => Ok(value),
            Ok(Poll::Ready(Err(e))) => Err(failure_of(&e)),
            Err(payload) => Err(Failure::panic(panic_message(payload))),
        };
        drop_contained(this.running.take());
        Poll::Ready(result)
    }
}

impl<T, M> Drop for Contain<'_, T, M> {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            drop_contained(running);
        }
        // An unpolled call's captures may hold the last handle on
        // extension data.
        if let Some(make) = self.make.take() {
            drop_contained(make);
        }
    }
}

/// Tool data behind [`Contained`]: its `Drop` cannot unwind into the host.
impl<T: Tool> Tool for Contained<T> {
    fn call(&self, input: Value) -> BoxFuture<'static, Result<ToolOutput, ExtensionError>> {
        match self.get() {
            Some(t) => t.call(input),
            None => Box::pin(async { Err(ExtensionError::new("the tool is gone")) }),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Containment at each point where extension data can be dropped:
    //! before the first poll, while pending, after a panic in the poll, and
    //! in a `Contained` value.

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::Waker;

    use super::*;

    /// A value whose `Drop` counts, then panics.
    struct PanicsOnDrop(Arc<AtomicUsize>);

    impl Drop for PanicsOnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
            panic!("hostile drop");
        }
    }

    /// A future that never finishes and holds `held`.
    fn pending_holding(held: PanicsOnDrop) -> BoxFuture<'static, Result<(), ExtensionError>> {
        Box::pin(async move {
            let _held = held;
            std::future::pending::<()>().await;
            Ok(())
        })
    }

    fn poll_once<F: Future + Unpin>(future: &mut F) -> Poll<F::Output> {
        Pin::new(future).poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn an_unpolled_step_whose_closure_panics_on_drop_is_dropped_contained() {
        let drops = Arc::new(AtomicUsize::new(0));
        let held = PanicsOnDrop(drops.clone());
        let step = contain(move || pending_holding(held));
        // Dropped before its first poll: the closure (not yet called) holds
        // the hostile value.
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(step)));
        assert!(dropped.is_ok(), "the closure's drop unwound into the host");
        assert_eq!(
            drops.load(Ordering::SeqCst),
            1,
            "the captured value was not dropped"
        );
    }

    #[test]
    fn a_pending_step_whose_future_panics_on_drop_is_dropped_contained() {
        let drops = Arc::new(AtomicUsize::new(0));
        let held = PanicsOnDrop(drops.clone());
        let mut step = contain(move || pending_holding(held));
        assert!(poll_once(&mut step).is_pending());
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(step)));
        assert!(dropped.is_ok(), "the future's drop unwound into the host");
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_panic_in_the_call_or_the_poll_is_a_failure() {
        let mut made =
            contain(|| -> BoxFuture<'static, Result<(), ExtensionError>> { panic!("in the call") });
        match poll_once(&mut made) {
            Poll::Ready(Err(f)) => assert!(f.to_string().contains("in the call"), "{f}"),
            other => panic!("expected a panic failure, got {other:?}"),
        }
        let mut polled = contain(|| -> BoxFuture<'static, Result<(), ExtensionError>> {
            Box::pin(async { panic!("in the poll") })
        });
        match poll_once(&mut polled) {
            Poll::Ready(Err(f)) => assert!(f.to_string().contains("in the poll"), "{f}"),
            other => panic!("expected a panic failure, got {other:?}"),
        }
        // Polled once more after it finished: an error, not a second call.
        assert!(matches!(poll_once(&mut polled), Poll::Ready(Err(_))));
    }

    #[test]
    fn contained_data_panicking_on_drop_does_not_unwind() {
        let drops = Arc::new(AtomicUsize::new(0));
        let value = Contained::new(PanicsOnDrop(drops.clone()));
        assert!(catch_unwind(AssertUnwindSafe(move || drop(value))).is_ok());
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }
}
