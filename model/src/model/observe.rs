//! What the environment observes of one step: what its own action tells
//! it, and what the core's typed reply tells it. What the core's outbox
//! held (commands, publication, settled operations) is `super::effects`'s.
//!
//! Architecture invariant: records observations and transition
//! violations in the environment; never changes the core.

use exthost_core::{
    AdmittedCall, CallRefused, CallVerdict, Drained, Effect, Owner, Phase, Registered,
    Registration, Requested,
};

use super::{HostModel, Reply, clamp};
use crate::action::{Action, Awaited, Reg};
use crate::scenario::{DiscoveryStep, EVENT, MANIFEST_ID};
use crate::state::{
    CallObs, CleanupObs, EmitObs, Env, Note, OpStatus, PendingOp, State, Violations,
};
use exthost_core::{OpId, OpKind};

impl HostModel {
    pub(super) fn observe(
        &self,
        s: &mut State,
        last: &State,
        action: &Action,
        reply: Reply,
        outbox: Drained,
    ) {
        let before = &last.core;
        let was = &last.env;
        let drained = matches!(action, Action::CallFinish { .. })
            && outbox
                .commands
                .iter()
                .any(|e| matches!(e, Effect::RunCleanup { .. }));
        let env = &mut s.env;
        let protocol = |env: &mut Env, message: String| {
            Violations::record(&mut env.violations.protocol, message);
        };
        // What the action itself tells the environment.
        match action {
            Action::Discover(step) => env.script = clamp(step + 1),
            Action::Request(OpKind::Dispose) => env.dispose_requested = true,
            Action::Request(OpKind::Reload(_) | OpKind::Redefine(_)) => env.reloads_left -= 1,
            Action::Request(_) => env.requests_left -= 1,
            Action::Withdraw(op) => {
                env.withdraws_left -= 1;
                env.ops.retain(|p| p.op != *op);
                env.note = Some(Note::Withdrawn);
                if s.core.queued().iter().any(|(q, _)| q == op) {
                    protocol(env, format!("{op} is still queued after its withdrawal"));
                }
            }
            Action::Begin { op, .. } => {
                let expected = env.ops.iter().find(|p| p.status == OpStatus::Queued);
                if expected.map(|p| p.op) != Some(*op) {
                    Violations::record(
                        &mut env.violations.inv4,
                        format!(
                            "{op} began, but the first request not begun is {}",
                            expected.map_or("none".into(), |p| p.op.to_string())
                        ),
                    );
                }
                if let Some(p) = env.ops.iter_mut().find(|p| p.op == *op) {
                    p.status = OpStatus::Begun;
                    match p.kind {
                        OpKind::Emit => env.emits.push(EmitObs {
                            op: *op,
                            live: before.live_hooks().iter().cloned().collect(),
                            calls: Vec::new(),
                        }),
                        OpKind::Dispose => env.dispose_begun = true,
                        OpKind::Activate(_) | OpKind::Reload(_) | OpKind::Redefine(_) => {}
                    }
                }
            }
            Action::Factory { context, ok, .. } => {
                if *ok && let Some(a) = env.activation_mut(*context) {
                    a.instance = true;
                }
            }
            Action::Register { context, reg, .. } => {
                if let Some(a) = env.activation_mut(*context) {
                    match reg {
                        Reg::Tool(_) | Reg::LateTool => a.tool_attempts += 1,
                        Reg::Hook => a.hook_attempts += 1,
                        Reg::Disposer => a.disposer_attempts += 1,
                        Reg::Provider => a.provider_attempts += 1,
                    }
                }
            }
            Action::ActivateReturned { context, .. } => {
                if let Some(a) = env.activation_mut(*context) {
                    a.open = false;
                    let ext = a.ext.clone();
                    // After a deadline the late window is not opened: the
                    // same registrations are tried after the ordinary
                    // returns, and a refused one changes nothing.
                    if self.scenario.bounds.late && !a.deadline {
                        env.closed = Some((*context, ext));
                    }
                }
            }
            Action::Hook { op, .. } => {
                let failed = self.failed(action);
                if let Some(call) = env
                    .emits
                    .iter_mut()
                    .find(|e| e.op == *op)
                    .and_then(|e| e.calls.last_mut())
                {
                    call.1 = Some(failed);
                }
            }
            Action::Hooks { op, hooks, results } => {
                if let Some(e) = env.emits.iter_mut().find(|e| e.op == *op) {
                    // The first was asked for (`RunHook`); the shell ran the
                    // rest from the emit's list.
                    if let Some(first) = e.calls.last_mut() {
                        first.1 = Some(!results[0]);
                    }
                    for (hook, ok) in hooks.iter().zip(results).skip(1) {
                        e.calls.push((hook.clone(), Some(!ok)));
                    }
                }
            }
            Action::Cleanup { op, .. } => {
                let failed = self.failed(action);
                if let Some(obs) = env
                    .cleanup
                    .iter_mut()
                    .rev()
                    .find(|c| c.op == *op && c.failed.is_none())
                {
                    obs.failed = Some(failed);
                }
            }
            Action::LateRegister { context, .. } => {
                let changed = [
                    (before.registry() != s.core.registry(), "the registry"),
                    (before.live_hooks() != s.core.live_hooks(), "the live hooks"),
                    (before.extensions() != s.core.extensions(), "the extensions"),
                ];
                for (did, what) in changed {
                    if did {
                        Violations::record(
                            &mut env.violations.inv5,
                            format!("a registration on closed {context} changed {what}"),
                        );
                    }
                }
            }
            Action::Hang { .. } => unreachable!("handled before apply"),
            Action::CallStart { .. } => {
                // The probe after the shutdown uses no bound (it lasts one
                // step).
                if !was.disposed {
                    env.calls_left = env.calls_left.saturating_sub(1);
                }
            }
            Action::CallFinish { .. } => {
                if drained {
                    env.note = Some(Note::CallDrained);
                }
            }
            // What the core answered is judged with its reply below.
            Action::DormantCall { .. } => {}
            Action::Deadline { op, on } => {
                env.op_deadlines += 1;
                match on {
                    Awaited::Factory | Awaited::Activate => {
                        if let Some(a) = env.running.iter_mut().rev().find(|a| a.op == *op) {
                            a.deadline = true;
                        }
                    }
                    Awaited::Cleanup => {
                        if let Some(obs) = running_cleanup(env, *op) {
                            obs.failed = Some(true);
                            obs.deadline = true;
                        }
                    }
                    // The hook was read at its deadline: it must be
                    // reported as failed (timed out).
                    Awaited::Hook => hook_failed(env, *op),
                    Awaited::Calls => {}
                }
            }
            Action::Lost { op, on } => {
                env.op_losses += 1;
                match on {
                    Awaited::Activate => {
                        if let Some(a) = env.running.iter_mut().rev().find(|a| a.op == *op) {
                            a.open = false;
                        }
                    }
                    Awaited::Cleanup => {
                        if let Some(obs) = running_cleanup(env, *op) {
                            obs.failed = Some(true);
                        }
                    }
                    Awaited::Hook => hook_failed(env, *op),
                    Awaited::Factory | Awaited::Calls => {}
                }
            }
        }
        // M-3: an emit starts first exactly the extensions subscribed to
        // its event that are discovered and ran no code yet (never one
        // that failed, is active or is starting), and none once the host
        // stopped being open.
        let reply = match reply {
            Reply::Emit { triggered, reply } => {
                let subscriber = self.scenario.meta(MANIFEST_ID).map(|_| MANIFEST_ID);
                let expected: Vec<&str> = subscriber
                    .filter(|id| {
                        s.core.phase() == Phase::Open
                            && !env.subscriber_ran
                            && env.discovered.iter().any(|d| d == id)
                    })
                    .into_iter()
                    .collect();
                if triggered != expected {
                    protocol(
                        env,
                        format!(
                            "an emit of {EVENT} would start {triggered:?} where {expected:?} \
                             was due"
                        ),
                    );
                }
                Reply::Requested(reply)
            }
            other => other,
        };
        // What the core's reply tells it.
        'reply: {
            match reply {
                Reply::None | Reply::Emit { .. } => {}
                Reply::Discovered(reply) => {
                    let Action::Discover(step) = action else {
                        protocol(env, "a discovery reply to another input".into());
                        break 'reply;
                    };
                    match (&self.scenario.script[*step], reply) {
                        (DiscoveryStep::Accept(ids), Ok(())) => env.discovered.extend(
                            ids.iter()
                                .map(|&i| self.scenario.extensions[i].id().to_owned()),
                        ),
                        (DiscoveryStep::Accept(_), Err(e)) => {
                            protocol(env, format!("a valid batch was refused: {e:?}"))
                        }
                        (DiscoveryStep::Refuse { why, .. }, Ok(())) => Violations::record(
                            &mut env.violations.inv6,
                            format!("a batch where {why} was accepted"),
                        ),
                        (DiscoveryStep::Refuse { why, .. }, Err(_)) => {
                            env.note = Some(Note::DiscoveryRefused);
                            if before.statuses() != s.core.statuses()
                                || before.registry() != s.core.registry()
                            {
                                Violations::record(
                                    &mut env.violations.inv6,
                                    format!(
                                        "a refused batch (where {why}) changed the extensions \
                                     or the registry"
                                    ),
                                );
                            }
                        }
                    }
                }
                Reply::Requested(Requested::Enqueued(op)) => match action {
                    Action::Request(kind) => env.ops.push(PendingOp {
                        op,
                        kind: kind.clone(),
                        status: OpStatus::Queued,
                    }),
                    _ => protocol(env, format!("{op} enqueued by another input")),
                },
                Reply::Requested(Requested::Rejected(r)) => {
                    protocol(env, format!("a request was rejected while open: {r:?}"))
                }
                Reply::Requested(Requested::JoinDispose(op)) => {
                    protocol(env, format!("a single dispose was joined to {op}"))
                }
                Reply::Dormant { started, revoked } => {
                    let Action::DormantCall { ext, .. } = action else {
                        protocol(env, "an admission reply to another input".into());
                        break 'reply;
                    };
                    dormant_reply(env, self.ext_id(*ext), started, revoked);
                }
                Reply::Registration(reply) => self.registration_reply(env, action, reply),
                Reply::Call(reply) => self.call_reply(env, was, action, reply),
                Reply::CallEnded(verdict) => {
                    let Action::CallFinish {
                        call,
                        deadline_passed,
                        ..
                    } = action
                    else {
                        protocol(env, "a call verdict for another input".into());
                        break 'reply;
                    };
                    let expected = if let Some(i) = env.calls.iter().position(|c| c.call == *call) {
                        env.calls.remove(i);
                        if *deadline_passed {
                            CallVerdict::TimedOut
                        } else {
                            CallVerdict::Delivered
                        }
                    } else if was.abandoned.iter().any(|c| c.call == *call) {
                        env.note = Some(Note::AbandonedCallDiscarded);
                        CallVerdict::Discarded
                    } else {
                        protocol(env, format!("{call} ended but was never admitted"));
                        break 'reply;
                    };
                    let timing = [CallVerdict::Delivered, CallVerdict::TimedOut];
                    if verdict != expected
                        && timing.contains(&verdict)
                        && timing.contains(&expected)
                    {
                        let side = if *deadline_passed { "at" } else { "before" };
                        Violations::record(
                            &mut env.violations.inv17,
                            format!(
                                "{call}, read {side} its deadline, ended {verdict:?} where \
                                 {expected:?} was due"
                            ),
                        );
                    } else if verdict != expected {
                        protocol(
                            env,
                            format!("{call} ended with {verdict:?} where {expected:?} was due"),
                        );
                    }
                }
            }
        }
        self.observe_effects(env, &s.core, was, action, outbox);
    }

    /// The reply to `CallStart`: before the shutdown began the call of a
    /// live tool is admitted; afterwards every call is refused (INV-12b).
    fn call_reply(
        &self,
        env: &mut Env,
        was: &Env,
        action: &Action,
        reply: Result<AdmittedCall, CallRefused>,
    ) {
        let Action::CallStart { ext, tool } = action else {
            Violations::record(
                &mut env.violations.protocol,
                "a call reply to another input".into(),
            );
            return;
        };
        match reply {
            Ok(admitted) => {
                if was.dispose_begun {
                    Violations::record(
                        &mut env.violations.inv12b,
                        format!(
                            "the call of {tool} was admitted ({}) after the shutdown began",
                            admitted.call
                        ),
                    );
                }
                let id = ext.map(|e| self.ext_id(e).to_owned());
                let owner_ok = match &id {
                    Some(id) => admitted.owner == Owner::extension(id),
                    None => admitted.owner == Owner::Base,
                };
                if !owner_ok {
                    Violations::record(
                        &mut env.violations.protocol,
                        format!("the call of {tool} runs a tool of {}", admitted.owner),
                    );
                }
                if let Some(ext) = id {
                    env.calls.push(CallObs {
                        call: admitted.call,
                        ext,
                        cancelled: false,
                    });
                }
            }
            Err(CallRefused::HostDisposed) if was.dispose_begun => {
                env.note = Some(Note::CallRefusedAfterShutdown);
            }
            Err(refused) => Violations::record(
                &mut env.violations.protocol,
                format!("the call of live {tool} was refused: {refused:?}"),
            ),
        }
    }

    fn failed(&self, action: &Action) -> bool {
        matches!(
            action,
            Action::Hook { ok: false, .. } | Action::Cleanup { ok: false, .. }
        )
    }

    fn registration_reply(
        &self,
        env: &mut Env,
        action: &Action,
        reply: Result<Registered, exthost_core::ContextClosed>,
    ) {
        match action {
            Action::Register { ext, context, reg } => {
                let registration = self.registration(Some(*ext), *reg);
                let Some(a) = env.activation_mut(*context) else {
                    Violations::record(
                        &mut env.violations.protocol,
                        format!("a registration on unknown {context}"),
                    );
                    return;
                };
                match (reply, &registration) {
                    (Ok(Registered::Tool(t)), Registration::Tool(spec)) => {
                        a.tools.push((t, spec.name.clone()))
                    }
                    (Ok(Registered::Hook(h)), Registration::Hook) => a.hooks.push(h),
                    (Ok(Registered::Disposer(d)), Registration::Disposer) => a.disposers.push(d),
                    (Ok(Registered::Provider), Registration::Provider(p)) => {
                        a.providers.push(p.id.clone())
                    }
                    (reply, _) => Violations::record(
                        &mut env.violations.protocol,
                        format!("open {context} answered a registration with {reply:?}"),
                    ),
                }
            }
            Action::LateRegister { context, .. } => match reply {
                Err(_) => env.note = Some(Note::LateRefused),
                Ok(handle) => {
                    env.note = Some(Note::LateAccepted);
                    Violations::record(
                        &mut env.violations.inv5,
                        format!("closed {context} accepted a registration ({handle:?})"),
                    );
                }
            },
            _ => Violations::record(
                &mut env.violations.protocol,
                "a registration reply to another input".into(),
            ),
        }
    }
}

