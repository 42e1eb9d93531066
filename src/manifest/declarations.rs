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
//! Providers are declarative only: the host offers no provider registration,
//! so there is nothing to match them against.

use std::collections::HashMap;

use serde_json::Value;
use thiserror::Error;

use super::digest::SchemaDigest;
use super::reason::{quote, reason_enum};
use super::schema::{DeclaredTool, Manifest};
use crate::error::codes;

reason_enum! {
    /// Why the registered tools do not match the declarations (M-5).
    enum MismatchReason;
    /// Every declaration-match reason code, in check order.
    const MISMATCH_REASON_CODES;

    /// A registered tool was not declared.
    UndeclaredToolRegistered => "undeclared_tool_registered",
    /// A tool name was registered twice.
    DuplicateRegisteredTool => "duplicate_registered_tool",
    /// A declared tool was not registered.
    DeclaredToolNotRegistered => "declared_tool_not_registered",
    /// A registered tool's description differs from the declared one.
    RegisteredToolDescriptionMismatch => "registered_tool_description_mismatch",
    /// A registered tool's schema digest differs from the declared one.
    RegisteredToolSchemaDigestMismatch => "registered_tool_schema_digest_mismatch",
}

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

/// The registered tools differ from the declarations (M-5). It fails the
/// activation, so its code is `EXTENSION_ACTIVATION_FAILED`; the reason
/// code says what differs.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("declaration mismatch ({reason}) for tool {}: {message}", quote(tool))]
pub struct DeclarationMismatch {
    reason: MismatchReason,
    tool: String,
    message: String,
}

impl DeclarationMismatch {
    fn new(reason: MismatchReason, tool: &str, message: String) -> Self {
        DeclarationMismatch {
            reason,
            tool: tool.to_owned(),
            message,
        }
    }

    /// The stable error code of the activation failure it causes:
    /// `EXTENSION_ACTIVATION_FAILED`.
    pub fn code(&self) -> &'static str {
        codes::EXTENSION_ACTIVATION_FAILED
    }

    /// What differs.
    pub fn reason(&self) -> MismatchReason {
        self.reason
    }

    /// The reason code as a string.
    pub fn reason_code(&self) -> &'static str {
        self.reason.as_str()
    }

    /// The tool name concerned.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The human explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// Checks that `registered` equals `declared` (M-5), in the order given in
/// the module documentation.
pub fn match_tool_declarations(
    declared: &[DeclaredTool],
    registered: &[RegisteredTool<'_>],
) -> Result<(), DeclarationMismatch> {
    let by_name: HashMap<&str, &DeclaredTool> =
        declared.iter().map(|tool| (tool.name(), tool)).collect();

    if let Some(tool) = registered
        .iter()
        .find(|tool| !by_name.contains_key(tool.name))
    {
        return Err(DeclarationMismatch::new(
            MismatchReason::UndeclaredToolRegistered,
            tool.name,
            format!(
                "the extension registered {} but its manifest does not declare it",
                quote(tool.name)
            ),
        ));
    }

    let mut registered_by_name: HashMap<&str, &RegisteredTool<'_>> =
        HashMap::with_capacity(registered.len());
    for tool in registered {
        if registered_by_name.insert(tool.name, tool).is_some() {
            return Err(DeclarationMismatch::new(
                MismatchReason::DuplicateRegisteredTool,
                tool.name,
                format!("the extension registered {} twice", quote(tool.name)),
            ));
        }
    }

    let mut missing = declared
        .iter()
        .filter(|tool| !registered_by_name.contains_key(tool.name()));
    if let Some(tool) = missing.next() {
        let count = 1 + missing.count();
        return Err(DeclarationMismatch::new(
            MismatchReason::DeclaredToolNotRegistered,
            tool.name(),
            format!(
                "the manifest declares {} but the extension did not register it ({count} declared tool(s) missing)",
                quote(tool.name())
            ),
        ));
    }

    for tool in declared {
        let Some(actual) = registered_by_name.get(tool.name()) else {
            continue;
        };
        if actual.description != tool.description() {
            return Err(DeclarationMismatch::new(
                MismatchReason::RegisteredToolDescriptionMismatch,
                tool.name(),
                format!(
                    "registered description {} differs from the declared {}",
                    quote(actual.description),
                    quote(tool.description())
                ),
            ));
        }
        let digest = actual.schema.digest();
        if digest != tool.schema_digest() {
            return Err(DeclarationMismatch::new(
                MismatchReason::RegisteredToolSchemaDigestMismatch,
                tool.name(),
                format!(
                    "registered input schema digest {digest} differs from the declared {}",
                    tool.schema_digest()
                ),
            ));
        }
    }
    Ok(())
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
