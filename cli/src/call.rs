//! `exthost call DIR TOOL`: start only what one tool needs, call it, shut
//! down.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use exthost::core::Status;
use exthost::host::{ExtensionHost, HostError, HostOptions, InProcessFactories};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::Value;

use crate::text::{esc, path};
use crate::{EXIT_FAILED, EXIT_OK, Failure, Outcome};

/// Arguments of `exthost call`.
#[derive(Debug, clap::Args)]
pub(crate) struct CallArgs {
    /// The folder of manifests to discover (one `<folder>/extension.json`
    /// per extension).
    dir: PathBuf,
    /// The tool: its runtime name (`ext:tool`) or its API name (`ext_tool`).
    tool: String,
    /// The tool's input, a JSON value.
    #[arg(long, default_value = "{}")]
    input: String,
    /// Activation deadline in seconds.
    #[arg(long, default_value_t = 10)]
    activation_deadline: u64,
    /// Deadline of the tool call in seconds (the call fails with
    /// `EXTENSION_TIMEOUT` after it).
    #[arg(long, default_value_t = DEFAULT_CALL_DEADLINE_SECS)]
    call_deadline: u64,
    /// Deadline of each cleanup step at shutdown, in seconds. Default: room
    /// for the whole shutdown ladder of the slowest process extension
    /// (twice its `shutdownTimeoutMs`, plus 6 s), at least 15 s.
    #[arg(long)]
    cleanup_deadline: Option<u64>,
}

/// The default of `--call-deadline`, in seconds.
pub(crate) const DEFAULT_CALL_DEADLINE_SECS: u64 = 120;
/// The least default cleanup deadline, in seconds.
const MIN_CLEANUP_DEADLINE_SECS: u64 = 15;

/// The default cleanup deadline for the manifests of `dir`: the longest
/// shutdown ladder (close stdin, grace, SIGTERM, grace, SIGKILL and up to
/// 5 s to reap) plus 1 s, and at least 15 s, so the host never abandons a
/// disposer that is still inside its own deadlines.
pub(crate) fn default_cleanup_deadline(dir: &std::path::Path) -> Duration {
    let longest_grace = exthost::manifest::load_manifest_dir(dir)
        .map(|loaded| {
            loaded
                .iter()
                .filter_map(|l| match l.manifest.runtime() {
                    exthost::manifest::Runtime::Process(p) => Some(p.shutdown_timeout_ms().map_or(
                        exthost::process::DEFAULT_SHUTDOWN_GRACE,
                        Duration::from_millis,
                    )),
                    exthost::manifest::Runtime::InProcess => None,
                })
                .max()
                .unwrap_or_default()
        })
        .unwrap_or(exthost::process::DEFAULT_SHUTDOWN_GRACE);
    (longest_grace * 2 + Duration::from_secs(6)).max(Duration::from_secs(MIN_CLEANUP_DEADLINE_SECS))
}

/// One line per manifest a folder's discovery refused or left out: its
/// file, its reason code and its message (escaped and bounded).
pub(crate) fn print_failures(
    err: &mut dyn Write,
    failures: &[exthost::host::ManifestFileFailure],
) -> std::io::Result<()> {
    for f in failures {
        writeln!(
            err,
            "exthost: {}: {} ({})",
            f.file.as_deref().map_or_else(String::new, path),
            esc(f.reason),
            exthost::process::bounded(&f.message)
        )?;
    }
    Ok(())
}

/// A host error in one line: its code, its cause's code when it differs,
/// and its message.
pub(crate) fn describe(e: &HostError) -> String {
    match e.cause_code() {
        Some(cause) if cause != e.code() => {
            format!("{} (cause {cause}): {}", e.code(), e.message())
        }
        _ => e.to_string(),
    }
}

