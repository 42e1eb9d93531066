//! Process extensions: a `tools/call` round trip through the
//! host (proxy tool, rmcp client session, our stdio transport) against the
//! same request written straight to the same child by a minimal blocking
//! line-based client.
//!
//! The fixture server is the `mcp-fixture` binary of `exthost-process-tests`;
//! build it first (release) or point `EXTHOST_MCP_FIXTURE` at it:
//!
//! ```text
//! cargo build --release -p exthost-process-tests --bin mcp-fixture
//! cargo bench --bench process -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use exthost::host::{ExtensionHost, HostOptions, InProcessFactories};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    if let Some(path) = std::env::var_os("EXTHOST_MCP_FIXTURE") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/process-<hash> -> target/<profile>/mcp-fixture
    let path = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|dir| dir.join("mcp-fixture"))
        .unwrap();
    assert!(
        path.is_file(),
        "{} is missing: run `cargo build --release -p exthost-process-tests --bin mcp-fixture` or set EXTHOST_MCP_FIXTURE",
        path.display()
    );
    path
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// The minimal client: blocking writes and line reads, nothing else.
struct Direct {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next_id: u64,
    line: String,
}

impl Direct {
    fn start(fixture: &PathBuf) -> Self {
        let mut child = Command::new(fixture)
            .arg("normal")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut direct = Direct {
            child,
            stdin,
            stdout,
            next_id: 1,
            line: String::new(),
        };
        direct.request(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}
        }}));
        writeln!(
            direct.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        direct
    }

    fn request(&mut self, message: Value) -> Value {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
        self.line.clear();
        self.stdout.read_line(&mut self.line).unwrap();
        serde_json::from_str(&self.line).unwrap()
    }

    fn call(&mut self) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let response = self.request(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": "bench"}}}));
        response["result"].clone()
    }
}

impl Drop for Direct {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn bench(c: &mut Criterion) {
    let fixture = fixture();
    let rt = runtime();
    let resources = tempfile::tempdir().unwrap();
    let extensions = tempfile::tempdir().unwrap();
    let folder = extensions.path().join("fx");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("extension.json"),
        json!({"id": "fx", "runtime": {"kind": "process", "command": fixture, "args": ["normal"]},
               "permissions": ["tools.register"]})
        .to_string(),
    )
    .unwrap();
    let loader = ResourceLoader::create([ResourceRoot::new("r", resources.path())]).unwrap();
    let host = ExtensionHost::new(HostOptions::new(loader)).unwrap();
    host.discover_manifest_dir(extensions.path(), &InProcessFactories::new())
        .unwrap();
    rt.block_on(host.activate("fx")).unwrap();
    let input = json!({"message": "bench"});
    let check = rt
        .block_on(host.call_tool("fx:echo", input.clone()))
        .unwrap();
    assert_eq!(check.as_text().as_deref(), Some("Echo: bench"));

    let mut direct = Direct::start(&fixture);
    assert_eq!(direct.call()["content"][0]["text"], "Echo: bench");

    let mut group = c.benchmark_group("process_tools_call");
    group.bench_function("through_host", |b| {
        b.iter(|| {
            black_box(
                rt.block_on(host.call_tool("fx:echo", input.clone()))
                    .unwrap(),
            )
        })
    });
    group.bench_function("direct_line_client", |b| {
        b.iter(|| black_box(direct.call()))
    });
    group.finish();
    rt.block_on(host.dispose()).unwrap();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = bench
}
criterion_main!(benches);
