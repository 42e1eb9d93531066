//! `serve`'s log: one line per event, to stderr or `--log-file`, never to
//! stdout (stdout carries the MCP messages). Text from extensions and
//! backends is escaped before it is written, so it cannot forge lines or
//! drive the terminal. The library's own warnings and errors (its
//! `tracing` events) reach the same log ([`Log::take_library_warnings`]).

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

    /// Makes this log the process's `tracing` subscriber for the exthost
    /// library's warnings and errors ([`library_warnings`]). When the
    /// process already has a subscriber, nothing changes.
    pub(crate) fn take_library_warnings(&self) {
        use tracing_subscriber::layer::SubscriberExt;
        let subscriber = tracing_subscriber::registry().with(library_warnings(self.clone()));
        let _ = tracing::subscriber::set_global_default(subscriber);
    }
}

/// A `tracing` layer writing each warning or error of the exthost library
/// (targets `exthost...`) to `log` as one line, `warning: <message>
/// (field=value, ...)`, escaped like every other line. Events below
/// warnings are not recorded, and neither are other crates' (rmcp warns of
/// every error answer, which a hostile client can make by the thousand).
fn library_warnings<S>(log: Log) -> impl tracing_subscriber::Layer<S>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer;
    let library = tracing_subscriber::filter::Targets::new()
        .with_target("exthost", tracing::level_filters::LevelFilter::WARN);
    Warnings(log).with_filter(library)
}

/// The layer of [`library_warnings`], before its filter.
struct Warnings(Log);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        self.0.line(&event_line(event));
    }
}

/// `warning: <message> (field=value, ...)` (or `error: ...`).
fn event_line(event: &tracing::Event<'_>) -> String {
    let mut fields = Fields::default();
    event.record(&mut fields);
    let level = if *event.metadata().level() == tracing::Level::ERROR {
        "error"
    } else {
        "warning"
    };
    if fields.rest.is_empty() {
        format!("{level}: {}", fields.message)
    } else {
        format!("{level}: {} ({})", fields.message, fields.rest.join(", "))
    }
}

/// An event's message and its other fields, in the order recorded.
#[derive(Default)]
struct Fields {
    message: String,
    rest: Vec<String>,
}

impl Fields {
    fn record(&mut self, field: &tracing::field::Field, value: String) {
        if field.name() == "message" {
            self.message = value;
        } else {
            self.rest.push(format!("{}={value}", field.name()));
        }
    }
}

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.record(field, format!("{value:?}"));
    }

    // Unquoted, unlike the `Debug` form of a string.
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.record(field, value.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A sink the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_librarys_warnings_and_errors_become_escaped_lines_and_the_rest_is_dropped() {
        use tracing_subscriber::layer::SubscriberExt;
        let sink = Shared::default();
        let log = Log(Arc::new(Mutex::new(Box::new(sink.clone()))));
        let subscriber = tracing_subscriber::registry().with(library_warnings(log));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(target: "exthost::process", extension = "alpha", "not recorded");
            tracing::warn!(target: "rmcp::service", "another crate's warning, not recorded");
            tracing::warn!(target: "exthost::process::client", extension = %"al\u{1b}]0;pha", pid = 7, "a child \u{202e}outlived its stdin");
            tracing::error!(target: "exthost", "no fields");
        });
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("exthost serve: warning: a child ")
                && lines[0].contains("outlived its stdin (extension=al")
                && lines[0].ends_with(", pid=7)"),
            "{text}"
        );
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{202e}'),
            "{text:?}"
        );
        assert_eq!(lines[1], "exthost serve: error: no fields");
    }
}
