//! Parsing and validation (M-1, M-2, M-7).
//!
//! The text is parsed into a `serde_json::Value` by a strict visitor (which
//! refuses duplicate object keys), then decoded by hand, top-down, so every
//! refusal has a precise reason code and JSON pointer. Checks run in this
//! order and the first failure is returned:
//!
//! 1. size cap, then JSON syntax and duplicate keys;
//! 2. per object, unknown fields first, then each field in schema order
//!    (`id`, `version`, `displayName`, `description`, `runtime`,
//!    `permissions`, `hooks`, `dependencies`, `deferred`; inside `deferred`:
//!    `tools`, `providers`, `lifecycle`); a list's length bound before its
//!    entries; an entry's name before its duplicate check before its other
//!    fields; a description's or display name's length and blank rules
//!    before its text hygiene ([`crate::text`]);
//! 3. the cross-field rules of M-2.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::digest::{SchemaDigest, canonical_json};
use super::expose::{ExposeRules, MAX_EXPOSE_PATTERN_BYTES, MAX_EXPOSE_PATTERNS, is_valid_pattern};
use super::reason::{ManifestError, ManifestReason as R, quote};
use super::schema::{
    DeclaredModel, DeclaredProvider, DeclaredTool, Deferred, Lifecycle, Manifest,
    ManifestDeadlines, Notice, Permission, ProcessRuntime, RetiredKey, Runtime,
};
use super::{
    MAX_DECLARED_MODELS, MAX_DECLARED_PROVIDERS, MAX_DECLARED_TOOLS, MAX_DESCRIPTION_BYTES,
    MAX_DISPLAY_NAME_BYTES, MAX_MANIFEST_BYTES, MAX_SCHEMA_BYTES,
};
use crate::error::CodedError;
use crate::id::validate_id_segment;
use crate::text::{TextError, check_description, check_display_name};

const MAX_VERSION_BYTES: usize = 64;
const MAX_COMMAND_BYTES: usize = 4096;
const MAX_ARGUMENTS: usize = 256;
const MAX_ARGUMENT_BYTES: usize = 4096;
const MAX_ENV_NAMES: usize = 256;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// The longest `runtime.idleTimeoutMs`: a day.
const MAX_IDLE_TIMEOUT_MS: u64 = 86_400_000;
const MAX_ENV_NAME_BYTES: usize = 128;

/// Parses and validates one manifest.
///
/// Returns the manifest and the notices for retired keys (M-7), which are
/// also logged with `tracing::info!`. Never panics, whatever the input.
///
/// ```
/// use exthost::manifest::{parse_manifest, Classification};
///
/// let (manifest, notices) = parse_manifest(r#"{
///     "id": "git",
///     "runtime": {"kind": "in-process"},
///     "permissions": ["tools.register"],
///     "deferred": {"tools": [{
///         "name": "status",
///         "description": "Show the working tree status.",
///         "inputSchema": {"type": "object"}
///     }]}
/// }"#).unwrap();
/// assert!(notices.is_empty());
/// assert_eq!(manifest.classification(), Classification::ToolOnly);
/// assert_eq!(manifest.dormant_tools()[0].runtime_name, "git:status");
///
/// let err = parse_manifest(r#"{"id": "git", "runtime": {"kind": "in-process"}, "colour": 1}"#).unwrap_err();
/// assert_eq!(err.code(), "MANIFEST_INVALID");
/// assert_eq!(err.reason_code(), "unknown_field");
/// assert_eq!(err.pointer(), "/colour");
/// ```
pub fn parse_manifest(text: &str) -> Result<(Manifest, Vec<Notice>), ManifestError> {
    let (manifest, notices) = parse_quietly(text)?;
    log_notices(&notices, None);
    Ok((manifest, notices))
}

impl Manifest {
    /// Validates an already parsed JSON value, exactly as
    /// [`parse_manifest`] does after parsing (no size cap, and duplicate keys
    /// cannot be detected any more). Notices are logged and returned.
    pub fn from_value(value: Value) -> Result<(Manifest, Vec<Notice>), ManifestError> {
        let (manifest, notices) = decode(value)?;
        log_notices(&notices, None);
        Ok((manifest, notices))
    }
}

pub(crate) fn log_notices(notices: &[Notice], file: Option<&std::path::Path>) {
    for notice in notices {
        match file {
            Some(file) => tracing::info!(file = %file.display(), "{notice}"),
            None => tracing::info!("{notice}"),
        }
    }
}

/// [`parse_manifest`] without logging the notices.
pub(crate) fn parse_quietly(text: &str) -> Result<(Manifest, Vec<Notice>), ManifestError> {
    if text.len() > MAX_MANIFEST_BYTES {
        return Err(ManifestError::new(
            R::ManifestTooLarge,
            "",
            format!(
                "the manifest is {} bytes; at most {MAX_MANIFEST_BYTES} are allowed",
                text.len()
            ),
        ));
    }
    decode(parse_strict(text)?)
}

// ---------------------------------------------------------------------------
// Strict JSON: serde_json's parser, but an object with a repeated key is an
// error (serde_json's own `Value` keeps the last one silently).

fn parse_strict(text: &str) -> Result<Value, ManifestError> {
    let duplicate = RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let seed = StrictSeed {
        at: Ptr::Root,
        duplicate: &duplicate,
    };
    let result = seed.deserialize(&mut deserializer).and_then(|value| {
        deserializer.end()?;
        Ok(value)
    });
    match result {
        Ok(value) => Ok(value),
        Err(error) => Err(match duplicate.into_inner() {
            Some((pointer, key)) => ManifestError::new(
                R::DuplicateKey,
                pointer,
                format!("the key {} appears twice in one object", quote(&key)),
            ),
            None => ManifestError::new(R::InvalidJson, "", format!("not valid JSON: {error}")),
        }),
    }
}

