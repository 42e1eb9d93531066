//! Redefinition (H-12): a known extension's definition replaced by a new
//! one of the same id, as one queued operation. Not active, it replaces the
//! old at once and runs nothing; active, it is a reload whose fresh
//! generation is the new definition's, checked against its declarations,
//! and a failure keeps both the old generation and the old definition.

mod support;

use exthost::core::Status;
use exthost::error::codes;
use exthost::host::{HostError, Redefinition, ToolDescriptor};
use exthost::prelude::*;
use serde_json::json;
use support::{Log, host, within};

fn descriptor(name: &str) -> ToolDescriptor {
    ToolDescriptor::new(name, format!("tool {name}"), json!({"type": "object"}))
}

/// Version `version` of the manifest-style extension `m`: it declares
/// `declares` and its activation registers `registers`; its factory,
/// activation and dispose are logged as `v<version>:...`.
fn m(
    version: u32,
    declares: &[&str],
    registers: &[&'static str],
    log: &Log,
) -> ExtensionDefinition {
    let log = log.clone();
    let registers: Vec<&'static str> = registers.to_vec();
    ExtensionDefinition::from_fn("m", move |cx| {
        let log = log.clone();
        let registers = registers.clone();
        async move {
            log.push(format!("v{version}:activate"));
            for name in registers {
                cx.register_tool(descriptor(name), |_| async { Ok(json!("ok")) })?;
            }
            let disposed = log.clone();
            cx.on_dispose(move || async move {
                disposed.push(format!("v{version}:dispose"));
                Ok(())
            })?;
            Ok(())
        }
    })
    .namespaced()
    .with_declared_tools(declares.iter().map(|n| descriptor(n)).collect())
}

/// The tools the host lists, with `dormant` for a dormant descriptor.
fn listed(host: &ExtensionHost) -> Vec<String> {
    host.tools()
        .iter()
        .map(|t| {
            if t.dormant {
                format!("{} dormant", t.name)
            } else {
                t.name.to_owned()
            }
        })
        .collect()
}

#[tokio::test]
async fn a_dormant_extension_takes_its_new_declarations_at_once_and_runs_nothing() {
    let (_checked, host) = host();
    let log = Log::default();
    host.discover([m(1, &["x"], &["x"], &log)]).unwrap();
    assert_eq!(listed(&host), ["m:x dormant"]);
    let done = within(host.redefine(m(2, &["y", "z"], &["y", "z"], &log)))
        .await
        .unwrap();
    assert_eq!(done, Redefinition::Replaced);
    assert_eq!(listed(&host), ["m:y dormant", "m:z dormant"]);
    assert!(log.entries().is_empty(), "no code ran: {:?}", log.entries());
    // Its next activation is the new definition's.
    within(host.activate("m")).await.unwrap();
    assert_eq!(log.entries(), ["v2:activate"]);
    assert_eq!(listed(&host), ["m:y", "m:z"]);
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn an_active_extension_is_reloaded_with_its_new_definition() {
    let (_checked, host) = host();
    let log = Log::default();
    host.discover([m(1, &["x"], &["x"], &log)]).unwrap();
    within(host.activate("m")).await.unwrap();
    let done = within(host.redefine(m(2, &["y"], &["y"], &log)))
        .await
        .unwrap();
    assert_eq!(
        done,
        Redefinition::Reloaded {
            cleanup_failures: Vec::new()
        }
    );
    // The fresh generation committed before the old one was disposed.
    assert_eq!(log.entries(), ["v1:activate", "v2:activate", "v1:dispose"]);
    assert_eq!(listed(&host), ["m:y"]);
    // A plain reload now builds the new definition again.
    within(host.reload("m")).await.unwrap();
    assert_eq!(log.entries()[3..], ["v2:activate", "v2:dispose"]);
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn a_fresh_generation_that_breaks_the_new_declarations_keeps_the_old_definition_live() {
    let (_checked, host) = host();
    let log = Log::default();
    host.discover([m(1, &["x"], &["x"], &log)]).unwrap();
    within(host.activate("m")).await.unwrap();
    // Version 2 declares `y` but registers `x` (M-5).
    let error = within(host.redefine(m(2, &["y"], &["x"], &log)))
        .await
        .unwrap_err();
    assert!(matches!(error, HostError::Reload(_)), "{error:?}");
    assert_eq!(error.code(), codes::EXTENSION_ACTIVATION_FAILED);
    assert_eq!(error.cause_code(), Some("undeclared_tool_registered"));
    assert_eq!(listed(&host), ["m:x"], "the old generation stays live");
    assert_eq!(host.status("m"), Some(Status::Active));
    // The old definition stays: a plain reload builds version 1.
    within(host.reload("m")).await.unwrap();
    assert_eq!(
        log.entries(),
        [
            "v1:activate",
            "v2:activate",
            "v2:dispose",
            "v1:activate",
            "v1:dispose"
        ]
    );
    within(host.dispose()).await.unwrap();
}

#[tokio::test]
async fn a_refused_redefinition_says_why_and_changes_nothing() {
    let (_checked, host) = host();
    let log = Log::default();
    host.discover([
        m(1, &["x"], &["x"], &log),
        ExtensionDefinition::from_fn("a", |_| async { Ok(()) }),
    ])
    .unwrap();
    // Unknown id.
    let unknown = ExtensionDefinition::from_fn("nobody", |_| async { Ok(()) });
    let error = within(host.redefine(unknown)).await.unwrap_err();
    assert_eq!(error.code(), codes::EXTENSION_NOT_FOUND);
    // A declared name that breaks the tool grammar.
    let error = within(host.redefine(m(2, &["bad name"], &[], &log)))
        .await
        .unwrap_err();
    assert_eq!(error.code(), codes::TOOL_NAME_INVALID, "{error}");
    assert_eq!(listed(&host), ["m:x dormant"]);
    // Active, with a new dependency: refused, with the reason.
    within(host.activate("m")).await.unwrap();
    let error = within(host.redefine(m(3, &["x"], &["x"], &log).depends_on(["a"])))
        .await
        .unwrap_err();
    assert_eq!(error.code(), codes::EXTENSION_REDEFINITION_REFUSED);
    assert!(error.to_string().contains("dependencies"), "{error}");
    assert_eq!(listed(&host), ["m:x"]);
    assert_eq!(log.entries(), ["v1:activate"]);
    within(host.dispose()).await.unwrap();
    let error = within(host.redefine(m(4, &["x"], &["x"], &log)))
        .await
        .unwrap_err();
    assert_eq!(error.code(), codes::HOST_DISPOSED);
}

#[tokio::test]
async fn a_failed_extension_starts_again_from_its_new_definition() {
    let (_checked, host) = host();
    let log = Log::default();
    // Version 1 registers a tool it does not declare: its activation
    // fails and a dormant call may not start it again (its grant is
    // revoked).
    host.discover([m(1, &["x"], &["w"], &log)]).unwrap();
    within(host.activate("m")).await.unwrap_err();
    assert_eq!(host.status("m"), Some(Status::Failed));
    let done = within(host.redefine(m(2, &["w"], &["w"], &log)))
        .await
        .unwrap();
    assert_eq!(done, Redefinition::Replaced);
    assert_eq!(
        host.status("m"),
        Some(Status::Failed),
        "no transition of H-1"
    );
    assert_eq!(listed(&host), ["m:w dormant"]);
    // Its grant holds again: the call of its dormant tool starts it.
    let answer = within(host.call_tool_activating("m:w", json!({}))).await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(listed(&host), ["m:w"]);
    within(host.dispose()).await.unwrap();
}
