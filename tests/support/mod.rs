//! A scripted extension for the host tests: it does what the test says and
//! writes every step it takes into a shared log. Every host the support
//! builds records its run, and the run is trace-checked against the core
//! when the test ends ([`Checked`]).
#![allow(dead_code)]

pub mod capture;
pub mod trace_check;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use exthost::host::{
    ActivationContext, BoxFuture, Extension, ExtensionDefinition, ExtensionError, ExtensionHost,
    HostOptions, Recorder, ToolDescriptor,
};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::{Value, json};

/// A shared, ordered log of what extension code did.
#[derive(Clone, Default, Debug)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, entry: impl Into<String>) {
        self.0.lock().unwrap().push(entry.into());
    }
    pub fn entries(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
    pub fn count(&self, entry: &str) -> usize {
        self.entries().iter().filter(|e| *e == entry).count()
    }
    /// Waits, polling every millisecond on the runtime's clock, until
    /// `done` holds for the log. Unbounded: the caller bounds it.
    pub async fn until(&self, done: impl Fn(&Log) -> bool) {
        while !done(self) {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}

/// How `activate` ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    Succeed,
    Fail(&'static str),
    Panic(&'static str),
    /// Waits for the cancellation signal, then returns `Ok` (the host must
    /// still roll back: it was cancelled).
    AwaitCancel,
    /// Never settles on its own.
    Hang,
    /// Waits this long on the runtime's clock, logs `{id}:activated`, then
    /// returns `Ok`.
    SucceedAfter(std::time::Duration),
}

/// What a scripted extension does.
#[derive(Clone)]
pub struct Script {
    pub id: String,
    pub log: Log,
    pub factory_fails: Option<&'static str>,
    pub factory_panics: bool,
    /// Fail the factory on this many first attempts only.
    pub factory_fail_attempts: usize,
    pub attempts: Arc<AtomicUsize>,
    pub tools: Vec<String>,
    pub hooks: usize,
    pub failing_hooks: Vec<usize>,
    pub panicking_hooks: Vec<usize>,
    pub disposers: usize,
    pub failing_disposers: Vec<usize>,
    pub panicking_disposers: Vec<usize>,
    pub hanging_disposers: Vec<usize>,
    pub ending: Ending,
    pub dispose_fails: bool,
    /// Register this late, from a task spawned during activate, after the
    /// activation settled.
    pub keep_context: Arc<Mutex<Option<ActivationContext>>>,
    pub host: Arc<Mutex<Option<ExtensionHost>>>,
    pub reentrant_from_activate: bool,
    pub reentrant_from_hook: bool,
    pub reentrant_from_disposer: bool,
    pub gate: Option<Arc<tokio::sync::Semaphore>>,
}

impl Script {
    pub fn new(id: &str, log: &Log) -> Self {
        Self {
            id: id.to_owned(),
            log: log.clone(),
            factory_fails: None,
            factory_panics: false,
            factory_fail_attempts: 0,
            attempts: Arc::default(),
            tools: Vec::new(),
            hooks: 0,
            failing_hooks: Vec::new(),
            panicking_hooks: Vec::new(),
            disposers: 0,
            failing_disposers: Vec::new(),
            panicking_disposers: Vec::new(),
            hanging_disposers: Vec::new(),
            ending: Ending::Succeed,
            dispose_fails: false,
            keep_context: Arc::default(),
            host: Arc::default(),
            reentrant_from_activate: false,
            reentrant_from_hook: false,
            reentrant_from_disposer: false,
            gate: None,
        }
    }
    pub fn tools(mut self, names: &[&str]) -> Self {
        self.tools = names.iter().map(|n| n.to_string()).collect();
        self
    }
    pub fn hooks(mut self, n: usize) -> Self {
        self.hooks = n;
        self
    }
    pub fn disposers(mut self, n: usize) -> Self {
        self.disposers = n;
        self
    }
    pub fn ending(mut self, ending: Ending) -> Self {
        self.ending = ending;
        self
    }
    pub fn definition(&self) -> ExtensionDefinition {
        let script = self.clone();
        ExtensionDefinition::new(self.id.clone(), move || {
            let attempt = script.attempts.fetch_add(1, Ordering::SeqCst);
            script.log.push(format!("{}:factory", script.id));
            if script.factory_panics {
                panic!("factory of {} panicked", script.id);
            }
            if let Some(message) = script.factory_fails {
                return Err(ExtensionError::new(message));
            }
            if attempt < script.factory_fail_attempts {
                return Err(ExtensionError::new(format!("attempt {attempt} fails")));
            }
            Ok(Scripted(script.clone()))
        })
    }
    pub fn factory_calls(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }
}

pub struct Scripted(pub Script);

pub fn schema() -> Value {
    json!({"type": "object"})
}

impl Extension for Scripted {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let s = &self.0;
            let id = s.id.clone();
            s.log.push(format!("{id}:activate"));
            *s.keep_context.lock().unwrap() = Some(cx.clone());
            if let Some(gate) = &s.gate {
                let _permit = gate.acquire().await.unwrap();
            }
            for i in 0..s.disposers {
                let log = s.log.clone();
                let id = id.clone();
                let fails = s.failing_disposers.contains(&i);
                let panics = s.panicking_disposers.contains(&i);
                let hangs = s.hanging_disposers.contains(&i);
                let host = s.host.lock().unwrap().clone();
                let reentrant = s.reentrant_from_disposer;
                cx.on_dispose(move || async move {
                    log.push(format!("{id}:disposer{i}"));
                    if reentrant && let Some(host) = host {
                        let err = host.emit(exthost::host::Event::new("x", json!(null))).await;
                        log.push(format!("{id}:reentrant:{}", err.unwrap_err().code()));
                    }
                    if panics {
                        panic!("disposer {i} of {id} panicked");
                    }
                    if hangs {
                        std::future::pending::<()>().await;
                    }
                    if fails {
                        Err(ExtensionError::new(format!("disposer {i} of {id} failed")))
                    } else {
                        Ok(())
                    }
                })
                .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            for name in &s.tools {
                let tool_name = name.clone();
                cx.register_tool(
                    ToolDescriptor::new(name.clone(), format!("{name} tool"), schema()),
                    move |input: Value| {
                        let tool_name = tool_name.clone();
                        async move { Ok(json!({"tool": tool_name, "input": input})) }
                    },
                )
                .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            for i in 0..s.hooks {
                let log = s.log.clone();
                let id = id.clone();
                let fails = s.failing_hooks.contains(&i);
                let panics = s.panicking_hooks.contains(&i);
                let host = s.host.lock().unwrap().clone();
                let reentrant = s.reentrant_from_hook;
                cx.on_event(move |event| {
                    let log = log.clone();
                    let id = id.clone();
                    let host = host.clone();
                    async move {
                        log.push(format!(
                            "{id}:hook{i}:{}:{:p}",
                            event.name,
                            Arc::as_ptr(&event)
                        ));
                        if reentrant && let Some(host) = host {
                            let err = host.activate("anything").await.unwrap_err();
                            log.push(format!("{id}:reentrant:{}", err.code()));
                        }
                        if panics {
                            panic!("hook {i} of {id} panicked");
                        }
                        if fails {
                            return Err(ExtensionError::new(format!("hook {i} of {id} failed")));
                        }
                        Ok(())
                    }
                })
                .map_err(|e| ExtensionError::new(e.to_string()))?;
            }
            if s.reentrant_from_activate {
                let host = s.host.lock().unwrap().clone().expect("host set");
                let err = host.activate(&id).await.unwrap_err();
                s.log.push(format!("{id}:reentrant:{}", err.code()));
                let err = host.dispose().await.unwrap_err();
                s.log.push(format!("{id}:reentrant:{}", err.code()));
            }
            match &s.ending {
                Ending::Succeed => Ok(()),
                Ending::Fail(message) => Err(ExtensionError::new(*message)),
                Ending::Panic(message) => panic!("{message}"),
                Ending::AwaitCancel => {
                    cx.cancellation().cancelled().await;
                    s.log.push(format!("{id}:saw-cancel"));
                    Ok(())
                }
                Ending::Hang => std::future::pending().await,
                Ending::SucceedAfter(delay) => {
                    tokio::time::sleep(*delay).await;
                    s.log.push(format!("{id}:activated"));
                    Ok(())
                }
            }
        })
    }

    fn dispose(&self) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let s = &self.0;
            s.log.push(format!("{}:dispose", s.id));
            if s.dispose_fails {
                Err(ExtensionError::new(format!("dispose of {} failed", s.id)))
            } else {
                Ok(())
            }
        })
    }
}

