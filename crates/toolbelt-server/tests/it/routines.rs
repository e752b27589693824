//! `/api/v1/routines` on SQLite and Postgres: validation, scopes, pause/resume/delete, and
//! the scheduler inside the server running a routine's agent as an ordinary run.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    ADMIN, FakeModel, READER, RUNNER, TestServer, json_of, on_both, problem_of, text,
};

fn morning() -> Value {
    json!({"name": "mail", "agent": "helper", "prompt": "Remind me to read my email",
           "cron": "0 9 * * *", "timezone": "Asia/Shanghai"})
}

#[tokio::test]
async fn routines_are_validated_created_paused_resumed_and_deleted() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let created = json_of(
            s.post("/api/v1/routines", ADMIN)
                .json(&morning())
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        assert_eq!(
            (created["schedule"].clone(), created["paused"].clone()),
            (
                json!({"kind": "cron", "expr": "0 9 * * *", "tz": "Asia/Shanghai"}),
                json!(false)
            ),
            "{}",
            db.engine
        );
        assert!(created["next_due_ms"].is_i64(), "{created}");
        for (body, pointer) in [
            (
                json!({"name": "a", "prompt": "p", "cron": "61 * * * *"}),
                "/cron",
            ),
            (
                json!({"name": "a", "prompt": "p", "cron": "0 9 * * *", "timezone": "Mars/Base"}),
                "/timezone",
            ),
            (
                json!({"name": "a", "prompt": "p", "every_seconds": 0}),
                "/every_seconds",
            ),
            (json!({"name": "a", "prompt": "p"}), "/cron"),
            (
                json!({"name": "a", "agent": "nobody", "prompt": "p", "every_seconds": 60}),
                "/agent",
            ),
        ] {
            let problem = json_of(
                s.post("/api/v1/routines", ADMIN)
                    .json(&body)
                    .send()
                    .await
                    .unwrap(),
                422,
            )
            .await;
            assert_eq!(problem["pointer"], pointer, "{body} -> {problem}");
        }
        problem_of(
            s.post("/api/v1/routines", ADMIN)
                .json(&morning())
                .send()
                .await
                .unwrap(),
            409,
            "routine_exists",
        )
        .await;
        problem_of(
            s.post("/api/v1/routines", READER)
                .json(&morning())
                .send()
                .await
                .unwrap(),
            403,
            "missing_scope",
        )
        .await;
        let paused = json_of(
            s.post("/api/v1/routines/mail/pause", ADMIN)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (paused["paused"].clone(), paused["next_due_ms"].clone()),
            (json!(true), Value::Null)
        );
        let resumed = json_of(
            s.post("/api/v1/routines/mail/resume", ADMIN)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert!(resumed["next_due_ms"].is_i64(), "{resumed}");
        let listed = json_of(s.get("/api/v1/routines", READER).send().await.unwrap(), 200).await;
        assert_eq!(listed.as_array().map(Vec::len), Some(1));
        let gone = s
            .http
            .delete(format!("{}/api/v1/routines/mail", s.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        assert_eq!(gone.status().as_u16(), 204);
        problem_of(
            s.get("/api/v1/routines/mail", READER).send().await.unwrap(),
            404,
            "routine_not_found",
        )
        .await;
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn the_server_scheduler_runs_a_routine_as_a_run_linked_from_its_history() {
    on_both(|db| async move {
        let model = FakeModel::start(vec![text(&["Time to read ", "your email."])]).await;
        let s = TestServer::start_scheduled(&db, Some(&model.url)).await;
        json_of(
            s.post("/api/v1/routines", ADMIN)
                .json(&morning())
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        json_of(
            s.post("/api/v1/routines/mail/run", RUNNER)
                .send()
                .await
                .unwrap(),
            202,
        )
        .await;
        let deadline = Instant::now() + Duration::from_secs(20);
        let detail = loop {
            let detail = json_of(
                s.get("/api/v1/routines/mail", READER).send().await.unwrap(),
                200,
            )
            .await;
            if detail["runs"][0]["status"] == "completed" || Instant::now() > deadline {
                break detail;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let occurrence = &detail["runs"][0];
        assert_eq!(
            (
                occurrence["status"].clone(),
                occurrence["manual"].clone(),
                occurrence["detail"].clone()
            ),
            (
                json!("completed"),
                json!(true),
                json!("Time to read your email.")
            ),
            "{}: {detail}",
            db.engine
        );
        let run_id = occurrence["run_id"].as_str().unwrap();
        let run = json_of(
            s.get(&format!("/api/v1/runs/{run_id}"), READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (
                run["agent"].clone(),
                run["input"].clone(),
                run["answer"].clone()
            ),
            (
                json!("helper"),
                json!("Remind me to read my email"),
                json!("Time to read your email.")
            ),
            "{run}"
        );
        s.stop().await;
        db
    })
    .await;
}
