//! Submitting operations: a request joins the core's queue and the serial
//! queue (H-3). When the queue is idle the operation begins in its caller's
//! task and runs there until it first has to wait; otherwise its driver
//! waits for its turn in a task of its own, and a caller that goes away
//! before the turn withdraws it.
//!
//! Architecture invariant: once the caller's future has returned `Pending`
//! it only waits. Everything an operation does after that runs in its
//! driver's task ([`super::drive`]); what it did before ran inside the
//! caller's one poll, which the caller cannot interrupt. So dropping the
//! caller's future, or no longer polling it, never leaves partial state
//! and never wedges the queue.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tokio_util::sync::CancellationToken;

use super::code::Event;
use super::drive::Driver;
use super::error::HostError;
use super::extension::ExtensionDefinition;
use super::inner::Inner;
use crate::queue::{Ticket, Turn};
use exthost_core::{OpId, OpKind, OpOutcome, Requested};

/// Withdraws a queued operation when its caller's future is dropped before
/// the operation began (H-3). Under the shell lock it either finds the
/// operation still queued, withdraws it from the core and tells its task to
/// give the ticket back, or finds it begun and leaves it to finish.
struct WithdrawOnDrop {
    inner: Arc<Inner>,
    op: OpId,
    withdrawn: CancellationToken,
    armed: bool,
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut shell = self.inner.lock();
        if shell.withdraw_queued(self.op) {
            self.withdrawn.cancel();
        }
    }
}

/// Runs a queued operation to its outcome: it joins the core's queue and
/// the serial queue, its driver waits for its turn in a task of its own,
/// and a caller that goes away first withdraws it (H-3).
pub(crate) async fn run(
    inner: &Arc<Inner>,
    kind: OpKind,
    event: Option<Arc<Event>>,
    operation: &'static str,
) -> Result<OpOutcome, HostError> {
    run_defining(inner, kind, None, event, operation).await
}

/// [`run`], for a redefinition: `definition` is the new definition whose
/// metadata `kind` carries; the shell keeps its code for the operation
/// until it settles.
pub(crate) async fn run_defining(
    inner: &Arc<Inner>,
    kind: OpKind,
    definition: Option<ExtensionDefinition>,
    event: Option<Arc<Event>>,
    operation: &'static str,
) -> Result<OpOutcome, HostError> {
    let lost = || HostError::TaskLost { operation };
    let (op, ticket, outcome) = {
        let mut shell = inner.lock();
        let op = match shell.request(kind) {
            Requested::Enqueued(op) => op,
            Requested::Rejected(_) => return Err(HostError::Disposed),
            Requested::JoinDispose(_) => return Err(lost()),
        };
        if let Some(definition) = definition {
            shell.stage_definition(op, definition);
        }
        let Ok(ticket) = inner.enqueue() else {
            // The queue closes only together with the core: this is
            // unreachable unless the shell has a bug; take the request
            // back so the core does not wait for it.
            let _ = shell.withdraw(op);
            return Err(HostError::Disposed);
        };
        (op, ticket, shell.await_outcome(op))
    };
    // An idle queue gives the turn at once: the operation begins here and
    // runs in this task until it first has to wait, then moves to a task
    // of its own. Otherwise it waits for its turn in its own task. Either
    // way the queue never depends on how (or whether) the caller polls.
    let mut ticket = ticket;
    if let Some(turn) = turn_now(&mut ticket) {
        Driver::run_here(inner.clone(), op, event, turn);
        // The settler was sent if the operation settled here; otherwise
        // its task sends it.
        return outcome.await.map_err(|_| lost());
    }
    let withdrawn = CancellationToken::new();
    Driver::spawn(inner.clone(), op, event, ticket, Some(withdrawn.clone()));
    let mut guard = WithdrawOnDrop {
        inner: inner.clone(),
        op,
        withdrawn,
        armed: true,
    };
    let result = outcome.await;
    guard.armed = false;
    // The settler is dropped unsent only when the task running the
    // operation was lost with no way to finish it.
    result.map_err(|_| lost())
}

/// The turn, if the queue gives it without waiting. A ticket left
/// waiting keeps the inert waker only until its task polls it.
fn turn_now(ticket: &mut Ticket) -> Option<Turn> {
    match Pin::new(ticket).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(turn) => Some(turn),
        Poll::Pending => None,
    }
}

/// Asks for the shutdown, or joins the one asked for, and waits for its
/// outcome; once asked for, it completes even if this future is dropped.
pub(crate) async fn dispose(inner: &Arc<Inner>) -> Result<(), HostError> {
    let lost = || HostError::TaskLost {
        operation: "dispose",
    };
    let mut outcome = {
        let mut shell = inner.lock();
        let outcome = shell.dispose_outcome();
        match shell.request(OpKind::Dispose) {
            Requested::Enqueued(op) => {
                let ticket = inner.enqueue_and_close().map_err(|_| lost())?;
                Driver::spawn(inner.clone(), op, None, ticket, None);
            }
            Requested::JoinDispose(_) => {}
            Requested::Rejected(_) => return Err(lost()),
        }
        outcome
    };
    let settled = outcome
        .wait_for(Option::is_some)
        .await
        .map_err(|_| lost())?;
    settled.clone().unwrap_or_else(|| Err(lost()))
}
