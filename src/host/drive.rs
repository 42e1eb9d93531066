//! Running one queued operation: the performer of the commands that run
//! extension code, with supervision.
//!
//! Architecture invariants:
//! - The driver takes its commands, in order, from the queue the shell's
//!   one drain loop fills ([`super::shell::Shell::drain`]); when none is
//!   queued it asks the core what its operation awaits: nothing (the
//!   operation settled: done), its calls in flight (wait, woken by each
//!   call's end), or a step no command asked for (a shell bug: the step is
//!   fed as lost, and the core goes on).
//! - A driver runs in a task of its own, or in its caller's task until it
//!   first has to wait ([`Driver::run_here`]), and then moves, as it stands,
//!   to a task of its own: a step is never cut short by the move.
//! - A piece of extension code under a deadline runs in a task of its own
//!   (the factory on the blocking pool), so the driver can hold the
//!   deadline against code that blocks its thread or never returns; code
//!   with no deadline runs in the driver (the core's placement). Hooks
//!   under a deadline run one way on both runtime flavours: in a batch
//!   task under the driver's watchdog, one clock reading per hook
//!   ([`super::hook_watch`]).
//! - Time is data (H-12, INV-17): every input goes to the core with the
//!   clock reading taken as it is applied ([`super::link`]), and each hook
//!   of a batch with its own two readings; the core judges them against
//!   the deadlines it chose. The driver arms one timer, for the instant the
//!   core asks to be woken at (`poll_timeout`), and applies `Timeout` when
//!   it fires; whether the deadline passed is the core's answer.
//! - A driver that ends without settling its operation (its task aborted,
//!   its runtime shutting down, a bug unwinding) feeds the core `StepLost`
//!   and hands the rest of the operation, with its turn in the queue, to a
//!   fresh task, so the queue never wedges and the caller always gets an
//!   outcome.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rpds::VectorSync;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::CancellationToken;

use super::code::{Event, ExtensionError, HookFn};
use super::contain::{catch_sync, contain, drop_contained, under_queue, under_queue_thread};
use super::context::ActivationContext;
use super::executor::current_executor;
use super::hook_watch::{BatchProgress, BatchReporter, MAX_BATCH};
use super::inner::Inner;
use super::shell::{CleanupCode, Next};
use super::trace::uncaused;
use crate::error::codes;
use crate::queue::{Ticket, Turn};
use exthost_core::{
    CleanupStep, CodeRun, ContextId, Effect, Failure, HookResults, Input, LiveHook, OpId, Placement,
};

/// Aborts a task when dropped: extension code the driver stopped waiting
/// for does not run on.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn lost() -> Failure {
    Failure::coded(
        codes::EXTENSION_TASK_LOST,
        "the task running this step ended without a result",
    )
}

/// What the driver feeds for a step it stopped waiting for once the core
/// said its deadline passed: the core already counts the step as the
/// deadline's, whatever it reports (H-12).
fn abandoned(what: &str) -> Failure {
    Failure::coded(
        codes::EXTENSION_TIMEOUT,
        format!("{what} was abandoned at its deadline"),
    )
}

/// The one timer a driver arms: for the instant the core asks to be woken
/// at ([`HostCore::poll_timeout`](exthost_core::HostCore::poll_timeout)).
///
/// It is made once per driver and re-armed for each step the operation
/// runs: registering a timer with the runtime can wake the runtime's
/// driver (a system call on a runtime with I/O), re-arming it later does
/// not, so an operation pays that once, not once per step.
#[derive(Default)]
struct Wake {
    timer: Option<Pin<Box<Sleep>>>,
}

impl Wake {
    /// Resolves at `at`; never, without one.
    fn at(&mut self, at: Option<Instant>) -> impl Future<Output = ()> + '_ {
        let timer = at.map(|at| {
            if let Some(timer) = &mut self.timer {
                timer.as_mut().reset(at);
            }
            self.timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)))
        });
        async move {
            match timer {
                Some(timer) => timer.as_mut().await,
                None => std::future::pending().await,
            }
        }
    }
}

/// Runs one operation from its turn to its outcome.
pub(crate) struct Driver {
    inner: Arc<Inner>,
    op: OpId,
    event: Option<Arc<Event>>,
    turn: Option<Turn>,
    begun: bool,
    settled: bool,
    wake: Wake,
    /// The running activation's factory and `activate` run in this task
    /// (the core's placement: no activation deadline).
    activation_inline: bool,
    /// The progress of the batch of hooks running in a task of its own,
    /// whose results are not yet in `hooks_done`.
    watched: Option<Arc<BatchProgress>>,
    /// Results of the running emit's hooks not yet fed to the core.
    hooks_done: HookResults,
}

