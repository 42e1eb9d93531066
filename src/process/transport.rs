//! The stdio transport under rmcp's client session: one JSON-RPC message per
//! line, lines bounded at 1 MiB, and anything that is not a JSON-RPC 2.0
//! message closes the session with a recorded [`ProcessFault`] (fail
//! closed). rmcp's own `AsyncRwTransport` drops oversized lines and skips
//! unparsable ones and keeps going, which P-3 forbids, so this part is ours.
//!
//! Bounded in memory whatever the child sends (P-7):
//!
//! * One writer task owns the child's stdin and writes one queued message
//!   at a time from a bounded queue; a write blocked longer than
//!   [`STDIN_WRITE_DEADLINE`] (the child stopped reading) is a fault.
//!   Closing stdin cancels the writer; nothing waits for a write to finish,
//!   so the shutdown ladder never waits on the child.
//! * Requests the child sends (`ping`, or anything else) never reach rmcp:
//!   the transport answers them itself (`ping` with `{}`, anything else
//!   with "method not found"), with at most
//!   [`MAX_SERVER_REQUESTS_IN_FLIGHT`] answers and at most
//!   [`MAX_SERVER_ANSWER_BYTES`] of answers and refusals queued (a child's
//!   ids may be 1 MiB each); each request beyond that is refused (an error
//!   answer when the queue has room, none when it has not), and past [`MAX_REFUSED_SERVER_REQUESTS`] refusals the
//!   session ends with `EXTENSION_PROTOCOL_ERROR`.
//! * Receiving races the fault cell, so a fault recorded elsewhere (the
//!   leader's exit, a stalled write) ends the session at once even while a
//!   descendant keeps the child's stdout open.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::error::{ProcessFault, quote_prefix};
pub use super::lines::MAX_LINE_BYTES;
use super::lines::{self, LineError, LineReader, Parsed};

/// At most this many answers to the child's own requests wait to be
/// written (P-7).
pub const MAX_SERVER_REQUESTS_IN_FLIGHT: usize = 16;
/// The child's requests refused (over [`MAX_SERVER_REQUESTS_IN_FLIGHT`])
/// past which the session ends with `EXTENSION_PROTOCOL_ERROR` (P-7).
pub const MAX_REFUSED_SERVER_REQUESTS: u64 = 256;
/// A write to the child's stdin that blocks longer than this (the child
/// stopped reading) ends the session with `EXTENSION_PROTOCOL_ERROR` (P-7).
pub const STDIN_WRITE_DEADLINE: Duration = Duration::from_secs(10);
/// At most this many bytes of answers and refusals to the child's own
/// requests wait to be written (P-7): with ids of up to 1 MiB, a count
/// alone would let a child that never reads hold tens of MB in the queue.
/// An answer or refusal that would pass it is not queued (it counts as
/// refused).
pub const MAX_SERVER_ANSWER_BYTES: usize = 4 * 1024 * 1024;
/// Messages queued for the writer task, all kinds together.
const OUTGOING_QUEUE: usize = 64;
/// JSON-RPC "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// The first fault of a session; later ones are ignored. Setting it
/// wakes every [`FaultCell::wait`].
#[derive(Debug, Clone, Default)]
pub(crate) struct FaultCell(Arc<Mutex<Option<ProcessFault>>>, CancellationToken);

impl FaultCell {
    pub(crate) fn set(&self, fault: ProcessFault) {
        if let Ok(mut slot) = self.0.lock()
            && slot.is_none()
        {
            *slot = Some(fault);
            self.1.cancel();
        }
    }

    /// Resolves once a fault is recorded.
    pub(crate) async fn wait(&self) {
        self.1.cancelled().await;
    }

    pub(crate) fn get(&self) -> Option<ProcessFault> {
        self.0.lock().ok().and_then(|slot| slot.clone())
    }

    /// A token cancelled once a fault is recorded.
    pub(crate) fn token(&self) -> CancellationToken {
        self.1.clone()
    }
}

