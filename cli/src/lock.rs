//! `exthost lock DIR [EXT...] [--check] [--json]`: pin what each process
//! extension declares (P-5).
//!
//! For each process extension of `DIR` (or only the named ones), in folder
//! order: start it under the usual rules (P-1: cleared environment, its own
//! process group, the manifest's deadlines) through the host's public API,
//! as a definition *without* its `deferred` declarations (so the live list
//! is not refused by the M-5 check it is about to replace), read its tools
//! from the host's snapshot (every `tools/list` page), dispose the host
//! (P-3), and write `deferred.tools` with each tool whole (its exact name,
//! description and `inputSchema`, and `title`, `outputSchema`,
//! `annotations`, `icons` and `_meta` where the server gives them, read
//! from the process monitor's record of the listing), in the order the
//! server lists them. Its prompts, resources and resource templates are
//! pinned the same way, whole, in `deferred.prompts`, `deferred.resources`
//! and `deferred.resourceTemplates` (each written when the server declares
//! the capability, removed when it does not), and `deferred.completions`
//! is `true` when the server answers argument completion (asked once,
//! [`offers_completions`]). The server is offered the
//! client capabilities `serve` offers every backend (sampling, roots,
//! elicitation), so it lists what it lists under `serve`.
//! `tools.register` is added to `permissions` when missing; every other
//! field is kept.
//!
//! The file is written with an order this module controls, independent of
//! `serde_json`'s `preserve_order` feature: the manifest's own keys keep
//! their order in the file (it is read into [`Json`], which keeps object
//! keys in document order), and the written schemas have their keys in byte
//! order (the order `serde_json::Map` gives without `preserve_order`; the
//! M-5 digest is over canonical JSON, so the order never changes a digest).
//! Two-space indentation and a final newline. Locking a locked folder
//! therefore changes nothing, byte for byte; and a file whose bytes would
//! not change is not written at all.
//!
//! The write is atomic: a temporary file in the same folder, `fsync`, then
//! `rename` over the manifest (and an `fsync` of the folder). A listing that
//! fails, a tool that cannot be declared (M-1) or `--check` write nothing.

use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use exthost::core::Owner;
use exthost::host::{ExtensionHost, HostError, HostOptions};
use exthost::manifest::{
    ListingKind, MANIFEST_FILE_NAME, Manifest, Permission, Runtime, canonical_json,
    load_manifest_file, parse_manifest, schema_digest,
};
use exthost::{ResourceLoader, ResourceRoot};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

use crate::text::{esc, path};
use crate::{EXIT_FAILED, EXIT_OK, Failure, Outcome};

/// Arguments of `exthost lock`.
#[derive(Debug, clap::Args)]
pub(crate) struct LockArgs {
    /// The folder of manifests (one `<folder>/extension.json` per
    /// extension).
    dir: PathBuf,
    /// Only these extensions (by id); default: every process extension.
    #[arg(value_name = "EXT")]
    extensions: Vec<String>,
    /// Write nothing; exit 1 when any live server differs from its
    /// declarations (the CI guard for "did an upgrade change a tool?").
    #[arg(long)]
    check: bool,
    /// Print one JSON report on stdout instead of text.
    #[arg(long)]
    json: bool,
}

/// The margin the host's activation and cleanup deadlines give on top of
/// the manifest's own startup and shutdown deadlines, so the process
/// runtime's own code (`EXTENSION_TIMEOUT`, ...) is the one reported.
const HOST_MARGIN: Duration = Duration::from_secs(5);

/// What happened to one extension.
#[derive(Debug)]
enum Status {
    /// Its manifest now declares exactly the live tools (written).
    Locked,
    /// Its manifest already declared exactly the live tools, byte for byte.
    Unchanged,
    /// `--check`: the live tools match the declarations.
    Matches,
    /// `--check`: the live tools differ from the declarations.
    Drifted,
    /// Not a process extension.
    Skipped(&'static str),
    /// It could not be locked; nothing was written.
    Failed {
        code: String,
        message: String,
        tool: Option<String>,
    },
}

#[derive(Debug)]
struct Report {
    id: String,
    file: PathBuf,
    status: Status,
    tools: Vec<String>,
    added: Vec<String>,
    removed: Vec<String>,
    changed: Vec<(String, Vec<&'static str>)>,
    /// How the pinned prompts, resources and templates differ, in words
    /// (`prompts: added "x"`).
    listings: Vec<String>,
    permission_added: bool,
}

impl Report {
    fn new(id: String, file: PathBuf, status: Status) -> Self {
        Self {
            id,
            file,
            status,
            tools: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
            changed: Vec::new(),
            listings: Vec::new(),
            permission_added: false,
        }
    }

