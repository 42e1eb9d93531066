//! P-1: the child's stderr, drained continuously (so a chatty child never
//! blocks on a full pipe) and kept as a bounded diagnostic.

use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// At most this many bytes of stderr are kept; the rest is only counted.
pub const MAX_STDERR_KEPT: usize = 64 * 1024;

/// The last this many bytes of stderr are kept too: a failed start quotes
/// them (escaped), since a program's hint about why it failed comes last.
pub const STDERR_TAIL_BYTES: usize = 2 * 1024;

/// What a child wrote to stderr: the first [`MAX_STDERR_KEPT`] bytes, the
/// last [`STDERR_TAIL_BYTES`] and the total count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StderrDiagnostic {
    /// The first bytes written, at most [`MAX_STDERR_KEPT`].
    pub kept: Vec<u8>,
    /// The last bytes written, at most [`STDERR_TAIL_BYTES`].
    pub tail: Vec<u8>,
    /// Every byte written, kept or not.
    pub total_bytes: u64,
}

impl StderrDiagnostic {
    /// True when bytes were written beyond what is kept.
    pub fn truncated(&self) -> bool {
        self.total_bytes > self.kept.len() as u64
    }

    /// The kept bytes as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.kept).into_owned()
    }
}

/// Drains `stderr` into `sink` until the child closes it.
pub(crate) fn capture(mut stderr: ChildStderr, sink: Arc<Mutex<StderrDiagnostic>>) {
    tokio::spawn(async move {
        let mut buffer = vec![0u8; 8192];
        loop {
            match stderr.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let Ok(mut log) = sink.lock() else { break };
                    let room = MAX_STDERR_KEPT.saturating_sub(log.kept.len());
                    let keep = room.min(n);
                    log.kept.extend_from_slice(&buffer[..keep]);
                    push_tail(&mut log.tail, &buffer[..n]);
                    log.total_bytes = log.total_bytes.saturating_add(n as u64);
                }
            }
        }
    });
}

/// Appends `bytes` to `tail`, keeping only the last [`STDERR_TAIL_BYTES`].
fn push_tail(tail: &mut Vec<u8>, bytes: &[u8]) {
    let bytes = &bytes[bytes.len().saturating_sub(STDERR_TAIL_BYTES)..];
    let over = (tail.len() + bytes.len()).saturating_sub(STDERR_TAIL_BYTES);
    tail.drain(..over);
    tail.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_bytes_whatever_the_chunks() {
        let mut tail = Vec::new();
        let all: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        for chunk in all.chunks(777) {
            push_tail(&mut tail, chunk);
        }
        assert_eq!(tail, all[all.len() - STDERR_TAIL_BYTES..]);
        let mut short = Vec::new();
        push_tail(&mut short, b"abc");
        push_tail(&mut short, b"de");
        assert_eq!(short, b"abcde");
    }
}
