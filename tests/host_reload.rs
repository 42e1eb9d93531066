//! Reload (H-12): a fresh generation is staged beside the live one and
//! swapped in by one commit, then the old generation is cleaned up; a fresh
//! generation that fails anywhere is rolled back and the old one stays live,
//! untouched.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use exthost::core::Status;
use exthost::error::codes;
use exthost::host::{Event, HostError, Reload};
use exthost::prelude::*;
use serde_json::{Value, json};
use support::{Log, host, host_with, within};

/// What generation `n` (1 for the first activation) of a versioned
/// extension does.
#[derive(Clone, Default)]
struct Plan {
    tools: Vec<&'static str>,
    factory_fails: bool,
    activate_fails: bool,
    hangs: bool,
    /// A second disposer, `g<n>:disposer2`, registered after the first.
    second_disposer: bool,
    /// Its tools wait for this gate before answering.
    gate: Option<Arc<tokio::sync::Semaphore>>,
}

/// An extension whose every generation logs what it does: `g<n>:factory`,
/// `g<n>:activate`, `g<n>:disposer`, `g<n>:dispose`; its tools answer
/// `{"generation": n}`.
#[derive(Clone)]
struct Versioned {
    id: &'static str,
    log: Log,
    generations: Arc<AtomicUsize>,
    plan: Arc<dyn Fn(usize) -> Plan + Send + Sync>,
}

impl Versioned {
    fn new(
        id: &'static str,
        log: &Log,
        plan: impl Fn(usize) -> Plan + Send + Sync + 'static,
    ) -> Self {
        Self {
            id,
            log: log.clone(),
            generations: Arc::default(),
            plan: Arc::new(plan),
        }
    }

    fn definition(&self) -> ExtensionDefinition {
        let this = self.clone();
        ExtensionDefinition::new(self.id, move || {
            let n = this.generations.fetch_add(1, Ordering::SeqCst) + 1;
            this.log.push(format!("g{n}:factory"));
            if (this.plan)(n).factory_fails {
                return Err(ExtensionError::new(format!(
                    "factory of generation {n} failed"
                )));
            }
            Ok(Generation {
                n,
                log: this.log.clone(),
                plan: (this.plan)(n),
            })
        })
    }
}

struct Generation {
    n: usize,
    log: Log,
    plan: Plan,
}

impl Extension for Generation {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let n = self.n;
            self.log.push(format!("g{n}:activate"));
            let log = self.log.clone();
            cx.on_dispose(move || async move {
                log.push(format!("g{n}:disposer"));
                Ok(())
            })?;
            if self.plan.second_disposer {
                let log = self.log.clone();
                cx.on_dispose(move || async move {
                    log.push(format!("g{n}:disposer2"));
                    Ok(())
                })?;
            }
            for name in &self.plan.tools {
                let gate = self.plan.gate.clone();
                let log = self.log.clone();
                cx.register_tool(
                    ToolDescriptor::new(
                        *name,
                        format!("generation {n}"),
                        json!({"type": "object"}),
                    ),
                    move |_input: Value| {
                        let gate = gate.clone();
                        let log = log.clone();
                        async move {
                            log.push(format!("g{n}:call"));
                            if let Some(gate) = gate {
                                let _permit = gate.acquire().await;
                            }
                            Ok(json!({ "generation": n }))
                        }
                    },
                )?;
            }
            if self.plan.hangs {
                std::future::pending::<()>().await;
            }
            if self.plan.activate_fails {
                return Err(ExtensionError::new(format!(
                    "activate of generation {n} failed"
                )));
            }
            Ok(())
        })
    }

    fn dispose(&self) -> BoxFuture<'_, Result<(), ExtensionError>> {
        let n = self.n;
        let log = self.log.clone();
        Box::pin(async move {
            log.push(format!("g{n}:dispose"));
            Ok(())
        })
    }
}

fn api_names(host: &ExtensionHost) -> Vec<(String, String)> {
    host.tools()
        .iter()
        .map(|t| (t.name.to_string(), t.api_name.to_string()))
        .collect()
}

