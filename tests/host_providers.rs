//! M-8 in the host, with real extension code: providers registered through
//! the activation context, published with the tools in one commit (H-4),
//! rolled back with them, matched against manifest declarations (M-5),
//! started by `select_provider` (the provider trigger of M-3), swapped by a
//! reload (H-12) and removed at shutdown (H-11). Every test is bounded in
//! time (`within`), so a wedge fails instead of hanging.

mod support;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use exthost::core::{OpKind, Owner, Status};
use exthost::host::{
    ActivationContext, BoxFuture, CoreCall, Extension, ExtensionDefinition, ExtensionError,
    ExtensionHost, HostError, InProcessFactories, ModelSpec, ProviderSpec, PublicCall,
    ToolDescriptor, TraceEvent,
};
use exthost::manifest::schema_digest;
use serde_json::{Value, json};
use support::*;

/// What one generation of a provider extension registers.
#[derive(Clone, Default)]
struct Plan {
    tools: Vec<String>,
    providers: Vec<ProviderSpec>,
    disposers: usize,
    fail: bool,
}

impl Plan {
    /// A plan that registers this one provider and nothing else.
    fn providing(provider: ProviderSpec) -> Self {
        Self {
            providers: vec![provider],
            ..Self::default()
        }
    }
}

/// A real extension: it registers what its current plan says, logging every
/// step. The plan is shared, so a test can change it between generations.
#[derive(Clone)]
struct ProviderExt {
    id: String,
    log: Log,
    plan: Arc<Mutex<Plan>>,
    factory_calls: Arc<AtomicUsize>,
    /// Results of hostile registrations, for the test to read.
    refusals: Arc<Mutex<Vec<HostError>>>,
    hostile: Arc<Mutex<Vec<ProviderSpec>>>,
    keep: Arc<Mutex<Option<ActivationContext>>>,
}

impl ProviderExt {
    fn new(id: &str, log: &Log, plan: Plan) -> Self {
        Self {
            id: id.into(),
            log: log.clone(),
            plan: Arc::new(Mutex::new(plan)),
            factory_calls: Arc::default(),
            refusals: Arc::default(),
            hostile: Arc::default(),
            keep: Arc::default(),
        }
    }

    fn set_plan(&self, plan: Plan) {
        *self.plan.lock().unwrap() = plan;
    }

    fn factory(&self) -> impl Fn() -> Result<ProviderExt, ExtensionError> + Send + Sync + 'static {
        let me = self.clone();
        move || {
            me.factory_calls.fetch_add(1, Ordering::SeqCst);
            me.log.push(format!("{}:factory", me.id));
            Ok(me.clone())
        }
    }

    fn definition(&self) -> ExtensionDefinition {
        ExtensionDefinition::new(self.id.clone(), self.factory())
    }

    fn factory_calls(&self) -> usize {
        self.factory_calls.load(Ordering::SeqCst)
    }
}

impl Extension for ProviderExt {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let plan = self.plan.lock().unwrap().clone();
            let id = self.id.clone();
            self.log.push(format!("{id}:activate"));
            *self.keep.lock().unwrap() = Some(cx.clone());
            for i in 0..plan.disposers {
                let log = self.log.clone();
                let id = id.clone();
                cx.on_dispose(move || async move {
                    log.push(format!("{id}:disposer{i}"));
                    Ok(())
                })?;
            }
            let hostile = self.hostile.lock().unwrap().clone();
            for spec in hostile {
                let refused = cx.register_provider(spec).unwrap_err();
                self.refusals.lock().unwrap().push(refused);
            }
            for name in &plan.tools {
                cx.register_tool(
                    ToolDescriptor::new(name.clone(), format!("{name} tool"), schema()),
                    |input: Value| async move { Ok(input) },
                )?;
            }
            for provider in plan.providers {
                cx.register_provider(provider)?;
            }
            if plan.fail {
                return Err(ExtensionError::new("activate failed on purpose"));
            }
            Ok(())
        })
    }

    fn dispose(&self) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            self.log.push(format!("{}:dispose", self.id));
            Ok(())
        })
    }
}