impl Driver {
    fn new(inner: Arc<Inner>, op: OpId, event: Option<Arc<Event>>) -> Self {
        Self {
            inner,
            op,
            event,
            turn: None,
            begun: false,
            settled: false,
            wake: Wake::default(),
            activation_inline: false,
            watched: None,
            hooks_done: HookResults::new(),
        }
    }

    /// Spawns the task that waits for `op`'s turn and runs it. `withdrawn`
    /// fires when the caller dropped its request before the turn came.
    pub(crate) fn spawn(
        inner: Arc<Inner>,
        op: OpId,
        event: Option<Arc<Event>>,
        ticket: Ticket,
        withdrawn: Option<CancellationToken>,
    ) {
        let host = inner.id();
        tokio::spawn(under_queue(host, async move {
            let mut driver = Driver::new(inner, op, event);
            let turn = match withdrawn {
                Some(withdrawn) => tokio::select! {
                    biased;
                    _ = withdrawn.cancelled() => {
                        driver.settled = true;
                        return;
                    }
                    turn = ticket => turn,
                },
                None => ticket.await,
            };
            driver.turn = Some(turn);
            {
                let mut shell = driver.inner.lock();
                if !shell.begin_turn(op) {
                    driver.settled = true;
                    return;
                }
                driver.begun = true;
            }
            driver.run().await;
        }));
    }

    /// Begins `op`, whose turn came at once, and runs it in the caller's
    /// task for as long as it needs no waiting: an operation whose steps
    /// all finish when first polled (hooks and an activation without a
    /// deadline, over code that does not wait) settles here, with no task
    /// and no hand-off between threads. At its first wait the operation,
    /// exactly as it stands, moves to a task of its own, so from then on it
    /// depends on its caller no more than one spawned at once would: the
    /// caller may drop its future or stop polling it, and the queue goes on.
    ///
    /// It is polled once here with a waker that does nothing (the task it
    /// moves to polls it again with its own), inside `catch_unwind`: a bug
    /// that unwinds out of the driver drops it there, and its `Drop` hands
    /// the rest of the operation to a fresh task as for a driver task that
    /// died, so the caller still gets an outcome.
    pub(crate) fn run_here(inner: Arc<Inner>, op: OpId, event: Option<Arc<Event>>, turn: Turn) {
        let host = inner.id();
        let recording = inner.recorder().is_some();
        let mut driver = Driver::new(inner, op, event);
        driver.turn = Some(turn);
        let mut operation = Box::pin(uncaused(
            recording,
            under_queue(host, async move {
                driver.begin();
                driver.run().await;
            }),
        ));
        let mut cx = Context::from_waker(Waker::noop());
        match catch_unwind(AssertUnwindSafe(|| operation.as_mut().poll(&mut cx))) {
            Ok(Poll::Ready(())) => {}
            Ok(Poll::Pending) => {
                tokio::spawn(operation);
            }
            Err(payload) => {
                tracing::error!(%op, "the operation's driver panicked in its caller's task");
                drop_contained(payload);
                drop(operation);
            }
        }
    }

    /// The operation begins: the core starts what its turn allows.
    fn begin(&mut self) {
        self.begun = true;
        let _ = self.inner.lock().apply(Input::Begin(self.op));
    }

    /// Feeds inputs in order; what they set off reaches the driver's queue
    /// through the shell's drain.
    fn feed(&self, inputs: impl IntoIterator<Item = Input>) {
        let mut shell = self.inner.lock();
        for input in inputs {
            let _ = shell.apply(input);
        }
    }

    /// The timer the core asked for fired: applies `Timeout`. True when the
    /// core acted on it (the awaited step's deadline passed: the core asks
    /// for another instant, or none); false when it fired early, and the
    /// timer is to be armed again for `next`.
    fn timeout(&self, armed: Option<Instant>) -> Result<(), Option<Instant>> {
        let mut shell = self.inner.lock();
        let _ = shell.apply(Input::Timeout { op: self.op });
        match shell.ask().poll_timeout() {
            next if next == armed => Err(next),
            _ => Ok(()),
        }
    }

