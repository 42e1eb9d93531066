//! Manifest schema and validation (M-1, M-2, M-7): every reason code is
//! producible, bounds hold at both edges, retired keys are accepted with a
//! notice and change nothing, and ID-1 names survive.

use std::collections::BTreeSet;
use std::fs;

use exthost::manifest::{
    Classification, Lifecycle, MAX_MANIFEST_BYTES, Manifest, ManifestReason, Permission,
    REASON_CODES, RetiredKey, Runtime, load_manifest_dir, parse_manifest,
};
use serde_json::{Value, json};

/// A valid manifest using every field.
fn full() -> Value {
    json!({
        "id": "git-tools",
        "version": "1.2.0",
        "displayName": "Git tools",
        "description": "Git helpers for the agent.",
        "runtime": {"kind": "process", "command": "node", "args": ["server.js", "--stdio"], "env": ["PATH", "HOME"]},
        "permissions": ["tools.register", "providers.register", "hooks.subscribe"],
        "hooks": ["session.start", "tool.after"],
        "dependencies": ["core-utils"],
        "deferred": {
            "tools": [
                {"name": "status", "description": "Show the working tree status.",
                 "inputSchema": {"type": "object", "properties": {}}},
                {"name": "log", "description": "Show recent commits.",
                 "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer"}}}}
            ],
            "providers": [
                {"id": "local-llm", "displayName": "Local LLM",
                 "configSchema": {"type": "object"},
                 "models": [
                    {"id": "small", "displayName": "Small", "capabilities": {"tools": true, "vision": false}},
                    {"id": "large"}
                 ]}
            ],
            "lifecycle": "hook"
        }
    })
}

/// The smallest valid manifest.
fn minimal() -> Value {
    json!({"id": "ext", "runtime": {"kind": "in-process"}})
}

/// A tool-only manifest with the given tools.
fn with_tools(tools: Value) -> Value {
    json!({
        "id": "ext",
        "runtime": {"kind": "in-process"},
        "permissions": ["tools.register"],
        "deferred": {"tools": tools}
    })
}

/// A provider manifest with the given providers.
fn with_providers(providers: Value) -> Value {
    json!({
        "id": "ext",
        "runtime": {"kind": "in-process"},
        "permissions": ["providers.register"],
        "deferred": {"providers": providers}
    })
}

fn tool(name: &str) -> Value {
    json!({"name": name, "description": "Does a thing.", "inputSchema": {"type": "object"}})
}

fn provider_with_models(models: Value) -> Value {
    json!([{"id": "p", "displayName": "P", "models": models}])
}

fn parse(value: &Value) -> Result<Manifest, exthost::ManifestError> {
    parse_manifest(&value.to_string()).map(|(manifest, _)| manifest)
}

fn refusal(text: &str) -> (String, String) {
    match parse_manifest(text) {
        Ok(_) => panic!("accepted: {text:.200}"),
        Err(error) => {
            assert_eq!(error.code(), "MANIFEST_INVALID");
            assert_eq!(error.reason().as_str(), error.reason_code());
            (error.reason_code().to_owned(), error.pointer().to_owned())
        }
    }
}

