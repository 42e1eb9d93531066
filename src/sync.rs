//! The synchronization shim under the shell's concurrency primitives.
//!
//! [`SerialQueue`](crate::queue::SerialQueue) and
//! [`Published`](crate::publication::Published) take their `Arc` and `Mutex`
//! from here: `std::sync` in every normal build,
//! `loom::sync` when the crate is compiled with `--cfg exthost_loom`, so the
//! `exthost-loom-tests` crate model-checks exactly the code that ships. Nothing
//! else in the crate changes under that cfg. (The bare `loom` cfg is not used:
//! other crates, tokio among them, give it a meaning of their own.)

#[cfg(exthost_loom)]
pub(crate) use loom::sync::{Arc, Mutex, MutexGuard};
#[cfg(not(exthost_loom))]
pub(crate) use std::sync::{Arc, Mutex, MutexGuard};

/// Locks `mutex`, ignoring poisoning.
///
/// Nothing that runs under the primitives' locks can leave their state half
/// updated if it panics (a waker is cloned before its slot is written; wakers
/// are woken, and replaced values dropped, after the guard is released), so a
/// poisoned lock still guards consistent data. Ignoring the poison keeps the
/// queue working: the host must survive panics (docs/spec.md H-8).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
