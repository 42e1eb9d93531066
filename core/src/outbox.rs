//! The core's outbox: everything an input sets off, waiting for the driver
//! to poll it, as in a sans-IO protocol machine (quinn-proto's
//! `Connection`: inputs return only their own reply, outputs are polled).
//!
//! Three queues, each with one meaning:
//! - **commands** ([`Effect`]), in order: what the driver performs (run
//!   extension code, fire a signal, drop handles);
//! - **publication**, a flag: the live registry or hooks changed, publish a
//!   new snapshot;
//! - **settled operations** ([`Settled`]), in order: an operation's outcome,
//!   to hand to its caller.
//!
//! A driver drains all three after each input, commands first, then the
//! publication, then the settled operations, so a caller woken by its
//! outcome sees the registry that outcome produced, and no command follows
//! the settling of the operation that set it off.
//!
//! Architecture invariant: this module is data only, like
//! [`crate::protocol`]; [`HostCore`](crate::HostCore) owns one outbox and
//! the transition code is the only writer.

use std::collections::VecDeque;

use super::ids::OpId;
use super::outcome::OpOutcome;
use super::protocol::Effect;

/// An operation that settled, with the outcome for its caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Settled {
    /// The operation.
    pub op: OpId,
    /// Its outcome.
    pub outcome: OpOutcome,
}

/// What the inputs since the last drain set off, taken all at once
/// ([`HostCore::drain_outbox`](crate::HostCore::drain_outbox)): the one
/// reading of the outbox that the model checker's environment and the
/// trace checker share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Drained {
    /// The commands, in order.
    pub commands: Vec<Effect>,
    /// Whether a new snapshot must be published.
    pub published: bool,
    /// The operations that settled, in order.
    pub settled: Vec<Settled>,
}

impl Drained {
    /// True when the inputs set nothing off.
    pub fn is_empty(&self) -> bool {
        self.commands.is_empty() && !self.published && self.settled.is_empty()
    }
}

/// The outbox a [`HostCore`](crate::HostCore) writes to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Outbox {
    commands: VecDeque<Effect>,
    publish: bool,
    settled: VecDeque<Settled>,
}

impl Outbox {
    /// Queues a command.
    pub(crate) fn command(&mut self, effect: Effect) {
        self.commands.push_back(effect);
    }

    /// Raises the publication flag.
    pub(crate) fn publish(&mut self) {
        self.publish = true;
    }

    /// Queues an operation's outcome.
    pub(crate) fn settle(&mut self, op: OpId, outcome: OpOutcome) {
        self.settled.push_back(Settled { op, outcome });
    }

    /// How many entries each queue holds: a mark to roll back to.
    pub(crate) fn mark(&self) -> (usize, bool, usize) {
        (self.commands.len(), self.publish, self.settled.len())
    }

    /// Drops everything queued since `mark` (an input the core refused
    /// sets nothing off).
    pub(crate) fn roll_back(&mut self, mark: (usize, bool, usize)) {
        self.commands.truncate(mark.0);
        self.publish = mark.1;
        self.settled.truncate(mark.2);
    }

    pub(crate) fn poll_command(&mut self) -> Option<Effect> {
        self.commands.pop_front()
    }

    pub(crate) fn poll_published(&mut self) -> bool {
        std::mem::take(&mut self.publish)
    }

    pub(crate) fn poll_settled(&mut self) -> Option<Settled> {
        self.settled.pop_front()
    }

    /// True when nothing waits.
    pub(crate) fn is_empty(&self) -> bool {
        self.commands.is_empty() && !self.publish && self.settled.is_empty()
    }

    pub(crate) fn drain(&mut self) -> Drained {
        Drained {
            commands: self.commands.drain(..).collect(),
            published: std::mem::take(&mut self.publish),
            settled: self.settled.drain(..).collect(),
        }
    }
}
