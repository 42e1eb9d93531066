//! `exthost inspect DIR`: what a folder of manifests declares, starting
//! nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

use exthost::core::{Binding, Owner, ToolRegistry, ToolSpec};
use exthost::manifest::{
    MANIFEST_FILE_NAME, Manifest, ManifestError, Notice, Runtime, Trigger, load_manifest_dir,
    load_manifest_file,
};
use serde_json::{Value, json};

use crate::text::{esc, list, path};
use crate::{EXIT_FAILED, EXIT_OK, Failure, Outcome};

/// Arguments of `exthost inspect`.
#[derive(Debug, clap::Args)]
pub(crate) struct InspectArgs {
    /// The folder of manifests: one `<folder>/extension.json` per extension.
    dir: PathBuf,
    /// Print JSON instead of text (schema: docs/cli.md).
    #[arg(long)]
    json: bool,
}

struct Valid {
    file: PathBuf,
    manifest: Manifest,
    notices: Vec<Notice>,
}

/// The manifests of `dir`: the valid ones and every refusal. When the batch
/// is refused, each folder whose file was not named by a refusal is loaded
/// on its own, so the valid ones are still shown.
fn load(dir: &Path) -> (Vec<Valid>, Vec<ManifestError>) {
    match load_manifest_dir(dir) {
        Ok(loaded) => (
            loaded
                .into_iter()
                .map(|l| Valid {
                    file: l.path,
                    manifest: l.manifest,
                    notices: l.notices,
                })
                .collect(),
            Vec::new(),
        ),
        Err(batch) => {
            let errors = batch.into_errors();
            let refused: Vec<PathBuf> = errors
                .iter()
                .filter_map(|e| e.file().map(Path::to_path_buf))
                .collect();
            let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .map(|e| e.path().join(MANIFEST_FILE_NAME))
                .filter(|f| f.is_file() && !refused.contains(f))
                .collect();
            folders.sort();
            let valid = folders
                .into_iter()
                .filter_map(|file| {
                    load_manifest_file(&file)
                        .ok()
                        .map(|(manifest, notices)| Valid {
                            file,
                            manifest,
                            notices,
                        })
                })
                .collect();
            (valid, errors)
        }
    }
}

fn trigger_json(t: &Trigger) -> Value {
    match t {
        Trigger::Eager => json!({"kind": "eager", "names": []}),
        Trigger::HookEvent { events } => json!({"kind": "hook-event", "names": events}),
        Trigger::ProviderSelection { providers } => {
            json!({"kind": "provider-selection", "names": providers})
        }
        Trigger::ToolCall { tools } => json!({"kind": "tool-call", "names": tools}),
        Trigger::UserAction => json!({"kind": "user-action", "names": []}),
    }
}

fn trigger_text(t: &Trigger) -> String {
    match t {
        Trigger::Eager => "eager (at host start)".into(),
        Trigger::HookEvent { events } => format!("first hook event ({})", list(events)),
        Trigger::ProviderSelection { providers } => {
            format!("provider selection ({})", list(providers))
        }
        Trigger::ToolCall { tools } => format!("tool call ({})", list(tools)),
        Trigger::UserAction => "user action".into(),
    }
}

/// Why an environment name the manifest passes through deserves a look:
/// names that change how programs load code or find modules, and names that
/// look like secrets; `None` for an ordinary name.
pub(crate) fn env_warning(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    const LOADING: &[&str] = &[
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "PYTHONPATH",
        "PYTHONSTARTUP",
        "PYTHONHOME",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PERL5LIB",
        "PERL5OPT",
        "RUBYLIB",
        "RUBYOPT",
        "JAVA_TOOL_OPTIONS",
        "BASH_ENV",
        "ENV",
    ];
    if LOADING.contains(&upper.as_str()) || upper.starts_with("DYLD_") {
        return Some("changes how programs load code");
    }
    const SECRET: &[&str] = &[
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "API_KEY",
        "APIKEY",
        "PRIVATE_KEY",
        "CREDENTIAL",
        "AUTH",
        "SESSION",
        "COOKIE",
    ];
    if SECRET.iter().any(|s| upper.contains(s))
        || upper.ends_with("_KEY")
        || upper.ends_with("_PAT")
    {
        return Some("looks like a secret (it changes how programs authenticate)");
    }
    None
}

/// An argument as a shell would need it: bare when plain, otherwise
/// escaped ([`esc`]) and in double quotes.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
    {
        word.to_owned()
    } else {
        format!("\"{}\"", esc(word).replace('"', "\\\""))
    }
}

/// What a process manifest runs, as JSON (`null` for in-process).
fn process_json(r: &Runtime) -> Value {
    match r {
        Runtime::InProcess => Value::Null,
        Runtime::Process(p) => json!({
            "command": p.command(),
            "args": p.args(),
            "env": p.env(),
            "base_env": exthost::process::BASE_ENV_ALLOW_LIST,
            "warnings": p.env().iter().filter_map(|n| env_warning(n).map(|w| json!({"name": n, "why": w}))).collect::<Vec<_>>(),
        }),
    }
}

