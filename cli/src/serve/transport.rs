//! The client side of `exthost serve`'s stdio: one JSON-RPC message per
//! line, lines bounded at 1 MiB, fail closed, read and parsed by the
//! framing a backend's transport uses too ([`exthost::process::lines`],
//! docs/process.md, P-3): a line over the limit, a
//! line that is not JSON, or JSON that is not a JSON-RPC 2.0 message ends
//! the session, and `serve` shuts everything down. A notification of a
//! shape rmcp cannot type is skipped, as rmcp itself does.
//!
//! Bounded whatever the client does (docs/serve.md, "Bounds"):
//!
//! * One writer task owns stdout. What is queued for it is bounded by
//!   bytes ([`MAX_QUEUED_BYTES`]): a message waits for room before it is
//!   queued.
//! * Backpressure: the next message is read from stdin only while the
//!   output has room (half of [`MAX_QUEUED_BYTES`] free) and fewer than
//!   [`MAX_OUTSTANDING_REQUESTS`] of the client's requests are unanswered.
//!   A client that stops reading stdout therefore stops being read, and
//!   serve's memory stays bounded however much it writes.
//! * While reading is held back, a client that hangs up (closes its end of
//!   stdin: `POLLHUP`, or `POLLRDHUP` on a socket) is end of input at once,
//!   even when its unread requests are still in the pipe and stdout is
//!   blocked; closing never waits on stdout longer than
//!   [`CLOSE_FLUSH_DEADLINE`].
//! * A "method not found" answer names why exthost does not offer the
//!   method ([`unsupported_reason`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exthost::CancellationToken;
use rmcp::RoleServer;
use rmcp::model::{ErrorCode, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use exthost::process::lines::{self, LineError, LineReader, Parsed};

/// At most this many bytes of messages wait to be written to the client.
/// A message larger than this waits until the queue is empty.
pub(crate) const MAX_QUEUED_BYTES: usize = 4 * 1024 * 1024;
/// At most this many of the client's requests are read and not yet
/// answered; the next line is read once one is answered (or cancelled).
/// Above the limit on calls in flight, so the client's cancellations are
/// still read while every call slot is taken.
pub(crate) const MAX_OUTSTANDING_REQUESTS: usize = 1024;
/// At the end of the session, what is still queued gets this long to be
/// written; then the writer is abandoned.
pub(crate) const CLOSE_FLUSH_DEADLINE: Duration = Duration::from_secs(2);
/// How often a held-back reader looks whether the client hung up.
const HANGUP_POLL: Duration = Duration::from_millis(100);

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

/// Whether the client hung up its end of stdin (checked while reading is
/// held back).
pub(crate) type HangupCheck = fn() -> bool;

/// The process's stdin reports a hang-up (`POLLHUP` on a pipe whose
/// writers are all gone, `POLLRDHUP` on a socket shut for writing).
pub(crate) fn stdin_hung_up() -> bool {
    use rustix::event::{PollFd, PollFlags, poll};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN | PollFlags::RDHUP)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match poll(&mut fds, Some(&zero)) {
        Ok(_) => fds[0]
            .revents()
            .intersects(PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR),
        Err(_) => false,
    }
}

/// One message for the writer, holding its share of the queue's bytes
/// until written.
struct Queued {
    bytes: Vec<u8>,
    _room: OwnedSemaphorePermit,
}

/// A request of the client read and not yet answered.
struct Outstanding {
    method: String,
    _slot: OwnedSemaphorePermit,
}

/// What `send` and `receive` share.
struct Shared {
    /// [`MAX_QUEUED_BYTES`] permits, one per byte of queued output.
    room: Arc<Semaphore>,
    /// [`MAX_OUTSTANDING_REQUESTS`] permits.
    slots: Arc<Semaphore>,
    outstanding: Mutex<HashMap<RequestId, Outstanding>>,
    queue: mpsc::UnboundedSender<Queued>,
    /// Cancelled when the session closes: sends fail, the writer stops.
    closed: CancellationToken,
}

/// rmcp's server transport over a reader (stdin) and a writer (stdout).
pub(crate) struct LineTransport<R> {
    lines: LineReader<R>,
    shared: Arc<Shared>,
    writer: Option<tokio::task::JoinHandle<()>>,
    hangup: Option<HangupCheck>,
    end: EndCell,
}

