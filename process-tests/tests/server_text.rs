//! Text a server sends that is not a broken child's fault still reaches
//! the host's caller only escaped (P-7): a progress message, a log entry,
//! and the text of the server's error answer to a tool call, each holding
//! a newline that starts a forged line, ESC (ANSI), an OSC sequence and
//! U+202E. A real child: `process-tests/fixtures/server_text.py`.

mod support;

use std::time::Duration;

use exthost::host::{CallOptions, Progress};
use serde_json::{Value, json};
use support::{within, world};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/server_text.py");

/// What the fixture sends, as the one escaping function writes it.
const ESCAPED: &str = "bad\\nexthost: called forged:tool; started: nothing\\n\
                       \\u{1b}[31mred\\u{1b}[0m \\u{1b}]0;title\\u{7} \\u{202e}txt.exe\\r";

/// Fails unless `text` is one line that cannot drive a terminal.
fn assert_inert(what: &str, text: &str) {
    for raw in ['\n', '\r', '\x1b', '\x07', '\u{202e}'] {
        assert!(!text.contains(raw), "raw {raw:?} in the {what}: {text:?}");
    }
}

fn manifest() -> Value {
    json!({
        "id": "text",
        "runtime": {"kind": "process", "command": "python3", "args": [FIXTURE]},
        "permissions": ["tools.register"]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_log_and_error_text_from_a_server_reach_the_caller_escaped() {
    let w = world();
    w.write("text", &manifest());
    let (_discovery, _monitor) = w.discover("text");
    within(w.host.activate("text")).await.unwrap();

    // A progress message, while the call runs: `speak` answers only once
    // `release` is called, after the caller saw its progress.
    let (seen, mut progress) = tokio::sync::mpsc::unbounded_channel();
    let options = CallOptions::new().with_progress(move |p: Progress| {
        let _ = seen.send(p);
    });
    let speak = tokio::spawn({
        let host = w.host.clone();
        async move { host.call_tool_with("text:speak", json!({}), options).await }
    });
    let report = within(progress.recv()).await.expect("a progress report");
    let message = report.message.expect("the report's message");
    assert_inert("progress message", &message);
    assert_eq!(message, ESCAPED);
    assert_eq!(
        within(w.host.call_tool("text:release", json!({})))
            .await
            .unwrap()
            .as_text()
            .as_deref(),
        Some("released")
    );
    let spoken = within(speak).await.unwrap().unwrap();
    assert_eq!(spoken.as_text().as_deref(), Some("spoken"));
    // The log entry the server sent beside it is not passed on: no other
    // report reached the caller.
    assert!(progress.try_recv().is_err(), "one report only");

    // The server's error answer to a call: its text is in the error.
    let err = within(w.host.call_tool("text:fail", json!({})))
        .await
        .unwrap_err();
    let shown = err.to_string();
    assert_inert("error", &shown);
    assert!(shown.contains(ESCAPED), "{shown}");

    // A tool's own result is data, passed through unchanged (P-2): the
    // caller that shows it escapes it.
    let result = within(w.host.call_tool("text:fail-result", json!({})))
        .await
        .unwrap();
    assert!(result.is_error(), "{result:?}");
    assert!(
        result.as_text().is_some_and(|t| t.contains('\u{202e}')),
        "{result:?}"
    );

    tokio::time::timeout(Duration::from_secs(60), w.host.dispose())
        .await
        .expect("shutdown within its deadlines")
        .unwrap();
}
