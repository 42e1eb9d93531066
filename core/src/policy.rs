//! Policy as definition data: what starts an extension (M-3: the events it
//! subscribes to, eager start) and the deadlines it overrides (H-12). The
//! shell hands these to the core with the definition; the core answers the
//! questions about them (`machine/policy.rs`), so the shell decides none of
//! them.
//!
//! Architecture invariant: data only, with no dependency on the rest of the
//! core; durations are plain [`Duration`]s (no clock is read here).

use std::time::Duration;

/// What a definition says about when it starts and which deadlines apply
/// to its code (M-3, H-12). The default starts on nothing and inherits
/// every deadline.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct DefinitionPolicy {
    /// The events whose `emit` starts it while it is `discovered` (M-3), in
    /// the order its definition names them.
    pub events: Vec<String>,
    /// It starts with `activate_eager` while it is `discovered` (M-3).
    pub eager: bool,
    /// The deadlines it overrides (H-12).
    pub deadlines: DeadlineOverrides,
}

/// One deadline as an extension states it (H-12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum DeadlineOverride {
    /// The host's deadline applies.
    #[default]
    Inherit,
    /// This deadline instead of the host's.
    Set(Duration),
    /// This deadline, or the host's when that is shorter: the extension
    /// may shorten the host's bound but never lengthen it.
    AtMost(Duration),
    /// No deadline for this extension, whatever the host's.
    Off,
}

impl DeadlineOverride {
    /// The deadline that applies when the host's is `host`.
    pub fn or(self, host: Option<Duration>) -> Option<Duration> {
        match self {
            DeadlineOverride::Inherit => host,
            DeadlineOverride::Set(deadline) => Some(deadline),
            DeadlineOverride::AtMost(deadline) => {
                Some(host.map_or(deadline, |host| host.min(deadline)))
            }
            DeadlineOverride::Off => None,
        }
    }
}

/// The deadlines one extension overrides (H-12).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct DeadlineOverrides {
    /// Its factory and `activate` together.
    pub activation: DeadlineOverride,
    /// Each of its cleanup steps, and the wait for its calls at shutdown.
    pub cleanup: DeadlineOverride,
    /// Each call of its tools.
    pub call: DeadlineOverride,
}

impl DeadlineOverrides {
    /// Whether this extension overrides nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The deadlines a host enforces (H-12); `None` turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub struct Deadlines {
    /// An activation's factory and `activate` together.
    pub activation: Option<Duration>,
    /// Each cleanup step, and the wait for an extension's calls.
    pub cleanup: Option<Duration>,
    /// An emit's hooks (one watchdog for all: never overridden).
    pub hook: Option<Duration>,
    /// Each tool call.
    pub call: Option<Duration>,
}

impl Deadlines {
    /// No deadline at all.
    pub const NONE: Deadlines = Deadlines {
        activation: None,
        cleanup: None,
        hook: None,
        call: None,
    };

    /// The deadline of `step` for an extension with these overrides (`None`:
    /// none of its own): the one place each step is paired with the
    /// deadline that bounds it. The hook deadline is the host's: one `emit`
    /// runs many extensions' hooks under one watchdog.
    pub fn for_step(
        &self,
        step: DeadlineStep<'_>,
        overrides: Option<&DeadlineOverrides>,
    ) -> Option<Duration> {
        let bound = match step {
            DeadlineStep::Activation(_) => Bound::Activation,
            DeadlineStep::Cleanup(_) | DeadlineStep::CallsWait(_) => Bound::Cleanup,
            DeadlineStep::Hooks => Bound::Hook,
            DeadlineStep::Call(_) => Bound::Call,
        };
        self.bound(bound, overrides)
    }

    /// The deadlines that apply to an extension with these overrides, each
    /// as [`Deadlines::for_step`] gives it.
    pub fn with_overrides(self, overrides: Option<&DeadlineOverrides>) -> Deadlines {
        Deadlines {
            activation: self.bound(Bound::Activation, overrides),
            cleanup: self.bound(Bound::Cleanup, overrides),
            hook: self.bound(Bound::Hook, overrides),
            call: self.bound(Bound::Call, overrides),
        }
    }

    /// One of the four deadlines, the extension's override applied.
    fn bound(&self, bound: Bound, overrides: Option<&DeadlineOverrides>) -> Option<Duration> {
        let inherit = DeadlineOverrides::default();
        let o = overrides.unwrap_or(&inherit);
        match bound {
            Bound::Activation => o.activation.or(self.activation),
            Bound::Cleanup => o.cleanup.or(self.cleanup),
            Bound::Hook => self.hook,
            Bound::Call => o.call.or(self.call),
        }
    }
}

/// Which of a host's four deadlines bounds a step.
#[derive(Clone, Copy)]
enum Bound {
    Activation,
    Cleanup,
    Hook,
    Call,
}

