//! What the core's outbox, drained after one step, tells the environment:
//! its commands, its publication, and the record of each operation that
//! settled (what the properties judge).

use std::sync::Arc;

use exthost_core::{
    CleanupKind, CodeRun, ContextId, Drained, Effect, FailureCause, HostCore, OpId, OpKind,
    OpOutcome, Status,
};

use super::HostModel;
use crate::action::Action;
use crate::render;
use crate::scenario::MANIFEST_ID;
use crate::state::{Activation, CleanupObs, Env, Note, OpStatus, Settled, Violations};

impl HostModel {
    /// What the drained outbox tells the environment, in the order a
    /// driver takes it: the commands, then the publication, then the
    /// settled operations.
    pub(super) fn observe_effects(
        &self,
        env: &mut Env,
        core: &HostCore,
        was: &Env,
        action: &Action,
        outbox: Drained,
    ) {
        let protocol = |env: &mut Env, message: String| {
            Violations::record(&mut env.violations.protocol, message);
        };
        // INV-12b: after the shutdown completed, no extension code runs.
        let after_shutdown = |env: &mut Env, what: String| {
            if was.disposed {
                Violations::record(
                    &mut env.violations.inv12b,
                    format!("after the shutdown completed the core asked to {what}"),
                );
            }
        };
        for effect in outbox.commands {
            check_not_forgotten(env, &effect);
            match effect {
                Effect::CallFactory {
                    op,
                    extension,
                    context,
                } => {
                    // INV-6: only an activation of the extension or of one
                    // of its dependents (H-13), or its reload, runs its
                    // factory.
                    let kind = env.ops.iter().find(|p| p.op == op).map(|p| &p.kind);
                    let own = match kind {
                        Some(OpKind::Activate(target)) => {
                            *target == extension
                                || self
                                    .scenario
                                    .dependency_closure(target)
                                    .contains(&extension)
                        }
                        Some(OpKind::Reload(target)) => *target == extension,
                        Some(OpKind::Redefine(meta)) => meta.id == extension,
                        _ => false,
                    };
                    if !own {
                        Violations::record(
                            &mut env.violations.inv6,
                            format!(
                                "the factory of {extension} was called outside an activation \
                                 of {extension} or of a dependent ({op}, by: {})",
                                render::action(&self.scenario, action)
                            ),
                        );
                    }
                    // INV-13a: every dependency is active when its
                    // dependent's factory runs.
                    let redefine = matches!(kind, Some(OpKind::Redefine(_)));
                    let reload = redefine || matches!(kind, Some(OpKind::Reload(_)));
                    self.check_dependencies_active(env, core, &extension, "its factory ran");
                    after_shutdown(env, format!("call the factory of {extension}"));
                    if extension == MANIFEST_ID {
                        env.subscriber_ran = true;
                    }
                    let mut a = Activation::new(op, extension, context);
                    a.reload = reload;
                    a.redefine = redefine;
                    env.running.push(a);
                }
                Effect::RunActivate { context, extension } => {
                    after_shutdown(env, format!("run the activate of {extension}"));
                    match env.activation_mut(context) {
                        Some(a) => {
                            a.open = true;
                            if self.scenario.bounds.late
                                && let Some(previous) = env.last_attempt
                            {
                                env.opened = Some((context, previous));
                            }
                        }
                        None => protocol(env, format!("activate run for unknown {context}")),
                    }
                }
                Effect::Cancel { context } => match env.activation_mut(context) {
                    Some(a) => a.cancelled = true,
                    None => protocol(env, format!("cancel of unknown {context}")),
                },
                Effect::RunHook { op, hooks, next } => {
                    let hook = hooks[next].clone();
                    after_shutdown(env, format!("run the hook {}", render::hook(&hook)));
                    match env.emits.iter_mut().find(|e| e.op == op) {
                        Some(e) => e.calls.push((hook, None)),
                        None => protocol(env, format!("a hook run for {op}, not an emit")),
                    }
                }
                Effect::RunCleanup { op, step } => {
                    after_shutdown(env, format!("run the cleanup step {}", render::step(&step)));
                    // INV-12a: a shutdown cleanup step starts only once no
                    // call of its extension runs.
                    let shutdown = env
                        .ops
                        .iter()
                        .any(|p| p.op == op && p.kind == OpKind::Dispose);
                    let running: Vec<String> = env
                        .calls
                        .iter()
                        .filter(|c| c.ext == step.extension)
                        .map(|c| c.call.to_string())
                        .collect();
                    if shutdown && !running.is_empty() {
                        Violations::record(
                            &mut env.violations.inv12a,
                            format!(
                                "{op}: the cleanup step {} started while the tool calls [{}] \
                                 of {} were running",
                                render::step(&step),
                                running.join(", "),
                                step.extension
                            ),
                        );
                    }
                    env.cleanup.push(CleanupObs {
                        op,
                        step,
                        failed: None,
                        deadline: false,
                    });
                }
                Effect::Forget {
                    contexts,
                    tools,
                    hooks,
                    disposers,
                } => {
                    // Recorded: a later effect that names one of these is a
                    // protocol violation (the shell dropped it).
                    let f = &mut env.forgotten;
                    f.contexts.extend(contexts);
                    f.tools.extend(tools);
                    f.hooks.extend(hooks);
                    f.disposers.extend(disposers);
                }
                Effect::ForgetAll => {}
                Effect::CancelCalls { calls } => {
                    for call in calls {
                        match env.calls.iter_mut().find(|c| c.call == call) {
                            Some(c) => c.cancelled = true,
                            None => protocol(env, format!("cancel of {call}, not in flight")),
                        }
                    }
                }
                Effect::AbandonCalls { calls } => {
                    for call in calls {
                        match env.calls.iter().position(|c| c.call == call) {
                            Some(i) => {
                                let c = env.calls.remove(i);
                                env.abandoned.push(c);
                            }
                            None => protocol(env, format!("abandon of {call}, not in flight")),
                        }
                    }
                    env.note = Some(Note::CallsAbandoned);
                }
            }
        }
        if outbox.published {
            self.observe_commits(env, core);
        }
        for exthost_core::Settled { op, outcome } in outbox.settled {
            settle(env, op, outcome);
        }
    }
}

