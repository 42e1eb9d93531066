//! `exthost serve DIR`: exthost as one MCP stdio server in front of a
//! folder of extensions (docs/serve.md, P-6). `tools/list` answers from
//! declarations and live tools without starting anything; `tools/call`
//! starts only the owning extension; end of input, SIGINT or SIGTERM
//! disposes everything in reverse order and leaves no process running.

mod answer;
mod busy;
pub(crate) mod capabilities;
mod catalog;
mod completion;
mod gateway;
mod idle;
mod listing;
mod log;
mod offered;
mod prompts;
mod resources;
mod server;
mod shape;
mod transport;
mod watch;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use exthost::host::{ExtensionHost, HostError, HostOptions, InProcessFactories};
use exthost::{ResourceLoader, ResourceRoot};

use crate::{EXIT_FAILED, EXIT_OK, Failure, Outcome, signals};
use gateway::{Expose, Gateway};
use log::Log;
use transport::{EndCell, LineTransport};

/// Arguments of `exthost serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// The folder of manifests to serve (one `<folder>/extension.json` per
    /// extension).
    dir: PathBuf,
    /// What `tools/list` shows: every tool with its schema (`tools`), or
    /// three meta-tools to search, describe and call them (`catalog`).
    #[arg(long, value_enum, default_value_t = Expose::Tools)]
    expose: Expose,
    /// Start every extension in the background once the client has
    /// initialized; a call still waits only for its own extension (and at
    /// most one warm start already under way).
    #[arg(long)]
    warm: bool,
    /// Serve the valid manifests and log the invalid ones, instead of
    /// refusing to start.
    #[arg(long)]
    skip_invalid: bool,
    /// Append log lines to this file instead of stderr.
    #[arg(long, value_name = "FILE")]
    log_file: Option<PathBuf>,
    /// Activation deadline in seconds (a backend's own `startupTimeoutMs`
    /// applies inside it).
    #[arg(long, default_value_t = 60)]
    activation_deadline: u64,
    /// Deadline of each cleanup step at shutdown, in seconds. Default: room
    /// for the whole shutdown ladder of the slowest process extension
    /// (twice its `shutdownTimeoutMs`, plus 6 s), at least 15 s.
    #[arg(long)]
    cleanup_deadline: Option<u64>,
    /// Deadline of each tool call in seconds (none by default: a manifest's
    /// `callTimeoutMs` and the client's own timeout apply).
    #[arg(long)]
    call_deadline: Option<u64>,
    /// At most this many tool calls in flight in the session; a call
    /// beyond it gets a JSON-RPC error (code -32030, `data.code`
    /// `TOO_MANY_CALLS_IN_FLIGHT`) at once.
    #[arg(long, default_value_t = gateway::DEFAULT_MAX_CALLS_IN_FLIGHT, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    max_calls_in_flight: u32,
    /// Show only the tools whose API name matches one of these patterns
    /// (`*` is any run of characters; repeatable). Applies after each
    /// manifest's own `expose` rules.
    #[arg(long, value_name = "PATTERN")]
    allow: Vec<String>,
    /// Hide the tools whose API name matches one of these patterns
    /// (repeatable); a hidden tool is not listed and not callable.
    #[arg(long, value_name = "PATTERN")]
    deny: Vec<String>,
    /// Stop a process extension's backend after this many seconds without
    /// a call (its manifest's `runtime.idleTimeoutMs` wins); its next call
    /// starts it again, checked against the lock. Default: never.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=86_400))]
    idle_stop: Option<u64>,
}

pub(crate) fn run(
    args: &ServeArgs,
    factories: &InProcessFactories,
    err: &mut dyn Write,
) -> Outcome {
    if !args.dir.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a folder of manifests",
            args.dir.display()
        )));
    }
    for pattern in args.allow.iter().chain(&args.deny) {
        if !exthost::manifest::is_valid_pattern(pattern) {
            return Err(Failure::usage(format!(
                "--allow/--deny {}: a pattern is 1 to {} bytes of letters, digits, '_', '-', '.' and '*'",
                crate::text::esc(pattern),
                exthost::manifest::MAX_EXPOSE_PATTERN_BYTES
            )));
        }
    }
    let rules = exthost::manifest::ExposeRules::new(args.allow.clone(), args.deny.clone())
        .ok_or_else(|| {
            Failure::usage(format!(
                "--allow/--deny: at most {} patterns each",
                exthost::manifest::MAX_EXPOSE_PATTERNS
            ))
        })?;
    let dir = std::path::absolute(&args.dir)
        .map_err(|e| Failure::usage(format!("{}: {e}", args.dir.display())))?;
    let log = match &args.log_file {
        Some(path) => Log::file(path)
            .map_err(|e| Failure::usage(format!("--log-file {}: {e}", path.display())))?,
        None => Log::stderr(),
    };
    log.take_library_warnings();
    let resources = ResourceLoader::create([ResourceRoot::new("extensions", &dir)])
        .map_err(|e| Failure::usage(e.to_string()))?;
    let mut options = HostOptions::new(resources)
        .with_activation_deadline(Duration::from_secs(args.activation_deadline))
        .with_cleanup_deadline(args.cleanup_deadline.map_or_else(
            || crate::call::default_cleanup_deadline(&dir),
            Duration::from_secs,
        ));
    if let Some(seconds) = args.call_deadline {
        options = options.with_call_deadline(Duration::from_secs(seconds));
    }
    let host =
        ExtensionHost::new(options).map_err(|e| Failure::failed(crate::call::describe(&e)))?;
    let discovery;
    if args.skip_invalid {
        match host.discover_valid_manifests(&dir, factories) {
            Ok((found, skipped)) => {
                discovery = found;
                crate::call::print_failures(err, &skipped)?;
                for f in &skipped {
                    log.line(&format!(
                        "skipped {}: {}",
                        f.file
                            .as_ref()
                            .map_or_else(String::new, |p| p.display().to_string()),
                        f.reason
                    ));
                }
            }
            Err(e) => {
                if let HostError::ManifestDiscovery { failures } = &e {
                    crate::call::print_failures(err, failures)?;
                }
                return Err(Failure::usage(crate::call::describe(&e)));
            }
        }
    } else {
        match host.discover_manifest_dir(&dir, factories) {
            Ok(found) => discovery = found,
            Err(e) => {
                if let HostError::ManifestDiscovery { failures } = &e {
                    crate::call::print_failures(err, failures)?;
                }
                return Err(Failure::usage(crate::call::describe(&e)));
            }
        }
    }
    let shape = std::sync::Arc::new(shape::Shape::new(&dir, &discovery, rules));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    let code = runtime.block_on(serve(host, args, log, shape));
    // stdin's reader may still be parked in a blocking read; do not wait
    // for it.
    runtime.shutdown_background();
    Ok(code)
}

