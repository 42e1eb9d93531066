//! What the environment may do: the extensions it defines, the tools they may
//! register, the discovery script and the bounds that keep the state space
//! finite.

use exthost_core::{
    Deadlines, DefinitionMeta, DefinitionPolicy, HostCore, ModelRecord, ProviderRecord,
    Registration, ToolRef, ToolSpec,
};

use crate::action::Reg;
use serde::Serialize;

/// The length of every deadline in the model: what matters is only which
/// side of it a reading falls on.
pub const MODEL_DEADLINE: std::time::Duration = std::time::Duration::from_nanos(10);

/// The id of the manifest-style (namespaced) extension.
pub const MANIFEST_ID: &str = "m";
/// The one base tool the host is built with.
pub const BASE_TOOL: &str = "base";
/// An id that breaks ID-1 (it contains a space): it makes a batch refused.
pub const BAD_ID: &str = "bad id";
/// The name of the tool a late registration (after settlement) tries to add.
pub const LATE_TOOL: &str = "late";
/// The one tool the manifest extension declares (M-4): its dormant descriptor
/// is `m:x`, whose API name `m_x` the plain pool's `m_x` collides with (M-6).
pub const DECLARED_TOOL: &str = "x";
/// The provider every extension may register when `providers` is set
/// (M-8); the manifest extension declares it, so a plain extension holding
/// it makes the manifest one's activation clash.
pub const PROVIDER_ID: &str = "p";
/// The event the manifest extension subscribes to (M-3): an `emit` of it
/// starts the extension while no code of it has run.
pub const EVENT: &str = "session.start";

/// The provider `p` with its one model, as registered and as declared.
pub fn provider_record() -> ProviderRecord {
    ProviderRecord {
        id: PROVIDER_ID.into(),
        display_name: "Provider p".into(),
        config_schema: None,
        config_schema_digest: None,
        models: vec![ModelRecord {
            id: "m1".into(),
            capabilities: Default::default(),
        }],
    }
}

/// The undeclared tool the manifest extension may register (M-5 mismatch).
pub const UNDECLARED_TOOL: &str = "y";
/// The default pool of tool names a plain extension registers from: `x`
/// clashes across extensions and within one batch, `m_x` collides with the
/// manifest tool's API name (`m:x` becomes `m_x`, M-6). `base` (a clash with
/// the base tool) and `m:x` (a name in `m`'s namespace, refused from a plain
/// extension) are checked by the test suite's second pool
/// ([`Bounds::ci_names`]).
pub const DEFAULT_TOOL_NAMES: &[&str] = &["x", "m_x"];

