//! Random scenarios against the real shell, checked against a small oracle
//! written from the spec: every step extension code takes (the log) and
//! every outcome must be exactly what H-2 to H-11 say. The model checker
//! covers the core exhaustively; this covers the shell that drives it.
//!
//! `EXTHOST_RANDOM_CASES` raises the number of scenarios (default 150).

mod support;

use std::collections::BTreeSet;

use exthost::host::{Activation, Event, HostError};
use serde_json::json;
use support::*;

const POOL: [&str; 4] = ["t0", "t1", "t2", "t3"];

fn random_script(rng: &mut Rng, id: &str, log: &Log) -> Script {
    let mut s = Script::new(id, log);
    if rng.chance(15) {
        s.factory_fails = Some("factory refused");
    }
    let tools = rng.below(3);
    s.tools = (0..tools)
        .map(|_| POOL[rng.below(POOL.len())].to_owned())
        .collect();
    s.hooks = rng.below(3);
    s.failing_hooks = (0..s.hooks).filter(|_| rng.chance(30)).collect();
    s.disposers = rng.below(3);
    s.failing_disposers = (0..s.disposers).filter(|_| rng.chance(25)).collect();
    s.dispose_fails = rng.chance(15);
    s.ending = match rng.below(10) {
        0 | 1 => Ending::Fail("activate refused"),
        2 => Ending::Panic("activate panicked"),
        _ => Ending::Succeed,
    };
    s
}

/// What the spec says happens, step by step.
#[derive(Default)]
struct Oracle {
    active: Vec<usize>,
    live: Vec<String>,
    log: Vec<String>,
}

impl Oracle {
    /// Disposers in reverse registration order, then the instance.
    fn rollback(&mut self, s: &Script) -> bool {
        let mut failed = false;
        for i in (0..s.disposers).rev() {
            self.log.push(format!("{}:disposer{i}", s.id));
            failed |= s.failing_disposers.contains(&i);
        }
        self.log.push(format!("{}:dispose", s.id));
        failed |= s.dispose_fails;
        failed
    }

    /// What `activate` must return: the activation, or the error's code.
    fn activate(&mut self, scripts: &[Script], e: usize) -> Result<Activation, &'static str> {
        let s = &scripts[e];
        if self.active.contains(&e) {
            return Ok(Activation::AlreadyActive);
        }
        self.log.push(format!("{}:factory", s.id));
        if s.factory_fails.is_some() {
            return Err("EXTENSION_ACTIVATION_FAILED");
        }
        self.log.push(format!("{}:activate", s.id));
        let clash = {
            let mut seen: BTreeSet<&str> = self.live.iter().map(String::as_str).collect();
            s.tools.iter().any(|t| !seen.insert(t))
        };
        if s.ending != Ending::Succeed || clash {
            let cleanup_failed = self.rollback(s);
            return Err(if cleanup_failed {
                "EXTENSION_ACTIVATION_ROLLBACK_FAILED"
            } else {
                "EXTENSION_ACTIVATION_FAILED"
            });
        }
        self.live.extend(s.tools.iter().cloned());
        self.active.push(e);
        Ok(Activation::Activated)
    }

    fn emit(&mut self, scripts: &[Script], name: &str) -> usize {
        let mut failures = 0;
        for &e in &self.active {
            let s = &scripts[e];
            for i in 0..s.hooks {
                self.log.push(format!("{}:hook{i}:{name}", s.id));
                failures += usize::from(s.failing_hooks.contains(&i));
            }
        }
        failures
    }

    fn dispose(&mut self, scripts: &[Script]) -> bool {
        let mut failed = false;
        for &e in self.active.clone().iter().rev() {
            failed |= self.rollback(&scripts[e]);
        }
        self.live.clear();
        failed
    }
}

/// Log entries without the event pointer hooks append.
fn comparable(log: &Log) -> Vec<String> {
    log.entries()
        .into_iter()
        .map(|e| {
            if e.contains(":hook") {
                e.rsplit_once(':')
                    .map(|(head, _)| head.to_owned())
                    .unwrap_or(e)
            } else {
                e
            }
        })
        .collect()
}

async fn run_case(seed: u64) {
    let mut rng = Rng::for_seed(seed);
    let log = Log::default();
    let (_d, host) = host();
    let count = 2 + rng.below(3);
    let scripts: Vec<Script> = (0..count)
        .map(|i| random_script(&mut rng, &format!("e{i}"), &log))
        .collect();
    host.discover(scripts.iter().map(Script::definition))
        .unwrap();
    let mut oracle = Oracle::default();
    let context = |step: &str| format!("seed {seed}, {step}");

    for step in 0..10 {
        match rng.below(4) {
            0 | 1 => {
                let e = rng.below(count);
                let got = host.activate(&scripts[e].id).await;
                let want = oracle.activate(&scripts, e);
                match (got, want) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b, "{}", context("activate")),
                    (Err(err), Err(code)) => {
                        assert_eq!(err.code(), code, "{}: {err}", context("activate"))
                    }
                    (got, want) => panic!("{}: got {got:?}, want {want:?}", context("activate")),
                }
            }
            2 => {
                let name = format!("ev{step}");
                let report = host
                    .emit(Event::new(name.clone(), json!(step)))
                    .await
                    .unwrap();
                let want = oracle.emit(&scripts, &name);
                assert_eq!(report.diagnostics.len(), want, "{}", context("emit"));
            }
            _ => {
                let name = POOL[rng.below(POOL.len())];
                let got = host.call_tool(name, json!({})).await;
                if oracle.live.iter().any(|t| t == name) {
                    assert_eq!(
                        got.unwrap().into_json()["tool"],
                        name,
                        "{}",
                        context("call")
                    );
                } else {
                    assert_eq!(
                        got.unwrap_err().code(),
                        "TOOL_NOT_FOUND",
                        "{}",
                        context("call")
                    );
                }
            }
        }
        assert_eq!(
            host.tools().names(),
            oracle.live,
            "{}",
            context("tools after a step")
        );
        assert_eq!(
            comparable(&log),
            oracle.log,
            "{}",
            context("log after a step")
        );
    }

    let got = host.dispose().await;
    let failed = oracle.dispose(&scripts);
    match got {
        Ok(()) => assert!(
            !failed,
            "{}",
            context("dispose succeeded but a step failed")
        ),
        Err(HostError::DisposeFailed { failures }) => {
            assert!(failed && !failures.is_empty(), "{}", context("dispose"))
        }
        Err(e) => panic!("{}: {e}", context("dispose")),
    }
    assert_eq!(
        comparable(&log),
        oracle.log,
        "{}",
        context("log after dispose")
    );
    assert!(host.tools().is_empty());
    for (i, s) in scripts.iter().enumerate() {
        let status = host.status(&s.id).unwrap().to_string();
        let expected = if oracle.active.contains(&i) {
            "disposed"
        } else if s.factory_calls() > 0 {
            "failed"
        } else {
            "discovered"
        };
        assert_eq!(status, expected, "{}", context(&s.id));
    }
}

#[tokio::test]
async fn random_scenarios_follow_the_spec_step_by_step() {
    let cases: u64 = std::env::var("EXTHOST_RANDOM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    for seed in 1..=cases {
        run_case(seed).await;
    }
}
