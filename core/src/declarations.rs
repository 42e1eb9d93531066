//! M-5, the declaration match: what an extension registers must equal what
//! it declared. The one implementation of the rule, its one reason enum and
//! its one error type; the manifest module's `match_tool_declarations`
//! delegates here.
//!
//! Architecture invariant: this module depends only on [`crate::ids`]
//! and [`crate::registry`] (and the crate's text and error leaves); it
//! knows nothing of the host's state, so the manifest module and the
//! transition code can both use it.

use std::collections::BTreeMap;

use thiserror::Error;

use crate::error::{codes, reason_enum};
use crate::ids::ToolRef;
use crate::registry::{ProviderRecord, ToolSpec};
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
    /// A registered provider was not declared (M-8).
    UndeclaredProviderRegistered => "undeclared_provider_registered",
    /// A provider id was registered twice (M-8).
    DuplicateRegisteredProvider => "duplicate_registered_provider",
    /// A declared provider was not registered (M-8).
    DeclaredProviderNotRegistered => "declared_provider_not_registered",
    /// A registered provider's display name differs from the declared one.
    RegisteredProviderDisplayNameMismatch => "registered_provider_display_name_mismatch",
    /// A registered provider's config schema digest differs from the
    /// declared one (or one of them has no config schema).
    RegisteredProviderConfigSchemaMismatch => "registered_provider_config_schema_mismatch",
    /// A registered provider's model ids differ from the declared ones.
    RegisteredProviderModelsMismatch => "registered_provider_models_mismatch",
    /// A registered model's capabilities differ from the declared ones.
    RegisteredModelCapabilitiesMismatch => "registered_model_capabilities_mismatch",
}

impl MismatchReason {
    /// True for the reasons about providers (M-8), false for tools.
    pub fn is_provider(self) -> bool {
        matches!(
            self,
            MismatchReason::UndeclaredProviderRegistered
                | MismatchReason::DuplicateRegisteredProvider
                | MismatchReason::DeclaredProviderNotRegistered
                | MismatchReason::RegisteredProviderDisplayNameMismatch
                | MismatchReason::RegisteredProviderConfigSchemaMismatch
                | MismatchReason::RegisteredProviderModelsMismatch
                | MismatchReason::RegisteredModelCapabilitiesMismatch
        )
    }
}

impl serde::Serialize for MismatchReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The registered tools or providers differ from the declarations (M-5,
/// M-8). It fails the activation, so its code is
/// `EXTENSION_ACTIVATION_FAILED`; the reason code says what differs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error, serde::Serialize)]
#[error(
    "{}: declaration mismatch ({reason}) for {} {}: {message}",
    self.code(),
    if reason.is_provider() { "provider" } else { "tool" },
    quote(tool)
)]
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

    /// The tool name concerned (its own name, not the runtime name), or,
    /// for a provider reason ([`MismatchReason::is_provider`]), the
    /// provider id.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The human explanation.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The mismatch with these parts, as a state that crossed processes
    /// had it (`crate::wire`).
    #[cfg(feature = "serde-state")]
    pub(crate) fn from_parts(reason: MismatchReason, tool: String, message: String) -> Self {
        Self {
            reason,
            tool,
            message,
        }
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

/// M-5 for providers (M-8): the providers an extension registers must equal
/// its declared providers. The first failure is returned, checked in this
/// order: a registered provider not declared
/// (`undeclared_provider_registered`, registration order); an id registered
/// twice (`duplicate_registered_provider`); a declared provider not
/// registered (`declared_provider_not_registered`, declaration order); then
/// per declared provider, in declaration order, its display name
/// (`registered_provider_display_name_mismatch`), its config schema digest
/// (`registered_provider_config_schema_mismatch`; both absent is equal),
/// its set of model ids (`registered_provider_models_mismatch`) and each
/// declared model's capabilities (`registered_model_capabilities_mismatch`;
/// an absent capability list equals an empty one).
pub fn check_provider_declarations(
    declared: &[ProviderRecord],
    registered: &[ProviderRecord],
) -> Result<(), DeclarationMismatch> {
    let mismatch = |reason, provider: &str, message: String| DeclarationMismatch {
        reason,
        tool: provider.to_owned(),
        message,
    };
    let declared_by_id: BTreeMap<&str, &ProviderRecord> =
        declared.iter().map(|d| (d.id.as_str(), d)).collect();
    if let Some(r) = registered
        .iter()
        .find(|r| !declared_by_id.contains_key(r.id.as_str()))
    {
        return Err(mismatch(
            MismatchReason::UndeclaredProviderRegistered,
            &r.id,
            format!(
                "the extension registered provider {} but its manifest does not declare it",
                quote(&r.id)
            ),
        ));
    }
    let mut registered_by_id: BTreeMap<&str, &ProviderRecord> = BTreeMap::new();
    for r in registered {
        if registered_by_id.insert(r.id.as_str(), r).is_some() {
            return Err(mismatch(
                MismatchReason::DuplicateRegisteredProvider,
                &r.id,
                format!("the extension registered provider {} twice", quote(&r.id)),
            ));
        }
    }
    if let Some(d) = declared
        .iter()
        .find(|d| !registered_by_id.contains_key(d.id.as_str()))
    {
        return Err(mismatch(
            MismatchReason::DeclaredProviderNotRegistered,
            &d.id,
            format!(
                "the manifest declares provider {} but the extension did not register it",
                quote(&d.id)
            ),
        ));
    }
    for d in declared {
        let r = registered_by_id[d.id.as_str()];
        if r.display_name != d.display_name {
            return Err(mismatch(
                MismatchReason::RegisteredProviderDisplayNameMismatch,
                &d.id,
                format!(
                    "registered display name {} differs from the declared {}",
                    quote(&r.display_name),
                    quote(&d.display_name)
                ),
            ));
        }
        if r.config_schema_digest != d.config_schema_digest {
            let show = |digest: &Option<String>| digest.clone().unwrap_or_else(|| "none".into());
            return Err(mismatch(
                MismatchReason::RegisteredProviderConfigSchemaMismatch,
                &d.id,
                format!(
                    "registered config schema digest {} differs from the declared {}",
                    show(&r.config_schema_digest),
                    show(&d.config_schema_digest)
                ),
            ));
        }
        let ids = |p: &ProviderRecord| -> Vec<String> {
            let mut ids: Vec<String> = p.models.iter().map(|m| m.id.clone()).collect();
            ids.sort();
            ids
        };
        if ids(r) != ids(d) {
            return Err(mismatch(
                MismatchReason::RegisteredProviderModelsMismatch,
                &d.id,
                format!(
                    "registered models {:?} differ from the declared {:?}",
                    ids(r),
                    ids(d)
                ),
            ));
        }
        // The id lists are equal, so each declared model is registered.
        for (dm, rm) in d
            .models
            .iter()
            .filter_map(|dm| Some((dm, r.model(&dm.id)?)))
        {
            if rm.capabilities != dm.capabilities {
                return Err(mismatch(
                    MismatchReason::RegisteredModelCapabilitiesMismatch,
                    &d.id,
                    format!(
                        "model {}: registered capabilities {:?} differ from the declared {:?}",
                        quote(&dm.id),
                        rm.capabilities,
                        dm.capabilities
                    ),
                ));
            }
        }
    }
    Ok(())
}

crate::coded_by_display!(DeclarationMismatch);
