//! The distributed search (`exthost_model::distributed`) at the CI bounds:
//! one worker, two workers and two processes over loopback each explore
//! exactly the single search's states (so no state is owned twice) with
//! the same verdicts; the owners' shares are within 10 % of each other;
//! every seeded bug is caught through it with a counterexample that
//! replays from the initial state; a state survives the trip between
//! processes exactly; a process that dies mid-search ends the others with
//! an error, never a wait.
//!
//! The lifecycle bounds (2.07 M states) take minutes: they are behind
//! `#[ignore]`, run with
//! `cargo test --release -p exthost-model --test distributed -- --ignored`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, Read as _};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use exthost_model::distributed::Cluster;
use exthost_model::mutants::MUTANTS;
use exthost_model::run::{self, Options, Plan, Report, Strategy};
use exthost_model::{Bounds, HostModel, State};
use stateright::Model;

/// The single search's counts and verdicts at some bounds.
struct Single {
    unique_states: usize,
    states: usize,
    verdicts: BTreeMap<String, String>,
}

fn verdicts(report: &Report) -> BTreeMap<String, String> {
    report
        .properties
        .iter()
        .map(|v| (v.name.clone(), v.result.clone()))
        .collect()
}

fn single(bounds: Bounds) -> Single {
    let mut options = Options::new(bounds);
    options.strategy = Strategy::Bfs;
    options.threads = 2;
    let report = run::check(&options, &mut |_| {});
    assert!(report.complete);
    Single {
        unique_states: report.unique_states,
        states: report.states,
        verdicts: verdicts(&report),
    }
}

fn ci() -> &'static Single {
    static CI: OnceLock<Single> = OnceLock::new();
    CI.get_or_init(|| single(Bounds::ci()))
}

fn distributed(bounds: Bounds, workers: usize) -> Report {
    let mut options = Options::new(bounds);
    options.strategy = Strategy::Bfs;
    options.cluster = Some(Cluster {
        workers,
        hosts: None,
    });
    run::check(&options, &mut |_| {})
}

/// Asserts a distributed report explored exactly the single search's
/// states with its verdicts, and that its owners' shares are within 10 %.
fn assert_same(report: &Report, single: &Single, workers: usize) {
    assert!(report.complete);
    assert_eq!(
        report.unique_states, single.unique_states,
        "distinct states"
    );
    assert_eq!(report.states, single.states, "generated states");
    assert_eq!(verdicts(report), single.verdicts);
    assert!(report.ok(), "{:?}", report.properties);
    let d = report.distribution.as_ref().expect("a distributed report");
    assert_eq!(d.shares.len(), workers);
    let sum: u64 = d.shares.iter().map(|s| s.unique_states).sum();
    assert_eq!(sum as usize, single.unique_states);
    let most = d.shares.iter().map(|s| s.unique_states).max().unwrap_or(0);
    let least = d.shares.iter().map(|s| s.unique_states).min().unwrap_or(0);
    assert!(
        (most - least) as f64 <= 0.1 * most as f64,
        "shares {:?} differ by more than 10 %",
        d.shares
    );
}

#[test]
fn one_worker_explores_the_single_searchs_states() {
    assert_same(&distributed(Bounds::ci(), 1), ci(), 1);
}

#[test]
fn two_workers_explore_the_single_searchs_states_once_each() {
    assert_same(&distributed(Bounds::ci(), 2), ci(), 2);
}

/// A state crosses processes exactly: every state of the CI bounds (in
/// the order of a breadth-first walk) decodes to an equal state, with the
/// same fingerprint's hash.
#[test]
fn every_ci_state_survives_the_wire_exactly() {
    let model = HostModel::new(Bounds::ci());
    let mut seen = std::collections::HashSet::new();
    let mut queue: std::collections::VecDeque<State> = model.init_states().into();
    let mut actions = Vec::new();
    let mut checked = 0;
    while let Some(state) = queue.pop_front() {
        let bytes = bincode::serialize(&state).expect("encodes");
        let back: State = bincode::deserialize(&bytes).expect("decodes");
        assert!(back == state, "a state changed on the wire");
        checked += 1;
        model.actions(&state, &mut actions);
        for a in actions.drain(..) {
            if let Some(next) = model.next_state(&state, a)
                && seen.insert(next.clone())
            {
                queue.push_back(next);
            }
        }
    }
    assert_eq!(checked, ci().unique_states);
}

/// Two ports free on loopback now (another program may take one before
/// the search binds it; the test then fails, it does not hang).
fn free_ports() -> (u16, u16) {
    let a = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let b = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    (
        a.local_addr().expect("an address").port(),
        b.local_addr().expect("an address").port(),
    )
}