/// `protocol`: a command must not name a handle the core already told the
/// shell to forget (`Effect::Forget`): the shell has dropped it. The
/// handles a command names are those of the code it runs
/// ([`Effect::code_run`]), or the context a `Cancel` signals.
fn check_not_forgotten(env: &mut Env, effect: &Effect) {
    let f = &env.forgotten;
    if f.is_empty() {
        return;
    }
    let context = |c: &ContextId| f.contexts.contains(c).then(|| c.to_string());
    let named = match effect.code_run() {
        Some(CodeRun::Factory(c) | CodeRun::Activate(c)) => context(&c),
        Some(CodeRun::Hook(_, hook)) => f.hooks.contains(&hook).then(|| hook.to_string()),
        Some(CodeRun::Cleanup(_, step)) => match step.kind {
            CleanupKind::Disposer { disposer, .. } => f
                .disposers
                .contains(&disposer)
                .then(|| disposer.to_string()),
            CleanupKind::Instance => context(&step.context),
        },
        Some(CodeRun::Tool(_)) => None,
        None => match effect {
            Effect::Cancel { context: c } => context(c),
            _ => None,
        },
    };
    if let Some(handle) = named {
        Violations::record(
            &mut env.violations.protocol,
            format!(
                "the core asked the shell to use {handle} after it told it to forget it \
                 (Forget)"
            ),
        );
    }
}

/// INV-14, what the environment knows of the grants (M-5): an activation
/// that a declaration mismatch rolled back revoked its extension's (an
/// activation that commits restores it, see the publication).
fn note_grants(env: &mut Env, outcome: &OpOutcome) {
    let mismatched = match outcome {
        OpOutcome::ActivationFailed(f) | OpOutcome::DependencyFailed { failure: f, .. } => {
            matches!(f.cause, FailureCause::Declaration(_)).then_some(&f.extension)
        }
        _ => None,
    };
    if let Some(id) = mismatched
        && let Err(at) = env.revoked.binary_search(id)
    {
        env.revoked.insert(at, id.clone());
    }
}

