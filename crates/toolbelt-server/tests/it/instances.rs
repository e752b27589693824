//! Two instances on one database (SQLite file or Postgres): a request for a run the other holds says where it lives.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    FakeModel, READER, RUNNER, TestServer, json_of, on_both, problem_of, text, tool_call,
    wait_status,
};

/// Starts a run of `helper` on `server` that waits for the approval of `delete_file`:
/// (run id, approval id).
async fn waiting_run(server: &TestServer) -> (String, String) {
    let run = json_of(
        server
            .post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "delete x"}))
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    assert_eq!(run["status"], "waiting", "{run}");
    let approval = run["pending_approvals"][0]["id"].as_str().unwrap();
    (run["id"].as_str().unwrap().to_owned(), approval.to_owned())
}

/// `POST path` on `server` with `body`, expecting the problem `status`/`code`: its `Location` header and document.
async fn misdirected(
    server: &TestServer,
    path: &str,
    body: Value,
    status: u16,
    code: &str,
) -> (String, Value) {
    let response = server.post(path, RUNNER).json(&body).send().await.unwrap();
    let location = response
        .headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (location, problem_of(response, status, code).await)
}

#[tokio::test]
async fn an_approval_sent_to_the_other_instance_names_the_instance_holding_the_run() {
    on_both(|db| async move {
        let model = FakeModel::start(vec![
            tool_call("c1", "delete_file", json!({"path": "x"})),
            text(&["done"]),
        ])
        .await;
        // Both start before the run: a SQLite server marks unfinished runs interrupted at start-up.
        let a = TestServer::start_stored(&db, Some(&model.url)).await;
        let b = TestServer::start_stored(&db, Some(&model.url)).await;
        let health = json_of(a.get("/healthz", READER).send().await.unwrap(), 200).await;
        let (run, approval) = waiting_run(&a).await;
        let approve = json!({"decision": "approve"});
        let (location, problem) = misdirected(
            &b,
            &format!("/api/v1/approvals/{approval}"),
            approve.clone(),
            421,
            "held_by_other_instance",
        )
        .await;
        let expected = format!("{}/api/v1/approvals/{approval}", a.url);
        assert_eq!(
            (problem["instance"].clone(), location),
            (
                json!({"id": health["instance"], "url": a.url, "location": expected.clone()}),
                expected
            ),
            "{}",
            db.engine
        );
        let (location, _) = misdirected(
            &b,
            &format!("/api/v1/runs/{run}/cancel"),
            json!({}),
            421,
            "held_by_other_instance",
        )
        .await;
        assert_eq!(location, format!("{}/api/v1/runs/{run}/cancel", a.url));
        // Unknown ids stay plain 404s.
        misdirected(
            &b,
            "/api/v1/approvals/apr_0000",
            approve.clone(),
            404,
            "approval_not_found",
        )
        .await;
        misdirected(
            &b,
            "/api/v1/runs/run_0000/cancel",
            json!({}),
            404,
            "run_not_found",
        )
        .await;
        // Answered where the run lives, it goes on; the approval is then unknown everywhere.
        json_of(
            a.post(&format!("/api/v1/approvals/{approval}"), RUNNER)
                .json(&approve)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        wait_status(&b, &run, "succeeded").await;
        misdirected(
            &b,
            &format!("/api/v1/approvals/{approval}"),
            approve,
            404,
            "approval_not_found",
        )
        .await;
        a.stop().await;
        b.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn an_approval_of_a_run_whose_instance_is_gone_is_a_conflict_naming_it() {
    on_both(|db| async move {
        let model =
            FakeModel::start(vec![tool_call("c1", "delete_file", json!({"path": "x"}))]).await;
        let a = TestServer::start_stored(&db, Some(&model.url)).await;
        let b = TestServer::start_stored(&db, Some(&model.url)).await;
        let (_, approval) = waiting_run(&a).await;
        let url = a.url.clone();
        a.abort();
        let (_, problem) = misdirected(
            &b,
            &format!("/api/v1/approvals/{approval}"),
            json!({"decision": "approve"}),
            409,
            "holder_unreachable",
        )
        .await;
        assert_eq!(
            problem["instance"]["url"],
            json!(url),
            "{}: {problem}",
            db.engine
        );
        b.stop().await;
        db
    })
    .await;
}