/// Waits for `child` at most until `deadline`; kills it past that.
fn wait(mut child: Child, deadline: Instant, name: &str) -> (std::process::ExitStatus, String) {
    loop {
        if let Some(status) = child.try_wait().expect("waits") {
            let mut out = String::new();
            child
                .stdout
                .take()
                .expect("piped")
                .read_to_string(&mut out)
                .expect("reads");
            return (status, out);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{name} did not end in time");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn(hosts: &std::path::Path, process: usize, extra: &[&str]) -> Child {
    spawn_with(hosts, process, extra, Stdio::null())
}

fn spawn_with(hosts: &std::path::Path, process: usize, extra: &[&str], stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_exthost-model"))
        .args(["check", "--json", "--workers", "1", "--process"])
        .arg(process.to_string())
        .arg("--hosts")
        .arg(hosts)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("the binary starts")
}

fn two_processes(extra: &[&str], single: &Single) {
    let dir = std::env::temp_dir().join(format!("exthost-distributed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let hosts = dir.join(format!("hosts-{}", extra.join("")));
    let (a, b) = free_ports();
    std::fs::write(&hosts, format!("127.0.0.1:{a}\n127.0.0.1:{b}\n")).expect("writes");
    let deadline = Instant::now() + Duration::from_secs(600);
    let first = spawn(&hosts, 0, extra);
    let second = spawn(&hosts, 1, extra);
    let (status0, out0) = wait(first, deadline, "process 0");
    let (status1, out1) = wait(second, deadline, "process 1");
    assert!(status0.success(), "process 0 failed: {out0}");
    assert!(status1.success(), "process 1 failed");
    // Process 1 prints no report (timely may print its connection
    // retries there).
    assert!(!out1.contains("schema_version"), "only process 0 reports");
    let json: serde_json::Value = serde_json::from_str(&out0).expect("a JSON report");
    assert_eq!(json["schema_version"], 2);
    let part = &json["parts"][0];
    assert_eq!(
        part["totals"]["unique_states"].as_u64(),
        Some(single.unique_states as u64)
    );
    assert_eq!(
        part["totals"]["states"].as_u64(),
        Some(single.states as u64)
    );
    let d = &part["distributed"];
    assert_eq!(d["processes"], 2);
    assert_eq!(d["workers"], 2);
    let shares: Vec<u64> = d["shares"]
        .as_array()
        .expect("shares")
        .iter()
        .map(|s| s["unique_states"].as_u64().expect("a count"))
        .collect();
    let (most, least) = (shares.iter().max().unwrap(), shares.iter().min().unwrap());
    assert!((most - least) as f64 <= 0.1 * *most as f64, "{shares:?}");
    let got: BTreeMap<String, String> = json["properties"]
        .as_array()
        .expect("properties")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().expect("a name").to_owned(),
                p["result"].as_str().expect("a result").to_owned(),
            )
        })
        .collect();
    assert_eq!(got, single.verdicts);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_processes_over_loopback_explore_the_single_searchs_states() {
    two_processes(&["--ci"], ci());
}

/// Process 1 is killed once process 0 reports progress (both are
/// searching, the base bounds take far longer than that): process 0 must
/// end with exit status 2 and say that the search lost a process and has
/// no verdict, instead of waiting for states that never come or printing
/// a report.
#[test]
fn a_process_that_dies_ends_the_others_with_an_error() {
    let dir = std::env::temp_dir().join(format!("exthost-lost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let hosts = dir.join("hosts");
    let (a, b) = free_ports();
    std::fs::write(&hosts, format!("127.0.0.1:{a}\n127.0.0.1:{b}\n")).expect("writes");
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut first = spawn_with(&hosts, 0, &["--base"], Stdio::piped());
    let mut second = spawn(&hosts, 1, &["--base"]);
    let stderr = std::io::BufReader::new(first.stderr.take().expect("piped"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut searching = false;
    while !searching {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                searching = line.starts_with("progress:");
                seen.push(line);
            }
            Err(e) => {
                let _ = first.kill();
                let _ = second.kill();
                panic!("process 0 reported no progress ({e}): {seen:?}");
            }
        }
    }
    second.kill().expect("kills process 1");
    let _ = second.wait();
    let (status, out) = wait(first, deadline, "process 0 after process 1 died");
    seen.extend(rx.iter());
    assert_eq!(status.code(), Some(2), "{seen:?}");
    assert!(
        !out.contains("schema_version"),
        "no report without a verdict: {out}"
    );
    let last = seen.last().expect("an error line");
    assert!(
        last.contains("process 0 of 2: the connection to another process of the search was lost"),
        "{seen:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
#[ignore = "minutes: the lifecycle bounds have 2.07 M states"]
fn lifecycle_bounds_on_two_workers_and_two_processes() {
    let single = single(Bounds::lifecycle());
    assert_same(&distributed(Bounds::lifecycle(), 2), &single, 2);
    two_processes(&["--lifecycle"], &single);
}

/// Every seeded bug is caught through the distributed path, in the part
/// of the default check assigned to it, on two workers, each invariant it
/// breaks with a counterexample whose last state fails the check (the
/// path was replayed from the initial state to build it).
#[test]
fn every_mutant_is_caught_through_the_distributed_search() {
    let cluster = Cluster {
        workers: 2,
        hosts: None,
    };
    for case in &MUTANTS {
        let plan = Plan::mutant_part(case, 1)
            .expect("the part exists")
            .distributed(&cluster);
        assert!(plan.swarm.is_none(), "{}: a search part", case.name);
        let report = run::run_plan(&plan, &mut |_| {}, &mut |_| {});
        for name in case.breaks {
            let verdict = report
                .verdict(name)
                .unwrap_or_else(|| panic!("{} has no property {name}", case.name));
            assert_eq!(
                verdict.result, "violated",
                "{} must break {name} in {}",
                case.name, case.caught_in
            );
            assert!(
                verdict.reason.as_deref().is_some_and(|r| !r.is_empty()),
                "{}: the counterexample for {name} has no reason",
                case.name
            );
            let steps = verdict.counterexample.as_ref().expect("a counterexample");
            assert!(!steps.is_empty(), "{}: empty counterexample", case.name);
        }
    }
}