struct StrictSeed<'p, 'd> {
    at: Ptr<'p>,
    duplicate: &'d RefCell<Option<(String, String)>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_, '_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            let at = self.at.index(items.len());
            let seed = StrictSeed {
                at,
                duplicate: self.duplicate,
            };
            match seq.next_element_seed(seed)? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            if map.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some((self.at.key(&key).render(), key));
                return Err(serde::de::Error::custom("duplicate key"));
            }
            let seed = StrictSeed {
                at: self.at.key(&key),
                duplicate: self.duplicate,
            };
            let value = access.next_value_seed(seed)?;
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

// ---------------------------------------------------------------------------
// JSON pointers, built only when an error needs one.

#[derive(Clone, Copy)]
enum Ptr<'a> {
    Root,
    Key(&'a Ptr<'a>, &'a str),
    Index(&'a Ptr<'a>, usize),
}

impl<'a> Ptr<'a> {
    fn key(&'a self, key: &'a str) -> Ptr<'a> {
        Ptr::Key(self, key)
    }

    fn index(&'a self, index: usize) -> Ptr<'a> {
        Ptr::Index(self, index)
    }

    /// RFC 6901: `~` becomes `~0` and `/` becomes `~1`.
    fn render(&self) -> String {
        let mut segments = Vec::new();
        let mut current = *self;
        loop {
            match current {
                Ptr::Root => break,
                Ptr::Key(parent, key) => {
                    segments.push(key.replace('~', "~0").replace('/', "~1"));
                    current = *parent;
                }
                Ptr::Index(parent, index) => {
                    segments.push(index.to_string());
                    current = *parent;
                }
            }
        }
        let mut out = String::new();
        for segment in segments.iter().rev() {
            out.push('/');
            out.push_str(segment);
        }
        out
    }
}