const DIGEST: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// The bounds of one check. Every choice the environment makes is bounded
/// by one of these, so every path ends (INV-9 needs terminal states).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Bounds {
    /// Extensions in total (the last one is the manifest extension `m` when
    /// `manifest` is set); at least 1.
    pub extensions: usize,
    /// Include the manifest-style extension `m` (namespaced, declares `x`).
    pub manifest: bool,
    /// Tools one activation may register.
    pub tools: usize,
    /// Hooks one activation may register.
    pub hooks: usize,
    /// Disposers one activation may register.
    pub disposers: usize,
    /// Caller requests (`activate`, `emit`) in one run; `dispose` is extra.
    pub ops: usize,
    /// Queued requests a caller may withdraw (drop its future before its turn).
    pub withdraws: usize,
    /// Try registrations on closed contexts: through a context in the step
    /// right after it closed (during its rollback, or once it committed),
    /// and through the previous attempt's context while a new one is open.
    pub late: bool,
    /// Activations whose `activate` hangs until cancelled.
    pub hangs: usize,
    /// Refused discovery batches tried (0, 1: bad id, 2: also a duplicate).
    pub refused: usize,
    /// Cleanup steps that may fail within one operation (a rollback or the
    /// shutdown); the other steps succeed.
    pub cleanup_failures: usize,
    /// The names plain extensions register tools under.
    pub tool_names: Vec<String>,
    /// Tool calls the environment may start (each of a live extension
    /// tool, just before the shutdown begins; see the partial-order
    /// reduction in `docs/model.md`). Each may finish with or
    /// without its own deadline passed, or be abandoned by the shutdown.
    pub calls: usize,
    /// Deadline expiries per operation: the deadline of the awaited factory,
    /// `activate`, cleanup step, or wait for an extension's calls passes
    /// (`DeadlinePassed`, H-12).
    pub deadlines: usize,
    /// Lost steps per operation: the task performing the awaited step
    /// (factory, `activate`, hook, cleanup step, or the wait for calls)
    /// ends without a result (`StepLost`).
    pub losses: usize,
    /// Reload requests (H-12) in one run, each of an extension active when
    /// it is requested.
    pub reloads: usize,
    /// A dependency (H-13): the last extension of the first discovery batch
    /// depends on the late extension (so activating it before the late
    /// batch is `EXTENSION_DEPENDENCY_MISSING`, and afterwards activates
    /// the late one first), and, with `refused` at 3, a refused batch
    /// closes a dependency cycle.
    pub dependency: bool,
    /// Providers (M-8): every activation may register the provider `p`,
    /// which the manifest extension declares (so its activation must
    /// register it, M-5).
    pub providers: bool,
}

impl Default for Bounds {
    /// The default check: three extensions (two plain, one manifest), two
    /// tools, one hook and two disposers per activation, three requests
    /// (plus `dispose`), one tool call, one deadline expiry and one lost
    /// step per operation, every fault point. The default check explores
    /// these together with reload, the dependency and providers
    /// ([`Bounds::full`]); `--ci` is derived from them.
    fn default() -> Self {
        Self {
            extensions: 3,
            manifest: true,
            tools: 2,
            hooks: 1,
            disposers: 2,
            ops: 3,
            withdraws: 1,
            late: true,
            hangs: 1,
            refused: 2,
            cleanup_failures: 2,
            tool_names: DEFAULT_TOOL_NAMES.iter().map(|s| s.to_string()).collect(),
            calls: 1,
            deadlines: 1,
            losses: 1,
            reloads: 0,
            dependency: false,
            providers: false,
        }
    }
}

impl Bounds {
    /// Small bounds that still reach every `sometimes` property: the size
    /// `cargo test` checks.
    pub fn ci() -> Self {
        Self {
            extensions: 3,
            manifest: true,
            tools: 2,
            hooks: 2,
            disposers: 2,
            ops: 2,
            withdraws: 1,
            late: true,
            hangs: 1,
            refused: 2,
            cleanup_failures: 2,
            tool_names: vec!["x".into(), "m_x".into()],
            calls: 1,
            deadlines: 1,
            losses: 1,
            reloads: 0,
            dependency: false,
            providers: false,
        }
    }

    /// Reload (H-12), dependencies (H-13) and providers (M-8): three
    /// extensions (`b` depending on the manifest extension `m`, discovered
    /// late), one reload, the cycle batch, providers, every fault point, a
    /// withdrawn request, a hung activation and late registrations, with
    /// one tool (from the pool `m_x`, `m.x`: suffixed API names and a
    /// three-way collision with `m:x`, M-6), hook and disposer per
    /// activation and two requests: a quick check of reload, dependencies
    /// and providers alone (`check --lifecycle`; the default check explores
    /// them in the product, [`Bounds::full`]).
    pub fn lifecycle() -> Self {
        Self {
            extensions: 3,
            manifest: true,
            tools: 1,
            hooks: 1,
            disposers: 1,
            ops: 2,
            withdraws: 1,
            late: true,
            hangs: 1,
            refused: 3,
            cleanup_failures: 2,
            // `m_x` takes a suffix against `m:x` (so a reload re-registers
            // a suffixed name), and `m.x` makes the collision three-way.
            tool_names: vec!["m_x".into(), "m.x".into()],
            calls: 1,
            deadlines: 1,
            losses: 1,
            reloads: 1,
            dependency: true,
            providers: true,
        }
    }

