//! H-7 and H-8: the reentrancy marker and panic containment around every
//! piece of extension code the host runs.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

use super::extension::{BoxFuture, ExtensionError};
use crate::core::Failure;

tokio::task_local! {
    /// The id of the host whose queue the current task runs under.
    static UNDER_QUEUE: u64;
}

/// True when the current task runs extension code under host `host`'s queue.
pub(crate) fn under_queue_of(host: u64) -> bool {
    UNDER_QUEUE.try_with(|id| *id == host).unwrap_or(false)
}

/// Runs `future` marked as running under host `host`'s queue.
pub(crate) fn under_queue<F: Future>(host: u64, future: F) -> impl Future<Output = F::Output> {
    UNDER_QUEUE.scope(host, future)
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: Box<dyn Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
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
pub(crate) struct CatchUnwind<'a, T> {
    inner: BoxFuture<'a, Result<T, ExtensionError>>,
}

impl<'a, T> CatchUnwind<'a, T> {
    pub(crate) fn new(inner: BoxFuture<'a, Result<T, ExtensionError>>) -> Self {
        Self { inner }
    }
}

impl<T> Future for CatchUnwind<'_, T> {
    type Output = Result<T, Failure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = &mut self.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(Ok(value))) => Poll::Ready(Ok(value)),
            Ok(Poll::Ready(Err(e))) => Poll::Ready(Err(failure_of(&e))),
            Err(payload) => Poll::Ready(Err(Failure::panic(panic_message(payload)))),
        }
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
