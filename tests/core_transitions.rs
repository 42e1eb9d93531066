//! The pure core driven directly, with no runtime: what it sets off (its
//! outbox, drained after each input) for each path of H-1 to H-11.

use exthost_core::*;

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, format!("{name} tool"), "digest")
}

/// One thing an input set off, in the order a driver drains the core's
/// outbox: its commands in order, then the publication, then the settled
/// operations.
#[derive(Debug, Clone, PartialEq)]
enum Said {
    /// A command.
    Do(Effect),
    /// Publish a new snapshot.
    Publish,
    /// An operation settled.
    Settle { op: OpId, outcome: OpOutcome },
}

trait Step {
    /// Applies an input the core must accept and drains what it set off.
    fn step(&mut self, input: Input) -> Vec<Said>;
    /// Drains what the inputs so far set off.
    fn said(&mut self) -> Vec<Said>;
}

impl Step for HostCore {
    fn step(&mut self, input: Input) -> Vec<Said> {
        self.apply(input, Moment::ZERO).unwrap();
        self.said()
    }

    fn said(&mut self) -> Vec<Said> {
        let out = self.drain_outbox();
        out.commands
            .into_iter()
            .map(Said::Do)
            .chain(out.published.then_some(Said::Publish))
            .chain(
                out.settled
                    .into_iter()
                    .map(|Settled { op, outcome }| Said::Settle { op, outcome }),
            )
            .collect()
    }
}

fn core_with(ids: &[&str]) -> HostCore {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    let batch = ids.iter().map(|id| DefinitionMeta::plain(*id)).collect();
    assert_eq!(core.discover(batch), Ok(()));
    assert_eq!(core.said(), vec![]);
    core
}

fn request(core: &mut HostCore, kind: OpKind) -> OpId {
    match core.request(kind) {
        Requested::Enqueued(op) => op,
        other => panic!("{other:?}"),
    }
}

/// Requests and begins an activation; returns its op and context.
fn start_activation(core: &mut HostCore, id: &str) -> (OpId, ContextId) {
    let op = request(core, OpKind::Activate(id.into()));
    match core.step(Input::Begin(op)).as_slice() {
        [
            Said::Do(Effect::CallFactory {
                context, extension, ..
            }),
        ] => {
            assert_eq!(extension, id);
            (op, *context)
        }
        other => panic!("{other:?}"),
    }
}

fn register(core: &mut HostCore, context: ContextId, registration: Registration) -> Registered {
    let handle = core.register(context, registration).unwrap();
    assert_eq!(core.said(), vec![]);
    handle
}

fn open(core: &mut HostCore, context: ContextId) {
    let effects = core.step(Input::FactoryReturned {
        context,
        result: Ok(()),
    });
    assert!(matches!(
        effects.as_slice(),
        [Said::Do(Effect::RunActivate { .. })]
    ));
}