    /// The default check's one search: the default bounds
    /// (three extensions, one from a manifest; two tools, one hook and two
    /// disposers per activation; three requests plus `dispose`; every
    /// fault point; one call, one deadline and one lost step per
    /// operation) together with one reload, the dependency (`b` on `m`,
    /// and the cycle batch), providers and the tool pool `m_x`, `m.x` (a
    /// suffixed API name that a reload re-registers, and a three-way
    /// collision with `m:x`). With two disposers per generation a reload's
    /// retirement order is visible. `check` with no preset explores these.
    pub fn full() -> Self {
        Self {
            refused: 3,
            tool_names: vec!["m_x".into(), "m.x".into()],
            reloads: 1,
            dependency: true,
            providers: true,
            ..Self::default()
        }
    }

    /// The CI bounds with the other names: `base` (a clash with the base
    /// tool) and `m:x` (a plain extension taking a name in the manifest
    /// extension's namespace, which the core must refuse).
    pub fn ci_names() -> Self {
        Self {
            disposers: 1,
            tool_names: vec!["base".into(), "m:x".into()],
            ..Self::ci()
        }
    }
}

/// One extension the environment defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionSpec {
    /// Its definition's metadata, as discovery sees it.
    pub meta: DefinitionMeta,
    /// The tools its `activate` may register, by the name it passes.
    pub pool: Vec<ToolSpec>,
}

impl ExtensionSpec {
    /// The extension id.
    pub fn id(&self) -> &str {
        &self.meta.id
    }
}

/// One step of the discovery script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiscoveryStep {
    /// A valid batch of these extensions (indices into
    /// [`Scenario::extensions`]); the core must accept it.
    Accept(Vec<usize>),
    /// A batch the core must refuse as a whole (H-2).
    Refuse {
        /// The batch: a valid new definition first, then the bad one.
        batch: Vec<DefinitionMeta>,
        /// What is wrong with it, in the spec's words.
        why: &'static str,
    },
}

/// Everything fixed for one check: the host's base tools, the extensions,
/// the discovery script, and the bounds.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The bounds.
    pub bounds: Bounds,
    /// The base tools.
    pub base: Vec<ToolSpec>,
    /// The handles the core gave the base tools.
    pub base_refs: Vec<ToolRef>,
    /// The extensions, by index.
    pub extensions: Vec<ExtensionSpec>,
    /// Discovery, in order. The first step runs before any caller acts;
    /// the others may run at any time while the host is open, in order,
    /// and refused steps may be skipped.
    pub script: Vec<DiscoveryStep>,
    /// The core every run starts from (base tools published).
    pub initial: HostCore,
    /// The manifest extension's second definition, when the bounds have a
    /// reload and the manifest extension (H-12, redefinition): it declares
    /// `y`, the tool its first definition does not, so a fresh generation
    /// that registers `x` now mismatches.
    pub redefinition: Option<DefinitionMeta>,
}

fn plain_spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, format!("tool {name}"), DIGEST)
}