/// One line for the writer task; `done` learns how the write went.
pub(crate) struct Outgoing {
    pub(crate) bytes: Vec<u8>,
    pub(crate) done: Option<oneshot::Sender<std::io::Result<()>>>,
    /// An answer to the child's request: counted in flight until written.
    pub(crate) answer: bool,
    /// Bytes counted against [`MAX_SERVER_ANSWER_BYTES`] until written
    /// (answers, refusals and forwarded requests; 0 for rmcp's own
    /// messages).
    pub(crate) counted: usize,
}

/// What one line from the child is.
#[derive(Debug)]
enum Incoming {
    /// A message for rmcp's session.
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// A request from the child, answered by the transport itself or
    /// forwarded to the client in front of the host (its params are kept
    /// only then).
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    /// Nothing to do (a notification rmcp cannot type).
    Skip,
}

/// rmcp transport over a child's stdin and stdout.
pub(crate) struct StdioTransport {
    lines: LineReader<ChildStdout>,
    outgoing: mpsc::Sender<Outgoing>,
    in_flight: Arc<AtomicUsize>,
    /// Bytes of answers and refusals queued, not yet written.
    answer_bytes: Arc<AtomicUsize>,
    refused: u64,
    stop: CancellationToken,
    fault: FaultCell,
    /// Where the child's requests for the client go, when it has a bridge.
    forwarder: Option<Box<dyn ServerRequests>>,
}

/// Where the child's requests for the client go (`forward.rs`, through the
/// extension's bridge), as the transport's read loop hands them on.
pub(crate) trait ServerRequests: Send + Sync {
    /// Whether one more request of `bytes` may wait for the client; when
    /// it may, its bytes are counted in `queued`.
    fn has_room(&self, bytes: usize, queued: &AtomicUsize) -> bool;
    /// Sends the request on and queues its answer for the child; `counted`
    /// bytes (reserved by `has_room`) are released once it is written.
    fn forward(
        &self,
        id: Value,
        method: String,
        params: Value,
        counted: usize,
        outgoing: &mpsc::Sender<Outgoing>,
    );
    /// Sees each message of the child on its way to rmcp.
    fn on_message(&self, message: &RxJsonRpcMessage<RoleClient>);
}

impl StdioTransport {
    /// The transport, and its writer task (spawned on the current runtime).
    /// With a `forwarder`, the child's requests of
    /// [`FORWARDED_METHODS`](super::bridge::FORWARDED_METHODS) go to the
    /// client in front of the host.
    pub(crate) fn new(
        stdout: ChildStdout,
        stdin: ChildStdin,
        fault: FaultCell,
        forwarder: Option<Box<dyn ServerRequests>>,
    ) -> Self {
        let (outgoing, queue) = mpsc::channel(OUTGOING_QUEUE);
        let in_flight = Arc::new(AtomicUsize::new(0));
        let answer_bytes = Arc::new(AtomicUsize::new(0));
        let stop = CancellationToken::new();
        tokio::spawn(write_loop(
            stdin,
            queue,
            in_flight.clone(),
            answer_bytes.clone(),
            stop.clone(),
            fault.clone(),
        ));
        Self {
            lines: LineReader::new(stdout),
            outgoing,
            in_flight,
            answer_bytes,
            refused: 0,
            stop,
            fault,
            forwarder,
        }
    }

    /// A handle that closes the child's stdin (P-3's first step) even while
    /// the session owns the transport. Closing never waits.
    pub(crate) fn closer(&self) -> StdinCloser {
        StdinCloser(self.stop.clone())
    }

