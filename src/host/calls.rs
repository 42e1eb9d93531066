//! Tool calls: admitted by the core, run in the caller's task or in a task
//! of their own, tracked in flight so that cleanup waits for them (H-11,
//! INV-12).
//!
//! Architecture invariant: whether a call may start, where it runs
//! ([`Placement`]: in the caller's task unless a call deadline applies on
//! an executor with several threads or the call must go on after its
//! caller stops waiting; bounded there when a deadline applies), and what
//! its caller gets when it ends (the tool's result, a timeout, or nothing
//! because its extension's cleanup abandoned it) are the core's answers
//! to `call_start`, `call_placement` and `call_finished`. The shell only
//! runs the tool, keeps its signals, and reports.

use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::time::{Instant, Sleep};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::call_options::{CALL, CallOptions, CallScope, CallSignals};
use super::code::Tool;
use super::contain::contain;
use super::error::HostError;
use super::executor::current_executor;
use super::inner::Inner;
use super::output::ToolOutput;
use super::trace::CodeRun;
use exthost_core::{CallId, CallRefused, CallVerdict, Failure, Placement};

/// The cancellation signal of the tool call running in this task, if any.
///
/// It fires when the host begins to clean up the call's extension (at
/// shutdown): the host then waits for the call, bounded by the cleanup
/// deadline, before the extension's first disposer runs, and abandons it
/// (`EXTENSION_TIMEOUT` for its caller) if it outlives the wait. A tool that
/// does long work should watch it.
pub fn current_call_cancellation() -> Option<CancellationToken> {
    CALL.try_with(|call| call.signals.token()).ok()
}

/// Ends call `call` in the core, once: whoever gets here first (the call's
/// task, its deadline, its dropped caller) reports it. What the report sets
/// off for the running operation (the shutdown waiting for this call goes
/// on) reaches that operation's driver through the shell's drain, which
/// wakes it.
///
/// The report goes with the clock reading taken as the core hears it, and
/// the core judges it against the call's deadline (INV-17).
fn finish(inner: &Inner, call: CallId) -> CallVerdict {
    let ended = inner.lock().end_call(call);
    let Some((verdict, signals)) = ended else {
        return CallVerdict::Discarded;
    };
    // The call's signals (with its task's abort handle) hold no extension
    // data: they are dropped here, after the lock, with no trip through
    // the graveyard.
    drop(signals);
    verdict
}

/// Reports a call whose caller went away.
struct FinishOnDrop<'a> {
    inner: &'a Inner,
    call: CallId,
    /// The call's signals: abandoning them aborts its task, when it has
    /// one.
    signals: &'a CallSignals,
    armed: bool,
}

impl Drop for FinishOnDrop<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.signals.abandon();
            finish(self.inner, self.call);
        }
    }
}

fn timed_out(name: &str, deadline: Option<Duration>) -> HostError {
    HostError::CallTimedOut {
        name: name.to_owned(),
        message: match deadline {
            Some(d) => format!("the call did not finish within its deadline of {d:?}"),
            None => "the call outlived its extension's cleanup wait and was abandoned".to_owned(),
        },
    }
}

/// Calls the live tool `name` with the caller's `options`.
pub(crate) async fn call(
    inner: &Arc<Inner>,
    name: &str,
    input: Value,
    options: CallOptions,
) -> Result<ToolOutput, HostError> {
    let CallOptions {
        cancellation: caller_cancel,
        progress,
    } = options;
    if caller_cancel
        .as_ref()
        .is_some_and(CancellationToken::is_cancelled)
    {
        return Err(HostError::CallCancelled {
            name: name.to_owned(),
        });
    }
    let executor = current_executor();
    let (call, tool, signals, placement, due) = {
        let mut shell = inner.lock();
        let admitted = match shell.call_start(name) {
            Ok(admitted) => admitted,
            Err(CallRefused::Dormant { extension }) => {
                let revoked = shell.ask().is_revoked(&extension);
                return Err(HostError::ActivationDenied {
                    name: name.to_owned(),
                    extension,
                    revoked,
                });
            }
            Err(CallRefused::HostDisposed) => return Err(HostError::Disposed),
            Err(CallRefused::NotFound) => {
                return Err(HostError::ToolNotFound {
                    name: name.to_owned(),
                });
            }
        };
        let signals = Arc::new(CallSignals::default());
        let (placement, tool) = shell.place_call(
            &admitted,
            caller_cancel.is_some(),
            executor,
            signals.clone(),
        );
        (admitted.call, tool, signals, placement, admitted.due)
    };
    let Some(tool) = tool else {
        finish(inner, call);
        return Err(HostError::ToolNotFound {
            name: name.to_owned(),
        });
    };
    inner.ran(|| CodeRun::Tool(call));
    // The instant its one timer is armed for (the core's deadline), and
    // the deadline for the timeout's message.
    let timer_at = due.map(|due| inner.clock().instant(due.at));
    let bound = due.map(|due| due.deadline);
    match placement {
        Placement::Inline | Placement::InlineBounded(_) => {}
        // The task path is boxed: the inline path's future, the common
        // one, stays small (no copy of the task path's state on every
        // move).
        Placement::Task(_) => {
            return Box::pin(call_in_task(
                inner,
                name,
                call,
                tool,
                input,
                CallScope {
                    signals,
                    progress,
                    caller: caller_cancel,
                },
                bound.zip(timer_at),
            ))
            .await;
        }
    }
    let mut guard = FinishOnDrop {
        inner,
        call,
        signals: &signals,
        armed: true,
    };
    let scope = CallScope {
        signals: signals.clone(),
        progress,
        caller: None,
    };
    let run = CALL.scope(scope, contain(move || tool.call(input)));
    let mut run = std::pin::pin!(run);
    // Set when a bounded tool is first pending: a tool that returns at its
    // first poll registers no timer.
    let mut timer: Option<std::pin::Pin<Box<Sleep>>> = None;
    // The tool runs here, in the caller's task; shutdown's `AbandonCalls`
    // ends the wait (and drops the tool's future, inside containment), and
    // so does the deadline when one applies (the core placed the call here
    // because a task of its own would hold it no better: one thread runs
    // every task). A caller that drops this future drops the tool's too,
    // and the guard reports the call ended.
    let ended = std::future::poll_fn(|cx| {
        if let Poll::Ready(result) = run.as_mut().poll(cx) {
            return Poll::Ready(Ended::Returned(result));
        }
        if let Some(at) = timer_at {
            let timer = timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ended::DeadlinePassed);
            }
        }
        signals.poll_abandoned(cx).map(|()| Ended::Abandoned)
    })
    .await;
    guard.armed = false;
    let outcome = match ended {
        // A tool that blocked the thread past its deadline and then
        // returned is late, as from a task of its own: the core judges the
        // reading.
        Ended::Returned(result) => Some((result, finish(inner, call))),
        Ended::DeadlinePassed => {
            return Err(match finish(inner, call) {
                CallVerdict::TimedOut | CallVerdict::Delivered => timed_out(name, bound),
                // Its extension's cleanup abandoned it first.
                CallVerdict::Discarded => timed_out(name, None),
            });
        }
        Ended::Abandoned => None,
    };
    answer(name, bound, outcome)
}