impl Scenario {
    /// Builds the scenario for these bounds.
    ///
    /// Extensions are `a`, `b`, `c`, ... (plain) and `m` (manifest) when
    /// `manifest` is set. The last extension (`m` when present; only when
    /// there are at least two) is discovered late, in a second batch; the
    /// refused batches put it first so that a core which keeps part of a
    /// refused batch is caught (INV-6).
    pub fn new(bounds: Bounds) -> Self {
        assert!(bounds.extensions >= 1, "at least one extension");
        assert!(bounds.refused <= 3, "at most three refused batches");
        let plain = bounds.extensions - usize::from(bounds.manifest);
        let mut extensions = Vec::new();
        for i in 0..plain {
            let id = char::from(b'a' + u8::try_from(i).expect("few extensions")).to_string();
            extensions.push(ExtensionSpec {
                meta: DefinitionMeta::plain(id),
                pool: bounds.tool_names.iter().map(|n| plain_spec(n)).collect(),
            });
        }
        if bounds.manifest {
            let declared = ToolSpec::new(DECLARED_TOOL, "declared tool x", DIGEST);
            extensions.push(ExtensionSpec {
                meta: DefinitionMeta {
                    id: MANIFEST_ID.into(),
                    namespaced: true,
                    declared_tools: Some(vec![declared.clone()]),
                    declared_providers: bounds.providers.then(|| vec![provider_record()]),
                    dependencies: Vec::new(),
                    policy: DefinitionPolicy {
                        events: vec![EVENT.into()],
                        ..DefinitionPolicy::default()
                    },
                },
                pool: vec![declared, plain_spec(UNDECLARED_TOOL)],
            });
        }
        // The late extension: the manifest one (its dormant descriptors then
        // appear while other tools are live), else the last plain one; only
        // when another extension exists to form the first batch.
        let late = (extensions.len() >= 2).then(|| extensions.len() - 1);
        let first: Vec<usize> = (0..extensions.len()).filter(|&i| Some(i) != late).collect();
        // H-13: the last extension of the first batch depends on the late
        // one.
        let dependency = late
            .filter(|_| bounds.dependency)
            .map(|l| (first[first.len() - 1], l));
        if let Some((dependent, on)) = dependency {
            let id = extensions[on].meta.id.clone();
            extensions[dependent].meta.dependencies = vec![id];
        }
        let mut script = vec![DiscoveryStep::Accept(first.clone())];
        let fresh = match late {
            Some(i) => extensions[i].meta.clone(),
            None => DefinitionMeta::plain("z"),
        };
        if bounds.refused >= 1 {
            script.push(DiscoveryStep::Refuse {
                batch: vec![fresh.clone(), DefinitionMeta::plain(BAD_ID)],
                why: "an id breaks ID-1",
            });
        }
        if bounds.refused >= 2 {
            script.push(DiscoveryStep::Refuse {
                batch: vec![fresh.clone(), extensions[first[0]].meta.clone()],
                why: "an id is already known",
            });
        }
        if bounds.refused >= 3
            && let Some((dependent, _)) = dependency
        {
            let mut closing = fresh;
            closing.dependencies = vec![extensions[dependent].meta.id.clone()];
            script.push(DiscoveryStep::Refuse {
                batch: vec![closing],
                why: "it closes a dependency cycle",
            });
        }
        if let Some(i) = late {
            script.push(DiscoveryStep::Accept(vec![i]));
        }
        let base = vec![ToolSpec::new(BASE_TOOL, "the host's base tool", DIGEST)];
        let (mut initial, base_refs) = HostCore::new(&base).expect("the base tool is valid");
        // Every step has a deadline (H-12): the environment reads the
        // clock one nanosecond before it or at it (INV-17).
        initial.set_deadlines(Deadlines {
            activation: Some(MODEL_DEADLINE),
            cleanup: Some(MODEL_DEADLINE),
            hook: Some(MODEL_DEADLINE),
            call: Some(MODEL_DEADLINE),
        });
        let redefinition = extensions
            .iter()
            .find(|e| e.meta.namespaced)
            .filter(|_| bounds.reloads > 0)
            .map(|e| DefinitionMeta {
                declared_tools: Some(vec![plain_spec(UNDECLARED_TOOL)]),
                ..e.meta.clone()
            });
        Self {
            bounds,
            base,
            base_refs,
            extensions,
            script,
            initial,
            redefinition,
        }
    }