/// Every reason code that a text can produce, with the input and the
/// expected pointer.
fn text_cases() -> Vec<(&'static str, &'static str, String)> {
    let m = |edit: &dyn Fn(&mut Value)| {
        let mut value = full();
        edit(&mut value);
        value.to_string()
    };
    let many_tools: Vec<Value> = (0..257).map(|i| tool(&format!("t{i}"))).collect();
    let many_providers: Vec<Value> = (0..17)
        .map(|i| json!({"id": format!("p{i}"), "displayName": "P"}))
        .collect();
    let many_models: Vec<Value> = (0..65).map(|i| json!({"id": format!("m{i}")})).collect();
    let big_schema = json!({"type": "object", "description": "x".repeat(70_000)});
    vec![
        ("invalid_json", "", "{\"id\": ".to_owned()),
        (
            "duplicate_key",
            "/runtime/kind",
            r#"{"id":"a","runtime":{"kind":"in-process","kind":"process"}}"#.to_owned(),
        ),
        ("manifest_too_large", "", " ".repeat(MAX_MANIFEST_BYTES + 1)),
        ("invalid_field_type", "", "[]".to_owned()),
        (
            "missing_field",
            "/id",
            r#"{"runtime":{"kind":"in-process"}}"#.to_owned(),
        ),
        (
            "unknown_field",
            "/colour",
            m(&|v| v["colour"] = json!("red")),
        ),
        (
            "invalid_extension_id",
            "/id",
            m(&|v| v["id"] = json!("git:tools")),
        ),
        (
            "invalid_extension_version",
            "/version",
            m(&|v| v["version"] = json!("")),
        ),
        (
            "invalid_extension_display_name",
            "/displayName",
            m(&|v| v["displayName"] = json!("")),
        ),
        (
            "extension_display_name_control_character",
            "/displayName",
            m(&|v| v["displayName"] = json!("Git\u{7}")),
        ),
        (
            "extension_display_name_bidi_control",
            "/displayName",
            m(&|v| v["displayName"] = json!("Git\u{202E}slot")),
        ),
        (
            "extension_display_name_not_visible",
            "/displayName",
            m(&|v| v["displayName"] = json!("\u{200B}")),
        ),
        (
            "invalid_extension_description",
            "/description",
            m(&|v| v["description"] = json!(" \n\t")),
        ),
        (
            "extension_description_control_character",
            "/description",
            m(&|v| v["description"] = json!("Git helpers\u{0}")),
        ),
        (
            "extension_description_bidi_control",
            "/description",
            m(&|v| v["description"] = json!("Git \u{2066}helpers\u{2069}")),
        ),
        (
            "invalid_runtime",
            "/runtime/kind",
            m(&|v| v["runtime"]["kind"] = json!("wasm")),
        ),
        (
            "invalid_runtime_command",
            "/runtime/command",
            m(&|v| v["runtime"]["command"] = json!("   ")),
        ),
        (
            "invalid_runtime_arguments",
            "/runtime/args/1",
            m(&|v| v["runtime"]["args"][1] = json!("a\u{0}b")),
        ),
        (
            "invalid_runtime_env",
            "/runtime/env/1",
            m(&|v| v["runtime"]["env"][1] = json!("1HOME")),
        ),
        (
            "invalid_runtime_timeout",
            "/runtime/startupTimeoutMs",
            m(&|v| v["runtime"]["startupTimeoutMs"] = json!(0)),
        ),
        (
            "invalid_deadline",
            "/deadlines/cleanupMs",
            m(&|v| v["deadlines"] = json!({"activationMs": 500, "cleanupMs": 600_001})),
        ),
        (
            "unknown_permission",
            "/permissions/1",
            m(&|v| v["permissions"][1] = json!("providers.write")),
        ),
        (
            "duplicate_permission",
            "/permissions/2",
            m(&|v| v["permissions"][2] = json!("tools.register")),
        ),
        (
            "invalid_hook_event_name",
            "/hooks/0",
            m(&|v| v["hooks"][0] = json!("session start")),
        ),
        (
            "duplicate_hook_event_name",
            "/hooks/1",
            m(&|v| v["hooks"][1] = json!("session.start")),
        ),
        (
            "invalid_dependency_id",
            "/dependencies/0",
            m(&|v| v["dependencies"][0] = json!("core/utils")),
        ),
        (
            "duplicate_dependency_id",
            "/dependencies/1",
            m(&|v| v["dependencies"] = json!(["a", "a"])),
        ),
        (
            "dependency_on_self",
            "/dependencies/0",
            m(&|v| v["dependencies"][0] = json!("git-tools")),
        ),
        (
            "too_many_declared_tools",
            "/deferred/tools",
            m(&|v| v["deferred"]["tools"] = json!(many_tools)),
        ),
        (
            "invalid_declared_tool_name",
            "/deferred/tools/1/name",
            m(&|v| v["deferred"]["tools"][1]["name"] = json!("git log")),
        ),
        (
            "duplicate_declared_tool_name",
            "/deferred/tools/1/name",
            m(&|v| v["deferred"]["tools"][1]["name"] = json!("status")),
        ),
        (
            "invalid_declared_tool_description",
            "/deferred/tools/0/description",
            m(&|v| v["deferred"]["tools"][0]["description"] = json!("")),
        ),
        (
            "invalid_declared_tool_title",
            "/deferred/tools/0/title",
            m(&|v| v["deferred"]["tools"][0]["title"] = json!("a\u{202E}b")),
        ),
        (
            "invalid_declared_tool_annotations",
            "/deferred/tools/0/annotations/readOnlyHint",
            m(&|v| v["deferred"]["tools"][0]["annotations"] = json!({"readOnlyHint": "yes"})),
        ),
        (
            "invalid_declared_tool_output_schema",
            "/deferred/tools/0/outputSchema",
            m(&|v| v["deferred"]["tools"][0]["outputSchema"] = json!([])),
        ),
        (
            "invalid_declared_tool_metadata",
            "/deferred/tools/0/_meta",
            m(&|v| v["deferred"]["tools"][0]["_meta"] = json!("m")),
        ),
        (
            "invalid_declared_listing",
            "/deferred/prompts/1/name",
            m(&|v| v["deferred"]["prompts"] = json!([{"name": "p"}, {"name": "p"}])),
        ),
        (
            "invalid_expose_pattern",
            "/expose/allow/0",
            m(&|v| v["expose"] = json!({"allow": ["a/b"]})),
        ),
        (
            "declared_tool_description_control_character",
            "/deferred/tools/1/description",
            m(&|v| {
                v["deferred"]["tools"][1]["description"] = json!("Shows \u{1b}[31mred\u{1b}[0m")
            }),
        ),
        (
            "declared_tool_description_bidi_control",
            "/deferred/tools/0/description",
            m(&|v| v["deferred"]["tools"][0]["description"] = json!("Status \u{202D}reversed")),
        ),
        (
            "invalid_declared_tool_input_schema",
            "/deferred/tools/1/inputSchema",
            m(&|v| v["deferred"]["tools"][1]["inputSchema"] = json!([])),
        ),
        (
            "too_many_declared_providers",
            "/deferred/providers",
            m(&|v| v["deferred"]["providers"] = json!(many_providers)),
        ),
        (
            "invalid_declared_provider_id",
            "/deferred/providers/0/id",
            m(&|v| v["deferred"]["providers"][0]["id"] = json!(7)),
        ),
        (
            "duplicate_declared_provider_id",
            "/deferred/providers/1/id",
            m(&|v| {
                v["deferred"]["providers"] =
                    json!([{"id": "p", "displayName": "P"}, {"id": "p", "displayName": "Q"}])
            }),
        ),
        (
            "invalid_provider_display_name",
            "/deferred/providers/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["displayName"] = json!("  ")),
        ),
        (
            "provider_display_name_control_character",
            "/deferred/providers/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["displayName"] = json!("a\u{85}b")),
        ),
        (
            "provider_display_name_bidi_control",
            "/deferred/providers/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["displayName"] = json!("\u{2067}Local")),
        ),
        (
            "provider_display_name_not_visible",
            "/deferred/providers/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["displayName"] = json!("\u{3164}")),
        ),
        (
            "invalid_provider_config_schema",
            "/deferred/providers/0/configSchema",
            m(&|v| v["deferred"]["providers"][0]["configSchema"] = big_schema.clone()),
        ),
        (
            "too_many_declared_models",
            "/deferred/providers/0/models",
            m(&|v| v["deferred"]["providers"][0]["models"] = json!(many_models)),
        ),
        (
            "invalid_declared_model_id",
            "/deferred/providers/0/models/1/id",
            m(&|v| v["deferred"]["providers"][0]["models"][1]["id"] = json!("-large")),
        ),
        (
            "duplicate_declared_model_id",
            "/deferred/providers/0/models/1/id",
            m(&|v| v["deferred"]["providers"][0]["models"][1]["id"] = json!("small")),
        ),
        (
            "invalid_model_display_name",
            "/deferred/providers/0/models/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["models"][0]["displayName"] = json!("")),
        ),
        (
            "model_display_name_control_character",
            "/deferred/providers/0/models/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["models"][0]["displayName"] = json!("Sm\tall")),
        ),
        (
            "model_display_name_bidi_control",
            "/deferred/providers/0/models/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["models"][0]["displayName"] = json!("\u{202B}")),
        ),
        (
            "model_display_name_not_visible",
            "/deferred/providers/0/models/0/displayName",
            m(&|v| v["deferred"]["providers"][0]["models"][0]["displayName"] = json!("\u{0301}")),
        ),
        (
            "invalid_model_capabilities",
            "/deferred/providers/0/models/0/capabilities/vision",
            m(&|v| {
                v["deferred"]["providers"][0]["models"][0]["capabilities"]["vision"] = json!("yes")
            }),
        ),
        (
            "invalid_lifecycle",
            "/deferred/lifecycle",
            m(&|v| v["deferred"]["lifecycle"] = json!("eager")),
        ),
        (
            "deferred_tools_require_tools_register_permission",
            "/deferred/tools",
            m(&|v| v["permissions"] = json!(["providers.register", "hooks.subscribe"])),
        ),
        (
            "deferred_providers_require_providers_register_permission",
            "/deferred/providers",
            m(&|v| v["permissions"] = json!(["tools.register", "hooks.subscribe"])),
        ),
        (
            "hook_subscriptions_require_hooks_subscribe_permission",
            "/hooks",
            m(&|v| v["permissions"] = json!(["tools.register", "providers.register"])),
        ),
        (
            "hook_lifecycle_requires_hook_subscriptions",
            "/deferred/lifecycle",
            m(&|v| v["hooks"] = json!([])),
        ),
        (
            "user_lifecycle_conflicts_with_active_capabilities",
            "/deferred/lifecycle",
            m(&|v| v["deferred"]["lifecycle"] = json!("user")),
        ),
    ]
}

