//! H-9: detached, immutable snapshots of the live tools.
//!
//! Architecture invariant: depends only on `code.rs` within `host/`; a
//! snapshot holds no lock and reaches no shell state.

use std::sync::Arc;

use rpds::RedBlackTreeMapSync;
use serde_json::Value;

use super::code::{Tool, ToolDescriptor};
use exthost_core::{Binding, Owner, RegistryEntry, ToolRef, ToolRegistry};

/// A registered tool's descriptor and handler.
pub(crate) struct ToolHandler {
    pub(crate) descriptor: ToolDescriptor,
    pub(crate) tool: Arc<dyn Tool>,
}

/// A detached, immutable view of the live tools (H-9). Later activations
/// never change a snapshot already taken. Taking one costs O(1): it shares
/// structure with the live registry.
#[derive(Clone)]
pub struct ToolSnapshot {
    pub(crate) registry: ToolRegistry,
    pub(crate) handlers: RedBlackTreeMapSync<ToolRef, Arc<ToolHandler>>,
    pub(crate) declared: RedBlackTreeMapSync<String, Arc<ToolDescriptor>>,
}

impl std::fmt::Debug for ToolSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// One tool as a snapshot shows it.
#[derive(Debug, Clone, Copy)]
pub struct ToolInfo<'a> {
    /// Runtime name: an ID-1 segment, or `<extension>:<tool>`.
    pub name: &'a str,
    /// Model-facing name, `[A-Za-z0-9_-]{1,64}` (M-6).
    pub api_name: &'a str,
    /// Who contributed it.
    pub owner: &'a Owner,
    /// Its description.
    pub description: &'a str,
    /// Its input schema.
    pub input_schema: &'a Value,
    /// True for a dormant descriptor: calling it first activates its owner.
    pub dormant: bool,
}

static EMPTY_SCHEMA: Value = Value::Null;

impl ToolSnapshot {
    /// Number of tools.
    pub fn len(&self) -> usize {
        self.registry.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.registry.is_empty()
    }

    /// Runtime names in publication order: base tools, then each extension
    /// in activation order, each in registration order (H-9).
    pub fn names(&self) -> Vec<String> {
        self.registry.names()
    }

    /// Every tool in publication order.
    pub fn iter(&self) -> impl Iterator<Item = ToolInfo<'_>> + '_ {
        self.registry.iter().map(|e| self.info(e))
    }

    /// The tool with this runtime name.
    pub fn get(&self, name: &str) -> Option<ToolInfo<'_>> {
        self.registry.get(name).map(|e| self.info(e))
    }

    /// The tool with this model-facing API name (M-6).
    pub fn get_by_api_name(&self, api_name: &str) -> Option<ToolInfo<'_>> {
        self.registry
            .get_by_api_name(api_name)
            .map(|e| self.info(e))
    }

    fn info<'a>(&'a self, e: &'a RegistryEntry) -> ToolInfo<'a> {
        let input_schema = match e.binding {
            Binding::Live(r) => self.handlers.get(&r).map(|h| &h.descriptor.input_schema),
            Binding::Dormant => self.declared.get(&e.name).map(|d| &d.input_schema),
        };
        ToolInfo {
            name: &e.name,
            api_name: &e.api_name,
            owner: &e.owner,
            description: &e.description,
            input_schema: input_schema.unwrap_or(&EMPTY_SCHEMA),
            dormant: matches!(e.binding, Binding::Dormant),
        }
    }
}
