//! Stable error codes (docs/spec.md section 7), and the one way an error
//! carries one: [`CodedError`].
//!
//! Every public error type of exthost is plain, cloneable data that
//! implements [`CodedError`]: [`code`](CodedError::code) returns one of these
//! strings, [`message`](CodedError::message) says what went wrong without
//! it, and `Display` is `CODE: message`. The strings are part of the public
//! contract: they never change meaning and are never reused.

/// The one way an error carries its stable code, implemented by every
/// public error type of exthost (`IdError`, `RegistryError`,
/// `DeclarationMismatch`, `ResourceError`, `ManifestError`,
/// `ManifestBatchError`, `HostError`, `ProcessFault`).
///
/// Its `Display` is always `CODE: message`.
///
/// ```
/// use exthost_core::error::CodedError;
/// use exthost_core::id::validate_id_segment;
///
/// let error = validate_id_segment("").unwrap_err();
/// assert_eq!(CodedError::code(&error), "ID_INVALID");
/// assert_eq!(CodedError::message(&error), "identifier is empty");
/// assert_eq!(error.to_string(), "ID_INVALID: identifier is empty");
/// ```
pub trait CodedError: std::error::Error {
    /// The stable code, one of [`codes::ALL`].
    fn code(&self) -> &'static str;
    /// What went wrong, in words, without the code.
    fn message(&self) -> String;
}

/// The message of an error whose `Display` is `CODE: message`: the text
/// after the code. For the types whose `Display` is derived.
pub fn message_after_code(code: &str, display: String) -> String {
    match display
        .strip_prefix(code)
        .and_then(|s| s.strip_prefix(": "))
    {
        Some(message) => message.to_owned(),
        None => display,
    }
}

/// Implements [`CodedError`] for a type with an inherent `code()` and a
/// derived `Display` of the form `CODE: message`.
#[doc(hidden)]
#[macro_export]
macro_rules! coded_by_display {
    ($($ty:ty),* $(,)?) => {$(
        impl $crate::error::CodedError for $ty {
            fn code(&self) -> &'static str {
                <$ty>::code(self)
            }
            fn message(&self) -> String {
                $crate::error::message_after_code(<$ty>::code(self), self.to_string())
            }
        }
    )*};
}