fn runtime_text(r: &Runtime) -> String {
    match r {
        Runtime::InProcess => "in-process".into(),
        Runtime::Process(p) => format!("process ({})", shell_word(p.command())),
    }
}

pub(crate) fn run(args: &InspectArgs, out: &mut dyn Write) -> Outcome {
    if !args.dir.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a folder of manifests",
            args.dir.display()
        )));
    }
    let (valid, errors) = load(&args.dir);
    // API names as the registry assigns them at discovery (M-6): dormant
    // descriptors in folder order, then declaration order.
    let mut registry = ToolRegistry::new();
    for v in &valid {
        for tool in v.manifest.dormant_tools() {
            let spec = ToolSpec::new(
                tool.runtime_name.clone(),
                tool.description.clone(),
                tool.schema_digest.to_string(),
            );
            let _ = registry.insert(
                &spec,
                Owner::extension(&tool.extension_id),
                Binding::Dormant,
            );
        }
    }
    let api = |name: &str| {
        registry
            .get(name)
            .map_or_else(String::new, |e| e.api_name.clone())
    };
    let extensions: Vec<Value> = valid
        .iter()
        .map(|v| {
            let m = &v.manifest;
            json!({
                "id": m.id(),
                "file": v.file.display().to_string(),
                "class": m.classification().as_str(),
                "runtime": runtime_text(m.runtime()),
                "process": process_json(m.runtime()),
                "earliest_trigger": trigger_json(&m.earliest_trigger()),
                "hooks": m.hooks(),
                "tools": m.dormant_tools().iter().map(|t| json!({
                    "runtime_name": t.runtime_name,
                    "api_name": api(&t.runtime_name),
                    "description": t.description,
                    "schema_digest": t.schema_digest.to_string(),
                })).collect::<Vec<_>>(),
                "notices": v.notices.iter().map(ToString::to_string).collect::<Vec<_>>(),
            })
        })
        .collect();
    let invalid: Vec<Value> = errors
        .iter()
        .map(|e| {
            json!({
                "file": e.file().map(|f| f.display().to_string()),
                "extension_id": e.extension_id(),
                "reason": e.reason_code(),
                "pointer": e.pointer(),
                "message": e.message(),
            })
        })
        .collect();
    if args.json {
        let report = json!({
            "schema_version": 1,
            "ok": errors.is_empty(),
            "directory": args.dir.display().to_string(),
            "extensions": extensions,
            "invalid": invalid,
        });
        writeln!(out, "{}", crate::text::json(&report)?)?;
    } else {
        writeln!(
            out,
            "{} valid manifest(s), {} invalid in {} (nothing was started)",
            valid.len(),
            errors.len(),
            path(&args.dir)
        )?;
        for v in &valid {
            let m = &v.manifest;
            writeln!(out, "\n{} ({})", esc(m.id()), path(&v.file))?;
            writeln!(out, "  class: {}", m.classification().as_str())?;
            writeln!(out, "  runtime: {}", runtime_text(m.runtime()))?;
            if let Runtime::Process(p) = m.runtime() {
                writeln!(out, "  command: {}", shell_word(p.command()))?;
                let args: Vec<String> = p.args().iter().map(|a| shell_word(a)).collect();
                writeln!(
                    out,
                    "  args: {}",
                    if args.is_empty() {
                        "none".to_owned()
                    } else {
                        args.join(" ")
                    }
                )?;
                writeln!(
                    out,
                    "  environment: {} (when the host has them){}",
                    exthost::process::BASE_ENV_ALLOW_LIST.join(", "),
                    if p.env().is_empty() {
                        String::new()
                    } else {
                        format!(", plus {}", list(p.env()))
                    }
                )?;
                for name in p.env() {
                    if let Some(why) = env_warning(name) {
                        writeln!(out, "  warning: environment name {} {why}", esc(name))?;
                    }
                }
            }
            writeln!(
                out,
                "  earliest trigger: {}",
                trigger_text(&m.earliest_trigger())
            )?;
            if !m.hooks().is_empty() {
                writeln!(out, "  hooks: {}", list(m.hooks()))?;
            }
            let tools = m.dormant_tools();
            if tools.is_empty() {
                writeln!(out, "  tools: none declared")?;
            } else {
                writeln!(out, "  tools:")?;
                for t in &tools {
                    writeln!(
                        out,
                        "    {}  api name {}  schema sha256 {}",
                        esc(&t.runtime_name),
                        esc(&api(&t.runtime_name)),
                        t.schema_digest
                    )?;
                }
            }
            for n in &v.notices {
                writeln!(out, "  notice: {}", esc(&n.to_string()))?;
            }
        }
        for e in &errors {
            writeln!(out, "\nINVALID {}", path(e.file().unwrap_or(&args.dir)))?;
            writeln!(out, "  reason: {}", e.reason_code())?;
            writeln!(
                out,
                "  pointer: {}",
                if e.pointer().is_empty() {
                    "(the whole document)".to_owned()
                } else {
                    esc(e.pointer())
                }
            )?;
            writeln!(out, "  message: {}", esc(e.message()))?;
        }
    }
    Ok(if errors.is_empty() {
        EXIT_OK
    } else {
        EXIT_FAILED
    })
}
