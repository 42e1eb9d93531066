//! What `tools/list` shows: every declared and live tool of the host under
//! its model-facing API name (M-6), whole (description, input schema,
//! title, annotations, output schema, ...), unless it is hidden, read from
//! one snapshot, so listing never starts anything (M-3, P-6).

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use exthost::host::{ToolInfo, ToolSnapshot};
use rmcp::model::{JsonObject, Tool};
use serde_json::Value;

use super::shape::Shape;

/// The MCP tool for one host tool: the whole tool ([`Shape::whole_tool`])
/// under its API name (a tool whose input schema is not an object gets the
/// empty object schema, which MCP requires at least).
pub(crate) fn mcp_tool(info: &ToolInfo<'_>, shape: &Shape) -> Tool {
    let whole = shape.whole_tool(info);
    serde_json::from_value(whole).unwrap_or_else(|_| {
        let schema = match info.input_schema {
            Value::Object(map) => map.clone(),
            _ => {
                let mut map = JsonObject::new();
                map.insert("type".to_owned(), Value::String("object".to_owned()));
                map
            }
        };
        Tool::new(
            info.api_name.to_owned(),
            info.description.to_owned(),
            Arc::new(schema),
        )
    })
}

/// Every shown tool of the snapshot, in publication order (H-9).
pub(crate) fn mcp_tools(snapshot: &ToolSnapshot, shape: &Shape) -> Vec<Tool> {
    snapshot
        .iter()
        .filter(|info| shape.shows(info))
        .map(|info| mcp_tool(&info, shape))
        .collect()
}

/// A fingerprint of what a client sees in `tools/list`: the shown tools,
/// whole, in order. Dormant descriptors replaced by the identical live
/// tools (M-5) keep it; anything a client would see change changes it.
pub(crate) fn fingerprint(snapshot: &ToolSnapshot, shape: &Shape) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for info in snapshot.iter().filter(|info| shape.shows(info)) {
        shape.whole_tool(&info).to_string().hash(&mut hasher);
    }
    hasher.finish()
}

/// The extension that owns a tool, if any (base tools have none).
pub(crate) fn owner_of(info: &ToolInfo<'_>) -> Option<String> {
    info.owner.extension_id().map(str::to_owned)
}

/// The tool a client named: its API name, or its runtime name (shown or
/// not: the caller refuses a hidden one with its own error).
pub(crate) fn find<'a>(snapshot: &'a ToolSnapshot, name: &str) -> Option<ToolInfo<'a>> {
    snapshot
        .get_by_api_name(name)
        .or_else(|| snapshot.get(name))
}

/// Up to five shown API names close to `name`: those sharing a word with
/// it, then those at the smallest edit distance.
pub(crate) fn close_names(snapshot: &ToolSnapshot, shape: &Shape, name: &str) -> Vec<String> {
    let wanted = name.to_ascii_lowercase();
    let mut scored: Vec<(usize, String)> = snapshot
        .iter()
        .filter(|info| shape.shows(info))
        .map(|info| {
            let candidate = info.api_name.to_ascii_lowercase();
            let shares_word = wanted
                .split(['_', '-', ':'])
                .filter(|w| w.len() >= 3)
                .any(|w| candidate.contains(w));
            let distance = edit_distance(&wanted, &candidate);
            let score = if shares_word { distance / 2 } else { distance };
            (score, info.api_name.to_owned())
        })
        .collect();
    scored.sort();
    let limit = wanted.len().max(4);
    scored
        .into_iter()
        .filter(|(score, _)| *score <= limit)
        .take(5)
        .map(|(_, name)| name)
        .collect()
}

/// Levenshtein distance over bytes (names are ASCII, M-6).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn edit_distance_counts_single_byte_edits() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("echo", "echo"), 0);
        assert_eq!(edit_distance("echo", "ecoh"), 2);
        assert_eq!(edit_distance("notes_add", "notes_ad"), 1);
    }
}