    /// Counts `bytes` against [`MAX_SERVER_ANSWER_BYTES`]; false (nothing
    /// counted) when they would pass it.
    fn reserve_answer_bytes(&self, bytes: usize) -> bool {
        self.answer_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |queued| {
                (queued + bytes <= MAX_SERVER_ANSWER_BYTES).then_some(queued + bytes)
            })
            .is_ok()
    }

    /// Answers one request of the child (P-7): `ping` with `{}`, anything
    /// else with "method not found"; refused when too many answers, or too
    /// many bytes of answers, wait.
    fn answer(&mut self, id: Value, method: &str) -> Result<(), ProcessFault> {
        let reply = if method == "ping" {
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        } else {
            json!({"jsonrpc": "2.0", "id": id,
                   "error": {"code": METHOD_NOT_FOUND, "message": "method not found"}})
        };
        let mut bytes = reply.to_string().into_bytes();
        bytes.push(b'\n');
        let counted = bytes.len();
        if self.in_flight.load(Ordering::Acquire) < MAX_SERVER_REQUESTS_IN_FLIGHT
            && self.reserve_answer_bytes(counted)
        {
            self.in_flight.fetch_add(1, Ordering::AcqRel);
            let queued = self.outgoing.try_send(Outgoing {
                bytes,
                done: None,
                answer: true,
                counted,
            });
            if queued.is_ok() {
                return Ok(());
            }
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            self.answer_bytes.fetch_sub(counted, Ordering::AcqRel);
        } else {
            drop(bytes);
        }
        self.refuse(id)
    }

    /// Refuses one request of the child over the bounds (an error answer
    /// when the queue has room, none when it has not), and counts it.
    fn refuse(&mut self, id: Value) -> Result<(), ProcessFault> {
        let refusal = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000,
            "message": "too many requests in flight toward the host"}});
        let mut bytes = refusal.to_string().into_bytes();
        bytes.push(b'\n');
        let counted = bytes.len();
        if self.reserve_answer_bytes(counted)
            && self
                .outgoing
                .try_send(Outgoing {
                    bytes,
                    done: None,
                    answer: false,
                    counted,
                })
                .is_err()
        {
            self.answer_bytes.fetch_sub(counted, Ordering::AcqRel);
        }
        self.refused += 1;
        if self.refused > MAX_REFUSED_SERVER_REQUESTS {
            return Err(ProcessFault::Protocol(format!(
                "the child sent more requests than the host answers: over \
                 {MAX_REFUSED_SERVER_REQUESTS} refused (at most \
                 {MAX_SERVER_REQUESTS_IN_FLIGHT} in flight)"
            )));
        }
        Ok(())
    }

    /// Parses one line: JSON, a JSON-RPC 2.0 object, and a message rmcp
    /// knows, or a request of the child (answered here, never by rmcp). A
    /// notification rmcp cannot type is skipped (as rmcp does for
    /// compatibility); anything else is a protocol fault.
    fn parse(line: &[u8]) -> Result<Incoming, ProcessFault> {
        let bad = |why: String| ProcessFault::Protocol(format!("the child wrote {why}"));
        let value = lines::json_rpc_value(line).map_err(bad)?;
        let method = value.get("method").and_then(Value::as_str);
        match (value.get("id"), method) {
            (Some(id @ (Value::String(_) | Value::Number(_))), Some(method)) => {
                let params = super::bridge::FORWARDED_METHODS
                    .contains(&method)
                    .then(|| value.get("params").cloned().unwrap_or(json!({})));
                return Ok(Incoming::Request {
                    id: id.clone(),
                    method: method.to_owned(),
                    params,
                });
            }
            (Some(_), Some(_)) => {
                return Err(bad(format!(
                    "a request whose id is not a string or number: {}",
                    quote_prefix(line)
                )));
            }
            _ => {}
        }
        match lines::typed::<RxJsonRpcMessage<RoleClient>>(value, line).map_err(bad)? {
            Parsed::Message(message) => Ok(Incoming::Message(Box::new(message))),
            Parsed::Skipped => {
                tracing::debug!("skipping a notification the client cannot type");
                Ok(Incoming::Skip)
            }
        }
    }
}

/// The writer task: owns the child's stdin, writes one queued line at a
/// time, each within [`STDIN_WRITE_DEADLINE`]. Ends (dropping, and so
/// closing, stdin) when stopped, when the transport is gone, or on the
/// first failed or stalled write (a fault).
async fn write_loop(
    mut stdin: ChildStdin,
    mut queue: mpsc::Receiver<Outgoing>,
    in_flight: Arc<AtomicUsize>,
    answer_bytes: Arc<AtomicUsize>,
    stop: CancellationToken,
    fault: FaultCell,
) {
    loop {
        let message = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            message = queue.recv() => match message {
                Some(message) => message,
                None => break,
            },
        };
        let write = async {
            stdin.write_all(&message.bytes).await?;
            stdin.flush().await
        };
        let written = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            written = tokio::time::timeout(STDIN_WRITE_DEADLINE, write) => written,
        };
        if message.answer {
            in_flight.fetch_sub(1, Ordering::AcqRel);
        }
        answer_bytes.fetch_sub(message.counted, Ordering::AcqRel);
        let result = match written {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                fault.set(ProcessFault::Exited(format!(
                    "writing to the child's stdin failed: {e}"
                )));
                Err(e)
            }
            Err(_) => {
                fault.set(ProcessFault::Protocol(format!(
                    "the child did not read its stdin for {} ms",
                    STDIN_WRITE_DEADLINE.as_millis()
                )));
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the child stopped reading its stdin",
                ))
            }
        };
        let failed = result.is_err();
        if let Some(done) = message.done {
            let _ = done.send(result);
        }
        if failed {
            break;
        }
    }
    // Dropping `stdin` closes the pipe: the child sees end of file.
    queue.close();
    drop(stdin);
}

