//! Deterministic walks through the model's real step function (the one the
//! checker uses): a shutdown that waits for a tool call in flight, one that
//! abandons it when its deadline passes, and the same walk under the seeded
//! bug that ignores calls. Each step must be one the model offers, and what
//! it left in the core's outbox is the core's own.

use exthost_core::{
    Awaiting, CallRefused, CallVerdict, CleanupKind, Drained, Effect, Mutant, OpKind, OpOutcome,
};
use exthost_model::model::{Action, Awaited, Reg, Reply};
use exthost_model::properties::{self, INVARIANTS, PROTOCOL};
use exthost_model::state::Note;
use exthost_model::{Bounds, HostModel, State};
use stateright::Model;

/// One plain extension `a` that may register the tool `x` and a disposer;
/// one call, one deadline and one lost step.
fn bounds() -> Bounds {
    Bounds {
        extensions: 1,
        manifest: false,
        tools: 1,
        hooks: 0,
        disposers: 1,
        ops: 1,
        withdraws: 0,
        late: false,
        hangs: 0,
        refused: 0,
        cleanup_failures: 0,
        tool_names: vec!["x".into()],
        calls: 1,
        deadlines: 1,
        losses: 1,
        reloads: 0,
        dependency: false,
        providers: false,
    }
}

/// Takes the action `pick` selects among those the model offers in `s`,
/// runs it through the model's step function, and returns what it left in
/// the core's outbox and the next state.
fn take(
    model: &HostModel,
    s: &State,
    what: &str,
    pick: impl Fn(&Action) -> bool,
) -> (Drained, State) {
    let (_, effects, next) = take_reply(model, s, what, pick);
    (effects, next)
}

/// [`take`], with the core's typed reply too.
fn take_reply(
    model: &HostModel,
    s: &State,
    what: &str,
    pick: impl Fn(&Action) -> bool,
) -> (Reply, Drained, State) {
    let mut offered = Vec::new();
    model.actions(s, &mut offered);
    let action = offered
        .into_iter()
        .find(|a| pick(a))
        .unwrap_or_else(|| panic!("{what} is not offered in\n{s:?}"));
    let (reply, effects) =
        match model.perform_and_drain(&mut s.core.clone(), s.env.redefined, &action) {
            Some(performed) => performed.expect("the core accepts it"),
            None => (Reply::None, Drained::default()),
        };
    let next = model.next_state(s, action).expect("a step");
    (reply, effects, next)
}

fn offered(model: &HostModel, s: &State, pick: impl Fn(&Action) -> bool) -> bool {
    let mut actions = Vec::new();
    model.actions(s, &mut actions);
    actions.iter().any(pick)
}

/// Every invariant and `protocol` hold in `s`.
fn assert_invariants(model: &HostModel, s: &State) {
    for name in INVARIANTS.iter().copied().chain([PROTOCOL]) {
        if name == "INV-9" {
            continue; // an `eventually` property, judged on whole paths
        }
        let check = properties::check(name).expect("a check");
        assert_eq!(check(&model.scenario, s), Ok(()), "{name} in\n{s:?}");
    }
}