    fn failed(id: String, file: PathBuf, code: &str, message: String) -> Self {
        Self::new(
            id,
            file,
            Status::Failed {
                code: code.to_owned(),
                message,
                tool: None,
            },
        )
    }

    fn differs(&self) -> bool {
        !self.added.is_empty()
            || !self.removed.is_empty()
            || !self.changed.is_empty()
            || !self.listings.is_empty()
            || self.permission_added
    }
}

/// SIGINT and SIGTERM, registered once so a signal that arrives between
/// two extensions is not lost.
struct Signals {
    interrupt: Option<tokio::signal::unix::Signal>,
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        Self {
            interrupt: signal(SignalKind::interrupt()).ok(),
            terminate: signal(SignalKind::terminate()).ok(),
        }
    }

    /// The next signal's name.
    async fn next(&mut self) -> &'static str {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            () = recv(&mut self.interrupt) => "SIGINT",
            () = recv(&mut self.terminate) => "SIGTERM",
        }
    }
}

/// One manifest of the folder, loaded or not.
struct Found {
    id: String,
    file: PathBuf,
    folder: PathBuf,
    loaded: Result<Manifest, (String, String)>,
}

pub(crate) fn run(args: &LockArgs, out: &mut dyn Write, err: &mut dyn Write) -> Outcome {
    let found = read_folder(&args.dir)?;
    for name in &args.extensions {
        if !found.iter().any(|f| &f.id == name) {
            let known: Vec<&str> = found.iter().map(|f| f.id.as_str()).collect();
            return Err(Failure::usage(format!(
                "no extension {name:?} in {}; extensions: {}",
                args.dir.display(),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )));
        }
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
    // SIGINT and SIGTERM stop the extension being listed: its future is
    // dropped, and with it the host and the child's guard, which kills the
    // child's process group (P-3); nothing is written for it or after it.
    let mut signals = runtime.block_on(async { Signals::new() });
    let mut reports = Vec::new();
    let mut interrupted = None;
    for f in found {
        if !args.extensions.is_empty() && !args.extensions.contains(&f.id) {
            continue;
        }
        if interrupted.is_some() {
            break;
        }
        let report = match f.loaded {
            Err((code, message)) => Report::failed(f.id, f.file, &code, message),
            Ok(manifest) => match manifest.runtime() {
                Runtime::InProcess => Report::new(
                    f.id,
                    f.file,
                    Status::Skipped("in-process extension: its code declares its tools"),
                ),
                Runtime::Process(_) => {
                    let locked = runtime.block_on(async {
                        tokio::select! {
                            report = lock_one(&args.dir, &f.folder, &f.file, &manifest, args) => Ok(report),
                            signal = signals.next() => Err(signal),
                        }
                    });
                    match locked {
                        Ok(report) => report,
                        Err(signal) => {
                            interrupted = Some(signal);
                            Report::failed(
                                f.id,
                                f.file,
                                "interrupted",
                                format!(
                                    "{signal} while it was being listed; its server was stopped"
                                ),
                            )
                        }
                    }
                }
            },
        };
        if !args.json {
            print_text(out, &report)?;
        }
        reports.push(report);
    }
    // Dropping the runtime drops every task still holding a child.
    drop(runtime);
    if let Some(signal) = interrupted {
        writeln!(
            err,
            "exthost: {signal}: stopped before the remaining extensions"
        )?;
    }
    let failed = reports
        .iter()
        .any(|r| matches!(r.status, Status::Failed { .. } | Status::Drifted));
    if args.json {
        let document = json_report(&args.dir, args.check, &reports, !failed);
        writeln!(out, "{}", crate::text::json(&document)?)?;
    } else {
        print_summary(out, &reports, args.check)?;
    }
    if failed && !args.json {
        let what = if args.check {
            "some live servers differ from their declarations or could not be listed; run `exthost lock` to pin them"
        } else {
            "some extensions could not be locked; their manifests are unchanged"
        };
        writeln!(err, "exthost: {what}")?;
    }
    Ok(if failed { EXIT_FAILED } else { EXIT_OK })
}

/// The extension folders of `dir` as the folder loader sees them (names not
/// starting with `.`, in byte order), each manifest loaded on its own so
/// one bad manifest does not stop the others.
fn read_folder(dir: &Path) -> Result<Vec<Found>, Failure> {
    let entries = fs::read_dir(dir).map_err(|e| {
        Failure::usage(format!(
            "{} is not a readable folder of manifests: {e}",
            dir.display()
        ))
    })?;
    let mut folders = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| {
            Failure::usage(format!("cannot read the folder {}: {e}", dir.display()))
        })?;
        let name = entry.file_name();
        if name.as_encoded_bytes().starts_with(b".") || !entry.path().is_dir() {
            continue;
        }
        folders.push(name);
    }
    folders.sort_unstable();
    Ok(folders
        .into_iter()
        .map(|name| {
            let folder = dir.join(&name);
            let file = folder.join(MANIFEST_FILE_NAME);
            match load_manifest_file(&file) {
                Ok((manifest, _)) => Found {
                    id: manifest.id().to_owned(),
                    file,
                    folder,
                    loaded: Ok(manifest),
                },
                Err(e) => Found {
                    id: e
                        .extension_id()
                        .map_or_else(|| name.to_string_lossy().into_owned(), str::to_owned),
                    file,
                    folder,
                    loaded: Err((
                        e.reason_code().to_owned(),
                        if e.pointer().is_empty() {
                            e.message().to_owned()
                        } else {
                            format!("at {}: {}", e.pointer(), e.message())
                        },
                    )),
                },
            }
        })
        .collect())
}

