//! Classification and triggers (M-3), as pure functions of a manifest.
//!
//! A manifest has up to three *parts*, each a usable declaration:
//!
//! | part     | present when                            | its trigger                   |
//! |----------|-----------------------------------------|-------------------------------|
//! | hook     | `deferred.lifecycle` is `"hook"`        | a subscribed hook event       |
//! | provider | `deferred.providers` is not empty       | selecting one of its providers |
//! | tool     | `deferred.tools` is not empty           | calling one of its tools exactly |
//!
//! Lifecycle `"user"` (which M-2 forbids with tools or providers) makes a
//! UI sidecar, started by a user action. No part and no `"user"` lifecycle
//! (so also an empty or absent `deferred` block, or one holding only the
//! retired `context_providers` key) is legacy-eager. Exactly one part gives
//! that part's class; two or three parts give `Mixed`, whose triggers are
//! those of its parts, earliest first: hook, then provider, then tool.
//!
//! Hook subscriptions alone (without lifecycle `"hook"`) never start an
//! extension: they say which events it receives once active. Listing or
//! searching the tool registry is not a cause either; only an exact call of a
//! declared tool is.

use super::dormant::{runtime_tool_name, split_runtime_tool_name};
use super::schema::{Lifecycle, Manifest};

/// The class of a manifest (M-3); see the module documentation for the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Classification {
    /// No usable declaration: activated eagerly, as before manifests had
    /// `deferred` blocks.
    LegacyEager,
    /// Declared tools only.
    ToolOnly,
    /// Declared providers only.
    Provider,
    /// Lifecycle `"hook"` only.
    HookLifecycle,
    /// Lifecycle `"user"`.
    UiSidecar,
    /// Two or three of: lifecycle `"hook"`, declared providers, declared tools.
    Mixed,
}

impl Classification {
    /// The class name used in docs and diagnostics, such as `tool-only`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Classification::LegacyEager => "legacy-eager",
            Classification::ToolOnly => "tool-only",
            Classification::Provider => "provider",
            Classification::HookLifecycle => "hook-lifecycle",
            Classification::UiSidecar => "ui-sidecar",
            Classification::Mixed => "mixed",
        }
    }
}

/// The kinds of trigger, ordered earliest first (`Eager < HookEvent <
/// ProviderSelection < ToolCall < UserAction`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TriggerKind {
    /// At host start.
    Eager,
    /// At the first subscribed hook event.
    HookEvent,
    /// When one of the declared providers is selected.
    ProviderSelection,
    /// When one of the declared tools is called by its exact runtime name.
    ToolCall,
    /// On an explicit user action aimed at the extension.
    UserAction,
}

/// What starts an extension, with the names that do it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Trigger {
    /// At host start.
    Eager,
    /// At the first of these hook events (the subscribed events, in manifest
    /// order).
    HookEvent {
        /// The subscribed event names.
        events: Vec<String>,
    },
    /// When one of these declared providers is selected.
    ProviderSelection {
        /// The declared provider ids, in manifest order.
        providers: Vec<String>,
    },
    /// When one of these tools is called.
    ToolCall {
        /// The runtime names (`<extension>:<tool>`) of the declared tools.
        tools: Vec<String>,
    },
    /// On an explicit user action aimed at the extension.
    UserAction,
}

impl Trigger {
    /// The kind of this trigger.
    pub fn kind(&self) -> TriggerKind {
        match self {
            Trigger::Eager => TriggerKind::Eager,
            Trigger::HookEvent { .. } => TriggerKind::HookEvent,
            Trigger::ProviderSelection { .. } => TriggerKind::ProviderSelection,
            Trigger::ToolCall { .. } => TriggerKind::ToolCall,
            Trigger::UserAction => TriggerKind::UserAction,
        }
    }
}

/// Something that happened in the host which may start an extension; see
/// [`is_triggered_by`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActivationCause<'a> {
    /// The host is starting.
    HostStart,
    /// A host event was emitted.
    HookEvent {
        /// The event name.
        event: &'a str,
    },
    /// A provider was selected.
    ProviderSelection {
        /// The extension that declares it.
        extension_id: &'a str,
        /// The declared provider id.
        provider_id: &'a str,
    },
    /// A tool was called by its runtime name, `<extension>:<tool>`.
    ToolCall {
        /// The exact runtime name.
        runtime_name: &'a str,
    },
    /// The user acted on an extension (for instance opened its panel).
    UserAction {
        /// The extension acted on.
        extension_id: &'a str,
    },
}