fn fail<T>(reason: R, at: Ptr<'_>, message: impl Into<String>) -> Result<T, ManifestError> {
    Err(ManifestError::new(reason, at.render(), message))
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

// ---------------------------------------------------------------------------
// Object helpers.

/// The value as an object, or `reason` naming `what` it should have been.
fn object(
    value: Value,
    at: Ptr<'_>,
    reason: R,
    what: &str,
) -> Result<Map<String, Value>, ManifestError> {
    match value {
        Value::Object(map) => Ok(map),
        other => fail(
            reason,
            at,
            format!("{what} must be an object, found {}", type_name(&other)),
        ),
    }
}

fn array(value: Value, at: Ptr<'_>, reason: R, what: &str) -> Result<Vec<Value>, ManifestError> {
    match value {
        Value::Array(items) => Ok(items),
        other => fail(
            reason,
            at,
            format!("{what} must be an array, found {}", type_name(&other)),
        ),
    }
}

fn refuse_unknown(
    map: &Map<String, Value>,
    allowed: &[&str],
    at: Ptr<'_>,
) -> Result<(), ManifestError> {
    // The smallest unknown key, so the report does not depend on map order.
    let unknown = map
        .keys()
        .filter(|key| !allowed.contains(&key.as_str()))
        .min();
    match unknown {
        None => Ok(()),
        Some(key) => {
            let expected: Vec<String> = allowed.iter().map(|name| format!("{name:?}")).collect();
            fail(
                R::UnknownField,
                at.key(key),
                format!(
                    "unknown field {}; expected one of {}",
                    quote(key),
                    expected.join(", ")
                ),
            )
        }
    }
}

/// A required field; `null` counts as absent.
fn required(map: &mut Map<String, Value>, key: &str, at: Ptr<'_>) -> Result<Value, ManifestError> {
    match map.remove(key) {
        Some(Value::Null) | None => fail(
            R::MissingField,
            at.key(key),
            format!("the field {key:?} is required"),
        ),
        Some(value) => Ok(value),
    }
}

/// An optional field; `null` counts as absent.
fn optional(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    match map.remove(key) {
        Some(Value::Null) | None => None,
        Some(value) => Some(value),
    }
}

fn string(value: Value, at: Ptr<'_>, reason: R, what: &str) -> Result<String, ManifestError> {
    match value {
        Value::String(text) => Ok(text),
        other => fail(
            reason,
            at,
            format!("{what} must be a string, found {}", type_name(&other)),
        ),
    }
}

/// A string that obeys ID-1.
fn identifier(value: Value, at: Ptr<'_>, reason: R, what: &str) -> Result<String, ManifestError> {
    let text = string(value, at, reason, what)?;
    match validate_id_segment(&text) {
        Ok(()) => Ok(text),
        Err(error) => fail(
            reason,
            at,
            format!(
                "{what} {} is not a valid identifier: {}",
                quote(&text),
                error.message()
            ),
        ),
    }
}

/// The reason codes of one description or display-name field: its own code
/// for the length and blank rules, then one per text-hygiene refusal
/// ([`crate::text`]).
#[derive(Clone, Copy)]
struct TextReasons {
    invalid: R,
    control: R,
    bidi: R,
    /// Display names only: descriptions have no visibility rule.
    not_visible: Option<R>,
}

const EXTENSION_DISPLAY_NAME: TextReasons = TextReasons {
    invalid: R::InvalidExtensionDisplayName,
    control: R::ExtensionDisplayNameControlCharacter,
    bidi: R::ExtensionDisplayNameBidiControl,
    not_visible: Some(R::ExtensionDisplayNameNotVisible),
};
const EXTENSION_DESCRIPTION: TextReasons = TextReasons {
    invalid: R::InvalidExtensionDescription,
    control: R::ExtensionDescriptionControlCharacter,
    bidi: R::ExtensionDescriptionBidiControl,
    not_visible: None,
};
const TOOL_DESCRIPTION: TextReasons = TextReasons {
    invalid: R::InvalidDeclaredToolDescription,
    control: R::DeclaredToolDescriptionControlCharacter,
    bidi: R::DeclaredToolDescriptionBidiControl,
    not_visible: None,
};
const PROVIDER_DISPLAY_NAME: TextReasons = TextReasons {
    invalid: R::InvalidProviderDisplayName,
    control: R::ProviderDisplayNameControlCharacter,
    bidi: R::ProviderDisplayNameBidiControl,
    not_visible: Some(R::ProviderDisplayNameNotVisible),
};
const TOOL_TITLE: TextReasons = TextReasons {
    invalid: R::InvalidDeclaredToolTitle,
    control: R::InvalidDeclaredToolTitle,
    bidi: R::InvalidDeclaredToolTitle,
    not_visible: Some(R::InvalidDeclaredToolTitle),
};

const ANNOTATIONS_TITLE: TextReasons = TextReasons {
    invalid: R::InvalidDeclaredToolAnnotations,
    control: R::InvalidDeclaredToolAnnotations,
    bidi: R::InvalidDeclaredToolAnnotations,
    not_visible: Some(R::InvalidDeclaredToolAnnotations),
};

const MODEL_DISPLAY_NAME: TextReasons = TextReasons {
    invalid: R::InvalidModelDisplayName,
    control: R::ModelDisplayNameControlCharacter,
    bidi: R::ModelDisplayNameBidiControl,
    not_visible: Some(R::ModelDisplayNameNotVisible),
};

/// A string of 1 to `max` bytes that is not only whitespace (`reasons.invalid`).
fn sized_text(
    value: Value,
    at: Ptr<'_>,
    reasons: TextReasons,
    what: &str,
    max: usize,
) -> Result<String, ManifestError> {
    let text = string(value, at, reasons.invalid, what)?;
    if text.is_empty() || text.len() > max {
        return fail(
            reasons.invalid,
            at,
            format!("{what} is {} bytes; 1 to {max} are allowed", text.len()),
        );
    }
    if text.trim().is_empty() {
        return fail(reasons.invalid, at, format!("{what} is blank"));
    }
    Ok(text)
}

/// Turns a text-hygiene refusal into the field's own reason code.
fn text_refusal<T>(
    error: TextError,
    at: Ptr<'_>,
    reasons: TextReasons,
    what: &str,
) -> Result<T, ManifestError> {
    let reason = match error {
        TextError::ControlCharacter { .. } => reasons.control,
        TextError::BidiControl { .. } => reasons.bidi,
        // Only display names, which have the code, can be not visible.
        TextError::NotVisible => reasons.not_visible.unwrap_or(reasons.invalid),
        // `TextError` is non-exhaustive (it lives in exthost-core).
        _ => reasons.invalid,
    };
    fail(reason, at, format!("{what}: {error}"))
}

/// 1 to 1,024 bytes, not only whitespace, then [`check_description`]: no
/// control character but line breaks and tab, no bidirectional override or
/// isolate.
fn description(
    value: Value,
    at: Ptr<'_>,
    reasons: TextReasons,
    what: &str,
) -> Result<String, ManifestError> {
    let text = sized_text(value, at, reasons, what, MAX_DESCRIPTION_BYTES)?;
    match check_description(&text) {
        Ok(()) => Ok(text),
        Err(error) => text_refusal(error, at, reasons, what),
    }
}

/// 1 to 256 bytes, not only whitespace, then [`check_display_name`]: no
/// control character, no bidirectional override or isolate, a visible
/// character.
fn display_name(
    value: Value,
    at: Ptr<'_>,
    reasons: TextReasons,
    what: &str,
) -> Result<String, ManifestError> {
    let text = sized_text(value, at, reasons, what, MAX_DISPLAY_NAME_BYTES)?;
    match check_display_name(&text) {
        Ok(()) => Ok(text),
        Err(error) => text_refusal(error, at, reasons, what),
    }
}

/// 1 to `max` bytes, no control character, not only whitespace.
fn label(
    value: Value,
    at: Ptr<'_>,
    reason: R,
    what: &str,
    max: usize,
) -> Result<String, ManifestError> {
    let text = string(value, at, reason, what)?;
    if text.is_empty() || text.len() > max {
        return fail(
            reason,
            at,
            format!("{what} is {} bytes; 1 to {max} are allowed", text.len()),
        );
    }
    if let Some((byte, character)) = text.char_indices().find(|(_, c)| c.is_control()) {
        return fail(
            reason,
            at,
            format!("{what} has the control character {character:?} at byte {byte}"),
        );
    }
    if text.trim().is_empty() {
        return fail(reason, at, format!("{what} is blank"));
    }
    Ok(text)
}

/// A JSON object of at most 64 KiB in canonical form; returns it with the
/// digest of that form.
fn schema(
    value: Value,
    at: Ptr<'_>,
    reason: R,
    what: &str,
) -> Result<(Value, SchemaDigest), ManifestError> {
    if !value.is_object() {
        return fail(
            reason,
            at,
            format!("{what} must be an object, found {}", type_name(&value)),
        );
    }
    let canonical = canonical_json(&value);
    if canonical.len() > MAX_SCHEMA_BYTES {
        return fail(
            reason,
            at,
            format!(
                "{what} is {} bytes serialised; at most {MAX_SCHEMA_BYTES} are allowed",
                canonical.len()
            ),
        );
    }
    let digest = SchemaDigest::of_canonical_bytes(canonical.as_bytes());
    Ok((value, digest))
}

// ---------------------------------------------------------------------------
// The manifest.

const MANIFEST_FIELDS: &[&str] = &[
    "id",
    "version",
    "displayName",
    "description",
    "runtime",
    "permissions",
    "hooks",
    "dependencies",
    "deferred",
    "deadlines",
    "expose",
];
const DEFERRED_FIELDS: &[&str] = &[
    "tools",
    "providers",
    "lifecycle",
    "context_providers",
    "prompts",
    "resources",
    "resourceTemplates",
    "completions",
];
const TOOL_FIELDS: &[&str] = &[
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "icons",
    "_meta",
];
const EXPOSE_FIELDS: &[&str] = &["allow", "deny"];
/// The hints of a tool's `annotations`, each a boolean when present.
const ANNOTATION_HINTS: &[&str] = &[
    "readOnlyHint",
    "destructiveHint",
    "idempotentHint",
    "openWorldHint",
];
const PROVIDER_FIELDS: &[&str] = &["id", "displayName", "configSchema", "models"];
const MODEL_FIELDS: &[&str] = &["id", "displayName", "capabilities"];

pub(crate) fn decode(value: Value) -> Result<(Manifest, Vec<Notice>), ManifestError> {
    // Attach the id to every error once it is known to be valid.
    let id = value
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| validate_id_segment(id).is_ok())
        .map(str::to_owned);
    decode_manifest(value).map_err(|error| error.with_extension_id(id.as_deref()))
}

