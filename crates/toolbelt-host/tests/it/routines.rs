//! The routine loop on both engines, on a manual clock (no sleeping): each occurrence runs
//! once, missed ones follow the policy, a dead scheduler's run is interrupted.

use std::sync::{Arc, Mutex};

use toolbelt_core::BoxFuture;
use toolbelt_host::routines::{RoutineRunner, Scheduler};
use toolbelt_store::{
    ClaimConfig, JobOutcome, ManualClock, RoutineClaims, RoutineJob, Store, StoreRoutines,
};
use toolbelt_tools::{MissedPolicy, RoutineDraft, RoutineStore, Schedule, utc_ms};

use crate::support::{databases, each_engine};

/// A runner that records the jobs it is given and links each to a made-up run id.
#[derive(Default)]
struct FakeRunner {
    jobs: Mutex<Vec<RoutineJob>>,
}

impl FakeRunner {
    fn jobs(&self) -> Vec<RoutineJob> {
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
        let scheduler = Scheduler::new(
            RoutineClaims::new(store.clone()).with_clock(clock.clone()),
            runner.clone(),
        );
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
        let claims = RoutineClaims::new(store.clone())
            .with_clock(clock.clone())
            .with_config(ClaimConfig::default().with_grace_ms(30_000));
        let scheduler = Scheduler::new(claims, runner.clone());
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
        let config = ClaimConfig::default().with_batch(20);
        let a = RoutineClaims::new(store.clone())
            .with_clock(clock.clone())
            .with_config(config.clone().with_instance("a"));
        let b = RoutineClaims::new(other.clone())
            .with_clock(clock.clone())
            .with_config(config.with_instance("b"));
        let (a, b) = (Scheduler::new(a, ra.clone()), Scheduler::new(b, rb.clone()));
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
        let config = ClaimConfig::default().with_lease_ms(60_000);
        let dying = RoutineClaims::new(store.clone())
            .with_clock(clock.clone())
            .with_config(config.clone().with_instance("dying"));
        let dying = Scheduler::new(dying, Arc::new(StuckRunner));
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
        let survivor = RoutineClaims::new(store.clone())
            .with_clock(clock.clone())
            .with_config(config.with_instance("survivor"));
        let survivor = Scheduler::new(survivor, runner.clone());
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
