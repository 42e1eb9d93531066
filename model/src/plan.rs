//! The default check: small exhaustive searches chosen so that every pair
//! of features meets in at least one complete search, and a swarm of
//! seeded depth-first searches over the full bounds ([`Bounds::full`]).
//!
//! The work is fixed in states and seeds, never in wall-clock time, so the
//! verdict is the same on every machine.
//!
//! The design is a pairwise covering: the features are split into
//! [`GROUPS`], and there is one search for each pair of groups, with the
//! features of both switched on over a small base ([`small_base`]). Two
//! features of one group meet in every search of that group; two features
//! of different groups meet in the search of their two groups. The test
//! suite recomputes the features of each search from its bounds
//! ([`Feature::present`]) and checks that every pair meets.
//!
//! Architecture invariant: a leaf above `crate::scenario`; it says what to
//! check, never how (`crate::run` and `crate::swarm` run it).

use serde::Serialize;

use crate::scenario::Bounds;

/// A feature of the environment whose interactions the default check
/// covers pairwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    /// Three extensions, one of them the manifest extension (two plain
    /// ones are interchangeable, so the extension symmetry applies).
    ThreeExtensions,
    /// Two tools per activation from a pool whose names collide (`m_x`,
    /// `m.x` and the manifest tool `m:x` share the API name `m_x`).
    CollidingTools,
    /// Two disposers per activation (reverse order is visible).
    TwoDisposers,
    /// Hooks (and so emits that run them).
    Hooks,
    /// Three caller requests instead of two.
    ThreeRequests,
    /// A queued request withdrawn by its caller.
    Withdrawals,
    /// A hung activation, a deadline expiry and a lost step per operation.
    HangsAndDeadlines,
    /// Registrations through closed contexts.
    LateRegistrations,
    /// Two failing cleanup steps per rollback or shutdown.
    CleanupFailures,
    /// A tool call in flight when the shutdown begins.
    CallsAtShutdown,
    /// A reload (H-12).
    Reload,
    /// The dependency `b` on `m` (H-13), the refused batches and the batch
    /// that would close a dependency cycle.
    Dependency,
    /// Provider registrations (M-8).
    Providers,
    /// A declaration mismatch that revokes the manifest extension's grant,
    /// then a dormant call refused for it (INV-14).
    Revocation,
}

impl Feature {
    /// Every feature, in order.
    pub const ALL: [Feature; 14] = [
        Feature::ThreeExtensions,
        Feature::CollidingTools,
        Feature::TwoDisposers,
        Feature::Hooks,
        Feature::ThreeRequests,
        Feature::Withdrawals,
        Feature::HangsAndDeadlines,
        Feature::LateRegistrations,
        Feature::CleanupFailures,
        Feature::CallsAtShutdown,
        Feature::Reload,
        Feature::Dependency,
        Feature::Providers,
        Feature::Revocation,
    ];