/// `activate` returns Ok but the commit fails validation: with no
/// disposers, the instance's dispose is the only rollback step. Runs it and
/// returns the settled failure.
fn commit_fails(core: &mut HostCore, op: OpId, cx: ContextId) -> ActivationFailure {
    let effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    // The staged tools were never published: they are forgotten before the
    // rollback's first step, while the context stays until it settles.
    let [
        Said::Do(Effect::Forget {
            contexts,
            tools,
            hooks,
            disposers,
        }),
        Said::Do(Effect::RunCleanup { step, .. }),
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    assert!(!tools.is_empty(), "{effects:?}");
    assert!(contexts.is_empty() && hooks.is_empty() && disposers.is_empty());
    assert_eq!(step.kind, CleanupKind::Instance);
    let effects = core.step(Input::CleanupFinished { op, result: Ok(()) });
    match effects.as_slice() {
        [
            _,
            Said::Settle {
                outcome: OpOutcome::ActivationFailed(f),
                ..
            },
        ] => f.clone(),
        other => panic!("{other:?}"),
    }
}

/// Activates `id` to commit with these registrations.
fn activate_with(core: &mut HostCore, id: &str, registrations: &[Registration]) {
    let (_, cx) = start_activation(core, id);
    open(core, cx);
    for registration in registrations {
        register(core, cx, registration.clone());
    }
    let effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    assert!(matches!(
        effects.last(),
        Some(Said::Settle {
            outcome: OpOutcome::Activated { .. },
            ..
        })
    ));
}

#[test]
fn discovery_is_all_or_nothing_and_calls_no_factory() {
    let mut core = core_with(&["a"]);
    let before = core.clone();
    let answer = core.discover(vec![DefinitionMeta::plain("b"), DefinitionMeta::plain("a")]);
    assert_eq!(answer, Err(DiscoveryError::Duplicate { id: "a".into() }));
    assert_eq!(core, before, "a refused batch changes nothing");
    let answer = core.discover(vec![DefinitionMeta::plain("bad id")]);
    assert!(matches!(answer, Err(DiscoveryError::InvalidId { .. })));
    assert!(core.said().is_empty());
    assert_eq!(core, before);
}

#[test]
fn a_successful_activation_commits_everything_in_one_step() {
    let mut core = core_with(&["a"]);
    let (op, cx) = start_activation(&mut core, "a");
    assert_eq!(core.statuses(), vec![("a".into(), Status::Activating)]);
    open(&mut core, cx);
    let Registered::Tool(t1) = register(&mut core, cx, Registration::Tool(spec("t1"))) else {
        panic!()
    };
    let Registered::Hook(h) = register(&mut core, cx, Registration::Hook) else {
        panic!()
    };
    register(&mut core, cx, Registration::Disposer);
    assert_eq!(
        core.registry().names(),
        ["base"],
        "staged tools are private"
    );
    assert!(core.live_hooks().is_empty());
    let effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    assert_eq!(
        effects,
        vec![
            Said::Publish,
            Said::Settle {
                op,
                outcome: OpOutcome::Activated {
                    extension: "a".into()
                }
            }
        ]
    );
    assert_eq!(core.registry().names(), ["base", "t1"]);
    assert_eq!(
        core.registry().get("t1").unwrap().binding,
        Binding::Live(t1)
    );
    assert_eq!(core.live_hooks()[0].hook, h);
    assert_eq!(core.activation_order(), ["a"]);
    assert_eq!(core.statuses(), vec![("a".into(), Status::Active)]);
    assert_eq!(core.running_op(), None);
}

#[test]
fn a_failed_activation_rolls_back_in_reverse_then_the_instance() {
    let mut core = core_with(&["a"]);
    let (op, cx) = start_activation(&mut core, "a");
    open(&mut core, cx);
    let d: Vec<_> = (0..3)
        .map(|_| match register(&mut core, cx, Registration::Disposer) {
            Registered::Disposer(d) => d,
            _ => panic!(),
        })
        .collect();
    let Registered::Tool(t) = register(&mut core, cx, Registration::Tool(spec("t"))) else {
        panic!()
    };
    let Registered::Hook(h) = register(&mut core, cx, Registration::Hook) else {
        panic!()
    };
    let mut effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Err(Failure::error("boom")),
    });
    // What the rollback never reads (the staged tool and hook) is forgotten
    // first; the disposers and the context stay until they ran.
    assert_eq!(
        effects[0],
        Said::Do(Effect::Forget {
            contexts: vec![],
            tools: vec![t],
            hooks: vec![h],
            disposers: vec![],
        })
    );
    effects.remove(0);
    let mut ran = Vec::new();
    let mut results = vec![Ok(()), Err(Failure::error("d1 failed")), Ok(()), Ok(())].into_iter();
    while let [Said::Do(Effect::RunCleanup { step, .. })] = effects.as_slice() {
        ran.push(step.kind);
        effects = core.step(Input::CleanupFinished {
            op,
            result: results.next().unwrap(),
        });
    }
    let disposer = |i: usize| CleanupKind::Disposer {
        index: i,
        disposer: d[i],
    };
    assert_eq!(
        ran,
        vec![disposer(2), disposer(1), disposer(0), CleanupKind::Instance]
    );
    let [
        Said::Do(Effect::Forget {
            contexts,
            tools,
            hooks,
            disposers,
        }),
        Said::Settle { outcome, .. },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    assert_eq!(
        (contexts.as_slice(), tools.len(), hooks.len(), disposers),
        ([cx].as_slice(), 0, 0, &d)
    );
    let OpOutcome::ActivationFailed(failure) = outcome else {
        panic!()
    };
    assert_eq!(
        failure.cause,
        FailureCause::Activate(Failure::error("boom"))
    );
    assert_eq!(failure.cleanup_failures.len(), 1);
    assert_eq!(failure.cleanup_failures[0].step.kind, disposer(1));
    assert_eq!(core.registry().names(), ["base"]);
    assert_eq!(core.statuses(), vec![("a".into(), Status::Failed)]);
    // Retry: failed -> activating, a new context.
    let (_, cx2) = start_activation(&mut core, "a");
    assert_ne!(cx, cx2);
}

#[test]
fn a_factory_failure_settles_without_cleanup() {
    let mut core = core_with(&["a"]);
    let (op, cx) = start_activation(&mut core, "a");
    let effects = core.step(Input::FactoryReturned {
        context: cx,
        result: Err(Failure::panic("factory")),
    });
    assert!(matches!(
        effects.as_slice(),
        [Said::Do(Effect::Forget { .. }), Said::Settle { op: o, outcome: OpOutcome::ActivationFailed(f) }]
            if *o == op && f.cause == FailureCause::Factory(Failure::panic("factory")) && f.cleanup_failures.is_empty()
    ));
}

#[test]
fn registrations_outside_the_open_context_are_refused_and_change_nothing() {
    let mut core = core_with(&["a"]);
    let (_, cx) = start_activation(&mut core, "a");
    // Before the context opens (factory still running).
    let before = core.clone();
    let answer = core.register(cx, Registration::Hook);
    assert_eq!(answer, Err(ContextClosed));
    assert_eq!(core, before);
    open(&mut core, cx);
    core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    let before = core.clone();
    for registration in [
        Registration::Tool(spec("late")),
        Registration::Hook,
        Registration::Disposer,
    ] {
        let answer = core.register(cx, registration);
        assert_eq!(answer, Err(ContextClosed));
    }
    assert_eq!(core, before);
}

#[test]
fn a_clash_fails_validation_and_publishes_nothing() {
    let mut core = core_with(&["a"]);
    let (op, cx) = start_activation(&mut core, "a");
    open(&mut core, cx);
    register(&mut core, cx, Registration::Tool(spec("fresh")));
    register(&mut core, cx, Registration::Tool(spec("base")));
    let f = commit_fails(&mut core, op, cx);
    assert!(matches!(&f.cause, FailureCause::Registry(e) if e.code() == "TOOL_DUPLICATE"));
    assert_eq!(core.registry().names(), ["base"]);
}

