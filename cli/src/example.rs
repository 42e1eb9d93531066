//! The in-process extensions behind the manifests in
//! `examples/manifests/valid/`, and [`factories`], which the `exthost`
//! binary registers.
//!
//! Each extension registers exactly the tools its manifest declares, with
//! the same descriptions and input schemas, so the declaration match (M-5 in
//! `docs/spec.md`) passes. Change both together.
//!
//! | id | manifest | class | contributes |
//! |---|---|---|---|
//! | `text-tools` | `examples/manifests/valid/tool-only` | tool-only | tools `word_count`, `reverse` |
//! | `session-log` | `examples/manifests/valid/hook-lifecycle` | hook-lifecycle | a hook on its events, a disposer |
//! | `notes` | `examples/manifests/valid/mixed` | mixed | tools `add`, `list`, a hook, a disposer |

use std::sync::{Arc, Mutex};

use exthost::host::{
    ActivationContext, BoxFuture, Extension, ExtensionError, InProcessFactories, ToolDescriptor,
};
use serde_json::{Value, json};

/// The factories of every example extension, by manifest id.
pub fn factories() -> InProcessFactories {
    InProcessFactories::new()
        .with("text-tools", || Ok(TextTools))
        .with("session-log", || Ok(SessionLog::default()))
        .with("notes", || Ok(Notes::default()))
}

fn text_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"]
    })
}

fn text_of(input: &Value) -> Result<String, ExtensionError> {
    input
        .get("text")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ExtensionError::new("expected an object with a string field \"text\""))
}

fn context_error(e: exthost::host::HostError) -> ExtensionError {
    ExtensionError::new(e.to_string())
}

/// `text-tools`: a tool-only extension; it starts at the first call of one
/// of its tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct TextTools;

impl Extension for TextTools {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            cx.register_tool(
                ToolDescriptor::new("word_count", "Count the words of a text.", text_schema()),
                |input: Value| async move {
                    let text = text_of(&input)?;
                    Ok(json!({ "words": text.split_whitespace().count() }))
                },
            )
            .map_err(context_error)?;
            cx.register_tool(
                ToolDescriptor::new("reverse", "Reverse a text.", text_schema()),
                |input: Value| async move {
                    let text = text_of(&input)?;
                    Ok(json!({ "text": text.chars().rev().collect::<String>() }))
                },
            )
            .map_err(context_error)?;
            Ok(())
        })
    }
}

/// `session-log`: a hook-lifecycle extension; the first subscribed event
/// starts it, and its hook then receives that event.
#[derive(Debug, Default)]
pub struct SessionLog {
    seen: Arc<Mutex<Vec<String>>>,
}

impl Extension for SessionLog {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        let seen = self.seen.clone();
        Box::pin(async move {
            let log = seen.clone();
            cx.on_event(move |event| {
                let log = log.clone();
                async move {
                    log.lock()
                        .map_err(|_| ExtensionError::new("the log lock is poisoned"))?
                        .push(event.name.clone());
                    Ok(())
                }
            })
            .map_err(context_error)?;
            cx.on_dispose(move || async move {
                seen.lock()
                    .map_err(|_| ExtensionError::new("the log lock is poisoned"))?
                    .clear();
                Ok(())
            })
            .map_err(context_error)?;
            Ok(())
        })
    }
}

/// `notes`: a mixed extension (a hook lifecycle and tools): the first
/// `session.start` or the first call of `notes:add` / `notes:list` starts
/// it.
#[derive(Debug, Default)]
pub struct Notes {
    notes: Arc<Mutex<Vec<String>>>,
}

impl Extension for Notes {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        let notes = self.notes.clone();
        Box::pin(async move {
            let poisoned = || ExtensionError::new("the notes lock is poisoned");
            let add = notes.clone();
            cx.register_tool(
                ToolDescriptor::new(
                    "add",
                    "Add a note; returns how many there are.",
                    text_schema(),
                ),
                move |input: Value| {
                    let add = add.clone();
                    async move {
                        let text = text_of(&input)?;
                        let mut notes = add.lock().map_err(|_| poisoned())?;
                        notes.push(text);
                        Ok(json!({ "count": notes.len() }))
                    }
                },
            )
            .map_err(context_error)?;
            let list = notes.clone();
            cx.register_tool(
                ToolDescriptor::new(
                    "list",
                    "List the notes.",
                    json!({"type": "object", "properties": {}}),
                ),
                move |_: Value| {
                    let list = list.clone();
                    async move {
                        let notes = list.lock().map_err(|_| poisoned())?;
                        Ok(json!({ "notes": *notes }))
                    }
                },
            )
            .map_err(context_error)?;
            let session = notes.clone();
            cx.on_event(move |event| {
                let session = session.clone();
                async move {
                    if event.name == "session.start" {
                        session
                            .lock()
                            .map_err(|_| poisoned())?
                            .push("session started".to_owned());
                    }
                    Ok(())
                }
            })
            .map_err(context_error)?;
            cx.on_dispose(move || async move {
                notes.lock().map_err(|_| poisoned())?.clear();
                Ok(())
            })
            .map_err(context_error)?;
            Ok(())
        })
    }
}