/// A live tool as the server listed it.
struct LiveTool {
    name: String,
    description: String,
    input_schema: Value,
    /// The tool's other fields as the server listed them (`title`,
    /// `outputSchema`, `annotations`, `icons`, `_meta`), in that order.
    fields: Vec<(&'static str, Value)>,
}

/// The fields of a tool pinned beside its name, description and input
/// schema, in the order they are written.
const OTHER_FIELDS: [&str; 5] = ["title", "outputSchema", "annotations", "icons", "_meta"];

/// The value of one of [`OTHER_FIELDS`] in a declared tool.
fn declared_field<'a>(tool: &'a exthost::manifest::DeclaredTool, field: &str) -> Option<Value> {
    let value: Option<&'a Value> = match field {
        "title" => return tool.title().map(|t| Value::String(t.to_owned())),
        "outputSchema" => tool.output_schema(),
        "annotations" => tool.annotations(),
        "icons" => tool.icons(),
        "_meta" => tool.meta(),
        _ => None,
    };
    value.cloned()
}

fn describe(e: &HostError) -> (String, String) {
    let code = e.cause_code().unwrap_or_else(|| e.code()).to_owned();
    (code, e.to_string())
}

async fn lock_one(
    dir: &Path,
    folder: &Path,
    file: &Path,
    manifest: &Manifest,
    args: &LockArgs,
) -> Report {
    let id = manifest.id().to_owned();
    let fail =
        |code: &str, message: String| Report::failed(id.clone(), file.to_owned(), code, message);
    let original = match fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) => {
            return fail(
                "manifest_io_error",
                format!("cannot read the manifest: {e}"),
            );
        }
    };
    let text = original.strip_prefix('\u{feff}').unwrap_or(&original);
    let document: Json = match serde_json::from_str(text) {
        Ok(document) => document,
        Err(e) => return fail("invalid_json", format!("cannot parse the manifest: {e}")),
    };
    let (live, offered, completions) = match list_live(dir, folder, manifest, text).await {
        Ok(live) => live,
        Err((code, message)) => return fail(&code, message),
    };

    let mut report = Report::new(id.clone(), file.to_owned(), Status::Unchanged);
    report.tools = live.iter().map(|t| t.name.clone()).collect();
    let declared = manifest.declared_tools();
    for tool in &live {
        match declared.iter().find(|d| d.name() == tool.name) {
            None => report.added.push(tool.name.clone()),
            Some(d) => {
                let mut fields = Vec::new();
                if d.description() != tool.description {
                    fields.push("description");
                }
                if d.schema_digest() != schema_digest(&tool.input_schema) {
                    fields.push("inputSchema");
                }
                for field in OTHER_FIELDS {
                    let live = tool
                        .fields
                        .iter()
                        .find(|(k, _)| *k == field)
                        .map(|(_, v)| canonical_json(v));
                    let locked = declared_field(d, field).map(|v| canonical_json(&v));
                    if live != locked {
                        fields.push(field);
                    }
                }
                if !fields.is_empty() {
                    report.changed.push((tool.name.clone(), fields));
                }
            }
        }
    }
    for d in declared {
        if !live.iter().any(|t| t.name == d.name()) {
            report.removed.push(d.name().to_owned());
        }
    }
    report.listings = listing_differences(manifest, &offered);
    match (manifest.declares_completions(), completions) {
        (false, true) => report
            .listings
            .push("completions: offered, not pinned yet".to_owned()),
        (true, false) => report
            .listings
            .push("completions: no longer offered".to_owned()),
        _ => {}
    }
    report.permission_added = !manifest.has_permission(Permission::ToolsRegister);

    // The locked manifest, checked by the same validation as any manifest
    // (M-1, M-2): a live tool that cannot be declared is named, and nothing
    // is written.
    let locked = render(&locked_document(document, &live, &offered, completions));
    if let Err(e) = parse_manifest(&locked) {
        let tool = tool_of_pointer(e.pointer()).and_then(|i| live.get(i).map(|t| t.name.clone()));
        let message = match &tool {
            Some(name) => format!(
                "the live tool {name:?} cannot be declared: {} (at {})",
                e.message(),
                e.pointer()
            ),
            None => format!(
                "the live tools cannot be declared: {} (at {})",
                e.message(),
                e.pointer()
            ),
        };
        report.status = Status::Failed {
            code: e.reason_code().to_owned(),
            message,
            tool,
        };
        return report;
    }
    report.status = if args.check {
        if report.differs() {
            Status::Drifted
        } else {
            Status::Matches
        }
    } else if locked == original {
        Status::Unchanged
    } else {
        match write_atomically(file, locked.as_bytes()) {
            Ok(()) => Status::Locked,
            Err(e) => Status::Failed {
                code: "manifest_io_error".to_owned(),
                message: format!("cannot write {}: {e}", file.display()),
                tool: None,
            },
        }
    };
    report
}

