//! Classification and triggers (M-3), schema digests and the declaration
//! match (M-5), dormant tools (M-4).

use std::collections::BTreeSet;

use exthost::manifest::{
    ActivationCause, Classification, MISMATCH_REASON_CODES, Manifest, MismatchReason,
    RegisteredSchema, RegisteredTool, SchemaDigest, Trigger, TriggerKind, canonical_json, classify,
    earliest_trigger, is_triggered_by, match_tool_declarations, parse_manifest, runtime_tool_name,
    schema_digest, split_runtime_tool_name, triggers,
};
use serde_json::{Value, json};

const ALL_PERMISSIONS: [&str; 3] = ["tools.register", "providers.register", "hooks.subscribe"];

/// A manifest `x` with the given parts.
fn make(tools: &[&str], providers: &[&str], lifecycle: Option<&str>, hooks: &[&str]) -> Manifest {
    let tools: Vec<Value> = tools
        .iter()
        .map(|name| json!({"name": name, "description": format!("Tool {name}."), "inputSchema": {"type": "object"}}))
        .collect();
    let providers: Vec<Value> = providers
        .iter()
        .map(|id| json!({"id": id, "displayName": id}))
        .collect();
    let mut deferred = json!({"tools": tools, "providers": providers});
    if let Some(lifecycle) = lifecycle {
        deferred["lifecycle"] = json!(lifecycle);
    }
    let value = json!({
        "id": "x", "runtime": {"kind": "in-process"},
        "permissions": ALL_PERMISSIONS, "hooks": hooks, "deferred": deferred
    });
    parse_manifest(&value.to_string()).unwrap().0
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn each_class_and_its_earliest_trigger() {
    let hook = Trigger::HookEvent {
        events: strings(&["session.start", "tool.after"]),
    };
    let provider = Trigger::ProviderSelection {
        providers: strings(&["p"]),
    };
    let tool = Trigger::ToolCall {
        tools: strings(&["x:t", "x:u"]),
    };
    let hooks = ["session.start", "tool.after"];
    let cases: Vec<(Manifest, Classification, Vec<Trigger>)> = vec![
        (
            make(&[], &[], None, &[]),
            Classification::LegacyEager,
            vec![Trigger::Eager],
        ),
        (
            make(&[], &[], None, &hooks),
            Classification::LegacyEager,
            vec![Trigger::Eager],
        ),
        (
            make(&["t", "u"], &[], None, &[]),
            Classification::ToolOnly,
            vec![tool.clone()],
        ),
        (
            make(&[], &["p"], None, &[]),
            Classification::Provider,
            vec![provider.clone()],
        ),
        (
            make(&[], &[], Some("hook"), &hooks),
            Classification::HookLifecycle,
            vec![hook.clone()],
        ),
        (
            make(&[], &[], Some("user"), &[]),
            Classification::UiSidecar,
            vec![Trigger::UserAction],
        ),
        (
            make(&[], &[], Some("user"), &hooks),
            Classification::UiSidecar,
            vec![Trigger::UserAction],
        ),
        (
            make(&["t", "u"], &["p"], None, &[]),
            Classification::Mixed,
            vec![provider.clone(), tool.clone()],
        ),
        (
            make(&["t", "u"], &[], Some("hook"), &hooks),
            Classification::Mixed,
            vec![hook.clone(), tool.clone()],
        ),
        (
            make(&[], &["p"], Some("hook"), &hooks),
            Classification::Mixed,
            vec![hook.clone(), provider.clone()],
        ),
        (
            make(&["t", "u"], &["p"], Some("hook"), &hooks),
            Classification::Mixed,
            vec![hook, provider, tool],
        ),
        (
            make(&["t", "u"], &["p"], None, &hooks),
            Classification::Mixed,
            {
                vec![
                    Trigger::ProviderSelection {
                        providers: strings(&["p"]),
                    },
                    Trigger::ToolCall {
                        tools: strings(&["x:t", "x:u"]),
                    },
                ]
            },
        ),
    ];
    for (manifest, class, expected) in cases {
        assert_eq!(classify(&manifest), class, "{manifest:?}");
        assert_eq!(manifest.classification(), class);
        assert_eq!(triggers(&manifest), expected, "{manifest:?}");
        assert_eq!(earliest_trigger(&manifest), expected[0]);
        assert_eq!(manifest.earliest_trigger(), expected[0]);
        let kinds: Vec<TriggerKind> = expected.iter().map(Trigger::kind).collect();
        assert!(
            kinds.windows(2).all(|pair| pair[0] < pair[1]),
            "earliest first"
        );
    }
}

#[test]
fn class_names_and_trigger_order_are_as_documented() {
    let names: Vec<&str> = [
        Classification::LegacyEager,
        Classification::ToolOnly,
        Classification::Provider,
        Classification::HookLifecycle,
        Classification::UiSidecar,
        Classification::Mixed,
    ]
    .iter()
    .map(|class| class.as_str())
    .collect();
    assert_eq!(
        names,
        [
            "legacy-eager",
            "tool-only",
            "provider",
            "hook-lifecycle",
            "ui-sidecar",
            "mixed"
        ]
    );
    assert!(TriggerKind::Eager < TriggerKind::HookEvent);
    assert!(TriggerKind::HookEvent < TriggerKind::ProviderSelection);
    assert!(TriggerKind::ProviderSelection < TriggerKind::ToolCall);
    assert!(TriggerKind::ToolCall < TriggerKind::UserAction);
}

#[test]
fn empty_declarations_are_not_usable() {
    let value = json!({"id": "x", "runtime": {"kind": "in-process"},
        "deferred": {"tools": [], "providers": []}});
    let (manifest, _) = parse_manifest(&value.to_string()).unwrap();
    assert_eq!(manifest.classification(), Classification::LegacyEager);
    let value = json!({"id": "x", "runtime": {"kind": "in-process"}, "deferred": {"lifecycle": "user", "tools": []}});
    assert_eq!(
        parse_manifest(&value.to_string())
            .unwrap()
            .0
            .classification(),
        Classification::UiSidecar
    );
}

#[test]
fn what_triggers_what() {
    use ActivationCause as C;
    let eager = make(&[], &[], None, &["ev"]);
    let tools = make(&["t"], &[], None, &["ev"]);
    let providers = make(&[], &["p"], None, &[]);
    let hooked = make(&[], &[], Some("hook"), &["ev"]);
    let sidecar = make(&[], &[], Some("user"), &["ev"]);
    let mixed = make(&["t"], &["p"], Some("hook"), &["ev"]);

    let causes = [
        C::HostStart,
        C::HookEvent { event: "ev" },
        C::HookEvent { event: "other" },
        C::ProviderSelection {
            extension_id: "x",
            provider_id: "p",
        },
        C::ProviderSelection {
            extension_id: "y",
            provider_id: "p",
        },
        C::ProviderSelection {
            extension_id: "x",
            provider_id: "q",
        },
        C::ToolCall {
            runtime_name: "x:t",
        },
        C::ToolCall {
            runtime_name: "x:T",
        },
        C::ToolCall {
            runtime_name: "y:t",
        },
        C::ToolCall { runtime_name: "t" },
        C::ToolCall {
            runtime_name: "x:t:t",
        },
        C::ToolCall { runtime_name: "x:" },
        C::UserAction { extension_id: "x" },
        C::UserAction { extension_id: "y" },
    ];
    //                         host  ev    other px   py   pq   x:t  x:T  y:t  t    x:t:t x:   ux   uy
    let expected: [(&Manifest, [bool; 14]); 6] = [
        (
            &eager,
            [
                true, false, false, false, false, false, false, false, false, false, false, false,
                false, false,
            ],
        ),
        (
            &tools,
            [
                false, false, false, false, false, false, true, false, false, false, false, false,
                false, false,
            ],
        ),
        (
            &providers,
            [
                false, false, false, true, false, false, false, false, false, false, false, false,
                false, false,
            ],
        ),
        (
            &hooked,
            [
                false, true, false, false, false, false, false, false, false, false, false, false,
                false, false,
            ],
        ),
        (
            &sidecar,
            [
                false, false, false, false, false, false, false, false, false, false, false, false,
                true, false,
            ],
        ),
        (
            &mixed,
            [
                false, true, false, true, false, false, true, false, false, false, false, false,
                false, false,
            ],
        ),
    ];
    for (manifest, row) in expected {
        for (cause, want) in causes.iter().zip(row) {
            assert_eq!(
                is_triggered_by(manifest, cause),
                want,
                "{:?} / {cause:?}",
                manifest.classification()
            );
            assert_eq!(manifest.is_triggered_by(cause), want);
        }
    }
}

#[test]
fn digests_ignore_key_order_and_whitespace() {
    let a: Value = serde_json::from_str(
        r#"{"type":"object","properties":{"path":{"type":"string","description":"a"},"n":{"type":"integer"}},"required":["path"]}"#,
    )
    .unwrap();
    let b: Value = serde_json::from_str(
        "{\n  \"required\" : [ \"path\" ],\n  \"properties\": {\n    \"n\": {\"type\": \"integer\"},\n    \"path\": {\"description\": \"a\", \"type\": \"string\"}\n  },\n  \"type\": \"object\"\n}",
    )
    .unwrap();
    assert_eq!(schema_digest(&a), schema_digest(&b));
    assert_eq!(canonical_json(&a), canonical_json(&b));
    assert_eq!(SchemaDigest::of(&a), schema_digest(&b));
}

#[test]
fn digests_differ_for_changed_schemas() {
    let base =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    let changes = [
        json!({"type": "object", "properties": {"a": {"type": "number"}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"b": {"type": "string"}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": []}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "x": null}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]}),
        json!({"type": "object", "properties": {"a": {"type": "string "}}, "required": ["a"]}),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": "a"}),
    ];
    let mut seen = BTreeSet::new();
    seen.insert(schema_digest(&base));
    for changed in &changes {
        assert!(seen.insert(schema_digest(changed)), "{changed}");
    }
    // Array order is significant; 1 and 1.0 are different numbers.
    assert_ne!(
        schema_digest(&json!({"e": [1, 2]})),
        schema_digest(&json!({"e": [2, 1]}))
    );
    assert_ne!(
        schema_digest(&json!({"e": 1})),
        schema_digest(&json!({"e": 1.0}))
    );
}

#[test]
fn known_answer_digests() {
    // Each expected value is `printf '<canonical text>' | sha256sum`.
    let cases = [
        (
            json!({"a": 1}),
            r#"{"a":1}"#,
            "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862",
        ),
        (
            json!({}),
            "{}",
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
        ),
        (
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}}),
            r#"{"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}"#,
            "923b083c9bcab2e3d3e07c7d9b4401688ad9f3d5e2c2f0c48fcd43052bdcb71b",
        ),
        (
            json!({"b": "é\n", "a": [1, 2]}),
            "{\"a\":[1,2],\"b\":\"é\\n\"}",
            "e041f2fccac9e7b3c64112b35a109ae33be7bb8ec4ebe3dc1a009cff7806baad",
        ),
    ];
    for (value, canonical, hex) in cases {
        assert_eq!(canonical_json(&value), canonical);
        assert_eq!(schema_digest(&value).to_hex(), hex);
        assert_eq!(schema_digest(&value).to_string(), hex);
        assert_eq!(
            serde_json::to_value(schema_digest(&value)).unwrap(),
            json!(hex)
        );
    }
}

#[test]
fn declared_tools_carry_the_digest_of_their_schema() {
    let value = json!({"id": "x", "runtime": {"kind": "in-process"}, "permissions": ["tools.register"],
        "deferred": {"tools": [{"name": "t", "description": "d", "inputSchema": {"a": 1}}]}});
    let (manifest, _) = parse_manifest(&value.to_string()).unwrap();
    assert_eq!(
        manifest.declared_tools()[0].schema_digest().to_hex(),
        "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"
    );
}

fn declared() -> Manifest {
    let value = json!({
        "id": "x", "runtime": {"kind": "in-process"}, "permissions": ["tools.register"],
        "deferred": {"tools": [
            {"name": "a", "description": "Tool a.", "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}}},
            {"name": "b", "description": "Tool b.", "inputSchema": {"type": "object"}}
        ]}
    });
    parse_manifest(&value.to_string()).unwrap().0
}

#[test]
fn matching_registrations_pass_in_any_order_and_key_order() {
    let manifest = declared();
    let a_schema = json!({"properties": {"p": {"type": "string"}}, "type": "object"});
    let b_schema = json!({"type": "object"});
    let registered = [
        RegisteredTool::new("b", "Tool b.", &b_schema),
        RegisteredTool::new("a", "Tool a.", &a_schema),
    ];
    assert_eq!(manifest.match_registered_tools(&registered), Ok(()));
    let by_digest = [
        RegisteredTool::with_digest("a", "Tool a.", schema_digest(&a_schema)),
        RegisteredTool {
            name: "b",
            description: "Tool b.",
            schema: RegisteredSchema::Digest(schema_digest(&b_schema)),
        },
    ];
    assert_eq!(
        match_tool_declarations(manifest.declared_tools(), &by_digest),
        Ok(())
    );
    assert_eq!(match_tool_declarations(&[], &[]), Ok(()));
}

#[test]
fn every_mismatch_reason_in_check_order() {
    let manifest = declared();
    let a = json!({"type": "object", "properties": {"p": {"type": "string"}}});
    let b = json!({"type": "object"});
    let other = json!({"type": "object", "properties": {}});
    let good_a = RegisteredTool::new("a", "Tool a.", &a);
    let good_b = RegisteredTool::new("b", "Tool b.", &b);
    let extra = RegisteredTool::new("c", "Tool c.", &b);
    let cases: Vec<(Vec<RegisteredTool<'_>>, MismatchReason, &str)> = vec![
        // Undeclared is checked first, even with a duplicate and a missing tool present.
        (
            vec![good_a, good_a, extra],
            MismatchReason::UndeclaredToolRegistered,
            "c",
        ),
        (
            vec![good_a, good_b, good_a],
            MismatchReason::DuplicateRegisteredTool,
            "a",
        ),
        (
            vec![good_b, good_b],
            MismatchReason::DuplicateRegisteredTool,
            "b",
        ),
        (vec![good_b], MismatchReason::DeclaredToolNotRegistered, "a"),
        (vec![], MismatchReason::DeclaredToolNotRegistered, "a"),
        (
            vec![RegisteredTool::new("a", "Tool a", &a), good_b],
            MismatchReason::RegisteredToolDescriptionMismatch,
            "a",
        ),
        (
            vec![good_a, RegisteredTool::new("b", "Tool b.", &other)],
            MismatchReason::RegisteredToolSchemaDigestMismatch,
            "b",
        ),
        // Description before schema within a tool; declaration order across tools.
        (
            vec![
                RegisteredTool::new("b", "x", &other),
                RegisteredTool::new("a", "Tool a.", &other),
            ],
            MismatchReason::RegisteredToolSchemaDigestMismatch,
            "a",
        ),
        (
            vec![good_b, RegisteredTool::new("a", "y", &other)],
            MismatchReason::RegisteredToolDescriptionMismatch,
            "a",
        ),
    ];
    let mut produced = BTreeSet::new();
    for (registered, reason, tool) in cases {
        let error = manifest.match_registered_tools(&registered).unwrap_err();
        assert_eq!(
            (error.reason(), error.tool()),
            (reason, tool),
            "{registered:?}"
        );
        assert_eq!(error.code(), "EXTENSION_ACTIVATION_FAILED");
        assert_eq!(error.reason_code(), reason.as_str());
        assert!(error.to_string().contains(reason.as_str()));
        assert!(!error.message().is_empty());
        produced.insert(reason.as_str());
    }
    // The tool reasons; the provider ones (M-8) are produced by
    // `core/src/machine/providers/tests.rs::provider_declaration_reasons_in_check_order`.
    let listed: BTreeSet<&str> = MISMATCH_REASON_CODES
        .iter()
        .copied()
        .filter(|code| !MismatchReason::from_code(code).unwrap().is_provider())
        .collect();
    assert_eq!(produced, listed);
    for code in MISMATCH_REASON_CODES {
        assert!(
            !exthost::manifest::REASON_CODES.contains(code),
            "{code} is in both lists"
        );
        assert_eq!(
            MismatchReason::from_code(code).map(MismatchReason::as_str),
            Some(*code)
        );
    }
    assert_eq!(MismatchReason::ALL.len(), MISMATCH_REASON_CODES.len());
}

#[test]
fn digest_mismatch_names_both_digests() {
    let manifest = declared();
    let a = json!({"type": "object"});
    let b = json!({"type": "object"});
    let error = manifest
        .match_registered_tools(&[
            RegisteredTool::new("a", "Tool a.", &a),
            RegisteredTool::new("b", "Tool b.", &b),
        ])
        .unwrap_err();
    assert!(error.message().contains(&schema_digest(&a).to_hex()));
    assert!(
        error
            .message()
            .contains(&manifest.declared_tools()[0].schema_digest().to_hex())
    );
}

#[test]
fn dormant_tools_mirror_the_declarations() {
    let manifest = declared();
    let dormant = manifest.dormant_tools();
    assert_eq!(dormant.len(), 2);
    for (tool, declared) in dormant.iter().zip(manifest.declared_tools()) {
        assert_eq!(tool.runtime_name, format!("x:{}", declared.name()));
        assert_eq!(tool.extension_id, "x");
        assert_eq!(tool.tool_name, declared.name());
        assert_eq!(tool.description, declared.description());
        assert_eq!(&tool.input_schema, declared.input_schema());
        assert_eq!(tool.schema_digest, schema_digest(declared.input_schema()));
    }
    assert!(make(&[], &["p"], None, &[]).dormant_tools().is_empty());
}

#[test]
fn runtime_names_join_and_split_two_id_1_segments() {
    assert_eq!(
        runtime_tool_name("git", "status").as_deref(),
        Some("git:status")
    );
    assert_eq!(runtime_tool_name("g:t", "status"), None);
    assert_eq!(runtime_tool_name("git", ""), None);
    assert_eq!(runtime_tool_name(&"e".repeat(65), "t"), None);
    assert_eq!(
        split_runtime_tool_name("git:status"),
        Some(("git", "status"))
    );
    for bad in ["git", "git:", ":status", "a:b:c", "a:.b", "é:b", ""] {
        assert_eq!(split_runtime_tool_name(bad), None, "{bad}");
    }
}
