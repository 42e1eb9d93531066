//! Manifests under generated input: the parser and validator never panic and
//! always answer with a manifest or a listed reason code; manifests built
//! from ID-1-valid names are accepted; schema digests ignore key order and
//! whitespace; descriptions and display names holding a refused character
//! (or nothing visible) are always refused, with the field's listed code.
use exthost::manifest::{
    Classification, Manifest, REASON_CODES, canonical_json, parse_manifest, schema_digest,
};
use exthost::text::{check_description, check_display_name};
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

/// Text that both checks accept: letters, digits, punctuation, spaces,
/// non-ASCII letters and symbols, and (for descriptions) line breaks and
/// tab, which `allowed_in_descriptions` adds.
fn arb_clean(allowed_in_descriptions: bool) -> impl Strategy<Value = String> {
    let mut pool = vec![
        'a', 'Z', '0', ' ', '.', ',', '-', '_', 'é', '☕', '中', '가', 'ж', 'א', '\u{200E}',
        '\u{200D}', '\u{00A0}',
    ];
    if allowed_in_descriptions {
        pool.extend(['\n', '\r', '\t']);
    }
    prop::collection::vec(prop::sample::select(pool), 0..24).prop_map(String::from_iter)
}

/// A character that descriptions refuse: a control character other than
/// `\n`, `\r`, `\t`, or a bidirectional override or isolate.
fn arb_refused_in_description() -> impl Strategy<Value = char> {
    prop_oneof![
        (0u32..=0x1F)
            .prop_filter("line breaks and tab are allowed", |c| {
                ![0x09, 0x0A, 0x0D].contains(c)
            })
            .prop_map(|c| char::from_u32(c).unwrap()),
        (0x7Fu32..=0x9F).prop_map(|c| char::from_u32(c).unwrap()),
        (0x202Au32..=0x202E).prop_map(|c| char::from_u32(c).unwrap()),
        (0x2066u32..=0x2069).prop_map(|c| char::from_u32(c).unwrap()),
    ]
}

/// A character that display names refuse: any control character, the line
/// and paragraph separators, or a bidirectional override or isolate.
fn arb_refused_in_display_name() -> impl Strategy<Value = char> {
    prop_oneof![
        arb_refused_in_description(),
        prop::sample::select(vec!['\n', '\r', '\t', '\u{2028}', '\u{2029}']),
    ]
}

/// Text with no visible character (possibly only spaces: then it is blank).
fn arb_invisible() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            '\u{200B}', '\u{2060}', '\u{FEFF}', '\u{3164}', '\u{115F}', '\u{1160}', '\u{FFA0}',
            '\u{0301}', '\u{2800}', '\u{200D}', '\u{00AD}', '\u{200F}', ' ', '\u{3000}',
        ]),
        1..8,
    )
    .prop_map(String::from_iter)
}

/// Which text field a generated text goes to: its pointer, how to set it,
/// its code for length and blank, and its prefix for text-hygiene codes.
#[derive(Debug, Clone, Copy)]
enum TextField {
    ExtensionDescription,
    ToolDescription,
    ExtensionDisplayName,
    ProviderDisplayName,
    ModelDisplayName,
}

impl TextField {
    const DESCRIPTIONS: [TextField; 2] =
        [TextField::ExtensionDescription, TextField::ToolDescription];
    const DISPLAY_NAMES: [TextField; 3] = [
        TextField::ExtensionDisplayName,
        TextField::ProviderDisplayName,
        TextField::ModelDisplayName,
    ];

    /// A valid manifest with `text` in this field.
    fn manifest(self, text: &str) -> Value {
        let mut value = json!({
            "id": "texts",
            "runtime": {"kind": "in-process"},
            "permissions": ["tools.register", "providers.register"],
            "deferred": {
                "tools": [{"name": "t", "description": "Tool.", "inputSchema": {"type": "object"}}],
                "providers": [{"id": "p", "displayName": "P", "models": [{"id": "m"}]}]
            }
        });
        match self {
            TextField::ExtensionDescription => value["description"] = json!(text),
            TextField::ToolDescription => {
                value["deferred"]["tools"][0]["description"] = json!(text)
            }
            TextField::ExtensionDisplayName => value["displayName"] = json!(text),
            TextField::ProviderDisplayName => {
                value["deferred"]["providers"][0]["displayName"] = json!(text)
            }
            TextField::ModelDisplayName => {
                value["deferred"]["providers"][0]["models"][0]["displayName"] = json!(text)
            }
        }
        value
    }

