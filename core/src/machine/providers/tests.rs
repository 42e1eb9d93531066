//! Providers in the pure core (M-8): one commit with the tools, rollback,
//! clash, declaration match, reload swap, shutdown, selection, and the
//! seeded bug `ProviderPublishedBeforeValidation` caught.

use crate::time::Moment;
use crate::*;

fn provider(id: &str, models: &[&str]) -> ProviderRecord {
    ProviderRecord::for_tests(id, models)
}

fn core_with(metas: Vec<DefinitionMeta>) -> HostCore {
    let (mut core, _) = HostCore::new(&[]).unwrap();
    assert_eq!(core.discover(metas), Ok(()));
    core
}

/// Runs one operation with `registrations` made during `activate`, which
/// returns `ok`; every cleanup step succeeds. Returns the outcome.
fn run(core: &mut HostCore, kind: OpKind, registrations: Vec<Registration>, ok: bool) -> OpOutcome {
    let op = match core.request(kind) {
        Requested::Enqueued(op) => op,
        other => panic!("{other:?}"),
    };
    core.apply(Input::Begin(op), Moment::ZERO).unwrap();
    let mut registrations = Some(registrations);
    loop {
        if let Some(settled) = core.poll_settled() {
            return settled.outcome;
        }
        let Some(effect) = core.poll_command() else {
            panic!("the operation stalled");
        };
        let next = match effect {
            Effect::CallFactory { context, .. } => Input::FactoryReturned {
                context,
                result: Ok(()),
            },
            Effect::RunActivate { context, .. } => {
                for r in registrations.take().into_iter().flatten() {
                    let answer = core.register(context, r);
                    assert!(answer.is_ok());
                }
                Input::ActivateReturned {
                    context,
                    result: if ok {
                        Ok(())
                    } else {
                        Err(Failure::error("activate failed"))
                    },
                }
            }
            Effect::RunCleanup { op, .. } => Input::CleanupFinished { op, result: Ok(()) },
            _ => continue,
        };
        core.apply(next, Moment::ZERO).unwrap();
    }
}

fn live(core: &HostCore) -> Vec<(String, Owner)> {
    core.registry()
        .providers()
        .map(|p| (p.record.id.clone(), p.owner.clone()))
        .collect()
}

/// INV-1 for providers: every live provider belongs to an active
/// extension's contribution, and every active contribution's providers are
/// live. Returns the violations.
fn provider_violations(core: &HostCore) -> Vec<String> {
    let mut found = Vec::new();
    for entry in core.registry().providers() {
        let Owner::Extension(id) = &entry.owner else {
            found.push(format!("{} has no extension owner", entry.record.id));
            continue;
        };
        let live = core.extension(id).and_then(ExtensionSlot::live);
        if !live.is_some_and(|c| c.providers.contains(&entry.record)) {
            found.push(format!(
                "{} of {id} is live but not in an active contribution",
                entry.record.id
            ));
        }
    }
    for slot in core.extensions() {
        for p in slot.live().map(|c| c.providers.as_slice()).unwrap_or(&[]) {
            if core.registry().provider(&p.id).is_none() {
                found.push(format!("{} of {} is not live", p.id, slot.id()));
            }
        }
    }
    found
}

fn ext(id: &str) -> Owner {
    Owner::Extension(id.into())
}

#[test]
fn providers_commit_with_the_tools_and_roll_back_with_them() {
    let mut core = core_with(vec![DefinitionMeta::plain("a"), DefinitionMeta::plain("b")]);
    let tool = Registration::Tool(ToolSpec::new("t", "a tool", "0"));
    let outcome = run(
        &mut core,
        OpKind::Activate("a".into()),
        vec![tool, Registration::Provider(provider("p", &["m"]))],
        true,
    );
    assert!(
        matches!(outcome, OpOutcome::Activated { .. }),
        "{outcome:?}"
    );
    assert_eq!(live(&core), [("p".to_owned(), ext("a"))]);
    assert!(core.registry().get("t").is_some());
    // b clashes on `p`: nothing of b goes live, its tool neither.
    let outcome = run(
        &mut core,
        OpKind::Activate("b".into()),
        vec![
            Registration::Tool(ToolSpec::new("u", "b tool", "0")),
            Registration::Provider(provider("q", &[])),
            Registration::Provider(provider("p", &[])),
        ],
        true,
    );
    let OpOutcome::ActivationFailed(f) = outcome else {
        panic!("{outcome:?}")
    };
    assert!(
        matches!(&f.cause, FailureCause::Registry(e) if e.code() == "EXTENSION_PROVIDER_CLASH")
    );
    assert_eq!(live(&core), [("p".to_owned(), ext("a"))]);
    assert!(core.registry().get("u").is_none());
    assert!(provider_violations(&core).is_empty());
    // A failing `activate` publishes nothing either.
    let outcome = run(
        &mut core,
        OpKind::Activate("b".into()),
        vec![Registration::Provider(provider("q", &[]))],
        false,
    );
    assert!(matches!(outcome, OpOutcome::ActivationFailed(_)));
    assert_eq!(live(&core).len(), 1);
    // Shutdown removes every provider.
    run(&mut core, OpKind::Dispose, Vec::new(), true);
    assert!(live(&core).is_empty());
    assert_eq!(core.select_provider("p", "m"), ProviderSelection::Disposed);
}

