//! Memory and routines end to end, through the real binary: `toolbelt run` keeps memory and routines in
//! its database. A scripted model asks for the `routine` and `memory_*` tools; the routine it
//! creates fires at 09:00 Shanghai time on a manual clock; a preference stored in one run is
//! recalled by the next. SQLite; Postgres when `TOOLBELT_TEST_PG_URL` is set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolbelt::host::routines::{RoutineRunner, Scheduler};
use toolbelt::store::{JobOutcome, ManualClock, RoutineClaims, RoutineJob, Store, StoreRoutines};
use toolbelt_core::BoxFuture;

use crate::cli_db::{Db, databases, schema};
use crate::cli_run::{fake_openai, sse, toolbelt_run};

fn call(name: &str, args: Value) -> String {
    let call = json!({"index": 0, "id": "call_1", "type": "function",
        "function": {"name": name, "arguments": args.to_string()}});
    sse(
        &[json!({"role": "assistant", "tool_calls": [call]})],
        "tool_calls",
    )
}

fn say(text: &str) -> String {
    sse(&[json!({"content": text})], "stop")
}

fn run(db: &Db, dir: &std::path::Path, url: &str, input: &str) -> std::process::Output {
    run_answering(db, dir, url, input, "")
}

/// As [`run`], with `stdin` answering the terminal's approval questions.
fn run_answering(
    db: &Db,
    dir: &std::path::Path,
    url: &str,
    input: &str,
    stdin: &str,
) -> std::process::Output {
    let env = [
        ("OPENAI_BASE_URL", url),
        ("TOOLBELT_MODEL", "m"),
        ("TOOLBELT_DATABASE_URL", db.url.as_str()),
    ];
    let out = toolbelt_run(dir, &env, &[input], stdin);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The text of the last tool result sent back to the model.
fn last_tool_result(body: &Value) -> String {
    let messages = body["messages"].as_array().unwrap();
    let tool = messages.iter().rev().find(|m| m["role"] == "tool").unwrap();
    tool["content"]
        .as_str()
        .map_or_else(|| tool["content"].to_string(), str::to_owned)
}

struct Fired(Mutex<Vec<(String, String)>>);

impl RoutineRunner for Fired {
    fn run(&self, job: RoutineJob) -> BoxFuture<'_, Result<JobOutcome, String>> {
        self.0
            .lock()
            .unwrap()
            .push((job.agent.clone(), job.prompt.clone()));
        Box::pin(async { Ok(JobOutcome::default()) })
    }
}

#[tokio::test]
async fn toolbelt_run_schedules_a_routine_that_fires_at_nine_in_shanghai() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path(), "cli_run_routine") {
        schema(&db, true).await;
        let (url, model) = fake_openai(vec![
            call(
                "routine",
                json!({"action": "create", "name": "morning-mail", "prompt": "提醒我看邮件",
                                    "cron": "0 9 * * *", "timezone": "Asia/Shanghai"}),
            ),
            say("好的，每天早上九点提醒你看邮件。"),
        ]);
        // The routine tool asks first: the person at the terminal approves.
        let out = run_answering(&db, dir.path(), &url, "每天早上九点提醒我看邮件", "y\n");
        assert!(String::from_utf8_lossy(&out.stdout).contains("每天早上九点"));
        let bodies = model.join().unwrap();
        let offered: Vec<&str> = bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        assert!(
            offered.contains(&"routine"),
            "the router did not offer `routine`: {offered:?}"
        );
        assert!(
            last_tool_result(&bodies[1]).contains("created morning-mail"),
            "{}",
            bodies[1]
        );

        let store = Store::open(&db.url).await.unwrap();
        let info = store.routines().get("morning-mail").await.unwrap();
        assert_eq!(
            info.agent, "default",
            "routines run the server's default agent"
        );
        let due = info.next_due_ms.unwrap();
        assert_eq!(
            (due / 1000 + 8 * 3600) % 86_400,
            9 * 3600,
            "next occurrence is 09:00 in Shanghai"
        );
        let clock = Arc::new(ManualClock::new(due - 1000));
        let fired = Arc::new(Fired(Mutex::new(Vec::new())));
        let scheduler = Scheduler::new(
            RoutineClaims::new(store.clone()).with_clock(clock.clone()),
            fired.clone(),
        );
        assert_eq!(
            scheduler.tick().await.unwrap().claimed,
            0,
            "one second early"
        );
        clock.set(due);
        assert_eq!(scheduler.tick().await.unwrap().completed, 1);
        assert_eq!(
            *fired.0.lock().unwrap(),
            [("default".to_owned(), "提醒我看邮件".to_owned())]
        );
        let runs = StoreRoutines::new(store.clone())
            .runs(Some("morning-mail"), 5)
            .await
            .unwrap();
        assert_eq!(
            (runs.len(), runs[0].due_at, runs[0].status.as_str()),
            (1, due, "completed")
        );
        store.close().await;
        schema(&db, false).await;
    }
}

#[tokio::test]
async fn toolbelt_run_recalls_in_a_new_run_what_an_earlier_run_stored() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path(), "cli_run_memory") {
        schema(&db, true).await;
        let (url, model) = fake_openai(vec![
            call("memory_store", json!({"text": "用户喜欢短回答"})),
            say("记住了。"),
        ]);
        run(&db, dir.path(), &url, "记住我喜欢短回答");
        let first = model.join().unwrap();
        assert!(
            last_tool_result(&first[1]).contains("remembered as #"),
            "{}",
            first[1]
        );

        let (url, model) = fake_openai(vec![
            call("memory_recall", json!({"query": "回答 喜欢"})),
            say("你喜欢短回答。"),
        ]);
        let out = run(&db, dir.path(), &url, "我喜欢什么样的回答？");
        assert!(String::from_utf8_lossy(&out.stdout).contains("你喜欢短回答"));
        let second = model.join().unwrap();
        assert_eq!(
            second[0]["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .count(),
            1,
            "a new conversation: no earlier turns"
        );
        assert!(
            last_tool_result(&second[1]).contains("用户喜欢短回答"),
            "{}",
            second[1]
        );
        schema(&db, false).await;
    }
}
