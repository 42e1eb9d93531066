//! M-5, the declaration match: what an extension registers must equal what
//! it declared. The one implementation of the rule, its one reason enum and
//! its one error type; the manifest module's `match_tool_declarations`
//! delegates here.
//!
//! Architecture invariant: this module depends only on [`crate::core::ids`]
//! and [`crate::core::registry`] (and the crate's text and error leaves); it
//! knows nothing of the host's state, so the manifest module and the
//! transition code can both use it.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::core::ids::ToolRef;
use crate::core::registry::ToolSpec;
use crate::error::{codes, reason_enum};
use crate::text::quote;

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

impl serde::Serialize for MismatchReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The registered tools differ from the declarations (M-5). It fails the
/// activation, so its code is `EXTENSION_ACTIVATION_FAILED`; the reason
/// code says what differs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error, serde::Serialize)]
#[error("declaration mismatch ({reason}) for tool {}: {message}", quote(tool))]
pub struct DeclarationMismatch {
    reason: MismatchReason,
    tool: String,
    #[serde(skip)]
    message: String,
}

impl DeclarationMismatch {
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

    /// The tool name concerned (its own name, not the runtime name).
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The human explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// M-5: what an extension registers must equal what it declared: same
/// count, names, descriptions and schema digests. The first failure is
/// returned, checked in this order: a registered tool that is not declared
/// (`undeclared_tool_registered`, registration order); a name registered twice
/// (`duplicate_registered_tool`); a declared tool not registered
/// (`declared_tool_not_registered`, declaration order); then per declared tool,
/// in declaration order, its description
/// (`registered_tool_description_mismatch`) and its schema digest
/// (`registered_tool_schema_digest_mismatch`). After the first three checks
/// both lists hold the same names once each, so the counts are equal.
pub fn check_declarations(
    declared: &[ToolSpec],
    registered: &[(ToolRef, ToolSpec)],
) -> Result<(), DeclarationMismatch> {
    let mismatch = |reason, tool: &str, message: String| DeclarationMismatch {
        reason,
        tool: tool.to_owned(),
        message,
    };
    let declared_by_name: BTreeMap<&str, &ToolSpec> =
        declared.iter().map(|d| (d.name.as_str(), d)).collect();
    if let Some((_, r)) = registered
        .iter()
        .find(|(_, r)| !declared_by_name.contains_key(r.name.as_str()))
    {
        return Err(mismatch(
            MismatchReason::UndeclaredToolRegistered,
            &r.name,
            format!(
                "the extension registered {} but its manifest does not declare it",
                quote(&r.name)
            ),
        ));
    }
    let mut registered_by_name: BTreeMap<&str, &ToolSpec> = BTreeMap::new();
    for (_, r) in registered {
        if registered_by_name.insert(r.name.as_str(), r).is_some() {
            return Err(mismatch(
                MismatchReason::DuplicateRegisteredTool,
                &r.name,
                format!("the extension registered {} twice", quote(&r.name)),
            ));
        }
    }
    let missing = |d: &&ToolSpec| !registered_by_name.contains_key(d.name.as_str());
    if let Some(d) = declared.iter().find(missing) {
        let count = declared.iter().filter(missing).count();
        return Err(mismatch(
            MismatchReason::DeclaredToolNotRegistered,
            &d.name,
            format!(
                "the manifest declares {} but the extension did not register it ({count} declared tool(s) missing)",
                quote(&d.name)
            ),
        ));
    }
    for d in declared {
        let r = registered_by_name[d.name.as_str()];
        if r.description != d.description {
            return Err(mismatch(
                MismatchReason::RegisteredToolDescriptionMismatch,
                &d.name,
                format!(
                    "registered description {} differs from the declared {}",
                    quote(&r.description),
                    quote(&d.description)
                ),
            ));
        }
        if r.schema_digest != d.schema_digest {
            return Err(mismatch(
                MismatchReason::RegisteredToolSchemaDigestMismatch,
                &d.name,
                format!(
                    "registered input schema digest {} differs from the declared {}",
                    r.schema_digest, d.schema_digest
                ),
            ));
        }
    }
    Ok(())
}
