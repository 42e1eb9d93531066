//! One way to carry a code (docs/spec.md section 7): every variant of every
//! public error type implements `CodedError`, its code is one of the stable
//! codes that docs/spec.md section 7 lists, and its `Display` is
//! `CODE: message`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use exthost::core::{
    ActivationFailure, CleanupKind, CleanupStep, ContextId, DisposerRef, Failure, FailureCause,
    Owner, RegistryError, StepFailure, ToolRef, ToolSpec,
};
use exthost::error::{CodedError, codes};
use exthost::host::ManifestFileFailure;
use exthost::resources::{
    ChangeReason, IoFailure, IoOperation, NotFileKind, PathInvalidReason, RootChangedReason,
    RootInvalidReason,
};
use exthost::{HostError, IdError, ResourceError, validate_id_segment};
use exthost_core::check_declarations;

/// Every code docs/spec.md section 7 lists: its table and the codes the
/// repository adds, each a backticked upper-case word.
fn stable_codes() -> BTreeSet<String> {
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/spec.md"))
        .expect("docs/spec.md");
    let section = spec
        .split("\n## 7. Error codes")
        .nth(1)
        .expect("docs/spec.md has section 7")
        .split("\n## ")
        .next()
        .unwrap();
    section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            w.len() > 2
                && w.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        })
        .map(str::to_owned)
        .collect()
}

/// Checks one error: a stable code, `Display` = `CODE: message`.
fn check(stable: &BTreeSet<String>, name: &str, error: &dyn CodedError) {
    let code = error.code();
    assert!(!code.is_empty(), "{name}: empty code");
    assert!(
        stable.contains(code),
        "{name}: code {code} is not listed in docs/spec.md section 7"
    );
    assert!(
        codes::ALL.contains(&code),
        "{name}: {code} not in codes::ALL"
    );
    let message = error.message();
    assert!(!message.is_empty(), "{name}: empty message");
    assert_eq!(
        error.to_string(),
        format!("{code}: {message}"),
        "{name}: Display is not CODE: message"
    );
}

fn failure(cause: FailureCause, rollback: Vec<StepFailure>) -> ActivationFailure {
    ActivationFailure {
        extension: "x".to_owned(),
        cause,
        cleanup_failures: rollback,
    }
}

fn step_failure() -> StepFailure {
    StepFailure {
        step: CleanupStep {
            extension: "x".to_owned(),
            context: ContextId(1),
            kind: CleanupKind::Disposer {
                index: 0,
                disposer: DisposerRef(1),
            },
        },
        failure: Failure::error("boom"),
    }
}

fn id_errors() -> Vec<IdError> {
    ["", &"a".repeat(65), ".x", "a:b"]
        .into_iter()
        .map(|id| validate_id_segment(id).unwrap_err())
        .collect()
}

fn registry_errors() -> Vec<RegistryError> {
    vec![
        RegistryError::InvalidName {
            name: "a:b:c".to_owned(),
            reason: IdError::Empty,
        },
        RegistryError::Duplicate {
            name: "t".to_owned(),
            holder: Owner::Base,
        },
        RegistryError::InvalidDescription {
            name: "t".to_owned(),
            reason: exthost::text::check_description("a\u{202E}b").unwrap_err(),
        },
        RegistryError::ProviderClash {
            provider: "p".to_owned(),
            holder: Owner::extension("x"),
        },
        RegistryError::InvalidProvider {
            provider: "p".to_owned(),
            message: "bad".to_owned(),
        },
    ]
}

#[test]
fn every_variant_of_every_core_error_carries_a_stable_code_in_its_display() {
    let stable = stable_codes();
    assert!(stable.len() >= codes::ALL.len(), "{stable:?}");
    let ids = id_errors();
    assert_eq!(ids.len(), 4, "one IdError per variant");
    for (i, e) in ids.iter().enumerate() {
        check(&stable, &format!("IdError #{i}"), e);
    }
    assert_eq!(ids[0].to_string(), "ID_INVALID: identifier is empty");
    for (i, e) in registry_errors().iter().enumerate() {
        check(&stable, &format!("RegistryError #{i}"), e);
    }
    // A nested error is quoted by its message, without a second code.
    let nested = registry_errors().remove(0).to_string();
    assert_eq!(nested.matches("ID_INVALID").count(), 0, "{nested}");
    let mismatch = check_declarations(
        &[ToolSpec::new("t", "d", "digest")],
        &[(ToolRef(1), ToolSpec::new("u", "d", "digest"))],
    )
    .unwrap_err();
    check(&stable, "DeclarationMismatch", &mismatch);
}