fn acme() -> ProviderSpec {
    ProviderSpec::new("acme", "Acme Models")
        .config_schema(json!({"type": "object", "properties": {"key": {"type": "string"}}}))
        .model(ModelSpec::new("fast").capability("vision", false))
        .model(ModelSpec::new("large").capability("vision", true))
}

/// The manifest declaration of [`acme`], word for word.
fn acme_declared() -> Value {
    json!({
        "id": "acme",
        "displayName": "Acme Models",
        "configSchema": {"properties": {"key": {"type": "string"}}, "type": "object"},
        "models": [
            {"id": "fast", "capabilities": {"vision": false}},
            {"id": "large", "capabilities": {"vision": true}}
        ]
    })
}

fn write_manifest(dir: &Path, id: &str, providers: Value) {
    let folder = dir.join(id);
    std::fs::create_dir_all(&folder).unwrap();
    let manifest = json!({
        "id": id,
        "runtime": {"kind": "in-process"},
        "permissions": ["providers.register"],
        "deferred": {"providers": providers}
    });
    std::fs::write(
        folder.join("extension.json"),
        serde_json::to_string_pretty(&manifest).unwrap(),
    )
    .unwrap();
}

fn provider_ids(host: &ExtensionHost) -> Vec<String> {
    host.providers().ids()
}

