//! Core bugs the model checker found, pinned as direct regression tests on
//! the pure core (the model keeps checking them too: the default tool pool
//! holds `m:x`, a name in the manifest extension's namespace).

use exthost_core::*;

const DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, format!("tool {name}"), DIGEST)
}

fn manifest() -> DefinitionMeta {
    DefinitionMeta {
        id: "m".into(),
        namespaced: true,
        declared_tools: Some(vec![spec("x")]),
        declared_providers: None,
        dependencies: Vec::new(),
        policy: Default::default(),
    }
}

/// Applies `input` and drains what it left in the core's outbox. Every
/// input is read at the clock's origin, except the timer's (`Timeout`),
/// which fires at the deadline the core asked to be woken at.
fn apply(core: &mut HostCore, input: Input) -> Drained {
    let now = match input {
        Input::Timeout { .. } => core.poll_timeout().expect("a deadline the core waits for"),
        _ => Moment::ZERO,
    };
    core.apply(input, now).expect("a valid input");
    core.drain_outbox()
}

/// A caller's command: its reply, with what it set off drained and dropped.
fn command<T>(core: &mut HostCore, f: impl FnOnce(&mut HostCore) -> T) -> T {
    let reply = f(core);
    core.drain_outbox();
    reply
}

fn discover(core: &mut HostCore, batch: Vec<DefinitionMeta>) -> Result<(), DiscoveryError> {
    command(core, |core| core.discover(batch))
}

fn request(core: &mut HostCore, kind: OpKind) -> OpId {
    match command(core, |core| core.request(kind)) {
        Requested::Enqueued(op) => op,
        other => panic!("{other:?}"),
    }
}

fn request_activation(core: &mut HostCore) -> OpId {
    request(core, OpKind::Activate("a".into()))
}

fn register_tool(core: &mut HostCore, context: ContextId, tool: &str) {
    command(core, |core| {
        core.register(context, Registration::Tool(spec(tool)))
    })
    .expect("the context is open");
}

/// The cleanup step to report done when it is the last thing `drained`
/// holds in the order a driver takes it (commands, publication, settled).
fn last_cleanup(drained: &Drained) -> Option<OpId> {
    if drained.published || !drained.settled.is_empty() {
        return None;
    }
    match drained.commands.last() {
        Some(Effect::RunCleanup { op, .. }) => Some(*op),
        _ => None,
    }
}

/// Activates plain extension `a`, which registers `tool`; returns the
/// activation's outcome.
fn activate_registering(core: &mut HostCore, tool: &str) -> OpOutcome {
    let op = request_activation(core);
    let context = match apply(core, Input::Begin(op)).commands.as_slice() {
        [Effect::CallFactory { context, .. }] => *context,
        other => panic!("{other:?}"),
    };
    apply(
        core,
        Input::FactoryReturned {
            context,
            result: Ok(()),
        },
    );
    register_tool(core, context, tool);
    let mut effects = apply(
        core,
        Input::ActivateReturned {
            context,
            result: Ok(()),
        },
    );
    // A rollback runs the instance's dispose; report it done.
    while let Some(op) = last_cleanup(&effects) {
        effects = apply(core, Input::CleanupFinished { op, result: Ok(()) });
    }
    effects
        .settled
        .into_iter()
        .map(|s| s.outcome)
        .next()
        .expect("the activation settled")
}

/// Counterexample (INV-1): plain `a` registered `m:x` and committed; then
/// `m` was discovered and its dormant descriptor `m:x` was silently dropped,
/// so an inactive manifest extension's declared tool was missing.
#[test]
fn a_plain_extension_cannot_take_a_namespaced_tool_name() {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    discover(&mut core, vec![DefinitionMeta::plain("a")]).unwrap();
    let outcome = activate_registering(&mut core, "m:x");
    let OpOutcome::ActivationFailed(failure) = outcome else {
        panic!("the activation must fail, got {outcome:?}")
    };
    let FailureCause::Registry(error) = &failure.cause else {
        panic!("{:?}", failure.cause)
    };
    assert_eq!(error.code(), "TOOL_NAME_INVALID");
    assert_eq!(core.registry().names(), ["base"]);

    discover(&mut core, vec![manifest()]).unwrap();
    let dormant = core.registry().get("m:x").expect("m's dormant descriptor");
    assert_eq!(dormant.binding, Binding::Dormant);
    assert_eq!(dormant.owner, Owner::extension("m"));
}

