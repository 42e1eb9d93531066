//! `serve`'s log: one line per event, to stderr or `--log-file`, never to
//! stdout (stdout carries the MCP messages). Text from extensions and
//! backends is escaped before it is written, so it cannot forge lines or
//! drive the terminal.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Where log lines go. Clones share the sink.
#[derive(Clone)]
pub(crate) struct Log(Arc<Mutex<Box<dyn Write + Send>>>);

impl Log {
    /// Lines to the process's stderr.
    pub(crate) fn stderr() -> Self {
        Self(Arc::new(Mutex::new(Box::new(std::io::stderr()))))
    }

    /// Lines appended to `path`.
    pub(crate) fn file(path: &std::path::Path) -> std::io::Result<Self> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Self(Arc::new(Mutex::new(Box::new(file)))))
    }

    /// Writes `exthost serve: <text>`, with `text` escaped by the one
    /// escaping function for what servers send
    /// ([`exthost::process::escape_text`], P-7): no control,
    /// format or bidirectional character reaches the log.
    pub(crate) fn line(&self, text: &str) {
        let escaped = exthost::process::escape_text(text);
        if let Ok(mut out) = self.0.lock() {
            let _ = writeln!(out, "exthost serve: {escaped}");
            let _ = out.flush();
        }
    }
}
