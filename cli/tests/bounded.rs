//! `exthost serve` stays bounded under any client, measured: serve's own
//! peak resident set (`VmHWM` of `/proc/<pid>/status`) against its
//! resident set once initialized, with a client that never reads its
//! output (200,000 `tools/list` requests), with 20,000 calls to a backend
//! that never answers, and with a backend that floods requests with 1 MiB
//! ids and never reads; and closing stdin ends serve even while its stdout
//! is blocked. Real processes only: the real binary, real folders, the
//! Python fixture `tests/fixtures/mini.py`. Every wait is bounded, so a
//! wedge fails the test; nothing asserts a duration.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The most any wait here may take.
const BOUND: Duration = Duration::from_secs(120);
/// The bound on serve's growth above its baseline.
const GROWTH_LIMIT_KB: u64 = 64 * 1024;
/// The bound on serve's growth while a backend floods 1 MiB ids.
const FLOOD_LIMIT_KB: u64 = 32 * 1024;

const INIT: &str = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 on PATH");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    })
}

/// A folder with the extension `mini` running the fixture in `mode`,
/// locked (so `tools/list` starts nothing).
fn mini_folder(mode: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ext = dir.path().join("mini");
    std::fs::create_dir(&ext).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mini.py");
    std::fs::write(
        ext.join("extension.json"),
        json!({
            "id": "mini",
            "runtime": {"kind": "process", "command": python(), "args": [script, mode],
                        "shutdownTimeoutMs": 2000},
            "permissions": ["tools.register"]
        })
        .to_string(),
    )
    .unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_exthost"))
        .arg("lock")
        .arg(dir.path())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "exthost lock failed");
    dir
}

/// A `/proc/<pid>/status` field in kB.
fn status_kb(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("serve is alive");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {status}"))
}

/// serve, its stdin and stdout piped, its log in `log`.
fn serve(dir: &Path, log: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_exthost"))
        .arg("serve")
        .arg(dir)
        .arg("--log-file")
        .arg(log)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits for `child` to exit, killing it and failing past [`BOUND`].
fn wait_bounded(child: &mut Child, what: &str, log: &Path) -> Option<i32> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        if start.elapsed() > BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what}: serve did not exit within {BOUND:?}; its log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads lines from serve's stdout until `stop` says so, bounded.
fn read_until(
    out: &mut BufReader<std::process::ChildStdout>,
    mut stop: impl FnMut(&Value) -> bool,
) {
    let mut line = String::new();
    loop {
        line.clear();
        let n = out.read_line(&mut line).expect("serve's stdout");
        assert!(n > 0, "serve closed its stdout early");
        let value: Value = serde_json::from_str(&line).expect("JSON-RPC on stdout");
        if stop(&value) {
            return;
        }
    }
}

/// Initializes, lists once, and returns serve's resident set then (kB):
/// the baseline.
fn initialize(child: &mut Child, out: &mut BufReader<std::process::ChildStdout>) -> u64 {
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "{INIT}\n{INITIALIZED}").unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":"list","method":"tools/list"}}"#
    )
    .unwrap();
    stdin.flush().unwrap();
    read_until(out, |v| v["id"] == "list");
    status_kb(child.id(), "VmRSS:")
}

