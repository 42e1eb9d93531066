//! `--expose catalog`: three meta-tools instead of every schema, so a client
//! with hundreds of tools pays for three definitions, not hundreds:
//! `search_tools` (by words in names and descriptions), `describe_tool`
//! (one tool, whole) and `call_tool` (by name, through the same path as a
//! direct call).

use std::sync::Arc;

use exthost::CancellationToken;
use exthost::core::Status;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ProgressToken, Tool};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Value, json};

use super::answer::refusal;
use super::gateway::Gateway;
use super::listing::{close_names, find, owner_of};

/// The most results `search_tools` returns.
const MAX_RESULTS: usize = 50;
/// How many results it returns when the client does not say.
const DEFAULT_RESULTS: usize = 10;
/// The longest description a search result shows, in bytes.
const SUMMARY_BYTES: usize = 200;

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

/// The three meta-tools.
pub(crate) fn meta_tools() -> Vec<Tool> {
    vec![
        Tool::new(
            "search_tools",
            "Search the available tools by words in their names and descriptions. Returns each \
             match's name and a short description; use describe_tool for its input schema.",
            schema(json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Words to look for; empty lists every tool."},
                    "limit": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "At most this many results (default 10)."}
                },
                "required": ["query"]
            })),
        ),
        Tool::new(
            "describe_tool",
            "Show one tool's full description and input schema.",
            schema(json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The tool's name, as search_tools gives it."}},
                "required": ["name"]
            })),
        ),
        Tool::new(
            "call_tool",
            "Call a tool by name with its arguments; its server starts on first use.",
            schema(json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The tool's name, as search_tools gives it."},
                    "arguments": {"type": "object", "description": "The tool's input, matching its schema."}
                },
                "required": ["name"]
            })),
        ),
    ]
}

fn summary(text: &str) -> String {
    let first = text.lines().next().unwrap_or_default();
    if first.len() <= SUMMARY_BYTES {
        return first.to_owned();
    }
    let mut cut = SUMMARY_BYTES;
    while !first.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &first[..cut])
}

/// Scores `text` against the query's words: a word in the name counts
/// twice, in the description once.
fn score(words: &[String], name: &str, description: &str) -> usize {
    let (name, description) = (name.to_lowercase(), description.to_lowercase());
    words
        .iter()
        .map(|w| {
            2 * usize::from(name.contains(w.as_str()))
                + usize::from(description.contains(w.as_str()))
        })
        .sum()
}

