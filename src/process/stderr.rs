//! P-1: the child's stderr, drained continuously (so a chatty child never
//! blocks on a full pipe) and kept as a bounded diagnostic.

use std::sync::{Arc, Mutex};

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// At most this many bytes of stderr are kept; the rest is only counted.
pub const MAX_STDERR_KEPT: usize = 64 * 1024;

/// What a child wrote to stderr: the first [`MAX_STDERR_KEPT`] bytes and
/// the total count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StderrDiagnostic {
    /// The first bytes written, at most [`MAX_STDERR_KEPT`].
    pub kept: Vec<u8>,
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
                    log.total_bytes = log.total_bytes.saturating_add(n as u64);
                }
            }
        }
    });
}