#[derive(Clone, Copy)]
struct Parts {
    hook: bool,
    provider: bool,
    tool: bool,
    user: bool,
}

fn parts(manifest: &Manifest) -> Parts {
    let lifecycle = manifest.lifecycle();
    Parts {
        hook: lifecycle == Some(Lifecycle::Hook),
        provider: !manifest.declared_providers().is_empty(),
        tool: !manifest.declared_tools().is_empty(),
        user: lifecycle == Some(Lifecycle::User),
    }
}

/// The class of `manifest` (M-3).
pub fn classify(manifest: &Manifest) -> Classification {
    let parts = parts(manifest);
    if parts.user {
        return Classification::UiSidecar;
    }
    match (parts.hook, parts.provider, parts.tool) {
        (false, false, false) => Classification::LegacyEager,
        (true, false, false) => Classification::HookLifecycle,
        (false, true, false) => Classification::Provider,
        (false, false, true) => Classification::ToolOnly,
        _ => Classification::Mixed,
    }
}

/// Every trigger of `manifest`, earliest first (never empty).
pub fn triggers(manifest: &Manifest) -> Vec<Trigger> {
    let parts = parts(manifest);
    if parts.user {
        return vec![Trigger::UserAction];
    }
    let mut out = Vec::new();
    if parts.hook {
        out.push(Trigger::HookEvent {
            events: manifest.hooks().to_vec(),
        });
    }
    if parts.provider {
        out.push(Trigger::ProviderSelection {
            providers: manifest
                .declared_providers()
                .iter()
                .map(|provider| provider.id().to_owned())
                .collect(),
        });
    }
    if parts.tool {
        out.push(Trigger::ToolCall {
            tools: manifest
                .declared_tools()
                .iter()
                .filter_map(|tool| runtime_tool_name(manifest.id(), tool.name()))
                .collect(),
        });
    }
    if out.is_empty() {
        out.push(Trigger::Eager);
    }
    out
}

/// The earliest trigger of `manifest`: eager; the first subscribed hook
/// event; provider selection; exact tool call; user action. A mixed
/// manifest uses the earliest of its parts.
pub fn earliest_trigger(manifest: &Manifest) -> Trigger {
    triggers(manifest)
        .into_iter()
        .next()
        .unwrap_or(Trigger::Eager)
}

/// Whether `cause` starts `manifest`'s extension: true exactly when one of
/// its [`triggers`] matches (event names, ids and runtime names compared
/// byte for byte).
pub fn is_triggered_by(manifest: &Manifest, cause: &ActivationCause<'_>) -> bool {
    let parts = parts(manifest);
    match *cause {
        ActivationCause::HostStart => classify(manifest) == Classification::LegacyEager,
        ActivationCause::HookEvent { event } => {
            parts.hook && manifest.hooks().iter().any(|hook| hook == event)
        }
        ActivationCause::ProviderSelection {
            extension_id,
            provider_id,
        } => {
            parts.provider
                && extension_id == manifest.id()
                && manifest
                    .declared_providers()
                    .iter()
                    .any(|p| p.id() == provider_id)
        }
        ActivationCause::ToolCall { runtime_name } => {
            parts.tool
                && split_runtime_tool_name(runtime_name).is_some_and(|(extension, tool)| {
                    extension == manifest.id()
                        && manifest.declared_tools().iter().any(|t| t.name() == tool)
                })
        }
        ActivationCause::UserAction { extension_id } => parts.user && extension_id == manifest.id(),
    }
}

impl Manifest {
    /// The class of this manifest; see [`classify`].
    pub fn classification(&self) -> Classification {
        classify(self)
    }

    /// Every trigger, earliest first; see [`triggers`].
    pub fn triggers(&self) -> Vec<Trigger> {
        triggers(self)
    }

    /// The earliest trigger; see [`earliest_trigger`].
    pub fn earliest_trigger(&self) -> Trigger {
        earliest_trigger(self)
    }

    /// Whether `cause` starts this extension; see [`is_triggered_by`].
    pub fn is_triggered_by(&self, cause: &ActivationCause<'_>) -> bool {
        is_triggered_by(self, cause)
    }
}
