//! Routines and the scheduler on both engines, on a manual clock (no sleeping).

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolbelt_core::{BoxFuture, Executor, ToolCall, ToolContext, ToolError, ToolOutput, Toolset};
use toolbelt_store::{
    JobOutcome, ManualClock, RoutineJob, RoutineRunner, Scheduler, SchedulerConfig, Store,
    StoreRoutines,
};
use toolbelt_tools::{
    MissedPolicy, RoutineDraft, RoutineStore, Routines, Schedule, builtin_tools, utc_ms,
};

use crate::support::{databases, each_engine};

/// A runner that records the jobs it is given and links each to a made-up run id.
#[derive(Default)]
pub(crate) struct FakeRunner {
    pub(crate) jobs: Mutex<Vec<RoutineJob>>,
}

impl FakeRunner {
    pub(crate) fn jobs(&self) -> Vec<RoutineJob> {
        self.jobs.lock().unwrap().clone()
    }
}

impl RoutineRunner for FakeRunner {
    fn run(&self, job: RoutineJob) -> BoxFuture<'_, Result<JobOutcome, String>> {
        let id = format!("run-{}", job.run_row);
        let fail = job.prompt.contains("fail");
        self.jobs.lock().unwrap().push(job);
        Box::pin(async move {
            if fail {
                Err("the agent failed".to_owned())
            } else {
                Ok(JobOutcome::linked(id))
            }
        })
    }
}

/// A runner whose runs never end (the process "dies" mid-run).
struct StuckRunner;

impl RoutineRunner for StuckRunner {
    fn run(&self, _job: RoutineJob) -> BoxFuture<'_, Result<JobOutcome, String>> {
        Box::pin(std::future::pending())
    }
}

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

#[tokio::test]
async fn a_cron_routine_fires_at_its_instant_once() {
    each_engine(|store: Store| async move {
        let clock = Arc::new(ManualClock::new(t0()));
        let routines = StoreRoutines::with_clock(store.clone(), clock.clone());
        routines
            .create(RoutineDraft::new(
                "mail",
                "assistant",
                "提醒我看邮件",
                Schedule::cron("0 9 * * *", "Asia/Shanghai").unwrap(),
            ))
            .await
            .unwrap();
        let runner = Arc::new(FakeRunner::default());
        let scheduler = Scheduler::new(store.clone(), runner.clone()).with_clock(clock.clone());
        clock.set(utc_ms(2026, 11, 22, 0, 59, 59).unwrap());
        assert_eq!(scheduler.tick().await.unwrap().claimed, 0);
        clock.set(utc_ms(2026, 11, 22, 1, 0, 0).unwrap());
        let report = scheduler.tick().await.unwrap();
        assert_eq!((report.claimed, report.completed), (1, 1));
        assert_eq!(scheduler.tick().await.unwrap().claimed, 0);
        let jobs = runner.jobs();
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].prompt, "提醒我看邮件");
        assert_eq!(jobs[0].due_at, utc_ms(2026, 11, 22, 1, 0, 0).unwrap());
        let runs = routines.runs(Some("mail"), 10).await.unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].status, "completed");
        assert_eq!(
            runs[0].run_id.as_deref(),
            Some(format!("run-{}", runs[0].id).as_str())
        );
        let info = routines.all().await.unwrap().remove(0);
        assert_eq!(info.next_due_ms, utc_ms(2026, 11, 23, 1, 0, 0));
        assert_eq!(info.last_status.as_deref(), Some("completed"));

        // run now: one manual run at the next tick, recorded as such.
        routines.run_now("mail").await.unwrap();
        let report = scheduler.tick().await.unwrap();
        assert_eq!(report.claimed, 1);
        let runs = routines.runs(Some("mail"), 10).await.unwrap();
        assert!(runs[0].manual);
        assert_eq!(runs.len(), 2);
    })
    .await;
}