fn decode_manifest(value: Value) -> Result<(Manifest, Vec<Notice>), ManifestError> {
    let root = Ptr::Root;
    let mut notices = Vec::new();
    let mut map = object(value, root, R::InvalidFieldType, "the manifest")?;
    refuse_unknown(&map, MANIFEST_FIELDS, root)?;

    let id = identifier(
        required(&mut map, "id", root)?,
        root.key("id"),
        R::InvalidExtensionId,
        "the extension id",
    )?;
    let version = optional(&mut map, "version")
        .map(|v| {
            label(
                v,
                root.key("version"),
                R::InvalidExtensionVersion,
                "the version",
                MAX_VERSION_BYTES,
            )
        })
        .transpose()?;
    let display_name = optional(&mut map, "displayName")
        .map(|v| {
            display_name(
                v,
                root.key("displayName"),
                EXTENSION_DISPLAY_NAME,
                "the display name",
            )
        })
        .transpose()?;
    let description_text = optional(&mut map, "description")
        .map(|v| {
            description(
                v,
                root.key("description"),
                EXTENSION_DESCRIPTION,
                "the description",
            )
        })
        .transpose()?;
    let runtime = decode_runtime(required(&mut map, "runtime", root)?, root.key("runtime"))?;
    let permissions = match optional(&mut map, "permissions") {
        Some(value) => decode_permissions(value, root.key("permissions"), &mut notices)?,
        None => Vec::new(),
    };
    let hooks = match optional(&mut map, "hooks") {
        Some(value) => decode_names(
            value,
            root.key("hooks"),
            "the hook list",
            "the hook event name",
            (R::InvalidHookEventName, R::DuplicateHookEventName),
            None,
        )?,
        None => Vec::new(),
    };
    let dependencies = match optional(&mut map, "dependencies") {
        Some(value) => decode_names(
            value,
            root.key("dependencies"),
            "the dependency list",
            "the dependency id",
            (R::InvalidDependencyId, R::DuplicateDependencyId),
            Some(&id),
        )?,
        None => Vec::new(),
    };
    let deferred = match optional(&mut map, "deferred") {
        Some(value) => decode_deferred(value, root.key("deferred"), &mut notices)?,
        None => Deferred::default(),
    };

    let deadlines = match optional(&mut map, "deadlines") {
        Some(value) => decode_deadlines(value, root.key("deadlines"))?,
        None => ManifestDeadlines::default(),
    };

    let expose = match optional(&mut map, "expose") {
        Some(value) => decode_expose(value, root.key("expose"))?,
        None => ExposeRules::default(),
    };

    let manifest = Manifest {
        id,
        version,
        display_name,
        description: description_text,
        runtime,
        permissions,
        hooks,
        dependencies,
        deferred,
        deadlines,
        expose,
    };
    check_permissions_and_lifecycle(&manifest)?;
    Ok((manifest, notices))
}

fn decode_runtime(value: Value, at: Ptr<'_>) -> Result<Runtime, ManifestError> {
    let mut map = object(value, at, R::InvalidRuntime, "the runtime")?;
    let kind = match map.get("kind") {
        None | Some(Value::Null) => {
            return fail(
                R::MissingField,
                at.key("kind"),
                "the field \"kind\" is required",
            );
        }
        Some(Value::String(kind)) => kind.clone(),
        Some(other) => {
            return fail(
                R::InvalidRuntime,
                at.key("kind"),
                format!(
                    "the runtime kind must be a string, found {}",
                    type_name(other)
                ),
            );
        }
    };
    match kind.as_str() {
        "in-process" => {
            refuse_unknown(&map, &["kind"], at)?;
            Ok(Runtime::InProcess)
        }
        "process" => {
            refuse_unknown(
                &map,
                &[
                    "kind",
                    "command",
                    "args",
                    "env",
                    "startupTimeoutMs",
                    "callTimeoutMs",
                    "shutdownTimeoutMs",
                    "idleTimeoutMs",
                ],
                at,
            )?;
            let command = label(
                required(&mut map, "command", at)?,
                at.key("command"),
                R::InvalidRuntimeCommand,
                "the command",
                MAX_COMMAND_BYTES,
            )?;
            let args = match optional(&mut map, "args") {
                Some(value) => decode_arguments(value, at.key("args"))?,
                None => Vec::new(),
            };
            let env = match optional(&mut map, "env") {
                Some(value) => decode_env(value, at.key("env"))?,
                None => Vec::new(),
            };
            let mut timeout = |key: &str| match optional(&mut map, key) {
                Some(value) => decode_timeout(value, at.key(key)).map(Some),
                None => Ok(None),
            };
            let startup_timeout_ms = timeout("startupTimeoutMs")?;
            let call_timeout_ms = timeout("callTimeoutMs")?;
            let shutdown_timeout_ms = timeout("shutdownTimeoutMs")?;
            let idle_timeout_ms = match optional(&mut map, "idleTimeoutMs") {
                Some(value) => Some(decode_idle_timeout(value, at.key("idleTimeoutMs"))?),
                None => None,
            };
            Ok(Runtime::Process(ProcessRuntime {
                command,
                args,
                env,
                startup_timeout_ms,
                call_timeout_ms,
                shutdown_timeout_ms,
                idle_timeout_ms,
            }))
        }
        other => fail(
            R::InvalidRuntime,
            at.key("kind"),
            format!(
                "unknown runtime kind {}; expected \"in-process\" or \"process\"",
                quote(other)
            ),
        ),
    }
}

