//! Executor: timeout, retry, cancellation, approval, batch order and scheduling, cache, events.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::{
    ApprovalPolicy, ApprovalRequest, ApprovalResponse, CancellationToken, Decision, ExecEvent,
    Executor, FnTool, Overflow, RetryPolicy, ToolCall, ToolContext, ToolError, ToolErrorKind,
    ToolHandle, Toolset,
};

/// A tool that sleeps `ms` milliseconds (argument) and echoes its name.
fn sleeper(name: &str, mutating: bool) -> ToolHandle {
    let name_owned = name.to_owned();
    FnTool::builder(name)
        .description("sleep then answer")
        .spec(|s| {
            if mutating {
                s.mutating().needs_approval(false)
            } else {
                s
            }
        })
        .handler(move |args: Value, _ctx| {
            let name = name_owned.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0))).await;
                name
            }
        })
        .unwrap()
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args)
}

#[tokio::test(start_paused = true)]
async fn a_slow_call_times_out() {
    let tool = FnTool::builder("slow")
        .spec(|s| s.description("never ends").timeout(Duration::from_secs(2)))
        .handler(|_a, _c| std::future::pending::<String>())
        .unwrap();
    let r = Executor::new()
        .execute(
            &Toolset::from_tools([tool]),
            call("1", "slow", json!({})),
            &ToolContext::new(),
        )
        .await;
    assert_eq!(
        r.outcome,
        Err(ToolError::Timeout {
            after: Duration::from_secs(2)
        })
    );
    assert_eq!(r.to_model_text(), "error: timed out after 2.0s");
}

fn flaky(failures: u32, retryable: bool, attempts: Arc<AtomicU32>) -> ToolHandle {
    FnTool::builder("flaky")
        .spec(|s| {
            s.description("fails at first")
                .retry(RetryPolicy::retries(3))
        })
        .handler(move |_a, _c| {
            let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            async move {
                if n <= failures {
                    Err(ToolError::Failed {
                        message: format!("attempt {n} failed"),
                        retryable,
                    })
                } else {
                    Ok(format!("ok after {n}"))
                }
            }
        })
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn retryable_errors_are_retried_with_backoff() {
    let attempts = Arc::new(AtomicU32::new(0));
    let tools = Toolset::from_tools([flaky(2, true, Arc::clone(&attempts))]);
    let started = tokio::time::Instant::now();
    let r = Executor::new()
        .execute(&tools, call("1", "flaky", json!({})), &ToolContext::new())
        .await;
    assert_eq!(r.outcome.unwrap().text, "ok after 3");
    assert_eq!(r.attempts, 3);
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(100 + 200),
        "backoff 100 ms then 200 ms"
    );
}

#[tokio::test(start_paused = true)]
async fn permanent_errors_are_not_retried() {
    let attempts = Arc::new(AtomicU32::new(0));
    let tools = Toolset::from_tools([flaky(5, false, Arc::clone(&attempts))]);
    let r = Executor::new()
        .execute(&tools, call("1", "flaky", json!({})), &ToolContext::new())
        .await;
    assert_eq!(r.outcome.unwrap_err().to_string(), "attempt 1 failed");
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cancellation_ends_calls_in_flight() {
    let tools = Toolset::from_tools([sleeper("a", false), sleeper("b", false)]);
    let token = CancellationToken::new();
    let ctx = ToolContext::new().with_cancellation(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    });
    let calls = vec![
        call("1", "a", json!({"ms": 60_000})),
        call("2", "b", json!({"ms": 60_000})),
    ];
    let results = Executor::new().execute_batch(&tools, calls, &ctx).await;
    canceller.await.unwrap();
    let kinds: Vec<_> = results
        .iter()
        .map(|r| r.outcome.as_ref().unwrap_err().kind())
        .collect();
    assert_eq!(kinds, [ToolErrorKind::Cancelled, ToolErrorKind::Cancelled]);
}

#[tokio::test]
async fn batch_results_come_back_in_call_order() {
    let tools = Toolset::from_tools([
        sleeper("a", false),
        sleeper("b", false),
        sleeper("c", false),
    ]);
    let calls = vec![
        call("1", "a", json!({"ms": 30})),
        call("2", "missing", json!({})),
        call("3", "b", json!({"ms": 1})),
        call("4", "c", json!({"ms": 10})),
    ];
    let results = Executor::new()
        .execute_batch(&tools, calls, &ToolContext::new())
        .await;
    let ids: Vec<&str> = results.iter().map(|r| r.call.id.as_str()).collect();
    assert_eq!(ids, ["1", "2", "3", "4"]);
    assert_eq!(
        results[1].to_model_text(),
        "error: unknown tool `missing`. Use one of the tools you were given."
    );
}

