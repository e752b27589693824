//! Memory and routines end to end, with a scripted model: an agent asked "每天早上九点提醒我看邮件"
//! creates a routine that the scheduler fires at 09:00 Shanghai time on a manual clock;
//! "记住我喜欢短回答" is recalled in a new conversation. SQLite; Postgres when
//! `TOOLBELT_TEST_PG_URL` is set.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::sync::{Arc, Mutex};

use serde_json::json;
use toolbelt::host::routines::{RoutineRunner, Scheduler};
use toolbelt::store::{JobOutcome, ManualClock, RoutineClaims, RoutineJob, StoreRoutines};
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, RunOptions};
use toolbelt_core::{BoxFuture, Extensions, Toolset};
use toolbelt_tools::{Memory, MemoryScope, Routines, builtin_tools, utc_ms};

use crate::cli_db::{drop_schema, stores};

/// The assistant, with every approval granted (a person approving the `routine` call).
fn agent(script: &ScriptedProvider) -> Agent {
    Agent::builder(script.provider())
        .name("assistant")
        .tools(Toolset::from_tools(builtin_tools().unwrap()))
        .executor(
            toolbelt_core::Executor::builder()
                .policy(toolbelt_core::ApprovalPolicy::allow_all())
                .build(),
        )
        .build()
        .unwrap()
}

/// Runs the assistant (a scripted model that answers the reminder) for each occurrence.
struct AgentRunner {
    prompts: Mutex<Vec<String>>,
}

impl RoutineRunner for AgentRunner {
    fn run(&self, job: RoutineJob) -> BoxFuture<'_, Result<JobOutcome, String>> {
        Box::pin(async move {
            self.prompts.lock().unwrap().push(job.prompt.clone());
            let script = ScriptedProvider::new().then_text("该看邮件了");
            let out = agent(&script)
                .run(job.prompt)
                .await
                .map_err(|e| e.to_string())?;
            let mut outcome = JobOutcome::linked(format!("routine-{}", job.run_row));
            outcome.detail = Some(out.answer);
            Ok(outcome)
        })
    }
}

#[tokio::test]
async fn a_spoken_schedule_becomes_a_routine_that_fires_at_nine_shanghai_time() {
    for (store, _dir) in stores("routine_done").await {
        let clock = Arc::new(ManualClock::new(utc_ms(2026, 11, 22, 0, 0, 0).unwrap()));
        let routines = StoreRoutines::with_clock(store.clone(), clock.clone());
        let mut ext = Extensions::new();
        ext.insert(Routines::new(Arc::new(routines.clone()), "assistant"));
        let script = ScriptedProvider::new()
            .then_call(
                "routine",
                json!({
                    "action": "create",
                    "name": "morning-mail",
                    "prompt": "提醒我看邮件",
                    "cron": "0 9 * * *",
                    "timezone": "Asia/Shanghai"
                }),
            )
            .then_text("好的，每天早上九点提醒你看邮件。");
        let out = agent(&script)
            .run_with(
                "每天早上九点提醒我看邮件",
                RunOptions::new().with_extensions(ext),
            )
            .await
            .unwrap();
        assert_eq!(out.answer, "好的，每天早上九点提醒你看邮件。");
        let tool_result = script.requests()[1]
            .messages
            .last()
            .unwrap()
            .text()
            .unwrap()
            .to_owned();
        assert!(
            tool_result.contains("next 2026-11-22T01:00:00Z"),
            "{tool_result}"
        );

        let runner = Arc::new(AgentRunner {
            prompts: Mutex::new(Vec::new()),
        });
        let scheduler = Scheduler::new(
            RoutineClaims::new(store.clone()).with_clock(clock.clone()),
            runner.clone(),
        );
        clock.set(utc_ms(2026, 11, 22, 0, 59, 59).unwrap());
        assert_eq!(scheduler.tick().await.unwrap().claimed, 0);
        clock.set(utc_ms(2026, 11, 22, 1, 0, 0).unwrap());
        assert_eq!(scheduler.tick().await.unwrap().completed, 1);
        assert_eq!(*runner.prompts.lock().unwrap(), ["提醒我看邮件"]);
        let runs = routines.runs(Some("morning-mail"), 5).await.unwrap();
        assert_eq!(runs[0].status, "completed");
        assert_eq!(runs[0].detail.as_deref(), Some("该看邮件了"));
        drop_schema(&store).await;
    }
}

