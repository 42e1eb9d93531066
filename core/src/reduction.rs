//! Reductions the core and the model share: what an attempt forgets once
//! nothing reads it (see `docs/model.md`, "Reductions").
//!
//! Architecture invariant: this is the one place such a reduction is
//! written. The core applies it to its contributions
//! (`machine/state.rs`, `release_unpublished`), the model's environment to
//! what it observed of the same attempts (`Activation::keep_cleanup_only`
//! in the model's `state.rs`), so the two forget the same things at the
//! same points.

use crate::ids::{HookRef, ToolRef};

/// Forgets what a cleanup never reads of an attempt's registrations: its
/// tools, hooks and providers (a rollback, the shutdown and a reload's
/// retirement read only the context, the instance and the disposers,
/// which stay). Returns the released tool and hook handles, for the
/// `Forget` that tells the shell.
pub fn keep_cleanup_only<T, P>(
    tools: &mut Vec<(ToolRef, T)>,
    hooks: &mut Vec<HookRef>,
    providers: &mut Vec<P>,
) -> (Vec<ToolRef>, Vec<HookRef>) {
    providers.clear();
    let hooks = std::mem::take(hooks);
    let tools = std::mem::take(tools).into_iter().map(|(t, _)| t).collect();
    (tools, hooks)
}
