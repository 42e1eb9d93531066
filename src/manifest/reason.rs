//! Why a manifest was refused: [`ManifestReason`], [`ManifestError`] and
//! [`ManifestBatchError`].

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::error::{CodedError, codes};

pub(crate) use crate::error::reason_enum;

reason_enum! {
    /// The stable reason for refusing a manifest (M-1, M-2, M-7 and the
    /// folder loader). Every refusal has exactly one reason; the list may grow
    /// but a code never changes meaning.
    enum ManifestReason;
    /// Every manifest reason code, in the order of [`ManifestReason::ALL`].
    const REASON_CODES;

    // The document.
    /// The text is not JSON (syntax error, lone surrogate, nesting deeper than 128).
    InvalidJson => "invalid_json",
    /// An object has the same key twice; JSON parsers disagree on which wins.
    DuplicateKey => "duplicate_key",
    /// The manifest text or file is over [`MAX_MANIFEST_BYTES`](super::MAX_MANIFEST_BYTES).
    ManifestTooLarge => "manifest_too_large",
    /// A structural value (the document, `permissions`, `hooks`,
    /// `dependencies`, `deferred`, `tools`, `providers`, `models` or one of
    /// their entries) has the wrong JSON type.
    InvalidFieldType => "invalid_field_type",
    /// A required field is absent (or `null`).
    MissingField => "missing_field",
    /// An object has a field the schema does not know.
    UnknownField => "unknown_field",

    // The extension itself.
    /// `id` is not a string or breaks ID-1.
    InvalidExtensionId => "invalid_extension_id",
    /// `version` is not a string of 1 to 64 bytes without control characters, or is blank.
    InvalidExtensionVersion => "invalid_extension_version",
    /// `displayName` is not a string of 1 to 256 bytes, or is blank (its
    /// characters are the text-hygiene codes' business).
    InvalidExtensionDisplayName => "invalid_extension_display_name",
    /// `description` is not a string of 1 to 1,024 bytes, or is blank.
    InvalidExtensionDescription => "invalid_extension_description",

    // Text hygiene (M-1, M-8): `crate::text`, one code per kind and field.
    /// `displayName` holds a control character (any of general category
    /// Cc, or U+2028 / U+2029).
    ExtensionDisplayNameControlCharacter => "extension_display_name_control_character",
    /// `displayName` holds a bidirectional override or isolate (U+202A to
    /// U+202E, U+2066 to U+2069).
    ExtensionDisplayNameBidiControl => "extension_display_name_bidi_control",
    /// `displayName` has no visible character.
    ExtensionDisplayNameNotVisible => "extension_display_name_not_visible",
    /// `description` holds a control character other than `\n`, `\r`, `\t`.
    ExtensionDescriptionControlCharacter => "extension_description_control_character",
    /// `description` holds a bidirectional override or isolate.
    ExtensionDescriptionBidiControl => "extension_description_bidi_control",

    // The runtime.
    /// `runtime` is not an object, or its `kind` is not `in-process` or `process`.
    InvalidRuntime => "invalid_runtime",
    /// `runtime.command` is not a string of 1 to 4,096 bytes without control
    /// characters, or is blank.
    InvalidRuntimeCommand => "invalid_runtime_command",
    /// `runtime.args` is not a list of at most 256 strings, each at most
    /// 4,096 bytes and without NUL.
    InvalidRuntimeArguments => "invalid_runtime_arguments",
    /// `runtime.env` is not a list of at most 256 distinct variable names
    /// (`[A-Za-z_][A-Za-z0-9_]*`, at most 128 bytes).
    InvalidRuntimeEnv => "invalid_runtime_env",
    /// `runtime.startupTimeoutMs`, `runtime.callTimeoutMs` or
    /// `runtime.shutdownTimeoutMs` is not an integer from 1 to 600,000, or
    /// `runtime.idleTimeoutMs` not one from 1 to 86,400,000.
    InvalidRuntimeTimeout => "invalid_runtime_timeout",
    /// `deadlines` is not an object of `activationMs` and `cleanupMs`, or
    /// one of them is not an integer from 1 to 600,000.
    InvalidDeadline => "invalid_deadline",

    // Permissions, hooks, dependencies.
    /// A permission is not a string of the closed vocabulary.
    UnknownPermission => "unknown_permission",
    /// A permission is listed twice.
    DuplicatePermission => "duplicate_permission",
    /// A hook event name is not a string or breaks ID-1.
    InvalidHookEventName => "invalid_hook_event_name",
    /// A hook event is subscribed twice.
    DuplicateHookEventName => "duplicate_hook_event_name",
    /// A dependency is not a string or breaks ID-1.
    InvalidDependencyId => "invalid_dependency_id",
    /// A dependency is listed twice.
    DuplicateDependencyId => "duplicate_dependency_id",
    /// The extension lists itself as a dependency.
    DependencyOnSelf => "dependency_on_self",

    // Declared tools (M-1).
    /// More than 256 declared tools.
    TooManyDeclaredTools => "too_many_declared_tools",
    /// A declared tool name is not a string or breaks ID-1.
    InvalidDeclaredToolName => "invalid_declared_tool_name",
    /// Two declared tools have the same name.
    DuplicateDeclaredToolName => "duplicate_declared_tool_name",
    /// A declared tool description is not a string of 1 to 1,024 bytes, or
    /// is blank.
    InvalidDeclaredToolDescription => "invalid_declared_tool_description",
    /// A declared input schema is not an object or is over 64 KiB serialised.
    InvalidDeclaredToolInputSchema => "invalid_declared_tool_input_schema",
    /// A declared tool description holds a control character other than
    /// `\n`, `\r`, `\t`.
    DeclaredToolDescriptionControlCharacter => "declared_tool_description_control_character",
    /// A declared tool description holds a bidirectional override or isolate.
    DeclaredToolDescriptionBidiControl => "declared_tool_description_bidi_control",
    /// A declared tool `title` is not a string of 1 to 256 bytes with a
    /// visible character and without control characters, bidirectional
    /// overrides or isolates.
    InvalidDeclaredToolTitle => "invalid_declared_tool_title",
    /// A declared tool's `annotations` is not an object of at most 64 KiB
    /// serialised, or one of its hints is not a boolean, or its `title` is
    /// not a valid title.
    InvalidDeclaredToolAnnotations => "invalid_declared_tool_annotations",
    /// A declared `outputSchema` is not an object or is over 64 KiB serialised.
    InvalidDeclaredToolOutputSchema => "invalid_declared_tool_output_schema",
    /// A declared tool's `icons` is not an array, or its `_meta` not an
    /// object, or either is over 64 KiB serialised.
    InvalidDeclaredToolMetadata => "invalid_declared_tool_metadata",
    /// `deferred.prompts`, `deferred.resources` or
    /// `deferred.resourceTemplates` is not an array of at most 256 objects,
    /// or an entry lacks its string key (`name`, `uri`, `uriTemplate`),
    /// repeats another's key, or is over 64 KiB serialised.
    InvalidDeclaredListing => "invalid_declared_listing",
    /// An `expose.allow` or `expose.deny` pattern is not 1 to 128 bytes of
    /// `[A-Za-z0-9_.-]` and `*`, or a list has more than 256 patterns.
    InvalidExposePattern => "invalid_expose_pattern",

    // Declared providers and models (M-1).
    /// More than 16 declared providers.
    TooManyDeclaredProviders => "too_many_declared_providers",
    /// A declared provider id is not a string or breaks ID-1.
    InvalidDeclaredProviderId => "invalid_declared_provider_id",
    /// Two declared providers have the same id.
    DuplicateDeclaredProviderId => "duplicate_declared_provider_id",
    /// A provider `displayName` is not a string of 1 to 256 bytes, or is
    /// blank.
    InvalidProviderDisplayName => "invalid_provider_display_name",
    /// A provider `displayName` holds a control character.
    ProviderDisplayNameControlCharacter => "provider_display_name_control_character",
    /// A provider `displayName` holds a bidirectional override or isolate.
    ProviderDisplayNameBidiControl => "provider_display_name_bidi_control",
    /// A provider `displayName` has no visible character.
    ProviderDisplayNameNotVisible => "provider_display_name_not_visible",
    /// A provider `configSchema` is not an object or is over 64 KiB serialised.
    InvalidProviderConfigSchema => "invalid_provider_config_schema",
    /// More than 64 models in one provider.
    TooManyDeclaredModels => "too_many_declared_models",
    /// A model id is not a string or breaks ID-1.
    InvalidDeclaredModelId => "invalid_declared_model_id",
    /// Two models of one provider have the same id.
    DuplicateDeclaredModelId => "duplicate_declared_model_id",
    /// A model `displayName` is not a string of 1 to 256 bytes, or is blank.
    InvalidModelDisplayName => "invalid_model_display_name",
    /// A model `displayName` holds a control character.
    ModelDisplayNameControlCharacter => "model_display_name_control_character",
    /// A model `displayName` holds a bidirectional override or isolate.
    ModelDisplayNameBidiControl => "model_display_name_bidi_control",
    /// A model `displayName` has no visible character.
    ModelDisplayNameNotVisible => "model_display_name_not_visible",
    /// Model `capabilities` is present but not an object of booleans.
    InvalidModelCapabilities => "invalid_model_capabilities",
    /// `deferred.lifecycle` is not `"hook"` or `"user"`.
    InvalidLifecycle => "invalid_lifecycle",

    // Permissions and lifecycle (M-2).
    /// Declared tools without the `tools.register` permission.
    DeferredToolsRequireToolsRegisterPermission => "deferred_tools_require_tools_register_permission",
    /// Declared providers without the `providers.register` permission.
    DeferredProvidersRequireProvidersRegisterPermission => "deferred_providers_require_providers_register_permission",
    /// Hook subscriptions without the `hooks.subscribe` permission.
    HookSubscriptionsRequireHooksSubscribePermission => "hook_subscriptions_require_hooks_subscribe_permission",
    /// Lifecycle `hook` without any hook subscription.
    HookLifecycleRequiresHookSubscriptions => "hook_lifecycle_requires_hook_subscriptions",
    /// Lifecycle `user` together with declared tools or providers.
    UserLifecycleConflictsWithActiveCapabilities => "user_lifecycle_conflicts_with_active_capabilities",

    // The folder loader.
    /// The manifest file or the folder could not be read, is not a regular
    /// file / directory, or the manifest path was replaced between its type
    /// check and its open.
    ManifestIoError => "manifest_io_error",
    /// The manifest file is not valid UTF-8.
    ManifestInvalidUtf8 => "manifest_invalid_utf8",
    /// An extension folder has no `extension.json`.
    ManifestMissing => "manifest_missing",
    /// A `*.json` file lies directly in the extensions folder instead of in
    /// an extension folder.
    MisplacedManifestFile => "misplaced_manifest_file",
    /// Two manifests of one batch have the same extension id.
    DuplicateExtensionId => "duplicate_extension_id",
}

