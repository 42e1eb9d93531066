//! # exthost
//!
//! A host for the extensions of AI-agent runtimes that proves what it
//! promises.
//!
//! * **Resources**: UTF-8 text read from ordered trusted roots; every escape
//!   fails closed (SPEC section 2).
//! * **Extension host**: metadata-only discovery, lazy serialized
//!   activation, all-or-nothing publication, reverse-order rollback and
//!   shutdown (SPEC section 3).
//! * **Verification**: the host's logic is a pure transition function that
//!   the `exthost-model` crate model-checks with stateright.
//!
//! Every error carries a stable code, listed in [`error::codes`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod core;
pub mod error;
#[cfg(not(exthost_loom))]
pub mod host;
pub mod id;
pub mod manifest;
#[cfg(all(feature = "process", not(exthost_loom)))]
pub mod process;
pub mod publication;
pub mod queue;
pub mod resources;
mod sync;

pub use id::{IdError, MAX_ID_BYTES, validate_id_segment};
pub use manifest::{
    LoadedManifest, Manifest, ManifestBatchError, ManifestError, load_manifest_dir, parse_manifest,
};
pub use publication::Published;
pub use queue::{QueueClosed, SerialQueue, Ticket, Turn};
pub use resources::{
    MAX_RESOURCE_TEXT_BYTES, Resource, ResourceError, ResourceLoader, ResourceRoot,
    validate_resource_path,
};
