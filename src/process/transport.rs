//! The stdio transport under rmcp's client session: one JSON-RPC message per
//! line, lines bounded at 1 MiB, and anything that is not a JSON-RPC 2.0
//! message closes the session with a recorded [`ProcessFault`] (fail
//! closed). rmcp's own `AsyncRwTransport` drops oversized lines and skips
//! unparsable ones and keeps going, which P-3 forbids, so this part is ours.

use std::sync::{Arc, Mutex};

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout};

use super::error::{ProcessFault, quote_prefix};

/// The longest line accepted from a child, newline excluded (P-3).
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// The first fault of a session; later ones are ignored. Setting it
/// wakes [`FaultCell::wait`].
#[derive(Debug, Clone, Default)]
pub(crate) struct FaultCell(Arc<Mutex<Option<ProcessFault>>>, Arc<tokio::sync::Notify>);

impl FaultCell {
    pub(crate) fn set(&self, fault: ProcessFault) {
        if let Ok(mut slot) = self.0.lock()
            && slot.is_none()
        {
            *slot = Some(fault);
            self.1.notify_one();
        }
    }

    /// Resolves once a fault is recorded.
    pub(crate) async fn wait(&self) {
        if self.get().is_none() {
            self.1.notified().await;
        }
    }

    pub(crate) fn get(&self) -> Option<ProcessFault> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }
}

type Writer = Arc<tokio::sync::Mutex<Option<ChildStdin>>>;

/// rmcp transport over a child's stdin and stdout.
pub(crate) struct StdioTransport {
    reader: BufReader<ChildStdout>,
    line: Vec<u8>,
    writer: Writer,
    fault: FaultCell,
}

impl StdioTransport {
    pub(crate) fn new(stdout: ChildStdout, stdin: ChildStdin, fault: FaultCell) -> Self {
        Self {
            reader: BufReader::with_capacity(64 * 1024, stdout),
            line: Vec::new(),
            writer: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            fault,
        }
    }

    /// A handle that closes the child's stdin (P-3's first step) even while
    /// the session owns the transport.
    pub(crate) fn closer(&self) -> StdinCloser {
        StdinCloser(self.writer.clone())
    }

    /// Reads one line into `self.line`, never holding more than
    /// [`MAX_LINE_BYTES`]. `Ok(false)` is end of file. Cancel-safe: a partial
    /// line stays in `self.line`.
    async fn read_line(&mut self) -> Result<bool, ProcessFault> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(bytes) => bytes,
                Err(e) => {
                    return Err(ProcessFault::Exited(format!(
                        "reading the child's stdout failed: {e}"
                    )));
                }
            };
            if available.is_empty() {
                return Ok(false);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            let content = newline.map_or(take, |i| i);
            if self.line.len().saturating_add(content) > MAX_LINE_BYTES {
                let mut prefix = std::mem::take(&mut self.line);
                prefix.extend_from_slice(&available[..content.min(super::error::MAX_QUOTED_BYTES)]);
                return Err(ProcessFault::Protocol(format!(
                    "the child wrote a line over {MAX_LINE_BYTES} bytes, starting {}",
                    quote_prefix(&prefix[..prefix.len().min(super::error::MAX_QUOTED_BYTES)])
                )));
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if newline.is_some() {
                return Ok(true);
            }
        }
    }

    /// Parses one line: JSON, a JSON-RPC 2.0 object, and a message rmcp
    /// knows. A notification rmcp cannot type is skipped (as rmcp does for
    /// compatibility); anything else is a protocol fault.
    fn parse(line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleClient>>, ProcessFault> {
        let bad = |why: &str| {
            ProcessFault::Protocol(format!("the child wrote {why}: {}", quote_prefix(line)))
        };
        let value: Value =
            serde_json::from_slice(line).map_err(|_| bad("a line that is not JSON"))?;
        let is_jsonrpc = value
            .as_object()
            .is_some_and(|o| o.get("jsonrpc").and_then(Value::as_str) == Some("2.0"));
        if !is_jsonrpc {
            return Err(bad("JSON that is not a JSON-RPC 2.0 message"));
        }
        let is_notification = value.get("id").is_none() && value.get("method").is_some();
        match serde_json::from_value::<RxJsonRpcMessage<RoleClient>>(value) {
            Ok(message) => Ok(Some(message)),
            Err(e) if is_notification => {
                tracing::debug!("skipping a notification the client cannot type: {e}");
                Ok(None)
            }
            Err(_) => Err(bad("a JSON-RPC message of an unknown shape")),
        }
    }
}

/// Closes the child's stdin.
#[derive(Clone)]
pub(crate) struct StdinCloser(Writer);

impl StdinCloser {
    pub(crate) async fn close(&self) {
        if let Some(mut stdin) = self.0.lock().await.take() {
            let _ = stdin.shutdown().await;
        }
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = self.writer.clone();
        let fault = self.fault.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let mut guard = writer.lock().await;
            let Some(stdin) = guard.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the child's stdin is closed",
                ));
            };
            let result = async {
                stdin.write_all(&bytes).await?;
                stdin.flush().await
            }
            .await;
            if let Err(e) = &result {
                fault.set(ProcessFault::Exited(format!(
                    "writing to the child's stdin failed: {e}"
                )));
            }
            result
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.read_line().await {
                Err(fault) => {
                    self.fault.set(fault);
                    return None;
                }
                Ok(false) => {
                    self.fault.set(ProcessFault::Exited(
                        "the child closed its stdout (it exited or crashed)".to_owned(),
                    ));
                    return None;
                }
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
                Err(fault) => {
                    self.fault.set(fault);
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut stdin) = self.writer.lock().await.take() {
            let _ = stdin.shutdown().await;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_rpc_messages_pass_and_unknown_notifications_are_skipped() {
        let code = |line: &[u8]| StdioTransport::parse(line).err().map(|f| f.code());
        assert_eq!(code(b"not json"), Some("EXTENSION_PROTOCOL_ERROR"));
        assert_eq!(code(b"[1,2]"), Some("EXTENSION_PROTOCOL_ERROR"));
        assert_eq!(
            code(br#"{"id":1,"result":{}}"#),
            Some("EXTENSION_PROTOCOL_ERROR")
        );
        assert!(matches!(
            StdioTransport::parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ok(Some(_))
        ));
        assert!(
            StdioTransport::parse(br#"{"jsonrpc":"2.0","method":"vendor/thing","params":7}"#)
                .is_ok(),
            "a notification is never a fault"
        );
    }

    #[test]
    fn a_protocol_fault_quotes_a_bounded_prefix() {
        let line = vec![b'z'; 5000];
        let fault = StdioTransport::parse(&line).unwrap_err();
        assert!(fault.message().len() < 400, "{}", fault.message());
    }
}