/// The stable code strings, one constant per code of docs/spec.md section 7.
pub mod codes {
    macro_rules! codes {
        ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
            $($(#[$doc])* pub const $name: &str = stringify!($name);)*
            /// Every code above, in the order docs/spec.md section 7 lists them.
            pub const ALL: &[&str] = &[$($name),*];
        };
    }

    codes! {
        /// An identifier breaks ID-1.
        ID_INVALID,
        /// A resource root is missing, duplicated, not a directory or badly named.
        RESOURCE_ROOT_INVALID,
        /// A resource path breaks the path grammar (R-3).
        RESOURCE_PATH_INVALID,
        /// A resource path or symlink leads outside its root (R-4).
        RESOURCE_PATH_ESCAPE,
        /// A root directory was replaced after the loader was made (R-5).
        RESOURCE_ROOT_CHANGED,
        /// The path names something other than a regular file (R-6).
        RESOURCE_NOT_FILE,
        /// The file changed between resolution and read (R-7).
        RESOURCE_CHANGED_DURING_READ,
        /// The file is over the size cap (R-8).
        RESOURCE_TOO_LARGE,
        /// The file is not valid UTF-8 (R-9).
        RESOURCE_INVALID_UTF8,
        /// Any other I/O failure, symlink loops included.
        RESOURCE_IO,
        /// An extension id breaks ID-1.
        EXTENSION_ID_INVALID,
        /// An extension id is already known.
        EXTENSION_DUPLICATE,
        /// No extension has that id.
        EXTENSION_NOT_FOUND,
        /// Activation failed and was rolled back cleanly.
        EXTENSION_ACTIVATION_FAILED,
        /// Activation failed and at least one rollback step failed too.
        EXTENSION_ACTIVATION_ROLLBACK_FAILED,
        /// Activation was cancelled (by shutdown or a deadline).
        EXTENSION_ACTIVATION_CANCELLED,
        /// A registration arrived after its activation settled.
        EXTENSION_CONTEXT_CLOSED,
        /// A host operation was called from extension code running under the queue.
        HOST_REENTRANT_CALL,
        /// The host has been disposed.
        HOST_DISPOSED,
        /// At least one shutdown step failed.
        HOST_DISPOSE_FAILED,
        /// A tool name is not valid.
        TOOL_NAME_INVALID,
        /// A tool name is already taken.
        TOOL_DUPLICATE,
        /// A manifest was refused; the reason code says why.
        MANIFEST_INVALID,
        /// A process extension's child exited.
        EXTENSION_PROCESS_EXITED,
        /// A process extension broke the protocol.
        EXTENSION_PROTOCOL_ERROR,
        /// An extension step ran past its deadline.
        EXTENSION_TIMEOUT,
        /// A dependency of the extension failed to activate.
        EXTENSION_DEPENDENCY_FAILED,
        /// A dependency of the extension is not known.
        EXTENSION_DEPENDENCY_MISSING,
        /// The dependencies form a cycle.
        EXTENSION_DEPENDENCY_CYCLE,
        /// A new definition of an active extension changes what its live
        /// generation rests on (its dependencies, or whether its tools are
        /// namespaced); nothing changed.
        EXTENSION_REDEFINITION_REFUSED,
        /// No live tool has the name called (an addition to docs/spec.md section 7).
        TOOL_NOT_FOUND,
        /// A tool ran and failed or panicked (an addition to docs/spec.md section 7).
        TOOL_FAILED,
        /// A dormant tool was called without the capability to activate its
        /// extension (M-4; an addition to docs/spec.md section 7).
        TOOL_ACTIVATION_DENIED,
        /// The caller cancelled a tool call before it returned (an addition
        /// to docs/spec.md section 7).
        TOOL_CALL_CANCELLED,
        /// The task running an extension step ended without a result (its
        /// runtime shut down or it was aborted); the step counts as failed
        /// (an addition to docs/spec.md section 7).
        EXTENSION_TASK_LOST,
        /// A tool's description holds a control or bidirectional override
        /// character (M-8; an addition to docs/spec.md section 7).
        TOOL_DESCRIPTION_INVALID,
        /// A provider id an activation registers is already live, or is
        /// registered twice by it (M-8; an addition to docs/spec.md section 7).
        EXTENSION_PROVIDER_CLASH,
        /// A provider breaks M-1/M-8: a bad id, display name, config schema or
        /// model list (an addition to docs/spec.md section 7).
        PROVIDER_INVALID,
        /// No live or declared provider has the id selected (M-8; an addition
        /// to docs/spec.md section 7).
        PROVIDER_NOT_FOUND,
        /// The selected provider has no model with that id (M-8; an addition
        /// to docs/spec.md section 7).
        MODEL_NOT_FOUND,
        /// A declared provider was selected but a declaration mismatch revoked
        /// the grant to start its extension (M-5, M-8; an addition to
        /// docs/spec.md section 7).
        PROVIDER_ACTIVATION_DENIED,
    }
}

/// Declares a closed enum of stable reason codes, its `as_str` /
/// `from_code` conversions and a constant slice listing every code.
#[doc(hidden)]
#[macro_export]
macro_rules! reason_enum {
    (
        $(#[$enum_doc:meta])*
        enum $name:ident;
        $(#[$list_doc:meta])*
        const $list:ident;
        $( $(#[$doc:meta])* $variant:ident => $code:literal, )*
    ) => {
        $(#[$enum_doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum $name {
            $( $(#[$doc])* #[doc = concat!("\n\nReason code `", $code, "`.")] $variant, )*
        }

        impl $name {
            /// Every variant, in the order of the documentation.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The stable reason code (`snake_case`), never reused or renamed.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $code,)*
                }
            }

            /// The variant whose reason code is `code`, if there is one.
            pub fn from_code(code: &str) -> Option<Self> {
                match code {
                    $($code => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        $(#[$list_doc])*
        pub const $list: &[&str] = &[$($code),*];
    };
}
#[doc(hidden)]
pub use crate::reason_enum;

#[cfg(test)]
mod tests {
    use super::codes;

    #[test]
    fn every_code_is_its_own_name_and_unique() {
        assert_eq!(codes::ALL.len(), 41);
        let mut seen = std::collections::BTreeSet::new();
        for code in codes::ALL {
            assert!(seen.insert(*code), "{code} listed twice");
            let allowed = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_';
            assert!(code.bytes().all(allowed), "{code}");
        }
        assert_eq!(codes::HOST_DISPOSED, "HOST_DISPOSED");
    }
}