fn decode_arguments(value: Value, at: Ptr<'_>) -> Result<Vec<String>, ManifestError> {
    let items = array(value, at, R::InvalidRuntimeArguments, "the argument list")?;
    if items.len() > MAX_ARGUMENTS {
        return fail(
            R::InvalidRuntimeArguments,
            at,
            format!(
                "{} arguments; at most {MAX_ARGUMENTS} are allowed",
                items.len()
            ),
        );
    }
    let mut args = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let item_at = at.index(index);
        let arg = string(item, item_at, R::InvalidRuntimeArguments, "an argument")?;
        if arg.len() > MAX_ARGUMENT_BYTES {
            return fail(
                R::InvalidRuntimeArguments,
                item_at,
                format!(
                    "the argument is {} bytes; at most {MAX_ARGUMENT_BYTES} are allowed",
                    arg.len()
                ),
            );
        }
        if arg.contains('\0') {
            return fail(
                R::InvalidRuntimeArguments,
                item_at,
                "an argument may not contain NUL",
            );
        }
        args.push(arg);
    }
    Ok(args)
}

/// A process runtime deadline: whole milliseconds, 1 to 600,000 (ten minutes).
fn decode_timeout(value: Value, at: Ptr<'_>) -> Result<u64, ManifestError> {
    match value.as_u64() {
        Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Ok(ms),
        _ => fail(
            R::InvalidRuntimeTimeout,
            at,
            format!(
                "a deadline must be an integer number of milliseconds from 1 to {MAX_TIMEOUT_MS}"
            ),
        ),
    }
}

/// `runtime.idleTimeoutMs`: whole milliseconds from 1 to
/// [`MAX_IDLE_TIMEOUT_MS`] (a day; an idle stop is not a deadline of a
/// step, so it may be longer than one).
fn decode_idle_timeout(value: Value, at: Ptr<'_>) -> Result<u64, ManifestError> {
    let within = |ms: &u64| (1..=MAX_IDLE_TIMEOUT_MS).contains(ms);
    value.as_u64().filter(within).map_or_else(
        || {
            let message = format!(
                "an idle timeout must be an integer number of milliseconds from 1 to {MAX_IDLE_TIMEOUT_MS}"
            );
            fail(R::InvalidRuntimeTimeout, at, message)
        },
        Ok,
    )
}

/// The `deadlines` block: `activationMs` and `cleanupMs`, each optional,
/// each whole milliseconds from 1 to 600,000.
fn decode_deadlines(value: Value, at: Ptr<'_>) -> Result<ManifestDeadlines, ManifestError> {
    let mut map = object(value, at, R::InvalidDeadline, "the deadlines")?;
    refuse_unknown(&map, &["activationMs", "cleanupMs"], at)?;
    let mut deadline = |key: &str| match optional(&mut map, key) {
        Some(value) => match value.as_u64() {
            Some(ms) if (1..=MAX_TIMEOUT_MS).contains(&ms) => Ok(Some(ms)),
            _ => fail(
                R::InvalidDeadline,
                at.key(key),
                format!(
                    "a deadline must be an integer number of milliseconds from 1 to {MAX_TIMEOUT_MS}"
                ),
            ),
        },
        None => Ok(None),
    };
    Ok(ManifestDeadlines {
        activation_ms: deadline("activationMs")?,
        cleanup_ms: deadline("cleanupMs")?,
    })
}

fn is_env_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_ENV_NAME_BYTES
        && !bytes[0].is_ascii_digit()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

fn decode_env(value: Value, at: Ptr<'_>) -> Result<Vec<String>, ManifestError> {
    let items = array(
        value,
        at,
        R::InvalidRuntimeEnv,
        "the environment allow-list",
    )?;
    if items.len() > MAX_ENV_NAMES {
        return fail(
            R::InvalidRuntimeEnv,
            at,
            format!(
                "{} variable names; at most {MAX_ENV_NAMES} are allowed",
                items.len()
            ),
        );
    }
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let item_at = at.index(index);
        let name = string(item, item_at, R::InvalidRuntimeEnv, "a variable name")?;
        if !is_env_name(&name) {
            return fail(
                R::InvalidRuntimeEnv,
                item_at,
                format!(
                    "{} is not a variable name: use 1 to {MAX_ENV_NAME_BYTES} ASCII letters, digits and '_', not starting with a digit",
                    quote(&name)
                ),
            );
        }
        if names.contains(&name) {
            return fail(
                R::InvalidRuntimeEnv,
                item_at,
                format!("{} is listed twice", quote(&name)),
            );
        }
        names.push(name);
    }
    Ok(names)
}

fn decode_permissions(
    value: Value,
    at: Ptr<'_>,
    notices: &mut Vec<Notice>,
) -> Result<Vec<Permission>, ManifestError> {
    let items = array(value, at, R::InvalidFieldType, "the permission list")?;
    let mut permissions: Vec<Permission> = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let item_at = at.index(index);
        let name = string(item, item_at, R::UnknownPermission, "a permission")?;
        if name == Permission::RETIRED_CONTEXT_PROVIDERS_REGISTER {
            if !notices
                .iter()
                .any(|n| n.key == RetiredKey::ContextProvidersRegisterPermission)
            {
                notices.push(Notice {
                    key: RetiredKey::ContextProvidersRegisterPermission,
                    pointer: item_at.render(),
                });
            }
            continue;
        }
        let Some(permission) = Permission::from_name(&name) else {
            let known: Vec<String> = Permission::ALL
                .iter()
                .map(|p| format!("{:?}", p.as_str()))
                .collect();
            return fail(
                R::UnknownPermission,
                item_at,
                format!(
                    "unknown permission {}; expected one of {}",
                    quote(&name),
                    known.join(", ")
                ),
            );
        };
        if permissions.contains(&permission) {
            return fail(
                R::DuplicatePermission,
                item_at,
                format!("the permission {permission:?} is listed twice"),
            );
        }
        permissions.push(permission);
    }
    Ok(permissions)
}