/// Starts the extension of `manifest` alone, without its declarations and
/// dependencies, reads its live tools from the host's snapshot, asks it
/// whether it completes arguments ([`offers_completions`]) and disposes the
/// host. Errors are `(code, message)`.
async fn list_live(
    dir: &Path,
    folder: &Path,
    manifest: &Manifest,
    text: &str,
) -> Result<(Vec<LiveTool>, Offered, bool), (String, String)> {
    let id = manifest.id();
    let Runtime::Process(process) = manifest.runtime() else {
        return Err(("not_a_process_extension".to_owned(), String::new()));
    };
    let deadlines = exthost::process::ProcessTimeouts::of(process);
    // The same manifest without `deferred` (so the live list is not checked
    // against the declarations being replaced) and without `dependencies`
    // (it is started alone).
    let mut bare: Value = serde_json::from_str(text)
        .map_err(|e| ("invalid_json".to_owned(), format!("cannot parse: {e}")))?;
    if let Some(object) = bare.as_object_mut() {
        object.remove("deferred");
        object.remove("dependencies");
    }
    let (bare, _) = Manifest::from_value(bare)
        .map_err(|e| (e.reason_code().to_owned(), e.message().to_owned()))?;
    let (definition, monitor) = exthost::process::definition(&bare, folder).ok_or_else(|| {
        (
            "not_a_process_extension".to_owned(),
            "not a process runtime".to_owned(),
        )
    })?;
    // The capabilities `serve` offers every backend: a server that lists
    // more tools to a capable client lists them here too.
    monitor.connect_client(crate::offering::bridge());
    let resources = ResourceLoader::create([ResourceRoot::new("extensions", dir)])
        .map_err(|e| (e.code().to_owned(), e.to_string()))?;
    let host = ExtensionHost::new(
        HostOptions::new(resources)
            .with_activation_deadline(deadlines.startup + HOST_MARGIN)
            .with_cleanup_deadline(deadlines.shutdown_grace * 2 + HOST_MARGIN),
    )
    .map_err(|e| describe(&e))?;
    host.discover([definition]).map_err(|e| describe(&e))?;
    let activated = host.activate(id).await;
    let snapshot = host.tools();
    let completions = match &activated {
        Ok(_) => offers_completions(&monitor, process.call_timeout_ms()).await,
        Err(_) => Ok(false),
    };
    let disposed = host.dispose().await;
    activated.map_err(|e| describe(&e))?;
    disposed.map_err(|e| describe(&e))?;
    let completions = completions?;
    let owner = Owner::extension(id);
    let prefix = format!("{id}:");
    // The whole tools as listed (the snapshot holds the name, description
    // and input schema; the rest comes from the listing itself).
    let listed = monitor.listed_tools();
    let offered = ListingKind::ALL.map(|kind| monitor.listed(kind).map(|l| l.as_ref().clone()));
    let tools = snapshot
        .iter()
        .filter(|t| t.owner == &owner)
        .map(|t| {
            let name = t.name.strip_prefix(&prefix).unwrap_or(t.name).to_owned();
            let whole = listed
                .iter()
                .find(|l| l.get("name").and_then(Value::as_str) == Some(name.as_str()));
            let fields = OTHER_FIELDS
                .iter()
                .filter_map(|field| {
                    let value = whole?.get(*field)?;
                    (!value.is_null()).then(|| (*field, value.clone()))
                })
                .collect();
            LiveTool {
                name,
                description: t.description.to_owned(),
                input_schema: t.input_schema.clone(),
                fields,
            }
        })
        .collect();
    Ok((tools, offered, completions))
}

/// How long the completion question may take when the manifest sets no
/// `callTimeoutMs`.
const COMPLETION_PROBE_DEADLINE: Duration = Duration::from_secs(10);

