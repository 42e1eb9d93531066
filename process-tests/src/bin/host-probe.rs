//! A host in its own process, so a test can measure it: `host-probe DIR ID
//! [TOOL]` discovers the manifest folder `DIR`, activates extension `ID`,
//! calls `ID:TOOL` when given, disposes, and prints one JSON line with each
//! step's outcome (`"ok"` or the error's codes) and its own memory: the
//! resident set before activation (`baseline_kb`) and the peak resident set
//! at the end (`peak_kb`, `VmHWM`). Linux only (it reads `/proc/self`).
#![forbid(unsafe_code)]

use exthost::host::{ExtensionHost, HostError, HostOptions, InProcessFactories};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::{Value, json};

fn status_kb(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn outcome<T>(r: &Result<T, HostError>) -> Value {
    match r {
        Ok(_) => json!("ok"),
        Err(e) => json!({"code": e.code(), "cause": e.cause_code(), "message": e.to_string()}),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (dir, id, tool) = (&args[1], &args[2], args.get(3));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let report = runtime.block_on(async {
        let loader = ResourceLoader::create([ResourceRoot::new("probe", dir)]).expect("a loader");
        let host = ExtensionHost::new(
            // No host deadlines: the process runtime's own must hold.
            HostOptions::new(loader)
                .without_activation_deadline()
                .without_cleanup_deadline(),
        )
        .expect("a host");
        host.discover_manifest_dir(std::path::Path::new(dir), &InProcessFactories::new())
            .expect("the manifests are valid");
        let baseline_kb = status_kb("VmRSS:");
        let activated = host.activate(id).await;
        let called = match tool {
            Some(tool) if activated.is_ok() => {
                Some(host.call_tool(&format!("{id}:{tool}"), json!({})).await)
            }
            _ => None,
        };
        let disposed = host.dispose().await;
        json!({
            "activate": outcome(&activated),
            "call": called.as_ref().map(outcome),
            "dispose": outcome(&disposed),
            "baseline_kb": baseline_kb,
            "peak_kb": status_kb("VmHWM:"),
        })
    });
    println!("{report}");
}
