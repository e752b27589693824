//! The records a host stores or sends (transcripts, call results, tool errors, options) are
//! JSON documents with stable field names, and read back to the same values.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentOptions, RunOutput};
use toolbelt_core::Toolset;

use crate::support::multiply;

#[tokio::test]
async fn a_run_output_is_json_and_reads_back_the_same() {
    let script = ScriptedProvider::new()
        .then_call("multiply", json!({"a": 15, "b": 23}))
        .then_call("multiply", json!({"a": "x"}))
        .then_text("345");
    let agent = Agent::builder(script.provider())
        .tools(Toolset::from_tools([multiply()]))
        .build()
        .unwrap();
    let out = agent.run("What is 15 * 23?").await.unwrap();
    let doc = serde_json::to_value(&out).unwrap();
    assert_eq!(
        (doc["answer"].clone(), doc["kind"].clone()),
        (json!("345"), json!("final"))
    );
    let steps = doc["transcript"]["steps"].as_array().unwrap();
    let types: Vec<&str> = steps.iter().map(|s| s["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["model", "tool", "model", "tool", "model"]);
    assert!(steps[0]["duration_ms"].is_u64(), "{}", steps[0]);
    assert!(
        steps[1]["result"]["outcome"]["ok"]["text"].is_string(),
        "{}",
        steps[1]
    );
    assert!(steps[1]["result"]["duration_ms"].is_u64());
    let error = &steps[3]["result"]["outcome"]["error"];
    assert_eq!(error["kind"], json!("invalid_arguments"), "{error}");
    assert!(error["violations"][0]["pointer"].is_string(), "{error}");
    // Durations are whole milliseconds in JSON, so the document (not the value) is the fixpoint.
    let back: RunOutput = serde_json::from_value(doc.clone()).unwrap();
    assert_eq!(serde_json::to_value(&back).unwrap(), doc);
    assert_eq!(
        (back.answer, back.transcript.messages),
        (out.answer, out.transcript.messages)
    );
}

#[test]
fn options_are_json_with_millisecond_durations_and_defaults_for_missing_fields() {
    let mut options = AgentOptions::default();
    options.run_timeout = Some(Duration::from_secs(90));
    options.max_iterations = 4;
    let doc = serde_json::to_value(&options).unwrap();
    assert_eq!(
        (doc["run_timeout_ms"].clone(), doc["max_iterations"].clone()),
        (json!(90_000), json!(4))
    );
    assert_eq!(
        serde_json::from_value::<AgentOptions>(doc).unwrap(),
        options
    );
    let partial: AgentOptions = serde_json::from_value(json!({"max_tool_calls": 5})).unwrap();
    assert_eq!(
        (partial.max_tool_calls, partial.max_iterations),
        (5, AgentOptions::default().max_iterations)
    );
}

#[test]
fn a_timeout_error_names_its_kind_and_milliseconds() {
    let err = toolbelt_core::ToolError::Timeout {
        after: Duration::from_millis(1500),
    };
    let doc = serde_json::to_value(&err).unwrap();
    assert_eq!(doc, json!({"kind": "timeout", "after_ms": 1500}));
    assert_eq!(
        serde_json::from_value::<toolbelt_core::ToolError>(doc).unwrap(),
        err
    );
}