#[test]
fn operations_begin_only_in_order_and_one_at_a_time() {
    let mut core = core_with(&["a", "b"]);
    let first = request(&mut core, OpKind::Activate("a".into()));
    let second = request(&mut core, OpKind::Emit);
    let before = core.clone();
    assert!(
        core.apply(Input::Begin(second), Moment::ZERO).is_err(),
        "not the head"
    );
    assert_eq!(core, before);
    assert_eq!(core.awaiting(), Some(Awaiting::Begin(first)));
    core.step(Input::Begin(first));
    assert!(
        core.apply(Input::Begin(second), Moment::ZERO).is_err(),
        "one at a time"
    );
    assert!(core.withdraw(first).is_err(), "begun ops are not withdrawn");
    // A withdrawn op leaves the queue.
    core.withdraw(second).unwrap();
    assert!(!core.is_queued(second));
}

#[test]
fn emit_runs_each_live_hook_once_in_order_and_collects_diagnostics() {
    let mut core = core_with(&["a", "b"]);
    for id in ["b", "a"] {
        activate_with(&mut core, id, &[Registration::Hook, Registration::Hook]);
    }
    let op = request(&mut core, OpKind::Emit);
    let mut effects = core.step(Input::Begin(op));
    let mut order = Vec::new();
    while let [Said::Do(Effect::RunHook { hooks, next, .. })] = effects.as_slice() {
        let hook = &hooks[*next];
        order.push((hook.extension.clone(), hook.index));
        let result = if order.len() == 2 {
            Err(Failure::error("x"))
        } else {
            Ok(())
        };
        effects = core.step(Input::HookFinished {
            op,
            result,
            span: None,
        });
    }
    assert_eq!(
        order,
        [("b", 0), ("b", 1), ("a", 0), ("a", 1)].map(|(e, i)| (e.to_owned(), i))
    );
    assert_eq!(
        effects,
        vec![Said::Settle {
            op,
            outcome: OpOutcome::Emitted {
                diagnostics: vec![HookDiagnostic {
                    extension_id: "b".into(),
                    hook_index: 1,
                    message: "x".into()
                }]
            }
        }]
    );
}

/// `HooksFinished` carries only the failures and a count; it must still be
/// exactly one `HookFinished` per result (the shell's batch path).
#[test]
fn hooks_finished_in_one_input_is_one_hook_finished_per_result() {
    let results = || {
        [true, false, true, false, true].map(|ok| {
            if ok {
                Ok(())
            } else {
                Err(Failure::error("bad"))
            }
        })
    };
    let emit = || {
        let mut core = core_with(&["a", "b"]);
        activate_with(&mut core, "a", &[Registration::Hook, Registration::Hook]);
        activate_with(
            &mut core,
            "b",
            &[Registration::Hook, Registration::Hook, Registration::Hook],
        );
        let op = request(&mut core, OpKind::Emit);
        let effects = core.step(Input::Begin(op));
        assert!(matches!(
            effects.as_slice(),
            [Said::Do(Effect::RunHook { next: 0, .. })]
        ));
        (core, op)
    };
    let (mut one_by_one, op) = emit();
    let mut last = Vec::new();
    for result in results() {
        last = one_by_one.step(Input::HookFinished {
            op,
            result,
            span: None,
        });
    }
    let (mut batched, op2) = emit();
    assert_eq!(op, op2);
    // The wrong number of results is refused and changes nothing.
    let before = batched.clone();
    let short: HookResults = results().into_iter().take(4).collect();
    assert!(
        batched
            .apply(Input::HooksFinished { op, results: short }, Moment::ZERO)
            .is_err()
    );
    assert_eq!(batched, before);
    let all: HookResults = results().into_iter().collect();
    assert_eq!(all.len(), 5);
    assert_eq!(
        all.failures().iter().map(|(at, _)| *at).collect::<Vec<_>>(),
        [1, 3]
    );
    let batch = batched.step(Input::HooksFinished { op, results: all });
    assert_eq!(batch, last);
    assert_eq!(batched, one_by_one);
    let Some(Said::Settle {
        outcome: OpOutcome::Emitted { diagnostics },
        ..
    }) = batch.first()
    else {
        panic!("{batch:?}")
    };
    assert_eq!(
        diagnostics
            .iter()
            .map(|d| (d.extension_id.as_str(), d.hook_index))
            .collect::<Vec<_>>(),
        [("a", 1), ("b", 1)]
    );
}

#[test]
fn hook_results_keep_their_order_and_refuse_a_bad_shape() {
    let failure = |m: &str| Failure::error(m);
    let mut first: HookResults = [Ok(()), Err(failure("x"))].into_iter().collect();
    let second: HookResults = [Err(failure("y")), Ok(())].into_iter().collect();
    first.append(second);
    let flat: Vec<_> = first.clone().into_results().map(|(r, _)| r).collect();
    assert_eq!(flat, [Ok(()), Err(failure("x")), Err(failure("y")), Ok(())]);
    assert_eq!(
        HookResults::from_parts(4, vec![(1, failure("x")), (2, failure("y"))]),
        Some(first)
    );
    // Places must rise strictly and stay below the count.
    assert_eq!(HookResults::from_parts(2, vec![(2, failure("x"))]), None);
    assert_eq!(
        HookResults::from_parts(3, vec![(1, failure("x")), (1, failure("y"))]),
        None
    );
    assert_eq!(
        HookResults::from_parts(3, vec![(2, failure("x")), (0, failure("y"))]),
        None
    );
    assert!(HookResults::new().is_empty());
    // Hooks that finished without failing, counted at once.
    let mut counted = HookResults::new();
    counted.push_ok(1);
    counted.push(Err(failure("x")));
    counted.push(Err(failure("y")));
    counted.push_ok(1);
    assert_eq!(
        counted.into_results().map(|(r, _)| r).collect::<Vec<_>>(),
        [Ok(()), Err(failure("x")), Err(failure("y")), Ok(())]
    );
}