/// How a call in its caller's task ended.
enum Ended {
    /// The tool returned (or panicked).
    Returned(Result<ToolOutput, Failure>),
    /// Its deadline passed while the tool was pending.
    DeadlinePassed,
    /// Its extension's cleanup abandoned it.
    Abandoned,
}

/// A call in a task of its own: bounded by its deadline, and able to go on
/// after its caller returned on its own cancellation.
#[allow(clippy::too_many_arguments)]
async fn call_in_task(
    inner: &Arc<Inner>,
    name: &str,
    call: CallId,
    tool: Arc<dyn Tool>,
    input: Value,
    scope: CallScope,
    due: Option<(Duration, Instant)>,
) -> Result<ToolOutput, HostError> {
    let caller_cancel = scope.caller.clone();
    let signals = scope.signals.clone();
    let deadline = due.map(|(deadline, _)| deadline);
    // The task holds the host weakly: a host whose last handle goes
    // without `dispose` while the call runs on (its caller left) is freed,
    // and its drop aborts this task.
    let task_inner = Arc::downgrade(inner);
    // The task's own output is the report: it ends right after the core
    // answered, with no await in between, so an abort that comes later
    // finds the report already there.
    let mut task = tokio::spawn(CALL.scope(scope, async move {
        let result = contain(move || tool.call(input)).await;
        let verdict = match task_inner.upgrade() {
            Some(inner) => finish(&inner, call),
            None => CallVerdict::Discarded,
        };
        (result, verdict)
    }));
    let abort = task.abort_handle();
    // Shutdown's abandonment aborts it from now on; if it came first, the
    // task is aborted here.
    signals.attach(abort.clone());
    let mut guard = FinishOnDrop {
        inner,
        call,
        signals: &signals,
        armed: true,
    };
    let sleep = async {
        match due {
            Some((_, at)) => {
                // The call's task gets a turn before the timer is set: a
                // call that ends in it never registers one. The deadline
                // is the same instant either way.
                tokio::task::yield_now().await;
                tokio::time::sleep_until(at).await
            }
            None => std::future::pending().await,
        }
    };
    let caller_cancelled = async {
        match &caller_cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let outcome = tokio::select! {
        biased;
        reported = &mut task => reported.ok(),
        _ = std::future::poll_fn(|cx| signals.poll_abandoned(cx)) => None,
        _ = caller_cancelled => {
            // The tool hears it; the call stays tracked until it returns,
            // so shutdown still drains it (H-11, INV-12).
            signals.cancel();
            guard.armed = false;
            return Err(HostError::CallCancelled { name: name.to_owned() });
        }
        _ = sleep => {
            abort.abort();
            let verdict = finish(inner, call);
            guard.armed = false;
            match verdict {
                // The core's answer: the caller gets the timeout.
                CallVerdict::TimedOut | CallVerdict::Delivered => {
                    return Err(timed_out(name, deadline));
                }
                // The call had already ended (its task reported first,
                // between the deadline and this report, and sends what
                // the core answered it without waiting), or its cleanup
                // abandoned it (its task is gone): whatever the core
                // answered then is the caller's.
                CallVerdict::Discarded => (&mut task).await.ok(),
            }
        }
    };
    guard.armed = false;
    answer(name, deadline, outcome)
}

/// What the caller gets: the tool's result when the core delivered it,
/// else a timeout (its own deadline, or its extension's cleanup abandoned
/// the call).
fn answer(
    name: &str,
    deadline: Option<Duration>,
    outcome: Option<(Result<ToolOutput, Failure>, CallVerdict)>,
) -> Result<ToolOutput, HostError> {
    match outcome {
        Some((result, CallVerdict::Delivered)) => result.map_err(|f| tool_failed(name, f)),
        Some((_, CallVerdict::TimedOut)) => Err(timed_out(name, deadline)),
        Some((_, CallVerdict::Discarded)) | None => Err(timed_out(name, None)),
    }
}

fn tool_failed(name: &str, f: Failure) -> HostError {
    HostError::ToolFailed {
        name: name.to_owned(),
        message: f.message,
        panicked: f.panicked,
        code: f.code,
    }
}
