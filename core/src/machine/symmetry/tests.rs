//! Interchangeable extensions: a history and its mirror image (the same
//! steps with `a` and `b` exchanged) reach states that the exchange maps
//! onto each other, at every step.

use crate::time::Moment;
use crate::{
    ContextId, DefinitionMeta, Failure, HostCore, Input, OpId, OpKind, Registration, ToolSpec,
};

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, "d", "0")
}

/// `first` activates with the tool `x`, a hook and a disposer; then
/// `second`'s activation registers `x` too (a clash) and rolls back, and
/// `dispose` is requested. Returns the core after every step.
fn history(first: &str, second: &str) -> Vec<HostCore> {
    let (mut core, _) = HostCore::new(&[spec("base")]).expect("valid");
    let mut states = Vec::new();
    core.discover(vec![DefinitionMeta::plain("a"), DefinitionMeta::plain("b")])
        .expect("discover");
    states.push(quiet(&mut core));
    for id in [first, second] {
        let _ = core.request(OpKind::Activate(id.into()));
        states.push(quiet(&mut core));
    }
    let step = |core: &mut HostCore, input: Input, states: &mut Vec<HostCore>| {
        core.apply(input, Moment::ZERO).expect("valid input");
        states.push(quiet(core));
    };
    step(&mut core, Input::Begin(OpId(1)), &mut states);
    step(
        &mut core,
        Input::FactoryReturned {
            context: ContextId(1),
            result: Ok(()),
        },
        &mut states,
    );
    for reg in [
        Registration::Tool(spec("x")),
        Registration::Hook,
        Registration::Disposer,
    ] {
        core.register(ContextId(1), reg).expect("register");
        states.push(quiet(&mut core));
    }
    step(
        &mut core,
        Input::ActivateReturned {
            context: ContextId(1),
            result: Ok(()),
        },
        &mut states,
    );
    step(&mut core, Input::Begin(OpId(2)), &mut states);
    step(
        &mut core,
        Input::FactoryReturned {
            context: ContextId(2),
            result: Ok(()),
        },
        &mut states,
    );
    core.register(ContextId(2), Registration::Tool(spec("x")))
        .expect("staged");
    states.push(quiet(&mut core));
    step(
        &mut core,
        Input::ActivateReturned {
            context: ContextId(2),
            result: Ok(()),
        },
        &mut states,
    );
    // The rollback: the clash with `first`'s `x` is its cause.
    step(
        &mut core,
        Input::CleanupFinished {
            op: OpId(2),
            result: Err(Failure::error("dispose failed")),
        },
        &mut states,
    );
    let _ = core.request(OpKind::Dispose);
    states.push(quiet(&mut core));
    states
}

#[test]
fn the_mirror_history_is_the_exchanged_history_at_every_step() {
    let ab = history("a", "b");
    let ba = history("b", "a");
    assert_eq!(ab.len(), ba.len());
    for (n, (s, mirror)) in ab.iter().zip(&ba).enumerate() {
        assert!(s.interchangeable("a", "b"), "step {n}");
        let mut exchanged = s.clone();
        assert!(exchanged.exchange_extensions("a", "b"));
        assert_eq!(&exchanged, mirror, "step {n}");
        if n > 0 {
            assert_ne!(s, mirror, "step {n}: the two histories differ");
        }
        exchanged.exchange_extensions("a", "b");
        assert_eq!(&exchanged, s, "step {n}: exchanging twice gives it back");
    }
}

#[test]
fn the_exchange_keeps_discovery_order_and_moves_the_states() {
    let ab = history("a", "b");
    let mut s = ab[ab.len() - 1].clone();
    assert_eq!(
        s.statuses()
            .iter()
            .map(|(id, st)| format!("{id}:{st}"))
            .collect::<Vec<_>>(),
        ["a:active", "b:failed"]
    );
    s.exchange_extensions("a", "b");
    assert_eq!(
        s.statuses()
            .iter()
            .map(|(id, st)| format!("{id}:{st}"))
            .collect::<Vec<_>>(),
        ["a:failed", "b:active"]
    );
    let owner = &s.registry().get("x").expect("x is live").owner;
    assert_eq!(owner.to_string(), "b");
}

#[test]
fn definitions_of_another_shape_or_named_as_dependencies_are_not_interchangeable() {
    let (mut core, _) = HostCore::new(&[spec("base")]).expect("valid");
    let manifest = DefinitionMeta {
        namespaced: true,
        declared_tools: Some(vec![spec("x")]),
        ..DefinitionMeta::plain("m")
    };
    core.discover(vec![
        DefinitionMeta::plain("a"),
        DefinitionMeta::plain("b"),
        DefinitionMeta::plain("c").depending_on(["d"]),
        DefinitionMeta::plain("d"),
        DefinitionMeta::plain("e"),
        manifest,
    ])
    .expect("discover");
    let _ = core.drain_outbox();
    assert!(core.interchangeable("a", "b"));
    assert!(core.interchangeable("b", "e"));
    assert!(!core.interchangeable("a", "a"), "one extension");
    assert!(!core.interchangeable("a", "zz"), "unknown");
    assert!(!core.interchangeable("a", "c"), "c has a dependency");
    assert!(!core.interchangeable("a", "d"), "c depends on d");
    assert!(!core.interchangeable("a", "m"), "m is a manifest extension");
    let before = core.clone();
    for (x, y) in [("a", "a"), ("a", "zz"), ("a", "c"), ("a", "d"), ("a", "m")] {
        assert!(!core.exchange_extensions(x, y), "{x} and {y} are refused");
        assert_eq!(core, before, "a refused exchange changes nothing");
    }
    assert!(core.exchange_extensions("a", "b"));
}

/// The state after a step, its outbox drained (as the model checker stores
/// it): what a state is does not include what it has yet to say.
fn quiet(core: &mut HostCore) -> HostCore {
    let _ = core.drain_outbox();
    core.clone()
}

/// The exchange is a visitor over one walk: at every step the mutable
/// twin visits the same ids, in the same order, as the read-only walk
/// (the running operation, the queue, the calls' owners).
#[test]
fn the_read_only_id_walk_and_its_mutable_twin_visit_the_same_places() {
    use crate::canonical::ExtensionIds;
    let mut visited = 0;
    for core in history("a", "b") {
        let mut read = Vec::new();
        core.running.ids(&mut |id| read.push(id.to_owned()));
        core.queue.ids(&mut |id| read.push(id.to_owned()));
        let mut written = Vec::new();
        let mut copy = core.clone();
        copy.running
            .ids_mut(&mut |id: &mut String| written.push(id.clone()));
        copy.queue
            .ids_mut(&mut |id: &mut String| written.push(id.clone()));
        assert_eq!(read, written);
        assert_eq!(copy, core);
        visited += read.len();
    }
    assert!(visited > 0, "the history runs operations that name ids");
}