impl<R> LineTransport<R>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    /// The transport and its writer task (spawned on the current runtime).
    /// `hangup`, when given, tells whether the client hung up while
    /// reading is held back.
    pub(crate) fn new<W>(reader: R, writer: W, hangup: Option<HangupCheck>, end: EndCell) -> Self
    where
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (queue, receiver) = mpsc::unbounded_channel();
        let closed = CancellationToken::new();
        let writer = tokio::spawn(write_loop(writer, receiver, closed.clone()));
        Self {
            lines: LineReader::new(reader),
            shared: Arc::new(Shared {
                room: Arc::new(Semaphore::new(MAX_QUEUED_BYTES)),
                slots: Arc::new(Semaphore::new(MAX_OUTSTANDING_REQUESTS)),
                outstanding: Mutex::new(HashMap::new()),
                queue,
                closed,
            }),
            writer: Some(writer),
            hangup,
            end,
        }
    }

    /// JSON, a JSON-RPC 2.0 object, and a message rmcp can type; an
    /// untypable notification is skipped (`Ok(None)`).
    pub(crate) fn parse(line: &[u8]) -> Result<Option<RxJsonRpcMessage<RoleServer>>, String> {
        match lines::parse(line) {
            Ok(Parsed::Message(message)) => Ok(Some(message)),
            Ok(Parsed::Skipped) => Ok(None),
            Err(why) => Err(format!("the client sent {why}")),
        }
    }

    /// Waits until the next message may be read: the output has room and a
    /// request slot is free. The slot is returned. `None` when the client
    /// hung up meanwhile (end of input).
    async fn wait_for_room(
        shared: Arc<Shared>,
        hangup: Option<HangupCheck>,
    ) -> Option<OwnedSemaphorePermit> {
        let gates = async {
            let slot = shared.slots.clone().acquire_owned().await.ok()?;
            // Half the queue free: taken and given back at once (the
            // semaphore is fair, so this waits behind queued messages).
            drop(
                shared
                    .room
                    .acquire_many((MAX_QUEUED_BYTES / 2) as u32)
                    .await
                    .ok()?,
            );
            Some(slot)
        };
        let Some(hangup) = hangup else {
            return gates.await;
        };
        tokio::pin!(gates);
        // Ready at once in the usual case; only a held-back reader polls.
        loop {
            tokio::select! {
                biased;
                slot = &mut gates => return slot,
                () = std::future::ready(()) => {}
            }
            if hangup() {
                return None;
            }
            tokio::select! {
                biased;
                slot = &mut gates => return slot,
                () = tokio::time::sleep(HANGUP_POLL) => {}
            }
        }
    }
}

/// The writer task: owns stdout, writes one queued message at a time,
/// gives its room back once written. Ends when the session closes (after
/// writing what was queued, within [`CLOSE_FLUSH_DEADLINE`]) or when a
/// write fails.
async fn write_loop<W>(
    mut out: W,
    mut queue: mpsc::UnboundedReceiver<Queued>,
    closed: CancellationToken,
) where
    W: AsyncWrite + Unpin + Send + 'static,
{
    loop {
        let message = tokio::select! {
            message = queue.recv() => match message {
                Some(message) => message,
                None => break,
            },
            () = closed.cancelled() => break,
        };
        if write_one(&mut out, &message.bytes).await.is_err() {
            closed.cancel();
            return;
        }
    }
    // Closing: what is already queued, then stop.
    let flush = async {
        while let Ok(message) = queue.try_recv() {
            if write_one(&mut out, &message.bytes).await.is_err() {
                return;
            }
        }
        let _ = out.flush().await;
    };
    let _ = tokio::time::timeout(CLOSE_FLUSH_DEADLINE, flush).await;
}

async fn write_one<W: AsyncWrite + Unpin>(out: &mut W, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes).await?;
    out.flush().await
}

/// Why exthost answers `method` with "method not found": what it does not
/// offer, in words.
pub(crate) fn unsupported_reason(method: &str) -> String {
    let what = if method == "completion/complete" {
        "does not offer argument completion of prompts and resource templates"
    } else if method == "logging/setLevel" {
        "does not offer MCP logging: its own log goes to stderr or --log-file"
    } else if method.starts_with("tasks/") {
        "does not offer tasks: tool calls run as ordinary requests"
    } else {
        "does not know this method: it offers initialize, ping, tools/*, prompts/list, \
         prompts/get, resources/list, resources/templates/list, resources/read, \
         resources/subscribe and resources/unsubscribe"
    };
    format!("exthost serve {what} (method {method})")
}

