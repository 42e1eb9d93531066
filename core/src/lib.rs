//! # exthost-core
//!
//! The pure host core: no async, no I/O, no clock, no threads, no randomness.
//! It also holds what the core and every layer above it share: identifiers
//! ([`id`]), text hygiene ([`text`]) and the stable error codes ([`error`]).
//! The crate `exthost` re-exports it as `exthost::core` (and `exthost::id`,
//! `exthost::text`, `exthost::error`).
//!
//! [`HostCore`] owns the logical state of a host: extension lifecycles (as
//! typestates, see [`lifecycle`]), the live [`ToolRegistry`], published
//! hooks, the activation order, the queue of operations and the progress of
//! the one operation that runs. Callers' commands are typed methods with
//! typed replies ([`HostCore::discover`], [`HostCore::request`],
//! [`HostCore::withdraw`], [`HostCore::register`], [`HostCore::call_start`],
//! [`HostCore::call_finished`]); the running operation advances through
//! [`HostCore::apply`], which takes an [`Input`] and returns the commands
//! ([`Effect`]s) the driver must perform, in order. The async shell
//! (`exthost::host`) and the model checker (crate `exthost-model`) both
//! drive this same code.
//!
//! Architecture invariants (no file of the core imports another in a
//! circle): `ids` and `mutant` depend on nothing; `registry` on them;
//! `lifecycle` on `ids` and `registry`; `declarations` (M-5, pure) on `ids` and
//! `registry`; `policy` (M-3 triggers and H-12 deadline overrides as
//! definition data) depends on nothing; `outcome` and `protocol` are data
//! on top of those;
//! `renaming` (handle renamings) depends on `ids` only, and `canonical` on
//! `renaming`, `lifecycle` and `outcome`; the transition code in `machine/`
//! sits on top of everything (its `canonical.rs` renames the host's own
//! handles with `canonical`'s helpers). The core never
//! imports the host, the manifests or anything async: Cargo enforces it, as
//! this crate depends on no async runtime, file-system or MCP crate.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod canonical;
pub mod declarations;
pub mod dependencies;
pub mod error;
pub mod id;
pub mod ids;
pub mod lifecycle;
pub mod machine;
pub mod mutant;
pub mod outbox;
pub mod outcome;
pub mod policy;
pub mod protocol;
pub mod reduction;
pub mod registry;
pub mod renaming;
pub mod text;
pub mod time;
#[cfg(feature = "serde-state")]
mod wire;

pub use ids::{CallId, ContextId, DisposerRef, HookRef, OpId, ToolRef};
pub use lifecycle::{
    Cancellation, Contribution, DefinitionMeta, Extension, ExtensionSlot, Status,
    namespaced_tool_name,
};
pub use machine::{
    DeclarationMismatch, DormantCall, HostCore, MISMATCH_REASON_CODES, MismatchReason, Phase,
    ProviderSelection, check_declarations, check_provider_declarations,
};
pub use mutant::Mutant;
pub use outbox::{Drained, Settled};
pub use outcome::*;
pub use policy::{
    DeadlineOverride, DeadlineOverrides, DeadlineStep, Deadlines, DefinitionPolicy, Executor,
    Placement,
};
pub use protocol::*;
pub use registry::{
    Binding, MAX_PROVIDER_DISPLAY_NAME_BYTES, ModelRecord, Owner, ProviderEntry, ProviderRecord,
    RegistryEntry, RegistryError, ToolRegistry, ToolSpec, api_name_base, is_api_name,
    validate_tool_name,
};
pub use time::{Due, Moment, Timing};
