//! Loom model-checking suites for exthost's shell primitives.
//!
//! Everything here exists only under `--cfg exthost_loom`, which also switches
//! exthost's `sync` shim to `loom::sync`, so the suites check the very
//! `exthost::queue::SerialQueue` and `exthost::publication::Published`
//! that ship (the two modules are public only under that cfg). Without the
//! cfg the library is empty and has no tests; the std-build companion of
//! the drop-outside-the-lock model is a unit test of `src/publication.rs`.
//! Run the loom suites with:
//!
//! ```sh
//! RUSTFLAGS="--cfg exthost_loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p exthost-loom-tests --release
//! ```
//!
//! * `harness`: bounded exhaustive checking with measured interleavings,
//!   and the check that a seeded bug fails for the expected reason.
//! * `queue`: the queue scenarios (mutual exclusion, FIFO start order,
//!   dropped waiters, cancelled operations, dispose behind activation, a
//!   ticket re-polled with a new waker), written once over a trait that the
//!   real queue and a seeded-bug queue implement.
//! * `publication`: the publication scenarios (a reader during a commit, over
//!   a trait that the real cell and two broken cells implement; the replaced
//!   snapshot dropped outside the lock, over a trait that the real cell and a
//!   cell dropping under its lock implement).
//! * `reload`: a reload's commit racing snapshot readers (INV-11): the real
//!   one-store commit, and two seeded commits (break before make, tools and
//!   providers in two steps); and the same race over the real registry,
//!   which holds tools and providers (M-8), with its seeded two-step commit.
//!
//! `docs/loom.md` at the workspace root lists every test, its bound, its
//! interleaving count and time, and every seeded bug.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(exthost_loom)]
pub mod harness;
#[cfg(exthost_loom)]
pub mod publication;
#[cfg(exthost_loom)]
pub mod queue;
#[cfg(exthost_loom)]
pub mod reload;
