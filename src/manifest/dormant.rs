//! Dormant tool descriptors (M-4) and runtime tool names.

use serde_json::Value;

use super::digest::SchemaDigest;
use super::schema::Manifest;
use crate::id::validate_id_segment;

pub use exthost_core::lifecycle::RUNTIME_NAME_SEPARATOR;

/// The runtime name `<extension>:<tool>` of a manifest extension's tool, or
/// `None` when either part breaks ID-1.
pub fn runtime_tool_name(extension_id: &str, tool_name: &str) -> Option<String> {
    validate_id_segment(extension_id).ok()?;
    validate_id_segment(tool_name).ok()?;
    Some(exthost_core::namespaced_tool_name(extension_id, tool_name))
}

/// Splits a runtime name into `(extension, tool)`; `None` unless it is
/// exactly two ID-1 segments joined by one `:`.
pub fn split_runtime_tool_name(runtime_name: &str) -> Option<(&str, &str)> {
    let (extension, tool) = runtime_name.split_once(RUNTIME_NAME_SEPARATOR)?;
    validate_id_segment(extension).ok()?;
    validate_id_segment(tool).ok()?;
    Some((extension, tool))
}

/// What the registry shows for a declared tool before its extension starts
/// (M-4): the runtime name, the declared description and input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DormantTool {
    /// `<extension>:<tool>`.
    pub runtime_name: String,
    /// The owning extension.
    pub extension_id: String,
    /// The declared tool name.
    pub tool_name: String,
    /// The declared description.
    pub description: String,
    /// The declared input schema.
    pub input_schema: Value,
    /// The digest of the declared input schema.
    pub schema_digest: SchemaDigest,
}

impl Manifest {
    /// One dormant descriptor per declared tool, in declaration order; none
    /// when the extension id cannot form runtime names (M-4).
    pub fn dormant_tools(&self) -> Vec<DormantTool> {
        if validate_id_segment(self.id()).is_err() {
            return Vec::new();
        }
        self.declared_tools()
            .iter()
            .filter_map(|tool| {
                Some(DormantTool {
                    runtime_name: runtime_tool_name(self.id(), tool.name())?,
                    extension_id: self.id().to_owned(),
                    tool_name: tool.name().to_owned(),
                    description: tool.description().to_owned(),
                    input_schema: tool.input_schema().clone(),
                    schema_digest: tool.schema_digest(),
                })
            })
            .collect()
    }
}
