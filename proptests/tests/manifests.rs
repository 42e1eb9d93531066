//! Manifests under generated input: the parser and validator never panic and
//! always answer with a manifest or a listed reason code; manifests built
//! from ID-1-valid names are accepted; schema digests ignore key order and
//! whitespace.
use exthost::manifest::{
    Classification, Manifest, REASON_CODES, canonical_json, parse_manifest, schema_digest,
};
use exthost::validate_id_segment;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Any JSON value, a few levels deep.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// Keys and values from the manifest vocabulary, so generated documents get
/// past the first checks and reach the deep ones.
fn arb_manifestish() -> impl Strategy<Value = Value> {
    let words = prop::sample::select(vec![
        "id",
        "version",
        "displayName",
        "description",
        "runtime",
        "kind",
        "in-process",
        "process",
        "command",
        "args",
        "env",
        "permissions",
        "tools.register",
        "providers.register",
        "hooks.subscribe",
        "context_providers.register",
        "hooks",
        "dependencies",
        "deferred",
        "tools",
        "providers",
        "lifecycle",
        "hook",
        "user",
        "context_providers",
        "name",
        "inputSchema",
        "configSchema",
        "models",
        "capabilities",
        "x",
        "a:b",
        "",
    ]);
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (0i64..3).prop_map(Value::from),
        words.clone().prop_map(|w| Value::String(w.to_owned())),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(words.clone().prop_map(str::to_owned), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

/// The outcome as data: the manifest, or its reason code and pointer.
fn outcome(text: &str) -> Result<Manifest, (&'static str, String)> {
    parse_manifest(text)
        .map(|(m, _)| m)
        .map_err(|e| (e.reason_code(), e.pointer().to_owned()))
}

fn check_answer(result: &Result<Manifest, (&'static str, String)>) -> Result<(), TestCaseError> {
    if let Err((code, pointer)) = result {
        prop_assert!(REASON_CODES.contains(code), "unlisted reason {}", code);
        prop_assert!(pointer.is_empty() || pointer.starts_with('/'));
    }
    Ok(())
}

/// An ID-1 name.
fn arb_id() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_][a-zA-Z0-9_.\\-]{0,63}"
}

/// A valid manifest from ID-1 names, with its expected class.
fn arb_valid_manifest() -> impl Strategy<Value = (Value, Classification)> {
    (
        arb_id(),
        prop::collection::btree_set(arb_id(), 0..5),
        prop::collection::btree_set(arb_id(), 0..3),
        prop::collection::btree_set(arb_id(), 0..4),
        prop::option::of(prop::bool::ANY),
        prop::collection::btree_set(arb_id(), 0..4),
    )
        .prop_map(|(id, tools, providers, hooks, lifecycle_is_hook, models)| {
            let tools: Vec<Value> = tools
                .iter()
                .map(|t| json!({"name": t, "description": format!("Tool {t}."), "inputSchema": {"type": "object", "title": t}}))
                .collect();
            let models: Vec<Value> = models.iter().map(|m| json!({"id": m, "capabilities": {"tools": true}})).collect();
            let providers: Vec<Value> = providers
                .iter()
                .map(|p| json!({"id": p, "displayName": format!("Provider {p}"), "models": models}))
                .collect();
            let has_tools = !tools.is_empty();
            let has_providers = !providers.is_empty();
            // Lifecycle "hook" needs hooks; "user" excludes tools and providers.
            let lifecycle = match lifecycle_is_hook {
                Some(true) if !hooks.is_empty() => Some("hook"),
                Some(false) if !has_tools && !has_providers => Some("user"),
                _ => None,
            };
            let hook = lifecycle == Some("hook");
            let parts = usize::from(hook) + usize::from(has_tools) + usize::from(has_providers);
            let class = match (lifecycle, parts) {
                (Some("user"), _) => Classification::UiSidecar,
                (_, 0) => Classification::LegacyEager,
                (_, 2..) => Classification::Mixed,
                _ if hook => Classification::HookLifecycle,
                _ if has_tools => Classification::ToolOnly,
                _ => Classification::Provider,
            };
            let mut deferred = json!({"tools": tools, "providers": providers});
            if let Some(lifecycle) = lifecycle {
                deferred["lifecycle"] = json!(lifecycle);
            }
            let dependencies: Vec<String> = hooks.iter().filter(|h| **h != id).cloned().collect();
            let value = json!({
                "id": id,
                "runtime": {"kind": "process", "command": "./server", "args": ["--stdio"], "env": ["PATH"]},
                "permissions": ["tools.register", "providers.register", "hooks.subscribe"],
                "hooks": hooks,
                "dependencies": dependencies,
                "deferred": deferred,
            });
            (value, class)
        })
}

/// `value` as JSON text with every object's keys in reverse order and
/// extra whitespace.
fn reversed_text(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .rev()
                .map(|(k, v)| format!("\n  {} :\t{}", Value::String(k.clone()), reversed_text(v)))
                .collect();
            format!("{{ {} }}", parts.join(" ,"))
        }
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(reversed_text).collect();
            format!("[ {} ]", parts.join(" , "))
        }
        other => other.to_string(),
    }
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        check_answer(&outcome(&text))?;
    }

    #[test]
    fn arbitrary_json_never_panics_and_both_entry_points_agree(value in arb_json()) {
        let from_text = outcome(&value.to_string());
        check_answer(&from_text)?;
        let from_value = Manifest::from_value(value).map(|(m, _)| m).map_err(|e| (e.reason_code(), e.pointer().to_owned()));
        prop_assert_eq!(from_text, from_value);
    }

    #[test]
    fn manifest_shaped_json_never_panics(value in arb_manifestish()) {
        check_answer(&outcome(&value.to_string()))?;
        // Also as the body of an otherwise valid manifest.
        let wrapped = json!({"id": "x", "runtime": {"kind": "in-process"}, "deferred": value});
        check_answer(&outcome(&wrapped.to_string()))?;
    }

    #[test]
    fn valid_manifests_from_id_1_names_are_accepted((value, class) in arb_valid_manifest()) {
        let text = value.to_string();
        let (manifest, notices) = parse_manifest(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(notices.is_empty());
        prop_assert_eq!(manifest.classification(), class);
        prop_assert!(validate_id_segment(manifest.id()).is_ok());
        for tool in manifest.dormant_tools() {
            prop_assert_eq!(tool.runtime_name, format!("{}:{}", manifest.id(), tool.tool_name));
        }
        // Reordered keys and whitespace give the same manifest; so does serialising it.
        prop_assert_eq!(&parse_manifest(&reversed_text(&value)).map_err(|e| TestCaseError::fail(e.to_string()))?.0, &manifest);
        let again = serde_json::to_string(&manifest).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&parse_manifest(&again).map_err(|e| TestCaseError::fail(e.to_string()))?.0, &manifest);
    }

    #[test]
    fn digests_ignore_key_order_and_whitespace(value in arb_json()) {
        // Both texts carry the same digits for every number, so they parse
        // to the same values (serde_json's float parsing is deterministic,
        // though not always the exact inverse of its printing).
        let parse = |text: &str| serde_json::from_str::<Value>(text).map_err(|e| TestCaseError::fail(e.to_string()));
        let compact = parse(&value.to_string())?;
        let reordered = parse(&reversed_text(&value))?;
        prop_assert_eq!(schema_digest(&compact), schema_digest(&reordered));
        prop_assert_eq!(canonical_json(&compact), canonical_json(&reordered));
        // The canonical text is JSON with the same content.
        prop_assert_eq!(parse(&canonical_json(&value))?, compact);
    }
}
