//! The process runtime restarts a child that exited, through the library
//! API alone: a real npm server (`@modelcontextprotocol/server-memory`,
//! installed by `scripts/install-test-servers`) killed by its pid is
//! started again by the next `call_tool`, which is answered (P-3,
//! docs/process.md "Restarting a child that exited").
#![cfg(feature = "process")]

use std::path::PathBuf;
use std::time::Duration;

use exthost::core::Status;
use exthost::host::{ExtensionHost, HostOptions, InProcessFactories};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::json;

/// Fails the test instead of hanging it.
async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the test wedged: a process extension step did not settle")
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let after = stat.rfind(')')?;
            stat[after + 2..].chars().next()
        })
        .is_some_and(|state| state != 'Z')
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_server_killed_by_pid_is_restarted_by_the_next_call() {
    let server = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("test-servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    assert!(
        server.is_file(),
        "{} is missing: run scripts/install-test-servers",
        server.display()
    );
    let folder = tempfile::tempdir().unwrap();
    let dir = folder.path().join("memory");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("extension.json"),
        json!({
            "id": "memory",
            "runtime": {"kind": "process", "command": "node", "args": [server],
                        "startupTimeoutMs": 20000, "shutdownTimeoutMs": 2000},
            "permissions": ["tools.register"]
        })
        .to_string(),
    )
    .unwrap();
    let resources = tempfile::tempdir().unwrap();
    let loader = ResourceLoader::create([ResourceRoot::new("test", resources.path())]).unwrap();
    let host = ExtensionHost::new(HostOptions::new(loader)).unwrap();
    let discovery = host
        .discover_manifest_dir(folder.path(), &InProcessFactories::new())
        .unwrap();
    let monitor = discovery.extensions[0].process().unwrap();
    within(host.activate("memory")).await.unwrap();
    within(host.call_tool("memory:read_graph", json!({})))
        .await
        .unwrap();
    assert!(monitor.running());
    let first = monitor.pid().unwrap();

    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // Once the runtime has noticed, the next call restarts it.
    within(async {
        while monitor.running() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(!alive(first));

    let out = within(host.call_tool("memory:read_graph", json!({})))
        .await
        .expect("the next call restarts the killed server");
    assert!(!out.is_error(), "{out:?}");
    let second = monitor.pid().unwrap();
    assert_ne!(second, first, "a fresh server");
    assert!(alive(second));
    assert!(monitor.running());
    assert_eq!(host.status("memory"), Some(Status::Active));

    within(host.dispose()).await.unwrap();
    assert!(!alive(second), "the restarted server is gone after dispose");
}