/// A refused manifest: stable code `MANIFEST_INVALID`, one
/// [`ManifestReason`], the JSON pointer of the offending value (`""` for the
/// whole document), a human message and, when it came from a file, the path.
///
/// Messages never echo more than a short, escaped prefix of the input.
///
/// Its `Display` is `MANIFEST_INVALID: refused (<reason>) in <file> at
/// <pointer>: <message>`; [`CodedError::message`] is that text after the
/// code, and the inherent [`message`](Self::message) the explanation alone.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {}", self.code(), self.render())]
pub struct ManifestError {
    reason: ManifestReason,
    pointer: String,
    message: String,
    file: Option<PathBuf>,
    extension_id: Option<String>,
}

impl ManifestError {
    pub(crate) fn new(
        reason: ManifestReason,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ManifestError {
            reason,
            pointer: pointer.into(),
            message: message.into(),
            file: None,
            extension_id: None,
        }
    }

    pub(crate) fn with_file(mut self, file: &Path) -> Self {
        self.file = Some(file.to_path_buf());
        self
    }

    pub(crate) fn with_extension_id(mut self, id: Option<&str>) -> Self {
        if self.extension_id.is_none() {
            self.extension_id = id.map(str::to_owned);
        }
        self
    }

    /// The stable error code: always `MANIFEST_INVALID`.
    pub fn code(&self) -> &'static str {
        codes::MANIFEST_INVALID
    }

    /// Why the manifest was refused.
    pub fn reason(&self) -> ManifestReason {
        self.reason
    }

    /// The reason code as a string (`self.reason().as_str()`).
    pub fn reason_code(&self) -> &'static str {
        self.reason.as_str()
    }

    /// The JSON pointer (RFC 6901) of the offending value, such as
    /// `/deferred/tools/3/name`; `""` names the whole document.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }

    /// The human explanation (not stable; match on [`reason`](Self::reason)).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The manifest file, when the manifest was loaded from one.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The extension id, when the manifest had a valid one.
    pub fn extension_id(&self) -> Option<&str> {
        self.extension_id.as_deref()
    }

    fn render(&self) -> String {
        let mut out = format!("refused ({})", self.reason);
        if let Some(file) = &self.file {
            out.push_str(&format!(" in {}", file.display()));
        }
        if !self.pointer.is_empty() {
            // The pointer holds input text (object keys): keep it short and
            // free of control characters here; `pointer()` stays exact.
            if self.pointer.len() <= 128 && !self.pointer.chars().any(char::is_control) {
                out.push_str(&format!(" at {}", self.pointer));
            } else {
                out.push_str(&format!(" at {}", quote(&self.pointer)));
            }
        }
        out.push_str(": ");
        out.push_str(&self.message);
        out
    }
}

