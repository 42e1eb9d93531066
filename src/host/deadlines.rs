//! Each extension's own deadlines (H-12): an extension definition, or its
//! manifest, may set or turn off its activation, cleanup and call deadlines;
//! whatever it leaves alone is the host's.
//!
//! This module depends on nothing of the host and defines its [`Deadlines`]; the shell asks it
//! for the deadlines of one extension and never reads an override itself.

use std::time::Duration;

/// The deadlines a host enforces (H-12); `None` turns one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Deadlines {
    pub activation: Option<Duration>,
    pub cleanup: Option<Duration>,
    pub hook: Option<Duration>,
    pub call: Option<Duration>,
}

/// One deadline as an extension states it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Override {
    /// The host's deadline applies.
    #[default]
    Inherit,
    /// This deadline instead of the host's.
    Set(Duration),
    /// No deadline for this extension, whatever the host's.
    Off,
}

impl Override {
    fn or(self, host: Option<Duration>) -> Option<Duration> {
        match self {
            Override::Inherit => host,
            Override::Set(deadline) => Some(deadline),
            Override::Off => None,
        }
    }
}

/// The deadlines one extension overrides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Overrides {
    /// Its factory and `activate` together.
    pub activation: Override,
    /// Each of its cleanup steps, and the wait for its calls at shutdown.
    pub cleanup: Override,
    /// Each call of its tools.
    pub call: Override,
}

impl Overrides {
    /// Whether this extension overrides nothing.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

impl Deadlines {
    /// The deadlines that apply to an extension with these overrides (the
    /// hook deadline is the host's: one `emit` runs many extensions' hooks
    /// under one watchdog).
    pub(crate) fn with_overrides(self, overrides: Option<&Overrides>) -> Deadlines {
        let Some(o) = overrides else {
            return self;
        };
        Deadlines {
            activation: o.activation.or(self.activation),
            cleanup: o.cleanup.or(self.cleanup),
            hook: self.hook,
            call: o.call.or(self.call),
        }
    }
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
        assert_eq!(HOST.with_overrides(Some(&Overrides::default())), HOST);
    }

    #[test]
    fn each_override_replaces_or_turns_off_only_its_own_deadline() {
        let o = Overrides {
            activation: Override::Set(Duration::from_millis(5)),
            cleanup: Override::Off,
            call: Override::Set(Duration::from_secs(1)),
        };
        let d = HOST.with_overrides(Some(&o));
        assert_eq!(d.activation, Some(Duration::from_millis(5)));
        assert_eq!(d.cleanup, None);
        assert_eq!(d.hook, HOST.hook);
        assert_eq!(d.call, Some(Duration::from_secs(1)));
    }
}
