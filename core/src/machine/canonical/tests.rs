//! Canonical states of the host: two histories that differ only in the
//! handles they used up are one canonical state.

use super::super::state::Running;
use crate::canonical::HandleSet;
use crate::time::Moment;
use crate::{
    ContextId, DefinitionMeta, Failure, HostCore, Input, OpId, OpKind, Registered, Registration,
    Requested, ToolSpec,
};

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, "d", "0")
}

/// `a` fails (after registering a tool, or not), then `b` commits a tool.
fn run(register: bool) -> (HostCore, crate::ToolRef) {
    let (mut core, _) = HostCore::new(&[spec("base")]).expect("valid");
    let meta = DefinitionMeta::plain;
    core.discover(vec![meta("a"), meta("b")]).expect("discover");
    for id in ["a", "b"] {
        let queued = core.request(OpKind::Activate(id.into()));
        assert!(matches!(queued, Requested::Enqueued(_)), "{queued:?}");
    }
    core.apply(Input::Begin(OpId(1)), Moment::ZERO)
        .expect("begin");
    core.apply(
        Input::FactoryReturned {
            context: ContextId(1),
            result: Ok(()),
        },
        Moment::ZERO,
    )
    .expect("factory");
    if register {
        core.register(ContextId(1), Registration::Tool(spec("t")))
            .expect("register");
    }
    core.apply(
        Input::ActivateReturned {
            context: ContextId(1),
            result: Err(Failure::error("no")),
        },
        Moment::ZERO,
    )
    .expect("activate");
    // The rollback disposes of the instance.
    core.apply(
        Input::CleanupFinished {
            op: OpId(1),
            result: Ok(()),
        },
        Moment::ZERO,
    )
    .expect("cleanup");
    core.apply(Input::Begin(OpId(2)), Moment::ZERO)
        .expect("begin");
    core.apply(
        Input::FactoryReturned {
            context: ContextId(2),
            result: Ok(()),
        },
        Moment::ZERO,
    )
    .expect("factory");
    let tool = match core.register(ContextId(2), Registration::Tool(spec("u"))) {
        Ok(Registered::Tool(t)) => t,
        other => panic!("{other:?}"),
    };
    core.apply(
        Input::ActivateReturned {
            context: ContextId(2),
            result: Ok(()),
        },
        Moment::ZERO,
    )
    .expect("activate");
    let out = core.drain_outbox();
    assert!(
        matches!(
            out.settled.last().map(|s| &s.outcome),
            Some(crate::OpOutcome::Activated { .. })
        ),
        "{out:?}"
    );
    (core, tool)
}

#[test]
fn a_failed_attempt_leaves_no_trace_in_the_canonical_form() {
    let (with, t1) = run(true);
    let (without, t2) = run(false);
    assert_ne!(t1, t2, "the counters differ");
    assert_ne!(with, without);
    assert_eq!(with.canonical(), without.canonical());
    // Canonical is idempotent, and the next handle is still fresh.
    let c = with.canonical();
    assert_eq!(c.canonical(), c);
    assert_eq!(c.counters.tool, 2);
}

#[test]
fn every_handle_of_a_reload_and_its_calls_is_renamed() {
    // `b` is active; a call of its tool is in flight (it holds b's
    // generation); a reload of `b` runs its fresh generation's factory.
    let (mut core, _) = run(true);
    core.call_start("u", Moment::ZERO).expect("admitted");
    let queued = core.request(OpKind::Reload("b".into()));
    assert_eq!(queued, Requested::Enqueued(OpId(3)));
    core.apply(Input::Begin(OpId(3)), Moment::ZERO)
        .expect("begin");
    let _ = core.drain_outbox();
    let mut set = HandleSet::new();
    core.handles(&mut set);
    let c = core.canonical();
    // Contexts: the live generation (2) and the fresh one (3) become 1, 2;
    // the call's generation follows.
    let mut seen = HandleSet::new();
    c.handles(&mut seen);
    assert_eq!(seen.of(crate::canonical::HandleKind::Context), [1, 2]);
    assert!(c.calls.values().all(|f| f.generation == Some(ContextId(1))));
    assert_eq!(c.counters.context, 2);
    assert_eq!(c.canonical(), c);
    assert_eq!(set.of(crate::canonical::HandleKind::Context), [2, 3]);
}

