//! Extension manifests and deferred activation (docs/spec.md section 4).
//!
//! A manifest is a JSON file describing one extension: its id, its runtime,
//! its permissions, its hook subscriptions, its dependencies and an optional
//! `deferred` block declaring tools, providers and a lifecycle hint so the
//! host can delay starting it. The full format, every rule and every reason
//! code are in `docs/manifests.md`, `docs/manifest-errors.md` and
//! `docs/declarations.md`.
//!
//! Everything here is pure except the folder loader:
//!
//! * [`parse_manifest`] / [`Manifest::from_value`]: schema and validation
//!   (M-1, M-2, M-7), one stable [`ManifestReason`] per refusal;
//! * [`classify`], [`triggers`], [`earliest_trigger`], [`is_triggered_by`]:
//!   classes and triggers (M-3);
//! * [`schema_digest`] / [`canonical_json`]: schema digests (M-5);
//! * [`match_tool_declarations`]: declared versus registered tools (M-5);
//! * [`Manifest::dormant_tools`]: dormant descriptors (M-4);
//! * [`load_manifest_dir`]: a folder of manifests as one all-or-nothing batch.
//!
//! ```
//! use exthost::manifest::{parse_manifest, ActivationCause, Classification, Trigger};
//!
//! let (manifest, _) = parse_manifest(r#"{
//!     "id": "notes",
//!     "runtime": {"kind": "process", "command": "node", "args": ["server.js"], "env": ["HOME"]},
//!     "permissions": ["tools.register", "hooks.subscribe"],
//!     "hooks": ["session.start"],
//!     "deferred": {
//!         "lifecycle": "hook",
//!         "tools": [{"name": "add", "description": "Add a note.", "inputSchema": {"type": "object"}}]
//!     }
//! }"#).unwrap();
//! assert_eq!(manifest.classification(), Classification::Mixed);
//! assert_eq!(manifest.earliest_trigger(), Trigger::HookEvent { events: vec!["session.start".into()] });
//! assert!(manifest.is_triggered_by(&ActivationCause::ToolCall { runtime_name: "notes:add" }));
//! assert!(!manifest.is_triggered_by(&ActivationCause::ToolCall { runtime_name: "notes:ad" }));
//! ```

mod classify;
mod declarations;
mod digest;
mod dormant;
mod expose;
mod folder;
mod listings;
mod reason;
mod schema;
mod validate;

pub use crate::core::{DeclarationMismatch, MISMATCH_REASON_CODES, MismatchReason};
pub use classify::{
    ActivationCause, Classification, Trigger, TriggerKind, classify, earliest_trigger,
    is_triggered_by, triggers,
};
pub use declarations::{
    FIELD_MISMATCH_REASON_CODES, FieldMismatch, FieldMismatchReason, RegisteredSchema,
    RegisteredTool, match_tool_declarations, match_tool_fields,
};
pub use digest::{SchemaDigest, canonical_json, schema_digest};
pub use dormant::{
    DormantTool, RUNTIME_NAME_SEPARATOR, runtime_tool_name, split_runtime_tool_name,
};
pub use expose::{
    ExposeRules, MAX_EXPOSE_PATTERN_BYTES, MAX_EXPOSE_PATTERNS, is_valid_pattern, pattern_matches,
};
pub use folder::{LoadedManifest, load_manifest_dir, load_manifest_file};
pub use listings::{
    LISTING_MISMATCH_REASON_CODES, ListingKind, ListingMismatch, MAX_DECLARED_LISTED, match_listing,
};
pub use reason::{ManifestBatchError, ManifestError, ManifestReason, REASON_CODES};
pub use schema::{
    DeclaredModel, DeclaredProvider, DeclaredTool, Lifecycle, Manifest, Notice, Permission,
    ProcessRuntime, RetiredKey, Runtime,
};
pub use validate::parse_manifest;
// Only the host builds providers from values; loom builds have no host.
#[cfg(not(exthost_loom))]
pub(crate) use validate::validate_provider_value;

/// The largest manifest, in bytes (text or file).
pub const MAX_MANIFEST_BYTES: usize = 1_048_576;
/// The file name of a manifest inside its extension folder.
pub const MANIFEST_FILE_NAME: &str = "extension.json";
/// The most declared tools per manifest (M-1).
pub const MAX_DECLARED_TOOLS: usize = 256;
/// The most declared providers per manifest (M-1).
pub const MAX_DECLARED_PROVIDERS: usize = 16;
/// The most declared models per provider (M-1).
pub const MAX_DECLARED_MODELS: usize = 64;
/// The longest description, in bytes (M-1).
pub const MAX_DESCRIPTION_BYTES: usize = 1024;
/// The longest display name, in bytes (M-1).
pub const MAX_DISPLAY_NAME_BYTES: usize = 256;
/// The largest input or config schema, in bytes of canonical JSON (M-1).
pub const MAX_SCHEMA_BYTES: usize = 65_536;
