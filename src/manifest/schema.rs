//! The validated manifest types.
//!
//! Every value of these types came out of [`parse_manifest`](super::parse_manifest)
//! (or [`Manifest::from_value`]), so it obeys every rule of M-1 and M-2;
//! fields are private and read through accessors so that cannot be undone.
//! `Serialize` writes the manifest back in its JSON form (without retired
//! keys); `Deserialize` runs the full validation of
//! [`Manifest::from_value`] (everything but the size cap and the
//! duplicate-key check, which need the text).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::digest::SchemaDigest;
use super::expose::ExposeRules;

/// A validated extension manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub(crate) id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    pub(crate) runtime: Runtime,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) permissions: Vec<Permission>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) hooks: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) dependencies: Vec<String>,
    #[serde(skip_serializing_if = "Deferred::is_empty")]
    pub(crate) deferred: Deferred,
    #[serde(skip_serializing_if = "ManifestDeadlines::is_empty")]
    pub(crate) deadlines: ManifestDeadlines,
    #[serde(skip_serializing_if = "ExposeRules::is_empty")]
    pub(crate) expose: ExposeRules,
}

/// The `deadlines` block: the extension's own activation and cleanup
/// deadlines, in milliseconds, overriding the host's (H-12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ManifestDeadlines {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) activation_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cleanup_ms: Option<u64>,
}

impl ManifestDeadlines {
    fn is_empty(&self) -> bool {
        self.activation_ms.is_none() && self.cleanup_ms.is_none()
    }
}

impl Manifest {
    /// The extension id (ID-1).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The free-form version string, if given.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// The human name, if given.
    pub fn display_name(&self) -> Option<&str> {
        self.display_name.as_deref()
    }

    /// The human description, if given.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// How the extension runs.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The granted permissions in manifest order, retired ones left out.
    pub fn permissions(&self) -> &[Permission] {
        &self.permissions
    }

    /// Whether `permission` is granted.
    pub fn has_permission(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
    }

    /// The subscribed hook event names, in manifest order.
    pub fn hooks(&self) -> &[String] {
        &self.hooks
    }

    /// The ids of the extensions this one depends on, in manifest order.
    pub fn dependencies(&self) -> &[String] {
        &self.dependencies
    }

    /// The extension's own activation deadline (`deadlines.activationMs`),
    /// overriding the host's for its factory and `activate` together.
    pub fn activation_deadline(&self) -> Option<std::time::Duration> {
        self.deadlines
            .activation_ms
            .map(std::time::Duration::from_millis)
    }

    /// The extension's own cleanup deadline (`deadlines.cleanupMs`),
    /// overriding the host's for each of its cleanup steps and for
    /// shutdown's wait for its tool calls.
    pub fn cleanup_deadline(&self) -> Option<std::time::Duration> {
        self.deadlines
            .cleanup_ms
            .map(std::time::Duration::from_millis)
    }

    /// Which of its tools a gateway shows (`expose.allow`, `expose.deny`).
    /// Filtering never changes what is declared or checked (M-5): it is
    /// applied after the check, to what a client sees.
    pub fn expose(&self) -> &ExposeRules {
        &self.expose
    }

    /// The declared tools (`deferred.tools`), in manifest order.
    pub fn declared_tools(&self) -> &[DeclaredTool] {
        &self.deferred.tools
    }

    /// The declared providers (`deferred.providers`), in manifest order.
    pub fn declared_providers(&self) -> &[DeclaredProvider] {
        &self.deferred.providers
    }

    /// The lifecycle hint (`deferred.lifecycle`), if given.
    pub fn lifecycle(&self) -> Option<Lifecycle> {
        self.deferred.lifecycle
    }

    /// Whether the manifest declares any tool or provider. Exactly these
    /// manifests are subject to the declaration match of M-5 at activation.
    pub fn has_declarations(&self) -> bool {
        !self.deferred.tools.is_empty() || !self.deferred.providers.is_empty()
    }
}

impl<'de> Deserialize<'de> for Manifest {
    /// Deserialises through [`Manifest::from_value`], so every rule applies
    /// (notices are logged and dropped; the error text carries the reason
    /// code).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Manifest::from_value(value)
            .map(|(manifest, _notices)| manifest)
            .map_err(serde::de::Error::custom)
    }
}

/// The `deferred` block, normalised (retired keys dropped).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Deferred {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) tools: Vec<DeclaredTool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) providers: Vec<DeclaredProvider>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) lifecycle: Option<Lifecycle>,
    /// `prompts`, `resources` and `resourceTemplates`, when pinned.
    #[serde(flatten)]
    pub(crate) listings: super::listings::DeclaredListings,
    /// `completions`: the server answers `completion/complete` (pinned by
    /// `exthost lock`; `false` when absent).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) completions: bool,
}