#[tokio::test]
async fn a_registered_provider_is_published_with_the_tools_in_one_snapshot() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let ext = ProviderExt::new(
            "acme-ext",
            &log,
            Plan {
                tools: vec!["complete".into()],
                providers: vec![acme()],
                ..Plan::default()
            },
        );
        host.discover([ext.definition()]).unwrap();
        let before = host.providers();
        assert!(
            before.is_empty(),
            "discovery runs no code, publishes nothing"
        );
        host.activate("acme-ext").await.unwrap();

        let providers = host.providers();
        assert_eq!(providers.ids(), ["acme"]);
        let p = providers.get("acme").unwrap();
        assert_eq!(p.display_name(), "Acme Models");
        assert_eq!(p.owner(), &Owner::extension("acme-ext"));
        let schema = json!({"type": "object", "properties": {"key": {"type": "string"}}});
        assert_eq!(p.config_schema(), Some(schema.clone()));
        assert_eq!(
            p.config_schema_digest(),
            Some(schema_digest(&schema).to_hex().as_str())
        );
        let models: Vec<&str> = p.models().iter().map(|m| m.id.as_str()).collect();
        assert_eq!(models, ["fast", "large"]);
        assert!(p.has_capability("large", "vision"));
        assert!(!p.has_capability("fast", "vision"));
        assert!(!p.has_capability("fast", "audio"));
        // The same publication holds the tools.
        assert_eq!(providers.tools().names(), ["complete"]);
        // A snapshot is detached: the one taken before stays empty.
        assert!(before.is_empty() && before.tools().is_empty());

        let selected = host.select_provider("acme", "large").await.unwrap();
        assert!(!selected.activated, "already live: nothing runs");
        assert_eq!(selected.model.id, "large");
        assert_eq!(selected.provider.id, "acme");
        assert_eq!(ext.factory_calls(), 1);
        host.dispose().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_provider_clash_fails_the_activation_and_rolls_back_its_tools_too() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let first = ProviderExt::new("first", &log, Plan::providing(acme()));
        let second = ProviderExt::new(
            "second",
            &log,
            Plan {
                tools: vec!["second_tool".into()],
                providers: vec![
                    ProviderSpec::new("other", "Other"),
                    ProviderSpec::new("acme", "Acme again"),
                ],
                disposers: 2,
                ..Plan::default()
            },
        );
        let twice = ProviderExt::new(
            "twice",
            &log,
            Plan {
                providers: vec![ProviderSpec::new("dup", "A"), ProviderSpec::new("dup", "B")],
                ..Plan::default()
            },
        );
        host.discover([first.definition(), second.definition(), twice.definition()])
            .unwrap();
        host.activate("first").await.unwrap();
        let err = host.activate("second").await.unwrap_err();
        assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED");
        assert_eq!(err.cause_code(), Some("EXTENSION_PROVIDER_CLASH"));
        assert_eq!(host.status("second"), Some(Status::Failed));
        assert_eq!(provider_ids(&host), ["acme"]);
        assert_eq!(
            host.providers().get("acme").unwrap().display_name(),
            "Acme Models",
            "the live provider is untouched"
        );
        assert!(
            host.tools().get("second_tool").is_none(),
            "tools rolled back"
        );
        assert_eq!(log.count("second:disposer0"), 1);
        assert_eq!(log.count("second:disposer1"), 1);
        assert_eq!(log.count("second:dispose"), 1);
        let order: Vec<String> = log
            .entries()
            .into_iter()
            .filter(|e| e.starts_with("second:dispos"))
            .collect();
        assert_eq!(
            order,
            ["second:disposer1", "second:disposer0", "second:dispose"]
        );

        // Twice the same id in one activation is a clash too.
        let err = host.activate("twice").await.unwrap_err();
        assert_eq!(err.cause_code(), Some("EXTENSION_PROVIDER_CLASH"));
        assert_eq!(provider_ids(&host), ["acme"]);

        // The host stays usable: the failed one may retry once it is fixed.
        second.set_plan(Plan {
            tools: vec!["second_tool".into()],
            providers: vec![ProviderSpec::new("other", "Other")],
            ..Plan::default()
        });
        host.activate("second").await.unwrap();
        assert_eq!(provider_ids(&host), ["acme", "other"]);
        assert!(host.tools().get("second_tool").is_some());
        host.dispose().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn select_provider_starts_a_dormant_manifest_extension_once() {
    within(async {
        let (checked, host) = host();
        let folder = tempfile::tempdir().unwrap();
        let log = Log::default();
        write_manifest(folder.path(), "acme-ext", json!([acme_declared()]));
        let ext = ProviderExt::new("acme-ext", &log, Plan::providing(acme()));
        let factories = InProcessFactories::new().with("acme-ext", ext.factory());
        host.discover_manifest_dir(folder.path(), &factories)
            .unwrap();
        assert_eq!(host.status("acme-ext"), Some(Status::Discovered));
        assert!(host.providers().is_empty(), "declared is not live");

        // A model the declaration lacks, or an unknown provider: nothing starts.
        let err = host.select_provider("acme", "huge").await.unwrap_err();
        assert_eq!(err.code(), "MODEL_NOT_FOUND");
        let err = host.select_provider("nobody", "fast").await.unwrap_err();
        assert_eq!(err.code(), "PROVIDER_NOT_FOUND");
        assert_eq!(ext.factory_calls(), 0);
        assert_eq!(host.status("acme-ext"), Some(Status::Discovered));

        let selected = host.select_provider("acme", "fast").await.unwrap();
        assert!(selected.activated, "the provider trigger started it");
        assert_eq!(selected.owner, Owner::extension("acme-ext"));
        assert_eq!(selected.model.id, "fast");
        assert_eq!(host.status("acme-ext"), Some(Status::Active));
        assert_eq!(provider_ids(&host), ["acme"]);

        // The recorded run names the selection as the activation's cause,
        // and the trace check (when `checked` drops) judges it by M-3.
        let caused = checked.recorder.events().into_iter().any(|e| {
            matches!(
                e,
                TraceEvent::Input(
                    CoreCall::Request(OpKind::Activate(id)),
                    Some(PublicCall::SelectProvider { provider, model }),
                ) if id == "acme-ext" && provider == "acme" && model == "fast"
            )
        });
        assert!(caused, "the activation is the selection's request");

        let again = host.select_provider("acme", "large").await.unwrap();
        assert!(!again.activated);
        assert_eq!(
            ext.factory_calls(),
            1,
            "an active provider is just returned"
        );
        let err = host.select_provider("acme", "huge").await.unwrap_err();
        assert_eq!(err.code(), "MODEL_NOT_FOUND");
        host.dispose().await.unwrap();
    })
    .await;
}