#[tokio::test]
async fn missed_occurrences_follow_the_policy_and_are_recorded() {
    each_engine(|store: Store| async move {
        let clock = Arc::new(ManualClock::new(t0()));
        let routines = StoreRoutines::with_clock(store.clone(), clock.clone());
        for (name, policy) in [
            ("skip", MissedPolicy::Skip),
            ("once", MissedPolicy::RunOnce),
            ("all", MissedPolicy::RunAll),
            ("failing", MissedPolicy::RunOnce),
        ] {
            let prompt = if name == "failing" {
                "fail please"
            } else {
                "tick"
            };
            routines
                .create(
                    RoutineDraft::new(name, "a", prompt, Schedule::every(60).unwrap())
                        .with_missed(policy),
                )
                .await
                .unwrap();
        }
        let runner = Arc::new(FakeRunner::default());
        let scheduler = Scheduler::new(store.clone(), runner.clone())
            .with_clock(clock.clone())
            .with_config(SchedulerConfig::default().with_grace_ms(30_000));
        // Down for ten minutes: occurrences at +1 … +10 min, all later than the grace.
        clock.set(t0() + 10 * 60_000 + 45_000);
        let report = scheduler.tick().await.unwrap();
        assert_eq!(report.claimed, 1 + 10 + 1);
        assert_eq!(report.missed, 10 + 9 + 9);
        assert_eq!((report.completed, report.failed), (11, 1));
        let count = |runs: &[toolbelt_store::RoutineRun], status: &str| {
            runs.iter().filter(|r| r.status == status).count()
        };
        let skip = routines.runs(Some("skip"), 100).await.unwrap();
        assert_eq!((count(&skip, "missed"), skip.len()), (10, 10));
        assert!(skip[0].detail.as_deref().unwrap().contains("policy skip"));
        let once = routines.runs(Some("once"), 100).await.unwrap();
        assert_eq!((count(&once, "completed"), count(&once, "missed")), (1, 9));
        assert_eq!(once[0].status, "completed", "the latest one runs");
        let all = routines.runs(Some("all"), 100).await.unwrap();
        assert_eq!(count(&all, "completed"), 10);
        let failing = routines.runs(Some("failing"), 100).await.unwrap();
        assert_eq!(failing[0].status, "failed");
        assert_eq!(failing[0].detail.as_deref(), Some("the agent failed"));
        // Back on time: the next occurrence runs under every policy.
        clock.set(t0() + 11 * 60_000 + 1_000);
        let report = scheduler.tick().await.unwrap();
        assert_eq!((report.claimed, report.missed), (4, 0));
    })
    .await;
}

#[tokio::test]
async fn two_schedulers_run_200_due_occurrences_exactly_once() {
    for db in databases() {
        let store = db.open().await;
        let clock = Arc::new(ManualClock::new(t0()));
        let routines = StoreRoutines::with_clock(store.clone(), clock.clone());
        for i in 0..200 {
            routines
                .create(RoutineDraft::new(
                    format!("r{i:03}"),
                    "a",
                    "tick",
                    Schedule::every(60).unwrap(),
                ))
                .await
                .unwrap();
        }
        // A second connection pool: as another process would have.
        let other = db.open().await;
        let (ra, rb) = (
            Arc::new(FakeRunner::default()),
            Arc::new(FakeRunner::default()),
        );
        let config = SchedulerConfig::default().with_batch(20);
        let a = Scheduler::new(store.clone(), ra.clone())
            .with_clock(clock.clone())
            .with_config(config.clone().with_instance("a"));
        let b = Scheduler::new(other.clone(), rb.clone())
            .with_clock(clock.clone())
            .with_config(config.with_instance("b"));
        clock.set(t0() + 60_000);
        let (x, y) = tokio::join!(a.tick(), b.tick());
        let (x, y) = (x.unwrap(), y.unwrap());
        eprintln!(
            "{}: instance a ran {}, instance b ran {}",
            db.engine, x.completed, y.completed
        );
        assert_eq!(x.completed + y.completed, 200);
        let mut names: Vec<String> = ra
            .jobs()
            .into_iter()
            .chain(rb.jobs())
            .map(|j| j.routine)
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 200, "every routine ran, none twice");
        let runs = routines.runs(None, 1000).await.unwrap();
        assert_eq!(runs.len(), 200);
        assert!(runs.iter().all(|r| r.status == "completed"));
        other.close().await;
        store.close().await;
        db.cleanup().await;
    }
}

#[tokio::test]
async fn a_scheduler_killed_mid_run_leaves_the_occurrence_interrupted_not_lost_not_doubled() {
    each_engine(|store: Store| async move {
        let clock = Arc::new(ManualClock::new(t0()));
        let routines = StoreRoutines::with_clock(store.clone(), clock.clone());
        routines
            .create(RoutineDraft::new(
                "job",
                "a",
                "work",
                Schedule::every(3600).unwrap(),
            ))
            .await
            .unwrap();
        let config = SchedulerConfig::default().with_lease_ms(60_000);
        let dying = Scheduler::new(store.clone(), Arc::new(StuckRunner))
            .with_clock(clock.clone())
            .with_config(config.clone().with_instance("dying"));
        clock.set(t0() + 3_600_000);
        // The dying instance claims and starts the run, then its process goes away.
        let task = tokio::spawn(async move { dying.tick().await });
        loop {
            let runs = routines.runs(Some("job"), 10).await.unwrap();
            if runs.first().is_some_and(|r| r.status == "running") {
                break;
            }
            tokio::task::yield_now().await;
        }
        task.abort();
        let _ = task.await;

        let runner = Arc::new(FakeRunner::default());
        let survivor = Scheduler::new(store.clone(), runner.clone())
            .with_clock(clock.clone())
            .with_config(config.with_instance("survivor"));
        // Within the lease the run is still presumed alive.
        clock.advance(30_000);
        assert_eq!(survivor.tick().await.unwrap().interrupted, 0);
        clock.advance(31_000);
        let report = survivor.tick().await.unwrap();
        assert_eq!((report.interrupted, report.claimed), (1, 0));
        let runs = routines.runs(Some("job"), 10).await.unwrap();
        assert_eq!(runs.len(), 1, "not doubled");
        assert_eq!(runs[0].status, "interrupted");
        assert_eq!(runs[0].claimed_by, "dying");
        assert!(runner.jobs().is_empty());
    })
    .await;
}