/// The reason codes only a folder can produce, each from its own folder.
fn folder_cases() -> Vec<(&'static str, tempfile::TempDir)> {
    let make = |setup: &dyn Fn(&std::path::Path)| {
        let dir = tempfile::tempdir().unwrap();
        setup(dir.path());
        dir
    };
    vec![
        (
            "manifest_io_error",
            make(&|d| fs::create_dir_all(d.join("a/extension.json")).unwrap()),
        ),
        (
            "manifest_invalid_utf8",
            make(&|d| {
                fs::create_dir(d.join("a")).unwrap();
                fs::write(d.join("a/extension.json"), b"{\"id\": \"a\xff\"}").unwrap();
            }),
        ),
        (
            "manifest_missing",
            make(&|d| fs::create_dir(d.join("a")).unwrap()),
        ),
        (
            "misplaced_manifest_file",
            make(&|d| fs::write(d.join("a.json"), minimal().to_string()).unwrap()),
        ),
        (
            "duplicate_extension_id",
            make(&|d| {
                for folder in ["a", "b"] {
                    fs::create_dir(d.join(folder)).unwrap();
                    fs::write(d.join(folder).join("extension.json"), minimal().to_string())
                        .unwrap();
                }
            }),
        ),
    ]
}

#[test]
fn the_full_example_is_accepted_and_read_back() {
    let (manifest, notices) = parse_manifest(&full().to_string()).unwrap();
    assert!(notices.is_empty());
    assert_eq!(manifest.id(), "git-tools");
    assert_eq!(manifest.version(), Some("1.2.0"));
    assert_eq!(manifest.display_name(), Some("Git tools"));
    assert_eq!(manifest.description(), Some("Git helpers for the agent."));
    let Runtime::Process(process) = manifest.runtime() else {
        panic!("expected a process runtime")
    };
    assert_eq!(process.command(), "node");
    assert_eq!(process.args(), ["server.js", "--stdio"]);
    assert_eq!(process.env(), ["PATH", "HOME"]);
    assert_eq!(
        manifest.permissions(),
        [
            Permission::ToolsRegister,
            Permission::ProvidersRegister,
            Permission::HooksSubscribe
        ]
    );
    assert_eq!(manifest.hooks(), ["session.start", "tool.after"]);
    assert_eq!(manifest.dependencies(), ["core-utils"]);
    let names: Vec<&str> = manifest.declared_tools().iter().map(|t| t.name()).collect();
    assert_eq!(names, ["status", "log"]);
    assert_eq!(
        manifest.declared_tools()[1].input_schema()["properties"]["limit"]["type"],
        "integer"
    );
    let provider = &manifest.declared_providers()[0];
    assert_eq!(
        (provider.id(), provider.display_name()),
        ("local-llm", "Local LLM")
    );
    assert_eq!(provider.config_schema(), Some(&json!({"type": "object"})));
    assert_eq!(provider.models()[0].display_name(), Some("Small"));
    assert!(provider.models()[0].has_capability("tools"));
    assert!(!provider.models()[0].has_capability("vision"));
    assert!(!provider.models()[1].has_capability("tools"));
    assert_eq!(provider.models()[1].capabilities(), None);
    assert_eq!(manifest.lifecycle(), Some(Lifecycle::Hook));
    assert_eq!(manifest.classification(), Classification::Mixed);
    assert!(manifest.has_declarations());
}