impl<R> Transport<RoleServer> for LineTransport<R>
where
    R: AsyncRead + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // An answer frees its request's slot; a "method not found" answer
        // says why.
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(response.id.clone()),
            JsonRpcMessage::Error(error) => error.id.clone(),
            _ => None,
        };
        let method = answered.and_then(|id| {
            self.shared
                .outstanding
                .lock()
                .ok()
                .and_then(|mut o| o.remove(&id))
                .map(|o| o.method)
        });
        if let (JsonRpcMessage::Error(error), Some(method)) = (&mut item, method)
            && error.error.code == ErrorCode::METHOD_NOT_FOUND
        {
            error.error.message = unsupported_reason(&method).into();
            error.error.data = Some(json!({"code": "METHOD_NOT_OFFERED", "method": method}));
        }
        let bytes = serde_json::to_vec(&item).map(|mut bytes| {
            bytes.push(b'\n');
            bytes
        });
        let shared = self.shared.clone();
        async move {
            let bytes = bytes.map_err(std::io::Error::other)?;
            let closed =
                || std::io::Error::new(std::io::ErrorKind::NotConnected, "stdout is closed");
            let want = bytes.len().min(MAX_QUEUED_BYTES) as u32;
            let room = tokio::select! {
                room = shared.room.clone().acquire_many_owned(want) => room.map_err(|_| closed())?,
                () = shared.closed.cancelled() => return Err(closed()),
            };
            shared
                .queue
                .send(Queued { bytes, _room: room })
                .map_err(|_| closed())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let Some(slot) = Self::wait_for_room(self.shared.clone(), self.hangup).await else {
                self.end.set(
                    "the client hung up its input while not reading its output; its unread \
                     requests were dropped"
                        .to_owned(),
                );
                return None;
            };
            let line = match self.lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(LineError::Read(e)) => {
                    self.end.set(format!("reading stdin failed: {e}"));
                    return None;
                }
                Err(too_long) => {
                    self.end.set(too_long.describe("the client"));
                    return None;
                }
            };
            match Self::parse(&line) {
                Ok(Some(message)) => {
                    if let Ok(mut outstanding) = self.shared.outstanding.lock() {
                        match &message {
                            JsonRpcMessage::Request(request) => {
                                outstanding.insert(
                                    request.id.clone(),
                                    Outstanding {
                                        method: request.request.method().to_owned(),
                                        _slot: slot,
                                    },
                                );
                            }
                            JsonRpcMessage::Notification(notification) => {
                                // A cancelled request is never answered:
                                // its slot is free again.
                                if let rmcp::model::ClientNotification::CancelledNotification(
                                    cancelled,
                                ) = &notification.notification
                                    && let Some(id) = &cancelled.params.request_id
                                {
                                    outstanding.remove(id);
                                }
                            }
                            _ => {}
                        }
                    }
                    return Some(message);
                }
                Ok(None) => continue,
                Err(why) => {
                    self.end.set(why);
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.shared.closed.cancel();
        if let Some(writer) = self.writer.take() {
            // The writer flushes what is queued within its deadline; a
            // stdout nobody reads is abandoned, never waited on.
            let abort = writer.abort_handle();
            if tokio::time::timeout(CLOSE_FLUSH_DEADLINE + Duration::from_millis(500), writer)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exthost::process::lines::MAX_LINE_BYTES;

    type Stdio = LineTransport<tokio::io::Empty>;

    /// The framing itself is tested in `exthost::process::lines`.
    #[test]
    fn a_refused_line_names_the_client_and_an_unknown_notification_is_skipped() {
        let why = Stdio::parse(b"not json").unwrap_err();
        assert!(
            why.starts_with("the client sent a line that is not JSON"),
            "{why}"
        );
        assert!(matches!(
            Stdio::parse(br#"{"jsonrpc":"2.0","method":"vendor/thing","params":7}"#),
            Ok(None)
        ));
        assert!(matches!(
            Stdio::parse(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            Ok(Some(_))
        ));
    }

    #[tokio::test]
    async fn an_oversized_line_ends_the_session_with_a_fault() {
        let mut input = vec![b'x'; MAX_LINE_BYTES + 10];
        input.push(b'\n');
        let end = EndCell::default();
        let mut transport = LineTransport::new(
            std::io::Cursor::new(input),
            tokio::io::sink(),
            None,
            end.clone(),
        );
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
            None,
            end.clone(),
        );
        assert!(transport.receive().await.is_none());
        assert!(end.fault().is_none());
    }

    #[test]
    fn every_refused_method_gets_a_reason() {
        assert!(unsupported_reason("completion/complete").contains("argument completion"));
        assert!(unsupported_reason("logging/setLevel").contains("MCP logging"));
        assert!(unsupported_reason("vendor/x").contains("does not know this method"));
    }
}
