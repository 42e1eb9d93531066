//! A tiny hand-written MCP stdio server for the process-extension tests.
//!
//! `mcp-fixture <mode> [set]`, where `set` is the tool set it starts
//! with (`initial` by default, see `tool_set`); modes:
//!
//! * `normal`: a well-behaved server with tools `echo`, `add`, `env`,
//!   `events`, `crash`, `hang`, `grandchild`, `change` (switches its tool
//!   list and announces it), `block`/`release` (a call held until
//!   released), `stats` (its pid, listing count and the resources
//!   subscribed to with `resources/subscribe`, which it accepts for any
//!   URI, and how many `notifications/cancelled` it got); its listing
//!   comes in two `nextCursor` pages;
//! * `exit-on-init`: exits (status 3) when `initialize` arrives;
//! * `hang-on-init`: never answers `initialize`;
//! * `garbage`: answers `initialize` with a line that is not JSON;
//! * `long-line`: answers `initialize` with a 2 MiB line;
//! * `stderr-flood`: writes 1 MiB to stderr before each answer, otherwise
//!   normal;
//! * `stubborn`: normal, but ignores stdin closing (keeps running; run it
//!   under `sh -c "trap '' TERM; exec ..."` to ignore SIGTERM too);
//! * `sleeper`: sleeps for ten minutes (the grandchild of `grandchild`).
#![forbid(unsafe_code)]

use std::io::{BufRead, Write};
use std::time::Duration;

use serde_json::{Value, json};

use exthost_process_tests::tool_set;

fn text_result(text: impl Into<String>, structured: Option<Value>) -> Value {
    let mut result = json!({"content": [{"type": "text", "text": text.into()}], "isError": false});
    if let Some(s) = structured {
        result["structuredContent"] = s;
    }
    result
}

struct Server {
    mode: String,
    events: Vec<Value>,
    set: String,
    listings: u64,
    blocked: Vec<Value>,
    /// The URIs of `resources/subscribe`, less those unsubscribed.
    subscribed: Vec<String>,
    /// How many `notifications/cancelled` arrived.
    cancelled: u64,
    children: Vec<std::process::Child>,
}

impl Server {
    fn send(&self, out: &mut impl Write, message: &Value) {
        if self.mode == "stderr-flood" {
            let chunk = vec![b'e'; 64 * 1024];
            let mut err = std::io::stderr();
            for _ in 0..16 {
                let _ = err.write_all(&chunk);
            }
        }
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }

    fn handle(&mut self, out: &mut impl Write, message: Value) {
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let Some(id) = id else {
            if method == "exthost/event" {
                self.events.push(params);
            } else if method == "notifications/cancelled" {
                self.cancelled += 1;
            }
            return;
        };
        let result = match method {
            "initialize" => {
                match self.mode.as_str() {
                    "exit-on-init" => std::process::exit(3),
                    "hang-on-init" => loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    },
                    "garbage" => {
                        let _ = writeln!(out, "this is not JSON at all");
                        let _ = out.flush();
                        return;
                    }
                    "long-line" => {
                        let line = "x".repeat(2 * 1024 * 1024);
                        let _ = writeln!(out, "{line}");
                        let _ = out.flush();
                        return;
                    }
                    _ => {}
                }
                let version = params
                    .get("protocolVersion")
                    .cloned()
                    .unwrap_or(json!("2025-06-18"));
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "mcp-fixture", "version": "0.0.0"}
                })
            }
            "ping" => json!({}),
            "resources/subscribe" | "resources/unsubscribe" => {
                let uri = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                self.subscribed.retain(|u| u != uri);
                if method == "resources/subscribe" {
                    self.subscribed.push(uri.to_owned());
                }
                json!({})
            }
            "tools/list" => {
                let all = tool_set(&self.set);
                let half = all.len() / 2;
                if params.get("cursor").and_then(Value::as_str) == Some("page-2") {
                    json!({"tools": all[half..]})
                } else {
                    self.listings += 1;
                    json!({"tools": all[..half], "nextCursor": "page-2"})
                }
            }
            "tools/call" => {
                let name = params
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let args = params.get("arguments").cloned().unwrap_or(json!({}));
                match name {
                    "echo" => text_result(
                        format!(
                            "Echo: {}",
                            args.get("message")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                        ),
                        None,
                    ),
                    "add" => {
                        let a = args.get("a").and_then(Value::as_f64).unwrap_or(0.0);
                        let b = args.get("b").and_then(Value::as_f64).unwrap_or(0.0);
                        text_result(format!("{}", a + b), Some(json!({"sum": a + b})))
                    }
                    "env" => {
                        let env: serde_json::Map<String, Value> = std::env::vars()
                            .map(|(k, v)| (k, Value::String(v)))
                            .collect();
                        text_result(
                            Value::Object(env.clone()).to_string(),
                            Some(Value::Object(env)),
                        )
                    }
                    "events" => text_result(
                        Value::Array(self.events.clone()).to_string(),
                        Some(json!({"events": self.events})),
                    ),
                    "crash" => std::process::exit(7),
                    "hang" => return,
                    "grandchild" => {
                        let me = std::env::current_exe().unwrap_or_default();
                        match std::process::Command::new(me).arg("sleeper").spawn() {
                            Ok(child) => {
                                let pid = child.id();
                                self.children.push(child);
                                text_result(pid.to_string(), Some(json!({"pid": pid})))
                            }
                            Err(e) => {
                                json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true})
                            }
                        }
                    }
                    "change" => {
                        if let Some(set) = args.get("set").and_then(Value::as_str) {
                            set.clone_into(&mut self.set);
                        } else if args.get("valid").and_then(Value::as_bool) == Some(false) {
                            self.set = "extra".to_owned();
                        }
                        let times = args.get("times").and_then(Value::as_u64).unwrap_or(1);
                        let note =
                            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                        for _ in 0..times {
                            self.send(out, &note);
                        }
                        text_result("announced", None)
                    }
                    "block" => {
                        self.blocked.push(id);
                        return;
                    }
                    "release" => {
                        for blocked in std::mem::take(&mut self.blocked) {
                            let answer = json!({"jsonrpc": "2.0", "id": blocked, "result": text_result("released", None)});
                            self.send(out, &answer);
                        }
                        text_result("released", None)
                    }
                    "stats" => text_result(
                        "stats",
                        Some(
                            json!({"pid": std::process::id(), "listings": self.listings, "blocked": self.blocked.len(), "subscribed": self.subscribed, "cancelled": self.cancelled}),
                        ),
                    ),
                    other => {
                        let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32602, "message": format!("unknown tool {other}")}});
                        self.send(out, &error);
                        return;
                    }
                }
            }
            _ => {
                let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}});
                self.send(out, &error);
                return;
            }
        };
        self.send(out, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }
}

fn main() {
    let mode = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "normal".to_owned());
    if mode == "sleeper" {
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    let mut server = Server {
        mode,
        events: Vec::new(),
        set: std::env::args()
            .nth(2)
            .unwrap_or_else(|| "initial".to_owned()),
        listings: 0,
        blocked: Vec::new(),
        subscribed: Vec::new(),
        cancelled: 0,
        children: Vec::new(),
    };
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(message) => server.handle(&mut out, message),
            Err(_) => continue,
        }
    }
    // stdin closed. The grandchild (if any) is deliberately left running.
    if server.mode == "stubborn" {
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    std::mem::forget(server.children);
}