#[test]
fn the_minimal_manifest_is_legacy_eager_and_nulls_mean_absent() {
    let manifest = parse(&minimal()).unwrap();
    assert_eq!(manifest.runtime(), &Runtime::InProcess);
    assert!(manifest.permissions().is_empty() && manifest.hooks().is_empty());
    assert_eq!(manifest.classification(), Classification::LegacyEager);
    assert!(!manifest.has_declarations());
    let with_nulls = json!({"id": "ext", "runtime": {"kind": "in-process"}, "version": null,
        "permissions": null, "deferred": {"tools": null, "lifecycle": null}});
    assert_eq!(parse(&with_nulls).unwrap(), manifest);
}

#[test]
fn every_reason_code_is_producible_and_listed_once() {
    let mut produced = BTreeSet::new();
    for (code, pointer, text) in text_cases() {
        let (got, got_pointer) = refusal(&text);
        assert_eq!(
            (got.as_str(), got_pointer.as_str()),
            (code, pointer),
            "case {code}"
        );
        produced.insert(code);
    }
    for (code, dir) in folder_cases() {
        let error = load_manifest_dir(dir.path()).unwrap_err();
        let reasons: Vec<&str> = error.errors().iter().map(|e| e.reason_code()).collect();
        assert_eq!(reasons, [code], "case {code}");
        produced.insert(code);
    }
    let listed: BTreeSet<&str> = REASON_CODES.iter().copied().collect();
    assert_eq!(
        listed.len(),
        REASON_CODES.len(),
        "a reason code is listed twice"
    );
    assert_eq!(produced, listed);
    for (reason, code) in ManifestReason::ALL.iter().zip(REASON_CODES) {
        assert_eq!(reason.as_str(), *code);
        assert_eq!(ManifestReason::from_code(code), Some(*reason));
        assert!(
            code.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "{code}"
        );
    }
    assert_eq!(ManifestReason::from_code("no_such_reason"), None);
}

