//! `exthost serve` as an agent meets it (docs/performance.md):
//!
//! * `list_10_declared`: from spawning `exthost serve` in front of ten locked
//!   backends to its `tools/list` answer, against `start_all_10`: what an
//!   agent does today, spawning the ten backends and listing each;
//! * `first_call`: the first `tools/call` of a locked backend through
//!   serve (spawn, handshake, listing, the lock check, the call);
//! * `call_via_serve` against `call_direct`: one `tools/call` to a running
//!   backend through serve, and the same request written straight to the
//!   same kind of backend;
//! * `offered/list_nothing_started`: `prompts/list`, `resources/list` and
//!   `resources/templates/list` of a running serve in front of a locked
//!   `@modelcontextprotocol/server-everything` that is not started;
//!   `offered/cold_prompt_get`: its first `prompts/get` (spawn, handshake,
//!   the listings, the lock check, the get); `offered/read_via_serve`
//!   against `offered/read_direct`: one `resources/read` of a static
//!   resource of the running server, through serve and straight to the same
//!   server. Needs `scripts/install-test-servers`.
//!
//! The backend is the `mcp-fixture` binary of `exthost-process-tests` (a
//! fast Rust server, so the ratio is serve's overhead at its largest);
//! build it first (release) or point `EXTHOST_MCP_FIXTURE` at it:
//!
//! ```text
//! cargo build --release -p exthost-process-tests --bin mcp-fixture
//! cargo bench -p exthost-cli --bench serve -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn fixture() -> PathBuf {
    if let Some(path) = std::env::var_os("EXTHOST_MCP_FIXTURE") {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap();
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

/// A line-based JSON-RPC peer over a child's stdio.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next: u64,
}

impl Peer {
    fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            stdout,
            next: 1,
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the peer closed its stdout"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                assert!(message.get("error").is_none(), "{message}");
                return message;
            }
        }
    }

    fn initialize(&mut self) {
        self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "1"}}),
        );
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        self.stdin.flush().unwrap();
    }

    fn close(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// A folder of `n` locked fixture backends `fx0`..
fn folder(n: usize) -> tempfile::TempDir {
    let command = fixture().to_str().unwrap().to_owned();
    locked(
        (0..n)
            .map(|i| {
                json!({"id": format!("fx{i}"), "runtime": {"kind": "process",
                       "command": command, "args": ["normal"]}})
            })
            .collect(),
    )
}

/// A folder with one extension per manifest (its folder named after its
/// id), locked with `exthost lock`.
fn locked(manifests: Vec<Value>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for manifest in manifests {
        let ext = dir.path().join(manifest["id"].as_str().unwrap());
        std::fs::create_dir_all(&ext).unwrap();
        std::fs::write(ext.join("extension.json"), manifest.to_string()).unwrap();
    }
    let status = Command::new(env!("CARGO_BIN_EXE_exthost"))
        .arg("lock")
        .arg(dir.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "exthost lock");
    dir
}

fn serve(dir: &Path) -> Peer {
    Peer::spawn(
        Command::new(env!("CARGO_BIN_EXE_exthost"))
            .arg("serve")
            .arg(dir),
    )
}

fn echo(peer: &mut Peer, name: &str) -> Value {
    peer.request(
        "tools/call",
        json!({"name": name, "arguments": {"message": "hi"}}),
    )
}

fn bench(c: &mut Criterion) {
    let ten = folder(10);
    let mut group = c.benchmark_group("serve");
    group.sample_size(10);
    group.bench_function("list_10_declared", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let mut peer = serve(ten.path());
                peer.initialize();
                let listed = peer.request("tools/list", json!({}));
                total += start.elapsed();
                black_box(listed);
                peer.close();
            }
            total
        });
    });
    group.bench_function("start_all_10", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let mut peers: Vec<Peer> = (0..10)
                    .map(|_| Peer::spawn(Command::new(fixture()).arg("normal")))
                    .collect();
                for peer in &mut peers {
                    peer.initialize();
                }
                for peer in &mut peers {
                    black_box(peer.request("tools/list", json!({})));
                }
                total += start.elapsed();
                for peer in peers {
                    peer.close();
                }
            }
            total
        });
    });
    group.bench_function("first_call", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut peer = serve(ten.path());
                peer.initialize();
                peer.request("tools/list", json!({}));
                let start = Instant::now();
                black_box(echo(&mut peer, "fx0_echo"));
                total += start.elapsed();
                peer.close();
            }
            total
        });
    });
    group.finish();

    let one = folder(1);
    let mut group = c.benchmark_group("call");
    let mut via = serve(one.path());
    via.initialize();
    echo(&mut via, "fx0_echo");
    group.bench_function("call_via_serve", |b| {
        b.iter(|| black_box(echo(&mut via, "fx0_echo")))
    });
    let mut direct = Peer::spawn(Command::new(fixture()).arg("normal"));
    direct.initialize();
    group.bench_function("call_direct", |b| {
        b.iter(|| black_box(echo(&mut direct, "echo")))
    });
    group.finish();
    via.close();
    direct.close();
}

/// server-everything's entry point, installed by
/// `scripts/install-test-servers`.
fn everything_entry() -> PathBuf {
    let entry = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../test-servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.is_file(),
        "{} is missing: run scripts/install-test-servers",
        entry.display()
    );
    entry
}

/// A folder with server-everything, locked.
fn everything() -> tempfile::TempDir {
    let entry = everything_entry();
    locked(vec![
        json!({"id": "everything", "runtime": {"kind": "process", "command": "node",
        "args": [entry.to_str().unwrap(), "stdio"], "startupTimeoutMs": 30000}}),
    ])
}

fn offered(c: &mut Criterion) {
    let dir = everything();
    let mut group = c.benchmark_group("offered");
    group.sample_size(10);
    let mut peer = serve(dir.path());
    peer.initialize();
    group.bench_function("list_nothing_started", |b| {
        b.iter(|| {
            black_box(peer.request("prompts/list", json!({})));
            black_box(peer.request("resources/list", json!({})));
            black_box(peer.request("resources/templates/list", json!({})))
        })
    });
    peer.close();
    group.bench_function("cold_prompt_get", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut peer = serve(dir.path());
                peer.initialize();
                let start = Instant::now();
                let got = peer.request("prompts/get", json!({"name": "everything_simple-prompt"}));
                total += start.elapsed();
                assert!(got["result"].get("messages").is_some(), "{got}");
                peer.close();
            }
            total
        });
    });

    // Warm reads: the server already runs, through serve and directly.
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("everything/extension.json")).unwrap(),
    )
    .unwrap();
    let uri = manifest["deferred"]["resources"][0]["uri"]
        .as_str()
        .expect("a pinned static resource")
        .to_owned();
    let read = |peer: &mut Peer, uri: &str| {
        let answer = peer.request("resources/read", json!({"uri": uri}));
        assert!(answer["result"].get("contents").is_some(), "{answer}");
        answer
    };
    let mut via = serve(dir.path());
    via.initialize();
    let namespaced = format!("exthost://everything/{uri}");
    read(&mut via, &namespaced);
    group.bench_function("read_via_serve", |b| {
        b.iter(|| black_box(read(&mut via, &namespaced)))
    });
    let mut direct = Peer::spawn(Command::new("node").arg(everything_entry()).arg("stdio"));
    direct.initialize();
    read(&mut direct, &uri);
    group.bench_function("read_direct", |b| {
        b.iter(|| black_box(read(&mut direct, &uri)))
    });
    group.finish();
    via.close();
    direct.close();
}

criterion_group!(benches, bench, offered);
criterion_main!(benches);
