//! The declaration match of M-5: the tools an extension really registers
//! must equal the tools its manifest declares.
//!
//! Names are the tools' own names (`status`), not runtime names
//! (`git:status`). The checks run in this order and the first failure is
//! returned:
//!
//! 1. `undeclared_tool_registered`: the first registered tool (in
//!    registration order) whose name is not declared;
//! 2. `duplicate_registered_tool`: the first registered name seen twice;
//! 3. `declared_tool_not_registered`: the first declared tool (in
//!    declaration order) that was not registered;
//! 4. then for each declared tool in declaration order,
//!    `registered_tool_description_mismatch` (byte-for-byte comparison),
//!    then `registered_tool_schema_digest_mismatch` (canonical schema
//!    digest, so key order and whitespace do not matter).
//!
//! After steps 1 to 3 the two lists hold the same names exactly once each,
//! so equal counts follow and need no code of their own.
//!
//! Providers (M-8) are matched the same way, by the core's
//! [`check_provider_declarations`](crate::core::check_provider_declarations):
//! ids, display names, config schema digests, model ids and capabilities.
//! [`DeclaredProvider::record`] is the one conversion of a provider to the
//! core's terms, used for declarations and registrations alike.
//!
//! The rule itself, its reason enum and its error type are the core's
//! ([`crate::core::check_declarations`]); this module only turns a
//! manifest's declarations and the registered tools into the core's terms.

use serde_json::Value;

use super::digest::SchemaDigest;
use super::schema::{DeclaredProvider, DeclaredTool, Manifest};
use crate::core::{
    DeclarationMismatch, ModelRecord, ProviderRecord, ToolRef, ToolSpec, check_declarations,
};

/// The input schema of a registered tool: the schema itself or its digest
/// (for instance when a process extension reported only a digest).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisteredSchema<'a> {
    /// The schema; its digest is computed.
    Schema(&'a Value),
    /// The digest, already computed with [`schema_digest`](super::schema_digest).
    Digest(SchemaDigest),
}

impl RegisteredSchema<'_> {
    fn digest(&self) -> SchemaDigest {
        match self {
            RegisteredSchema::Schema(schema) => SchemaDigest::of(schema),
            RegisteredSchema::Digest(digest) => *digest,
        }
    }
}

/// A tool as the extension actually registered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegisteredTool<'a> {
    /// The tool's own name (not the runtime name).
    pub name: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Its input schema or the schema's digest.
    pub schema: RegisteredSchema<'a>,
}

impl<'a> RegisteredTool<'a> {
    /// A registered tool with its schema.
    pub fn new(name: &'a str, description: &'a str, schema: &'a Value) -> Self {
        RegisteredTool {
            name,
            description,
            schema: RegisteredSchema::Schema(schema),
        }
    }

    /// A registered tool known by its schema digest.
    pub fn with_digest(name: &'a str, description: &'a str, digest: SchemaDigest) -> Self {
        RegisteredTool {
            name,
            description,
            schema: RegisteredSchema::Digest(digest),
        }
    }
}

/// Checks that `registered` equals `declared` (M-5), in the order given in
/// the module documentation.
pub fn match_tool_declarations(
    declared: &[DeclaredTool],
    registered: &[RegisteredTool<'_>],
) -> Result<(), DeclarationMismatch> {
    let declared_specs: Vec<ToolSpec> = declared
        .iter()
        .map(|t| ToolSpec::new(t.name(), t.description(), t.schema_digest().to_hex()))
        .collect();
    let registered_specs: Vec<(ToolRef, ToolSpec)> = registered
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let spec = ToolSpec::new(t.name, t.description, t.schema.digest().to_hex());
            (ToolRef(i as u64), spec)
        })
        .collect();
    check_declarations(&declared_specs, &registered_specs)
}

impl Manifest {
    /// Checks the tools the extension registered against its declared tools
    /// (M-5); see [`match_tool_declarations`]. The host runs it for
    /// manifests with [`has_declarations`](Manifest::has_declarations).
    pub fn match_registered_tools(
        &self,
        registered: &[RegisteredTool<'_>],
    ) -> Result<(), DeclarationMismatch> {
        match_tool_declarations(self.declared_tools(), registered)
    }
}

impl DeclaredProvider {
    /// The provider in the core's terms: its config schema in canonical
    /// JSON with its digest (M-5), each model's id and capabilities (absent
    /// capabilities are an empty set).
    pub fn record(&self) -> ProviderRecord {
        ProviderRecord {
            id: self.id().to_owned(),
            display_name: self.display_name().to_owned(),
            config_schema: self.config_schema().map(super::canonical_json),
            config_schema_digest: self
                .config_schema()
                .map(|schema| super::schema_digest(schema).to_hex()),
            models: self
                .models()
                .iter()
                .map(|m| ModelRecord {
                    id: m.id().to_owned(),
                    capabilities: m.capabilities().cloned().unwrap_or_default(),
                })
                .collect(),
        }
    }
}