fn search(gateway: &Gateway, arguments: &JsonObject) -> CallToolResult {
    let Some(query) = arguments.get("query").and_then(Value::as_str) else {
        return refusal(
            "INVALID_ARGUMENTS",
            "search_tools needs a string \"query\"".to_owned(),
            json!({"code": "INVALID_ARGUMENTS"}),
        );
    };
    let limit = arguments
        .get("limit")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_RESULTS, |n| (n as usize).clamp(1, MAX_RESULTS));
    let words: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let snapshot = gateway.host.tools();
    let mut found: Vec<(usize, usize, Value)> = snapshot
        .iter()
        .filter(|info| gateway.shape.shows(info))
        .enumerate()
        .filter_map(|(order, info)| {
            let s = score(&words, info.api_name, info.description);
            (words.is_empty() || s > 0).then(|| {
                let extension = owner_of(&info);
                // Active with its process running: after an idle stop the
                // host still reports it active, but nothing runs.
                let started = extension.as_deref().is_none_or(|id| {
                    gateway.host.status(id) == Some(Status::Active)
                        && gateway.shape.monitor(id).is_none_or(|m| m.running())
                });
                (
                    s,
                    order,
                    json!({
                        "name": info.api_name,
                        "description": summary(info.description),
                        "extension": extension,
                        "started": started,
                    }),
                )
            })
        })
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let total = found.len();
    let tools: Vec<Value> = found.into_iter().take(limit).map(|(_, _, v)| v).collect();
    let text = if tools.is_empty() {
        format!("no tool matches {query:?}")
    } else {
        tools
            .iter()
            .map(|t| {
                format!(
                    "{}: {}",
                    t["name"].as_str().unwrap_or_default(),
                    t["description"].as_str().unwrap_or_default()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({"tools": tools, "matches": total}));
    result
}

fn describe(gateway: &Gateway, arguments: &JsonObject) -> CallToolResult {
    let Some(name) = arguments.get("name").and_then(Value::as_str) else {
        return refusal(
            "INVALID_ARGUMENTS",
            "describe_tool needs a string \"name\"".to_owned(),
            json!({"code": "INVALID_ARGUMENTS"}),
        );
    };
    let snapshot = gateway.host.tools();
    let Some(info) = find(&snapshot, name).filter(|info| gateway.shape.shows(info)) else {
        let close = close_names(&snapshot, &gateway.shape, name);
        return refusal(
            "TOOL_NOT_FOUND",
            format!("no tool named {name:?}; close names: {}", close.join(", ")),
            json!({"code": "TOOL_NOT_FOUND", "closeNames": close}),
        );
    };
    let mut details = gateway.shape.whole_tool(&info);
    details["extension"] = json!(owner_of(&info));
    let mut result = CallToolResult::success(vec![ContentBlock::text(
        serde_json::to_string_pretty(&details).unwrap_or_default(),
    )]);
    result.structured_content = Some(details);
    result
}

/// Runs one meta-tool.
pub(crate) async fn call(
    gateway: &Gateway,
    name: &str,
    arguments: Option<JsonObject>,
    cancel: CancellationToken,
    progress: Option<(ProgressToken, Peer<RoleServer>)>,
) -> Result<CallToolResult, McpError> {
    let arguments = arguments.unwrap_or_default();
    match name {
        "search_tools" => Ok(search(gateway, &arguments)),
        "describe_tool" => Ok(describe(gateway, &arguments)),
        "call_tool" => {
            let Some(target) = arguments.get("name").and_then(Value::as_str) else {
                return Ok(refusal(
                    "INVALID_ARGUMENTS",
                    "call_tool needs a string \"name\"".to_owned(),
                    json!({"code": "INVALID_ARGUMENTS"}),
                ));
            };
            let input = match arguments.get("arguments") {
                None | Some(Value::Null) => None,
                Some(Value::Object(map)) => Some(map.clone()),
                Some(_) => {
                    return Ok(refusal(
                        "INVALID_ARGUMENTS",
                        "call_tool's \"arguments\" must be an object".to_owned(),
                        json!({"code": "INVALID_ARGUMENTS"}),
                    ));
                }
            };
            match gateway.call(target, input, cancel, progress).await {
                Ok(result) => Ok(result),
                // An unknown or hidden tool is the meta-tool's answer (with
                // the same stable code), not a protocol error of the
                // client's request.
                Err(e) => {
                    let code = if e
                        .data
                        .as_ref()
                        .and_then(|d| d.get("code"))
                        .and_then(Value::as_str)
                        == Some(super::gateway::TOOL_HIDDEN)
                    {
                        super::gateway::TOOL_HIDDEN
                    } else {
                        "TOOL_NOT_FOUND"
                    };
                    let message = e.message.to_string();
                    let message = message
                        .strip_prefix(&format!("{code}: "))
                        .unwrap_or(&message)
                        .to_owned();
                    Ok(refusal(code, message, e.data.unwrap_or(Value::Null)))
                }
            }
        }
        other => Err(McpError::invalid_params(
            format!(
                "TOOL_NOT_FOUND: no tool named {other:?}; this server exposes search_tools, describe_tool and call_tool"
            ),
            Some(
                json!({"code": "TOOL_NOT_FOUND", "closeNames": ["search_tools", "describe_tool", "call_tool"]}),
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_in_the_name_counts_twice() {
        let words = vec!["echo".to_owned()];
        assert_eq!(score(&words, "everything_echo", "Echoes back"), 3);
        assert_eq!(score(&words, "add", "adds numbers"), 0);
    }

    #[test]
    fn summaries_keep_the_first_line_and_cut_on_a_character() {
        assert_eq!(summary("one\ntwo"), "one");
        let long = "é".repeat(200);
        let s = summary(&long);
        assert!(s.len() <= SUMMARY_BYTES + 3 && s.ends_with("..."), "{s}");
    }

    #[test]
    fn the_catalog_has_three_tools_with_object_schemas() {
        let tools = meta_tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ["search_tools", "describe_tool", "call_tool"]);
        assert!(
            tools
                .iter()
                .all(|t| t.input_schema.get("type") == Some(&json!("object")))
        );
    }
}
