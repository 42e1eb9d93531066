//! A property as the model defines it: a name, an expectation and a
//! condition on a state judged with its scenario.
//!
//! Architecture invariant: a leaf (it names [`crate::scenario`] and
//! [`crate::state`] only), so that every property module can build
//! definitions without depending on another.

use stateright::Expectation;

use crate::scenario::Scenario;
use crate::state::State;

pub(super) fn sometimes(name: &'static str, condition: Condition) -> Definition {
    Definition {
        name,
        expectation: Expectation::Sometimes,
        condition,
    }
}

/// A condition on a state, judged with the scenario it runs in.
pub type Condition = fn(&Scenario, &State) -> bool;

/// One property as this module defines it: the checker's
/// [`stateright::Property`] list is built from these on top (see
/// `crate::model`), so that the judgements do not depend on the `Model`
/// impl.
#[derive(Debug, Clone)]
pub struct Definition {
    /// Its name (`INV-1`, ..., `protocol`, or the sentence of a `sometimes`
    /// property).
    pub name: &'static str,
    /// Always, eventually or sometimes.
    pub expectation: Expectation,
    /// The condition: for a `sometimes` property, judged on the step that
    /// led to the state, with what settled in it ([`super::judge_step`]).
    pub condition: Condition,
}

impl Definition {
    pub(super) fn always(name: &'static str, condition: Condition) -> Self {
        Self {
            name,
            expectation: Expectation::Always,
            condition,
        }
    }

    pub(super) fn eventually(name: &'static str, condition: Condition) -> Self {
        Self {
            name,
            expectation: Expectation::Eventually,
            condition,
        }
    }
}