#[tokio::test]
async fn a_reload_swaps_the_generation_in_one_commit_keeping_api_names() {
    let log = Log::default();
    let (_d, host) = host();
    // `m` is namespaced: `m:t` wants the API name `m_t`, which the plain
    // extension `p` took first, so `m:t` is `m_t_2`, and must stay so.
    let p = ExtensionDefinition::from_fn("p", |cx| async move {
        cx.register_tool(
            ToolDescriptor::new("m_t", "plain", json!({"type": "object"})),
            |_: Value| async { Ok(json!("p")) },
        )?;
        Ok(())
    });
    let m = Versioned::new("m", &log, |n| Plan {
        tools: if n == 1 {
            vec!["t", "old"]
        } else {
            vec!["t", "new"]
        },
        ..Plan::default()
    });
    host.discover([p, m.definition().namespaced()]).unwrap();
    within(host.activate("p")).await.unwrap();
    within(host.activate("m")).await.unwrap();
    let before = api_names(&host);
    assert!(
        before.contains(&("m:t".into(), "m_t_2".into())),
        "{before:?}"
    );

    let reload = within(host.reload("m")).await.unwrap();
    assert_eq!(
        reload,
        Reload::Reloaded {
            cleanup_failures: vec![]
        }
    );
    let after = api_names(&host);
    assert!(after.contains(&("m:t".into(), "m_t_2".into())), "{after:?}");
    assert!(
        after.contains(&("m:new".into(), "m_new".into())),
        "{after:?}"
    );
    assert!(!after.iter().any(|(n, _)| n == "m:old"), "{after:?}");
    assert_eq!(
        within(host.call_tool("m:t", json!({})))
            .await
            .unwrap()
            .into_json(),
        json!({"generation": 2})
    );
    // The old generation was cleaned up after the commit, the new one not.
    assert_eq!(
        log.entries(),
        [
            "g1:factory",
            "g1:activate",
            "g2:factory",
            "g2:activate",
            "g1:disposer",
            "g1:dispose",
            "g2:call"
        ]
    );
    assert_eq!(host.status("m"), Some(Status::Active));
    log.take();
    within(host.dispose()).await.unwrap();
    assert_eq!(log.entries(), ["g2:disposer", "g2:dispose"]);
}

/// Found by the default check's one search (INV-10, M-6): a reload whose
/// fresh generation registers a new tool before one it keeps must not hand
/// the kept tool's suffixed API name to the new one. `m:t` holds `m_t`, so
/// `b`'s `m.t` is `m_t_2`; the reload registers `m_t` (whose base is also
/// `m_t`) first, then `m.t` again, which must keep `m_t_2`.
#[tokio::test]
async fn a_reload_keeps_a_suffixed_api_name_when_a_new_tool_is_registered_first() {
    let log = Log::default();
    let (_d, host) = host();
    let m = ExtensionDefinition::from_fn("m", |cx| async move {
        cx.register_tool(
            ToolDescriptor::new("t", "namespaced", json!({"type": "object"})),
            |_: Value| async { Ok(json!("m")) },
        )?;
        Ok(())
    })
    .namespaced();
    let b = Versioned::new("b", &log, |n| Plan {
        tools: if n == 1 {
            vec!["m.t"]
        } else {
            vec!["m_t", "m.t"]
        },
        ..Plan::default()
    });
    host.discover([m, b.definition()]).unwrap();
    within(host.activate("m")).await.unwrap();
    within(host.activate("b")).await.unwrap();
    let before = api_names(&host);
    assert!(before.contains(&("m:t".into(), "m_t".into())), "{before:?}");
    assert!(
        before.contains(&("m.t".into(), "m_t_2".into())),
        "{before:?}"
    );

    let reload = within(host.reload("b")).await.unwrap();
    assert_eq!(
        reload,
        Reload::Reloaded {
            cleanup_failures: vec![]
        }
    );
    let after = api_names(&host);
    assert!(after.contains(&("m:t".into(), "m_t".into())), "{after:?}");
    assert!(after.contains(&("m.t".into(), "m_t_2".into())), "{after:?}");
    assert!(after.contains(&("m_t".into(), "m_t_3".into())), "{after:?}");
    within(host.dispose()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_see_the_old_generation_or_the_new_one_never_a_mix() {
    let log = Log::default();
    let (_d, host) = host();
    let m = Versioned::new("m", &log, |_| Plan {
        tools: vec!["a", "b", "c", "d"],
        ..Plan::default()
    });
    host.discover([m.definition()]).unwrap();
    within(host.activate("m")).await.unwrap();
    // The generation a snapshot shows, asserting it is whole and unmixed
    // (the spec's promise: INV-1, INV-11).
    fn whole_generation(host: &ExtensionHost) -> String {
        let snapshot = host.tools();
        let generations: std::collections::BTreeSet<String> =
            snapshot.iter().map(|t| t.description.to_string()).collect();
        assert_eq!(snapshot.len(), 4, "a snapshot without a whole generation");
        assert_eq!(generations.len(), 1, "a mixed snapshot: {generations:?}");
        generations.into_iter().next().expect("one generation")
    }
    // The concurrent half: a reader that reads while reloads swap
    // generations never sees a mix, whatever the schedule. How many swaps
    // it happens to observe is the scheduler's business, not the host's,
    // so nothing is asserted about it.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (host, stop) = (host.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0usize;
            while !stop.load(Ordering::SeqCst) {
                whole_generation(&host);
                reads += 1;
            }
            reads
        })
    };
    for _ in 0..20 {
        within(host.reload("m")).await.unwrap();
    }
    stop.store(true, Ordering::SeqCst);
    reader
        .join()
        .expect("the reader saw only whole generations");
    // The deterministic half: a read between two reloads sees exactly the
    // generation the last reload committed, so every reload is observed.
    let mut seen = vec![whole_generation(&host)];
    assert_eq!(seen[0], "generation 21");
    for n in 22..=24 {
        within(host.reload("m")).await.unwrap();
        seen.push(whole_generation(&host));
        assert_eq!(
            seen.last().map(String::as_str),
            Some(&*format!("generation {n}"))
        );
    }
    assert_eq!(seen.len(), 4, "each reload observed: {seen:?}");
    within(host.dispose()).await.unwrap();
}

