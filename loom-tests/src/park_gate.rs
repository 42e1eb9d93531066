//! The park gate's scenarios (the hook ticker's handshake, H-12), written
//! once over [`GateUnderTest`], which the real [`ParkGate`] and two
//! seeded-bug gates implement: [`user_arrives_as_the_thread_stops`] and
//! [`two_users_as_the_thread_stops`] check the decisions (the thread
//! parks only if some user will wake it), [`parked_thread_is_woken`] runs
//! the real park and unpark, where a missed wake-up is a deadlock loom
//! reports.

use exthost::park_gate::ParkGate;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::thread;

use crate::harness::SLEPT_THROUGH;

/// What the scenarios need from a gate.
pub trait GateUnderTest: Send + Sync + 'static {
    /// A gate with no user and its thread running.
    fn new() -> Self;
    /// A user arrives: true if it must wake the thread.
    fn enter(&self) -> bool;
    /// A user leaves.
    fn leave(&self);
    /// The thread means to park: true if it may.
    fn stop(&self) -> bool;
    /// Parks until a user marked the thread running.
    fn wait_until_running(&self);
}

impl GateUnderTest for ParkGate {
    fn new() -> Self {
        ParkGate::new()
    }
    fn enter(&self) -> bool {
        ParkGate::enter(self)
    }
    fn leave(&self) {
        ParkGate::leave(self);
    }
    fn stop(&self) -> bool {
        ParkGate::stop(self)
    }
    fn wait_until_running(&self) {
        ParkGate::wait_until_running(self);
    }
}

/// The users and the running flag of a seeded gate, with the parts both
/// seeded gates share.
#[derive(Debug)]
struct Flags {
    users: AtomicUsize,
    running: AtomicBool,
}

impl Flags {
    fn new() -> Self {
        Self {
            users: AtomicUsize::new(0),
            running: AtomicBool::new(true),
        }
    }
    fn leave(&self) {
        self.users.fetch_sub(1, Ordering::AcqRel);
    }
    fn wait_until_running(&self) {
        while !self.running.load(Ordering::Acquire) {
            thread::park();
        }
    }
}

/// Seeded bug: the thread marks itself stopped and parks without looking
/// for a user that arrived before it did, so that user, which saw it
/// running, never wakes it.
#[derive(Debug)]
pub struct NoRecheckGate(Flags);

impl GateUnderTest for NoRecheckGate {
    fn new() -> Self {
        Self(Flags::new())
    }
    fn enter(&self) -> bool {
        self.0.users.fetch_add(1, Ordering::SeqCst);
        !self.0.running.swap(true, Ordering::SeqCst)
    }
    fn leave(&self) {
        self.0.leave();
    }
    fn stop(&self) -> bool {
        self.0.running.store(false, Ordering::SeqCst);
        true
    }
    fn wait_until_running(&self) {
        self.0.wait_until_running();
    }
}

/// Seeded bug: the real protocol with acquire-release accesses and no
/// fences, so each side's load may miss the other's store (store
/// buffering): the thread sees no user and the user sees it running.
#[derive(Debug)]
pub struct NoFenceGate(Flags);

impl GateUnderTest for NoFenceGate {
    fn new() -> Self {
        Self(Flags::new())
    }
    fn enter(&self) -> bool {
        let Self(flags) = self;
        flags.users.fetch_add(1, Ordering::AcqRel);
        if flags.running.load(Ordering::Acquire) {
            return false;
        }
        flags.running.store(true, Ordering::Release);
        true
    }
    fn leave(&self) {
        self.0.leave();
    }
    fn stop(&self) -> bool {
        let Self(flags) = self;
        flags.running.store(false, Ordering::Release);
        if flags.users.load(Ordering::Acquire) > 0 {
            flags.running.store(true, Ordering::Release);
            return false;
        }
        true
    }
    fn wait_until_running(&self) {
        self.0.wait_until_running();
    }
}

/// H-12 (the ticker runs while hooks use it): the thread decides whether
/// to park while a user arrives. If it may park, the user must have been
/// told to wake it.
pub fn user_arrives_as_the_thread_stops<G: GateUnderTest>() {
    let gate = Arc::new(G::new());
    let thread = {
        let gate = gate.clone();
        thread::spawn(move || gate.stop())
    };
    let wakes = gate.enter();
    let parks = thread.join().unwrap();
    assert!(
        !parks || wakes,
        "{SLEPT_THROUGH}: the thread parked and its user did not wake it"
    );
}

/// The same with two users, one of which leaves again: if the thread may
/// park, one of them must have been told to wake it (a wake-up by the one
/// that left is still one, after which the thread lingers and stops
/// again).
pub fn two_users_as_the_thread_stops<G: GateUnderTest>() {
    let gate = Arc::new(G::new());
    let thread = {
        let gate = gate.clone();
        thread::spawn(move || gate.stop())
    };
    let passing = {
        let gate = gate.clone();
        thread::spawn(move || {
            let wakes = gate.enter();
            gate.leave();
            wakes
        })
    };
    let staying = gate.enter();
    let parks = thread.join().unwrap();
    let passing = passing.join().unwrap();
    assert!(
        !parks || staying || passing,
        "{SLEPT_THROUGH}: the thread parked with a user in and none woke it"
    );
}

/// The real park and unpark: the thread stops and parks if allowed, the
/// user unparks it if told to; the thread must get past its park (loom
/// reports a thread parked for ever as a deadlock).
pub fn parked_thread_is_woken<G: GateUnderTest>() {
    let gate = Arc::new(G::new());
    let thread = {
        let gate = gate.clone();
        thread::spawn(move || {
            if gate.stop() {
                gate.wait_until_running();
            }
        })
    };
    if gate.enter() {
        thread.thread().unpark();
    }
    thread.join().unwrap();
}