/// From the initial state: discover `a`, activate it with the tool `x` and
/// one disposer, request `dispose`, start a call of `x`, and begin the
/// shutdown. Returns the state in which the core waits for the call.
fn up_to_the_wait(model: &HostModel) -> State {
    let s = model.initial_state();
    let (_, s) = take(model, &s, "discovery", |a| matches!(a, Action::Discover(0)));
    let (_, s) = take(
        model,
        &s,
        "activate(a)",
        |a| matches!(a, Action::Request(OpKind::Activate(id)) if id == "a"),
    );
    let (_, s) = take(model, &s, "begin", |a| matches!(a, Action::Begin { .. }));
    let (_, s) = take(model, &s, "the factory", |a| {
        matches!(a, Action::Factory { ok: true, .. })
    });
    let (_, s) = take(model, &s, "register x", |a| {
        matches!(
            a,
            Action::Register {
                reg: Reg::Tool(0),
                ..
            }
        )
    });
    let (_, s) = take(model, &s, "register a disposer", |a| {
        matches!(
            a,
            Action::Register {
                reg: Reg::Disposer,
                ..
            }
        )
    });
    let (effects, s) = take(model, &s, "activate returns", |a| {
        matches!(a, Action::ActivateReturned { ok: true, .. })
    });
    assert!(
        effects
            .settled
            .iter()
            .any(|s| matches!(s.outcome, OpOutcome::Activated { .. }))
    );
    // The reduction: calls start only once the shutdown is next.
    assert!(!offered(model, &s, |a| matches!(
        a,
        Action::CallStart { .. }
    )));
    let (_, s) = take(model, &s, "dispose", |a| {
        matches!(a, Action::Request(OpKind::Dispose))
    });
    let (reply, effects, s) = take_reply(
        model,
        &s,
        "a call of x",
        |a| matches!(a, Action::CallStart { tool, .. } if tool == "x"),
    );
    let Reply::Call(Ok(admitted)) = reply else {
        panic!("{reply:?}")
    };
    assert!(effects.is_empty());
    assert_eq!(s.env.calls.len(), 1);
    assert_eq!(s.env.calls[0].call, admitted.call);
    assert_eq!(s.env.calls[0].ext, "a");
    let (effects, s) = take(model, &s, "the shutdown begins", |a| {
        matches!(
            a,
            Action::Begin {
                kind: OpKind::Dispose,
                ..
            }
        )
    });
    // Before a's first cleanup step, its call gets its signal and is awaited.
    assert!(
        effects
            .commands
            .iter()
            .any(|e| matches!(e, Effect::CancelCalls { calls } if *calls == [admitted.call])),
        "{effects:?}"
    );
    assert!(
        !effects
            .commands
            .iter()
            .any(|e| matches!(e, Effect::RunCleanup { .. })),
        "{effects:?}"
    );
    assert!(matches!(s.core.awaiting(), Some(Awaiting::Calls(_, ext)) if ext == "a"));
    assert!(s.env.calls[0].cancelled);
    assert_invariants(model, &s);
    s
}

/// Reports both cleanup steps of `a` (disposer, then instance) done and
/// returns the state after the shutdown settled.
fn finish_shutdown(model: &HostModel, mut s: State) -> State {
    for kind in ["disposer", "instance"] {
        let (_, next) = take(model, &s, kind, |a| {
            matches!(a, Action::Cleanup { ok: true, .. })
        });
        assert_invariants(model, &next);
        s = next;
    }
    assert!(s.env.disposed);
    assert!(s.env.calls.is_empty());
    s
}