#[test]
fn a_plain_extension_keeps_plain_names() {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    discover(&mut core, vec![DefinitionMeta::plain("a")]).unwrap();
    let outcome = activate_registering(&mut core, "m_x");
    assert_eq!(
        outcome,
        OpOutcome::Activated {
            extension: "a".into()
        }
    );
    assert_eq!(core.registry().names(), ["base", "m_x"]);
}

/// The same loss through a base tool: discovering `m` while the base tool
/// `m:x` is live is refused as a whole (H-2) instead of dropping the
/// descriptor.
#[test]
fn discovery_refuses_a_descriptor_whose_name_is_live() {
    let (mut core, _) = HostCore::new(&[spec("m:x")]).unwrap();
    match discover(&mut core, vec![manifest()]) {
        Err(DiscoveryError::InvalidDeclaration {
            id,
            reason: RegistryError::Duplicate { name, holder },
        }) => {
            assert_eq!(id, "m");
            assert_eq!(name, "m:x");
            assert_eq!(holder, Owner::Base);
        }
        other => panic!("{other:?}"),
    }
    assert!(core.extensions().is_empty());
    assert_eq!(core.registry().names(), ["m:x"]);
    assert_eq!(core.registry().get("m:x").unwrap().owner, Owner::Base);
}

/// Begins an activation of plain `a` and returns its operation and context
/// (the core then awaits the factory).
fn begin_activation(core: &mut HostCore) -> (OpId, ContextId) {
    core.set_deadlines(Deadlines {
        activation: Some(std::time::Duration::from_secs(30)),
        ..Deadlines::NONE
    });
    discover(core, vec![DefinitionMeta::plain("a")]).unwrap();
    let op = request_activation(core);
    match apply(core, Input::Begin(op)).commands.as_slice() {
        [Effect::CallFactory { context, .. }] => (op, *context),
        other => panic!("{other:?}"),
    }
}

/// The cause the activation settled with, reporting every rollback step done.
fn settled_cause(core: &mut HostCore, mut effects: Drained) -> FailureCause {
    while let Some(op) = last_cleanup(&effects) {
        effects = apply(core, Input::CleanupFinished { op, result: Ok(()) });
    }
    effects
        .settled
        .into_iter()
        .find_map(|s| match s.outcome {
            OpOutcome::ActivationFailed(f) => Some(f.cause),
            _ => None,
        })
        .expect("the activation failed")
}

/// H-12: once an activation's deadline passed, whatever it returns counts
/// as timed out (`HostCore::deadline_passed`; `FailureCause::DeadlinePassed`:
/// "a completion after it does not count"). Holds for `activate`.
#[test]
fn an_activate_returning_after_its_deadline_rolls_back_as_timed_out() {
    for result in [Ok(()), Err(Failure::error("late failure"))] {
        let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
        let (op, context) = begin_activation(&mut core);
        apply(
            &mut core,
            Input::FactoryReturned {
                context,
                result: Ok(()),
            },
        );
        assert_eq!(
            apply(&mut core, Input::Timeout { op }),
            Drained {
                commands: vec![Effect::Cancel { context }],
                ..Drained::default()
            }
        );
        let effects = apply(&mut core, Input::ActivateReturned { context, result });
        assert_eq!(
            settled_cause(&mut core, effects),
            FailureCause::DeadlinePassed
        );
    }
}

/// The same for a factory that returns an instance after the deadline.
#[test]
fn a_factory_returning_an_instance_after_its_deadline_rolls_back_as_timed_out() {
    let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
    let (op, context) = begin_activation(&mut core);
    apply(&mut core, Input::Timeout { op });
    let effects = apply(
        &mut core,
        Input::FactoryReturned {
            context,
            result: Ok(()),
        },
    );
    assert_eq!(
        settled_cause(&mut core, effects),
        FailureCause::DeadlinePassed
    );
}

