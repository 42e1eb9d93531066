//! How a child's misbehaviour becomes a typed error: the three codes of
//! docs/spec.md section 5 and a bounded quote of what the child sent.

use crate::error::{CodedError, codes};
use crate::host::ExtensionError;

/// At most this many bytes of anything the child sent are quoted in an
/// error text (P-3).
pub const MAX_QUOTED_BYTES: usize = 200;

/// Why a child can no longer serve, as data with a stable code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessFault {
    /// The child exited, closed its stdout or could not be started
    /// (`EXTENSION_PROCESS_EXITED`).
    Exited(String),
    /// The child wrote a line over 1 MiB or something that is not a JSON-RPC
    /// 2.0 message, or answered out of protocol (`EXTENSION_PROTOCOL_ERROR`).
    Protocol(String),
    /// A deadline passed (`EXTENSION_TIMEOUT`).
    Timeout(String),
}

impl ProcessFault {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            ProcessFault::Exited(_) => codes::EXTENSION_PROCESS_EXITED,
            ProcessFault::Protocol(_) => codes::EXTENSION_PROTOCOL_ERROR,
            ProcessFault::Timeout(_) => codes::EXTENSION_TIMEOUT,
        }
    }

    /// What happened.
    pub fn message(&self) -> &str {
        match self {
            ProcessFault::Exited(m) | ProcessFault::Protocol(m) | ProcessFault::Timeout(m) => m,
        }
    }

    /// The same fault as an [`ExtensionError`] carrying its code, with
    /// `context` (which extension, which step) in front.
    pub fn to_extension_error(&self, context: &str) -> ExtensionError {
        ExtensionError::coded(self.code(), format!("{context}: {}", self.message()))
    }
}

impl std::fmt::Display for ProcessFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code(), self.message())
    }
}

impl std::error::Error for ProcessFault {}

impl CodedError for ProcessFault {
    fn code(&self) -> &'static str {
        ProcessFault::code(self)
    }
    fn message(&self) -> String {
        ProcessFault::message(self).to_owned()
    }
}

/// At most [`MAX_QUOTED_BYTES`] bytes of `bytes`, lossily decoded and
/// escaped, with the total length when something was cut.
pub fn quote_prefix(bytes: &[u8]) -> String {
    let cut = bytes.len().min(MAX_QUOTED_BYTES);
    let text = String::from_utf8_lossy(&bytes[..cut]);
    let escaped: String = text.escape_debug().collect();
    if cut < bytes.len() {
        format!("\"{escaped}\"... ({} bytes in all)", bytes.len())
    } else {
        format!("\"{escaped}\"")
    }
}

/// `text` cut to at most [`MAX_QUOTED_BYTES`] bytes (on a character
/// boundary), for error texts that may embed what the child sent.
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_QUOTED_BYTES {
        return text.to_owned();
    }
    let mut cut = MAX_QUOTED_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..cut], text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quote_never_holds_more_than_the_bounded_prefix() {
        let long = vec![b'x'; 10_000];
        let q = quote_prefix(&long);
        assert!(q.len() < MAX_QUOTED_BYTES + 40, "{q}");
        assert!(q.ends_with("(10000 bytes in all)"));
        assert_eq!(quote_prefix(b"a\nb"), "\"a\\nb\"");
    }
}
