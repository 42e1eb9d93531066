//! H-7 and H-8: the reentrancy marker and panic containment around every
//! piece of extension code the host runs.
//!
//! Architecture invariant: depends only on `code.rs` within `host/`; the
//! shell, the drivers and the context use it, never the reverse.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::Value;

use super::code::{BoxFuture, ExtensionError, Tool};
use crate::core::Failure;

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

/// A future that turns a panic while polling `inner` into a [`Failure`].
/// The extension's future is dropped inside containment as soon as it
/// finishes, and when this wrapper is dropped unfinished (cancelled, timed
/// out or abandoned).
pub(crate) struct CatchUnwind<'a, T> {
    inner: Option<BoxFuture<'a, Result<T, ExtensionError>>>,
}

impl<'a, T> CatchUnwind<'a, T> {
    pub(crate) fn new(inner: BoxFuture<'a, Result<T, ExtensionError>>) -> Self {
        Self { inner: Some(inner) }
    }
}

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, Failure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(Err(Failure::error("polled after it finished")));
        };
        let result = match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(Ok(value))) => Ok(value),
            Ok(Poll::Ready(Err(e))) => Err(failure_of(&e)),
            Err(payload) => Err(Failure::panic(panic_message(payload))),
        };
        drop_contained(self.inner.take());
        Poll::Ready(result)
    }
}

impl<T> Drop for CatchUnwind<'_, T> {
    fn drop(&mut self) {
        drop_contained(self.inner.take());
    }
}

/// Calls a step that returns a future, containing a panic both in the call
/// and while polling.
pub(crate) async fn contain<'a, T: 'a>(
    make: impl FnOnce() -> BoxFuture<'a, Result<T, ExtensionError>>,
) -> Result<T, Failure> {
    let future = catch_unwind(AssertUnwindSafe(make))
        .map_err(|payload| Failure::panic(panic_message(payload)))?;
    CatchUnwind::new(future).await
}

/// Tool data behind [`Contained`]: its `Drop` cannot unwind into the host.
impl<T: Tool> Tool for Contained<T> {
    fn call(&self, input: Value) -> BoxFuture<'static, Result<Value, ExtensionError>> {
        match self.get() {
            Some(t) => t.call(input),
            None => Box::pin(async { Err(ExtensionError::new("the tool is gone")) }),
        }
    }
}