/// Closes the child's stdin: stops the writer task, which drops the pipe.
/// Never waits, not even for a write the child does not read.
#[derive(Clone)]
pub(crate) struct StdinCloser(CancellationToken);

impl StdinCloser {
    pub(crate) fn close(&self) {
        self.0.cancel();
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let outgoing = self.outgoing.clone();
        async move {
            let mut bytes = serde_json::to_vec(&item).map_err(std::io::Error::other)?;
            bytes.push(b'\n');
            let closed = || {
                std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the child's stdin is closed",
                )
            };
            let (done, written) = oneshot::channel();
            outgoing
                .send(Outgoing {
                    bytes,
                    done: Some(done),
                    answer: false,
                    counted: 0,
                })
                .await
                .map_err(|_| closed())?;
            written.await.map_err(|_| closed())?
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let fault = self.fault.clone();
            let read = tokio::select! {
                // A fault recorded elsewhere (the leader exited, a write
                // stalled, disposal) ends the session at once.
                _ = fault.wait() => return None,
                read = self.lines.next_line() => read,
            };
            let content = match read {
                Ok(Some(line)) => line,
                Ok(None) => {
                    self.fault.set(ProcessFault::Exited(
                        "the child closed its stdout (it exited or crashed)".to_owned(),
                    ));
                    return None;
                }
                Err(LineError::Read(e)) => {
                    self.fault.set(ProcessFault::Exited(format!(
                        "reading the child's stdout failed: {e}"
                    )));
                    return None;
                }
                Err(too_long) => {
                    self.fault
                        .set(ProcessFault::Protocol(too_long.describe("the child")));
                    return None;
                }
            };
            let content = content.as_slice();
            match Self::parse(content) {
                Ok(Incoming::Message(message)) => {
                    if let Some(forwarder) = &self.forwarder {
                        forwarder.on_message(&message);
                    }
                    return Some(*message);
                }
                Ok(Incoming::Skip) => continue,
                Ok(Incoming::Request { id, method, params }) => {
                    let handled = match (&self.forwarder, params) {
                        (Some(forwarder), Some(params)) => {
                            let bytes = content.len();
                            if forwarder.has_room(bytes, &self.answer_bytes) {
                                forwarder.forward(id, method, params, bytes, &self.outgoing);
                                Ok(())
                            } else {
                                self.refuse(id)
                            }
                        }
                        _ => self.answer(id, &method),
                    };
                    if let Err(fault) = handled {
                        self.fault.set(fault);
                        return None;
                    }
                }
                Err(fault) => {
                    self.fault.set(fault);
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.stop.cancel();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_rpc_messages_pass_and_unknown_notifications_are_skipped() {
        let code = |line: &[u8]| StdioTransport::parse(line).err().map(|f| f.code());
        assert!(matches!(
            StdioTransport::parse(br#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#),
            Ok(Incoming::Request { .. })
        ));
        assert_eq!(code(b"not json"), Some("EXTENSION_PROTOCOL_ERROR"));
        assert_eq!(code(b"[1,2]"), Some("EXTENSION_PROTOCOL_ERROR"));
        assert_eq!(
            code(br#"{"id":1,"result":{}}"#),
            Some("EXTENSION_PROTOCOL_ERROR")
        );
        assert!(matches!(
            StdioTransport::parse(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            Ok(Incoming::Message(_))
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