/// A refused folder of manifests (all-or-nothing): every problem found,
/// in folder order, each a [`ManifestError`] naming its file.
///
/// Its `Display` is `MANIFEST_INVALID: <n> manifest problem(s) in <folder>;
/// nothing was loaded; ...`, each problem after it without the code.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {}", self.code(), self.render())]
pub struct ManifestBatchError {
    directory: PathBuf,
    errors: Vec<ManifestError>,
}

impl ManifestBatchError {
    pub(crate) fn new(directory: &Path, errors: Vec<ManifestError>) -> Self {
        ManifestBatchError {
            directory: directory.to_path_buf(),
            errors,
        }
    }

    /// The stable error code: always `MANIFEST_INVALID`.
    pub fn code(&self) -> &'static str {
        codes::MANIFEST_INVALID
    }

    /// The folder that was refused.
    pub fn directory(&self) -> &Path {
        &self.directory
    }

    /// Every problem, in folder order (never empty).
    pub fn errors(&self) -> &[ManifestError] {
        &self.errors
    }

    /// Every problem, by value.
    pub fn into_errors(self) -> Vec<ManifestError> {
        self.errors
    }

    fn render(&self) -> String {
        let mut out = format!(
            "{} manifest problem(s) in {}; nothing was loaded",
            self.errors.len(),
            self.directory.display()
        );
        for error in &self.errors {
            out.push_str("; ");
            out.push_str(&error.render());
        }
        out
    }
}

pub(crate) use crate::text::quote;

impl CodedError for ManifestError {
    fn code(&self) -> &'static str {
        ManifestError::code(self)
    }
    fn message(&self) -> String {
        self.render()
    }
}

impl CodedError for ManifestBatchError {
    fn code(&self) -> &'static str {
        ManifestBatchError::code(self)
    }
    fn message(&self) -> String {
        self.render()
    }
}
