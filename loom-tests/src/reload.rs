//! The reload scenario (H-12, INV-11): a reload's commit races snapshot
//! readers. The host publishes a reload as one store of a whole snapshot
//! (the registry's tools and the extension's providers, with the fresh
//! generation in place of the old); [`reload_racing_readers`] checks that a
//! reader sees the old generation or the new one, never a mix and never
//! neither. It is written once over [`ReloadCommit`], which the real commit
//! (one [`Published::store`]) and two seeded bugs implement.

use exthost::publication::Published;
use loom::thread;

use crate::harness::{BROKEN_BEFORE_MADE, TORN};

/// What readers see of one extension: its tools and its providers, each
/// entry the generation that registered it. Generation 0 means "none".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Contribution {
    /// The extension's live tools.
    pub tools: Vec<u64>,
    /// The extension's live providers.
    pub providers: Vec<u64>,
}

impl Contribution {
    /// Everything generation `g` contributes.
    pub fn of(generation: u64) -> Self {
        Self {
            tools: vec![generation; 2],
            providers: vec![generation],
        }
    }

    /// Nothing: the old generation gone and the new one not yet there.
    pub fn none() -> Self {
        Self {
            tools: Vec::new(),
            providers: Vec::new(),
        }
    }

    /// The one generation every part comes from, if there is one.
    pub fn generation(&self) -> Option<u64> {
        let first = *self.tools.first()?;
        let whole = self
            .tools
            .iter()
            .chain(&self.providers)
            .all(|&g| g == first)
            && !self.providers.is_empty();
        whole.then_some(first)
    }
}

/// How a reload commits its fresh generation into the published cell.
pub trait ReloadCommit: Send + Sync + 'static {
    /// Replaces generation `old` by generation `new`.
    fn commit(cell: &Published<Contribution>, old: u64, new: u64);
}

/// The real commit: one store of the whole snapshot.
pub struct OneStore;

impl ReloadCommit for OneStore {
    fn commit(cell: &Published<Contribution>, _old: u64, new: u64) {
        cell.store(Contribution::of(new));
    }
}

/// Seeded bug: break before make, the old generation is withdrawn first and
/// the new one published afterwards.
pub struct BreakBeforeMake;

impl ReloadCommit for BreakBeforeMake {
    fn commit(cell: &Published<Contribution>, _old: u64, new: u64) {
        cell.store(Contribution::none());
        cell.store(Contribution::of(new));
    }
}

/// Seeded bug: tools and providers are swapped in two commits.
pub struct ToolsThenProviders;

impl ReloadCommit for ToolsThenProviders {
    fn commit(cell: &Published<Contribution>, old: u64, new: u64) {
        cell.store(Contribution {
            tools: vec![new; 2],
            providers: vec![old],
        });
        cell.store(Contribution::of(new));
    }
}

/// Two reloads (generation 1 to 2, then 2 to 3) race a reader taking two
/// snapshots: each snapshot is exactly one generation, the second no older
/// than the first, and the last commit is visible at the end.
pub fn reload_racing_readers<R: ReloadCommit>() {
    let cell = loom::sync::Arc::new(Published::new(Contribution::of(1)));
    let writer = {
        let cell = cell.clone();
        thread::spawn(move || {
            R::commit(&cell, 1, 2);
            R::commit(&cell, 2, 3);
        })
    };
    let mut last = 0;
    for _ in 0..2 {
        let seen = Contribution::clone(&cell.load());
        if seen.tools.is_empty() && seen.providers.is_empty() {
            panic!("{BROKEN_BEFORE_MADE}: a reader saw no generation");
        }
        let Some(generation) = seen.generation() else {
            panic!("{TORN}: a reader saw a mix of generations: {seen:?}");
        };
        assert!(generation >= last, "a later load went back");
        last = generation;
    }
    writer.join().expect("writer thread");
    assert_eq!(Contribution::clone(&cell.load()), Contribution::of(3));
}

/// The reload scenario over the real registry: the published value is an
/// [`exthost::core::ToolRegistry`], which holds the live tools and the live
/// providers (M-8) in one value, as the host publishes it. Generation `g`
/// of the extension contributes the tool `tool{g}`, the provider `prov{g}`
/// and the provider `shared` named `Shared {g}` (an id every generation
/// registers again, H-12).
pub mod registry {
    use std::collections::BTreeMap;

    use exthost::core::{
        Binding, ModelRecord, Owner, ProviderRecord, ToolRef, ToolRegistry, ToolSpec,
    };
    use exthost::publication::Published;
    use loom::thread;

    use crate::harness::TORN;

    const EXTENSION: &str = "gen";

    fn owner() -> Owner {
        Owner::Extension(EXTENSION.into())
    }