impl Deferred {
    fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.providers.is_empty()
            && self.lifecycle.is_none()
            && self.listings.is_empty()
            && !self.completions
    }
}

/// How an extension runs: `{"kind":"in-process"}` or
/// `{"kind":"process","command":"node","args":["server.js"],"env":["PATH"]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Runtime {
    /// Code linked into the host, found by extension id.
    InProcess,
    /// A child program speaking the Model Context Protocol over stdio (P-1).
    Process(ProcessRuntime),
}

/// The child program of a `process` runtime.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProcessRuntime {
    pub(crate) command: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) env: Vec<String>,
    #[serde(rename = "startupTimeoutMs", skip_serializing_if = "Option::is_none")]
    pub(crate) startup_timeout_ms: Option<u64>,
    #[serde(rename = "callTimeoutMs", skip_serializing_if = "Option::is_none")]
    pub(crate) call_timeout_ms: Option<u64>,
    #[serde(rename = "shutdownTimeoutMs", skip_serializing_if = "Option::is_none")]
    pub(crate) shutdown_timeout_ms: Option<u64>,
    #[serde(rename = "idleTimeoutMs", skip_serializing_if = "Option::is_none")]
    pub(crate) idle_timeout_ms: Option<u64>,
}

impl ProcessRuntime {
    /// The program to run (resolved by the process runtime, relative to the
    /// extension's folder when it contains a `/`).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Its arguments, in order.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    /// The names of the host environment variables passed through to the
    /// otherwise cleared environment of the child, in manifest order.
    pub fn env(&self) -> &[String] {
        &self.env
    }

    /// `startupTimeoutMs`: the deadline, in milliseconds, for spawning the
    /// child, the handshake and the tool listing, when the manifest sets one.
    pub fn startup_timeout_ms(&self) -> Option<u64> {
        self.startup_timeout_ms
    }

    /// `callTimeoutMs`: the deadline, in milliseconds, of each `tools/call`,
    /// when the manifest sets one.
    pub fn call_timeout_ms(&self) -> Option<u64> {
        self.call_timeout_ms
    }

    /// `shutdownTimeoutMs`: how long, in milliseconds, disposal waits after
    /// closing stdin and again after SIGTERM, when the manifest sets it.
    pub fn shutdown_timeout_ms(&self) -> Option<u64> {
        self.shutdown_timeout_ms
    }

    /// `idleTimeoutMs`: how long, in milliseconds, the child may go without
    /// a call before an embedding program that stops idle backends (`exthost
    /// serve`) stops it, when the manifest sets it.
    pub fn idle_timeout_ms(&self) -> Option<u64> {
        self.idle_timeout_ms
    }
}

/// A permission of the closed vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Permission {
    /// `tools.register`: may register tools; required to declare tools.
    #[serde(rename = "tools.register")]
    ToolsRegister,
    /// `providers.register`: may contribute model providers; required to
    /// declare providers.
    #[serde(rename = "providers.register")]
    ProvidersRegister,
    /// `hooks.subscribe`: may subscribe to host events; required to list
    /// `hooks`.
    #[serde(rename = "hooks.subscribe")]
    HooksSubscribe,
}

impl Permission {
    /// Every permission of the vocabulary.
    pub const ALL: &'static [Permission] = &[
        Permission::ToolsRegister,
        Permission::ProvidersRegister,
        Permission::HooksSubscribe,
    ];

    /// The retired permission, accepted and ignored with a notice (M-7).
    pub const RETIRED_CONTEXT_PROVIDERS_REGISTER: &'static str = "context_providers.register";

    /// The name used in manifests.
    pub const fn as_str(self) -> &'static str {
        match self {
            Permission::ToolsRegister => "tools.register",
            Permission::ProvidersRegister => "providers.register",
            Permission::HooksSubscribe => "hooks.subscribe",
        }
    }

    /// The permission with this manifest name, if it is in the vocabulary.
    pub fn from_name(name: &str) -> Option<Permission> {
        Permission::ALL
            .iter()
            .copied()
            .find(|permission| permission.as_str() == name)
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The lifecycle hint of the `deferred` block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    /// `hook`: start at the first subscribed hook event.
    Hook,
    /// `user`: start on an explicit user action (a UI sidecar).
    User,
}

impl Lifecycle {
    /// The name used in manifests.
    pub const fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Hook => "hook",
            Lifecycle::User => "user",
        }
    }
}

/// A declared tool (`deferred.tools[i]`): the whole tool as the server
/// lists it. `name`, `description` and `inputSchema` are required; the
/// other fields MCP defines for a tool (`title`, `outputSchema`,
/// `annotations`, `icons`, `_meta`) are pinned when the server gives them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeclaredTool {
    pub(crate) name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    pub(crate) input_schema: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output_schema: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) annotations: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) icons: Option<Value>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<Value>,
    #[serde(skip)]
    pub(crate) schema_digest: SchemaDigest,
}

