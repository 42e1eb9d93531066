//! `exthost check --shard I/N` and `exthost check --merge`, run as a user
//! runs them: per-shard JSON reports, the merged report, the index from a
//! job engine's environment variable, and the refusals (exit 2).

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;

fn exthost() -> Command {
    let mut cmd = Command::cargo_bin("exthost").expect("the exthost binary");
    cmd.current_dir(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("the workspace root"),
    );
    cmd.timeout(std::time::Duration::from_secs(120));
    cmd
}

/// Small bounds (two plain extensions, one tool, one request, and as many
/// disposers as the caller adds: a few hundred states). Some `sometimes`
/// properties cannot be reached under them, so the check itself fails
/// (exit 1) with or without shards.
const SMALL: [&str; 15] = [
    "check",
    "--ci",
    "--extensions",
    "2",
    "--no-manifest",
    "--tools",
    "1",
    "--hooks",
    "0",
    "--ops",
    "1",
    "--refused",
    "0",
    "--withdraws",
    "0",
];

/// Runs shard `spec` of the small check with this many disposers and
/// writes its JSON report into `dir`.
fn shard(dir: &Path, spec: &str, disposers: &str) -> PathBuf {
    let out = exthost()
        .args(SMALL)
        .args(["--disposers", disposers])
        .args(["--shard", spec, "--prefix-depth", "3", "--json"])
        .output()
        .expect("exthost runs");
    // A shard fails only on a violation: a `sometimes` property it did
    // not reach is the merge's to judge.
    assert_eq!(out.status.code(), Some(0), "shard {spec}: {out:?}");
    let path = dir.join(format!("shard-{}.json", spec.replace('/', "-of-")));
    std::fs::write(&path, &out.stdout).expect("write the report");
    path
}

#[test]
fn three_shards_merge_into_one_report_of_the_single_searchs_schema() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let paths: Vec<PathBuf> = (0..3)
        .map(|i| shard(dir.path(), &format!("{i}/3"), "1"))
        .collect();
    let report: Value =
        serde_json::from_slice(&std::fs::read(&paths[1]).expect("the report of shard 1"))
            .expect("JSON");
    assert_eq!(report["shard"]["index"], 1);
    assert_eq!(report["shard"]["count"], 3);
    assert_eq!(report["shard"]["prefix_depth"], 3);

    let merged_run = exthost()
        .args(["check", "--json", "--merge"])
        .args(&paths)
        .output()
        .expect("exthost runs");
    let merged: Value = serde_json::from_slice(&merged_run.stdout).expect("JSON");
    let single_run = exthost()
        .args(SMALL)
        .args(["--disposers", "1", "--json"])
        .output()
        .expect("exthost runs");
    let single: Value = serde_json::from_slice(&single_run.stdout).expect("JSON");
    // The same verdict, and so the same exit status: 1, as some
    // `sometimes` properties are out of these bounds' reach.
    assert_eq!(single_run.status.code(), Some(1), "{single_run:?}");
    assert_eq!(merged_run.status.code(), single_run.status.code());
    assert_eq!(merged["ok"], single["ok"]);
    // The single search's schema: the same top-level keys (and `merged`).
    for key in single.as_object().expect("an object").keys() {
        assert!(merged.get(key).is_some(), "the merged report lacks {key}");
    }
    assert!(merged.get("shard").is_none());
    assert_eq!(merged["merged"]["shards"], 3);
    assert_eq!(merged["bounds"], single["bounds"]);
    let verdicts = |r: &Value| -> Vec<(Value, Value)> {
        r["properties"]
            .as_array()
            .expect("properties")
            .iter()
            .map(|p| (p["name"].clone(), p["result"].clone()))
            .collect()
    };
    assert_eq!(verdicts(&merged), verdicts(&single));
    assert!(
        merged["totals"]["unique_states"].as_u64() >= single["totals"]["unique_states"].as_u64()
    );

    // The text report of the merge.
    exthost()
        .args(["check", "--merge"])
        .args(&paths)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("merged 3 shards"))
        .stdout(predicate::str::contains("ok   always     INV-1 "))
        .stdout(predicate::str::contains("not reached"));
}

#[test]
fn a_seeded_bug_fails_the_merged_check_with_exit_1() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let args = ["--disposers", "2", "--mutant", "ForwardRollback"];
    // The merged check fails on INV-2 (with a counterexample), not only on
    // the `sometimes` properties out of these bounds' reach.
    let paths: Vec<PathBuf> = (0..2)
        .map(|i| {
            let out = exthost()
                .args(SMALL)
                .args([
                    "--shard",
                    &format!("{i}/2"),
                    "--prefix-depth",
                    "2",
                    "--json",
                ])
                .args(args)
                .output()
                .expect("exthost runs");
            // A shard that found the bug fails; one that did not passes.
            assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
            let path = dir.path().join(format!("{i}.json"));
            std::fs::write(&path, &out.stdout).expect("write");
            path
        })
        .collect();
    exthost()
        .args(["check", "--merge"])
        .args(&paths)
        .assert()
        .code(1)
        .stdout(predicate::str::contains("INV-2 violated"))
        .stdout(predicate::str::contains(
            "counterexample from the initial state",
        ));
}

#[test]
fn the_index_comes_from_a_kubernetes_or_slurm_variable() {
    for (var, value, index) in [
        ("JOB_COMPLETION_INDEX", "1", 1),
        ("SLURM_ARRAY_TASK_ID", "2", 2),
    ] {
        let out = exthost()
            .args(SMALL)
            .args(["--disposers", "1", "--shard-from-env", "3", "--json"])
            .env_remove("EXTHOST_SHARD_INDEX")
            .env_remove("JOB_COMPLETION_INDEX")
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("SLURM_ARRAY_TASK_MIN")
            .env(var, value)
            .output()
            .expect("exthost runs");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let report: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(report["shard"]["index"], index, "{var}");
        assert_eq!(report["shard"]["count"], 3);
    }
    exthost()
        .args(SMALL)
        .args(["--shard-from-env", "3"])
        .env_remove("EXTHOST_SHARD_INDEX")
        .env_remove("JOB_COMPLETION_INDEX")
        .env_remove("SLURM_ARRAY_TASK_ID")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("none of"));
}

#[test]
fn malformed_shards_missing_and_mismatched_reports_are_refused_with_exit_2() {
    for (spec, says) in [
        ("0/0", "at least 1"),
        ("5/4", "below the count"),
        ("x", "expected I/N"),
    ] {
        exthost()
            .args(SMALL)
            .args(["--shard", spec])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(says));
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let a = shard(dir.path(), "0/2", "1");
    let b = shard(dir.path(), "1/2", "1");
    // A missing shard.
    exthost()
        .args(["check", "--merge"])
        .arg(&a)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("shard(s) 1 of 2 missing"));
    // A shard given twice.
    exthost()
        .args(["check", "--merge"])
        .args([&a, &a, &b])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("given twice"));
    // A shard of other bounds.
    let other_dir = tempfile::tempdir().expect("a temporary directory");
    let other = shard(other_dir.path(), "1/2", "2");
    exthost()
        .args(["check", "--merge"])
        .args([&a, &other])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("differ in /bounds"));
    // Bounds given to the merge (they come from the reports).
    exthost()
        .args(["check", "--ci", "--merge"])
        .args([&a, &b])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("from the reports"));
    // Not a report at all.
    let junk = dir.path().join("junk.json");
    std::fs::write(&junk, "not json").expect("write");
    exthost()
        .args(["check", "--merge"])
        .arg(&junk)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("not a JSON report"));
}