    fn pointer(self) -> &'static str {
        match self {
            TextField::ExtensionDescription => "/description",
            TextField::ToolDescription => "/deferred/tools/0/description",
            TextField::ExtensionDisplayName => "/displayName",
            TextField::ProviderDisplayName => "/deferred/providers/0/displayName",
            TextField::ModelDisplayName => "/deferred/providers/0/models/0/displayName",
        }
    }

    /// The prefix of this field's codes: `<prefix>_control_character`...
    fn prefix(self) -> &'static str {
        match self {
            TextField::ExtensionDescription => "extension_description",
            TextField::ToolDescription => "declared_tool_description",
            TextField::ExtensionDisplayName => "extension_display_name",
            TextField::ProviderDisplayName => "provider_display_name",
            TextField::ModelDisplayName => "model_display_name",
        }
    }

    /// The code for the length and blank rules.
    fn invalid(self) -> String {
        match self {
            TextField::ToolDescription => "invalid_declared_tool_description".to_owned(),
            other => format!("invalid_{}", other.prefix()),
        }
    }
}

/// `text` in `field` is refused, at the field's pointer, with a listed code:
/// the blank code if it is only whitespace, else `<prefix>_<kind>` where
/// `kind` is what `exthost::text` says.
fn check_refused(field: TextField, text: &str, kind: &str) -> Result<(), TestCaseError> {
    let result = outcome(&field.manifest(text).to_string());
    let Err((code, pointer)) = result else {
        return Err(TestCaseError::fail(format!(
            "{text:?} accepted in {field:?}"
        )));
    };
    prop_assert!(REASON_CODES.contains(&code), "unlisted reason {}", code);
    prop_assert_eq!(pointer.as_str(), field.pointer());
    let expected = if text.trim().is_empty() {
        field.invalid()
    } else {
        format!("{}_{kind}", field.prefix())
    };
    prop_assert_eq!(code, expected.as_str(), "{:?} in {:?}", text, field);
    Ok(())
}

proptest! {
    #[test]
    fn clean_text_is_accepted_in_every_field(
        description in arb_clean(true).prop_filter("not blank", |t| !t.trim().is_empty()),
        name in arb_clean(false).prop_filter("visible", |t| check_display_name(t).is_ok()),
    ) {
        prop_assert_eq!(check_description(&description), Ok(()));
        for field in TextField::DESCRIPTIONS {
            let result = outcome(&field.manifest(&description).to_string());
            prop_assert!(result.is_ok(), "{:?} in {:?}: {:?}", description, field, result.err());
        }
        for field in TextField::DISPLAY_NAMES {
            let result = outcome(&field.manifest(&name).to_string());
            prop_assert!(result.is_ok(), "{:?} in {:?}: {:?}", name, field, result.err());
        }
    }

    #[test]
    fn descriptions_with_a_refused_character_are_always_refused(
        before in arb_clean(true),
        refused in arb_refused_in_description(),
        after in arb_clean(true),
    ) {
        let text = format!("{before}{refused}{after}");
        let error = check_description(&text).unwrap_err();
        prop_assert_eq!(error.character(), Some(refused));
        prop_assert_eq!(error.byte_offset(), Some(before.len()));
        let kind = error.reason().trim_start_matches("text_");
        for field in TextField::DESCRIPTIONS {
            check_refused(field, &text, kind)?;
        }
    }

    #[test]
    fn display_names_with_a_refused_character_are_always_refused(
        before in arb_clean(false),
        refused in arb_refused_in_display_name(),
        after in arb_clean(false),
    ) {
        let text = format!("{before}{refused}{after}");
        let error = check_display_name(&text).unwrap_err();
        prop_assert_eq!(error.character(), Some(refused));
        let kind = error.reason().trim_start_matches("text_");
        for field in TextField::DISPLAY_NAMES {
            check_refused(field, &text, kind)?;
        }
    }

    #[test]
    fn invisible_display_names_are_always_refused(text in arb_invisible()) {
        prop_assert_eq!(check_display_name(&text).unwrap_err().reason(), "text_not_visible");
        for field in TextField::DISPLAY_NAMES {
            check_refused(field, &text, "not_visible")?;
        }
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