/// xorshift64*: a fixed, dependency-free generator so a failing seed is
/// reproducible from the message.
pub struct Rng(pub u64);

impl Rng {
    /// A generator for scenario `seed`.
    pub fn for_seed(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A resource loader over a fresh temporary directory.
pub fn resources() -> (tempfile::TempDir, ResourceLoader) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("greeting.txt"), "hello from a root").unwrap();
    let loader = ResourceLoader::create([ResourceRoot::new("test", dir.path())]).unwrap();
    (dir, loader)
}

/// A test host's resources folder and the recording of its run. When the
/// test ends (without panicking), the recorded run is replayed through the
/// core and must pass every check of [`trace_check::check`].
pub struct Checked {
    pub dir: tempfile::TempDir,
    pub recorder: Arc<Recorder>,
}

impl Checked {
    /// The trace check's findings so far.
    pub fn violations(&self) -> Vec<String> {
        trace_check::check(&self.recorder.events())
    }
}

impl Drop for Checked {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "the shell's recorded run fails trace validation:\n{}",
            violations.join("\n")
        );
    }
}

pub fn host() -> (Checked, ExtensionHost) {
    host_with(|o| o)
}

pub fn host_with(f: impl FnOnce(HostOptions) -> HostOptions) -> (Checked, ExtensionHost) {
    let (dir, loader) = resources();
    let recorder = Recorder::new();
    let host =
        ExtensionHost::new(f(HostOptions::new(loader)).with_recorder(recorder.clone())).unwrap();
    (Checked { dir, recorder }, host)
}

/// Guards a test against a hang: a regression fails instead of blocking CI.
pub async fn within<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the host must not hang")
}

pub fn statuses(host: &ExtensionHost) -> Vec<(String, String)> {
    host.extensions()
        .into_iter()
        .map(|e| (e.id, e.status.to_string()))
        .collect()
}

/// Starts activating `id` in its own task and returns once its `activate`
/// is running (the scripted extension logged it).
pub async fn activation_in_progress(
    host: &ExtensionHost,
    log: &Log,
    id: &str,
) -> tokio::task::JoinHandle<Result<exthost::host::Activation, exthost::host::HostError>> {
    let task = tokio::spawn({
        let host = host.clone();
        let id = id.to_owned();
        async move { host.activate(&id).await }
    });
    let started = format!("{id}:activate");
    while log.count(&started) == 0 {
        tokio::task::yield_now().await;
    }
    task
}