/// Whether the running server answers argument completion
/// (`completion/complete`). Asked once, for an empty value of the first
/// argument of its first prompt that has one, else of the first variable
/// of its first resource template; a server that has neither has nothing
/// to complete. A server without the `completions` capability answers
/// "method not found" (-32601), as the MCP SDKs do; any other answer,
/// a JSON-RPC error included, means it handles the method. A server that
/// fails or does not answer within its `callTimeoutMs` (or
/// [`COMPLETION_PROBE_DEADLINE`]) fails the lock with its code.
async fn offers_completions(
    monitor: &exthost::process::ProcessMonitor,
    call_timeout_ms: Option<u64>,
) -> Result<bool, (String, String)> {
    use exthost::process::RequestError;
    let Some(params) = completion_question(monitor) else {
        return Ok(false);
    };
    let deadline = call_timeout_ms.map_or(COMPLETION_PROBE_DEADLINE, Duration::from_millis);
    let answer = monitor
        .request(
            "completion/complete",
            params,
            exthost::CancellationToken::new(),
            Some(deadline),
        )
        .await;
    match answer {
        Ok(_) => Ok(true),
        Err(RequestError::Server { code, .. }) => Ok(code != METHOD_NOT_FOUND),
        Err(RequestError::Fault(fault)) => Err((
            fault.code().to_owned(),
            format!("completion/complete: {}", fault.message()),
        )),
        Err(other) => Err((
            "EXTENSION_NOT_RUNNING".to_owned(),
            format!("completion/complete was not answered: {other:?}"),
        )),
    }
}

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i32 = -32601;

/// The `completion/complete` parameters [`offers_completions`] sends, from
/// the server's latest listings.
fn completion_question(monitor: &exthost::process::ProcessMonitor) -> Option<Value> {
    let prompts = monitor.listed(ListingKind::Prompts).unwrap_or_default();
    let prompt = prompts.iter().find_map(|p| {
        let name = p.get("name")?.as_str()?;
        let argument = p.get("arguments")?.get(0)?.get("name")?.as_str()?;
        Some((name.to_owned(), argument.to_owned()))
    });
    if let Some((name, argument)) = prompt {
        return Some(json!({
            "ref": {"type": "ref/prompt", "name": name},
            "argument": {"name": argument, "value": ""},
        }));
    }
    let templates = monitor
        .listed(ListingKind::ResourceTemplates)
        .unwrap_or_default();
    templates.iter().find_map(|t| {
        let template = t.get("uriTemplate")?.as_str()?;
        let variable = first_template_variable(template)?;
        Some(json!({
            "ref": {"type": "ref/resource", "uri": template},
            "argument": {"name": variable, "value": ""},
        }))
    })
}

/// The first variable of an RFC 6570 URI template (`{resourceId}`,
/// `{+path}`, `{?q,page}` give `resourceId`, `path`, `q`).
fn first_template_variable(template: &str) -> Option<&str> {
    let inside = template.split_once('{')?.1.split_once('}')?.0;
    let name = inside
        .trim_start_matches(['+', '#', '.', '/', ';', '?', '&'])
        .split([',', ':', '*'])
        .next()?;
    (!name.is_empty()).then_some(name)
}

/// What a server lists beside its tools, in the order of
/// [`ListingKind::ALL`]; `None` where it does not declare the capability.
type Offered = [Option<Vec<Value>>; 3];

/// How the live prompts, resources and templates differ from the pinned
/// ones, in words: one line per list that differs.
fn listing_differences(manifest: &Manifest, offered: &Offered) -> Vec<String> {
    let mut lines = Vec::new();
    for (kind, live) in ListingKind::ALL.into_iter().zip(offered) {
        let pinned = manifest.declared_listing(kind);
        let (live, pinned_list) = match (live, pinned) {
            (None, None) => continue,
            (None, Some(_)) => {
                lines.push(format!("{}: no longer offered", kind.key()));
                continue;
            }
            // An empty list not pinned yet is written, but is no difference.
            (Some(live), None) if live.is_empty() => continue,
            (Some(live), pinned) => (live.as_slice(), pinned.unwrap_or(&[])),
        };
        let key = |e: &Value| kind.id_of(e).unwrap_or_default().to_owned();
        let find =
            |list: &[Value], id: &str| list.iter().find(|e| kind.id_of(e) == Some(id)).cloned();
        let added: Vec<String> = live
            .iter()
            .map(key)
            .filter(|id| find(pinned_list, id).is_none())
            .collect();
        let removed: Vec<String> = pinned_list
            .iter()
            .map(key)
            .filter(|id| find(live, id).is_none())
            .collect();
        let changed: Vec<String> = live
            .iter()
            .filter(|l| {
                find(pinned_list, &key(l)).is_some_and(|p| canonical_json(&p) != canonical_json(l))
            })
            .map(key)
            .collect();
        let mut parts = Vec::new();
        if pinned.is_none() {
            parts.push("not pinned yet".to_owned());
        }
        for (what, ids) in [("added", added), ("removed", removed), ("changed", changed)] {
            if !ids.is_empty() {
                parts.push(format!("{what} {}", list(&ids)));
            }
        }
        if !parts.is_empty() {
            lines.push(format!("{}: {}", kind.key(), parts.join("; ")));
        }
    }
    lines
}

