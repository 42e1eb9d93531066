//! Exact serde forms of the few state types whose product serialization
//! is not exact (feature `serde-state`, for the model checker's
//! distributed search, whose states cross processes): a deserialized state
//! must equal the serialized one, field for field, or its successors'
//! fingerprints would differ from the single search's.
//!
//! - A [`Failure`]'s code is a `&'static str`: it comes back as the one
//!   code of [`codes::ALL`] with that text.
//! - An [`Owner`](crate::registry::Owner) serializes as `"Base"` or `{"Extension": id}`
//!   (the product's form); `registry::OwnerWire` reads that form back.
//! - A [`FailureCause`] in a state goes through [`failure_cause`], which
//!   keeps a declaration mismatch's message (the product's JSON leaves it
//!   out).
//!
//! Architecture invariant: a leaf on top of `outcome`, `registry` and
//! `declarations`; only serde attributes name it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::declarations::{DeclarationMismatch, MismatchReason};
use crate::error::codes;
use crate::outcome::{Failure, FailureCause};
use crate::registry::RegistryError;

/// The serialized form of a [`Failure`], whose code comes back as the
/// code of [`codes::ALL`] with that text.
#[derive(Deserialize)]
struct FailureWire {
    message: String,
    panicked: bool,
    code: Option<String>,
}

impl<'de> Deserialize<'de> for Failure {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = FailureWire::deserialize(d)?;
        let code =
            match w.code {
                None => None,
                Some(text) => Some(*codes::ALL.iter().find(|c| **c == text).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown error code {text:?}"))
                })?),
            };
        Ok(Failure {
            message: w.message,
            panicked: w.panicked,
            code,
        })
    }
}

/// The exact form of a [`FailureCause`].
#[derive(Serialize, Deserialize)]
enum Cause {
    Factory(Failure),
    Activate(Failure),
    Registry(RegistryError),
    Declaration {
        reason: String,
        tool: String,
        message: String,
    },
    Cancelled,
    DeadlinePassed,
}

/// A [`FailureCause`], exactly (`#[serde(with = ...)]`).
pub(crate) mod failure_cause {
    use super::*;

    /// Writes the cause with a declaration mismatch's message.
    pub(crate) fn serialize<S: Serializer>(cause: &FailureCause, s: S) -> Result<S::Ok, S::Error> {
        let wire = match cause.clone() {
            FailureCause::Factory(f) => Cause::Factory(f),
            FailureCause::Activate(f) => Cause::Activate(f),
            FailureCause::Registry(e) => Cause::Registry(e),
            FailureCause::Declaration(m) => Cause::Declaration {
                reason: m.reason_code().to_owned(),
                tool: m.tool().to_owned(),
                message: m.message().to_owned(),
            },
            FailureCause::Cancelled => Cause::Cancelled,
            FailureCause::DeadlinePassed => Cause::DeadlinePassed,
        };
        wire.serialize(s)
    }

    /// Reads what [`serialize`] wrote.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<FailureCause, D::Error> {
        Ok(match Cause::deserialize(d)? {
            Cause::Factory(f) => FailureCause::Factory(f),
            Cause::Activate(f) => FailureCause::Activate(f),
            Cause::Registry(e) => FailureCause::Registry(e),
            Cause::Declaration {
                reason,
                tool,
                message,
            } => {
                let reason = MismatchReason::from_code(&reason).ok_or_else(|| {
                    serde::de::Error::custom(format!("unknown mismatch reason {reason:?}"))
                })?;
                FailureCause::Declaration(DeclarationMismatch::from_parts(reason, tool, message))
            }
            Cause::Cancelled => FailureCause::Cancelled,
            Cause::DeadlinePassed => FailureCause::DeadlinePassed,
        })
    }
}