/// A list of distinct ID-1 names (hooks, dependencies); `own_id` refuses a
/// dependency on the extension itself.
fn decode_names(
    value: Value,
    at: Ptr<'_>,
    list: &str,
    what: &str,
    (invalid, duplicate): (R, R),
    own_id: Option<&str>,
) -> Result<Vec<String>, ManifestError> {
    let items = array(value, at, R::InvalidFieldType, list)?;
    let mut names = Vec::with_capacity(items.len());
    let mut seen = HashSet::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let item_at = at.index(index);
        let name = identifier(item, item_at, invalid, what)?;
        if !seen.insert(name.clone()) {
            return fail(
                duplicate,
                item_at,
                format!("{what} {} is listed twice", quote(&name)),
            );
        }
        if own_id == Some(name.as_str()) {
            return fail(
                R::DependencyOnSelf,
                item_at,
                "an extension cannot depend on itself",
            );
        }
        names.push(name);
    }
    Ok(names)
}

fn decode_deferred(
    value: Value,
    at: Ptr<'_>,
    notices: &mut Vec<Notice>,
) -> Result<Deferred, ManifestError> {
    let mut map = object(value, at, R::InvalidFieldType, "the deferred block")?;
    refuse_unknown(&map, DEFERRED_FIELDS, at)?;
    if map.remove("context_providers").is_some() {
        notices.push(Notice {
            key: RetiredKey::DeferredContextProviders,
            pointer: at.key("context_providers").render(),
        });
    }
    let tools = match optional(&mut map, "tools") {
        Some(value) => decode_tools(value, at.key("tools"))?,
        None => Vec::new(),
    };
    let providers = match optional(&mut map, "providers") {
        Some(value) => decode_providers(value, at.key("providers"))?,
        None => Vec::new(),
    };
    let lifecycle = match optional(&mut map, "lifecycle") {
        None => None,
        Some(value) => {
            let lifecycle_at = at.key("lifecycle");
            match string(value, lifecycle_at, R::InvalidLifecycle, "the lifecycle")?.as_str() {
                "hook" => Some(Lifecycle::Hook),
                "user" => Some(Lifecycle::User),
                other => {
                    return fail(
                        R::InvalidLifecycle,
                        lifecycle_at,
                        format!(
                            "unknown lifecycle {}; expected \"hook\" or \"user\"",
                            quote(other)
                        ),
                    );
                }
            }
        }
    };
    let mut listings = super::listings::DeclaredListings::default();
    for kind in super::ListingKind::ALL {
        if let Some(value) = optional(&mut map, kind.key()) {
            listings.set(kind, decode_listing(kind, value, at.key(kind.key()))?);
        }
    }
    let completions = match optional(&mut map, "completions") {
        None => false,
        Some(Value::Bool(offered)) => offered,
        Some(other) => {
            return fail(
                R::InvalidFieldType,
                at.key("completions"),
                format!(
                    "the completions pin must be a boolean, found {}",
                    type_name(&other)
                ),
            );
        }
    };
    Ok(Deferred {
        tools,
        providers,
        lifecycle,
        listings,
        completions,
    })
}

/// A pinned list of prompts, resources or resource templates: at most
/// [`MAX_DECLARED_LISTED`](super::MAX_DECLARED_LISTED) objects, each with
/// its string key, unique, and at most 64 KiB in canonical form; each is
/// kept whole.
fn decode_listing(
    kind: super::ListingKind,
    value: Value,
    at: Ptr<'_>,
) -> Result<Vec<Value>, ManifestError> {
    let reason = R::InvalidDeclaredListing;
    let items = array(value, at, reason, "a pinned list")?;
    if items.len() > super::MAX_DECLARED_LISTED {
        return fail(
            reason,
            at,
            format!(
                "{} entries; at most {} are allowed",
                items.len(),
                super::MAX_DECLARED_LISTED
            ),
        );
    }
    let mut seen: HashSet<String> = HashSet::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let item_at = at.index(index);
        if !item.is_object() {
            return fail(
                reason,
                item_at,
                format!(
                    "a pinned {} must be an object, found {}",
                    kind.noun(),
                    type_name(item)
                ),
            );
        }
        let Some(id) = kind.id_of(item) else {
            return fail(
                reason,
                item_at.key(kind.id_field()),
                format!(
                    "a pinned {} needs a string {:?}",
                    kind.noun(),
                    kind.id_field()
                ),
            );
        };
        if !seen.insert(id.to_owned()) {
            return fail(
                reason,
                item_at.key(kind.id_field()),
                format!("the {} {} is pinned twice", kind.noun(), quote(id)),
            );
        }
        sized(item.clone(), item_at, reason, "the entry")?;
    }
    Ok(items)
}