/// The index `N` of a pointer `/deferred/tools/N/...`.
fn tool_of_pointer(pointer: &str) -> Option<usize> {
    pointer
        .strip_prefix("/deferred/tools/")?
        .split('/')
        .next()?
        .parse()
        .ok()
}

/// `document` with `deferred.tools` set to `live` and `tools.register` in
/// `permissions`; every other key kept where it was.
fn locked_document(
    document: Json,
    live: &[LiveTool],
    offered: &Offered,
    completions: bool,
) -> Json {
    let Json::Object(mut fields) = document else {
        return document;
    };
    let tools = Json::Array(
        live.iter()
            .map(|t| {
                let field = |key: &str| {
                    t.fields
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map(|(k, v)| ((*k).to_owned(), Json::from(v)))
                };
                let mut tool = vec![("name".to_owned(), Json::String(t.name.clone()))];
                tool.extend(field("title"));
                tool.push((
                    "description".to_owned(),
                    Json::String(t.description.clone()),
                ));
                tool.push(("inputSchema".to_owned(), Json::from(&t.input_schema)));
                for key in ["outputSchema", "annotations", "icons", "_meta"] {
                    tool.extend(field(key));
                }
                Json::Object(tool)
            })
            .collect(),
    );
    let register = Json::String("tools.register".to_owned());
    match field_mut(&mut fields, "permissions") {
        Some(Json::Array(items)) => {
            if !items.contains(&register) {
                items.push(register);
            }
        }
        Some(other) => *other = Json::Array(vec![register]),
        None => {
            let at = fields
                .iter()
                .position(|(k, _)| k == "runtime")
                .map_or(fields.len(), |i| i + 1);
            fields.insert(at, ("permissions".to_owned(), Json::Array(vec![register])));
        }
    }
    match field_mut(&mut fields, "deferred") {
        Some(Json::Object(deferred)) => match field_mut(deferred, "tools") {
            Some(slot) => *slot = tools,
            None => deferred.insert(0, ("tools".to_owned(), tools)),
        },
        Some(other) => *other = Json::Object(vec![("tools".to_owned(), tools)]),
        None => fields.push((
            "deferred".to_owned(),
            Json::Object(vec![("tools".to_owned(), tools)]),
        )),
    }
    if let Some(Json::Object(deferred)) = field_mut(&mut fields, "deferred") {
        pin_listings(deferred, offered);
        pin_completions(deferred, completions);
    }
    Json::Object(fields)
}

/// Sets (or removes) `prompts`, `resources` and `resourceTemplates` in the
/// `deferred` block: a new key goes after `tools` and the lists before it,
/// each entry whole with its keys in byte order.
fn pin_listings(deferred: &mut Vec<(String, Json)>, offered: &Offered) {
    for (kind, entries) in ListingKind::ALL.into_iter().zip(offered) {
        let at = deferred.iter().position(|(k, _)| k == kind.key());
        match (entries, at) {
            (Some(entries), Some(i)) => {
                deferred[i].1 = Json::Array(entries.iter().map(Json::from).collect());
            }
            (Some(entries), None) => {
                let after = ListingKind::ALL
                    .iter()
                    .map(|k| k.key())
                    .chain(["tools"])
                    .filter_map(|k| deferred.iter().position(|(d, _)| d == k))
                    .max()
                    .map_or(deferred.len(), |i| i + 1);
                let value = Json::Array(entries.iter().map(Json::from).collect());
                deferred.insert(after, (kind.key().to_owned(), value));
            }
            (None, Some(i)) => {
                deferred.remove(i);
            }
            (None, None) => {}
        }
    }
}

/// Sets `completions` to `true` in the `deferred` block (a new key goes
/// last) when the server offers completions, removes it when not.
fn pin_completions(deferred: &mut Vec<(String, Json)>, completions: bool) {
    let at = deferred.iter().position(|(k, _)| k == "completions");
    match (completions, at) {
        (true, Some(i)) => deferred[i].1 = Json::Bool(true),
        (true, None) => deferred.push(("completions".to_owned(), Json::Bool(true))),
        (false, Some(i)) => {
            deferred.remove(i);
        }
        (false, None) => {}
    }
}