/// `b`'s tool call is in flight, a reload of `b` committed its fresh
/// generation and retires the old one (which the call still runs in).
fn retiring() -> (HostCore, crate::CallId) {
    let (mut core, _) = run(true);
    let call = core.call_start("u", Moment::ZERO).expect("admitted").call;
    let queued = core.request(OpKind::Reload("b".into()));
    assert_eq!(queued, Requested::Enqueued(OpId(3)));
    core.apply(Input::Begin(OpId(3)), Moment::ZERO)
        .expect("begin");
    core.apply(
        Input::FactoryReturned {
            context: ContextId(3),
            result: Ok(()),
        },
        Moment::ZERO,
    )
    .expect("factory");
    core.register(ContextId(3), Registration::Tool(spec("u")))
        .expect("register");
    core.apply(
        Input::ActivateReturned {
            context: ContextId(3),
            result: Ok(()),
        },
        Moment::ZERO,
    )
    .expect("activate");
    let _ = core.drain_outbox();
    (core, call)
}

#[test]
fn a_retiring_generation_and_its_calls_are_renamed_and_stepping_commutes() {
    let (core, call) = retiring();
    let Some(Running::Dispose(d)) = &core.running else {
        panic!("the old generation retires: {:?}", core.running);
    };
    let old = &d.retiring.as_ref().expect("retiring").old;
    assert_eq!(old.context, ContextId(2));
    let c = core.canonical();
    assert_eq!(c.canonical(), c);
    let Some(Running::Dispose(d)) = &c.running else {
        panic!("{:?}", c.running);
    };
    let old = &d.retiring.as_ref().expect("retiring").old;
    // Contexts 2 (retiring) and 3 (live) become 1 and 2; the call follows
    // its generation.
    assert_eq!(old.context, ContextId(1));
    assert!(c.calls.values().all(|f| f.generation == Some(ContextId(1))));
    assert_eq!(c.counters.context, 2);
    // The call ends; the old generation's cleanup goes on. Stepping the
    // canonical state gives the canonical form of stepping the original.
    let renamed_call = *c.calls.keys().next().expect("one call");
    let (mut a, mut b) = (core.clone(), c.clone());
    let verdict = a.call_finished(call, Moment::ZERO);
    assert_eq!(b.call_finished(renamed_call, Moment::ZERO), verdict);
    let (said_a, said_b) = (a.drain_outbox(), b.drain_outbox());
    assert_eq!(said_a.commands.len(), said_b.commands.len());
    assert_eq!(a.canonical(), b.canonical());
    // And the next handles each gives out are fresh in both.
    let mut seen = HandleSet::new();
    b.handles(&mut seen);
    assert!(
        seen.of(crate::canonical::HandleKind::Context)
            .iter()
            .all(|k| *k <= b.counters.context)
    );
}

/// Listing and renaming are two visitors over one walk: the mutable twin
/// visits the same handles, in the same order, as the read-only walk, and
/// a visitor that changes nothing copies nothing.
#[test]
fn the_read_only_walk_and_its_mutable_twin_visit_the_same_places() {
    use crate::canonical::Handles;
    let (core, _) = retiring();
    let mut read = Vec::new();
    core.walk(&mut |kind, raw| read.push((kind, raw)));
    let mut written = Vec::new();
    let mut copy = core.clone();
    copy.walk_mut(&mut |kind, raw: &mut u64| written.push((kind, *raw)));
    assert_eq!(read, written);
    assert_eq!(copy, core);
    // Every kind is there: ops, contexts, tools, disposers none (b has no
    // disposer), calls.
    for kind in [
        crate::canonical::HandleKind::Op,
        crate::canonical::HandleKind::Context,
        crate::canonical::HandleKind::Tool,
        crate::canonical::HandleKind::Call,
    ] {
        assert!(read.iter().any(|(k, _)| *k == kind), "{kind:?}: {read:?}");
    }
}