/// The cleanup step of `op` that runs now.
pub(super) fn running_cleanup(env: &mut Env, op: OpId) -> Option<&mut CleanupObs> {
    env.cleanup
        .iter_mut()
        .rev()
        .find(|c| c.op == op && c.failed.is_none())
}

/// INV-14: what the core answered a dormant call or a provider selection of
/// `id`, against the grants the environment saw mismatches revoke.
fn dormant_reply(
    env: &mut Env,
    id: &str,
    started: Option<(String, Requested)>,
    revoked: Option<String>,
) {
    let was_revoked = env.revoked.iter().any(|r| r == id);
    match (started, revoked) {
        (Some((extension, reply)), None) if extension == id => {
            if was_revoked {
                Violations::record(
                    &mut env.violations.inv14,
                    format!(
                        "a dormant call started {id}, whose grant a declaration mismatch \
                         revoked and no activation restored"
                    ),
                );
            }
            env.requests_left -= 1;
            match reply {
                Requested::Enqueued(op) => env.ops.push(PendingOp {
                    op,
                    kind: OpKind::Activate(extension),
                    status: OpStatus::Queued,
                }),
                other => Violations::record(
                    &mut env.violations.protocol,
                    format!("the activation a dormant call asked for was refused: {other:?}"),
                ),
            }
        }
        (None, Some(extension)) if extension == id => {
            // A refused call uses a request too: the bound keeps the
            // state graph acyclic.
            env.requests_left -= 1;
            env.note = Some(Note::GrantRefused);
            if !was_revoked {
                Violations::record(
                    &mut env.violations.inv14,
                    format!(
                        "a dormant call of {id} was refused as revoked, but no declaration \
                         mismatch revoked its grant (a transient failure never revokes one)"
                    ),
                );
            }
        }
        other => Violations::record(
            &mut env.violations.protocol,
            format!("a dormant call of {id} (dormant) was answered {other:?}"),
        ),
    }
}

/// The running hook of emit `op` failed (its task lost, or read at its
/// deadline): the environment expects its diagnostic.
fn hook_failed(env: &mut Env, op: OpId) {
    if let Some(call) = env
        .emits
        .iter_mut()
        .find(|e| e.op == op)
        .and_then(|e| e.calls.last_mut())
    {
        call.1 = Some(true);
    }
}
