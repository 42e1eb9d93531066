//! The layers are Cargo's to enforce (docs/architecture.md): the pure core
//! `exthost-core` depends on no async runtime, no file-system crate and no
//! MCP crate, and the model checker `exthost-model` builds on the core
//! alone. This reads the resolved dependency graph from `cargo metadata`
//! and walks every normal (non-dev, non-build) dependency, transitively.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Crates that would bring async, file-system access or MCP into the core.
const FORBIDDEN_IN_CORE: &[&str] = &[
    // async runtimes and their building blocks
    "tokio",
    "tokio-util",
    "tokio-stream",
    "futures",
    "futures-core",
    "futures-util",
    "futures-executor",
    "async-std",
    "async-executor",
    "smol",
    "mio",
    // file systems
    "cap-std",
    "cap-primitives",
    "cap-fs-ext",
    "fs-err",
    "tempfile",
    "walkdir",
    "rustix",
    // MCP
    "rmcp",
    "rmcp-macros",
];

/// The resolved graph: package name to the names of its normal dependencies.
struct Graph {
    names: BTreeMap<String, String>,
    normal: BTreeMap<String, Vec<String>>,
}

fn metadata() -> Graph {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: Value = serde_json::from_slice(&output.stdout).expect("cargo metadata is JSON");
    let mut names = BTreeMap::new();
    for package in json["packages"].as_array().expect("packages") {
        names.insert(
            package["id"].as_str().expect("id").to_owned(),
            package["name"].as_str().expect("name").to_owned(),
        );
    }
    let mut normal = BTreeMap::new();
    for node in json["resolve"]["nodes"].as_array().expect("resolve.nodes") {
        let deps = node["deps"]
            .as_array()
            .expect("deps")
            .iter()
            .filter(|dep| {
                dep["dep_kinds"]
                    .as_array()
                    .expect("dep_kinds")
                    .iter()
                    .any(|kind| kind["kind"].is_null())
            })
            .map(|dep| dep["pkg"].as_str().expect("pkg").to_owned())
            .collect();
        normal.insert(node["id"].as_str().expect("node id").to_owned(), deps);
    }
    Graph { names, normal }
}

impl Graph {
    /// The names of every package `name` depends on at run time, itself excluded.
    fn closure(&self, name: &str) -> BTreeSet<String> {
        let start = self
            .names
            .iter()
            .find(|(_, n)| n.as_str() == name)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("{name} is not in the workspace"));
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(id) = stack.pop() {
            for dep in self.normal.get(&id).into_iter().flatten() {
                if seen.insert(dep.clone()) {
                    stack.push(dep.clone());
                }
            }
        }
        seen.iter().map(|id| self.names[id].clone()).collect()
    }
}

#[test]
fn the_core_depends_on_no_async_runtime_file_system_or_mcp_crate() {
    let graph = metadata();
    let core = graph.closure("exthost-core");
    // The walk sees the core's own dependencies, so an empty answer cannot pass.
    assert!(core.contains("rpds") && core.contains("serde"), "{core:?}");
    let found: Vec<_> = FORBIDDEN_IN_CORE
        .iter()
        .filter(|name| core.contains(**name))
        .collect();
    assert!(
        found.is_empty(),
        "exthost-core depends on {found:?}: the core must stay pure"
    );
    assert!(
        !core.iter().any(|name| name.starts_with("exthost")),
        "exthost-core depends on another exthost crate: {core:?}"
    );
}

#[test]
fn the_model_builds_on_the_core_alone() {
    let graph = metadata();
    let model = graph.closure("exthost-model");
    assert!(model.contains("exthost-core"), "{model:?}");
    let ours: Vec<_> = model.iter().filter(|n| n.starts_with("exthost")).collect();
    assert_eq!(ours, ["exthost-core"], "the model may use only the core");
    for name in ["tokio", "cap-std", "rmcp"] {
        assert!(!model.contains(name), "exthost-model depends on {name}");
    }
}

#[test]
fn the_host_builds_on_the_core() {
    let graph = metadata();
    assert!(graph.closure("exthost").contains("exthost-core"));
}
