//! Nested agents sharing one executor do not deadlock on its concurrency permits:
//! an agent-as-tool call holds no permit while its inner agent runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolbelt_agent::Agent;
use toolbelt_agent::testing::{Reply, ScriptedProvider};
use toolbelt_core::{Executor, FnTool, ToolCall, ToolError};
use toolbelt_llm::{ChatResponse, Message};

const LIMIT: usize = 16;
const NESTED: usize = 32;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_nested_agent_calls_finish_on_a_limit_of_sixteen() {
    let exec = Executor::builder().concurrency(LIMIT).build();
    let inner_calls = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&inner_calls);
    let double = FnTool::builder("double")
        .description("Double n")
        .parameters(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
        .handler(move |args, _ctx| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>((args["n"].as_i64().unwrap_or(0) * 2).to_string()) }
        })
        .unwrap();
    // The inner agent calls `double` once, then answers with its result. Its
    // first answer takes a moment, so every outer call is in flight (and, were
    // agent calls to hold permits, holding all 16) when the inner calls need one.
    let inner_model = ScriptedProvider::from_fn(|req| match req.messages.last() {
        Some(Message::Tool { content, .. }) => {
            Reply::Answer(ChatResponse::text(format!("doubled: {content}")))
        }
        _ => Reply::After(
            Duration::from_millis(200),
            Box::new(Reply::Answer(ChatResponse::tool_calls(vec![
                ToolCall::new("d1", "double", json!({"n": 21})),
            ]))),
        ),
    });
    let inner = Agent::builder(inner_model.provider())
        .name("doubler")
        .description("Doubles a number")
        .tool(double)
        .executor(exec.clone())
        .build()
        .unwrap();
    // The outer agent calls the inner one 32 times in one turn, all in parallel.
    let outer_model = ScriptedProvider::from_fn(|req| match req.messages.last() {
        Some(Message::Tool { .. }) => Reply::Answer(ChatResponse::text("all done")),
        _ => Reply::Answer(ChatResponse::tool_calls(
            (0..NESTED)
                // Different inputs: identical calls of one turn would run once.
                .map(|i| {
                    let input = format!("21 (call {i})");
                    ToolCall::new(format!("c{i}"), "doubler", json!({ "input": input }))
                })
                .collect(),
        )),
    });
    let outer = Agent::builder(outer_model.provider())
        .tool(inner.as_tool())
        .executor(exec)
        .build()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), outer.run("double 21, 32 times"))
        .await
        .expect("nested agents deadlocked on the executor's permits")
        .unwrap();
    assert_eq!(out.answer, "all done");
    let results: Vec<String> = out
        .transcript
        .tool_results()
        .map(|r| r.to_model_text())
        .collect();
    assert_eq!(results.len(), NESTED);
    assert!(results.iter().all(|r| r == "doubled: 42"), "{results:?}");
    assert_eq!(inner_calls.load(Ordering::SeqCst), NESTED);
}
