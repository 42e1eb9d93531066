//! The handshake of a helper thread that runs only while it has users and
//! parks when it has none (the hook ticker, `host::ticker`, H-12): a user
//! that arrives while the thread decides to park is either seen by the
//! thread, which then runs on, or sees the thread stopping and wakes it;
//! never neither, so the thread never sleeps through a user.
//!
//! Internal: public only for the loom suites (`loom-tests/`); not part of
//! the API an embedding program uses.
//!
//! Architecture invariants:
//! - It is the store-buffering (Dekker) pattern. A user counts itself in,
//!   then a sequentially consistent fence, then reads whether the thread
//!   runs; the thread marks itself stopped, then the same fence, then
//!   reads the users. The two fences are ordered, so the side whose fence
//!   comes second sees the other's store.
//! - The fences, rather than sequentially consistent loads and stores, are
//!   what loom models (it takes such accesses for acquire-release ones);
//!   they cost one instruction per arrival of a user and per stop, both
//!   rare.
//! - Waking is the caller's: [`ParkGate::enter`] says when the thread
//!   must be unparked, and [`ParkGate::wait_until_running`] parks until a
//!   user marked it running. A spurious wake-up, or an unpark of a thread
//!   that did not park, only costs a look at the flag.

use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use crate::sync::thread;

/// Users of a helper thread, and whether it runs: see the module docs.
///
/// ```
/// use exthost::park_gate::ParkGate;
///
/// let gate = ParkGate::new();
/// assert!(!gate.enter(), "a running thread needs no wake-up");
/// assert!(!gate.stop(), "a thread with a user runs on");
/// gate.leave();
/// assert!(gate.stop(), "a thread with no user may park");
/// assert!(gate.enter(), "the next user wakes it");
/// gate.wait_until_running(); // returns at once: the user marked it running
/// ```
#[derive(Debug)]
pub struct ParkGate {
    users: AtomicUsize,
    running: AtomicBool,
}

impl ParkGate {
    /// A gate with no user and its thread running.
    pub fn new() -> Self {
        Self {
            users: AtomicUsize::new(0),
            running: AtomicBool::new(true),
        }
    }

    /// A user arrives. True if the thread stopped (or is stopping) and the
    /// caller must unpark it; the thread is marked running either way.
    #[must_use = "a true answer means the thread must be unparked"]
    pub fn enter(&self) -> bool {
        self.users.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.running.load(Ordering::Relaxed) {
            return false;
        }
        self.running.store(true, Ordering::Release);
        true
    }

    /// A user leaves.
    pub fn leave(&self) {
        self.users.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether some user is in.
    pub fn in_use(&self) -> bool {
        self.users.load(Ordering::Relaxed) > 0
    }

    /// False while the thread is stopped (parked, or about to be): a user
    /// arriving now would have to wake it.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// The thread, with nothing to do, means to park. True if it may: no
    /// user was in, and the next one to arrive will wake it. False if a
    /// user was in: the thread runs on.
    #[must_use = "a true answer is the only one that allows parking"]
    pub fn stop(&self) -> bool {
        self.running.store(false, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        if self.users.load(Ordering::Relaxed) > 0 {
            self.running.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Parks the calling thread (the gate's) until a user marked it
    /// running; called after [`ParkGate::stop`] said it may park.
    pub fn wait_until_running(&self) {
        while !self.is_running() {
            thread::park();
        }
    }
}

impl Default for ParkGate {
    fn default() -> Self {
        Self::new()
    }
}
