//! What extension code is, as data the whole host shares: [`BoxFuture`],
//! [`ExtensionError`], [`Event`], [`Tool`] and its [`ToolDescriptor`], and
//! the handler types the shell keeps for hooks and disposers.
//!
//! Architecture invariant: this is the bottom of `host/`. It depends on no
//! other module of `host/` but `output` (what a tool returns, itself
//! dependent on nothing), and outside it only on [`exthost_core`] and the
//! manifest module's schema digest, so the context, the errors, the
//! extension definitions and the shell can all use it without a circle.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;

use exthost_core::ToolSpec;

use super::output::ToolOutput;

/// A boxed, sendable future: what extension code returns.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// An error reported by extension code (factory, `activate`, hook,
/// disposer, `dispose`, tool).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ExtensionError {
    message: String,
    code: Option<&'static str>,
}

impl ExtensionError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: None,
        }
    }
    /// An error with a stable code of [`crate::error::codes`] (for example
    /// `EXTENSION_PROCESS_EXITED`), carried into the activation failure's
    /// cause (`HostError::cause_code`) or the tool failure.
    pub fn coded(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: Some(code),
        }
    }
    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The stable code, when the error has one.
    pub fn code(&self) -> Option<&'static str> {
        self.code
    }
}

impl fmt::Display for ExtensionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExtensionError {}

impl From<&str> for ExtensionError {
    fn from(message: &str) -> Self {
        Self::new(message)
    }
}

impl From<String> for ExtensionError {
    fn from(message: String) -> Self {
        Self::new(message)
    }
}

/// A callable tool.
///
/// Any closure `Fn(Value) -> impl Future<Output = Result<T,
/// ExtensionError>>` is a tool when `T` converts into a [`ToolOutput`]: a
/// closure that returns a JSON [`Value`] answers [`ToolOutput::json`], one
/// that returns a [`ToolOutput`] answers it as it is. A closure whose only
/// answer is an error names its success type (`Err::<Value, _>(...)`).
pub trait Tool: Send + Sync + 'static {
    /// Calls the tool with its JSON input.
    fn call(&self, input: Value) -> BoxFuture<'static, Result<ToolOutput, ExtensionError>>;
}

impl<F, Fut, T> Tool for F
where
    F: Fn(Value) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ExtensionError>> + Send + 'static,
    T: Into<ToolOutput>,
{
    fn call(&self, input: Value) -> BoxFuture<'static, Result<ToolOutput, ExtensionError>> {
        let call = self(input);
        Box::pin(async move { call.await.map(Into::into) })
    }
}

/// What a tool is: name, description and JSON input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDescriptor {
    /// The name (ID-1; manifest extensions' tools are published as
    /// `<extension>:<name>`).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its input.
    pub input_schema: Value,
}

impl ToolDescriptor {
    /// A descriptor from its parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
        }
    }

    /// The core's view: name, description and the schema's digest (M-5).
    pub fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            self.name.clone(),
            self.description.clone(),
            crate::manifest::schema_digest(&self.input_schema).to_hex(),
        )
    }
}

pub(crate) type HookFn =
    Arc<dyn Fn(Arc<Event>) -> BoxFuture<'static, Result<(), ExtensionError>> + Send + Sync>;
pub(crate) type DisposerFn =
    Box<dyn FnOnce() -> BoxFuture<'static, Result<(), ExtensionError>> + Send>;

/// An event delivered to hooks: a name and a JSON payload. Every hook of one
/// `emit` sees the same immutable snapshot (H-10).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The event's name.
    pub name: String,
    /// Its payload.
    pub payload: Value,
}

impl Event {
    /// An event from its parts.
    pub fn new(name: impl Into<String>, payload: Value) -> Self {
        Self {
            name: name.into(),
            payload,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_descriptor_spec_carries_the_canonical_schema_digest() {
        let a = ToolDescriptor::new("t", "d", serde_json::from_str(r#"{"b":1, "a":2}"#).unwrap());
        let b = ToolDescriptor::new("t", "d", json!({"a": 2, "b": 1}));
        assert_eq!(a.spec(), b.spec());
        // Known answer: sha256 of the bytes {"a":1}.
        assert_eq!(
            ToolDescriptor::new("t", "d", json!({"a": 1}))
                .spec()
                .schema_digest,
            "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
        );
    }
}