#[test]
fn unknown_fields_are_refused_everywhere_naming_the_field() {
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!({"id": "e", "runtime": {"kind": "in-process", "command": "x"}}),
            "/runtime/command",
            "\"command\"",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "process", "command": "x", "cwd": "/"}}),
            "/runtime/cwd",
            "\"cwd\"",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "deferred": {"tool": []}}),
            "/deferred/tool",
            "\"tool\"",
        ),
        (
            with_tools(json!([{"name": "t", "description": "d", "input_schema": {}}])),
            "/deferred/tools/0/input_schema",
            "\"input_schema\"",
        ),
        (
            with_providers(json!([{"id": "p", "displayName": "P", "model": []}])),
            "/deferred/providers/0/model",
            "\"model\"",
        ),
        (
            with_providers(provider_with_models(json!([{"id": "m", "caps": {}}]))),
            "/deferred/providers/0/models/0/caps",
            "\"caps\"",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "context_providers": []}),
            "/context_providers",
            "\"context_providers\"",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "a/b~c": 1}),
            "/a~1b~0c",
            "\"a/b~c\"",
        ),
    ];
    for (value, pointer, field) in cases {
        let error = parse(&value).unwrap_err();
        assert_eq!(error.reason(), ManifestReason::UnknownField, "{value}");
        assert_eq!(error.pointer(), pointer);
        assert!(error.message().contains(field), "{}", error.message());
        assert!(error.to_string().contains("unknown_field"), "{error}");
    }
}

#[test]
fn wrong_types_report_the_field_code_or_invalid_field_type() {
    let cases: Vec<(Value, ManifestReason, &str)> = vec![
        (
            json!({"id": 5, "runtime": {"kind": "in-process"}}),
            ManifestReason::InvalidExtensionId,
            "/id",
        ),
        (
            json!({"id": "e", "runtime": "in-process"}),
            ManifestReason::InvalidRuntime,
            "/runtime",
        ),
        (
            json!({"id": "e", "runtime": {}}),
            ManifestReason::MissingField,
            "/runtime/kind",
        ),
        (
            json!({"id": "e", "runtime": {"kind": 1}}),
            ManifestReason::InvalidRuntime,
            "/runtime/kind",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "process"}}),
            ManifestReason::MissingField,
            "/runtime/command",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "process", "command": "x", "args": "a b"}}),
            ManifestReason::InvalidRuntimeArguments,
            "/runtime/args",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "process", "command": "x", "env": {"A": "1"}}}),
            ManifestReason::InvalidRuntimeEnv,
            "/runtime/env",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "process", "command": "x", "env": ["A", "A"]}}),
            ManifestReason::InvalidRuntimeEnv,
            "/runtime/env/1",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "permissions": "tools.register"}),
            ManifestReason::InvalidFieldType,
            "/permissions",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "permissions": [1]}),
            ManifestReason::UnknownPermission,
            "/permissions/0",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "hooks": {}}),
            ManifestReason::InvalidFieldType,
            "/hooks",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "deferred": []}),
            ManifestReason::InvalidFieldType,
            "/deferred",
        ),
        (
            with_tools(json!({})),
            ManifestReason::InvalidFieldType,
            "/deferred/tools",
        ),
        (
            with_tools(json!(["t"])),
            ManifestReason::InvalidFieldType,
            "/deferred/tools/0",
        ),
        (
            with_tools(json!([{"description": "d", "inputSchema": {}}])),
            ManifestReason::MissingField,
            "/deferred/tools/0/name",
        ),
        (
            with_tools(json!([{"name": "t", "inputSchema": {}}])),
            ManifestReason::MissingField,
            "/deferred/tools/0/description",
        ),
        (
            with_tools(json!([{"name": "t", "description": "d"}])),
            ManifestReason::MissingField,
            "/deferred/tools/0/inputSchema",
        ),
        (
            with_tools(json!([{"name": "t", "description": 3, "inputSchema": {}}])),
            ManifestReason::InvalidDeclaredToolDescription,
            "/deferred/tools/0/description",
        ),
        (
            with_providers(json!([{"id": "p"}])),
            ManifestReason::MissingField,
            "/deferred/providers/0/displayName",
        ),
        (
            with_providers(json!([{"id": "p", "displayName": "P", "configSchema": "x"}])),
            ManifestReason::InvalidProviderConfigSchema,
            "/deferred/providers/0/configSchema",
        ),
        (
            with_providers(provider_with_models(json!({}))),
            ManifestReason::InvalidFieldType,
            "/deferred/providers/0/models",
        ),
        (
            with_providers(provider_with_models(
                json!([{"id": "m", "capabilities": [true]}]),
            )),
            ManifestReason::InvalidModelCapabilities,
            "/deferred/providers/0/models/0/capabilities",
        ),
        (
            json!({"id": "e", "runtime": {"kind": "in-process"}, "deferred": {"lifecycle": 1}}),
            ManifestReason::InvalidLifecycle,
            "/deferred/lifecycle",
        ),
    ];
    for (value, reason, pointer) in cases {
        let error = parse(&value).unwrap_err();
        assert_eq!(
            (error.reason(), error.pointer()),
            (reason, pointer),
            "{value}"
        );
    }
}