/// A manifest extension that registers something other than its declared
/// provider: the activation `select_provider` starts is refused with the
/// reason, rolled back, and the grant revoked.
async fn refused(registered: Vec<ProviderSpec>, reason: &str) {
    let (_checked, host) = host();
    let folder = tempfile::tempdir().unwrap();
    let log = Log::default();
    write_manifest(folder.path(), "liar", json!([acme_declared()]));
    let ext = ProviderExt::new(
        "liar",
        &log,
        Plan {
            tools: Vec::new(),
            providers: registered,
            disposers: 1,
            fail: false,
        },
    );
    let factories = InProcessFactories::new().with("liar", ext.factory());
    host.discover_manifest_dir(folder.path(), &factories)
        .unwrap();
    let err = host.select_provider("acme", "fast").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_ACTIVATION_FAILED", "{reason}: {err}");
    assert_eq!(err.cause_code(), Some(reason), "{err}");
    assert_eq!(host.status("liar"), Some(Status::Failed));
    assert!(host.providers().is_empty(), "{reason}: nothing published");
    assert_eq!(log.count("liar:disposer0"), 1, "{reason}: rolled back");
    assert_eq!(log.count("liar:dispose"), 1);

    let err = host.select_provider("acme", "fast").await.unwrap_err();
    assert_eq!(err.code(), "PROVIDER_ACTIVATION_DENIED", "{reason}");
    assert_eq!(
        ext.factory_calls(),
        1,
        "{reason}: a revoked grant starts nothing"
    );
    host.dispose().await.unwrap();
}

#[tokio::test]
async fn declaration_mismatches_are_refused_with_their_reason_and_rolled_back() {
    within(async {
        let base = || {
            ProviderSpec::new("acme", "Acme Models")
                .config_schema(json!({"type": "object", "properties": {"key": {"type": "string"}}}))
        };
        let models = |spec: ProviderSpec| {
            spec.model(ModelSpec::new("fast").capability("vision", false))
                .model(ModelSpec::new("large").capability("vision", true))
        };
        refused(
            vec![
                base()
                    .model(ModelSpec::new("fast").capability("vision", false))
                    .model(ModelSpec::new("larger").capability("vision", true)),
            ],
            "registered_provider_models_mismatch",
        )
        .await;
        refused(
            vec![base().model(ModelSpec::new("fast").capability("vision", false))],
            "registered_provider_models_mismatch",
        )
        .await;
        refused(
            vec![models(
                ProviderSpec::new("acme", "Acme Modelz").config_schema(
                    json!({"type": "object", "properties": {"key": {"type": "string"}}}),
                ),
            )],
            "registered_provider_display_name_mismatch",
        )
        .await;
        refused(
            vec![models(
                ProviderSpec::new("acme", "Acme Models").config_schema(json!({"type": "object"})),
            )],
            "registered_provider_config_schema_mismatch",
        )
        .await;
        refused(
            vec![models(ProviderSpec::new("acme", "Acme Models"))],
            "registered_provider_config_schema_mismatch",
        )
        .await;
        refused(
            vec![
                base()
                    .model(ModelSpec::new("fast").capability("vision", true))
                    .model(ModelSpec::new("large").capability("vision", true)),
            ],
            "registered_model_capabilities_mismatch",
        )
        .await;
        refused(
            vec![
                base()
                    .model(ModelSpec::new("fast"))
                    .model(ModelSpec::new("large").capability("vision", true)),
            ],
            "registered_model_capabilities_mismatch",
        )
        .await;
        refused(vec![], "declared_provider_not_registered").await;
        refused(
            vec![acme(), ProviderSpec::new("extra", "Extra")],
            "undeclared_provider_registered",
        )
        .await;
    })
    .await;
}

