//! Iteration limits, timeouts, cancellation, provider failures and build checks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentError, BuildError, RunOptions};
use toolbelt_core::CancellationToken;
use toolbelt_llm::{Message, ProviderError, ToolChoice};

use crate::support::{math_agent, sleeper};

#[tokio::test]
async fn max_iterations_ends_with_the_partial_transcript() {
    let script = ScriptedProvider::new()
        .then_call("add", json!({"a": 1, "b": 1}))
        .then_call("add", json!({"a": 2, "b": 2}));
    let err = math_agent(&script)
        .max_iterations(2)
        .build()
        .unwrap()
        .run("loop")
        .await
        .unwrap_err();
    let AgentError::MaxIterations {
        limit: 2,
        ref transcript,
        ..
    } = err
    else {
        panic!("{err:?}")
    };
    assert_eq!(transcript.model_calls(), 2);
    // The second turn's call was not run, and is answered so the conversation stays valid.
    assert_eq!(transcript.tool_results().count(), 1);
    assert_eq!(
        transcript.messages.last(),
        Some(&Message::tool_result(
            "call_2",
            "add",
            "error: not run: the agent reached its iteration limit",
            true
        ))
    );
    assert!(err.to_string().contains("limit of 2 model calls"), "{err}");
}

#[tokio::test]
async fn a_run_timeout_stops_a_slow_model() {
    let script = ScriptedProvider::new().then_hang();
    let agent = math_agent(&script)
        .run_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let err = agent.run("hi").await.unwrap_err();
    assert!(
        matches!(err, AgentError::Timeout { after, .. } if after == Duration::from_millis(50)),
        "{err:?}"
    );
    assert_eq!(err.transcript().messages, [Message::user("hi")]);
}

#[tokio::test]
async fn cancelling_stops_tools_in_flight_and_keeps_the_transcript() {
    let count = Arc::new(AtomicUsize::new(0));
    let script = ScriptedProvider::new().then_call("sleep", json!({"ms": 10_000}));
    let agent = Agent::builder(script.provider())
        .tool(sleeper(count.clone()))
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stopper.cancel();
    });
    let err = agent
        .run_with("wait", RunOptions::new().with_cancellation(cancel))
        .await
        .unwrap_err();
    let AgentError::Cancelled { transcript, .. } = err else {
        panic!("{err:?}")
    };
    assert_eq!(count.load(Ordering::SeqCst), 1);
    assert_eq!(
        transcript.messages.last(),
        Some(&Message::tool_result(
            "call_1",
            "sleep",
            "error: not run: the run was cancelled",
            true
        ))
    );
}

#[tokio::test]
async fn a_provider_failure_is_a_run_error() {
    let script = ScriptedProvider::new().then_error(ProviderError::Api {
        provider: "x",
        status: 401,
        message: "bad key".into(),
    });
    let err = math_agent(&script)
        .build()
        .unwrap()
        .run("hi")
        .await
        .unwrap_err();
    let AgentError::Provider {
        source: ProviderError::Api { status: 401, .. },
        ..
    } = err
    else {
        panic!("{err:?}")
    };
}

#[test]
fn bad_definitions_are_refused_with_the_culprit_named() {
    let script = ScriptedProvider::new();
    let zero = math_agent(&script).max_iterations(0).build().unwrap_err();
    assert_eq!(zero, BuildError::ZeroIterations);
    let choice = math_agent(&script)
        .tool_choice(ToolChoice::Tool("sub".into()))
        .build()
        .unwrap_err();
    assert_eq!(
        choice.to_string(),
        "tool_choice names `sub`, which is not in the agent's toolset; tools: add, multiply"
    );
    let pin = math_agent(&script).pin("div").build().unwrap_err();
    assert!(
        matches!(pin, BuildError::UnknownPinned { ref name, .. } if name == "div"),
        "{pin}"
    );
    let name = math_agent(&script).name("my,agent").build().unwrap_err();
    assert!(
        name.to_string()
            .starts_with("invalid agent name `my,agent`"),
        "{name}"
    );
}