#[test]
fn list_bounds_hold_at_both_edges() {
    let tools = |n: usize| {
        with_tools(Value::Array(
            (0..n).map(|i| tool(&format!("t{i}"))).collect(),
        ))
    };
    assert_eq!(parse(&tools(256)).unwrap().declared_tools().len(), 256);
    assert_eq!(
        parse(&tools(257)).unwrap_err().reason(),
        ManifestReason::TooManyDeclaredTools
    );

    let providers = |n: usize| {
        with_providers(Value::Array(
            (0..n)
                .map(|i| json!({"id": format!("p{i}"), "displayName": "P"}))
                .collect(),
        ))
    };
    assert_eq!(
        parse(&providers(16)).unwrap().declared_providers().len(),
        16
    );
    assert_eq!(
        parse(&providers(17)).unwrap_err().reason(),
        ManifestReason::TooManyDeclaredProviders
    );

    let models = |n: usize| {
        with_providers(provider_with_models(Value::Array(
            (0..n).map(|i| json!({"id": format!("m{i}")})).collect(),
        )))
    };
    assert_eq!(
        parse(&models(64)).unwrap().declared_providers()[0]
            .models()
            .len(),
        64
    );
    assert_eq!(
        parse(&models(65)).unwrap_err().reason(),
        ManifestReason::TooManyDeclaredModels
    );
}

#[test]
fn text_bounds_count_bytes_at_both_edges() {
    let described = |description: &str| {
        with_tools(json!([{"name": "t", "description": description, "inputSchema": {}}]))
    };
    assert!(parse(&described("x")).is_ok());
    assert!(parse(&described(&"x".repeat(1024))).is_ok());
    assert!(
        parse(&described(&"é".repeat(512))).is_ok(),
        "1,024 bytes in 512 characters"
    );
    assert!(
        parse(&described("line one\nline two")).is_ok(),
        "descriptions may span lines"
    );
    for bad in [
        "",
        " ",
        "\n\t ",
        &"x".repeat(1025),
        &format!("{}a", "é".repeat(512)),
    ] {
        assert_eq!(
            parse(&described(bad)).unwrap_err().reason(),
            ManifestReason::InvalidDeclaredToolDescription,
            "{bad:.20?}"
        );
    }

    let named = |name: &str| with_providers(json!([{"id": "p", "displayName": name}]));
    assert!(parse(&named("P")).is_ok());
    assert!(parse(&named(&"x".repeat(256))).is_ok());
    assert!(parse(&named("Modèle ✓")).is_ok());
    for bad in ["", "  ", &"x".repeat(257)] {
        assert_eq!(
            parse(&named(bad)).unwrap_err().reason(),
            ManifestReason::InvalidProviderDisplayName,
            "{bad:.20?}"
        );
    }
    // Control characters are text hygiene, with their own code.
    for bad in ["a\nb", "a\u{0}", "a\u{7f}", "a\u{9f}"] {
        assert_eq!(
            parse(&named(bad)).unwrap_err().reason(),
            ManifestReason::ProviderDisplayNameControlCharacter,
            "{bad:.20?}"
        );
    }
}