#[test]
fn dispose_cancels_the_pending_activation_and_refuses_later_requests() {
    let mut core = core_with(&["a", "b"]);
    let (act, cx) = start_activation(&mut core, "a");
    open(&mut core, cx);
    let queued = request(&mut core, OpKind::Activate("b".into()));
    let answer = core.request(OpKind::Dispose);
    let Requested::Enqueued(dispose) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(core.said(), vec![Said::Do(Effect::Cancel { context: cx })]);
    assert_eq!(
        core.request(OpKind::Emit),
        Requested::Rejected(Rejection::HostDisposed)
    );
    assert_eq!(
        core.request(OpKind::Dispose),
        Requested::JoinDispose(dispose)
    );
    // The activation returns Ok, but it was cancelled: rollback.
    let effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    assert!(matches!(
        effects.as_slice(),
        [Said::Do(Effect::RunCleanup { .. })]
    ));
    let effects = core.step(Input::CleanupFinished {
        op: act,
        result: Ok(()),
    });
    assert!(matches!(
        effects.as_slice(),
        [_, Said::Settle { outcome: OpOutcome::ActivationFailed(f), .. }] if f.cause == FailureCause::Cancelled
    ));
    let effects = core.step(Input::Begin(queued));
    assert!(matches!(
        effects.as_slice(),
        [Said::Settle {
            outcome: OpOutcome::CancelledBeforeStart { .. },
            ..
        }]
    ));
    let effects = core.step(Input::Begin(dispose));
    assert_eq!(
        effects,
        vec![
            Said::Do(Effect::ForgetAll),
            Said::Publish,
            Said::Settle {
                op: dispose,
                outcome: OpOutcome::Disposed { failures: vec![] }
            }
        ]
    );
    assert!(core.registry().is_empty());
    assert_eq!(core.phase(), Phase::Disposed(dispose));
}

#[test]
fn shutdown_cleans_up_in_reverse_activation_and_registration_order() {
    let mut core = core_with(&["a", "b"]);
    for id in ["a", "b"] {
        activate_with(
            &mut core,
            id,
            &[Registration::Disposer, Registration::Disposer],
        );
    }
    let op = request(&mut core, OpKind::Dispose);
    let mut effects = core.step(Input::Begin(op));
    assert_eq!(effects.last(), Some(&Said::Publish));
    assert!(
        core.registry().is_empty(),
        "nothing is callable during teardown"
    );
    effects.pop();
    let mut steps = Vec::new();
    while let [Said::Do(Effect::RunCleanup { step, .. })] = effects.as_slice() {
        steps.push(match step.kind {
            CleanupKind::Disposer { index, .. } => format!("{}:d{index}", step.extension),
            CleanupKind::Instance => format!("{}:dispose", step.extension),
        });
        let result = if steps.len() % 2 == 1 {
            Err(Failure::error("f"))
        } else {
            Ok(())
        };
        effects = core.step(Input::CleanupFinished { op, result });
    }
    assert_eq!(
        steps,
        ["b:d1", "b:d0", "b:dispose", "a:d1", "a:d0", "a:dispose"]
    );
    let [
        Said::Do(Effect::ForgetAll),
        Said::Settle {
            outcome: OpOutcome::Disposed { failures },
            ..
        },
    ] = effects.as_slice()
    else {
        panic!("{effects:?}")
    };
    let failed: Vec<_> = failures.iter().map(|f| f.step.kind).collect();
    assert_eq!(failed.len(), 3, "every odd step failed and all were kept");
    assert!(
        core.extensions()
            .iter()
            .all(|e| e.status() == Status::Disposed)
    );
}

#[test]
fn declared_tools_are_dormant_until_a_matching_activation_replaces_them() {
    let (mut core, _) = HostCore::new(&[]).unwrap();
    let meta = DefinitionMeta {
        id: "ext".into(),
        namespaced: true,
        declared_tools: Some(vec![spec("search")]),
        declared_providers: None,
        dependencies: Vec::new(),
        policy: Default::default(),
    };
    assert_eq!(core.discover(vec![meta]), Ok(()));
    assert_eq!(
        core.said(),
        vec![Said::Publish],
        "dormant descriptors are published at discovery"
    );
    let dormant = core.registry().get("ext:search").unwrap();
    assert_eq!(dormant.binding, Binding::Dormant);
    assert_eq!(dormant.api_name, "ext_search");
    // A mismatching registration fails closed and keeps the dormant entry.
    let (op, cx) = start_activation(&mut core, "ext");
    open(&mut core, cx);
    register(
        &mut core,
        cx,
        Registration::Tool(ToolSpec::new("search", "search tool", "other-digest")),
    );
    let f = commit_fails(&mut core, op, cx);
    assert!(
        matches!(&f.cause, FailureCause::Declaration(m) if m.reason() == MismatchReason::RegisteredToolSchemaDigestMismatch)
    );
    assert_eq!(
        core.registry().get("ext:search").unwrap().binding,
        Binding::Dormant
    );
    // A matching one replaces it by the live tool in the commit.
    let (_, cx) = start_activation(&mut core, "ext");
    open(&mut core, cx);
    let Registered::Tool(t) = register(&mut core, cx, Registration::Tool(spec("search"))) else {
        panic!()
    };
    core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    let live = core.registry().get("ext:search").unwrap();
    assert_eq!(live.binding, Binding::Live(t));
    assert_eq!(live.api_name, "ext_search");
    assert_eq!(core.registry().len(), 1);
}

