//! Runtime overhead of the agent loop with an in-process provider that answers at once.
//!
//! - `iteration/*`: runs of N tool iterations with a no-op tool; the overhead
//!   per iteration is the slope between N = 1 and N = 10.
//! - `parallel_turn/{1,10}x10ms`: one turn of 1 or 10 calls of a tool
//!   sleeping 10 ms; compare to `parallel_turn/baseline_sleep_10ms`, a bare
//!   10 ms tokio sleep on the same runtime.
//!
//! Run: `cargo bench -p toolbelt-agent --bench agent`.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolbelt_agent::Agent;
use toolbelt_agent::testing::{Reply, ScriptedProvider};
use toolbelt_core::{FnTool, ToolCall, ToolHandle};
use toolbelt_llm::{ChatRequest, ChatResponse, Message};

/// Calls `tool` `calls` times per turn for `turns` turns, then answers.
fn provider(tool: &'static str, turns: usize, calls: usize) -> ScriptedProvider {
    ScriptedProvider::from_fn(move |request: &ChatRequest| {
        let done = request
            .messages
            .iter()
            .filter(
                |m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
            )
            .count();
        if done >= turns {
            return Reply::Answer(ChatResponse::text("done"));
        }
        let batch = (0..calls)
            .map(|i| ToolCall::new(format!("c{done}_{i}"), tool, json!({"ms": 10})))
            .collect();
        Reply::Answer(ChatResponse::tool_calls(batch))
    })
}

fn noop() -> ToolHandle {
    FnTool::builder("noop")
        .description("Do nothing")
        .handler(|_args, _ctx| async { "ok" })
        .unwrap()
}

fn sleep10() -> ToolHandle {
    FnTool::builder("sleep")
        .description("Sleep ms milliseconds")
        .parameters(json!({"type": "object", "properties": {"ms": {"type": "integer"}}}))
        .handler(|args, _ctx| async move {
            tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
            "slept"
        })
        .unwrap()
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("iteration");
    for turns in [0usize, 1, 10] {
        let agent = Agent::builder(provider("noop", turns, 1).provider())
            .system_prompt("You are a benchmark.")
            .tool(noop())
            .max_iterations(20)
            .build()
            .unwrap();
        group.bench_function(format!("{turns}_tool_turns"), |b| {
            b.iter(|| rt.block_on(async { black_box(agent.run("go").await.unwrap()) }));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("parallel_turn");
    group.sample_size(30);
    // What a 10 ms tokio sleep takes by itself (the timer rounds up to its 1 ms ticks).
    group.bench_function("baseline_sleep_10ms", |b| {
        b.iter(|| rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await }));
    });
    for calls in [1usize, 10] {
        let agent = Agent::builder(provider("sleep", 1, calls).provider())
            .tool(sleep10())
            .build()
            .unwrap();
        group.bench_function(format!("{calls}x10ms"), |b| {
            b.iter(|| rt.block_on(async { black_box(agent.run("go").await.unwrap()) }));
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