/// Records the highest number of calls running at once and the order they started in.
fn probe(
    name: &str,
    mutating: bool,
    live: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    log: Arc<std::sync::Mutex<Vec<String>>>,
) -> ToolHandle {
    let tool_name = name.to_owned();
    FnTool::builder(name)
        .description("probe")
        .spec(|s| {
            if mutating {
                s.mutating().needs_approval(false)
            } else {
                s
            }
        })
        .handler(move |args: Value, _ctx| {
            let (live, peak, log, name) =
                (live.clone(), peak.clone(), log.clone(), tool_name.clone());
            async move {
                let now = live.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                log.lock().unwrap().push(format!("{name}{}", args["n"]));
                tokio::time::sleep(Duration::from_millis(20)).await;
                live.fetch_sub(1, Ordering::SeqCst);
                "done"
            }
        })
        .unwrap()
}

#[tokio::test]
async fn read_only_calls_overlap_and_mutating_calls_run_alone_in_order() {
    let (live, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tools = Toolset::from_tools([
        probe("read", false, live.clone(), peak.clone(), log.clone()),
        probe("write", true, live.clone(), peak.clone(), log.clone()),
    ]);
    let reads = |n: u32| (0..4).map(move |i| call(&format!("r{n}{i}"), "read", json!({"n": n})));
    let calls: Vec<ToolCall> = reads(1)
        .chain([
            call("w1", "write", json!({"n": 1})),
            call("w2", "write", json!({"n": 2})),
        ])
        .chain(reads(2))
        .collect();
    let results = Executor::new()
        .execute_batch(&tools, calls, &ToolContext::new())
        .await;
    assert!(results.iter().all(|r| r.is_ok()));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        4,
        "the four reads of a group overlapped"
    );
    let order = log.lock().unwrap().clone();
    assert_eq!(
        &order[4..6],
        ["write1", "write2"],
        "writes ran after the first reads, in order"
    );
    assert!(order[6..].iter().all(|s| s == "read2"));
}

fn approval_tool() -> ToolHandle {
    FnTool::builder("rm")
        .spec(|s| s.description("remove a file").mutating())
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .handler(|args: Value, _ctx| async move { format!("removed {}", args["path"].as_str().unwrap_or("?")) })
        .unwrap()
}

async fn run_with(exec: Executor) -> Result<String, ToolError> {
    let tools = Toolset::from_tools([approval_tool()]);
    let r = exec
        .execute(
            &tools,
            call("1", "rm", json!({"path": "a.txt"})),
            &ToolContext::new(),
        )
        .await;
    r.outcome.map(|o| o.text)
}

#[tokio::test]
async fn approval_deny_ask_approve_edit_reject() {
    let denied = run_with(
        Executor::builder()
            .policy(ApprovalPolicy::new().with_tool("rm", Decision::Deny))
            .build(),
    )
    .await;
    assert_eq!(
        denied.unwrap_err().to_string(),
        "denied: the approval policy does not allow `rm`"
    );
    let no_approver = run_with(Executor::new()).await;
    assert_eq!(
        no_approver.unwrap_err().to_string(),
        "denied: `rm` needs approval and no approver is configured"
    );
    let approve = |resp: ApprovalResponse| {
        Executor::builder()
            .approver(move |_req: ApprovalRequest| {
                let resp = resp.clone();
                async move { resp }
            })
            .build()
    };
    assert_eq!(
        run_with(approve(ApprovalResponse::Approve)).await.unwrap(),
        "removed a.txt"
    );
    assert_eq!(
        run_with(approve(ApprovalResponse::Edit(json!({"path": "b.txt"}))))
            .await
            .unwrap(),
        "removed b.txt"
    );
    let bad_edit = run_with(approve(ApprovalResponse::Edit(json!({"path": 3}))))
        .await
        .unwrap_err();
    assert_eq!(bad_edit.kind(), ToolErrorKind::InvalidArguments);
    let rejected = run_with(approve(ApprovalResponse::Reject("not that file".into()))).await;
    assert_eq!(rejected.unwrap_err().to_string(), "denied: not that file");
}

#[tokio::test]
async fn oversized_output_is_truncated_with_a_marker() {
    let tool = FnTool::builder("dump")
        .spec(|s| s.description("big").max_output(1000, Overflow::Truncate))
        .handler(|_a, _c| async { "x".repeat(10_000) })
        .unwrap();
    let r = Executor::new()
        .execute(
            &Toolset::from_tools([tool]),
            call("1", "dump", json!({})),
            &ToolContext::new(),
        )
        .await;
    let out = r.outcome.unwrap();
    assert!(out.text.len() <= 1000, "{}", out.text.len());
    assert!(
        out.text
            .contains("bytes truncated of 10000; ask for a narrower range or filter")
    );
}

