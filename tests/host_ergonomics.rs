//! The API needs no glue: closure-defined extensions, one prelude, `?` on
//! host errors inside extension code, errors whose text carries their code,
//! and errors and reports that serialize.

use exthost::host::ContentBlock;
use exthost::prelude::*;
use serde_json::json;

fn host() -> (tempfile::TempDir, ExtensionHost) {
    let dir = tempfile::tempdir().unwrap();
    let resources = ResourceLoader::create([ResourceRoot::new("test", dir.path())]).unwrap();
    (
        dir,
        ExtensionHost::new(HostOptions::new(resources)).unwrap(),
    )
}

#[tokio::test]
async fn a_closure_is_an_extension_and_host_errors_convert_with_their_code() {
    let (_dir, host) = host();
    host.discover([
        ExtensionDefinition::from_fn("clock", |cx| async move {
            cx.register_tool(
                ToolDescriptor::new("now", "The time", json!({"type": "object"})),
                |_| async { Ok(json!("12:00")) },
            )?;
            Ok(())
        }),
        // A description that fails text hygiene fails the activation.
        ExtensionDefinition::from_fn("twice", |cx| async move {
            cx.register_tool(
                ToolDescriptor::new("dup", "a tool", json!({"type": "object"})),
                |_| async { Ok(json!(1)) },
            )?;
            let bad = ToolDescriptor::new("bad", "bad\u{202E}text", json!({"type": "object"}));
            cx.register_tool(bad, |_| async { Ok(json!(1)) })?;
            Ok(())
        }),
    ])
    .unwrap();
    assert_eq!(host.activate("clock").await.unwrap(), Activation::Activated);
    assert_eq!(
        host.call_tool("now", json!({})).await.unwrap().into_json(),
        json!("12:00")
    );
    let err = host.activate("twice").await.unwrap_err();
    assert_eq!(err.cause_code(), Some("TOOL_DESCRIPTION_INVALID"));
    // `?` on a host error inside extension code keeps its code in the text.
    let converted = ExtensionError::from(HostError::Disposed);
    assert_eq!(converted.message(), "HOST_DISPOSED: the host is disposed");
    assert_eq!(converted.code(), Some("HOST_DISPOSED"));
    host.dispose().await.unwrap();
}

/// What a caller gets from a closure tool that answers `answer` (a
/// `Value` or a `ToolOutput`), through a host of its own.
async fn answered<T>(answer: T) -> ToolOutput
where
    T: Into<ToolOutput> + Clone + Send + Sync + 'static,
{
    let (_dir, host) = host();
    host.discover([ExtensionDefinition::from_fn("answers", move |cx| {
        let answer = answer.clone();
        async move {
            cx.register_tool(
                ToolDescriptor::new("answer", "Answers", json!({"type": "object"})),
                move |_| {
                    let answer = answer.clone();
                    async move { Ok(answer) }
                },
            )?;
            Ok(())
        }
    })])
    .unwrap();
    host.activate("answers").await.unwrap();
    let out = host.call_tool("answer", json!({})).await.unwrap();
    host.dispose().await.unwrap();
    out
}

#[tokio::test]
async fn a_closure_may_answer_a_tool_output_and_it_reaches_the_caller_unchanged() {
    let image = json!({"type": "image", "data": "AA==", "mimeType": "image/png"});
    let block = ContentBlock::from_json(image.as_object().unwrap().clone());
    let answer = ToolOutput::new(vec![ContentBlock::text("not found"), block])
        .with_structured(json!({"missing": "a.txt"}))
        .with_is_error(true);
    // A set error flag is the tool's answer, not a failed call.
    let out = answered(answer.clone()).await;
    assert_eq!(out, answer);
    assert!(out.is_error());
    assert_eq!(out.as_text().as_deref(), Some("not found"));
    assert_eq!(out.content()[1].to_json(), image);
    assert_eq!(out.into_json(), json!({"missing": "a.txt"}));
}

#[tokio::test]
async fn a_value_shaped_like_a_tool_result_is_the_tools_value() {
    let value = json!({"content": [], "isError": true});
    let out = answered(value.clone()).await;
    assert!(!out.is_error(), "{out:?}");
    assert_eq!(out, ToolOutput::json(value.clone()));
    assert_eq!(out.into_json(), value);
}

#[tokio::test]
async fn errors_show_their_code_and_serialize() {
    let (_dir, host) = host();
    let err = host.activate("missing").await.unwrap_err();
    assert_eq!(err.code(), "EXTENSION_NOT_FOUND");
    assert_eq!(
        err.to_string(),
        "EXTENSION_NOT_FOUND: no extension \"missing\" is discovered"
    );
    assert_eq!(err.message(), "no extension \"missing\" is discovered");
    assert_eq!(
        serde_json::to_value(&err).unwrap(),
        json!({"NotFound": {"id": "missing"}})
    );

    host.discover([ExtensionDefinition::from_fn("fails", |_cx| async {
        Err(ExtensionError::new("no"))
    })])
    .unwrap();
    let err = host.activate("fails").await.unwrap_err();
    let value = serde_json::to_value(&err).unwrap();
    assert_eq!(value["Activation"]["extension"], "fails");
    assert_eq!(value["Activation"]["cause"]["Activate"]["message"], "no");

    let report = host.emit(Event::new("e", json!({}))).await.unwrap();
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({"diagnostics": [], "activated": [], "activation_failures": []})
    );
    let listed = serde_json::to_value(host.extensions()).unwrap();
    assert_eq!(listed, json!([{"id": "fails", "status": "failed"}]));
    host.dispose().await.unwrap();
}