    /// The definition of extension `id` in force: its redefinition once
    /// the environment saw one applied (`redefined`), else its first.
    pub fn in_force(&self, id: &str, redefined: bool) -> Option<&DefinitionMeta> {
        match &self.redefinition {
            Some(second) if redefined && second.id == id => Some(second),
            _ => self.meta(id),
        }
    }

    /// The tool the manifest extension `id` declares in its definition in
    /// force (its dormant descriptor's plain name).
    pub fn declared_tool(&self, id: &str, redefined: bool) -> &str {
        self.in_force(id, redefined)
            .and_then(|m| m.declared_tools.as_ref())
            .and_then(|t| t.first())
            .map_or(DECLARED_TOOL, |t| t.name.as_str())
    }

    /// The extension with this id.
    pub fn extension(&self, id: &str) -> Option<&ExtensionSpec> {
        self.extensions.iter().find(|e| e.id() == id)
    }

    /// The id of an extension by index.
    pub fn ext_id(&self, ext: u8) -> &str {
        self.extensions[usize::from(ext)].id()
    }

    /// The registration a [`Reg`] stands for (`ext`: the extension whose
    /// pool a [`Reg::Tool`] indexes).
    pub fn registration(&self, ext: Option<u8>, reg: Reg) -> Registration {
        match reg {
            Reg::Tool(i) => {
                let ext = ext.expect("a pool tool names its extension");
                Registration::Tool(self.extensions[usize::from(ext)].pool[usize::from(i)].clone())
            }
            Reg::LateTool => Registration::Tool(ToolSpec::new(LATE_TOOL, "late tool", "00")),
            Reg::Hook => Registration::Hook,
            Reg::Disposer => Registration::Disposer,
            Reg::Provider => Registration::Provider(provider_record()),
        }
    }

    /// The metadata of the extension with this id.
    pub fn meta(&self, id: &str) -> Option<&DefinitionMeta> {
        self.extension(id).map(|e| &e.meta)
    }

    /// The batch a discovery step submits.
    pub fn batch(&self, step: usize) -> Vec<DefinitionMeta> {
        match &self.script[step] {
            DiscoveryStep::Accept(ids) => ids
                .iter()
                .map(|&i| self.extensions[i].meta.clone())
                .collect(),
            DiscoveryStep::Refuse { batch, .. } => batch.clone(),
        }
    }

    /// The extensions `id` depends on, directly or not (H-13), in the
    /// scenario's definitions.
    pub fn dependency_closure(&self, id: &str) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        let mut todo = vec![id.to_owned()];
        while let Some(next) = todo.pop() {
            for d in self.meta(&next).map_or(&[][..], |m| &m.dependencies) {
                if !seen.contains(d) {
                    seen.push(d.clone());
                    todo.push(d.clone());
                }
            }
        }
        seen
    }

    /// True when some extension depends on another (H-13).
    pub fn has_dependency(&self) -> bool {
        self.extensions
            .iter()
            .any(|e| !e.meta.dependencies.is_empty())
    }

    /// True when this scenario has a manifest extension.
    pub fn has_manifest(&self) -> bool {
        self.extensions.iter().any(|e| e.meta.namespaced)
    }

    /// True when some name of the plain pool is not an ID-1 segment (such as
    /// `m:x`), which the core must refuse from a plain extension (H-4).
    pub fn has_invalid_plain_name(&self) -> bool {
        self.extensions.iter().any(|e| !e.meta.namespaced)
            && self
                .bounds
                .tool_names
                .iter()
                .any(|n| exthost_core::id::validate_id_segment(n).is_err())
    }

    /// True when some plain tool name collides with the API name of a
    /// manifest tool (so API-name suffixes are exercised).
    pub fn has_api_collision(&self) -> bool {
        self.has_manifest()
            && self
                .bounds
                .tool_names
                .iter()
                .any(|n| n == &format!("{MANIFEST_ID}_{DECLARED_TOOL}"))
    }
}