/// Aborts the session's background tasks (the idle stop, the folder
/// watch) when the session ends, however it ends.
struct AbortOnDrop<const N: usize>([tokio::task::JoinHandle<()>; N]);

impl<const N: usize> Drop for AbortOnDrop<N> {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// What ended the session.
enum End {
    Input,
    Signal(&'static str),
}

fn signal_name(number: Option<i32>) -> &'static str {
    match number {
        Some(2) => "SIGINT",
        Some(15) => "SIGTERM",
        _ => "a signal",
    }
}

async fn serve(
    host: ExtensionHost,
    args: &ServeArgs,
    log: Log,
    shape: std::sync::Arc<shape::Shape>,
) -> u8 {
    // Subreaper (descendants that leave their server's group are adopted
    // and killed at the end), SIGINT and SIGTERM handlers.
    let mut supervisor = match signals::Supervisor::install() {
        Ok(supervisor) => supervisor,
        Err(e) => {
            log.line(&format!("cannot install the signal handlers: {e}"));
            return EXIT_FAILED;
        }
    };
    let mut code = EXIT_OK;
    let end_cell = EndCell::default();
    let gateway_slot: std::sync::Mutex<Option<Gateway>> = std::sync::Mutex::new(None);
    let session = async {
        // Every backend, eager ones included, is offered the forwarded
        // client capabilities.
        let bridge = capabilities::bridge_for(&host, &shape);
        for (id, result) in host.activate_eager().await {
            if let Err(e) = result {
                log.line(&format!(
                    "eager start of {id:?} failed: {}",
                    crate::call::describe(&e)
                ));
            }
        }
        let gateway = Gateway::new(
            host.clone(),
            args.expose,
            args.warm,
            log.clone(),
            args.max_calls_in_flight as usize,
            shape.clone(),
        )
        .with_bridge(bridge);
        *gateway_slot
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(gateway.clone());
        let watcher = gateway.clone();
        let idle_stop = args.idle_stop.map(Duration::from_secs);
        let background = [
            tokio::spawn(idle::watch(gateway.clone(), idle_stop)),
            tokio::spawn(watch::watch(
                gateway.clone(),
                std::path::absolute(&args.dir).unwrap_or_else(|_| args.dir.clone()),
            )),
        ];
        let _background = AbortOnDrop(background);
        let transport = LineTransport::new(
            tokio::io::stdin(),
            tokio::io::stdout(),
            Some(transport::stdin_hung_up),
            end_cell.clone(),
        );
        match rmcp::serve_server(gateway, transport).await {
            Ok(service) => {
                // Both modes: the catalog's search results change with the
                // tools, as the listed tools do.
                let forwarder =
                    tokio::spawn(watch::forward_list_changes(watcher, service.peer().clone()));
                let _ = service.waiting().await;
                forwarder.abort();
                true
            }
            Err(e) => {
                log.line(&format!("the client's initialize failed: {e}"));
                false
            }
        }
    };
    // A signal drops the session: the rmcp service stops answering.
    let end = match supervisor.run(session).await {
        Some(initialized) => {
            if !initialized {
                code = EXIT_FAILED;
            }
            End::Input
        }
        None => End::Signal(signal_name(supervisor.interrupted_by())),
    };
    let gateway = gateway_slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    if let Some(gateway) = &gateway {
        gateway.end_session();
    }
    match (&end, end_cell.fault()) {
        (_, Some(fault)) => {
            log.line(&format!("closing: {fault}"));
            code = EXIT_FAILED;
        }
        (End::Input, None) => log.line("end of input: shutting down"),
        (End::Signal(name), None) => log.line(&format!("{name}: shutting down")),
    }
    if matches!(end, End::Input) {
        // The client closed stdin: a signal now means "be gone" (the SDKs
        // signal 2 s after closing), so no backend outlives serve.
        supervisor.kill_on_first_signal();
    }
    let disposed = supervisor.dispose(host.dispose()).await;
    if let Some(gateway) = &gateway {
        let abandoned = gateway.abandoned_calls(Duration::from_secs(2)).await;
        if abandoned > 0 {
            log.line(&format!(
                "{abandoned} tool call(s) ended unanswered: cancelled by the client or cut off by the end of the session"
            ));
        }
    }
    match disposed {
        Some(Ok(())) => log.line("every extension was shut down"),
        Some(Err(e)) => {
            log.line(&format!("shutdown: {}", crate::call::describe(&e)));
            code = EXIT_FAILED;
        }
        None => {
            log.line("a signal during shutdown: every server's process group was killed");
            code = EXIT_FAILED;
        }
    }
    code
}
