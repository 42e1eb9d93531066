//! The pure host core: no async, no I/O, no clock, no threads, no randomness.
//!
//! [`HostCore`] owns the logical state of a host: extension lifecycles (as
//! typestates, see [`lifecycle`]), the live [`ToolRegistry`], published
//! hooks, the activation order, the queue of operations and the progress of
//! the one operation that runs. [`HostCore::apply`] is the transition
//! function: it takes an [`Input`] and returns the [`Effect`]s the driver must
//! perform, in order. The async shell ([`crate::host`]) and the model checker
//! (crate `exthost-model`) both drive this same code.

pub mod canonical;
pub mod ids;
pub mod lifecycle;
pub mod machine;
pub mod outcome;
pub mod registry;
mod renaming;

pub use ids::{CallId, ContextId, DisposerRef, HookRef, OpId, ToolRef};
pub use lifecycle::{Cancellation, Contribution, DefinitionMeta, Extension, ExtensionSlot, Status};
pub use machine::{HostCore, Mutant, Phase, check_declarations};
pub use outcome::*;
pub use registry::{
    Binding, Owner, RegistryEntry, RegistryError, ToolRegistry, ToolSpec, api_name_base,
    is_api_name, validate_tool_name,
};
