//! Line-delimited JSON-RPC 2.0, the framing every stdio transport of
//! exthost shares: a backend's (`transport.rs`, the client side of a child)
//! and `exthost serve`'s (the server side, facing the agent). One message
//! per line, a line never longer than [`MAX_LINE_BYTES`] (never more than
//! that held while reading it), blank lines skipped, and fail closed: a
//! line over the limit, a line that is not JSON, or JSON that is not a
//! JSON-RPC 2.0 message ends the session (P-3). A notification rmcp cannot
//! type is skipped, as rmcp itself does.
//!
//! What each side bounds besides (its writer, its queue, backpressure, the
//! peer's own requests) stays with that side's transport.

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

use super::error::{MAX_QUOTED_BYTES, quote_prefix};

/// The longest line accepted from a peer, newline excluded (P-3).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Why a line ended the session.
#[derive(Debug)]
pub enum LineError {
    /// Reading failed.
    Read(std::io::Error),
    /// The line passed [`MAX_LINE_BYTES`]: `quoted` is its start, bounded
    /// and escaped ([`quote_prefix`]).
    TooLong {
        /// The start of the line, bounded and escaped.
        quoted: String,
    },
}

impl LineError {
    /// The reason in words, `peer` naming who sent it ("the child",
    /// "the client").
    pub fn describe(&self, peer: &str) -> String {
        match self {
            LineError::Read(e) => format!("reading from {peer} failed: {e}"),
            LineError::TooLong { quoted } => {
                format!("{peer} sent a line over {MAX_LINE_BYTES} bytes, starting {quoted}")
            }
        }
    }
}

/// Reads one line at a time, never holding more than [`MAX_LINE_BYTES`].
pub struct LineReader<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader over `input`.
    pub fn new(input: R) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, input),
            line: Vec::new(),
        }
    }

    /// The next line that is not blank, without its newline (and a
    /// carriage return before it); `Ok(None)` at end of input.
    /// Cancel-safe: a partial line stays for the next call.
    pub async fn next_line(&mut self) -> Result<Option<Vec<u8>>, LineError> {
        loop {
            if !self.fill_line().await? {
                return Ok(None);
            }
            let mut line = std::mem::take(&mut self.line);
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Ok(Some(line));
            }
        }
    }

    /// One line, its newline included, into `self.line`; `Ok(false)` at
    /// end of input.
    async fn fill_line(&mut self) -> Result<bool, LineError> {
        loop {
            let available = self.reader.fill_buf().await.map_err(LineError::Read)?;
            if available.is_empty() {
                return Ok(false);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let content = newline.unwrap_or(take);
            if self.line.len().saturating_add(content) > MAX_LINE_BYTES {
                let mut prefix = std::mem::take(&mut self.line);
                prefix.truncate(MAX_QUOTED_BYTES);
                let more = MAX_QUOTED_BYTES - prefix.len();
                prefix.extend_from_slice(&available[..content.min(more)]);
                return Err(LineError::TooLong {
                    quoted: quote_prefix(&prefix),
                });
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if newline.is_some() {
                return Ok(true);
            }
        }
    }
}

/// What one line is.
#[derive(Debug)]
pub enum Parsed<M> {
    /// A message of the expected type.
    Message(M),
    /// A notification of a method the type does not know: skipped.
    Skipped,
}

/// JSON, an object with `"jsonrpc": "2.0"`; else why not, in words,
/// quoting the line (bounded and escaped).
pub fn json_rpc_value(line: &[u8]) -> Result<Value, String> {
    let bad = |why: &str| format!("{why}: {}", quote_prefix(line));
    let value: Value = serde_json::from_slice(line).map_err(|_| bad("a line that is not JSON"))?;
    let is_jsonrpc = value
        .as_object()
        .is_some_and(|o| o.get("jsonrpc").and_then(Value::as_str) == Some("2.0"));
    if !is_jsonrpc {
        return Err(bad("JSON that is not a JSON-RPC 2.0 message"));
    }
    Ok(value)
}

/// A JSON-RPC 2.0 value as a message of type `M` (rmcp's typed messages);
/// a notification `M` cannot type is [`Parsed::Skipped`], anything else
/// untyped is refused, quoting `line`.
pub fn typed<M: DeserializeOwned>(value: Value, line: &[u8]) -> Result<Parsed<M>, String> {
    let is_notification = value.get("id").is_none() && value.get("method").is_some();
    match serde_json::from_value::<M>(value) {
        Ok(message) => Ok(Parsed::Message(message)),
        Err(_) if is_notification => Ok(Parsed::Skipped),
        Err(_) => Err(format!(
            "a JSON-RPC message of an unknown shape: {}",
            quote_prefix(line)
        )),
    }
}

/// [`json_rpc_value`] then [`typed`].
pub fn parse<M: DeserializeOwned>(line: &[u8]) -> Result<Parsed<M>, String> {
    typed(json_rpc_value(line)?, line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::RoleClient;
    use rmcp::service::RxJsonRpcMessage;

    /// What a client reads from a server.
    type Client = RxJsonRpcMessage<RoleClient>;

    #[test]
    fn only_json_rpc_messages_pass_and_unknown_notifications_are_skipped() {
        assert!(parse::<Client>(b"not json").is_err());
        assert!(parse::<Client>(b"[1,2]").is_err());
        assert!(parse::<Client>(br#"{"id":1,"method":"ping"}"#).is_err());
        assert!(matches!(
            parse::<Client>(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ok(Parsed::Message(_))
        ));
        assert!(parse::<Client>(br#"{"jsonrpc":"2.0","id":1}"#).is_err());
        assert!(matches!(
            parse::<Client>(br#"{"jsonrpc":"2.0","method":"vendor/thing","params":7}"#),
            Ok(Parsed::Skipped)
        ));
    }

    #[test]
    fn a_refusal_quotes_a_bounded_escaped_prefix() {
        let mut line = b"\x1b]0;forged\x07".to_vec();
        line.extend(std::iter::repeat_n(b'z', 5000));
        let why = parse::<Client>(&line).unwrap_err();
        assert!(why.len() < 400, "{why}");
        assert!(!why.contains('\x1b'), "{why:?}");
    }

    #[tokio::test]
    async fn an_oversized_line_is_refused_with_a_bounded_quote() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.push(b'\n');
        let mut lines = LineReader::new(std::io::Cursor::new(input));
        let err = lines.next_line().await.unwrap_err();
        let why = err.describe("the client");
        assert!(why.contains("over 1048576 bytes"), "{why}");
        assert!(why.len() < 400, "{}", why.len());
    }

    #[tokio::test]
    async fn blank_lines_are_skipped_and_a_line_at_the_limit_passes() {
        let mut input = b"\n \r\n".to_vec();
        input.extend(std::iter::repeat_n(b'y', MAX_LINE_BYTES));
        input.extend_from_slice(b"\nlast");
        let mut lines = LineReader::new(std::io::Cursor::new(input));
        let line = lines.next_line().await.unwrap().unwrap();
        assert_eq!(line.len(), MAX_LINE_BYTES);
        // A last line without a newline is not a message: end of input.
        assert!(lines.next_line().await.unwrap().is_none());
    }
}