/// Each failing step of a fresh generation: the error says the old one
/// stays, its tools answer as before, nothing of it was cleaned up, and the
/// fresh generation was rolled back.
#[tokio::test]
async fn a_failing_fresh_generation_leaves_the_old_one_live_and_untouched() {
    type Case = (&'static str, Plan, &'static str);
    let cases: Vec<Case> = vec![
        (
            "factory",
            Plan {
                factory_fails: true,
                ..Plan::default()
            },
            codes::EXTENSION_ACTIVATION_FAILED,
        ),
        (
            "activate",
            Plan {
                tools: vec!["t"],
                activate_fails: true,
                ..Plan::default()
            },
            codes::EXTENSION_ACTIVATION_FAILED,
        ),
        (
            "clash",
            Plan {
                tools: vec!["t", "taken"],
                ..Plan::default()
            },
            codes::TOOL_DUPLICATE,
        ),
        (
            "deadline",
            Plan {
                tools: vec!["t"],
                hangs: true,
                ..Plan::default()
            },
            codes::EXTENSION_TIMEOUT,
        ),
    ];
    for (name, plan, cause) in cases {
        let log = Log::default();
        let (_d, host) = host_with(|o| o.with_activation_deadline(Duration::from_millis(100)));
        let other = ExtensionDefinition::from_fn("other", |cx| async move {
            cx.register_tool(
                ToolDescriptor::new("taken", "held", json!({"type": "object"})),
                |_: Value| async { Ok(json!("other")) },
            )?;
            Ok(())
        });
        let plan2 = plan.clone();
        let m = Versioned::new("m", &log, move |n| {
            if n == 1 {
                Plan {
                    tools: vec!["t"],
                    ..Plan::default()
                }
            } else {
                plan2.clone()
            }
        });
        host.discover([other, m.definition()]).unwrap();
        within(host.activate("other")).await.unwrap();
        within(host.activate("m")).await.unwrap();
        let before = api_names(&host);
        let err = within(host.reload("m")).await.unwrap_err();
        assert!(matches!(err, HostError::Reload(_)), "{name}: {err:?}");
        assert_eq!(err.cause_code(), Some(cause), "{name}: {err}");
        assert!(
            err.to_string().contains("previous generation stays live"),
            "{name}: {err}"
        );
        assert_eq!(api_names(&host), before, "{name}");
        assert_eq!(host.status("m"), Some(Status::Active), "{name}");
        assert_eq!(
            within(host.call_tool("t", json!({})))
                .await
                .unwrap()
                .into_json(),
            json!({"generation": 1}),
            "{name}"
        );
        let entries = log.entries();
        assert!(
            !entries.contains(&"g1:disposer".to_owned()),
            "{name}: {entries:?}"
        );
        assert!(
            !entries.contains(&"g1:dispose".to_owned()),
            "{name}: {entries:?}"
        );
        if name != "factory" {
            assert!(
                entries.contains(&"g2:disposer".to_owned()),
                "{name}: rolled back: {entries:?}"
            );
            assert!(
                entries.contains(&"g2:dispose".to_owned()),
                "{name}: rolled back: {entries:?}"
            );
        }
        within(host.dispose()).await.unwrap();
        assert!(
            log.entries()
                .ends_with(&["g1:disposer".to_owned(), "g1:dispose".to_owned()]),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_manifest_extensions_reload_keeps_its_declarations() {
    let log = Log::default();
    let (_d, host) = host();
    let m = Versioned::new("m", &log, |n| Plan {
        tools: if n == 1 {
            vec!["t"]
        } else {
            vec!["t", "extra"]
        },
        ..Plan::default()
    });
    let declared = vec![ToolDescriptor::new(
        "t",
        "generation 1",
        json!({"type": "object"}),
    )];
    host.discover([m.definition().with_declared_tools(declared)])
        .unwrap();
    within(host.activate("m")).await.unwrap();
    let err = within(host.reload("m")).await.unwrap_err();
    assert_eq!(
        err.cause_code(),
        Some("undeclared_tool_registered"),
        "{err}"
    );
    assert_eq!(host.tools().names(), ["m:t"]);
    assert!(!host.tools().get("m:t").unwrap().dormant);
    within(host.dispose()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_old_generations_calls_finish_before_its_cleanup() {
    let log = Log::default();
    let (_d, host) = host();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let m = Versioned::new("m", &log, {
        let gate = gate.clone();
        move |n| Plan {
            tools: vec!["t"],
            gate: (n == 1).then(|| gate.clone()),
            ..Plan::default()
        }
    });
    host.discover([m.definition()]).unwrap();
    within(host.activate("m")).await.unwrap();
    let call = tokio::spawn({
        let host = host.clone();
        async move { host.call_tool("t", json!({})).await }
    });
    within(log.until(|l| l.count("g1:call") > 0)).await;
    let reload = tokio::spawn({
        let host = host.clone();
        async move { host.reload("m").await }
    });
    // The fresh generation commits while the old call still runs; the old
    // cleanup waits for it.
    within(async {
        while host.tools().get("t").map(|t| t.description.to_string())
            != Some("generation 2".into())
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(log.count("g1:disposer"), 0, "cleanup ran under a call");
    gate.add_permits(1);
    assert_eq!(
        within(call).await.unwrap().unwrap().into_json(),
        json!({"generation": 1})
    );
    within(reload).await.unwrap().unwrap();
    assert_eq!(log.count("g1:disposer"), 1);
    within(host.dispose()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_waits_behind_a_long_emit() {
    let log = Log::default();
    let (_d, host) = host();
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let hook_gate = gate.clone();
    let hook_log = log.clone();
    let slow = ExtensionDefinition::from_fn("slow", move |cx| {
        let gate = hook_gate.clone();
        let log = hook_log.clone();
        async move {
            cx.on_event(move |_| {
                let gate = gate.clone();
                let log = log.clone();
                async move {
                    log.push("hook:start");
                    let _permit = gate.acquire().await;
                    log.push("hook:end");
                    Ok(())
                }
            })?;
            Ok(())
        }
    });
    let m = Versioned::new("m", &log, |_| Plan::default());
    host.discover([slow, m.definition()]).unwrap();
    within(host.activate("slow")).await.unwrap();
    within(host.activate("m")).await.unwrap();
    let emit = tokio::spawn({
        let host = host.clone();
        async move { host.emit(Event::new("e", json!({}))).await }
    });
    within(log.until(|l| l.count("hook:start") > 0)).await;
    let reload = tokio::spawn({
        let host = host.clone();
        async move { host.reload("m").await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        log.count("g2:factory"),
        0,
        "the reload did not wait its turn"
    );
    gate.add_permits(1);
    within(emit).await.unwrap().unwrap();
    within(reload).await.unwrap().unwrap();
    let entries = log.entries();
    let end = entries.iter().position(|e| e == "hook:end").unwrap();
    let factory = entries.iter().position(|e| e == "g2:factory").unwrap();
    assert!(end < factory, "{entries:?}");
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn only_an_active_extension_reloads() {
    let log = Log::default();
    let (_d, host) = host();
    let idle = Versioned::new("idle", &log, |_| Plan::default());
    let broken = Versioned::new("broken", &log, |_| Plan {
        factory_fails: true,
        ..Plan::default()
    });
    host.discover([idle.definition(), broken.definition()])
        .unwrap();
    assert_eq!(
        within(host.reload("idle")).await.unwrap(),
        Reload::NotActive {
            status: Status::Discovered
        }
    );
    within(host.activate("broken")).await.unwrap_err();
    log.take();
    assert_eq!(
        within(host.reload("broken")).await.unwrap(),
        Reload::NotActive {
            status: Status::Failed
        }
    );
    assert!(log.entries().is_empty(), "nothing ran");
    let err = within(host.reload("ghost")).await.unwrap_err();
    assert_eq!(err.code(), codes::EXTENSION_NOT_FOUND);
    within(host.dispose()).await.unwrap();
    let err = within(host.reload("idle")).await.unwrap_err();
    assert_eq!(err.code(), codes::HOST_DISPOSED);
}

#[tokio::test]
async fn a_dependencys_reload_leaves_its_dependents_active() {
    let log = Log::default();
    let (_d, host) = host();
    let base = Versioned::new("base", &log, |_| Plan::default());
    let user = ExtensionDefinition::from_fn("user", |_cx| async { Ok(()) }).depends_on(["base"]);
    host.discover([base.definition(), user]).unwrap();
    within(host.activate("user")).await.unwrap();
    within(host.reload("base")).await.unwrap();
    assert_eq!(host.status("user"), Some(Status::Active));
    assert_eq!(log.count("g2:activate"), 1);
    log.take();
    within(host.dispose()).await.unwrap();
    assert_eq!(log.entries(), ["g2:disposer", "g2:dispose"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_new_generations_calls_neither_hold_nor_feel_the_old_ones_cleanup() {
    let log = Log::default();
    let (_d, host) = host_with(|o| o.without_cleanup_deadline());
    let old_gate = Arc::new(tokio::sync::Semaphore::new(0));
    let new_gate = Arc::new(tokio::sync::Semaphore::new(0));
    let m = Versioned::new("m", &log, {
        let (old_gate, new_gate) = (old_gate.clone(), new_gate.clone());
        move |n| Plan {
            tools: vec!["t"],
            gate: Some(if n == 1 {
                old_gate.clone()
            } else {
                new_gate.clone()
            }),
            ..Plan::default()
        }
    });
    host.discover([m.definition()]).unwrap();
    within(host.activate("m")).await.unwrap();
    let spawn_call =
        |host: ExtensionHost| tokio::spawn(async move { host.call_tool("t", json!({})).await });
    let old_call = spawn_call(host.clone());
    within(log.until(|l| l.count("g1:call") > 0)).await;
    let reload = tokio::spawn({
        let host = host.clone();
        async move { host.reload("m").await }
    });
    // Generation 2 is live; generation 1's cleanup waits for its call.
    within(async {
        while host.tools().get("t").map(|t| t.description.to_string())
            != Some("generation 2".into())
        {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let new_call = spawn_call(host.clone());
    within(log.until(|l| l.count("g2:call") > 0)).await;
    // The old call ends: the old generation's cleanup runs and the reload
    // settles, while the new generation's call is still in flight and was
    // never cancelled.
    old_gate.add_permits(1);
    assert_eq!(
        within(old_call).await.unwrap().unwrap().into_json(),
        json!({"generation": 1})
    );
    within(reload).await.unwrap().unwrap();
    assert_eq!(log.count("g1:disposer"), 1);
    assert!(
        !new_call.is_finished(),
        "the new generation's call was cut short"
    );
    new_gate.add_permits(1);
    assert_eq!(
        within(new_call).await.unwrap().unwrap().into_json(),
        json!({"generation": 2})
    );
    assert_eq!(
        log.count("g2:disposer"),
        0,
        "the live generation is not cleaned up"
    );
    within(host.dispose()).await.unwrap();
}

/// A fresh generation of a manifest extension that registers only some of
/// its declared tools (a subset of the old generation's, which the reload's
/// in-place fast path could build) is a declaration mismatch (M-5): it is
/// rolled back and the old generation stays live, whole. A fast path that
/// ran before the declaration check would commit it (the model's mutant
/// `ReloadFastPathBeforeDeclarations`).
#[tokio::test]
async fn a_reload_dropping_a_declared_tool_keeps_the_old_generation() {
    let log = Log::default();
    let (_d, host) = host();
    let m = Versioned::new("m", &log, |n| Plan {
        tools: if n == 1 { vec!["t", "u"] } else { vec!["t"] },
        ..Plan::default()
    });
    let declared = ["t", "u"]
        .map(|t| ToolDescriptor::new(t, "generation 1", json!({"type": "object"})))
        .to_vec();
    host.discover([m.definition().with_declared_tools(declared)])
        .unwrap();
    within(host.activate("m")).await.unwrap();
    let before = api_names(&host);
    log.take();
    let err = within(host.reload("m")).await.unwrap_err();
    assert_eq!(
        err.cause_code(),
        Some("declared_tool_not_registered"),
        "{err}"
    );
    // The old generation stays: both declared tools, live, same API names,
    // answering as generation 1; only the fresh generation was cleaned up.
    assert_eq!(api_names(&host), before);
    for name in ["m:t", "m:u"] {
        let tools = host.tools();
        let tool = tools.get(name).expect("still published");
        assert!(!tool.dormant, "{name}");
        assert_eq!(tool.description, "generation 1");
        assert_eq!(
            within(host.call_tool(name, json!({})))
                .await
                .unwrap()
                .into_json(),
            json!({"generation": 1})
        );
    }
    assert_eq!(
        log.take(),
        [
            "g2:factory",
            "g2:activate",
            "g2:disposer",
            "g2:dispose",
            "g1:call",
            "g1:call"
        ]
    );
    within(host.dispose()).await.unwrap();
    assert_eq!(log.entries(), ["g1:disposer", "g1:dispose"]);
}

/// A reload retires its old generation like a shutdown (INV-11c, INV-3):
/// its disposers in reverse registration order, then its instance. With
/// two disposers forward and reverse order differ (the model's mutant
/// `ForwardRetirement`).
#[tokio::test]
async fn a_reload_retires_two_disposers_in_reverse_order() {
    let log = Log::default();
    let (_d, host) = host();
    let m = Versioned::new("m", &log, |_| Plan {
        tools: vec!["t"],
        second_disposer: true,
        ..Plan::default()
    });
    host.discover([m.definition()]).unwrap();
    within(host.activate("m")).await.unwrap();
    assert_eq!(log.take(), ["g1:factory", "g1:activate"]);
    within(host.reload("m")).await.unwrap();
    assert_eq!(
        log.take(),
        [
            "g2:factory",
            "g2:activate",
            "g1:disposer2",
            "g1:disposer",
            "g1:dispose"
        ]
    );
    within(host.dispose()).await.unwrap();
    assert_eq!(log.take(), ["g2:disposer2", "g2:disposer", "g2:dispose"]);
}

/// The shutdown disposes a dependent before its dependency (H-13, INV-13b)
/// also after the dependency was reloaded: the reload keeps its place in
/// the activation order, so the dependent's disposer runs first, then the
/// dependency's fresh generation.
#[tokio::test]
async fn a_dependent_is_disposed_before_its_reloaded_dependency() {
    let log = Log::default();
    let (_d, host) = host();
    let base = Versioned::new("base", &log, |_| Plan::default());
    let user = {
        let log = log.clone();
        ExtensionDefinition::from_fn("user", move |cx| {
            let log = log.clone();
            async move {
                cx.on_dispose(move || async move {
                    log.push("user:disposer");
                    Ok(())
                })?;
                Ok(())
            }
        })
        .depends_on(["base"])
    };
    host.discover([base.definition(), user]).unwrap();
    within(host.activate("user")).await.unwrap();
    within(host.reload("base")).await.unwrap();
    assert_eq!(host.status("user"), Some(Status::Active));
    log.take();
    within(host.dispose()).await.unwrap();
    assert_eq!(
        log.entries(),
        ["user:disposer", "g2:disposer", "g2:dispose"]
    );
}