#[test]
fn schemas_are_capped_at_64_kib_of_canonical_json() {
    // `{"d":"…"}` is 8 bytes plus the string.
    let sized = |bytes: usize| {
        with_tools(json!([{"name": "t", "description": "d",
        "inputSchema": {"d": "x".repeat(bytes - 8)}}]))
    };
    assert!(parse(&sized(65_536)).is_ok());
    let error = parse(&sized(65_537)).unwrap_err();
    assert_eq!(
        error.reason(),
        ManifestReason::InvalidDeclaredToolInputSchema
    );
    assert!(error.message().contains("65537"), "{}", error.message());
    // Insignificant whitespace in the file does not count.
    let mut text = sized(65_536).to_string();
    text = text.replace(":", " :  ");
    assert!(parse_manifest(&text).is_ok());
}

#[test]
fn capabilities_are_absent_or_an_object_of_booleans() {
    let caps = |c: Value| {
        with_providers(provider_with_models(
            json!([{"id": "m", "capabilities": c}]),
        ))
    };
    assert!(parse(&caps(json!({}))).is_ok());
    assert!(parse(&caps(json!({"vision": true, "tools": false}))).is_ok());
    assert!(
        parse(&caps(Value::Null)).unwrap().declared_providers()[0].models()[0]
            .capabilities()
            .is_none()
    );
    for bad in [
        json!({"vision": 1}),
        json!({"vision": null}),
        json!(true),
        json!("vision"),
    ] {
        assert_eq!(
            parse(&caps(bad)).unwrap_err().reason(),
            ManifestReason::InvalidModelCapabilities
        );
    }
}

#[test]
fn model_ids_need_only_be_unique_within_their_provider() {
    let value = with_providers(json!([
        {"id": "a", "displayName": "A", "models": [{"id": "m"}]},
        {"id": "b", "displayName": "B", "models": [{"id": "m"}]}
    ]));
    assert!(parse(&value).is_ok());
}

#[test]
fn retired_keys_are_accepted_with_one_notice_and_change_nothing() {
    let plain = parse(&full()).unwrap();
    for retired in [
        json!(null),
        json!([]),
        json!({"any": ["thing", 1]}),
        json!("x"),
        json!(5),
    ] {
        let mut value = full();
        value["deferred"]["context_providers"] = retired;
        value["permissions"] = json!([
            "context_providers.register",
            "tools.register",
            "providers.register",
            "context_providers.register",
            "hooks.subscribe"
        ]);
        let (manifest, notices) = parse_manifest(&value.to_string()).unwrap();
        assert_eq!(manifest, plain, "retired keys must not change the manifest");
        let keys: Vec<(RetiredKey, &str)> =
            notices.iter().map(|n| (n.key(), n.pointer())).collect();
        assert_eq!(
            keys,
            [
                (
                    RetiredKey::ContextProvidersRegisterPermission,
                    "/permissions/0"
                ),
                (
                    RetiredKey::DeferredContextProviders,
                    "/deferred/context_providers"
                ),
            ]
        );
        for notice in &notices {
            let line = notice.to_string();
            assert!(!line.contains('\n') && line.contains("retired"), "{line}");
        }
    }
    // Alone, the retired block leaves a legacy-eager extension legacy-eager.
    let value = json!({"id": "e", "runtime": {"kind": "in-process"},
        "permissions": ["context_providers.register"], "deferred": {"context_providers": {"p": 1}}});
    let (manifest, notices) = parse_manifest(&value.to_string()).unwrap();
    assert_eq!(manifest.classification(), Classification::LegacyEager);
    assert_eq!(notices.len(), 2);
    assert!(manifest.permissions().is_empty());
}

