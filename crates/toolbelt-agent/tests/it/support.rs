//! Shared fixtures: small tools and agents over a scripted provider.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolbelt_agent::{Agent, AgentBuilder, testing::ScriptedProvider};
use toolbelt_core::{FnTool, ToolError, ToolHandle};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct Pair {
    pub(crate) a: f64,
    pub(crate) b: f64,
}

/// `multiply(a, b)`.
pub(crate) fn multiply() -> ToolHandle {
    FnTool::builder("multiply")
        .description("Multiply a by b")
        .tag("math")
        .typed(|p: Pair, _ctx| async move { Ok::<_, ToolError>(p.a * p.b) })
        .unwrap()
}

/// `add(a, b)`.
pub(crate) fn add() -> ToolHandle {
    FnTool::builder("add")
        .description("Add a and b")
        .tag("math")
        .typed(|p: Pair, _ctx| async move { Ok::<_, ToolError>(p.a + p.b) })
        .unwrap()
}

/// `sleep(ms)`: waits, then answers `slept <ms>`; counts its calls in `count`.
pub(crate) fn sleeper(count: Arc<AtomicUsize>) -> ToolHandle {
    FnTool::builder("sleep")
        .description("Wait ms milliseconds")
        .parameters(json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}))
        .handler(move |args, _ctx| {
            let count = Arc::clone(&count);
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                format!("slept {ms}")
            }
        })
        .unwrap()
}

/// `sleep(ms)` that records in `peak` the most of its calls in flight at
/// once (run under paused time: the sleeps take no real time).
pub(crate) fn gauged_sleeper(peak: Arc<AtomicUsize>) -> ToolHandle {
    let now = Arc::new(AtomicUsize::new(0));
    FnTool::builder("sleep")
        .description("Wait ms milliseconds")
        .parameters(json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}))
        .handler(move |args, _ctx| {
            let (now, peak) = (Arc::clone(&now), Arc::clone(&peak));
            async move {
                let in_flight = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(in_flight, Ordering::SeqCst);
                let ms = args["ms"].as_u64().unwrap_or(0);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                now.fetch_sub(1, Ordering::SeqCst);
                format!("slept {ms}")
            }
        })
        .unwrap()
}

/// `delete_file(path)`: a mutating tool that needs approval; answers `deleted <path>`.
pub(crate) fn delete_file() -> ToolHandle {
    FnTool::builder("delete_file")
        .description("Delete a file")
        .spec(|s| s.mutating())
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .handler(|args, _ctx| async move { format!("deleted {}", args["path"].as_str().unwrap_or("?")) })
        .unwrap()
}

/// An agent over `script` with the math tools.
pub(crate) fn math_agent(script: &ScriptedProvider) -> AgentBuilder {
    Agent::builder(script.provider())
        .system_prompt("Use the tools for arithmetic.")
        .tool(multiply())
        .tool(add())
}