    /// Performs the operation's commands until it settles.
    async fn run(&mut self) {
        loop {
            let next = self.inner.lock().next_step(self.op);
            match next {
                Next::Perform(command) => self.perform(command).await,
                Next::Settled => {
                    self.settled = true;
                    return;
                }
                Next::Calls => self.await_calls().await,
                Next::Unasked(awaiting) => {
                    // The core awaits a step no command asked for: a shell
                    // bug. The step counts as lost and the core goes on;
                    // if it refuses even that, the caller gets an answer.
                    tracing::error!(?awaiting, "the core awaits a step no command asked for");
                    let lost = self.inner.lock().apply(Input::StepLost { op: self.op });
                    if lost.is_err() {
                        self.abandon_caller();
                        return;
                    }
                }
            }
        }
    }

    /// Runs the extension code one command asks for, and feeds its result.
    async fn perform(&mut self, command: Effect) {
        match command {
            Effect::CallFactory {
                extension, context, ..
            } => self.call_factory(extension, context).await,
            Effect::RunActivate { extension, context } => {
                self.run_activate(extension, context).await
            }
            // The hooks' state is the largest of the steps' (488 bytes
            // against at most 344), and every operation's future holds
            // room for its largest step: boxed here, it costs an emit one
            // allocation and every operation's future 144 bytes less
            // (1,040 to 896). Callgrind, `fixed_costs activate-nth-no-deadline`
            // and `emit`: 4 to 7 % fewer instructions per activation, 1 %
            // per emit.
            Effect::RunHook { hooks, next, .. } => Box::pin(self.run_hooks(hooks, next)).await,
            Effect::RunCleanup { step, .. } => self.run_cleanup(step).await,
            other => tracing::error!(?other, "a command the operation driver does not perform"),
        }
    }

    /// Gives up on an operation the core no longer runs: its caller gets
    /// `EXTENSION_TASK_LOST` instead of waiting forever.
    fn abandon_caller(&mut self) {
        self.settled = true;
        let settler = self.inner.lock().take_settler(self.op);
        drop(settler);
    }

    async fn call_factory(&mut self, extension: String, context: ContextId) {
        let (placement, factory, mut wake_at) = {
            let shell = self.inner.lock();
            let (placement, factory) = shell.activation_start(self.op, &extension);
            (placement, factory, shell.ask().poll_timeout())
        };
        self.activation_inline = placement == Placement::Inline;
        self.inner.ran(|| CodeRun::Factory(context));
        let Some(factory) = factory else {
            return self.feed([Input::FactoryReturned {
                context,
                result: Err(Failure::error("no factory for this extension")),
            }]);
        };
        let host = self.inner.id();
        if self.activation_inline {
            // No deadline: nothing would stop waiting for the factory, so
            // it runs here (a factory that blocks its thread blocks this
            // operation's driver, as documented).
            let result = under_queue_thread(host, || catch_sync(|| factory()));
            return self.factory_returned(context, result);
        }
        // The factory is synchronous: it runs on the blocking pool, marked
        // as running under this host's queue, so one that blocks its thread
        // cannot hold the deadline hostage.
        let mut task = AbortOnDrop(tokio::task::spawn_blocking(move || {
            under_queue_thread(host, || catch_sync(|| factory()))
        }));
        let result = loop {
            tokio::select! {
                joined = &mut task.0 => break joined.unwrap_or_else(|_| Err(lost())),
                _ = self.wake.at(wake_at) => match self.timeout(wake_at) {
                    Ok(()) => {
                        return self.feed([Input::FactoryReturned {
                            context,
                            result: Err(abandoned("the factory")),
                        }]);
                    }
                    Err(next) => wake_at = next,
                },
            }
        };
        // Read as it is fed: the core judges it against the deadline.
        self.factory_returned(context, result)
    }

    /// Keeps the instance the factory made and feeds the result, under one
    /// lock.
    fn factory_returned(
        &self,
        context: ContextId,
        result: Result<Arc<dyn super::extension::Extension>, Failure>,
    ) {
        let mut shell = self.inner.lock();
        let result = result.map(|instance| shell.keep_instance(context, instance));
        let _ = shell.apply(Input::FactoryReturned { context, result });
    }