pub(crate) fn run(
    args: &CallArgs,
    factories: &InProcessFactories,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Outcome {
    let input: Value = serde_json::from_str(&args.input)
        .map_err(|e| Failure::usage(format!("--input is not JSON: {e}")))?;
    if !args.dir.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a folder of manifests",
            args.dir.display()
        )));
    }
    // Extensions read resources through the loader; here its one root is
    // the manifest folder itself.
    let resources = ResourceLoader::create([ResourceRoot::new("extensions", &args.dir)])
        .map_err(|e| Failure::usage(e.to_string()))?;
    let cleanup = args
        .cleanup_deadline
        .map_or_else(|| default_cleanup_deadline(&args.dir), Duration::from_secs);
    let host = ExtensionHost::new(
        HostOptions::new(resources)
            .with_activation_deadline(Duration::from_secs(args.activation_deadline))
            .with_call_deadline(Duration::from_secs(args.call_deadline))
            .with_cleanup_deadline(cleanup),
    )
    .map_err(|e| Failure::failed(describe(&e)))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        // SIGINT and SIGTERM run `dispose`; a second one kills the servers'
        // groups; descendants that escape their group are adopted and
        // killed at the end (cli/src/signals.rs).
        let mut supervisor = crate::signals::Supervisor::install()
            .map_err(|e| Failure::failed(format!("cannot handle signals: {e}")))?;
        let discovery = match host.discover_manifest_dir(&args.dir, factories) {
            Ok(discovery) => discovery,
            Err(e) => {
                if let HostError::ManifestDiscovery { failures } = &e {
                    print_failures(err, failures)?;
                }
                return Err(Failure::usage(describe(&e)));
            }
        };
        // The client capabilities `lock` and `serve` offer, so a server
        // lists what its lock pinned; with no client behind `call`, a
        // server's request for one is answered `CLIENT_NOT_CONNECTED`.
        let bridge = crate::offering::bridge();
        for found in &discovery.extensions {
            if let Some(monitor) = found.process() {
                monitor.connect_client(bridge.clone());
            }
        }
        let snapshot = host.tools();
        let name = match snapshot
            .get(&args.tool)
            .or_else(|| snapshot.get_by_api_name(&args.tool))
        {
            Some(info) => info.name.to_owned(),
            None => {
                let _ = supervisor.dispose(host.dispose()).await;
                return Err(Failure::usage(format!(
                    "TOOL_NOT_FOUND: no tool named {:?}; tools: {}",
                    args.tool,
                    snapshot.names().join(", ")
                )));
            }
        };
        let result = supervisor
            .run(host.call_tool_activating(&name, input))
            .await;
        let started: Vec<String> = host
            .extensions()
            .into_iter()
            .filter(|e| e.status == Status::Active)
            .map(|e| e.id)
            .collect();
        if let Some(signal) = supervisor.interrupted_by() {
            writeln!(
                err,
                "exthost: interrupted by signal {signal}; shutting down (a second signal kills the servers)"
            )?;
        }
        let disposed = supervisor.dispose(host.dispose()).await;
        if let Some(code) = supervisor.exit_code() {
            if supervisor.forced() {
                writeln!(err, "exthost: second signal: killed the servers' process groups")?;
            } else if let Some(Err(e)) = &disposed {
                writeln!(err, "exthost: shutdown: {}", esc(&describe(e)))?;
            }
            return Ok(code);
        }
        let Some(result) = result else {
            return Ok(EXIT_FAILED);
        };
        let Some(disposed) = disposed else {
            return Ok(EXIT_FAILED);
        };
        let mut code = EXIT_OK;
        match &result {
            Ok(output) => {
                writeln!(
                    err,
                    "exthost: called {}; started: {}",
                    esc(&name),
                    if started.is_empty() {
                        "nothing".to_owned()
                    } else {
                        crate::text::list(&started)
                    }
                )?;
                writeln!(out, "{}", crate::text::json(&output.to_result_json())?)?;
            }
            Err(e) => {
                writeln!(err, "exthost: {}", esc(&describe(e)))?;
                code = EXIT_FAILED;
            }
        }
        if let Err(e) = disposed {
            writeln!(err, "exthost: shutdown: {}", esc(&describe(&e)))?;
            code = EXIT_FAILED;
        }
        Ok(code)
    })
}
