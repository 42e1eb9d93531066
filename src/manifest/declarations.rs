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
//! [`check_provider_declarations`](exthost_core::check_provider_declarations):
//! ids, display names, config schema digests, model ids and capabilities.
//! [`DeclaredProvider::record`] is the one conversion of a provider to the
//! core's terms, used for declarations and registrations alike.
//!
//! The rule itself, its reason enum and its error type are the core's
//! ([`exthost_core::check_declarations`]); this module only turns a
//! manifest's declarations and the registered tools into the core's terms.

use serde_json::Value;

use super::digest::SchemaDigest;
use super::schema::{DeclaredProvider, DeclaredTool, Manifest};
use exthost_core::{
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

/// Why a live tool's other fields differ from its declaration: the fields
/// beside the name, description and input schema that MCP defines for a
/// tool. Checked after [`match_tool_declarations`] holds, in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FieldMismatchReason {
    /// `title` differs (or only one side has one).
    Title,
    /// `annotations` differ: a hint changed, appeared or went away.
    Annotations,
    /// `outputSchema` differs (canonical JSON), or only one side has one.
    OutputSchema,
    /// `icons` differ.
    Icons,
    /// `_meta` differs.
    Meta,
}

/// Every field-mismatch reason code, in check order.
pub const FIELD_MISMATCH_REASON_CODES: &[&str] = &[
    "registered_tool_title_mismatch",
    "registered_tool_annotations_mismatch",
    "registered_tool_output_schema_mismatch",
    "registered_tool_icons_mismatch",
    "registered_tool_meta_mismatch",
];

impl FieldMismatchReason {
    /// The stable reason code (`registered_tool_annotations_mismatch`, ...).
    pub const fn as_str(self) -> &'static str {
        match self {
            FieldMismatchReason::Title => FIELD_MISMATCH_REASON_CODES[0],
            FieldMismatchReason::Annotations => FIELD_MISMATCH_REASON_CODES[1],
            FieldMismatchReason::OutputSchema => FIELD_MISMATCH_REASON_CODES[2],
            FieldMismatchReason::Icons => FIELD_MISMATCH_REASON_CODES[3],
            FieldMismatchReason::Meta => FIELD_MISMATCH_REASON_CODES[4],
        }
    }

    /// The field's name in a tool (`annotations`, `outputSchema`, ...).
    pub const fn field(self) -> &'static str {
        match self {
            FieldMismatchReason::Title => "title",
            FieldMismatchReason::Annotations => "annotations",
            FieldMismatchReason::OutputSchema => "outputSchema",
            FieldMismatchReason::Icons => "icons",
            FieldMismatchReason::Meta => "_meta",
        }
    }

    /// Every reason, in check order.
    pub const ALL: [FieldMismatchReason; 5] = [
        FieldMismatchReason::Title,
        FieldMismatchReason::Annotations,
        FieldMismatchReason::OutputSchema,
        FieldMismatchReason::Icons,
        FieldMismatchReason::Meta,
    ];
}

/// A live tool whose other fields differ from its declaration (M-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldMismatch {
    reason: FieldMismatchReason,
    tool: String,
    message: String,
}

impl FieldMismatch {
    /// Which field differs.
    pub fn reason(&self) -> FieldMismatchReason {
        self.reason
    }

    /// The stable reason code.
    pub fn reason_code(&self) -> &'static str {
        self.reason.as_str()
    }

    /// The tool's own name.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// What differs, with both values (escaped, at most a few hundred
    /// bytes each).
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for FieldMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason.as_str(), self.message)
    }
}

impl std::error::Error for FieldMismatch {}

/// The longest value a [`FieldMismatch`] message quotes, in bytes.
const QUOTED_VALUE_BYTES: usize = 200;