/// A step whose deadline the core is asked for
/// ([`HostCore::deadline_for`](crate::HostCore::deadline_for)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineStep<'a> {
    /// This extension's factory and `activate`.
    Activation(&'a str),
    /// One cleanup step of this extension.
    Cleanup(&'a str),
    /// The wait for the calls in flight of this extension (`None`: of no
    /// known extension) before its first cleanup step.
    CallsWait(Option<&'a str>),
    /// The hooks of an emit.
    Hooks,
    /// One call of a tool of this extension (`None`: a base tool).
    Call(Option<&'a str>),
}

impl<'a> DeadlineStep<'a> {
    /// The extension whose overrides apply to this step; `None` for the
    /// hooks of an emit, a base tool's call, or calls of no known extension.
    pub fn extension(self) -> Option<&'a str> {
        match self {
            DeadlineStep::Activation(id) | DeadlineStep::Cleanup(id) => Some(id),
            DeadlineStep::CallsWait(id) | DeadlineStep::Call(id) => id,
            DeadlineStep::Hooks => None,
        }
    }
}

/// Where a step of extension code runs: in the task of whoever
/// waits for it, or in a task of its own. The core decides it
/// ([`HostCore::call_placement`](crate::HostCore::call_placement),
/// [`HostCore::hook_placement`](crate::HostCore::hook_placement),
/// [`HostCore::activation_placement`](crate::HostCore::activation_placement)):
/// a task of its own is needed only to hold a deadline against code that
/// blocks its thread or never returns, where another thread can run the
/// wait meanwhile, or to let the code run on after its caller stopped
/// waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum Placement {
    /// In the waiting task: no deadline applies and nothing outlives the
    /// caller. Code that blocks its thread blocks its caller.
    Inline,
    /// In the waiting task, bounded by this deadline: the executor runs
    /// every task on one thread ([`Executor::OneThread`]), so code that
    /// blocks its thread would stop the watcher of a task of its own as
    /// well.
    /// The wait's timer ends code that is still pending at the deadline,
    /// and code that returns after it (having blocked the thread) counts
    /// as timed out, as it would from a task of its own.
    InlineBounded(Duration),
    /// In a task of its own, bounded by this deadline (`None`: none, but
    /// the code must outlive its caller's wait).
    Task(Option<Duration>),
}

/// What the executor of the waiting task can do while extension code
/// blocks its thread: the input that says whether a task of
/// its own would hold a deadline better than the waiting task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub enum Executor {
    /// Every task runs on the waiting task's thread (a current-thread
    /// runtime): code that blocks it blocks every task, in a task of its
    /// own or not.
    OneThread,
    /// Tasks run on several threads: while code blocks one, the waiting
    /// task's timer can fire on another.
    Threads,
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: Deadlines = Deadlines {
        activation: Some(Duration::from_secs(30)),
        cleanup: Some(Duration::from_secs(10)),
        hook: Some(Duration::from_secs(10)),
        call: None,
    };

    #[test]
    fn an_extension_without_overrides_gets_the_hosts_deadlines() {
        assert_eq!(HOST.with_overrides(None), HOST);
        assert_eq!(
            HOST.with_overrides(Some(&DeadlineOverrides::default())),
            HOST
        );
    }

    #[test]
    fn each_override_replaces_or_turns_off_only_its_own_deadline() {
        let o = DeadlineOverrides {
            activation: DeadlineOverride::Set(Duration::from_millis(5)),
            cleanup: DeadlineOverride::Off,
            call: DeadlineOverride::Set(Duration::from_secs(1)),
        };
        let d = HOST.with_overrides(Some(&o));
        assert_eq!(d.activation, Some(Duration::from_millis(5)));
        assert_eq!(d.cleanup, None);
        assert_eq!(d.hook, HOST.hook);
        assert_eq!(d.call, Some(Duration::from_secs(1)));
    }

    #[test]
    fn the_wait_for_calls_has_the_cleanup_deadline_and_hooks_the_hosts() {
        let o = DeadlineOverrides {
            activation: DeadlineOverride::Off,
            cleanup: DeadlineOverride::Set(Duration::from_millis(7)),
            call: DeadlineOverride::Off,
        };
        assert_eq!(
            HOST.for_step(DeadlineStep::CallsWait(Some("e")), Some(&o)),
            Some(Duration::from_millis(7))
        );
        assert_eq!(
            HOST.for_step(DeadlineStep::CallsWait(None), None),
            HOST.cleanup
        );
        assert_eq!(HOST.for_step(DeadlineStep::Hooks, Some(&o)), HOST.hook);
        assert_eq!(DeadlineStep::Hooks.extension(), None);
        assert_eq!(DeadlineStep::Call(None).extension(), None);
        assert_eq!(DeadlineStep::Cleanup("e").extension(), Some("e"));
    }
}