#[test]
fn a_reload_swaps_providers_in_its_one_commit() {
    let mut core = core_with(vec![DefinitionMeta::plain("a"), DefinitionMeta::plain("b")]);
    run(
        &mut core,
        OpKind::Activate("a".into()),
        vec![
            Registration::Provider(provider("p", &["m"])),
            Registration::Provider(provider("old", &[])),
        ],
        true,
    );
    run(
        &mut core,
        OpKind::Activate("b".into()),
        vec![Registration::Provider(provider("other", &[]))],
        true,
    );
    // Validated against the registry minus the old generation: `p` again
    // is fine; `other` (b's) is a clash and the old generation stays.
    let outcome = run(
        &mut core,
        OpKind::Reload("a".into()),
        vec![Registration::Provider(provider("other", &[]))],
        true,
    );
    assert!(matches!(outcome, OpOutcome::ReloadFailed(_)), "{outcome:?}");
    let ids = |core: &HostCore| -> Vec<String> { live(core).into_iter().map(|p| p.0).collect() };
    assert_eq!(ids(&core), ["p", "old", "other"]);
    let outcome = run(
        &mut core,
        OpKind::Reload("a".into()),
        vec![
            Registration::Provider(provider("p", &["m2"])),
            Registration::Provider(provider("new", &[])),
        ],
        true,
    );
    assert!(matches!(outcome, OpOutcome::Reloaded { .. }), "{outcome:?}");
    assert_eq!(ids(&core), ["other", "p", "new"]);
    assert_eq!(
        core.registry().provider("p").unwrap().record.models[0].id,
        "m2"
    );
    assert!(provider_violations(&core).is_empty());
}

#[test]
fn declared_providers_must_match_and_select_the_declaring_extension() {
    let mut meta = DefinitionMeta::plain("m");
    meta.namespaced = true;
    meta.declared_providers = Some(vec![provider("p", &["x", "y"])]);
    let mut core = core_with(vec![meta]);
    assert_eq!(
        core.select_provider("p", "x"),
        ProviderSelection::Dormant {
            extension: "m".into()
        }
    );
    assert_eq!(
        core.select_provider("p", "z"),
        ProviderSelection::ModelNotFound { owner: ext("m") }
    );
    assert_eq!(
        core.select_provider("nope", "x"),
        ProviderSelection::ProviderNotFound
    );
    let outcome = run(
        &mut core,
        OpKind::Activate("m".into()),
        vec![Registration::Provider(provider("p", &["x"]))],
        true,
    );
    let OpOutcome::ActivationFailed(f) = outcome else {
        panic!("{outcome:?}")
    };
    let FailureCause::Declaration(m) = &f.cause else {
        panic!("{f:?}")
    };
    assert_eq!(m.reason(), MismatchReason::RegisteredProviderModelsMismatch);
    assert!(live(&core).is_empty());
    let outcome = run(
        &mut core,
        OpKind::Activate("m".into()),
        vec![Registration::Provider(provider("p", &["y", "x"]))],
        true,
    );
    assert!(
        matches!(outcome, OpOutcome::Activated { .. }),
        "{outcome:?}"
    );
    assert!(matches!(
        core.select_provider("p", "y"),
        ProviderSelection::Live { .. }
    ));
}

#[test]
fn provider_declaration_reasons_in_check_order() {
    let declared = vec![provider("p", &["x"])];
    let check = |registered: Vec<ProviderRecord>| {
        check_provider_declarations(&declared, &registered)
            .unwrap_err()
            .reason_code()
    };
    assert_eq!(
        check(vec![provider("p", &["x"]), provider("q", &[])]),
        "undeclared_provider_registered"
    );
    assert_eq!(
        check(vec![provider("p", &["x"]), provider("p", &["x"])]),
        "duplicate_registered_provider"
    );
    assert_eq!(check(vec![]), "declared_provider_not_registered");
    let mut named = provider("p", &["x"]);
    named.display_name = "Other".into();
    assert_eq!(
        check(vec![named]),
        "registered_provider_display_name_mismatch"
    );
    let mut schema = provider("p", &["x"]);
    schema.config_schema_digest = Some("00".into());
    assert_eq!(
        check(vec![schema]),
        "registered_provider_config_schema_mismatch"
    );
    assert_eq!(
        check(vec![provider("p", &["x", "y"])]),
        "registered_provider_models_mismatch"
    );
    let mut capable = provider("p", &["x"]);
    capable.models[0].capabilities.insert("vision".into(), true);
    assert_eq!(
        check(vec![capable]),
        "registered_model_capabilities_mismatch"
    );
    assert!(check_provider_declarations(&declared, &declared).is_ok());
}

/// The seeded bug publishes a staged provider at registration: an
/// activation that then fails leaves it live, which the INV-1 check for
/// providers reports. Without the mutant the same run is clean, so the
/// check can fail and the probe is inert in the shipped code.
#[cfg(feature = "mutants")]
#[test]
fn provider_published_before_validation_is_caught() {
    let violations = |mutant: Option<Mutant>| {
        let mut core = core_with(vec![DefinitionMeta::plain("a")]).with_mutant(mutant);
        let outcome = run(
            &mut core,
            OpKind::Activate("a".into()),
            vec![Registration::Provider(provider("p", &["m"]))],
            false,
        );
        assert!(matches!(outcome, OpOutcome::ActivationFailed(_)));
        provider_violations(&core)
    };
    assert!(violations(None).is_empty());
    let found = violations(Some(Mutant::ProviderPublishedBeforeValidation));
    assert_eq!(
        found,
        ["p of a is live but not in an active contribution"],
        "the seeded bug must be caught"
    );
}