#[test]
fn declaration_checks_name_each_kind_of_mismatch() {
    let declared = vec![spec("a"), spec("b")];
    let reg = |specs: Vec<ToolSpec>| -> Vec<(ToolRef, ToolSpec)> {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, s)| (ToolRef(i as u64), s))
            .collect()
    };
    assert_eq!(
        check_declarations(&declared, &reg(vec![spec("b"), spec("a")])),
        Ok(())
    );
    let reason = |r: Vec<ToolSpec>| {
        check_declarations(&declared, &reg(r))
            .unwrap_err()
            .reason_code()
    };
    assert_eq!(reason(vec![spec("a")]), "declared_tool_not_registered");
    assert_eq!(
        reason(vec![spec("a"), spec("b"), spec("c")]),
        "undeclared_tool_registered"
    );
    assert_eq!(
        reason(vec![spec("a"), spec("b"), spec("b")]),
        "duplicate_registered_tool"
    );
    assert_eq!(
        reason(vec![spec("a"), ToolSpec::new("b", "other", "digest")]),
        "registered_tool_description_mismatch"
    );
    assert_eq!(
        reason(vec![spec("a"), ToolSpec::new("b", "b tool", "x")]),
        "registered_tool_schema_digest_mismatch"
    );
}

/// Found by the model checker: a plain extension must not take a
/// `<extension>:<tool>` name, or a later manifest extension's dormant
/// descriptor would be lost (INV-1).
#[test]
fn plain_extensions_cannot_take_namespaced_names_and_declarations_must_be_free() {
    let mut core = core_with(&["plain"]);
    let (op, cx) = start_activation(&mut core, "plain");
    open(&mut core, cx);
    register(&mut core, cx, Registration::Tool(spec("m:x")));
    let f = commit_fails(&mut core, op, cx);
    assert!(matches!(&f.cause, FailureCause::Registry(e) if e.code() == "TOOL_NAME_INVALID"));

    let (mut core, _) = HostCore::new(&[spec("m:x")]).unwrap();
    let before = core.clone();
    let answer = core.discover(vec![DefinitionMeta {
        id: "m".into(),
        namespaced: true,
        declared_tools: Some(vec![spec("x")]),
        declared_providers: None,
        dependencies: Vec::new(),
        policy: Default::default(),
    }]);
    assert!(matches!(
        answer,
        Err(DiscoveryError::InvalidDeclaration { .. })
    ));
    assert!(core.said().is_empty());
    assert_eq!(core, before, "the refused batch changed nothing");
}

/// Reloads `id` to commit with these tool names; returns its settled
/// outcome. The reference below says what the registry must then hold.
fn reload_with(core: &mut HostCore, id: &str, tools: &[&str]) -> Vec<ToolRef> {
    let op = request(core, OpKind::Reload(id.into()));
    let cx = match core.step(Input::Begin(op)).as_slice() {
        [Said::Do(Effect::CallFactory { context, .. })] => *context,
        other => panic!("{other:?}"),
    };
    open(core, cx);
    let refs = tools
        .iter()
        .map(|t| match register(core, cx, Registration::Tool(spec(t))) {
            Registered::Tool(r) => r,
            other => panic!("{other:?}"),
        })
        .collect();
    let mut effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    while effects
        .iter()
        .any(|e| matches!(e, Said::Do(Effect::RunCleanup { .. })))
    {
        effects = core.step(Input::CleanupFinished { op, result: Ok(()) });
    }
    assert!(
        matches!(
            effects.last(),
            Some(Said::Settle {
                outcome: OpOutcome::Reloaded { .. },
                ..
            })
        ),
        "{effects:?}"
    );
    refs
}

/// The general H-12 candidate, step by step: every tool `id` holds removed,
/// then each fresh one inserted keeping its old API name when free; a new
/// name never takes an API name that a tool inserted after it keeps
/// (INV-10: a tool that stays live keeps its API name).
fn reference_reload(
    before: &ToolRegistry,
    id: &str,
    tools: &[&str],
    refs: &[ToolRef],
) -> ToolRegistry {
    let owner = Owner::Extension(id.into());
    let mut expected = before.clone();
    let mut kept = std::collections::BTreeMap::new();
    for name in before.names() {
        if before.get(&name).unwrap().owner == owner {
            kept.insert(name.clone(), expected.remove(&name).unwrap().api_name);
        }
    }
    let mut reserved: std::collections::BTreeSet<String> =
        tools.iter().filter_map(|t| kept.get(*t).cloned()).collect();
    for (t, r) in tools.iter().zip(refs) {
        let keep = kept.remove(*t);
        if let Some(api) = &keep {
            reserved.remove(api);
        }
        expected
            .insert_reserving(&spec(t), owner.clone(), Binding::Live(*r), keep, &reserved)
            .unwrap();
    }
    expected
}

