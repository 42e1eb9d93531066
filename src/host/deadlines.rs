//! Each extension's own deadlines (H-12): an extension definition, or its
//! manifest, may set or turn off its activation, cleanup and call deadlines;
//! whatever it leaves alone is the host's.
//!
//! The types are the core's ([`crate::core::Deadlines`] and the overrides
//! carried by each definition's [`crate::core::DefinitionPolicy`]): the
//! core decides which deadline applies to a step
//! ([`crate::core::HostCore::deadline_for`]); the shell only arms the
//! timers it answers.

pub(crate) use crate::core::{
    DeadlineOverride as Override, DeadlineOverrides as Overrides, Deadlines,
};
