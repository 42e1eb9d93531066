//! # exthost
//!
//! A host for the extensions of AI-agent runtimes (tools, event hooks,
//! cleanup) that proves what it promises. The contract, rule by rule with
//! the harm each rule prevents, is `docs/spec.md`; `docs/README.md` indexes
//! the documentation and traces every invariant to its checks.
//!
//! ## Quickstart
//!
//! An extension contributes a tool through its activation context; the host
//! publishes it only when the whole activation succeeded, and shuts it down
//! in reverse order. The host's operations are async and need a tokio
//! runtime.
//!
//! ```
//! use exthost::host::{
//!     ActivationContext, BoxFuture, Extension, ExtensionDefinition, ExtensionError,
//!     ExtensionHost, HostOptions, ToolDescriptor,
//! };
//! use exthost::{ResourceLoader, ResourceRoot};
//! use serde_json::{Value, json};
//!
//! struct Greeter;
//!
//! impl Extension for Greeter {
//!     fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
//!         Box::pin(async move {
//!             let greet = ToolDescriptor::new("greet", "Greet someone.", json!({"type": "object"}));
//!             cx.register_tool(greet, |input: Value| async move {
//!                 let name = input["name"].as_str().unwrap_or("world").to_owned();
//!                 Ok(json!({ "greeting": format!("hello, {name}") }))
//!             })
//!             .map_err(|e| ExtensionError::new(e.to_string()))?;
//!             Ok(())
//!         })
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let resources = ResourceLoader::create([ResourceRoot::new("tmp", std::env::temp_dir())])?;
//! let host = ExtensionHost::new(HostOptions::new(resources))?;
//! host.discover([ExtensionDefinition::new("greeter", || Ok(Greeter))])?; // runs no code
//! assert!(host.tools().is_empty());
//!
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! runtime.block_on(async {
//!     host.activate("greeter").await?; // factory, activate(context), one commit
//!     let answer = host.call_tool("greet", json!({"name": "Ada"})).await?;
//!     assert_eq!(answer.into_json(), json!({"greeting": "hello, Ada"}));
//!     host.dispose().await // reverse order, every step, failures aggregated
//! })?;
//! # Ok(())
//! # }
//! ```
//!
//! The `exthost` command line (crate `exthost-cli`, `docs/cli.md`) does the
//! same from a folder of manifests: `exthost inspect`, `exthost call`.
//!
//! ## Modules
//!
//! | module | what |
//! |---|---|
//! | [`id`] | ID-1: the one identifier rule, [`validate_id_segment`] |
//! | [`resources`] | the trusted-root loader, [`ResourceLoader`] (R-1 to R-11) |
//! | [`host`] | the async shell: [`host::ExtensionHost`], its context, manifests in the host (H-1 to H-12) |
//! | [`core`] | what an embedding program meets of the crate `exthost-core` (the pure host: typestates, tool registry, the transition function the model checker explores): statuses, failures, the registry, handles |
//! | [`manifest`] | manifest schema, validation, classes, triggers, schema digests (M-1 to M-7) |
//! | [`error`] | every stable error code, [`error::codes`], and [`CodedError`], the one way an error carries one |
//! | [`process`] | the MCP stdio runtime, an adapter over the host's public API (feature `process`) |
//!
//! ## Guarantees, and their limits
//!
//! **Resources fail closed.** A resource is read only from the trusted roots,
//! in order; traversal, symlinks leaving the root, device names, swapped
//! roots, non-files, files over 1 MiB and invalid UTF-8 are each refused with
//! a stable code. Limit: this is a file boundary, not a sandbox: a hard link
//! inside a root is served, and in-process extension code can still use
//! `std::fs` directly (`docs/resources.md`).
//!
//! **Activation is all or nothing.** An extension's tools and hooks go live
//! in one commit, after its `activate` succeeded and the whole set
//! validated; a failure rolls back every disposer in reverse order, and the
//! extension can be retried. Limit: the rollback runs the extension's own
//! disposers; what it started without registering a disposer is not tracked
//! (`docs/host.md`).
//!
//! **Shutdown is complete and ordered.** Every cleanup step runs once, in
//! reverse activation and registration order, each bounded by the cleanup
//! deadline when one is set, and every failure is reported in one
//! aggregate. Limit: a step that
//! outlives its deadline is abandoned, not killed; in-process code cannot be
//! stopped by force (`docs/hostile-code.md`).
//!
//! **Manifests start extensions lazily and are held to their word.**
//! Discovery reads metadata only; declared tools are visible before their
//! extension runs, and what it registers must match what it declared.
//! Process extensions host unchanged MCP stdio servers with the same
//! guarantees ([`process`], `docs/process.md`). An active extension can be
//! reloaded in one commit (H-12), dependencies activate first and shut down
//! last (H-13), and extensions contribute model providers (M-8)
//! (`docs/spec.md`).
//!
//! **The logic is model-checked.** The stateright model in `exthost-model`
//! explores the real core (the crate `exthost-core`, whose public types
//! this crate names in [`core`]) and checks INV-1 to INV-18 on every reachable state, and each
//! seeded bug must be caught. Limit: the check is exhaustive only within its bounds, and covers
//! the core; the async shell is checked by loom (its queue and publication
//! cell), by trace validation of every recorded integration run against the
//! core, and by fault simulation (`docs/model-checking.md`, `docs/loom.md`,
//! `docs/hostile-code.md`).
//!
//! Every error carries a stable code, listed in [`error::codes`]: it
//! implements [`CodedError`], and its `Display` is `CODE: message`.
//! `docs/architecture.md` maps the crates and says where each rule is
//! decided.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// The parts of the pure core (the crate `exthost-core`) that an embedding
/// program meets through this crate's API: extension statuses, the
/// failures and outcomes its errors and reports carry, the registry its
/// snapshots show, and the handles and operation kinds its trace names.
/// The core's transition function, inputs and commands are not here: a
/// program that drives the core itself depends on `exthost-core`.
pub mod core {
    #[cfg(feature = "mutants")]
    pub use exthost_core::Mutant;
    pub use exthost_core::{
        ActivationFailure, Binding, CallId, CleanupKind, CleanupStep, CodeRun, ContextId,
        DeclarationMismatch, DiscoveryError, DisposerRef, Failure, FailureCause, HookDiagnostic,
        HookRef, MISMATCH_REASON_CODES, MismatchReason, ModelRecord, Moment, OpId, OpKind, Owner,
        ProviderEntry, ProviderRecord, RegistryEntry, RegistryError, Status, StepFailure, ToolRef,
        ToolRegistry, ToolSpec, api_name_base, is_api_name,
    };
}
/// Stable error codes (docs/spec.md section 7), from `exthost-core`.
pub use exthost_core::error;
#[cfg(not(exthost_loom))]
pub mod host;
/// ID-1, the one identifier rule, from `exthost-core`.
pub use exthost_core::id;
pub mod manifest;
#[cfg(all(feature = "process", not(exthost_loom)))]
pub mod process;
// The shell's FIFO queue and registry publication cell: the crate's own,
// public only to the loom suites (`exthost-loom-tests`), which model-check
// them under `--cfg exthost_loom` (`src/sync.rs`).
#[cfg(exthost_loom)]
pub mod publication;
#[cfg(not(exthost_loom))]
pub(crate) mod publication;
#[cfg(exthost_loom)]
pub mod queue;
#[cfg(not(exthost_loom))]
pub(crate) mod queue;
pub mod resources;
mod sync;
/// Text hygiene for names, descriptions and quoted text, from `exthost-core`.
pub use exthost_core::text;

pub use error::CodedError;
#[cfg(not(exthost_loom))]
pub use host::{
    ActivationContext, Event, Extension, ExtensionDefinition, ExtensionError, ExtensionHost,
    HostError, HostOptions, InProcessFactories, Tool, ToolDescriptor, ToolOutput,
};
pub use id::{IdError, MAX_ID_BYTES, validate_id_segment};
pub use manifest::{
    LoadedManifest, Manifest, ManifestBatchError, ManifestError, load_manifest_dir, parse_manifest,
};
/// The cancellation signal type of [`host::ActivationContext::cancellation`]
/// and [`host::current_call_cancellation`].
pub use tokio_util::sync::CancellationToken;

/// Everything an extension author or an embedding program needs, in one
/// import: `use exthost::prelude::*;`.
#[cfg(not(exthost_loom))]
pub mod prelude {
    pub use crate::CancellationToken;
    pub use crate::CodedError;
    pub use crate::host::{
        Activation, ActivationContext, BoxFuture, EmitReport, Event, Extension,
        ExtensionDefinition, ExtensionError, ExtensionHost, HostError, HostOptions,
        InProcessFactories, Tool, ToolDescriptor, ToolOutput, ToolSnapshot,
        current_call_cancellation,
    };
    pub use crate::resources::{Resource, ResourceError, ResourceLoader, ResourceRoot};
    pub use exthost_core::Status;
}
pub use resources::{
    MAX_RESOURCE_TEXT_BYTES, Resource, ResourceError, ResourceLoader, ResourceRoot,
    validate_resource_path,
};