fn decode_tools(value: Value, at: Ptr<'_>) -> Result<Vec<DeclaredTool>, ManifestError> {
    let items = array(value, at, R::InvalidFieldType, "the declared tool list")?;
    if items.len() > MAX_DECLARED_TOOLS {
        return fail(
            R::TooManyDeclaredTools,
            at,
            format!(
                "{} declared tools; at most {MAX_DECLARED_TOOLS} are allowed",
                items.len()
            ),
        );
    }
    let mut tools: Vec<DeclaredTool> = Vec::with_capacity(items.len());
    let mut seen: HashSet<String> = HashSet::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let item_at = at.index(index);
        let mut map = object(item, item_at, R::InvalidFieldType, "a declared tool")?;
        refuse_unknown(&map, TOOL_FIELDS, item_at)?;
        let name_at = item_at.key("name");
        let name = identifier(
            required(&mut map, "name", item_at)?,
            name_at,
            R::InvalidDeclaredToolName,
            "the tool name",
        )?;
        if !seen.insert(name.clone()) {
            return fail(
                R::DuplicateDeclaredToolName,
                name_at,
                format!("the tool name {} is declared twice", quote(&name)),
            );
        }
        let description = description(
            required(&mut map, "description", item_at)?,
            item_at.key("description"),
            TOOL_DESCRIPTION,
            "the tool description",
        )?;
        let (input_schema, schema_digest) = schema(
            required(&mut map, "inputSchema", item_at)?,
            item_at.key("inputSchema"),
            R::InvalidDeclaredToolInputSchema,
            "the input schema",
        )?;
        let title = optional(&mut map, "title")
            .map(|v| display_name(v, item_at.key("title"), TOOL_TITLE, "the tool title"))
            .transpose()?;
        let output_schema = optional(&mut map, "outputSchema")
            .map(|v| {
                schema(
                    v,
                    item_at.key("outputSchema"),
                    R::InvalidDeclaredToolOutputSchema,
                    "the output schema",
                )
                .map(|(value, _)| value)
            })
            .transpose()?;
        let annotations = optional(&mut map, "annotations")
            .map(|v| decode_annotations(v, item_at.key("annotations")))
            .transpose()?;
        let icons = optional(&mut map, "icons")
            .map(|v| {
                if !v.is_array() {
                    return fail(
                        R::InvalidDeclaredToolMetadata,
                        item_at.key("icons"),
                        format!("the icons must be an array, found {}", type_name(&v)),
                    );
                }
                sized(
                    v,
                    item_at.key("icons"),
                    R::InvalidDeclaredToolMetadata,
                    "the icons",
                )
            })
            .transpose()?;
        let meta = optional(&mut map, "_meta")
            .map(|v| {
                schema(
                    v,
                    item_at.key("_meta"),
                    R::InvalidDeclaredToolMetadata,
                    "the _meta",
                )
                .map(|(value, _)| value)
            })
            .transpose()?;
        tools.push(DeclaredTool {
            name,
            title,
            description,
            input_schema,
            output_schema,
            annotations,
            icons,
            meta,
            schema_digest,
        });
    }
    Ok(tools)
}

/// A value of at most 64 KiB in canonical form.
fn sized(value: Value, at: Ptr<'_>, reason: R, what: &str) -> Result<Value, ManifestError> {
    let bytes = canonical_json(&value).len();
    if bytes > MAX_SCHEMA_BYTES {
        return fail(
            reason,
            at,
            format!("{what} is {bytes} bytes serialised; at most {MAX_SCHEMA_BYTES} are allowed"),
        );
    }
    Ok(value)
}

/// A tool's `annotations`: an object of at most 64 KiB whose hints are
/// booleans and whose `title` is a title; other keys are kept as they are.
fn decode_annotations(value: Value, at: Ptr<'_>) -> Result<Value, ManifestError> {
    let reason = R::InvalidDeclaredToolAnnotations;
    let Some(map) = value.as_object() else {
        return fail(
            reason,
            at,
            format!(
                "the annotations must be an object, found {}",
                type_name(&value)
            ),
        );
    };
    for hint in ANNOTATION_HINTS {
        if let Some(v) = map.get(*hint)
            && !v.is_boolean()
        {
            return fail(
                reason,
                at.key(hint),
                format!("the hint {hint} must be a boolean, found {}", type_name(v)),
            );
        }
    }
    if let Some(title) = map.get("title") {
        display_name(
            title.clone(),
            at.key("title"),
            ANNOTATIONS_TITLE,
            "the annotations' title",
        )?;
    }
    sized(value, at, reason, "the annotations")
}

/// The `expose` block: `allow` and `deny`, each a list of patterns.
fn decode_expose(value: Value, at: Ptr<'_>) -> Result<ExposeRules, ManifestError> {
    let mut map = object(value, at, R::InvalidFieldType, "the expose block")?;
    refuse_unknown(&map, EXPOSE_FIELDS, at)?;
    let mut lists = [Vec::new(), Vec::new()];
    for (slot, key) in lists.iter_mut().zip(EXPOSE_FIELDS) {
        let Some(list) = optional(&mut map, key) else {
            continue;
        };
        let list_at = at.key(key);
        let items = array(list, list_at, R::InvalidFieldType, "a pattern list")?;
        if items.len() > MAX_EXPOSE_PATTERNS {
            return fail(
                R::InvalidExposePattern,
                list_at,
                format!(
                    "{} patterns; at most {MAX_EXPOSE_PATTERNS} are allowed",
                    items.len()
                ),
            );
        }
        for (index, item) in items.into_iter().enumerate() {
            let item_at = list_at.index(index);
            let pattern = string(item, item_at, R::InvalidExposePattern, "a pattern")?;
            if !is_valid_pattern(&pattern) {
                return fail(
                    R::InvalidExposePattern,
                    item_at,
                    format!(
                        "the pattern {} is not 1 to {MAX_EXPOSE_PATTERN_BYTES} bytes of letters, digits, '_', '-', '.' and '*'",
                        quote(&pattern)
                    ),
                );
            }
            slot.push(pattern);
        }
    }
    let [allow, deny] = lists;
    Ok(ExposeRules { allow, deny })
}