impl DeclaredTool {
    /// The tool's own name (ID-1), without the extension prefix.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The description, 1 to 1,024 bytes, not blank.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The input schema, a JSON object of at most 64 KiB serialised.
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The digest of [`input_schema`](Self::input_schema).
    pub fn schema_digest(&self) -> SchemaDigest {
        self.schema_digest
    }

    /// The human title (`title`), if pinned.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The output schema (`outputSchema`, an object), if pinned.
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_schema.as_ref()
    }

    /// The behaviour hints (`annotations`, an object: `title`,
    /// `readOnlyHint`, `destructiveHint`, `idempotentHint`,
    /// `openWorldHint`), if pinned.
    pub fn annotations(&self) -> Option<&Value> {
        self.annotations.as_ref()
    }

    /// The icons (`icons`, an array), if pinned.
    pub fn icons(&self) -> Option<&Value> {
        self.icons.as_ref()
    }

    /// The tool's metadata (`_meta`, an object), if pinned.
    pub fn meta(&self) -> Option<&Value> {
        self.meta.as_ref()
    }

    /// The tool as MCP lists it (`name`, `title`, `description`,
    /// `inputSchema`, `outputSchema`, `annotations`, `icons`, `_meta`;
    /// absent fields left out).
    pub fn to_mcp_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("name".to_owned(), Value::String(self.name.clone()));
        if let Some(title) = &self.title {
            map.insert("title".to_owned(), Value::String(title.clone()));
        }
        map.insert(
            "description".to_owned(),
            Value::String(self.description.clone()),
        );
        map.insert("inputSchema".to_owned(), self.input_schema.clone());
        for (key, value) in [
            ("outputSchema", &self.output_schema),
            ("annotations", &self.annotations),
            ("icons", &self.icons),
            ("_meta", &self.meta),
        ] {
            if let Some(value) = value {
                map.insert(key.to_owned(), value.clone());
            }
        }
        Value::Object(map)
    }
}

/// A declared model provider (`deferred.providers[i]`). Providers are
/// declarative only: the host has no provider registration call, so there is
/// nothing to match them against at activation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeclaredProvider {
    pub(crate) id: String,
    pub(crate) display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) config_schema: Option<Value>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) models: Vec<DeclaredModel>,
}

impl DeclaredProvider {
    /// The provider id (ID-1).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The human name.
    pub fn display_name(&self) -> &str {
        &self.display_name
    }

    /// The configuration schema (a JSON object), if given.
    pub fn config_schema(&self) -> Option<&Value> {
        self.config_schema.as_ref()
    }

    /// The declared models, in manifest order.
    pub fn models(&self) -> &[DeclaredModel] {
        &self.models
    }
}

/// A declared model of a provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeclaredModel {
    pub(crate) id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) display_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) capabilities: Option<BTreeMap<String, bool>>,
}

impl DeclaredModel {
    /// The model id (ID-1), unique within its provider.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The human name, if given.
    pub fn display_name(&self) -> Option<&str> {
        self.display_name.as_deref()
    }

    /// The capability flags, if given (`{"vision": true, ...}`).
    pub fn capabilities(&self) -> Option<&BTreeMap<String, bool>> {
        self.capabilities.as_ref()
    }

    /// Whether the capability `name` is present and `true`.
    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities
            .as_ref()
            .is_some_and(|capabilities| capabilities.get(name) == Some(&true))
    }
}

/// A retired manifest key (M-7): accepted, ignored, reported by a [`Notice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetiredKey {
    /// The `deferred.context_providers` block (any JSON).
    DeferredContextProviders,
    /// The `context_providers.register` permission.
    ContextProvidersRegisterPermission,
}

/// The one-line notice that a retired key was accepted and ignored (M-7).
/// Also emitted through `tracing::info!`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub(crate) key: RetiredKey,
    pub(crate) pointer: String,
}

impl Notice {
    /// Which retired key was found.
    pub fn key(&self) -> RetiredKey {
        self.key
    }

    /// Where it was found (its first occurrence), as a JSON pointer.
    pub fn pointer(&self) -> &str {
        &self.pointer
    }
}

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.key {
            RetiredKey::DeferredContextProviders => write!(
                f,
                "retired manifest key at {} ignored: context providers are no longer supported",
                self.pointer
            ),
            RetiredKey::ContextProvidersRegisterPermission => write!(
                f,
                "retired permission \"context_providers.register\" at {} ignored: context providers are no longer supported",
                self.pointer
            ),
        }
    }
}
