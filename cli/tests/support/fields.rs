//! The fixture server of `filter.rs` and `tool_fields.rs`: it lists the
//! whole `tools.json` next to it (read again at each listing) and answers
//! calls; and [`Serve`], `exthost serve` driven by raw JSON-RPC lines.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use super::{BOUND, repo};

/// A minimal MCP stdio server: answers `initialize`, `ping`, `tools/list`
/// (from `tools.json` in its working directory, the extension's folder,
/// read at each listing) and `tools/call` (text "called <name>"). Its
/// arguments add behaviour: `resources` offers one subscribable resource,
/// `file:///note` (listing, subscribing, unsubscribing); `lingers` keeps
/// it running after its stdin closed, until a signal ends it.
const HANDLER: &str = r#"
RESOURCES = "resources" in sys.argv[1:]
def answer(method, params):
    if method == "initialize":
        capabilities = {"tools": {}}
        if RESOURCES:
            capabilities["resources"] = {"subscribe": True}
        return {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": capabilities,
                "serverInfo": {"name": "fields-fixture", "version": "1.0.0"}}
    if method == "tools/list":
        with open("tools.json") as f:
            return {"tools": json.load(f)}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "called " + params.get("name", "")}],
                "isError": False}
    if method == "ping":
        return {}
    if RESOURCES and method == "resources/list":
        return {"resources": [{"uri": "file:///note", "name": "note"}]}
    if RESOURCES and method == "resources/templates/list":
        return {"resourceTemplates": []}
    if RESOURCES and method in ("resources/subscribe", "resources/unsubscribe"):
        return {}
    return None
serve(answer)
if "lingers" in sys.argv[1:]:
    time.sleep(600)
"#;

/// Writes extension `id` into `dir/<id>/`: the fixture server, its tool
/// list, and a manifest with `extra` fields merged in.
pub fn server_extension(dir: &Path, id: &str, tools: &[Value], extra: Value) -> PathBuf {
    server_extension_with(dir, id, &[], tools, extra)
}

/// [`server_extension`] whose server runs with `args` (`resources`,
/// `lingers`: see the server's own description).
pub fn server_extension_with(
    dir: &Path,
    id: &str,
    args: &[&str],
    tools: &[Value],
    extra: Value,
) -> PathBuf {
    super::fixture::extension(dir, id, HANDLER, args, tools, extra)
}

/// Tools named `names`, each described "The <name> tool." with an object
/// input schema.
pub fn named_tools(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|name| {
            json!({"name": name, "description": format!("The {name} tool."),
                   "inputSchema": {"type": "object"}})
        })
        .collect()
}

/// The text of a call's first content block, or the whole answer when it
/// is not a successful result.
pub fn called(answer: &Value) -> String {
    match answer["result"]["content"][0]["text"].as_str() {
        Some(text) if answer["result"]["isError"] != json!(true) => text.to_owned(),
        _ => answer.to_string(),
    }
}

/// A folder for `serve`'s log and the path of the log in it.
pub fn log_file() -> (tempfile::TempDir, PathBuf) {
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("serve.log");
    (logs, log)
}

/// Polls the log until `needle` occurs at least `count` times (at most
/// [`BOUND`]); returns the log.
pub fn wait_for_log(log: &Path, needle: &str, count: usize) -> String {
    let deadline = std::time::Instant::now() + BOUND;
    loop {
        let text = fs::read_to_string(log).unwrap_or_default();
        if text.matches(needle).count() >= count {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{needle:?} did not appear {count} time(s) in the log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Changes what the server of the manifest `file` lists.
pub fn set_tools(file: &Path, tools: &[Value]) {
    fs::write(
        file.with_file_name("tools.json"),
        serde_json::to_string(tools).unwrap(),
    )
    .unwrap();
}

/// `exthost serve` driven by raw JSON-RPC lines; every answer awaited at
/// most [`BOUND`]; the child is killed when dropped.
pub struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    next_id: u64,
    /// Notifications read while waiting for answers, not taken yet.
    notifications: Vec<Value>,
    /// Answers read while waiting for another one.
    answers: Vec<Value>,
    /// The answer to `initialize`.
    pub initialized: Value,
}

impl Serve {
    /// The pid of the `serve` process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn start(dir: &Path, args: &[&str]) -> Self {
        let bin = assert_cmd::cargo::cargo_bin("exthost");
        let mut child = std::process::Command::new(bin)
            .arg("serve")
            .arg(dir)
            .args(args)
            .current_dir(repo())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("exthost serve starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && tx.send(value).is_err()
                {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut serve = Serve {
            child,
            stdin,
            lines,
            next_id: 0,
            notifications: Vec::new(),
            answers: Vec::new(),
            initialized: Value::Null,
        };
        serve.initialized = serve.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "tests", "version": "1"}}),
        );
        serve.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        serve
    }

    pub fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The whole answer (`result` or `error`) to one request.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.answer(id)
    }

    /// Sends a request without waiting for its answer; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The answer to request `id` sent earlier with [`Serve::send_request`]
    /// (answers of other requests read meanwhile are kept for them).
    pub fn answer(&mut self, id: u64) -> Value {
        if let Some(at) = self.answers.iter().position(|a| a["id"] == json!(id)) {
            return self.answers.remove(at);
        }
        loop {
            let message = self
                .lines
                .recv_timeout(BOUND)
                .expect("serve answers within the bound");
            if message.get("id") == Some(&json!(id)) {
                return message;
            }
            if message.get("id").is_none() {
                self.notifications.push(message);
            } else {
                self.answers.push(message);
            }
        }
    }

    /// Takes every notification `method` read so far, and those that
    /// arrive while waiting (at most `wait`) for at least one.
    pub fn take_notifications(&mut self, method: &str, wait: Duration) -> usize {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let before = self.notifications.len();
            self.notifications.retain(|n| n["method"] != method);
            let taken = before - self.notifications.len();
            if taken > 0 {
                return taken;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(message) if message.get("id").is_none() => self.notifications.push(message),
                Ok(message) => self.answers.push(message),
                Err(_) => return 0,
            }
        }
    }

    pub fn tools(&mut self) -> Vec<Value> {
        let answer = self.request("tools/list", json!({}));
        answer["result"]["tools"].as_array().unwrap().clone()
    }

    pub fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        // End of input ends serve; the kill bounds a wedged one.
        drop(self.stdin.take());
        for _ in 0..200 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