fn decode_providers(value: Value, at: Ptr<'_>) -> Result<Vec<DeclaredProvider>, ManifestError> {
    let items = array(value, at, R::InvalidFieldType, "the declared provider list")?;
    if items.len() > MAX_DECLARED_PROVIDERS {
        return fail(
            R::TooManyDeclaredProviders,
            at,
            format!(
                "{} declared providers; at most {MAX_DECLARED_PROVIDERS} are allowed",
                items.len()
            ),
        );
    }
    let mut providers: Vec<DeclaredProvider> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let item_at = at.index(index);
        let mut map = object(item, item_at, R::InvalidFieldType, "a declared provider")?;
        refuse_unknown(&map, PROVIDER_FIELDS, item_at)?;
        let id_at = item_at.key("id");
        let id = identifier(
            required(&mut map, "id", item_at)?,
            id_at,
            R::InvalidDeclaredProviderId,
            "the provider id",
        )?;
        if providers.iter().any(|provider| provider.id == id) {
            return fail(
                R::DuplicateDeclaredProviderId,
                id_at,
                format!("the provider id {} is declared twice", quote(&id)),
            );
        }
        let display_name = display_name(
            required(&mut map, "displayName", item_at)?,
            item_at.key("displayName"),
            PROVIDER_DISPLAY_NAME,
            "the provider display name",
        )?;
        let config_schema = optional(&mut map, "configSchema")
            .map(|value| {
                schema(
                    value,
                    item_at.key("configSchema"),
                    R::InvalidProviderConfigSchema,
                    "the config schema",
                )
                .map(|(schema, _digest)| schema)
            })
            .transpose()?;
        let models = match optional(&mut map, "models") {
            Some(value) => decode_models(value, item_at.key("models"))?,
            None => Vec::new(),
        };
        providers.push(DeclaredProvider {
            id,
            display_name,
            config_schema,
            models,
        });
    }
    Ok(providers)
}

fn decode_models(value: Value, at: Ptr<'_>) -> Result<Vec<DeclaredModel>, ManifestError> {
    let items = array(value, at, R::InvalidFieldType, "the model list")?;
    if items.len() > MAX_DECLARED_MODELS {
        return fail(
            R::TooManyDeclaredModels,
            at,
            format!(
                "{} declared models; at most {MAX_DECLARED_MODELS} are allowed",
                items.len()
            ),
        );
    }
    let mut models: Vec<DeclaredModel> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let item_at = at.index(index);
        let mut map = object(item, item_at, R::InvalidFieldType, "a declared model")?;
        refuse_unknown(&map, MODEL_FIELDS, item_at)?;
        let id_at = item_at.key("id");
        let id = identifier(
            required(&mut map, "id", item_at)?,
            id_at,
            R::InvalidDeclaredModelId,
            "the model id",
        )?;
        if models.iter().any(|model| model.id == id) {
            return fail(
                R::DuplicateDeclaredModelId,
                id_at,
                format!(
                    "the model id {} is declared twice in this provider",
                    quote(&id)
                ),
            );
        }
        let display_name = optional(&mut map, "displayName")
            .map(|value| {
                display_name(
                    value,
                    item_at.key("displayName"),
                    MODEL_DISPLAY_NAME,
                    "the model display name",
                )
            })
            .transpose()?;
        let capabilities = optional(&mut map, "capabilities")
            .map(|value| decode_capabilities(value, item_at.key("capabilities")))
            .transpose()?;
        models.push(DeclaredModel {
            id,
            display_name,
            capabilities,
        });
    }
    Ok(models)
}

fn decode_capabilities(value: Value, at: Ptr<'_>) -> Result<BTreeMap<String, bool>, ManifestError> {
    let map = object(value, at, R::InvalidModelCapabilities, "the capabilities")?;
    let mut capabilities = BTreeMap::new();
    for (name, flag) in map {
        match flag {
            Value::Bool(flag) => {
                capabilities.insert(name, flag);
            }
            other => {
                return fail(
                    R::InvalidModelCapabilities,
                    at.key(&name),
                    format!(
                        "the capability {} must be a boolean, found {}",
                        quote(&name),
                        type_name(&other)
                    ),
                );
            }
        }
    }
    Ok(capabilities)
}

/// M-2, after every field is known to be well formed.
fn check_permissions_and_lifecycle(manifest: &Manifest) -> Result<(), ManifestError> {
    let root = Ptr::Root;
    let deferred = root.key("deferred");
    if !manifest.deferred.tools.is_empty() && !manifest.has_permission(Permission::ToolsRegister) {
        return fail(
            R::DeferredToolsRequireToolsRegisterPermission,
            deferred.key("tools"),
            "declared tools need the \"tools.register\" permission",
        );
    }
    if !manifest.deferred.providers.is_empty()
        && !manifest.has_permission(Permission::ProvidersRegister)
    {
        return fail(
            R::DeferredProvidersRequireProvidersRegisterPermission,
            deferred.key("providers"),
            "declared providers need the \"providers.register\" permission",
        );
    }
    if !manifest.hooks.is_empty() && !manifest.has_permission(Permission::HooksSubscribe) {
        return fail(
            R::HookSubscriptionsRequireHooksSubscribePermission,
            root.key("hooks"),
            "hook subscriptions need the \"hooks.subscribe\" permission",
        );
    }
    match manifest.deferred.lifecycle {
        Some(Lifecycle::Hook) if manifest.hooks.is_empty() => fail(
            R::HookLifecycleRequiresHookSubscriptions,
            deferred.key("lifecycle"),
            "lifecycle \"hook\" needs at least one hook subscription in \"hooks\"",
        ),
        Some(Lifecycle::User) if manifest.has_declarations() => fail(
            R::UserLifecycleConflictsWithActiveCapabilities,
            deferred.key("lifecycle"),
            "lifecycle \"user\" cannot be combined with declared tools or providers",
        ),
        _ => Ok(()),
    }
}

/// One provider as a declaration (`{"id", "displayName", "configSchema",
/// "models"}`) checked by exactly the validators of a manifest's declared
/// providers (M-1, M-8): the host runs it on every provider an extension
/// registers, so registration and declaration refuse the same things with
/// the same reason codes. The pointer of an error is relative to the
/// provider (`/displayName`, `/models/0/id`).
#[cfg(not(exthost_loom))]
pub(crate) fn validate_provider_value(value: Value) -> Result<DeclaredProvider, ManifestError> {
    let mut providers = decode_providers(Value::Array(vec![value]), Ptr::Root)?;
    Ok(providers.remove(0))
}
