//! `exthost call DIR TOOL`: start only what one tool needs, call it, shut
//! down.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use exthost::core::Status;
use exthost::host::{ExtensionHost, HostError, HostOptions, InProcessFactories};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::Value;

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
    /// Deadline of each cleanup step at shutdown, in seconds.
    #[arg(long, default_value_t = 5)]
    cleanup_deadline: u64,
}

fn describe(e: &HostError) -> String {
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
        .map_err(|e| Failure::usage(format!("{}: {e}", e.code())))?;
    let host = ExtensionHost::new(
        HostOptions::new(resources)
            .with_activation_deadline(Duration::from_secs(args.activation_deadline))
            .with_cleanup_deadline(Duration::from_secs(args.cleanup_deadline)),
    )
    .map_err(|e| Failure::failed(describe(&e)))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    runtime.block_on(async {
        if let Err(e) = host.discover_manifest_dir(&args.dir, factories) {
            if let HostError::ManifestDiscovery { failures } = &e {
                for f in failures {
                    writeln!(
                        err,
                        "exthost: {}: {} ({})",
                        f.file
                            .as_ref()
                            .map_or_else(String::new, |p| p.display().to_string()),
                        f.reason,
                        f.message
                    )?;
                }
            }
            return Err(Failure::usage(describe(&e)));
        }
        let snapshot = host.tools();
        let name = match snapshot
            .get(&args.tool)
            .or_else(|| snapshot.get_by_api_name(&args.tool))
        {
            Some(info) => info.name.to_owned(),
            None => {
                let _ = host.dispose().await;
                return Err(Failure::usage(format!(
                    "TOOL_NOT_FOUND: no tool named {:?}; tools: {}",
                    args.tool,
                    snapshot.names().join(", ")
                )));
            }
        };
        let result = host.call_tool_activating(&name, input).await;
        let started: Vec<String> = host
            .extensions()
            .into_iter()
            .filter(|e| e.status == Status::Active)
            .map(|e| e.id)
            .collect();
        let disposed = host.dispose().await;
        let mut code = EXIT_OK;
        match &result {
            Ok(value) => {
                writeln!(
                    err,
                    "exthost: called {name}; started: {}",
                    if started.is_empty() {
                        "nothing".to_owned()
                    } else {
                        started.join(", ")
                    }
                )?;
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(value)
                        .map_err(|e| Failure::failed(e.to_string()))?
                )?;
            }
            Err(e) => {
                writeln!(err, "exthost: {}", describe(e))?;
                code = EXIT_FAILED;
            }
        }
        if let Err(e) = disposed {
            writeln!(err, "exthost: shutdown: {}", describe(&e))?;
            code = EXIT_FAILED;
        }
        Ok(code)
    })
}
