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

use serde_json::Value;
use thiserror::Error;

use super::digest::SchemaDigest;
use super::reason::{quote, reason_enum};
use super::schema::{DeclaredTool, Manifest};
use crate::core::{ToolRef, ToolSpec, check_declarations};
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
    let Err(found) = check_declarations(&declared_specs, &registered_specs) else {
        return Ok(());
    };
    let name = found.tool.as_str();
    let declared_tool = declared.iter().find(|t| t.name() == name);
    let registered_tool = registered.iter().find(|t| t.name == name);
    let (reason, message) = match found.reason {
        "undeclared_tool_registered" => (
            MismatchReason::UndeclaredToolRegistered,
            format!(
                "the extension registered {} but its manifest does not declare it",
                quote(name)
            ),
        ),
        "duplicate_registered_tool" => (
            MismatchReason::DuplicateRegisteredTool,
            format!("the extension registered {} twice", quote(name)),
        ),
        "declared_tool_not_registered" => {
            let missing = declared
                .iter()
                .filter(|d| !registered.iter().any(|r| r.name == d.name()))
                .count();
            (
                MismatchReason::DeclaredToolNotRegistered,
                format!(
                    "the manifest declares {} but the extension did not register it ({missing} declared tool(s) missing)",
                    quote(name)
                ),
            )
        }
        "registered_tool_description_mismatch" => (
            MismatchReason::RegisteredToolDescriptionMismatch,
            format!(
                "registered description {} differs from the declared {}",
                quote(registered_tool.map_or("", |t| t.description)),
                quote(declared_tool.map_or("", |t| t.description()))
            ),
        ),
        _ => (
            MismatchReason::RegisteredToolSchemaDigestMismatch,
            format!(
                "registered input schema digest {} differs from the declared {}",
                registered_tool.map_or_else(String::new, |t| t.schema.digest().to_hex()),
                declared_tool.map_or_else(String::new, |t| t.schema_digest().to_hex())
            ),
        ),
    };
    Err(DeclarationMismatch::new(reason, name, message))
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
