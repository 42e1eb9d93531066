//! The report of a check made of parts: the default check's exhaustive
//! searches and its swarm, or one search alone. Each property's verdict is
//! judged over every part: an invariant holds when no part found a
//! counterexample, a `sometimes` property is reached when some part
//! reached it.
//!
//! Architecture invariant: builds on `report` (one search's report) and
//! `crate::plan`; never on the rest of `run`.

use serde::Serialize;
use serde_json::{Value, json};

use super::report::{Report, Verdict, bounds_lines, json as report_json, text_verdicts};
use crate::plan::Feature;

/// One member of a swarm, as the report lists it.
#[derive(Debug, Clone, Serialize)]
pub struct MemberSummary {
    /// Its seed.
    pub seed: u64,
    /// Distinct states it explored.
    pub unique_states: usize,
    /// States it generated.
    pub states: usize,
    /// Its deepest path.
    pub max_depth: usize,
}

/// One part of a check.
#[derive(Debug, Clone)]
pub struct Part {
    /// Its name: a search of the default check (`requests+reload`),
    /// `swarm`, or `search` for a check of one search.
    pub name: String,
    /// The features its bounds include.
    pub features: Vec<Feature>,
    /// For a swarm: its members, in seed order.
    pub members: Vec<MemberSummary>,
    /// For a swarm: the distinct states each member explores.
    pub states_per_member: Option<usize>,
    /// What the part found.
    pub report: Report,
}

/// The report of a whole check.
#[derive(Debug, Clone)]
pub struct CheckReport {
    /// What was checked, in one line.
    pub title: String,
    /// The parts, in the order they ran.
    pub parts: Vec<Part>,
    /// Wall-clock seconds for every part.
    pub seconds: f64,
    /// False for one part of a larger check: a `sometimes` property it
    /// does not reach is then no failure.
    pub whole: bool,
}

impl CheckReport {
    /// Every property's verdict over all parts, in the order the parts
    /// first name them. A violation carries the first part that found it
    /// (`found_in`); a `sometimes` property is reached when any part
    /// reached it, and is a failure when no part did and some part that
    /// judges it was complete.
    pub fn verdicts(&self) -> Vec<Verdict> {
        let single = self.parts.len() == 1;
        let mut names: Vec<&str> = Vec::new();
        for part in &self.parts {
            for v in &part.report.properties {
                if !names.contains(&v.name.as_str()) {
                    names.push(&v.name);
                }
            }
        }
        let mut out = Vec::new();
        for name in names {
            let mut all = self.parts.iter().filter_map(|p| {
                p.report
                    .verdict(name)
                    .map(|v| (p.name.as_str(), p.report.complete, v))
            });
            let found = all
                .clone()
                .find(|(_, _, v)| v.result == "violated" || v.result == "reached");
            let mut verdict = match found {
                Some((part, _, v)) => {
                    let mut v = v.clone();
                    if !single {
                        v.found_in = Some(part.to_owned());
                    }
                    v
                }
                None => {
                    let (_, _, first) = all.next().expect("named by a part");
                    let mut v = first.clone();
                    if v.expectation == "sometimes" {
                        v.ok = !self.whole
                            || !self
                                .parts
                                .iter()
                                .any(|p| p.report.complete && p.report.verdict(name).is_some());
                    }
                    v
                }
            };
            if verdict.result == "violated" {
                verdict.ok = false;
            }
            out.push(verdict);
        }
        out
    }

    /// True when every property got its expected verdict over all parts.
    pub fn ok(&self) -> bool {
        self.verdicts().iter().all(|v| v.ok)
    }

    /// The verdict on one property over all parts.
    pub fn verdict(&self, name: &str) -> Option<Verdict> {
        self.verdicts().into_iter().find(|v| v.name == name)
    }

    /// Distinct states over all parts (a swarm's members counted each).
    pub fn unique_states(&self) -> usize {
        self.parts.iter().map(|p| p.report.unique_states).sum()
    }
}

fn features_text(features: &[Feature]) -> String {
    features
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report as text: a line per part, every property's verdict over
/// all parts, then each counterexample step by step.
pub fn text(report: &CheckReport) -> String {
    let mut out = String::new();
    let mut line = |s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    if let [only] = report.parts.as_slice() {
        line(super::report::totals_text(&only.report));
    } else {
        line(format!(
            "{:<22} {:>10} {:>10} {:>5} {:>7}  {}",
            "search", "generated", "unique", "depth", "time", "complete"
        ));
        for p in &report.parts {
            let r = &p.report;
            line(format!(
                "{:<22} {:>10} {:>10} {:>5} {:>6.1}s  {}",
                p.name,
                r.states,
                r.unique_states,
                r.max_depth,
                r.seconds,
                if r.complete {
                    "yes"
                } else {
                    "no (a swarm is partial by design)"
                }
            ));
            if !p.members.is_empty() {
                line(format!(
                    "{:<22} {} members of {} distinct states each over the full bounds, seeds {}",
                    "",
                    p.members.len(),
                    p.states_per_member.unwrap_or(0),
                    p.members
                        .iter()
                        .map(|m| format!("{:#018x}", m.seed))
                        .collect::<Vec<_>>()
                        .join(" ")
                ));
            } else if !p.features.is_empty() {
                line(format!("{:<22} {}", "", features_text(&p.features)));
            }
        }
        line(format!(
            "{} parts, {} distinct states in all, {:.1} s",
            report.parts.len(),
            report.unique_states(),
            report.seconds
        ));
        line(String::new());
    }
    out.push_str(&text_verdicts(&report.verdicts()));
    out
}

/// The version of the JSON report's schema; it changes only when a field
/// is removed or changes meaning (documented in `docs/model-checking.md`).
pub const JSON_SCHEMA_VERSION: u32 = 2;

/// The JSON report: the parts (each with its bounds, features, totals and
/// its own verdicts), and every property's verdict over all parts.
pub fn json(report: &CheckReport) -> Value {
    let verdicts = report.verdicts();
    let parts: Vec<Value> = report
        .parts
        .iter()
        .map(|p| {
            let r = &p.report;
            json!({
                "name": p.name,
                "kind": if p.members.is_empty() { "exhaustive" } else { "swarm" },
                "features": p.features,
                "bounds": r.bounds,
                "bounds_text": bounds_lines(&r.bounds)
                    .into_iter()
                    .map(|(k, v)| format!("{k}: {v}"))
                    .collect::<Vec<_>>(),
                "search": {
                    "strategy": r.strategy,
                    "threads": r.threads,
                    "extension_symmetry": r.extension_symmetry,
                    "complete": r.complete,
                },
                "swarm": (!p.members.is_empty()).then(|| json!({
                    "states_per_member": p.states_per_member,
                    "members": p.members,
                })),
                "totals": {
                    "states": r.states,
                    "unique_states": r.unique_states,
                    "max_depth": r.max_depth,
                    "seconds": r.seconds,
                },
                "distributed": r.distribution,
                "ok": r.properties.iter().all(|v| v.result != "violated"),
            })
        })
        .collect();
    let properties = report_json(&verdicts);
    json!({
        "schema_version": JSON_SCHEMA_VERSION,
        "check": report.title,
        "ok": verdicts.iter().all(|v| v.ok),
        "mutant": report.parts.first().and_then(|p| p.report.mutant.clone()),
        "parts": parts,
        "totals": {
            "parts": report.parts.len(),
            "states": report.parts.iter().map(|p| p.report.states).sum::<usize>(),
            "unique_states": report.unique_states(),
            "seconds": report.seconds,
        },
        "properties": properties,
    })
}