#[test]
fn every_variant_of_every_resource_error_carries_a_stable_code_in_its_display() {
    let stable = stable_codes();
    let path = || "a/b.txt".to_owned();
    let root = || "root".to_owned();
    let all = [
        ResourceError::NoRoots,
        ResourceError::RootInvalid {
            root_id: root(),
            directory: PathBuf::from("/r"),
            reason: RootInvalidReason::DuplicateId,
        },
        ResourceError::PathInvalid {
            path: path(),
            reason: PathInvalidReason::Empty,
        },
        ResourceError::PathEscape {
            root_id: root(),
            path: path(),
        },
        ResourceError::RootChanged {
            root_id: root(),
            directory: PathBuf::from("/r"),
            reason: RootChangedReason::Missing,
        },
        ResourceError::NotFile {
            root_id: root(),
            path: path(),
            kind: NotFileKind::Directory,
        },
        ResourceError::ChangedDuringRead {
            root_id: root(),
            path: path(),
            reason: ChangeReason::Replaced,
        },
        ResourceError::TooLarge {
            root_id: root(),
            path: path(),
            limit: 1,
        },
        ResourceError::InvalidUtf8 {
            root_id: root(),
            path: path(),
            valid_up_to: 0,
            error_len: None,
        },
        ResourceError::Io {
            root_id: root(),
            path: path(),
            operation: IoOperation::Read,
            failure: IoFailure::from(&std::io::Error::other("disk")),
        },
    ];
    let seen: BTreeSet<&str> = all.iter().map(ResourceError::code).collect();
    assert_eq!(seen.len(), 9, "every resource code is exercised: {seen:?}");
    for (i, e) in all.iter().enumerate() {
        check(&stable, &format!("ResourceError #{i}"), e);
    }
}

#[test]
fn every_variant_of_the_host_error_carries_a_stable_code_in_its_display() {
    let stable = stable_codes();
    let id = || "x".to_owned();
    let all = [
        HostError::InvalidExtensionId {
            id: id(),
            reason: IdError::Empty,
        },
        HostError::DuplicateExtension { id: id() },
        HostError::InvalidDeclaration {
            id: id(),
            reason: registry_errors().remove(1),
        },
        HostError::InvalidBaseTool {
            reason: registry_errors().remove(0),
        },
        HostError::NotFound { id: id() },
        HostError::Activation(failure(
            FailureCause::Activate(Failure::error("no")),
            vec![],
        )),
        HostError::Activation(failure(FailureCause::Cancelled, vec![])),
        HostError::Activation(failure(FailureCause::DeadlinePassed, vec![step_failure()])),
        HostError::Reload(failure(FailureCause::Factory(Failure::panic("p")), vec![])),
        HostError::InvalidDependency {
            id: id(),
            dependency: ".d".to_owned(),
            reason: IdError::BadStart { first: '.' },
        },
        HostError::DependencyCycle {
            cycle: vec![id(), "y".to_owned(), id()],
        },
        HostError::DependencyMissing {
            id: id(),
            dependent: id(),
            dependency: "y".to_owned(),
        },
        HostError::DependencyFailed {
            id: id(),
            failure: Box::new(failure(FailureCause::Cancelled, vec![])),
        },
        HostError::CancelledBeforeStart { id: id() },
        HostError::ContextClosed { extension: id() },
        HostError::Reentrant {
            operation: "activate",
        },
        HostError::Disposed,
        HostError::DisposeFailed {
            failures: vec![step_failure()],
        },
        HostError::ToolNotFound { name: id() },
        HostError::ToolFailed {
            name: id(),
            message: "no".to_owned(),
            panicked: false,
            code: None,
        },
        HostError::CallTimedOut {
            name: id(),
            message: "late".to_owned(),
        },
        HostError::TaskLost { operation: "call" },
        HostError::ActivationDenied {
            name: id(),
            extension: id(),
            revoked: true,
        },
        HostError::ManifestDiscovery {
            failures: vec![ManifestFileFailure {
                file: None,
                extension_id: None,
                reason: "manifest_missing",
                message: "gone".to_owned(),
            }],
        },
        HostError::InvalidProvider {
            provider: "p".to_owned(),
            reason: "invalid_declared_provider_id",
            pointer: "/id".to_owned(),
            message: "bad".to_owned(),
        },
        HostError::ProviderNotFound {
            provider: "p".to_owned(),
        },
        HostError::ModelNotFound {
            provider: "p".to_owned(),
            model: "m".to_owned(),
        },
        HostError::ProviderActivationDenied {
            provider: "p".to_owned(),
            extension: id(),
        },
    ];
    for (i, e) in all.iter().enumerate() {
        check(&stable, &format!("HostError #{i}"), e);
    }
    let codes_seen: BTreeSet<&str> = all.iter().map(HostError::code).collect();
    assert!(codes_seen.len() >= 25, "{codes_seen:?}");
}

#[test]
fn manifest_errors_carry_their_stable_code_in_their_display() {
    let stable = stable_codes();
    let error = exthost::parse_manifest("{").unwrap_err();
    check(&stable, "ManifestError", &error);
    assert!(error.to_string().starts_with("MANIFEST_INVALID: refused ("));

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("bad")).unwrap();
    std::fs::write(dir.path().join("bad/extension.json"), "{").unwrap();
    let batch = exthost::load_manifest_dir(dir.path()).unwrap_err();
    check(&stable, "ManifestBatchError", &batch);
    let text = batch.to_string();
    assert_eq!(text.matches("MANIFEST_INVALID").count(), 1, "{text}");
}

#[cfg(feature = "process")]
#[test]
fn every_process_fault_carries_a_stable_code_in_its_display() {
    use exthost::process::ProcessFault;
    let stable = stable_codes();
    for fault in [
        ProcessFault::Exited("gone".to_owned()),
        ProcessFault::Protocol("junk".to_owned()),
        ProcessFault::Timeout("late".to_owned()),
    ] {
        check(&stable, "ProcessFault", &fault);
    }
}