fn field_mut<'a>(fields: &'a mut [(String, Json)], key: &str) -> Option<&'a mut Json> {
    fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// Writes `bytes` to `file` atomically: a temporary file in the same
/// folder, written and synced, renamed over `file`, then the folder synced.
/// The temporary file is removed when any step fails.
fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // A manifest that is a symbolic link is replaced where it points.
    let file = &fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let folder = file.parent().unwrap_or(Path::new("."));
    let name = file
        .file_name()
        .map_or_else(|| "manifest".into(), |n| n.to_string_lossy().into_owned());
    let temporary = folder.join(format!(".{name}.lock-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        if let Ok(metadata) = fs::metadata(file) {
            f.set_permissions(metadata.permissions())?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&temporary, file)?;
        if let Ok(dir) = fs::File::open(folder) {
            dir.sync_all()?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temporary);
    }
    result
}

fn list(names: &[String]) -> String {
    crate::text::list(names)
}

fn print_text(out: &mut dyn Write, r: &Report) -> std::io::Result<()> {
    let count = r.tools.len();
    let tools = if count == 1 { "tool" } else { "tools" };
    match &r.status {
        Status::Locked => writeln!(
            out,
            "{}: locked {count} {tools}, wrote {}",
            esc(&r.id),
            path(&r.file)
        )?,
        Status::Unchanged => writeln!(out, "{}: unchanged, {count} {tools}", esc(&r.id))?,
        Status::Matches => writeln!(
            out,
            "{}: matches its declarations, {count} {tools}",
            esc(&r.id)
        )?,
        Status::Drifted => writeln!(
            out,
            "{}: DIFFERS from its declarations ({count} live {tools}); run `exthost lock` to pin them",
            esc(&r.id)
        )?,
        Status::Skipped(why) => writeln!(out, "{}: skipped: {why}", esc(&r.id))?,
        Status::Failed {
            code,
            message,
            tool,
        } => {
            let tool = tool
                .as_ref()
                .map_or_else(String::new, |t| format!(" (tool \"{}\")", esc(t)));
            writeln!(
                out,
                "{}: FAILED{tool}: {}: {}; {} not written",
                esc(&r.id),
                esc(code),
                esc(message),
                path(&r.file)
            )?;
            return Ok(());
        }
    }
    if !r.added.is_empty() {
        writeln!(out, "  added: {}", list(&r.added))?;
    }
    if !r.removed.is_empty() {
        writeln!(out, "  removed: {}", list(&r.removed))?;
    }
    if !r.changed.is_empty() {
        let mut line = String::new();
        for (i, (name, fields)) in r.changed.iter().enumerate() {
            if i > 0 {
                line.push_str(", ");
            }
            let _ = write!(line, "{} ({})", esc(name), fields.join(", "));
        }
        writeln!(out, "  changed: {line}")?;
    }
    for line in &r.listings {
        writeln!(out, "  {}", esc(line))?;
    }
    if r.permission_added {
        writeln!(
            out,
            "  permissions: tools.register missing (added when locked)"
        )?;
    }
    Ok(())
}

fn print_summary(out: &mut dyn Write, reports: &[Report], check: bool) -> std::io::Result<()> {
    let count = |f: fn(&Status) -> bool| reports.iter().filter(|r| f(&r.status)).count();
    let skipped = count(|s| matches!(s, Status::Skipped(_)));
    let failed = count(|s| matches!(s, Status::Failed { .. }));
    if check {
        writeln!(
            out,
            "{} match, {} differ, {skipped} skipped, {failed} failed",
            count(|s| matches!(s, Status::Matches)),
            count(|s| matches!(s, Status::Drifted)),
        )
    } else {
        writeln!(
            out,
            "{} locked, {} unchanged, {skipped} skipped, {failed} failed",
            count(|s| matches!(s, Status::Locked)),
            count(|s| matches!(s, Status::Unchanged)),
        )
    }
}

fn json_report(dir: &Path, check: bool, reports: &[Report], ok: bool) -> Value {
    let extensions: Vec<Value> = reports
        .iter()
        .map(|r| {
            let (status, code, message, tool) = match &r.status {
                Status::Locked => ("locked", None, None, None),
                Status::Unchanged => ("unchanged", None, None, None),
                Status::Matches => ("matches", None, None, None),
                Status::Drifted => ("differs", None, None, None),
                Status::Skipped(why) => ("skipped", None, Some((*why).to_owned()), None),
                Status::Failed {
                    code,
                    message,
                    tool,
                } => (
                    "failed",
                    Some(code.clone()),
                    Some(message.clone()),
                    tool.clone(),
                ),
            };
            json!({
                "id": r.id,
                "file": r.file.display().to_string(),
                "status": status,
                "written": matches!(r.status, Status::Locked),
                "tools": r.tools,
                "added": r.added,
                "removed": r.removed,
                "changed": r.changed.iter().map(|(name, fields)| json!({"name": name, "fields": fields})).collect::<Vec<_>>(),
                "listings": r.listings,
                "permission_added": r.permission_added,
                "code": code,
                "message": message,
                "tool": tool,
            })
        })
        .collect();
    json!({
        "schema_version": 1,
        "ok": ok,
        "check": check,
        "directory": dir.display().to_string(),
        "extensions": extensions,
    })
}

