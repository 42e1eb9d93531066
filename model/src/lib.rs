//! # exthost-model
//!
//! A [stateright] model of the exthost pure core. The model's state is the
//! core's own [`HostCore`](exthost_core::HostCore) plus a small
//! environment ([`state::Env`]); its actions are the core's
//! [`Input`](exthost_core::Input)s, chosen nondeterministically within
//! [`Bounds`]; every transition is the core's real
//! [`apply`](exthost_core::HostCore::apply) (or a caller's command), the
//! core's outbox drained ([`drain_outbox`](exthost_core::HostCore::drain_outbox)),
//! and the environment observing the reply and what was drained. There is
//! no second implementation of the host's logic here: the properties judge
//! what the core did.
//!
//! The invariants of `docs/spec.md` section 6 are properties named
//! `INV-1` ... `INV-10` ([`properties`]); `sometimes` properties show the interesting
//! states are reached; [`meaning`] says what each one means. [`mutants`] lists the seeded bugs of the core and the
//! invariant each must break. [`run::check`] runs a check and builds a
//! [`run::Report`]; [`command::check_command`] is the `check` command that
//! both the `exthost-model` binary and `exthost check` (crate `exthost-cli`)
//! run.
//!
//! See `docs/model.md` for the environment, the reductions, the properties,
//! the seeded bugs and what the model does not cover, and
//! `docs/model-checking.md` for the searches and their measured state
//! counts.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod action;
pub mod canonical;
pub mod command;
pub mod distributed;
pub mod meaning;
pub mod model;
pub mod mutants;
pub mod plan;
pub mod properties;
pub mod render;
pub mod run;
pub mod scenario;
pub mod state;
pub mod swarm;
pub mod symmetry;

pub use model::{Action, HostModel};
pub use scenario::{Bounds, Scenario};
pub use state::State;