    async fn run_activate(&mut self, extension: String, context: ContextId) {
        let (instance, token) = self.inner.lock().activation(context);
        let Some(instance) = instance else {
            return self.feed([Input::ActivateReturned {
                context,
                result: Err(Failure::error("instance missing")),
            }]);
        };
        let cx = ActivationContext {
            host: Arc::downgrade(&self.inner) as std::sync::Weak<dyn super::context::HostLink>,
            context,
            extension,
            resources: self.inner.resources().clone(),
            cancellation: token.clone(),
        };
        self.inner.ran(|| CodeRun::Activate(context));
        if self.activation_inline {
            // No deadline: `activate` runs here, in the driver's task (under
            // the queue), until it returns or the activation is cancelled.
            let run = contain(|| instance.activate(cx));
            let result = tokio::select! {
                biased;
                _ = token.cancelled() => Err(Failure::coded(
                    codes::EXTENSION_ACTIVATION_CANCELLED,
                    "the activation was cancelled",
                )),
                result = run => result,
            };
            return self.feed([Input::ActivateReturned { context, result }]);
        }
        let mut task = AbortOnDrop(spawn_code(self.inner.id(), async move {
            contain(|| instance.activate(cx)).await
        }));
        // The factory's deadline holds for `activate` too.
        let mut wake_at = self.inner.lock().ask().poll_timeout();
        let result = loop {
            tokio::select! {
                biased;
                _ = token.cancelled() => break Err(Failure::coded(
                    codes::EXTENSION_ACTIVATION_CANCELLED,
                    "the activation was cancelled",
                )),
                joined = &mut task.0 => break joined.unwrap_or_else(|_| Err(lost())),
                _ = self.wake.at(wake_at) => match self.timeout(wake_at) {
                    Ok(()) => break Err(abandoned("activate")),
                    Err(next) => wake_at = next,
                },
            }
        };
        self.feed([Input::ActivateReturned { context, result }])
    }

    /// Runs every remaining hook of the running emit, from `hooks[start]`,
    /// one after another whatever each did (H-10), and feeds their results
    /// in one input. Where they run is the core's answer
    /// ([`HostCore::hook_placement`](exthost_core::HostCore::hook_placement)):
    /// here in the driver's task, with no task, timer or allocation per
    /// hook, when no hook deadline applies; else, on either runtime
    /// flavour, in a task of their own under a watchdog (a hook that
    /// blocks its thread past the deadline is abandoned and the remaining
    /// hooks run in a fresh task).
    async fn run_hooks(&mut self, hooks: VectorSync<LiveHook>, start: usize) {
        let op = self.op;
        let Some(event) = self.event.clone() else {
            return self.feed([Input::StepLost { op }]);
        };
        let executor = current_executor();
        let (handlers, placement) = self.inner.lock().hooks_to_run(&hooks, executor);
        let results = match placement {
            // Under a deadline, on either runtime, the hooks run in a task
            // of their own under the driver's watchdog.
            Placement::Task(Some(deadline)) | Placement::InlineBounded(deadline) => {
                self.run_hooks_watched(hooks, handlers, start, event, deadline)
                    .await
            }
            Placement::Inline | Placement::Task(None) => {
                self.run_hooks_here(&hooks, &handlers, start, &event).await
            }
        };
        self.feed([Input::HooksFinished { op, results }])
    }

    /// The hooks from `start` on, in this task. A result is kept as soon as
    /// its hook returns, so a driver dropped midway feeds what finished.
    async fn run_hooks_here(
        &mut self,
        hooks: &VectorSync<LiveHook>,
        handlers: &[Option<HookFn>],
        start: usize,
        event: &Arc<Event>,
    ) -> HookResults {
        self.hooks_done = HookResults::new();
        for i in start..hooks.len() {
            record_hook(self.inner.recorder().map(Arc::as_ref), self.op, hooks, i);
            let result = run_hook(handlers.get(i), event).await;
            self.hooks_done.push(result);
        }
        std::mem::take(&mut self.hooks_done)
    }

