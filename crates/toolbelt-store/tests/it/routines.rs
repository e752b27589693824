//! Routines and the `routine` tool on both engines, on a manual clock (no sleeping). The
//! scheduler loop's tests are in the host crate (`toolbelt_host::routines`).

use std::sync::Arc;

use serde_json::{Value, json};
use toolbelt_core::{Executor, ToolCall, ToolContext, ToolError, ToolOutput, Toolset};
use toolbelt_store::{ManualClock, Store, StoreRoutines};
use toolbelt_tools::{RoutineDraft, RoutineStore, Routines, Schedule, builtin_tools, utc_ms};

use crate::support::each_engine;

fn t0() -> i64 {
    utc_ms(2026, 11, 22, 0, 0, 0).unwrap()
}

/// Calls the `routine` tool with every approval granted (the tool needs one: a person decides).
async fn call(routines: &Routines, args: Value) -> Result<ToolOutput, ToolError> {
    let tools = Toolset::from_tools(builtin_tools().unwrap());
    let ctx = ToolContext::new().with(routines.clone());
    Executor::builder()
        .policy(toolbelt_core::ApprovalPolicy::allow_all())
        .build()
        .execute(&tools, ToolCall::new("c1", "routine", args), &ctx)
        .await
        .outcome
}

#[tokio::test]
async fn the_tool_creates_lists_pauses_resumes_runs_and_deletes() {
    each_engine(|store: Store| async move {
        let clock = Arc::new(ManualClock::new(t0()));
        let routines = Routines::new(
            Arc::new(StoreRoutines::with_clock(store.clone(), clock.clone())),
            "assistant",
        );
        let out = call(
            &routines,
            json!({"action": "create", "name": "mail", "prompt": "提醒我看邮件", "cron": "0 9 * * *", "timezone": "Asia/Shanghai"}),
        )
        .await
        .unwrap();
        assert_eq!(
            out.text,
            "created mail: cron 0 9 * * * (Asia/Shanghai) [active] next 2026-11-22T01:00:00Z; agent assistant: 提醒我看邮件"
        );
        let err = call(
            &routines,
            json!({"action": "create", "name": "mail", "prompt": "x", "every_seconds": 60}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("already exists"), "{err}");
        let err = call(
            &routines,
            json!({"action": "create", "name": "bad", "prompt": "x", "cron": "0 9 * *"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("/cron"), "{err}");
        assert!(err.to_string().contains("5 fields"), "{err}");
        let err = call(
            &routines,
            json!({"action": "create", "name": "bad", "prompt": "x", "cron": "0 9 * * *", "timezone": "Moon/Base"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("/timezone"), "{err}");
        let err = call(
            &routines,
            json!({"action": "create", "name": "bad", "prompt": "x", "every_seconds": 0}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("/every_seconds: 0 is not allowed"), "{err}");
        let err = call(&routines, json!({"action": "create", "name": "bad", "prompt": "x"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("exactly one of `cron` and `every_seconds`"), "{err}");

        let out = call(&routines, json!({"action": "pause", "name": "mail"})).await.unwrap();
        assert!(out.text.contains("[paused] next -"), "{}", out.text);
        clock.set(utc_ms(2026, 11, 23, 2, 0, 0).unwrap());
        let out = call(&routines, json!({"action": "resume", "name": "mail"})).await.unwrap();
        // Resuming does not owe the 23rd's occurrence.
        assert!(out.text.contains("next 2026-11-24T01:00:00Z"), "{}", out.text);
        let out = call(&routines, json!({"action": "run_now", "name": "mail"})).await.unwrap();
        assert_eq!(out.json.unwrap()["run_requested"], true);
        let out = call(&routines, json!({"action": "list"})).await.unwrap();
        assert_eq!(out.json.unwrap()["routines"].as_array().unwrap().len(), 1);
        let err = call(&routines, json!({"action": "delete", "name": "nope"}))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no routine named `nope`"), "{err}");
        call(&routines, json!({"action": "delete", "name": "mail"})).await.unwrap();
        let out = call(&routines, json!({"action": "list"})).await.unwrap();
        assert_eq!(out.text, "no routines");
    })
    .await;
}

#[tokio::test]
async fn the_tool_sees_and_changes_only_its_own_agents_routines_and_asks_first() {
    each_engine(|store: Store| async move {
        let clock = Arc::new(ManualClock::new(t0()));
        let backend = Arc::new(StoreRoutines::with_clock(store.clone(), clock.clone()));
        backend
            .create(RoutineDraft::new(
                "admin-report",
                "reporter",
                "send the weekly report",
                Schedule::every(3600).unwrap(),
            ))
            .await
            .unwrap();
        let mine = Routines::new(backend.clone(), "assistant");
        // Another agent's routine is answered as a missing one, for every action.
        let out = call(&mine, json!({"action": "list"})).await.unwrap();
        assert_eq!(out.text, "no routines");
        for action in ["pause", "resume", "delete", "run_now"] {
            let err = call(&mine, json!({"action": action, "name": "admin-report"}))
                .await
                .unwrap_err();
            assert!(err.to_string().contains("no routine named `admin-report`"), "{action}: {err}");
        }
        assert!(!backend.get("admin-report").await.unwrap().paused);
        // The tool never names another agent: `agent` is not an argument.
        let err = call(
            &mine,
            json!({"action": "create", "name": "x", "prompt": "p", "every_seconds": 60, "agent": "reporter"}),
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("unknown argument `agent`"), "{err}");
        // What it creates runs its own agent.
        let out = call(
            &mine,
            json!({"action": "create", "name": "x", "prompt": "p", "every_seconds": 60}),
        )
        .await
        .unwrap();
        assert_eq!(out.json.unwrap()["agent"], "assistant");
        // Without a person to approve, nothing is created.
        let tools = Toolset::from_tools(builtin_tools().unwrap());
        let ctx = ToolContext::new().with(mine.clone());
        let refused = Executor::new()
            .execute(
                &tools,
                ToolCall::new(
                    "c2",
                    "routine",
                    json!({"action": "create", "name": "y", "prompt": "p", "every_seconds": 60}),
                ),
                &ctx,
            )
            .await
            .outcome
            .unwrap_err();
        assert!(matches!(refused, ToolError::Denied { .. }), "{refused:?}");
        assert!(backend.get("y").await.is_err());
    })
    .await;
}
