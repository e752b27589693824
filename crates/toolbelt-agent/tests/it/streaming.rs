//! Streamed runs: the order of events, text deltas, dropping the stream.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentEvent};
use toolbelt_core::{FnTool, ToolContext};

use crate::support::math_agent;

/// A short name per event, to compare sequences.
fn label(event: &AgentEvent) -> String {
    match event {
        AgentEvent::TextDelta(t) => format!("text {t:?}"),
        AgentEvent::ModelTurn {
            iteration,
            tool_calls,
        } => format!("turn {iteration} calls {}", tool_calls.len()),
        AgentEvent::ToolCallStarted(call) => format!("start {}", call.name),
        AgentEvent::ToolProgress(p) => format!("progress {} {}/{:?}", p.tool, p.progress, p.total),
        AgentEvent::ToolCallFinished(result) => {
            format!("finish {} {}", result.call.name, result.to_model_text())
        }
        AgentEvent::Finished(out) => format!("answer {}", out.answer),
        AgentEvent::Failed(e) => format!("error {e}"),
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn events_follow_the_run() {
    let script = ScriptedProvider::new()
        .then_call("multiply", json!({"a": 15, "b": 23}))
        .then_text("It is 345.");
    let agent = math_agent(&script).build().unwrap();
    let events: Vec<String> = agent
        .run_stream("15*23?")
        .map(|e| label(&e))
        .collect()
        .await;
    let expected = [
        "turn 1 calls 1",
        "start multiply",
        "finish multiply 345.0",
        "text \"It \"",
        "text \"is \"",
        "text \"345.\"",
        "answer It is 345.",
    ];
    assert_eq!(events, expected);
}

#[tokio::test]
async fn a_failed_run_ends_the_stream_with_its_error() {
    let script = ScriptedProvider::new();
    let agent = math_agent(&script).build().unwrap();
    let events: Vec<String> = agent.run_stream("hi").map(|e| label(&e)).collect().await;
    assert_eq!(events.len(), 1);
    assert!(
        events[0].starts_with("error agent `agent`: the model provider failed"),
        "{events:?}"
    );
}

/// Sets its flag when dropped: shows that a tool's future was dropped (aborted).
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn dropping_the_stream_aborts_the_run_and_its_tools() {
    let aborted = Arc::new(AtomicBool::new(false));
    let flag = aborted.clone();
    let wait = FnTool::builder("wait")
        .description("Wait forever")
        .handler(move |_args, _ctx: ToolContext| {
            let guard = SetOnDrop(flag.clone());
            async move {
                std::future::pending::<()>().await;
                drop(guard);
                "never"
            }
        })
        .unwrap();
    let script = ScriptedProvider::new().then_call("wait", json!({}));
    let agent = Agent::builder(script.provider())
        .tool(wait)
        .build()
        .unwrap();
    let mut stream = agent.run_stream("wait");
    while let Some(event) = stream.next().await {
        if matches!(event, AgentEvent::ToolCallStarted(_)) {
            break;
        }
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!aborted.load(Ordering::SeqCst));
    drop(stream);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(aborted.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_session_stream_keeps_the_conversation() {
    let script = ScriptedProvider::new().then_text("one").then_text("two");
    let agent = math_agent(&script).build().unwrap();
    let mut chat = agent.session();
    let first = chat.run_stream("1").finish().await.unwrap();
    assert_eq!(first.answer, "one");
    let second = chat.run_stream("2").finish().await.unwrap();
    assert_eq!(
        (second.answer.as_str(), second.transcript.history_len),
        ("two", 2)
    );
}

#[tokio::test]
async fn the_route_decision_is_an_event() {
    use toolbelt_router::{AnyRouter, RouteDecision, RouteError, RouteRequest, Router};
    struct Direct;
    impl Router for Direct {
        fn name(&self) -> &'static str {
            "direct"
        }
        async fn route(&self, _r: &RouteRequest) -> Result<RouteDecision, RouteError> {
            Ok(RouteDecision::direct("direct", "small talk"))
        }
    }
    let script = ScriptedProvider::new().then_text("hi");
    let agent = math_agent(&script)
        .router(AnyRouter::new(Direct))
        .build()
        .unwrap();
    let mut stream = agent.run_stream("hello");
    let Some(AgentEvent::Routed(decision)) = stream.next().await else {
        panic!("no route event first")
    };
    assert_eq!(decision, RouteDecision::direct("direct", "small talk"));
}

#[tokio::test]
async fn a_tools_progress_reports_are_events_between_its_start_and_finish() {
    let download = FnTool::builder("download")
        .description("Download a file")
        .handler(|_args, ctx: ToolContext| async move {
            for part in 1..=2 {
                ctx.report_progress(f64::from(part), Some(2.0), Some(format!("part {part}")));
            }
            "done"
        })
        .unwrap();
    let script = ScriptedProvider::new()
        .then_call("download", json!({}))
        .then_text("ok");
    let agent = Agent::builder(script.provider())
        .tool(download)
        .build()
        .unwrap();
    let events: Vec<String> = agent
        .run_stream("get it")
        .map(|e| label(&e))
        .collect()
        .await;
    let at = events.iter().position(|e| e == "start download").unwrap();
    assert_eq!(
        events[at..at + 4],
        [
            "start download",
            "progress download 1/Some(2.0)",
            "progress download 2/Some(2.0)",
            "finish download done",
        ],
        "{events:?}"
    );
}