    /// Its short name, as the docs' table and the report print it.
    pub fn name(self) -> &'static str {
        match self {
            Feature::ThreeExtensions => "three-extensions",
            Feature::CollidingTools => "colliding-tools",
            Feature::TwoDisposers => "two-disposers",
            Feature::Hooks => "hooks",
            Feature::ThreeRequests => "three-requests",
            Feature::Withdrawals => "withdrawals",
            Feature::HangsAndDeadlines => "hangs-and-deadlines",
            Feature::LateRegistrations => "late-registrations",
            Feature::CleanupFailures => "cleanup-failures",
            Feature::CallsAtShutdown => "calls-at-shutdown",
            Feature::Reload => "reload",
            Feature::Dependency => "dependency",
            Feature::Providers => "providers",
            Feature::Revocation => "revocation",
        }
    }

    /// True when bounds `b` include this feature, read from the bounds
    /// alone (not from how the search was built).
    pub fn present(self, b: &Bounds) -> bool {
        let colliding = {
            let api = |n: &str| n.replace([':', '.'], "_");
            // A plain extension's `ext:tool` name is refused (H-4): it
            // never holds an API name.
            let mut names: Vec<String> = b
                .tool_names
                .iter()
                .filter(|n| !n.contains(':'))
                .map(|n| api(n))
                .collect();
            if b.manifest {
                names.push("m_x".into());
            }
            let total = names.len();
            names.sort();
            names.dedup();
            names.len() < total
        };
        match self {
            Feature::ThreeExtensions => b.extensions >= 3 && b.manifest,
            Feature::CollidingTools => b.tools >= 2 && colliding,
            Feature::TwoDisposers => b.disposers >= 2,
            Feature::Hooks => b.hooks >= 1,
            Feature::ThreeRequests => b.ops >= 3,
            Feature::Withdrawals => b.withdraws >= 1,
            Feature::HangsAndDeadlines => b.hangs >= 1 && b.deadlines >= 1 && b.losses >= 1,
            Feature::LateRegistrations => b.late,
            Feature::CleanupFailures => b.cleanup_failures >= 2,
            Feature::CallsAtShutdown => b.calls >= 1,
            Feature::Reload => b.reloads >= 1,
            Feature::Dependency => b.dependency && b.refused >= 3 && b.extensions >= 2,
            Feature::Providers => b.providers,
            Feature::Revocation => b.manifest && b.ops >= 2,
        }
    }

    /// Switches this feature on in `b`.
    pub fn apply(self, b: &mut Bounds) {
        match self {
            Feature::ThreeExtensions => {
                b.extensions = 3;
                b.manifest = true;
            }
            Feature::CollidingTools => b.tools = 2,
            Feature::TwoDisposers => b.disposers = 2,
            Feature::Hooks => b.hooks = 1,
            Feature::ThreeRequests => b.ops = 3,
            Feature::Withdrawals => b.withdraws = 1,
            Feature::HangsAndDeadlines => {
                b.hangs = 1;
                b.deadlines = 1;
                b.losses = 1;
            }
            Feature::LateRegistrations => b.late = true,
            Feature::CleanupFailures => b.cleanup_failures = 2,
            Feature::CallsAtShutdown => b.calls = 1,
            Feature::Reload => b.reloads = 1,
            Feature::Dependency => {
                b.dependency = true;
                b.refused = 3;
            }
            Feature::Providers => b.providers = true,
            Feature::Revocation => {
                b.manifest = true;
                b.ops = b.ops.max(2);
            }
        }
    }
}

/// The base every search of the default check starts from: two
/// extensions (`a` and the manifest extension `m`, discovered late), one
/// tool from the pool `m_x`, `m.x`, one disposer, two requests (so a
/// declaration mismatch can revoke `m`'s grant and a dormant call meet it:
/// [`Feature::Revocation`] is in every search), and nothing else.
pub fn small_base() -> Bounds {
    Bounds {
        extensions: 2,
        manifest: true,
        tools: 1,
        hooks: 0,
        disposers: 1,
        ops: 2,
        withdraws: 0,
        late: false,
        hangs: 0,
        refused: 0,
        cleanup_failures: 0,
        tool_names: vec!["m_x".into(), "m.x".into()],
        calls: 0,
        deadlines: 0,
        losses: 0,
        reloads: 0,
        dependency: false,
        providers: false,
    }
}

/// The groups of the pairwise covering: one search per pair of groups.
/// The two largest multipliers of the state space (a third request and a
/// reload) are in different groups, each with cheap companions.
pub const GROUPS: [(&str, &[Feature]); 5] = [
    ("requests", &[Feature::ThreeRequests, Feature::Withdrawals]),
    ("reload", &[Feature::Reload, Feature::CleanupFailures]),
    (
        "discovery",
        &[
            Feature::ThreeExtensions,
            Feature::LateRegistrations,
            Feature::Dependency,
        ],
    ),
    (
        "tools",
        &[
            Feature::CollidingTools,
            Feature::Providers,
            Feature::CallsAtShutdown,
        ],
    ),
    (
        "steps",
        &[
            Feature::TwoDisposers,
            Feature::Hooks,
            Feature::HangsAndDeadlines,
        ],
    ),
];

/// One exhaustive search of the default check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Search {
    /// Its name: the two groups it joins, such as `requests+reload`.
    pub name: String,
    /// Its bounds.
    pub bounds: Bounds,
}

impl Search {
    /// The features its bounds include ([`Feature::present`]).
    pub fn features(&self) -> Vec<Feature> {
        Feature::ALL
            .into_iter()
            .filter(|f| f.present(&self.bounds))
            .collect()
    }
}