#[test]
fn a_reload_gives_the_general_candidate_whichever_tools_come_back() {
    let mut core = core_with(&["x", "y"]);
    let tools = |names: &[&str]| -> Vec<Registration> {
        names.iter().map(|n| Registration::Tool(spec(n))).collect()
    };
    activate_with(&mut core, "x", &tools(&["a.b", "r", "s"]));
    activate_with(&mut core, "y", &tools(&["m"]));
    for fresh in [
        // The same tools in the same order, in another order, fewer of
        // them; a new one, `a_b`, inserted before `a.b`, which keeps its
        // API name `a_b` (the new one gets `a_b_2`); the old ones in
        // another order; fewer again.
        &["a.b", "r", "s"][..],
        &["s", "a.b", "r"],
        &["r", "a.b"],
        &["a_b", "a.b", "r"],
        &["r", "a.b", "a_b"],
        &["a.b", "r"],
    ] {
        let before = core.registry().clone();
        let refs = reload_with(&mut core, "x", fresh);
        let expected = reference_reload(&before, "x", fresh, &refs);
        assert_eq!(core.registry(), &expected, "reloading with {fresh:?}");
        assert_eq!(core.registry().api_name_count(), core.registry().len());
    }
    let apis: Vec<_> = core
        .registry()
        .iter()
        .map(|e| (e.name.clone(), e.api_name.clone()))
        .collect();
    assert_eq!(
        apis,
        [("base", "base"), ("m", "m"), ("a.b", "a_b"), ("r", "r")]
            .map(|(n, a)| (n.to_owned(), a.to_owned()))
    );
}

/// M-3 and H-12 as definition data: the core says which discovered
/// extensions an event and the eager start begin, and which deadline
/// applies to each step.
#[test]
fn the_core_answers_the_triggers_and_the_deadlines_of_each_definition() {
    use std::time::Duration;
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    let mut on_save = DefinitionMeta::plain("on_save");
    on_save.policy.events = vec!["save".into(), "open".into()];
    let mut eager = DefinitionMeta::plain("eager");
    eager.policy.eager = true;
    eager.policy.deadlines.activation = DeadlineOverride::Set(Duration::from_millis(5));
    eager.policy.deadlines.call = DeadlineOverride::Off;
    let plain = DefinitionMeta::plain("plain");
    assert_eq!(core.discover(vec![on_save, eager, plain]), Ok(()));
    assert_eq!(core.triggered_by("save"), vec!["on_save".to_owned()]);
    assert_eq!(core.triggered_by("close"), Vec::<String>::new());
    assert_eq!(core.eager(), vec!["eager".to_owned()]);

    let host = Deadlines {
        activation: Some(Duration::from_secs(30)),
        cleanup: Some(Duration::from_secs(10)),
        hook: Some(Duration::from_secs(10)),
        call: Some(Duration::from_secs(60)),
    };
    core.set_deadlines(host);
    assert_eq!(core.deadlines(), host);
    let d = |step| core.deadline_for(step);
    assert_eq!(
        d(DeadlineStep::Activation("eager")),
        Some(Duration::from_millis(5))
    );
    assert_eq!(d(DeadlineStep::Call(Some("eager"))), None);
    assert_eq!(d(DeadlineStep::Cleanup("eager")), host.cleanup);
    assert_eq!(d(DeadlineStep::Activation("plain")), host.activation);
    assert_eq!(d(DeadlineStep::Call(None)), host.call);
    assert_eq!(d(DeadlineStep::CallsWait(None)), host.cleanup);
    assert_eq!(d(DeadlineStep::Hooks), host.hook);

    // Where code runs (issue 23) follows the deadline that applies: in the
    // caller's task when none does and the call cannot outlive its
    // caller, or when one does and one thread runs every task (a task of
    // its own would hold it no better); else in a task of its own.
    for executor in [Executor::OneThread, Executor::Threads] {
        assert_eq!(
            core.call_placement(Some("eager"), false, executor),
            Placement::Inline
        );
        assert_eq!(
            core.call_placement(Some("eager"), true, executor),
            Placement::Task(None)
        );
        assert_eq!(
            core.call_placement(Some("plain"), true, executor),
            Placement::Task(host.call)
        );
    }
    assert_eq!(
        core.call_placement(Some("plain"), false, Executor::Threads),
        Placement::Task(host.call)
    );
    assert_eq!(
        core.call_placement(Some("plain"), false, Executor::OneThread),
        Placement::InlineBounded(host.call.unwrap())
    );
    assert_eq!(
        core.hook_placement(Executor::Threads),
        Placement::Task(host.hook)
    );
    assert_eq!(
        core.hook_placement(Executor::OneThread),
        Placement::InlineBounded(host.hook.unwrap())
    );
    assert_eq!(
        core.activation_placement("eager"),
        Placement::Task(Some(Duration::from_millis(5)))
    );
    let none = Deadlines {
        activation: None,
        call: None,
        hook: None,
        ..host
    };
    core.set_deadlines(none);
    assert_eq!(core.activation_placement("plain"), Placement::Inline);
    for executor in [Executor::OneThread, Executor::Threads] {
        assert_eq!(
            core.call_placement(None, false, executor),
            Placement::Inline
        );
        assert_eq!(core.hook_placement(executor), Placement::Inline);
    }

    // Once the extension left `discovered`, nothing triggers it again.
    let (op, cx) = start_activation(&mut core, "eager");
    open(&mut core, cx);
    let effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    assert!(
        matches!(effects.last(), Some(Said::Settle { op: o, .. }) if *o == op),
        "{effects:?}"
    );
    assert_eq!(core.eager(), Vec::<String>::new());
}