/// Found while modelling INV-12 (not by the checker: INV-12c only asks that
/// such an activation never commits, which holds). A factory that *fails*
/// after the activation's deadline passed settled with
/// `FailureCause::Factory`, not `DeadlinePassed`, although whatever the
/// activation returns after its deadline counts as timed out; a `StepLost`
/// there was the same. `factory_returned` checked the error before the
/// signal; it now checks the deadline first, as `activate_returned` does.
#[test]
fn a_factory_failing_after_its_deadline_rolls_back_as_timed_out() {
    for input in ["error", "lost"] {
        let (mut core, _) = HostCore::new(&[spec("base")]).unwrap();
        let (op, context) = begin_activation(&mut core);
        apply(&mut core, Input::Timeout { op });
        let effects = match input {
            "error" => apply(
                &mut core,
                Input::FactoryReturned {
                    context,
                    result: Err(Failure::error("late failure")),
                },
            ),
            _ => apply(&mut core, Input::StepLost { op }),
        };
        assert_eq!(
            settled_cause(&mut core, effects),
            FailureCause::DeadlinePassed,
            "{input}"
        );
    }
}

/// Begins `op` (an activation or a reload of plain `a`), lets its factory
/// return, registers `tools` in order, lets `activate` return, runs every
/// cleanup step it asks for, and returns the settled outcome.
fn run_registering(core: &mut HostCore, op: OpId, tools: &[&str]) -> OpOutcome {
    let context = match apply(core, Input::Begin(op)).commands.as_slice() {
        [.., Effect::CallFactory { context, .. }] => *context,
        other => panic!("{other:?}"),
    };
    apply(
        core,
        Input::FactoryReturned {
            context,
            result: Ok(()),
        },
    );
    for tool in tools {
        register_tool(core, context, tool);
    }
    let mut effects = apply(
        core,
        Input::ActivateReturned {
            context,
            result: Ok(()),
        },
    );
    loop {
        if let Some(settled) = effects.settled.first() {
            return settled.outcome.clone();
        }
        match effects.commands.iter().find_map(|e| match e {
            Effect::RunCleanup { op, .. } => Some(*op),
            _ => None,
        }) {
            Some(op) => effects = apply(core, Input::CleanupFinished { op, result: Ok(()) }),
            None => panic!("neither a cleanup step nor a settle: {effects:?}"),
        }
    }
}

/// Counterexample of the default check's one search (issue 24, INV-10;
/// fixed): `b` holds `m.x` under the suffixed API name `m_x_2` (the manifest
/// tool `m:x` holds `m_x`); a reload registers a new tool `m_x` and then
/// `m.x` again. The reload's candidate frees `m_x_2` with the old
/// generation, the new `m_x`, registered first, takes it, and `m.x` gets
/// `m_x_3`: a tool that stays live changed its API name. Here with a base
/// tool `m:x` in `m`'s place. Fixed: a reload's candidate reserves the API
/// names its staged tools keep until each is inserted
/// (`ToolRegistry::insert_reserving`).
#[test]
fn a_reload_keeps_the_suffixed_api_name_of_a_tool_it_registers_again() {
    let (mut core, _) = HostCore::new(&[spec("m:x")]).unwrap();
    discover(&mut core, vec![DefinitionMeta::plain("a")]).unwrap();
    let op = request_activation(&mut core);
    let outcome = run_registering(&mut core, op, &["m.x"]);
    assert_eq!(
        outcome,
        OpOutcome::Activated {
            extension: "a".into()
        }
    );
    assert_eq!(core.registry().get("m.x").unwrap().api_name, "m_x_2");
    let op = request(&mut core, OpKind::Reload("a".into()));
    let outcome = run_registering(&mut core, op, &["m_x", "m.x"]);
    assert!(matches!(outcome, OpOutcome::Reloaded { .. }), "{outcome:?}");
    assert_eq!(
        core.registry().get("m.x").unwrap().api_name,
        "m_x_2",
        "m.x stayed live across the reload and keeps its API name (INV-10)"
    );
}
