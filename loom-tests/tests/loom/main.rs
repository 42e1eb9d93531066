//! The loom suites: every interleaving of the real queue and publication cell
//! within a preemption bound, and every seeded bug caught for its reason.
//!
//! Only built under `--cfg exthost_loom`; see `docs/loom.md`.
#![cfg(exthost_loom)]
#![forbid(unsafe_code)]

mod publication;
mod queue;
mod reload;