/// INV-14 in the core: a declaration mismatch revokes the grant (a dormant
/// call is then refused), a transient failure neither revokes nor
/// restores it, and a committed activation restores it.
#[test]
fn a_mismatch_revokes_the_grant_until_an_activation_commits() {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    let meta = DefinitionMeta {
        namespaced: true,
        declared_tools: Some(vec![spec("x")]),
        ..DefinitionMeta::plain("m")
    };
    assert_eq!(core.discover(vec![meta]), Ok(()));
    assert_eq!(core.said(), vec![Said::Publish]);
    let start = DormantCall::Start {
        extension: "m".into(),
    };
    assert_eq!(core.admit_dormant_call("m:x"), start);
    assert_eq!(core.admit_dormant_call("base"), DormantCall::NotDormant);

    // A transient failure: the factory fails. The grant holds.
    let (op, cx) = start_activation(&mut core, "m");
    let effects = core.step(Input::FactoryReturned {
        context: cx,
        result: Err(Failure::error("transient")),
    });
    assert!(matches!(effects.last(), Some(Said::Settle { op: o, .. }) if *o == op));
    assert!(!core.is_revoked("m"));
    assert_eq!(core.admit_dormant_call("m:x"), start);

    // A mismatch: `activate` registers an undeclared tool.
    let (op, cx) = start_activation(&mut core, "m");
    open(&mut core, cx);
    register(&mut core, cx, Registration::Tool(spec("y")));
    let f = commit_fails(&mut core, op, cx);
    assert!(matches!(f.cause, FailureCause::Declaration(_)));
    assert!(core.is_revoked("m"));
    let revoked = DormantCall::Revoked {
        extension: "m".into(),
    };
    assert_eq!(core.admit_dormant_call("m:x"), revoked);

    // Another transient failure restores nothing.
    let (op, cx) = start_activation(&mut core, "m");
    let effects = core.step(Input::FactoryReturned {
        context: cx,
        result: Err(Failure::error("transient")),
    });
    assert!(matches!(effects.last(), Some(Said::Settle { op: o, .. }) if *o == op));
    assert_eq!(core.admit_dormant_call("m:x"), revoked);

    // An activation that commits restores the grant.
    let (op, cx) = start_activation(&mut core, "m");
    open(&mut core, cx);
    register(&mut core, cx, Registration::Tool(spec("x")));
    let effects = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    assert!(
        matches!(effects.last(), Some(Said::Settle { op: o, outcome: OpOutcome::Activated { .. } }) if *o == op),
        "{effects:?}"
    );
    assert!(!core.is_revoked("m"));
    assert_eq!(core.admit_dormant_call("m:x"), DormantCall::NotDormant);
}

/// A manifest extension `m` (namespaced) declaring these tools.
fn manifest_meta(tools: &[&str]) -> DefinitionMeta {
    DefinitionMeta {
        id: "m".into(),
        namespaced: true,
        declared_tools: Some(tools.iter().map(|t| spec(t)).collect()),
        declared_providers: None,
        dependencies: Vec::new(),
        policy: Default::default(),
    }
}

fn dormant_names(core: &HostCore) -> Vec<String> {
    core.registry()
        .iter()
        .filter(|e| e.binding == Binding::Dormant)
        .map(|e| e.name.clone())
        .collect()
}

/// Requests and begins a redefinition; returns its op and what it set off.
fn redefine(core: &mut HostCore, meta: DefinitionMeta) -> (OpId, Vec<Said>) {
    let op = request(core, OpKind::Redefine(Box::new(meta)));
    let said = core.step(Input::Begin(op));
    (op, said)
}

#[test]
fn a_dormant_extension_is_redefined_at_once_in_one_publication_and_runs_nothing() {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    core.discover(vec![manifest_meta(&["x"])]).unwrap();
    core.said();
    assert_eq!(dormant_names(&core), ["m:x"]);
    let (op, said) = redefine(&mut core, manifest_meta(&["y", "z"]));
    assert_eq!(
        said,
        vec![
            Said::Publish,
            Said::Settle {
                op,
                outcome: OpOutcome::Redefined {
                    extension: "m".into()
                }
            }
        ]
    );
    assert_eq!(dormant_names(&core), ["m:y", "m:z"]);
    assert_eq!(
        core.extension("m").map(ExtensionSlot::status),
        Some(Status::Discovered)
    );
    let declared: Vec<&str> = core
        .extension("m")
        .unwrap()
        .meta()
        .declared_tools
        .iter()
        .flatten()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(declared, ["y", "z"]);
}

#[test]
fn a_refused_redefinition_changes_nothing() {
    // `m:y` is a base tool: the new declaration `y` cannot be published.
    let (mut core, _) = HostCore::new(&[spec("m:y")]).unwrap();
    core.discover(vec![manifest_meta(&["x"])]).unwrap();
    core.said();
    let registry = core.registry().clone();
    let (op, said) = redefine(&mut core, manifest_meta(&["y"]));
    assert!(
        matches!(
            said.as_slice(),
            [Said::Settle {
                op: o,
                outcome: OpOutcome::RedefineRefused {
                    error: RedefineError::Invalid(DiscoveryError::InvalidDeclaration { .. }),
                    ..
                }
            }] if *o == op
        ),
        "{said:?}"
    );
    assert_eq!(core.registry(), &registry);
    assert_eq!(dormant_names(&core), ["m:x"]);
    // A dependency cycle is refused too: `m` on `a`, which depends on `m`.
    let mut a = DefinitionMeta::plain("a");
    a.dependencies = vec!["m".into()];
    core.discover(vec![a]).unwrap();
    let mut cyclic = manifest_meta(&["x"]);
    cyclic.dependencies = vec!["a".into()];
    let (_, said) = redefine(&mut core, cyclic);
    assert!(
        matches!(
            said.as_slice(),
            [Said::Settle {
                outcome: OpOutcome::RedefineRefused {
                    error: RedefineError::Invalid(DiscoveryError::DependencyCycle { .. }),
                    ..
                },
                ..
            }]
        ),
        "{said:?}"
    );
    assert!(core.extension("m").unwrap().meta().dependencies.is_empty());
}