    /// The hooks from `start` on, in tasks of their own, each bounded by
    /// `deadline` from the moment it starts: each batch reports its
    /// progress in one atomic word ([`BatchProgress`]), and the watchdog
    /// here wakes once per deadline after the running hook's start (no
    /// timer per hook). Each batch reads the clock once per hook: a hook's
    /// end is the next one's start. A result is kept as soon as its batch
    /// ends, so a driver dropped midway feeds what finished.
    async fn run_hooks_watched(
        &mut self,
        hooks: VectorSync<LiveHook>,
        handlers: Arc<[Option<HookFn>]>,
        start: usize,
        event: Arc<Event>,
        deadline: Duration,
    ) -> HookResults {
        let clock = self.inner.clock();
        self.hooks_done = HookResults::new();
        let mut next = start;
        while next < hooks.len() {
            let end = hooks.len().min(next.saturating_add(MAX_BATCH));
            let progress = Arc::new(BatchProgress::new(clock, end - next));
            let batch = HookBatch {
                handlers: handlers.clone(),
                hooks: hooks.clone(),
                start: next,
                end,
                event: event.clone(),
                progress: progress.clone(),
                recorder: self.inner.recorder().cloned(),
                op: self.op,
            };
            self.watched = Some(progress.clone());
            let mut task = AbortOnDrop(spawn_code(self.inner.id(), batch.run()));
            let mut first_watch = true;
            let hook_timed_out = loop {
                let watch = progress.watch(deadline);
                let due = Instant::now() + watch.wait;
                // The batch gets a turn before the first timer is set: a
                // batch that ends in it (hooks that return at once) never
                // registers one. The watchdog's instant is the same.
                let yield_first = std::mem::take(&mut first_watch);
                let watchdog = async move {
                    if yield_first {
                        tokio::task::yield_now().await;
                    }
                    tokio::time::sleep_until(due).await
                };
                tokio::select! {
                    // The batch first: one that ended registers no timer.
                    biased;
                    _ = &mut task.0 => break false,
                    _ = watchdog => {
                        // The running hook outlived its deadline (it may
                        // block its thread): the batch can report nothing
                        // more, the hook's end is read now (the core judges
                        // it late), and the rest run in a fresh task.
                        if progress.abandon(watch.done) {
                            task.0.abort();
                            break true;
                        }
                    }
                }
            };
            self.watched = None;
            self.hooks_done.append(progress.take_results());
            let at = start + self.hooks_done.len();
            if hook_timed_out || at < end {
                // Given up on, or the batch ended without a word on the
                // hook it was on: no result, read now. The core judges
                // the readings: late, it timed out; else it was lost.
                self.hooks_done.push_at(Err(lost()), clock.now());
            }
            next = start + self.hooks_done.len();
        }
        std::mem::take(&mut self.hooks_done)
    }

    async fn run_cleanup(&mut self, step: CleanupStep) {
        let op = self.op;
        let (mut wake_at, code) = {
            let mut shell = self.inner.lock();
            (
                shell.ask().poll_timeout(),
                shell.cleanup_code(&step).map(|code| match code {
                    CleanupCode::Disposer(d) => Box::pin(async move { contain(d).await })
                        as std::pin::Pin<Box<dyn Future<Output = _> + Send>>,
                    CleanupCode::Instance(i) => {
                        Box::pin(async move { contain(|| i.dispose()).await })
                    }
                }),
            )
        };
        self.inner.ran(|| CodeRun::Cleanup(op, step.clone()));
        let Some(code) = code else {
            return self.feed([Input::CleanupFinished {
                op,
                result: Err(Failure::error("cleanup step missing")),
            }]);
        };
        let mut task = AbortOnDrop(spawn_code(self.inner.id(), code));
        tracing::debug!(
            extension = %step.extension,
            step = ?step.kind,
            "cleanup step"
        );
        loop {
            tokio::select! {
                joined = &mut task.0 => {
                    // Read as it is fed: the core judges it against the
                    // step's deadline.
                    let result = joined.unwrap_or_else(|_| Err(lost()));
                    return self.feed([Input::CleanupFinished { op, result }]);
                }
                _ = self.wake.at(wake_at) => match self.timeout(wake_at) {
                    // The core recorded the step as timed out and went on.
                    Ok(()) => return,
                    Err(next) => wake_at = next,
                },
            }
        }
    }

    /// Shutdown waits for an extension's calls in flight before its first
    /// cleanup step, bounded by the cleanup deadline. Each call's end
    /// wakes the driver; the wait is over when the core no longer awaits
    /// the calls (the last one ended: its next step is queued).
    async fn await_calls(&mut self) {
        loop {
            let notified = self.inner.woken();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wake_at = {
                let shell = self.inner.lock();
                if !shell.awaits_calls() {
                    return;
                }
                shell.ask().poll_timeout()
            };
            tokio::select! {
                _ = &mut notified => {}
                // Acted on or early, the loop asks again.
                _ = self.wake.at(wake_at) => {
                    let _ = self.timeout(wake_at);
                }
            }
        }
    }
}