fn settle(env: &mut Env, op: OpId, outcome: OpOutcome) {
    env.op_deadlines = 0;
    env.op_losses = 0;
    let Some(pos) = env.ops.iter().position(|p| p.op == op) else {
        Violations::record(
            &mut env.violations.protocol,
            format!("{op} settled but no caller waits for it"),
        );
        return;
    };
    let pending = env.ops.remove(pos);
    if pending.status != OpStatus::Begun {
        Violations::record(
            &mut env.violations.protocol,
            format!("{op} settled before it began"),
        );
    }
    // The operation's activation attempts (several for a chain of
    // dependencies, H-13); the last one is the one the outcome is about.
    let mut activation = None;
    env.running.retain(|a| {
        if a.op == op {
            activation = Some(a.clone());
            false
        } else {
            true
        }
    });
    if let Some(a) = &activation {
        env.last_attempt = Some(a.context);
    }
    let mut cleanup = Vec::new();
    env.cleanup.retain(|c| {
        if c.op == op {
            cleanup.push(c.clone());
            false
        } else {
            true
        }
    });
    let emit = env
        .emits
        .iter()
        .position(|e| e.op == op)
        .map(|i| env.emits.remove(i));
    note_grants(env, &outcome);
    // INV-17: an activation rolls back for its deadline only when it was
    // read at or after it.
    if let OpOutcome::ActivationFailed(f) = &outcome
        && f.cause == FailureCause::DeadlinePassed
        && let Some(a) = &activation
        && !a.deadline
    {
        Violations::record(
            &mut env.violations.inv17,
            format!(
                "{op}: {} failed for its deadline, though every reading came before it",
                a.ext
            ),
        );
    }
    let mut active_at_start = Vec::new();
    match &outcome {
        OpOutcome::Activated { extension } => match &activation {
            Some(a) if env.active.iter().any(|c| c.context == a.context) => {}
            Some(a) => {
                env.active.push(Arc::new(a.committed()));
                env.published.push(a.ext.clone());
            }
            None => Violations::record(
                &mut env.violations.protocol,
                format!("{extension} activated by {op}, which ran no activation"),
            ),
        },
        OpOutcome::Disposed { .. } => {
            env.disposed = true;
            active_at_start = env.active.clone();
        }
        // H-12: a redefinition of an extension that is not active applies
        // at once, and the grant a declaration mismatch revoked holds
        // again (INV-14).
        OpOutcome::Redefined { extension } => {
            if !matches!(pending.kind, OpKind::Redefine(_))
                || env.active.iter().any(|a| a.ext == *extension)
            {
                Violations::record(
                    &mut env.violations.protocol,
                    format!(
                        "{op} redefined {extension}, though it is no redefinition of an inactive extension"
                    ),
                );
            }
            env.redefined = true;
            env.revoked.retain(|id| id != extension);
        }
        _ => {}
    }
    let retired = match &outcome {
        OpOutcome::Reloaded { .. } | OpOutcome::ReloadFailed(_) => env.retiring.take(),
        _ => None,
    };
    env.last.push(Settled {
        op,
        kind: pending.kind,
        outcome,
        activation,
        cleanup,
        emit,
        active_at_start,
        retired,
    });
}

impl HostModel {
    /// The publication: an activation attempt under way whose context is now its
    /// extension's active generation in the core was committed. An
    /// activation's joins the active ones; a reload's takes its old
    /// generation's place (which retires until the reload settles), and
    /// its tools were published last.
    fn observe_commits(&self, env: &mut Env, core: &HostCore) {
        let live = |ext: &str| {
            core.extension(ext)
                .and_then(|slot| slot.active())
                .map(|e| e.state().context)
        };
        let committed: Vec<usize> = (0..env.running.len())
            .filter(|&i| {
                let a = &env.running[i];
                live(&a.ext) == Some(a.context)
                    && !env.active.iter().any(|c| c.context == a.context)
            })
            .collect();
        for i in committed {
            let a = env.running[i].clone();
            if a.deadline {
                Violations::record(
                    &mut env.violations.inv12c,
                    format!(
                        "{} committed {} although its deadline had passed",
                        a.op, a.ext
                    ),
                );
            }
            env.published.retain(|e| *e != a.ext);
            env.published.push(a.ext.clone());
            env.last_attempt = Some(a.context);
            if !a.reload {
                // INV-14: an activation that commits restores the grant.
                env.revoked.retain(|id| *id != a.ext);
                env.active.push(Arc::new(a.committed()));
                continue;
            }
            if a.redefine {
                env.redefined = true;
            }
            match env.active.iter().position(|c| c.ext == a.ext) {
                Some(j) => {
                    let old = std::mem::replace(&mut env.active[j], Arc::new(a.committed()));
                    let mut old = Arc::unwrap_or_clone(old);
                    old.op = a.op;
                    env.retiring = Some(old);
                }
                None => Violations::record(
                    &mut env.violations.protocol,
                    format!("{} reloaded {}, which was not active", a.op, a.ext),
                ),
            }
        }
    }

    /// INV-13a: records a violation when a dependency of `ext` is not
    /// active in `core` at a point (`when`) where it must be.
    pub(super) fn check_dependencies_active(
        &self,
        env: &mut Env,
        core: &HostCore,
        ext: &str,
        when: &str,
    ) {
        let Some(meta) = self.scenario.meta(ext) else {
            return;
        };
        for d in &meta.dependencies {
            let status = core.extension(d).map(|slot| slot.status());
            if status != Some(Status::Active) {
                Violations::record(
                    &mut env.violations.inv13a,
                    format!(
                        "{when} for {ext} while its dependency {d} was {}",
                        status.map_or("unknown".into(), |s| s.to_string())
                    ),
                );
            }
        }
    }
}
