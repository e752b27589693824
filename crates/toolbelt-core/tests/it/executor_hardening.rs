//! Executor hardening: permits, cancellation while queued, retries of timed-out
//! mutating calls, error caps, and a cache that keys on what a tool reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::Notify;
use toolbelt_core::{
    CancellationToken, Executor, Extensions, FnTool, RetryPolicy, ToolCall, ToolContext, ToolError,
    ToolHandle, Toolset,
};

/// A tool that blocks until `gate` is notified.
fn gated(name: &str, gate: Arc<Notify>, waits: bool) -> ToolHandle {
    FnTool::builder(name)
        .spec(|s| s.description("waits for the gate").waits(waits))
        .handler(move |_a: Value, _c| {
            let gate = Arc::clone(&gate);
            async move {
                gate.notified().await;
                "through".to_owned()
            }
        })
        .unwrap()
}

fn quick() -> ToolHandle {
    FnTool::builder("quick")
        .description("answers at once")
        .handler(|_a: Value, _c| async { "quick".to_owned() })
        .unwrap()
}

#[tokio::test]
async fn a_cancelled_call_stops_waiting_for_a_permit() {
    let gate = Arc::new(Notify::new());
    let tools = Toolset::from_tools([gated("hold", Arc::clone(&gate), false), quick()]);
    let exec = Executor::builder().concurrency(1).build();
    let holder = {
        let (exec, tools) = (exec.clone(), tools.clone());
        tokio::spawn(async move {
            exec.execute(
                &tools,
                ToolCall::new("1", "hold", json!({})),
                &ToolContext::new(),
            )
            .await
        })
    };
    tokio::task::yield_now().await;
    let cancel = CancellationToken::new();
    let ctx = ToolContext::new().with_cancellation(cancel.clone());
    let queued = {
        let (exec, tools) = (exec.clone(), tools.clone());
        tokio::spawn(async move {
            exec.execute(&tools, ToolCall::new("2", "quick", json!({})), &ctx)
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !queued.is_finished(),
        "the queued call should wait for the only permit"
    );
    cancel.cancel();
    // It ends while the permit is still held by the first call.
    let result = tokio::time::timeout(Duration::from_secs(5), queued)
        .await
        .expect("a cancelled call kept waiting for a permit")
        .unwrap();
    assert_eq!(result.outcome, Err(ToolError::Cancelled));
    assert!(!holder.is_finished());
    gate.notify_one();
    assert_eq!(holder.await.unwrap().outcome.unwrap().text, "through");
}

#[tokio::test]
async fn calls_that_wait_on_others_hold_no_permit() {
    let gate = Arc::new(Notify::new());
    let tools = Toolset::from_tools([gated("ask", Arc::clone(&gate), true), quick()]);
    let exec = Executor::builder().concurrency(1).build();
    let waiting = {
        let (exec, tools) = (exec.clone(), tools.clone());
        tokio::spawn(async move {
            exec.execute(
                &tools,
                ToolCall::new("1", "ask", json!({})),
                &ToolContext::new(),
            )
            .await
        })
    };
    tokio::task::yield_now().await;
    // With the only permit free, another call runs while `ask` waits.
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        exec.execute(
            &tools,
            ToolCall::new("2", "quick", json!({})),
            &ToolContext::new(),
        ),
    )
    .await
    .expect("a waiting call held the permit");
    assert_eq!(r.outcome.unwrap().text, "quick");
    gate.notify_one();
    assert_eq!(waiting.await.unwrap().outcome.unwrap().text, "through");
}

/// A tool that never answers within its timeout, counting its attempts.
fn slow(mutating: bool, idempotent: bool, attempts: Arc<AtomicU32>) -> ToolHandle {
    FnTool::builder("slow")
        .spec(move |s| {
            let s = s
                .description("too slow")
                .timeout(Duration::from_millis(100))
                .retry(RetryPolicy::retries(2));
            let s = if mutating {
                s.mutating().needs_approval(false)
            } else {
                s
            };
            s.idempotent(idempotent)
        })
        .handler(move |_a: Value, _c| {
            attempts.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<String>()
        })
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn timeouts_of_mutating_tools_are_retried_only_when_idempotent() {
    for (mutating, idempotent, expected) in [(true, false, 1), (true, true, 3), (false, false, 3)] {
        let attempts = Arc::new(AtomicU32::new(0));
        let tools = Toolset::from_tools([slow(mutating, idempotent, Arc::clone(&attempts))]);
        let r = Executor::new()
            .execute(
                &tools,
                ToolCall::new("1", "slow", json!({})),
                &ToolContext::new(),
            )
            .await;
        assert!(
            matches!(r.outcome, Err(ToolError::Timeout { .. })),
            "{:?}",
            r.outcome
        );
        assert_eq!(
            (r.attempts, attempts.load(Ordering::SeqCst)),
            (expected, expected),
            "mutating={mutating} idempotent={idempotent}"
        );
    }
}

#[tokio::test]
async fn error_messages_obey_the_output_cap() {
    let tool = FnTool::builder("loud")
        .spec(|s| {
            s.description("fails loudly")
                .max_output(1000, Default::default())
        })
        .handler(|_a: Value, _c| async {
            Err::<String, _>(ToolError::failed(format!("{}END", "x".repeat(200_000))))
        })
        .unwrap();
    let r = Executor::new()
        .execute(
            &Toolset::from_tools([tool]),
            ToolCall::new("1", "loud", json!({})),
            &ToolContext::new(),
        )
        .await;
    let msg = r.outcome.unwrap_err().to_string();
    assert!(msg.len() < 1200, "{} bytes", msg.len());
    assert!(
        msg.ends_with("END") && msg.contains("bytes truncated of 200003"),
        "{}",
        &msg[..200]
    );
}

/// Which agent a context belongs to, as a tool would read it.
struct Agent(&'static str);

#[tokio::test]
async fn cached_results_never_cross_contexts_holding_other_values() {
    let runs = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&runs);
    let tool = FnTool::builder("whoami")
        .spec(|s| s.description("names the agent").cacheable(true))
        .handler(move |_a: Value, ctx: ToolContext| {
            counter.fetch_add(1, Ordering::SeqCst);
            let name = ctx.get::<Agent>().map_or("none", |a| a.0).to_owned();
            let conversation = ctx.conversation_id().unwrap_or("-").to_owned();
            async move { format!("{name}/{conversation}") }
        })
        .unwrap();
    let tools = Toolset::from_tools([tool]);
    let exec = Executor::new();
    let with_agent = |name: &'static str| {
        let mut ext = Extensions::new();
        ext.insert(Agent(name));
        ToolContext::new().with_extensions(ext)
    };
    let alice = with_agent("alice");
    let bob = with_agent("bob");
    let run = |ctx: ToolContext| {
        let (exec, tools) = (exec.clone(), tools.clone());
        async move {
            exec.execute(&tools, ToolCall::new("1", "whoami", json!({})), &ctx)
                .await
                .outcome
                .unwrap()
                .text
        }
    };
    assert_eq!(run(alice.clone()).await, "alice/-");
    assert_eq!(run(bob.clone()).await, "bob/-");
    assert_eq!(
        run(alice.clone().with_conversation_id("c1")).await,
        "alice/c1"
    );
    assert_eq!(
        run(alice.clone().with_conversation_id("c2")).await,
        "alice/c2"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 4);
    // The same context (or a clone) still hits the cache.
    assert_eq!(run(alice.clone()).await, "alice/-");
    assert_eq!(runs.load(Ordering::SeqCst), 4);
}