#[tokio::test]
async fn cacheable_results_are_reused_by_arguments() {
    let runs = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&runs);
    let tool = FnTool::builder("lookup")
        .spec(|s| s.description("cached lookup").cacheable(true))
        .handler(move |args: Value, _c| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { args.to_string() }
        })
        .unwrap();
    let tools = Toolset::from_tools([tool]);
    let exec = Executor::new();
    let ctx = ToolContext::new();
    let first = exec
        .execute(&tools, call("1", "lookup", json!({"a": 1, "b": 2})), &ctx)
        .await;
    let again = exec
        .execute(&tools, call("2", "lookup", json!({"b": 2, "a": 1})), &ctx)
        .await;
    let other = exec
        .execute(&tools, call("3", "lookup", json!({"a": 2})), &ctx)
        .await;
    assert!(!first.cached && again.cached && !other.cached);
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn progress_reaches_subscribers_and_the_contexts_sink_naming_the_call() {
    let steps = FnTool::builder("steps")
        .description("Report two steps")
        .handler(|_args, ctx: ToolContext| async move {
            ctx.report_progress(1.0, Some(2.0), None);
            ctx.report_progress(2.0, Some(2.0), Some("done".to_owned()));
            "ok"
        })
        .unwrap();
    let tools = Toolset::from_tools([steps.clone()]);
    // Outside an executor, reporting is a no-op.
    steps.call(json!({}), ToolContext::new()).await.unwrap();
    let exec = Executor::new();
    let mut events = exec.subscribe();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let ctx = ToolContext::new().with(toolbelt_core::ProgressSink::new(move |p| {
        sink_seen.lock().unwrap().push(p.clone());
    }));
    exec.execute(&tools, call("c9", "steps", json!({})), &ctx)
        .await
        .outcome
        .unwrap();
    let mut reported = Vec::new();
    while let Ok(event) = events.try_recv() {
        if let ExecEvent::Progress(p) = event {
            reported.push(p);
        }
    }
    assert_eq!(reported, *seen.lock().unwrap());
    let summary: Vec<_> = reported
        .iter()
        .map(|p| {
            (
                p.call_id.as_str(),
                p.tool.as_str(),
                p.progress,
                p.message.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("c9", "steps", 1.0, None),
            ("c9", "steps", 2.0, Some("done"))
        ]
    );
}

#[tokio::test]
async fn subscribers_see_started_and_finished_events() {
    let exec = Executor::new();
    let mut events = exec.subscribe();
    let tools = Toolset::from_tools([sleeper("a", false)]);
    exec.execute(
        &tools,
        call("c1", "a", json!({"ms": 1})),
        &ToolContext::new(),
    )
    .await;
    assert_eq!(
        events.recv().await.unwrap(),
        ExecEvent::CallStarted {
            call_id: "c1".into(),
            tool: "a".into()
        }
    );
    match events.recv().await.unwrap() {
        ExecEvent::CallFinished {
            call_id,
            error,
            cached,
            duration,
            ..
        } => {
            assert_eq!((call_id.as_str(), error, cached), ("c1", None, false));
            assert!(duration >= Duration::from_millis(1));
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn the_concurrency_limit_bounds_parallel_calls() {
    let (live, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tools = Toolset::from_tools([probe("read", false, live, peak.clone(), log)]);
    let calls = (0..10)
        .map(|i| call(&i.to_string(), "read", json!({"n": i})))
        .collect();
    Executor::builder()
        .concurrency(3)
        .build()
        .execute_batch(&tools, calls, &ToolContext::new())
        .await;
    assert_eq!(peak.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_panicking_tool_fails_only_its_own_call() {
    let boom = FnTool::builder("boom")
        .description("panics")
        .handler(|_a, _c| async { panic!("kaboom") as String })
        .unwrap();
    let tools = Toolset::from_tools([boom, sleeper("a", false)]);
    let calls = vec![
        call("1", "boom", json!({})),
        call("2", "a", json!({"ms": 1})),
        call("3", "boom", json!({})),
    ];
    let results = Executor::new()
        .execute_batch(&tools, calls, &ToolContext::new())
        .await;
    assert_eq!(results.len(), 3);
    assert_eq!(
        results[0].to_model_text(),
        "error: the tool crashed (kaboom); this is a bug in the tool, not in the call"
    );
    assert_eq!(results[1].to_model_text(), "a");
    assert!(!results[2].is_ok());
}

#[tokio::test]
async fn an_observed_serial_batch_reports_each_call_in_order() {
    let (live, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tools = Toolset::from_tools([probe("read", false, live, peak.clone(), log)]);
    let calls = (0..3)
        .map(|i| call(&i.to_string(), "read", json!({"n": i})))
        .collect();
    let mut seen = Vec::new();
    let results = Executor::new()
        .execute_batch_with(
            &tools,
            calls,
            &ToolContext::new(),
            false,
            |event| match event {
                toolbelt_core::BatchEvent::Started(c) => seen.push(format!("start {}", c.id)),
                toolbelt_core::BatchEvent::Finished(r) => seen.push(format!("end {}", r.call.id)),
                _ => {}
            },
        )
        .await;
    assert_eq!(results.len(), 3);
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "parallel off: one call at a time"
    );
    assert_eq!(
        seen,
        ["start 0", "end 0", "start 1", "end 1", "start 2", "end 2"]
    );
}