#[test]
fn a_client_that_never_reads_stops_being_read_and_closing_stdin_still_ends_serve() {
    // Locked declarations of 15 real tools, listed from the lock: nothing
    // starts, and each answer is about 6.6 KB.
    let dir = repo().join("examples/gateway");
    let temp = tempfile::tempdir().unwrap();
    let log = temp.path().join("serve.log");
    let mut child = serve(&dir, &log, &[]);
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let baseline = initialize(&mut child, &mut out);

    // 200,000 requests, written without blocking; nobody reads stdout.
    let stdin: OwnedFd = child.stdin.take().unwrap().into();
    let flags = rustix::fs::fcntl_getfl(&stdin).unwrap();
    rustix::fs::fcntl_setfl(&stdin, flags | rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut stdin = std::fs::File::from(stdin);
    let requests: Vec<u8> = (0..200_000)
        .flat_map(|i| {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/list\"}}\n").into_bytes()
        })
        .collect();
    let mut written = 0;
    let mut last_progress = Instant::now();
    let start = Instant::now();
    // Until everything is written (serve reads without bound: the bug) or
    // serve has read nothing for 3 s (it holds back: the fix).
    while written < requests.len() && last_progress.elapsed() < Duration::from_secs(3) {
        assert!(start.elapsed() < BOUND, "writing did not settle");
        match stdin.write(&requests[written..]) {
            Ok(n) => {
                written += n;
                last_progress = Instant::now();
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("writing to serve failed: {e}"),
        }
        assert!(
            status_kb(pid, "VmHWM:") < baseline + GROWTH_LIMIT_KB,
            "serve grew past 64 MB above its baseline of {baseline} kB after {written} bytes"
        );
    }
    let peak = status_kb(pid, "VmHWM:");
    eprintln!(
        "never-reading client: baseline {baseline} kB, peak {peak} kB (+{} kB), \
         {written} of {} bytes of requests accepted",
        peak - baseline,
        requests.len()
    );
    assert!(
        peak < baseline + GROWTH_LIMIT_KB,
        "peak {peak} kB, baseline {baseline} kB"
    );
    assert!(
        written < requests.len(),
        "serve read every request although its output was blocked"
    );

    // End of input while stdout is still blocked: serve ends.
    drop(stdin);
    let code = wait_bounded(&mut child, "after stdin closed", &log);
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(code, Some(1), "{logged}");
    assert!(logged.contains("hung up its input"), "{logged}");
    assert!(logged.contains("every extension was shut down"), "{logged}");
    drop(out);
}

#[test]
fn twenty_thousand_calls_to_a_hung_backend_stay_bounded_and_shutdown_logs_a_count() {
    let dir = mini_folder("serve");
    let log = dir.path().join("serve.log");
    let mut child = serve(dir.path(), &log, &[]);
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let baseline = initialize(&mut child, &mut out);

    // A reader that counts the refusals (and fails on anything else).
    let refused = Arc::new(AtomicUsize::new(0));
    let counted = refused.clone();
    let reader = std::thread::spawn(move || {
        let mut line = String::new();
        let mut other = Vec::new();
        while out.read_line(&mut line).unwrap_or(0) > 0 {
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["error"]["code"] == -32030
                && v["error"]["data"]["code"] == "TOO_MANY_CALLS_IN_FLIGHT"
            {
                counted.fetch_add(1, Ordering::AcqRel);
            } else {
                other.push(v);
            }
            line.clear();
        }
        other
    });
    let mut stdin = child.stdin.take().unwrap();
    for i in 0..20_000 {
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"mini_hang","arguments":{{}}}}}}"#
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    // 128 calls hang in flight; every other one is refused at once.
    let start = Instant::now();
    while refused.load(Ordering::Acquire) < 20_000 - 128 {
        assert!(
            start.elapsed() < BOUND,
            "only {} refusals",
            refused.load(Ordering::Acquire)
        );
        assert!(status_kb(pid, "VmHWM:") < baseline + GROWTH_LIMIT_KB);
        std::thread::sleep(Duration::from_millis(20));
    }
    let peak = status_kb(pid, "VmHWM:");
    eprintln!(
        "20,000 calls to a hung backend: baseline {baseline} kB, peak {peak} kB (+{} kB), {} refused",
        peak - baseline,
        refused.load(Ordering::Acquire)
    );
    assert!(
        peak < baseline + GROWTH_LIMIT_KB,
        "peak {peak} kB, baseline {baseline} kB"
    );
    assert_eq!(refused.load(Ordering::Acquire), 20_000 - 128);

    drop(stdin);
    let code = wait_bounded(&mut child, "after stdin closed", &log);
    let other = reader.join().unwrap();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert_eq!(code, Some(0), "{logged}");
    assert!(
        logged.contains("128 tool call(s) ended unanswered"),
        "one count for the calls cut off: {logged}"
    );
    assert!(
        logged.lines().count() < 20,
        "no line per abandoned call: {} lines",
        logged.lines().count()
    );
    assert!(
        other.iter().all(|v| v["id"] == "list"
            || v["id"] == "init"
            || v.get("error").is_none()
            || v["id"].is_number()),
        "{other:?}"
    );
}

#[test]
fn a_backend_flooding_1_mib_ids_without_reading_stays_bounded() {
    let dir = mini_folder("flood");
    let log = dir.path().join("serve.log");
    let mut child = serve(dir.path(), &log, &[]);
    let pid = child.id();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let baseline = initialize(&mut child, &mut out);
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":"flood","method":"tools/call","params":{{"name":"mini_flood","arguments":{{}}}}}}"#
    )
    .unwrap();
    stdin.flush().unwrap();
    let mut answer = Value::Null;
    read_until(&mut out, |v| {
        answer = v.clone();
        v["id"] == "flood"
    });
    let peak = status_kb(pid, "VmHWM:");
    eprintln!(
        "1 MiB ids from a backend that never reads: baseline {baseline} kB, peak {peak} kB (+{} kB)",
        peak - baseline
    );
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["cause"], "EXTENSION_PROTOCOL_ERROR",
        "{answer}"
    );
    // Tighter than the 64 MB bound: at most 4 MiB of answers wait for the
    // child (MAX_SERVER_ANSWER_BYTES), plus the line being read; a count
    // alone (16 answers and 64 queued refusals of 1 MiB each) reaches
    // about 60 MB here.
    assert!(
        peak < baseline + FLOOD_LIMIT_KB,
        "peak {peak} kB, baseline {baseline} kB"
    );
    drop(child.stdin.take());
    let code = wait_bounded(&mut child, "after stdin closed", &log);
    assert_eq!(code, Some(0), "{}", std::fs::read_to_string(&log).unwrap());
}

#[test]
fn an_unsupported_method_is_refused_with_the_reason() {
    let dir = mini_folder("serve");
    let log = dir.path().join("serve.log");
    let mut child = serve(dir.path(), &log, &[]);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    initialize(&mut child, &mut out);
    let stdin = child.stdin.as_mut().unwrap();
    for (id, method) in [
        (1, "completion/complete"),
        (2, "logging/setLevel"),
        (3, "vendor/thing"),
    ] {
        let params = if method == "completion/complete" {
            json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}})
        } else if method == "logging/setLevel" {
            json!({"level": "info"})
        } else {
            json!({})
        };
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    let mut answers = Vec::new();
    read_until(&mut out, |v| {
        answers.push(v.clone());
        answers.len() == 3
    });
    for answer in &answers {
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        assert_eq!(
            answer["error"]["data"]["code"], "METHOD_NOT_OFFERED",
            "{answer}"
        );
    }
    let message = |id: i64| {
        answers.iter().find(|a| a["id"] == id).unwrap()["error"]["message"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(
        message(1).contains("exthost serve does not offer argument completion"),
        "{}",
        message(1)
    );
    assert!(
        message(2).contains("exthost serve does not offer MCP logging"),
        "{}",
        message(2)
    );
    assert!(
        message(3).contains("does not know this method"),
        "{}",
        message(3)
    );
    drop(child.stdin.take());
    assert_eq!(wait_bounded(&mut child, "end", &log), Some(0));
}
