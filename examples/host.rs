//! Two extensions: one activates and serves a tool, the other registers a
//! tool and a disposer, then fails; the host rolls it back and stays usable.
//!
//! Run: `cargo run --example host`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use exthost::host::{
    ActivationContext, BoxFuture, Event, Extension, ExtensionDefinition, ExtensionError,
    ExtensionHost, HostOptions, ToolDescriptor,
};
use exthost::{ResourceLoader, ResourceRoot};
use serde_json::{Value, json};

struct Clock;

impl Extension for Clock {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            let now =
                ToolDescriptor::new("now", "The current turn number", json!({"type": "object"}));
            let turns = Arc::new(AtomicUsize::new(0));
            let seen = turns.clone();
            cx.register_tool(now, move |_: Value| {
                let turn = seen.load(Ordering::SeqCst);
                async move { Ok(json!({ "turn": turn })) }
            })
            .map_err(|e| ExtensionError::new(e.to_string()))?;
            cx.on_event(move |event| {
                if event.name == "turn.end" {
                    turns.fetch_add(1, Ordering::SeqCst);
                }
                async { Ok(()) }
            })
            .map_err(|e| ExtensionError::new(e.to_string()))?;
            Ok(())
        })
    }
}

struct Broken;

impl Extension for Broken {
    fn activate(&self, cx: ActivationContext) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async move {
            cx.on_dispose(|| async {
                println!("  broken: disposer ran (the rollback released what activate acquired)");
                Ok(())
            })
            .map_err(|e| ExtensionError::new(e.to_string()))?;
            let tool = ToolDescriptor::new("half_done", "Never visible", json!({"type": "object"}));
            cx.register_tool(tool, |_: Value| async { Ok(Value::Null) })
                .map_err(|e| ExtensionError::new(e.to_string()))?;
            Err(ExtensionError::new("the configuration file is missing"))
        })
    }

    fn dispose(&self) -> BoxFuture<'_, Result<(), ExtensionError>> {
        Box::pin(async {
            println!("  broken: instance dispose ran last");
            Ok(())
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::current_dir()?;
    let resources = ResourceLoader::create([ResourceRoot::new("cwd", root)])?;
    let host = ExtensionHost::new(HostOptions::new(resources))?;

    host.discover([
        ExtensionDefinition::new("clock", || Ok(Clock)),
        ExtensionDefinition::new("broken", || Ok(Broken)),
    ])?;
    println!("discovered: {:?}", host.extensions());

    host.activate("clock").await?;
    println!("clock activated; tools: {:?}", host.tools().names());

    println!("activating broken:");
    let err = host.activate("broken").await.unwrap_err();
    println!("  error {}: {err}", err.code());
    println!("  tools after rollback: {:?}", host.tools().names());

    host.emit(Event::new("turn.end", json!({}))).await?;
    println!(
        "now: {}",
        host.call_tool("now", json!({})).await?.into_json()
    );

    host.dispose().await?;
    println!("disposed: {:?}", host.extensions());
    Ok(())
}