/// The exhaustive searches of the default check: one per pair of
/// [`GROUPS`], in order, then `other-names`: three extensions whose plain
/// ones register from the pool `base`, `m:x` (a clash with the host's base
/// tool, and a name in the manifest extension's namespace, which the core
/// must refuse from a plain extension, H-4).
pub fn searches() -> Vec<Search> {
    let mut out = Vec::new();
    for (i, (first, a)) in GROUPS.iter().enumerate() {
        for (second, b) in &GROUPS[i + 1..] {
            let mut bounds = small_base();
            for f in a.iter().chain(b.iter()) {
                f.apply(&mut bounds);
            }
            out.push(Search {
                name: format!("{first}+{second}"),
                bounds,
            });
        }
    }
    let mut names = small_base();
    Feature::ThreeExtensions.apply(&mut names);
    names.tools = 2;
    names.tool_names = vec!["base".into(), "m:x".into()];
    out.push(Search {
        name: "other-names".into(),
        bounds: names,
    });
    out
}

/// The search of the default check with this name.
pub fn search(name: &str) -> Option<Search> {
    searches().into_iter().find(|s| s.name == name)
}

/// The seed the swarm starts from unless `--seed` says otherwise.
pub const DEFAULT_SEED: u64 = 0x6578_7468_6f73_7421;
/// The swarm's members unless told otherwise.
pub const DEFAULT_SWARM_MEMBERS: usize = 8;
/// The distinct states each swarm member explores unless `--swarm-states`
/// says otherwise.
pub const DEFAULT_SWARM_STATES: usize = 75_000;

/// The swarm of the default check: seeded depth-first searches over
/// [`Bounds::full`], each with its own action order and a fixed number of
/// distinct states.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwarmPlan {
    /// The bounds every member searches.
    pub bounds: Bounds,
    /// Each member's seed, in order.
    pub seeds: Vec<u64>,
    /// The distinct states each member explores (fewer only when its
    /// search ends first).
    pub states_per_member: usize,
}

/// Member `index`'s seed in the swarm that starts from `seed`: a
/// SplitMix64 step, so neighbouring members get unrelated orders.
pub fn member_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed.wrapping_add(index.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SwarmPlan {
    /// `members` members from `seed`, of `shard` of `shards` (members are
    /// numbered across shards, so no two shards share a seed).
    pub fn new(seed: u64, members: usize, states: usize, shard: usize) -> Self {
        let first = shard * members;
        Self {
            bounds: Bounds::full(),
            seeds: (first..first + members)
                .map(|i| member_seed(seed, i as u64))
                .collect(),
            states_per_member: states,
        }
    }
}

/// The default check's plan as Markdown: a table of its searches with
/// their features, and a table that names, for every pair of features, the
/// search they meet in (the first one, in order). `exthost-model plan`
/// prints it; docs/model-checking.md quotes it.
pub fn markdown() -> String {
    let searches = searches();
    let mut out = String::from("| search | features |\n|---|---|\n");
    for s in &searches {
        let names: Vec<&str> = s.features().iter().map(|f| f.name()).collect();
        out.push_str(&format!("| `{}` | {} |\n", s.name, names.join(", ")));
    }
    out.push_str("\n| | ");
    let short: Vec<String> = (1..=Feature::ALL.len()).map(|i| i.to_string()).collect();
    out.push_str(&short.join(" | "));
    out.push_str(" |\n|---|");
    out.push_str(&"---|".repeat(Feature::ALL.len()));
    out.push('\n');
    for (i, a) in Feature::ALL.iter().enumerate() {
        out.push_str(&format!("| {} {} |", i + 1, a.name()));
        for (j, b) in Feature::ALL.iter().enumerate() {
            let cell = if j <= i {
                String::new()
            } else {
                searches
                    .iter()
                    .position(|s| a.present(&s.bounds) && b.present(&s.bounds))
                    .map_or("**none**".to_owned(), |k| format!("S{}", k + 1))
            };
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out.push('\n');
    for (k, s) in searches.iter().enumerate() {
        out.push_str(&format!("S{} = `{}`", k + 1, s.name));
        out.push_str(if k + 1 == searches.len() { ".\n" } else { ", " });
    }
    out
}