fn quoted(value: Option<&Value>) -> String {
    let Some(value) = value else {
        return "absent".to_owned();
    };
    let text = super::canonical_json(value);
    let text = if text.len() > QUOTED_VALUE_BYTES {
        let mut cut = QUOTED_VALUE_BYTES;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("{}...", &text[..cut])
    } else {
        text
    };
    // Canonical JSON escapes the C0 controls; the rest that could drive a
    // terminal or reorder text is written as `\u{..}`.
    text.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}') {
                format!("\\u{{{:x}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The hints of two `annotations` objects that differ, as `readOnlyHint:
/// true -> false` (absent when a side has none).
fn changed_hints(declared: Option<&Value>, live: Option<&Value>) -> Vec<String> {
    let empty = serde_json::Map::new();
    let d = declared.and_then(Value::as_object).unwrap_or(&empty);
    let l = live.and_then(Value::as_object).unwrap_or(&empty);
    let mut keys: Vec<&String> = d.keys().chain(l.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| d.get(*k) != l.get(*k))
        .map(|k| format!("{k}: {} -> {}", quoted(d.get(k)), quoted(l.get(k))))
        .collect()
}

/// Checks the fields of each live tool beside its name, description and
/// input schema against its declaration (M-5): `title`, `annotations`,
/// `outputSchema`, `icons`, `_meta`, compared as canonical JSON (so key
/// order never matters, and an absent field equals only an absent one).
///
/// `live` holds the tools as the server listed them (MCP JSON objects with
/// a `name`). Declared tools are taken in declaration order and the first
/// difference is returned; a live tool without a declaration, or a declared
/// tool the server does not list, is [`match_tool_declarations`]'s
/// business and is skipped here.
pub fn match_tool_fields(declared: &[DeclaredTool], live: &[Value]) -> Result<(), FieldMismatch> {
    for d in declared {
        let Some(l) = live
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some(d.name()))
        else {
            continue;
        };
        let title = d.title().map(|t| Value::String(t.to_owned()));
        let pairs = [
            (FieldMismatchReason::Title, title.as_ref(), l.get("title")),
            (
                FieldMismatchReason::Annotations,
                d.annotations(),
                l.get("annotations"),
            ),
            (
                FieldMismatchReason::OutputSchema,
                d.output_schema(),
                l.get("outputSchema"),
            ),
            (FieldMismatchReason::Icons, d.icons(), l.get("icons")),
            (FieldMismatchReason::Meta, d.meta(), l.get("_meta")),
        ];
        for (reason, declared_value, live_value) in pairs {
            let live_value = live_value.filter(|v| !v.is_null());
            let same = match (declared_value, live_value) {
                (None, None) => true,
                (Some(a), Some(b)) => super::canonical_json(a) == super::canonical_json(b),
                _ => false,
            };
            if same {
                continue;
            }
            let what = if reason == FieldMismatchReason::Annotations {
                changed_hints(declared_value, live_value).join(", ")
            } else {
                format!(
                    "locked {}, listed {}",
                    quoted(declared_value),
                    quoted(live_value)
                )
            };
            return Err(FieldMismatch {
                reason,
                tool: d.name().to_owned(),
                message: format!(
                    "the listed {} of the tool {:?} differs from its declaration: {what}",
                    reason.field(),
                    d.name()
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod field_tests {
    use super::*;
    use serde_json::json;

    fn declared(tool: Value) -> Vec<DeclaredTool> {
        let manifest = json!({
            "id": "x", "runtime": {"kind": "in-process"}, "permissions": ["tools.register"],
            "deferred": {"tools": [tool]}
        });
        let (m, _) = Manifest::from_value(manifest).unwrap();
        m.declared_tools().to_vec()
    }

    #[test]
    fn a_hint_that_turns_false_is_an_annotations_mismatch() {
        let d = declared(json!({
            "name": "t", "description": "d", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": true, "openWorldHint": false}
        }));
        let same = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"},
            "annotations": {"openWorldHint": false, "readOnlyHint": true}});
        assert_eq!(match_tool_fields(&d, &[same]), Ok(()));
        let drifted = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"},
            "annotations": {"openWorldHint": false, "readOnlyHint": false}});
        let e = match_tool_fields(&d, &[drifted]).unwrap_err();
        assert_eq!(e.reason_code(), "registered_tool_annotations_mismatch");
        assert_eq!(e.tool(), "t");
        assert!(e.message().contains("readOnlyHint: true -> false"), "{e}");
        let gone = json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}});
        assert_eq!(
            match_tool_fields(&d, &[gone]).unwrap_err().reason(),
            FieldMismatchReason::Annotations
        );
    }

    #[test]
    fn an_output_schema_that_appears_is_a_mismatch() {
        let d = declared(json!({"name": "t", "description": "d", "inputSchema": {}}));
        let live = json!({"name": "t", "description": "d", "inputSchema": {},
            "outputSchema": {"type": "object"}});
        assert_eq!(
            match_tool_fields(&d, &[live]).unwrap_err().reason_code(),
            "registered_tool_output_schema_mismatch"
        );
        for (reason, code) in FieldMismatchReason::ALL
            .iter()
            .zip(FIELD_MISMATCH_REASON_CODES)
        {
            assert_eq!(reason.as_str(), *code);
        }
    }
}
