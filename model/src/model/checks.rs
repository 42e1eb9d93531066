//! Transition checks judged on every step, before and after: the
//! environment's calls in flight match the core's, status changes are
//! H-1's (INV-7), API names stay (INV-10).

use exthost_core::{Binding, CallId, HostCore, Status};

use super::HostModel;
use crate::state::{State, Violations};

impl HostModel {
    /// The checks of one transition from `before` to `s`: INV-7's status
    /// changes, INV-10's API names, and the calls in flight.
    pub(super) fn check_transition(before: &HostCore, s: &mut State) {
        check_statuses(before, s);
        check_api_names(before, s);
        check_calls(s);
        check_grants(s);
    }
}

/// INV-14 on the revocation state itself: the grants the core holds
/// revoked are exactly those the environment saw a declaration mismatch
/// revoke and no commit of that extension restore since.
fn check_grants(s: &mut State) {
    let core: Vec<&str> = s.core.revoked().collect();
    if core != s.env.revoked {
        Violations::record(
            &mut s.env.violations.inv14,
            format!(
                "the core holds the grants of {core:?} revoked, but a mismatch with no commit \
                 since revoked those of {:?}",
                s.env.revoked
            ),
        );
    }
}

/// H-1: the only status transitions.
fn allowed(before: Option<Status>, after: Status) -> bool {
    use Status::*;
    matches!(
        (before, after),
        (None, Discovered)
            | (Some(Discovered), Activating)
            | (Some(Activating), Active)
            | (Some(Activating), Failed)
            | (Some(Failed), Activating)
            | (Some(Active), Disposed)
    ) || before == Some(after)
}

/// The environment's calls in flight are exactly the core's, in start
/// order: nothing the core forgot still runs, and nothing it tracks was
/// answered.
fn check_calls(s: &mut State) {
    let core: Vec<CallId> = s.core.calls_in_flight().map(|(c, _)| c).collect();
    let env: Vec<CallId> = s.env.calls.iter().map(|c| c.call).collect();
    if core != env {
        Violations::record(
            &mut s.env.violations.protocol,
            format!("the core tracks the calls {core:?} but {env:?} are in flight"),
        );
    }
}
/// INV-7: every status change of this step is one H-1 lists.
fn check_statuses(before: &HostCore, s: &mut State) {
    let old = before.extensions();
    let new = s.core.extensions();
    if new.len() < old.len() {
        Violations::record(
            &mut s.env.violations.inv7,
            "an extension disappeared".into(),
        );
    }
    for (i, slot) in new.iter().enumerate() {
        let status = slot.status();
        let prev = old
            .get(i)
            .filter(|p| p.id() == slot.id())
            .map(|p| p.status());
        if !allowed(prev, status) {
            Violations::record(
                &mut s.env.violations.inv7,
                format!(
                    "{}: {} -> {status}, a transition H-1 does not have",
                    slot.id(),
                    prev.map_or("(unknown)".into(), |p| p.to_string())
                ),
            );
        }
    }
}

/// INV-10 (M-6): a tool's API name never changes while it stays live, nor
/// when its dormant descriptor goes live, nor when a reload swaps in a
/// fresh generation that registers it again (the same owner, a new handle).
fn check_api_names(before: &HostCore, s: &mut State) {
    let old = before.registry();
    for entry in s.core.registry().iter() {
        let reloaded = |prev: &exthost_core::RegistryEntry| {
            matches!(prev.binding, Binding::Live(_))
                && matches!(entry.binding, Binding::Live(_))
                && prev.owner == entry.owner
        };
        if let Some(prev) = old.get(&entry.name)
            && (prev.binding == entry.binding || prev.binding == Binding::Dormant || reloaded(prev))
            && prev.api_name != entry.api_name
        {
            let when = if prev.binding == entry.binding {
                "while live"
            } else if prev.binding == Binding::Dormant {
                "when its dormant descriptor went live"
            } else {
                "when a reload registered it again"
            };
            Violations::record(
                &mut s.env.violations.inv10,
                format!(
                    "{} changed its API name from {} to {} {when}",
                    entry.name, prev.api_name, entry.api_name
                ),
            );
        }
    }
}