#[tokio::test]
async fn hostile_registrations_are_refused_clearly_and_lose_nothing() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let ext = ProviderExt::new(
            "hostile",
            &log,
            Plan {
                tools: vec!["kept".into()],
                providers: vec![acme()],
                ..Plan::default()
            },
        );
        let big = "x".repeat(70 * 1024);
        let mut many = ProviderSpec::new("many", "Many");
        for i in 0..65 {
            many = many.model(ModelSpec::new(format!("m{i}")));
        }
        let hostile = vec![
            (
                ProviderSpec::new("", "Empty id"),
                "invalid_declared_provider_id",
            ),
            (
                ProviderSpec::new("a b", "Space"),
                "invalid_declared_provider_id",
            ),
            (
                ProviderSpec::new("a:b", "Colon"),
                "invalid_declared_provider_id",
            ),
            (ProviderSpec::new("p", ""), "invalid_provider_display_name"),
            (
                ProviderSpec::new("p", "   "),
                "invalid_provider_display_name",
            ),
            (
                ProviderSpec::new("p", "x".repeat(257)),
                "invalid_provider_display_name",
            ),
            (
                ProviderSpec::new("p", "nul\u{0}here"),
                "provider_display_name_control_character",
            ),
            (
                ProviderSpec::new("p", "line\nbreak"),
                "provider_display_name_control_character",
            ),
            (
                ProviderSpec::new("p", "evil\u{202e}txt"),
                "provider_display_name_bidi_control",
            ),
            (
                ProviderSpec::new("p", "\u{200b}"),
                "provider_display_name_not_visible",
            ),
            (
                ProviderSpec::new("p", "P").config_schema(json!({"description": big})),
                "invalid_provider_config_schema",
            ),
            (
                ProviderSpec::new("p", "P").config_schema(json!(["not", "an", "object"])),
                "invalid_provider_config_schema",
            ),
            (
                ProviderSpec::new("p", "P").model(ModelSpec::new("bad model")),
                "invalid_declared_model_id",
            ),
            (
                ProviderSpec::new("p", "P")
                    .model(ModelSpec::new("m"))
                    .model(ModelSpec::new("m")),
                "duplicate_declared_model_id",
            ),
            (many, "too_many_declared_models"),
        ];
        *ext.hostile.lock().unwrap() = hostile.iter().map(|(s, _)| s.clone()).collect();
        host.discover([ext.definition()]).unwrap();
        host.activate("hostile").await.unwrap();

        let refusals = ext.refusals.lock().unwrap().clone();
        assert_eq!(refusals.len(), hostile.len());
        for (err, (spec, reason)) in refusals.iter().zip(&hostile) {
            assert_eq!(err.code(), "PROVIDER_INVALID", "{spec:?}");
            assert_eq!(err.cause_code(), Some(*reason), "{spec:?}: {err}");
            assert!(
                err.to_string().len() < 1024,
                "the message is bounded: {err}"
            );
            assert!(!err.to_string().contains('\u{0}'));
            assert!(!err.to_string().contains('\u{202e}'));
        }
        // The refusals staged nothing; the good registrations all went live.
        assert_eq!(provider_ids(&host), ["acme"]);
        assert_eq!(host.tools().names(), ["kept"]);

        // A registration after the activation settled changes nothing.
        let cx = ext.keep.lock().unwrap().clone().unwrap();
        let err = cx
            .register_provider(ProviderSpec::new("late", "Late"))
            .unwrap_err();
        assert_eq!(err.code(), "EXTENSION_CONTEXT_CLOSED");
        assert_eq!(provider_ids(&host), ["acme"]);

        // Hostile selections name nothing and start nothing.
        let long = "a".repeat(10_000);
        for (provider, model) in [
            ("", "fast"),
            ("acme", ""),
            ("\u{0}", "fast"),
            ("acme", "fast\u{202e}"),
            (long.as_str(), "fast"),
            ("acme", long.as_str()),
            ("a:b", "c"),
        ] {
            let err = host.select_provider(provider, model).await.unwrap_err();
            assert!(
                matches!(err.code(), "PROVIDER_NOT_FOUND" | "MODEL_NOT_FOUND"),
                "{err}"
            );
        }
        assert_eq!(provider_ids(&host), ["acme"]);
        assert_eq!(ext.factory_calls(), 1);
        host.dispose().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_reload_swaps_tools_and_providers_in_one_commit() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let plan = |g: &str| Plan {
            tools: vec![format!("tool_{g}")],
            providers: vec![
                ProviderSpec::new("shared", format!("Shared {g}")).model(ModelSpec::new("m")),
                ProviderSpec::new(format!("prov_{g}"), "Own"),
            ],
            ..Plan::default()
        };
        let ext = ProviderExt::new("gen", &log, plan("one"));
        let rival = ProviderExt::new(
            "rival",
            &log,
            Plan {
                providers: vec![ProviderSpec::new("taken", "Taken")],
                ..Plan::default()
            },
        );
        host.discover([ext.definition(), rival.definition()])
            .unwrap();
        host.activate("gen").await.unwrap();
        host.activate("rival").await.unwrap();

        // Readers check every snapshot while the reload runs: the tools and
        // the providers of one read are of one generation, never neither.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut readers = Vec::new();
        for _ in 0..2 {
            let host = host.clone();
            let stop = stop.clone();
            readers.push(tokio::spawn(async move {
                let mut reads = 0u64;
                while !stop.load(Ordering::SeqCst) {
                    let providers = host.providers();
                    let tools = providers.tools();
                    let one = tools.get("tool_one").is_some();
                    let two = tools.get("tool_two").is_some();
                    assert!(one != two, "exactly one generation's tools");
                    assert_eq!(providers.get("prov_one").is_some(), one, "mixed read");
                    assert_eq!(providers.get("prov_two").is_some(), two, "mixed read");
                    let shared = providers.get("shared").expect("never neither");
                    let g = if one { "Shared one" } else { "Shared two" };
                    assert_eq!(shared.display_name(), g, "mixed read");
                    reads += 1;
                    tokio::task::yield_now().await;
                }
                reads
            }));
        }
        tokio::task::yield_now().await;
        // A fresh generation that clashes with the rival fails; the old one
        // stays live, untouched.
        ext.set_plan(Plan {
            providers: vec![ProviderSpec::new("taken", "Mine")],
            ..plan("two")
        });
        let err = host.reload("gen").await.unwrap_err();
        assert_eq!(err.cause_code(), Some("EXTENSION_PROVIDER_CLASH"));
        assert_eq!(provider_ids(&host), ["shared", "prov_one", "taken"]);
        // The same ids again are fine: validated without the old generation.
        ext.set_plan(plan("two"));
        host.reload("gen").await.unwrap();
        stop.store(true, Ordering::SeqCst);
        for reader in readers {
            assert!(reader.await.unwrap() > 0);
        }
        assert_eq!(provider_ids(&host), ["taken", "shared", "prov_two"]);
        assert_eq!(
            host.providers().get("shared").unwrap().display_name(),
            "Shared two"
        );
        assert_eq!(host.tools().names(), ["tool_two"]);
        assert_eq!(
            log.count("gen:dispose"),
            2,
            "the failed and the old generation"
        );
        host.dispose().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn shutdown_removes_every_provider_and_selection_is_refused() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let ext = ProviderExt::new("acme-ext", &log, Plan::providing(acme()));
        host.discover([ext.definition()]).unwrap();
        host.activate("acme-ext").await.unwrap();
        let before = host.providers();
        host.dispose().await.unwrap();
        assert!(host.providers().is_empty());
        assert_eq!(before.ids(), ["acme"], "a snapshot taken before is kept");
        let err = host.select_provider("acme", "fast").await.unwrap_err();
        assert_eq!(err.code(), "HOST_DISPOSED");
        assert_eq!(host.status("acme-ext"), Some(Status::Disposed));
    })
    .await;
}

#[tokio::test]
async fn a_plain_definition_may_declare_providers_and_is_started_by_selection() {
    within(async {
        let (_checked, host) = host();
        let log = Log::default();
        let ext = ProviderExt::new(
            "plain",
            &log,
            Plan {
                tools: vec!["plain_tool".into()],
                providers: vec![acme()],
                ..Plan::default()
            },
        );
        let err = ext
            .definition()
            .with_declared_providers([ProviderSpec::new("bad id", "Bad")])
            .unwrap_err();
        assert_eq!(err.code(), "PROVIDER_INVALID");
        assert_eq!(err.cause_code(), Some("invalid_declared_provider_id"));
        let definition = ext.definition().with_declared_providers([acme()]).unwrap();
        host.discover([definition]).unwrap();
        let selected = host.select_provider("acme", "large").await.unwrap();
        assert!(selected.activated);
        assert_eq!(ext.factory_calls(), 1);
        assert_eq!(
            host.tools().names(),
            ["plain_tool"],
            "declaring providers does not rename the tools"
        );
        host.dispose().await.unwrap();
    })
    .await;
}