#[test]
fn shutdown_waits_for_a_call_before_the_first_cleanup_step() {
    let model = HostModel::new(bounds());
    let s = up_to_the_wait(&model);
    let call = s.env.calls[0].call;
    let (reply, effects, s) = take_reply(
        &model,
        &s,
        "the call finishes",
        |a| matches!(a, Action::CallFinish { call: c, deadline_passed: false, .. } if *c == call),
    );
    assert_eq!(reply, Reply::CallEnded(CallVerdict::Delivered));
    match effects.commands.as_slice() {
        [Effect::RunCleanup { step, .. }] => {
            assert_eq!(step.extension, "a");
            assert!(matches!(step.kind, CleanupKind::Disposer { index: 0, .. }));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.env.note, Some(Note::CallDrained));
    assert!(s.env.calls.is_empty());
    assert_invariants(&model, &s);
    let s = finish_shutdown(&model, s);
    // After the shutdown a call of the tool that was live is refused.
    let (reply, effects, s) = take_reply(&model, &s, "a call after the shutdown", |a| {
        matches!(a, Action::CallStart { .. })
    });
    assert_eq!(reply, Reply::Call(Err(CallRefused::HostDisposed)));
    assert!(effects.is_empty());
    assert_eq!(s.env.note, Some(Note::CallRefusedAfterShutdown));
    assert_invariants(&model, &s);
}

#[test]
fn shutdown_abandons_a_call_that_outlives_its_deadline() {
    let model = HostModel::new(bounds());
    let s = up_to_the_wait(&model);
    let call = s.env.calls[0].call;
    let (effects, s) = take(&model, &s, "the wait's deadline", |a| {
        matches!(
            a,
            Action::Deadline {
                on: Awaited::Calls,
                ..
            }
        )
    });
    match effects.commands.as_slice() {
        [
            Effect::AbandonCalls { calls },
            Effect::RunCleanup { step, .. },
        ] => {
            assert_eq!(*calls, [call]);
            assert_eq!(step.extension, "a");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.env.note, Some(Note::CallsAbandoned));
    assert!(s.env.calls.is_empty());
    assert_eq!(s.env.abandoned.len(), 1);
    assert_invariants(&model, &s);
    // The abandoned call reports late: its result is discarded, and the
    // cleanup step it raced with is still the one awaited.
    let (reply, effects, s) = take_reply(
        &model,
        &s,
        "the abandoned call reports",
        |a| matches!(a, Action::CallFinish { call: c, .. } if *c == call),
    );
    assert_eq!(reply, Reply::CallEnded(CallVerdict::Discarded));
    assert!(effects.is_empty());
    assert_eq!(s.env.note, Some(Note::AbandonedCallDiscarded));
    assert!(matches!(s.core.awaiting(), Some(Awaiting::Cleanup(..))));
    assert_invariants(&model, &s);
    finish_shutdown(&model, s);
}

#[test]
fn a_lost_wait_abandons_the_calls_too() {
    let model = HostModel::new(bounds());
    let s = up_to_the_wait(&model);
    let (effects, s) = take(&model, &s, "the wait's task is lost", |a| {
        matches!(
            a,
            Action::Lost {
                on: Awaited::Calls,
                ..
            }
        )
    });
    assert!(
        matches!(
            effects.commands.as_slice(),
            [Effect::AbandonCalls { .. }, Effect::RunCleanup { .. }]
        ),
        "{effects:?}"
    );
    assert_invariants(&model, &s);
    finish_shutdown(&model, s);
}

#[test]
fn the_properties_catch_a_shutdown_that_ignores_calls() {
    let model = HostModel::with_mutant(bounds(), Some(Mutant::CleanupIgnoresCalls));
    let s = model.initial_state();
    let (_, s) = take(&model, &s, "discovery", |a| {
        matches!(a, Action::Discover(0))
    });
    let (_, s) = take(&model, &s, "activate(a)", |a| {
        matches!(a, Action::Request(OpKind::Activate(_)))
    });
    let (_, s) = take(&model, &s, "begin", |a| matches!(a, Action::Begin { .. }));
    let (_, s) = take(&model, &s, "the factory", |a| {
        matches!(a, Action::Factory { ok: true, .. })
    });
    let (_, s) = take(&model, &s, "register x", |a| {
        matches!(
            a,
            Action::Register {
                reg: Reg::Tool(0),
                ..
            }
        )
    });
    let (_, s) = take(&model, &s, "activate returns", |a| {
        matches!(a, Action::ActivateReturned { ok: true, .. })
    });
    let (_, s) = take(&model, &s, "dispose", |a| {
        matches!(a, Action::Request(OpKind::Dispose))
    });
    let (_, s) = take(&model, &s, "a call", |a| {
        matches!(a, Action::CallStart { .. })
    });
    let (effects, s) = take(&model, &s, "the shutdown begins", |a| {
        matches!(
            a,
            Action::Begin {
                kind: OpKind::Dispose,
                ..
            }
        )
    });
    assert!(
        effects
            .commands
            .iter()
            .any(|e| matches!(e, Effect::RunCleanup { .. })),
        "{effects:?}"
    );
    let inv12a = properties::check("INV-12a").expect("INV-12a");
    assert!(inv12a(&model.scenario, &s).is_err(), "{s:?}");
    // The cleanup step finishes and the shutdown settles with the call
    // still running: INV-12b.
    let (_, s) = take(&model, &s, "the instance", |a| {
        matches!(a, Action::Cleanup { ok: true, .. })
    });
    assert!(s.env.disposed);
    let inv12b = properties::check("INV-12b").expect("INV-12b");
    assert!(inv12b(&model.scenario, &s).is_err(), "{s:?}");
}