    fn shared(generation: u64) -> ProviderRecord {
        ProviderRecord {
            id: "shared".into(),
            display_name: format!("Shared {generation}"),
            config_schema: None,
            config_schema_digest: None,
            models: vec![ModelRecord {
                id: "m".into(),
                capabilities: BTreeMap::new(),
            }],
        }
    }

    fn own(generation: u64) -> ProviderRecord {
        ProviderRecord {
            id: format!("prov{generation}"),
            display_name: format!("Provider {generation}"),
            ..shared(generation)
        }
    }

    fn tool(generation: u64) -> ToolSpec {
        ToolSpec::new(format!("tool{generation}"), "a tool", "0")
    }

    /// The registry with generation 1 live.
    pub fn first() -> ToolRegistry {
        let mut registry = ToolRegistry::new();
        registry
            .insert(&tool(1), owner(), Binding::Live(ToolRef(1)))
            .expect("a fresh name");
        for p in [shared(1), own(1)] {
            registry.insert_provider(&p, owner()).expect("a fresh id");
        }
        registry
    }

    /// The candidate's tools: the live registry without generation `old`'s
    /// tool, with generation `new`'s.
    pub fn swap_tools(live: &ToolRegistry, old: u64, new: u64) -> ToolRegistry {
        let mut candidate = live.clone();
        candidate.remove(&format!("tool{old}"));
        candidate
            .insert(&tool(new), owner(), Binding::Live(ToolRef(new)))
            .expect("a fresh name");
        candidate
    }

    /// The candidate's providers: generation `old`'s out, `new`'s in.
    pub fn swap_providers(candidate: &mut ToolRegistry, old: u64, new: u64) {
        candidate.remove_provider("shared");
        candidate.remove_provider(&format!("prov{old}"));
        for p in [shared(new), own(new)] {
            candidate.insert_provider(&p, owner()).expect("a fresh id");
        }
    }

    /// The generation a reader's registry shows, when its tools and its
    /// providers are all of one generation.
    pub fn generation(registry: &ToolRegistry) -> Option<u64> {
        let tools: Vec<u64> = registry
            .names()
            .iter()
            .filter_map(|n| n.strip_prefix("tool")?.parse().ok())
            .collect();
        let [g] = tools[..] else { return None };
        let shared = registry.provider("shared")?;
        let whole = shared.record.display_name == format!("Shared {g}")
            && registry.provider(&format!("prov{g}")).is_some()
            && registry.provider_count() == 2;
        whole.then_some(g)
    }

    /// How a reload publishes its candidate registry.
    pub trait RegistryCommit: Send + Sync + 'static {
        /// Replaces generation `old` by generation `new` in `cell`.
        fn commit(cell: &Published<ToolRegistry>, old: u64, new: u64);
    }

    /// The real commit: the whole candidate (tools and providers) built
    /// off to the side, then one store.
    pub struct OneCommit;

    impl RegistryCommit for OneCommit {
        fn commit(cell: &Published<ToolRegistry>, old: u64, new: u64) {
            let mut candidate = swap_tools(&cell.load(), old, new);
            swap_providers(&mut candidate, old, new);
            cell.store(candidate);
        }
    }

    /// Seeded bug: the tools are committed, then the providers, in two
    /// stores.
    pub struct ToolsCommittedBeforeProviders;

    impl RegistryCommit for ToolsCommittedBeforeProviders {
        fn commit(cell: &Published<ToolRegistry>, old: u64, new: u64) {
            let mut candidate = swap_tools(&cell.load(), old, new);
            cell.store(candidate.clone());
            swap_providers(&mut candidate, old, new);
            cell.store(candidate);
        }
    }

    /// One reload (generation 1 to 2) races a reader taking two snapshots
    /// of the real registry: each shows the tools and the providers of one
    /// generation (never a mix, never neither), the second no older; the
    /// new generation is whole at the end.
    pub fn registry_reload_racing_readers<R: RegistryCommit>() {
        let cell = loom::sync::Arc::new(Published::new(first()));
        let writer = {
            let cell = cell.clone();
            thread::spawn(move || R::commit(&cell, 1, 2))
        };
        let mut last = 0;
        for _ in 0..2 {
            let seen = cell.load();
            let Some(g) = generation(&seen) else {
                panic!(
                    "{TORN}: a reader saw tools {:?} with providers {:?}",
                    seen.names(),
                    seen.providers()
                        .map(|p| p.record.display_name.clone())
                        .collect::<Vec<_>>()
                );
            };
            assert!(g >= last, "a later load went back");
            last = g;
        }
        writer.join().expect("writer thread");
        assert_eq!(generation(&cell.load()), Some(2));
    }
}