#[tokio::test]
async fn remembered_preferences_are_recalled_in_a_new_conversation() {
    for (store, _dir) in stores("memory_done").await {
        let memory = Memory::new(Arc::new(store.memory()), MemoryScope::agent("assistant"));
        let mut ext = Extensions::new();
        ext.insert(memory.clone());
        let first = ScriptedProvider::new()
            .then_call(
                "memory_store",
                json!({"text": "用户喜欢短回答", "tags": ["preference"]}),
            )
            .then_text("记住了。");
        agent(&first)
            .run_with("记住我喜欢短回答", RunOptions::new().with_extensions(ext))
            .await
            .unwrap();

        // A new conversation: no history, a fresh run; only the store carries the fact.
        let mut ext = Extensions::new();
        ext.insert(memory.clone());
        let second = ScriptedProvider::new()
            .then_call("memory_recall", json!({"query": "回答 长短 偏好"}))
            .then_text("好。");
        agent(&second)
            .run_with(
                "我喜欢什么样的回答？",
                RunOptions::new().with_extensions(ext),
            )
            .await
            .unwrap();
        let requests = second.requests();
        assert!(
            !requests[0]
                .messages
                .iter()
                .any(|m| m.text().is_some_and(|t| t.contains("短回答"))),
            "the new conversation starts without the fact"
        );
        let recalled = requests[1]
            .messages
            .last()
            .unwrap()
            .text()
            .unwrap()
            .to_owned();
        assert!(recalled.contains("用户喜欢短回答"), "{recalled}");

        // Another agent does not see it.
        let other = Memory::new(Arc::new(store.memory()), MemoryScope::agent("other"));
        let mut ext = Extensions::new();
        ext.insert(other);
        let third = ScriptedProvider::new()
            .then_call("memory_recall", json!({"query": "短回答"}))
            .then_text("不知道。");
        agent(&third)
            .run_with(
                "我喜欢什么样的回答？",
                RunOptions::new().with_extensions(ext),
            )
            .await
            .unwrap();
        let recalled = third.requests()[1]
            .messages
            .last()
            .unwrap()
            .text()
            .unwrap()
            .to_owned();
        assert!(
            recalled.contains("nothing remembered matches"),
            "{recalled}"
        );
        drop_schema(&store).await;
    }
}

/// Routing by keyword: `记住` → memory and `定时` → routine, with the real built-in tools, in the keyword
/// and hybrid routers.
#[tokio::test]
async fn seed_002_routes_remember_to_memory_and_schedules_to_routine() {
    use toolbelt::router::{AnyRouter, HybridRouter, KeywordRouter, LexicalRouter, RouteRequest};
    let tools = Toolset::from_tools(builtin_tools().unwrap());
    let keyword = AnyRouter::new(KeywordRouter::builtin());
    let hybrid = AnyRouter::new(
        HybridRouter::new(LexicalRouter::default()).with_keyword(KeywordRouter::builtin()),
    );
    for (name, router) in [("keyword", &keyword), ("hybrid", &hybrid)] {
        let d = router
            .route_or_fallback(&RouteRequest::new("记住我喜欢短回答", tools.clone()))
            .await;
        let names = d.tool_names();
        assert!(!d.fallback, "{name}: {names:?}");
        assert!(
            names.contains(&"memory_store".to_owned()),
            "{name}: {names:?}"
        );
        assert!(
            names.iter().all(|n| n.starts_with("memory_")) || name == "hybrid",
            "{name}: {names:?}"
        );
        let d = router
            .route_or_fallback(&RouteRequest::new(
                "每天早上九点定时提醒我看邮件",
                tools.clone(),
            ))
            .await;
        let names = d.tool_names();
        assert!(!d.fallback, "{name}: {names:?}");
        assert_eq!(names[0], "routine", "{name}: {names:?}");
    }
}
