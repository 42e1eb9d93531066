//! The host behind every [`super::ExtensionHost`] clone: the shell behind
//! its one lock, the serial queue (H-3), the published snapshot (H-9), and
//! what runs extension code needs of the host.
//!
//! Architecture invariants:
//! - The shell is reached only through [`Inner::lock`], whose guard
//!   publishes the snapshot the core committed before the lock is
//!   released, then wakes the driver, drops the graveyard and delivers the
//!   outcomes ([`super::shell::AfterLock`]).
//! - The fields are this module's own: the other files of `host/` use the
//!   methods.

use std::any::Any;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{Notify, futures::Notified, watch};

use super::contain::drop_contained;
use super::context::{HostLink, Kept};
use super::shell::Shell;
use super::snapshot::ToolSnapshot;
use super::trace::Recorder;
use crate::publication::Published;
use crate::queue::{QueueClosed, SerialQueue, Ticket};
use crate::resources::ResourceLoader;
use exthost_core::{CodeRun, ContextId, Registration};

/// The host behind every [`super::ExtensionHost`] clone.
pub(crate) struct Inner {
    id: u64,
    shell: Mutex<Shell>,
    queue: SerialQueue,
    published: Published<ToolSnapshot>,
    /// Counts publications, for [`super::ExtensionHost::tool_changes`].
    changes: watch::Sender<u64>,
    resources: ResourceLoader,
    /// Wakes the running operation's driver when an input it did not feed
    /// (a tool call ending) set off commands for it, or ended the wait for
    /// calls it awaits.
    wake: Notify,
    recorder: Option<Arc<Recorder>>,
    clock: super::clock::Clock,
}

impl Inner {
    /// The host numbered `id` over `shell`, whose snapshot is published
    /// first.
    pub fn new(
        id: u64,
        shell: Shell,
        resources: ResourceLoader,
        recorder: Option<Arc<Recorder>>,
    ) -> Self {
        Self {
            id,
            clock: shell.ask().clock(),
            published: Published::new(shell.snapshot()),
            shell: Mutex::new(shell),
            queue: SerialQueue::new(),
            changes: watch::Sender::new(0),
            resources,
            wake: Notify::new(),
            recorder,
        }
    }

    /// The host's number, which marks the tasks running under its queue
    /// (H-7).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The host's clock (the same for its whole life: read without the
    /// lock).
    pub fn clock(&self) -> super::clock::Clock {
        self.clock
    }

    /// Locks the shell.
    pub fn lock(&self) -> ShellGuard<'_> {
        ShellGuard {
            // Extension code never runs under this lock and extension data
            // is never dropped under it, so a poisoned lock can only come
            // from a bug in the shell itself; its data is still consistent
            // because every update is a single apply.
            guard: Some(self.shell.lock().unwrap_or_else(|p| p.into_inner())),
            published: &self.published,
            changes: &self.changes,
            wake: &self.wake,
        }
    }

    /// A ticket in the serial queue (H-3).
    pub fn enqueue(&self) -> Result<Ticket, QueueClosed> {
        self.queue.enqueue()
    }

    /// The last ticket in the serial queue, which closes it (shutdown).
    pub fn enqueue_and_close(&self) -> Result<Ticket, QueueClosed> {
        self.queue.enqueue_and_close()
    }

    /// The published snapshot (H-9).
    pub fn tools(&self) -> Arc<ToolSnapshot> {
        self.published.load()
    }

    /// A receiver of every publication.
    pub fn tool_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The trusted resource loader, for activation contexts.
    pub fn resources(&self) -> &ResourceLoader {
        &self.resources
    }

    /// Resolves when the running operation's driver is woken.
    pub fn woken(&self) -> Notified<'_> {
        self.wake.notified()
    }

    /// The recording of this host's run, when a test records it.
    pub fn recorder(&self) -> Option<&Arc<Recorder>> {
        self.recorder.as_ref()
    }

    /// Records extension code the shell runs, when recording.
    pub fn ran(&self, code: impl FnOnce() -> CodeRun) {
        if let Some(recorder) = &self.recorder {
            recorder.ran(code());
        }
    }
}

/// A locked shell. When the guard is dropped it publishes a new snapshot if
/// the core asked for one (so the snapshot includes every table change made
/// under the same lock), releases the lock, wakes the driver if commands
/// reached it, drops the graveyard, inside containment, and only then
/// hands settled operations their outcomes.
pub(crate) struct ShellGuard<'a> {
    guard: Option<MutexGuard<'a, Shell>>,
    published: &'a Published<ToolSnapshot>,
    changes: &'a watch::Sender<u64>,
    wake: &'a Notify,
}

impl std::ops::Deref for ShellGuard<'_> {
    type Target = Shell;
    fn deref(&self) -> &Shell {
        self.guard.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for ShellGuard<'_> {
    fn deref_mut(&mut self) -> &mut Shell {
        self.guard.as_mut().expect("held until drop")
    }
}

impl Drop for ShellGuard<'_> {
    fn drop(&mut self) {
        let Some(mut guard) = self.guard.take() else {
            return;
        };
        let Some(mut after) = guard.release() else {
            return;
        };
        let previous = after.take_snapshot().map(|s| self.published.replace(s));
        drop(guard);
        if after.wake {
            self.wake.notify_one();
        }
        if after.announce {
            self.changes.send_modify(|n| *n += 1);
        }
        // What the operation let go of is dropped before its outcome is
        // delivered: a caller woken by its outcome finds it gone (H-14).
        drop_contained(previous);
        after.deliver();
    }
}

/// How an activation context reaches its host (H-6): stage in the core,
/// keep the code in the shell's tables, under one lock.
impl HostLink for Inner {
    fn register(&self, context: ContextId, registration: Registration, kept: Kept) -> bool {
        self.lock().register(context, registration, kept)
    }

    fn host(self: Arc<Self>) -> Arc<dyn Any + Send + Sync> {
        self
    }
}

impl Drop for Inner {
    /// The last handle went away without `dispose`: the shell says so and
    /// lets go of the extensions' code, inside containment.
    fn drop(&mut self) {
        self.shell
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .host_dropped();
    }
}