/// A JSON value whose objects keep their keys in document order, whatever
/// `serde_json`'s features (`preserve_order` is unified across the
/// workspace build, so this module does not rely on it).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl From<&Value> for Json {
    /// Objects of `value` in byte order of their keys (as canonical JSON
    /// orders them), so the written order never depends on `serde_json`'s
    /// map type.
    fn from(value: &Value) -> Self {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from).collect()),
            Value::Object(map) => {
                let mut fields: Vec<(String, Json)> = map
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::from(v)))
                    .collect();
                fields.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                Json::Object(fields)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct JsonVisitor;
        impl<'de> Visitor<'de> for JsonVisitor {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_none<E>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(v)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number that is not finite"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_owned()))
            }
            fn visit_string<E>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut fields = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    fields.push((key, value));
                }
                Ok(Json::Object(fields))
            }
        }
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// `value` as the locked file holds it: two-space indentation, one key or
/// item per line, empty objects and arrays as `{}` and `[]`, strings
/// escaped as `serde_json` escapes them, and a final newline.
fn render(value: &Json) -> String {
    let mut out = String::new();
    write_json(&mut out, value, 0);
    out.push('\n');
    out
}

fn write_json(out: &mut String, value: &Json, depth: usize) {
    let indent = |out: &mut String, depth: usize| {
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    match value {
        Json::Null => out.push_str("null"),
        Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Json::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Json::String(s) => out.push_str(&string_literal(s)),
        Json::Array(items) if items.is_empty() => out.push_str("[]"),
        Json::Array(items) => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                indent(out, depth + 1);
                write_json(out, item, depth + 1);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            indent(out, depth);
            out.push(']');
        }
        Json::Object(fields) if fields.is_empty() => out.push_str("{}"),
        Json::Object(fields) => {
            out.push_str("{\n");
            for (i, (key, item)) in fields.iter().enumerate() {
                indent(out, depth + 1);
                out.push_str(&string_literal(key));
                out.push_str(": ");
                write_json(out, item, depth + 1);
                out.push_str(if i + 1 < fields.len() { ",\n" } else { "\n" });
            }
            indent(out, depth);
            out.push('}');
        }
    }
}

fn string_literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_their_document_order_and_render_stably() {
        let text = "{\"b\": 1, \"a\": {\"z\": [], \"y\": {}}, \"c\": [1.5, \"x\\n\", null, true]}";
        let value: Json = serde_json::from_str(text).unwrap();
        let rendered = render(&value);
        assert_eq!(
            rendered,
            "{\n  \"b\": 1,\n  \"a\": {\n    \"z\": [],\n    \"y\": {}\n  },\n  \"c\": [\n    1.5,\n    \"x\\n\",\n    null,\n    true\n  ]\n}\n"
        );
        let again: Json = serde_json::from_str(&rendered).unwrap();
        assert_eq!(render(&again), rendered);
    }

    #[test]
    fn live_schemas_are_written_with_keys_in_byte_order() {
        let value = json!({"type": "object", "properties": {"b": {}, "a": {}}});
        let Json::Object(fields) = Json::from(&value) else {
            panic!("an object")
        };
        assert_eq!(fields[0].0, "properties");
        assert_eq!(fields[1].0, "type");
    }

    #[test]
    fn a_pointer_names_its_tool_index() {
        assert_eq!(tool_of_pointer("/deferred/tools/12/description"), Some(12));
        assert_eq!(tool_of_pointer("/deferred/tools"), None);
    }

    #[test]
    fn the_first_variable_of_a_uri_template() {
        assert_eq!(
            first_template_variable("demo://resource/dynamic/text/{resourceId}"),
            Some("resourceId")
        );
        assert_eq!(first_template_variable("file:///{+path}"), Some("path"));
        assert_eq!(first_template_variable("x://s{?q,page}"), Some("q"));
        assert_eq!(first_template_variable("x://s/{var:3}"), Some("var"));
        assert_eq!(first_template_variable("x://plain"), None);
        assert_eq!(first_template_variable("x://{}"), None);
        assert_eq!(tool_of_pointer("/permissions/0"), None);
    }
}