impl Drop for Driver {
    /// The driver ends without its operation settled: finish it elsewhere.
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let op = self.op;
        let mut shell = self.inner.lock();
        if !self.begun {
            if shell.ask().is_queued(op) {
                let _ = shell.withdraw(op);
            }
            let settler = shell.take_settler(op);
            drop(shell);
            drop(settler);
            return;
        }
        if shell.ask().running_op() != Some(op) {
            let settler = shell.take_settler(op);
            drop(shell);
            drop(settler);
            return;
        }
        // The core awaits one step at a time, so the queue holds at most
        // the command of the step it awaits, which never started: that
        // step is the one lost (the command is dropped with it).
        shell.drop_commands();
        if let Some(progress) = self.watched.take() {
            progress.abandon_now();
            self.hooks_done.append(progress.take_results());
        }
        for (result, span) in std::mem::take(&mut self.hooks_done).into_results() {
            // Each result ends the hook its `RunHook` asked for; the next
            // one's command is the one the following result ends.
            let _ = shell.apply(Input::HookFinished { op, result, span });
            shell.drop_commands();
        }
        let _ = shell.apply(Input::StepLost { op });
        drop(shell);
        let mut next = Driver::new(self.inner.clone(), op, self.event.take());
        next.turn = self.turn.take();
        next.begun = true;
        next.activation_inline = self.activation_inline;
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let host = self.inner.id();
                handle.spawn(under_queue(host, async move {
                    next.run().await;
                }));
            }
            Err(_) => next.finish_without_code(),
        }
    }
}

impl Driver {
    /// No runtime is left to run extension code: every step it would run
    /// is lost (its command is dropped and the step fed as lost), and the
    /// operation settles with those failures recorded.
    fn finish_without_code(mut self) {
        // Each lost step moves the operation on; the bound only guards
        // against a core bug.
        for _ in 0..100_000 {
            let mut shell = self.inner.lock();
            if shell.ask().running_op() != Some(self.op) {
                self.settled = true;
                return;
            }
            shell.drop_commands();
            if shell.apply(Input::StepLost { op: self.op }).is_err() {
                break;
            }
        }
        self.abandon_caller();
    }
}

/// Runs extension code in a task of its own, marked as under the queue.
fn spawn_code<F>(host: u64, future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(under_queue(host, future))
}

/// Runs one hook with the emit's event, containing a panic (one flat
/// future: no state machine of its own around the hook's).
fn run_hook<'a>(
    handler: Option<&'a Option<HookFn>>,
    event: &'a Arc<Event>,
) -> impl Future<Output = Result<(), Failure>> + 'a {
    contain(move || match handler.and_then(Option::as_ref) {
        Some(f) => f(event.clone()),
        None => Box::pin(async { Err(ExtensionError::new("hook handler missing")) }),
    })
}

/// Records, for a recording host's trace, that the emit's hook `i` runs.
/// The persistent list is read only then: the hook loops themselves go by
/// index.
#[inline]
fn record_hook(
    recorder: Option<&super::trace::Recorder>,
    op: OpId,
    hooks: &VectorSync<LiveHook>,
    i: usize,
) {
    if let Some(recorder) = recorder
        && let Some(hook) = hooks.get(i)
    {
        recorder.ran(CodeRun::Hook(op, hook.hook));
    }
}

/// The hooks of one emit from `start` to `end`, run one after another in a
/// task of their own, under a watchdog.
struct HookBatch {
    handlers: Arc<[Option<HookFn>]>,
    hooks: VectorSync<LiveHook>,
    start: usize,
    end: usize,
    event: Arc<Event>,
    progress: Arc<BatchProgress>,
    recorder: Option<Arc<super::trace::Recorder>>,
    op: OpId,
}

impl HookBatch {
    async fn run(self) {
        let Some(mut reporter) = BatchReporter::begin(self.progress.clone()) else {
            return;
        };
        for i in self.start..self.end {
            record_hook(self.recorder.as_deref(), self.op, &self.hooks, i);
            let result = run_hook(self.handlers.get(i), &self.event).await;
            // One clock reading per hook: its end is the next one's start.
            if !reporter.finish(result) {
                return;
            }
        }
    }
}