/// An active `m`, declaring `x`, redefined to declare `y`: its fresh
/// generation registers `registers`; returns what the commit set off.
fn redefine_active(core: &mut HostCore, registers: &str) -> (OpId, Vec<Said>) {
    let (op, said) = redefine(core, manifest_meta(&["y"]));
    let [Said::Do(Effect::CallFactory { context, .. })] = said.as_slice() else {
        panic!("{said:?}")
    };
    let cx = *context;
    open(core, cx);
    register(core, cx, Registration::Tool(spec(registers)));
    let said = core.step(Input::ActivateReturned {
        context: cx,
        result: Ok(()),
    });
    (op, said)
}

fn active_m() -> HostCore {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    core.discover(vec![manifest_meta(&["x"])]).unwrap();
    core.said();
    activate_with(&mut core, "m", &[Registration::Tool(spec("x"))]);
    core
}

#[test]
fn an_active_extension_is_redefined_as_a_reload_checked_against_the_new_declarations() {
    let mut core = active_m();
    let (op, mut said) = redefine_active(&mut core, "y");
    // The old generation's instance is disposed after the commit.
    while said
        .iter()
        .any(|s| matches!(s, Said::Do(Effect::RunCleanup { .. })))
    {
        said = core.step(Input::CleanupFinished { op, result: Ok(()) });
    }
    assert!(
        matches!(
            said.last(),
            Some(Said::Settle {
                outcome: OpOutcome::Reloaded { .. },
                ..
            })
        ),
        "{said:?}"
    );
    assert!(core.registry().get("m:y").is_some());
    assert!(core.registry().get("m:x").is_none());
    let declared = core.extension("m").unwrap().meta().declared_tools.clone();
    assert_eq!(declared, Some(vec![spec("y")]));
}

#[test]
fn a_redefinition_whose_fresh_generation_breaks_the_new_declarations_keeps_the_old_definition() {
    let mut core = active_m();
    let registry = core.registry().clone();
    // The fresh generation registers the old declaration `x`, not `y`.
    let (op, said) = redefine_active(&mut core, "x");
    assert!(
        said.iter()
            .any(|s| matches!(s, Said::Do(Effect::RunCleanup { .. }))),
        "the fresh instance is rolled back: {said:?}"
    );
    let said = core.step(Input::CleanupFinished { op, result: Ok(()) });
    assert!(
        matches!(
            said.last(),
            Some(Said::Settle {
                outcome: OpOutcome::ReloadFailed(ActivationFailure {
                    cause: FailureCause::Declaration(_),
                    ..
                }),
                ..
            })
        ),
        "{said:?}"
    );
    assert_eq!(core.registry(), &registry, "the old generation stays live");
    assert_eq!(
        core.extension("m").map(ExtensionSlot::status),
        Some(Status::Active)
    );
    let declared = core.extension("m").unwrap().meta().declared_tools.clone();
    assert_eq!(declared, Some(vec![spec("x")]), "the old definition stays");
}

#[test]
fn an_active_extension_cannot_change_its_dependencies_by_redefinition() {
    let mut core = active_m();
    let mut meta = manifest_meta(&["x"]);
    meta.dependencies = vec!["base2".into()];
    let (_, said) = redefine(&mut core, meta);
    assert!(
        matches!(
            said.as_slice(),
            [Said::Settle {
                outcome: OpOutcome::RedefineRefused {
                    error: RedefineError::ActiveChange {
                        what: "dependencies",
                        ..
                    },
                    ..
                },
                ..
            }]
        ),
        "{said:?}"
    );
}

#[test]
fn redefining_a_failed_extension_restores_its_grant_and_keeps_its_status() {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    core.discover(vec![manifest_meta(&["x"])]).unwrap();
    core.said();
    // Its activation registers `y`, which it does not declare (M-5).
    let (op, cx) = start_activation(&mut core, "m");
    open(&mut core, cx);
    register(&mut core, cx, Registration::Tool(spec("y")));
    let failure = commit_fails(&mut core, op, cx);
    assert!(matches!(failure.cause, FailureCause::Declaration(_)));
    assert!(core.is_revoked("m"));
    assert_eq!(
        core.extension("m").map(ExtensionSlot::status),
        Some(Status::Failed)
    );
    let (_, said) = redefine(&mut core, manifest_meta(&["y"]));
    assert!(
        matches!(
            said.last(),
            Some(Said::Settle {
                outcome: OpOutcome::Redefined { .. },
                ..
            })
        ),
        "{said:?}"
    );
    assert!(!core.is_revoked("m"));
    assert_eq!(
        core.extension("m").map(ExtensionSlot::status),
        Some(Status::Failed)
    );
    assert_eq!(dormant_names(&core), ["m:y"]);
}

#[test]
fn a_redefinition_queued_when_shutdown_is_asked_for_is_cancelled() {
    let mut core = active_m();
    let op = request(&mut core, OpKind::Redefine(Box::new(manifest_meta(&["y"]))));
    request(&mut core, OpKind::Dispose);
    let said = core.step(Input::Begin(op));
    assert_eq!(
        said,
        vec![Said::Settle {
            op,
            outcome: OpOutcome::CancelledBeforeStart {
                extension: "m".into()
            }
        }]
    );
}