#[test]
fn names_accepted_by_id_1_survive_and_refused_ones_are_refused() {
    let long = "x".repeat(64);
    for name in [
        "a",
        "_lead",
        "9lives",
        "AZaz09_-.tail",
        "a.-",
        long.as_str(),
    ] {
        assert!(exthost::validate_id_segment(name).is_ok());
        let value = json!({
            "id": name, "runtime": {"kind": "in-process"},
            "permissions": ["tools.register", "providers.register", "hooks.subscribe"],
            "hooks": [name], "dependencies": ["some-other-extension"],
            "deferred": {"tools": [tool(name)],
                "providers": [{"id": name, "displayName": "P", "models": [{"id": name}]}]}
        });
        let manifest = parse(&value).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(manifest.id(), name);
        assert_eq!(manifest.declared_tools()[0].name(), name);
        assert_eq!(
            manifest.dormant_tools()[0].runtime_name,
            format!("{name}:{name}")
        );
    }
    for name in [
        "",
        ".a",
        "-a",
        "a:b",
        "a/b",
        "a b",
        "é",
        "a\u{0}",
        &"x".repeat(65),
    ] {
        assert!(exthost::validate_id_segment(name).is_err());
        let error = parse(&with_tools(json!([tool(name)]))).unwrap_err();
        assert_eq!(
            error.reason(),
            ManifestReason::InvalidDeclaredToolName,
            "{name:?}"
        );
        assert!(
            error.message().contains("identifier"),
            "{}",
            error.message()
        );
        let error = parse(&json!({"id": name, "runtime": {"kind": "in-process"}})).unwrap_err();
        assert_eq!(error.reason(), ManifestReason::InvalidExtensionId);
        assert_eq!(error.extension_id(), None);
    }
}

#[test]
fn errors_carry_the_extension_id_once_it_is_valid() {
    let mut value = full();
    value["deferred"]["tools"][0]["name"] = json!("bad name");
    let error = parse(&value).unwrap_err();
    assert_eq!(error.extension_id(), Some("git-tools"));
    assert_eq!(error.file(), None);
    let text = error.to_string();
    assert!(
        text.contains("invalid_declared_tool_name") && text.contains("/deferred/tools/0/name"),
        "{text}"
    );
}

#[test]
fn messages_echo_only_a_short_escaped_prefix() {
    let key = format!("\u{1b}[31m{}", "k".repeat(10_000));
    let mut value = minimal();
    value[key.as_str()] = json!(1);
    let error = parse(&value).unwrap_err();
    assert_eq!(error.reason(), ManifestReason::UnknownField);
    assert!(error.message().len() < 400, "{}", error.message().len());
    assert!(!error.message().contains('\u{1b}'));
    assert_eq!(
        error.pointer(),
        format!("/{key}"),
        "the pointer stays exact"
    );
    let text = error.to_string();
    assert!(
        text.len() < 800 && !text.contains('\u{1b}'),
        "{}",
        text.len()
    );
}

#[test]
fn strange_inputs_are_refused_without_panicking() {
    let deep = "[".repeat(100_000);
    let cases = [
        "",
        " ",
        "null",
        "true",
        "1e999",
        "\"x\"",
        "{}",
        "{\"id\"}",
        "\u{feff}{}",
        "{\"id\":\"\\ud800\"}",
        "{\"id\":\"a\"} {}",
        "{\"id\":\"a\",}",
        "NaN",
        deep.as_str(),
        "{\"id\":\"a\u{0}\"}",
    ];
    for text in cases {
        let error = parse_manifest(text).unwrap_err();
        assert!(REASON_CODES.contains(&error.reason_code()), "{text:.20}");
    }
    assert_eq!(
        parse_manifest(&deep).unwrap_err().reason(),
        ManifestReason::InvalidJson
    );
}

#[test]
fn duplicate_keys_are_refused_at_any_depth() {
    let text = r#"{"id":"e","runtime":{"kind":"in-process"},"permissions":["tools.register"],
        "deferred":{"tools":[{"name":"t","description":"d","inputSchema":{"type":"object","type":"string"}}]}}"#;
    let error = parse_manifest(text).unwrap_err();
    assert_eq!(error.reason(), ManifestReason::DuplicateKey);
    assert_eq!(error.pointer(), "/deferred/tools/0/inputSchema/type");
}

#[test]
fn serde_round_trips_and_deserialize_validates() {
    let manifest = parse(&full()).unwrap();
    let value = serde_json::to_value(&manifest).unwrap();
    assert_eq!(value, full(), "serialising gives the manifest back");
    let again: Manifest = serde_json::from_value(value).unwrap();
    assert_eq!(again, manifest);
    let minimal_manifest = parse(&minimal()).unwrap();
    assert_eq!(serde_json::to_value(&minimal_manifest).unwrap(), minimal());

    let error =
        serde_json::from_str::<Manifest>(r#"{"id":"e","runtime":{"kind":"in-process"},"x":1}"#)
            .unwrap_err();
    assert!(error.to_string().contains("unknown_field"), "{error}");
    let (manifest, _) = Manifest::from_value(full()).unwrap();
    assert_eq!(manifest, again);
}
