//! The client side of `exthost serve`'s stdio: one JSON-RPC message per
//! line, lines bounded at 1 MiB, fail closed. The same limits as a
//! backend's transport (docs/process.md, P-3): a line over the limit, a
//! line that is not JSON, or JSON that is not a JSON-RPC 2.0 message ends
//! the session, and `serve` shuts everything down. A notification of a
//! shape rmcp cannot type is skipped, as rmcp itself does.

use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use exthost::process::quote_prefix as quote;

/// The longest line accepted from the client, newline excluded.
pub(crate) const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Why the session with the client ended, when it was not a clean end of
/// input.
#[derive(Debug, Clone, Default)]
pub(crate) struct EndCell(Arc<Mutex<Option<String>>>);

impl EndCell {
    fn set(&self, why: String) {
        if let Ok(mut slot) = self.0.lock()
            && slot.is_none()
        {
            *slot = Some(why);
        }
    }

    /// The fault that ended the session, if any.
    pub(crate) fn fault(&self) -> Option<String> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }
}

type Writer<W> = Arc<tokio::sync::Mutex<Option<W>>>;

/// rmcp's server transport over a reader (stdin) and a writer (stdout).
pub(crate) struct LineTransport<R, W> {
    reader: BufReader<R>,
    line: Vec<u8>,
    writer: Writer<W>,
    end: EndCell,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    pub(crate) fn new(reader: R, writer: W, end: EndCell) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            writer: Arc::new(tokio::sync::Mutex::new(Some(writer))),
            end,
        }
    }

    /// One line into `self.line`, never more than [`MAX_LINE_BYTES`];
    /// `Ok(false)` at end of input. Cancel-safe.
    async fn read_line(&mut self) -> Result<bool, String> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(bytes) => bytes,
                Err(e) => return Err(format!("reading stdin failed: {e}")),
            };
            if available.is_empty() {
                return Ok(false);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let content = newline.unwrap_or(take);
            if self.line.len().saturating_add(content) > MAX_LINE_BYTES {
                let mut prefix = std::mem::take(&mut self.line);
                prefix.extend_from_slice(&available[..content.min(200)]);
                return Err(format!(
                    "the client sent a line over {MAX_LINE_BYTES} bytes, starting {}",
                    quote(&prefix)
                ));
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if newline.is_some() {
                return Ok(true);
            }
        }
    }

    /// JSON, a JSON-RPC 2.0 object, and a message rmcp can type; an
    /// untypable notification is skipped (`Ok(None)`).
    pub(crate) fn parse(line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, String> {
        let bad = |why: &str| format!("the client sent {why}: {}", quote(line));
        let value: Value =
            serde_json::from_slice(line).map_err(|_| bad("a line that is not JSON"))?;
        let is_jsonrpc = value
            .as_object()
            .is_some_and(|o| o.get("jsonrpc").and_then(Value::as_str) == Some("2.0"));
        if !is_jsonrpc {
            return Err(bad("JSON that is not a JSON-RPC 2.0 message"));
        }
        let is_notification = value.get("id").is_none() && value.get("method").is_some();
        match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value) {
            Ok(message) => Ok(Some(message)),
            Err(_) if is_notification => Ok(None),
            Err(_) => Err(bad("a JSON-RPC message of an unknown shape")),
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut guard = writer.lock().await;
            let Some(out) = guard.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "stdout is closed",
                ));
            };
            out.write_all(&bytes).await?;
            out.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Err(why) => {
                    self.end.set(why);
                    return None;
                }
                Ok(false) => return None,
                Ok(true) => {}
            }
            let line = std::mem::take(&mut self.line);
            let mut content: &[u8] = line.strip_suffix(b"\n").unwrap_or(&line);
            content = content.strip_suffix(b"\r").unwrap_or(content);
            if content.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match Self::parse(content) {
                Ok(Some(message)) => return Some(message),
                Ok(None) => continue,
                Err(why) => {
                    self.end.set(why);
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut out) = self.writer.lock().await.take() {
            let _ = out.flush().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Stdio = LineTransport<tokio::io::Empty, tokio::io::Sink>;

    #[test]
    fn only_json_rpc_messages_pass_and_unknown_notifications_are_skipped() {
        assert!(Stdio::parse(b"not json").is_err());
        assert!(Stdio::parse(b"[1,2]").is_err());
        assert!(Stdio::parse(br#"{"id":1,"method":"ping"}"#).is_err());
        assert!(matches!(
            Stdio::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Some(_))
        ));
        assert!(matches!(
            Stdio::parse(br#"{"jsonrpc":"2.0","method":"vendor/thing","params":7}"#),
            Ok(None)
        ));
    }

    #[test]
    fn a_refusal_quotes_a_bounded_escaped_prefix() {
        let mut line = b"\x1b]0;forged\x07".to_vec();
        line.extend(std::iter::repeat_n(b'z', 5000));
        let why = Stdio::parse(&line).unwrap_err();
        assert!(why.len() < 400, "{why}");
        assert!(!why.contains('\x1b'), "{why:?}");
    }

    #[tokio::test]
    async fn an_oversized_line_ends_the_session_with_a_fault() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.push(b'\n');
        let end = EndCell::default();
        let mut transport =
            LineTransport::new(std::io::Cursor::new(input), tokio::io::sink(), end.clone());
        assert!(transport.receive().await.is_none());
        let fault = end.fault().expect("a fault");
        assert!(fault.contains("over 1048576 bytes"), "{fault}");
    }

    #[tokio::test]
    async fn end_of_input_is_a_clean_end() {
        let end = EndCell::default();
        let mut transport = LineTransport::new(
            std::io::Cursor::new(b"\n  \n".to_vec()),
            tokio::io::sink(),
            end.clone(),
        );
        assert!(transport.receive().await.is_none());
        assert!(end.fault().is_none());
    }
}
