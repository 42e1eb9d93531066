//! The tool calls the environment may start and end, and where (the
//! partial-order reduction that starts calls just before the shutdown
//! begins; see `docs/model.md`).
//!
//! Architecture invariant: reads the state only, like the other choices
//! of `enabled`.

use exthost_core::{Awaiting, Binding, OpKind, Owner};

use super::HostModel;
use crate::action::Action;
use crate::state::State;

impl HostModel {
    /// Each call in flight ends, with or without its own deadline passed.
    pub(super) fn finish_actions(&self, s: &State, ext: Option<&str>, out: &mut Vec<Action>) {
        for c in s
            .env
            .calls
            .iter()
            .filter(|c| ext.is_none_or(|e| e == c.ext))
        {
            for deadline_passed in [false, true] {
                out.push(Action::CallFinish {
                    call: c.call,
                    ext: self.ext_index(&c.ext),
                    deadline_passed,
                });
            }
        }
    }

    /// Tool calls a caller may start: one per extension with a live tool
    /// (the first, in publication order). The core records only a call's
    /// owner, so calling another tool of the same extension reaches the
    /// same state.
    pub(super) fn call_starts(&self, s: &State, out: &mut Vec<Action>) {
        let mut seen: Vec<&str> = Vec::new();
        for e in s.core.registry().iter() {
            if let (Owner::Extension(id), Binding::Live(_)) = (&e.owner, e.binding)
                && !seen.contains(&&**id)
            {
                seen.push(id);
                out.push(Action::CallStart {
                    ext: Some(self.ext_index(id)),
                    tool: e.name.clone(),
                });
            }
        }
    }

    /// Right after the shutdown completed, a caller calls a tool that was
    /// live before it (the first tool of the last extension activated, or
    /// the base tool): the core must refuse it (INV-12).
    pub(super) fn call_after_shutdown(&self, s: &State, out: &mut Vec<Action>) {
        if let Some((ext, tool)) = &s.env.call_after {
            out.push(Action::CallStart {
                ext: *ext,
                tool: tool.clone(),
            });
        }
    }

    /// True when calls may start now: the core awaits `Begin` of the
    /// dispose (see the partial-order reduction in [`Model::actions`]).
    pub(super) fn call_point(&self, s: &State) -> bool {
        match s.core.awaiting() {
            Some(Awaiting::Begin(op)) => s
                .env
                .ops
                .iter()
                .any(|p| p.op == op && p.kind == OpKind::Dispose),
            _ => false,
        }
    }
}
