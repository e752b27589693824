//! Agent runs over HTTP against a scripted model: JSON, SSE, approvals from another client, cancel, continue.

use std::time::Duration;

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    FakeModel, READER, RUNNER, TestServer, json_of, problem_of, text, tool_call, wait_status,
};

#[tokio::test]
async fn a_run_answers_as_json_with_its_transcript() {
    let model = FakeModel::start(vec![
        tool_call("c1", "echo", json!({"text": "pong"})),
        text(&["The tool said ", "pong."]),
    ])
    .await;
    let s = TestServer::start(Some(&model.url)).await;
    let run = json_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "echo pong"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (run["status"].clone(), run["answer"].clone()),
        (json!("succeeded"), json!("The tool said pong."))
    );
    let detail = json_of(
        s.get(
            &format!("/api/v1/runs/{}", run["id"].as_str().unwrap()),
            READER,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    let kinds: Vec<&str> = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    for kind in [
        "started",
        "routed",
        "tool_call_started",
        "tool_progress",
        "tool_call_finished",
        "finished",
    ] {
        assert!(kinds.contains(&kind), "{kinds:?}");
    }
    let progress = detail["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "tool_progress")
        .unwrap();
    assert_eq!(
        (&progress["data"]["tool"], &progress["data"]["message"]),
        (&json!("echo"), &json!("echoing")),
        "{progress}"
    );
    assert!(
        detail["messages"].as_array().unwrap().len() >= 4,
        "{detail}"
    );
    let listed = json_of(
        s.get("/api/v1/runs?agent=helper", READER)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(listed["items"][0]["id"], run["id"]);
}

#[tokio::test]
async fn a_run_streams_its_events_as_sse() {
    let model = FakeModel::start(vec![text(&["hello"])]).await;
    let s = TestServer::start(Some(&model.url)).await;
    let r = s
        .post("/api/v1/agents/helper/runs", RUNNER)
        .header("accept", "text/event-stream")
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let events: Vec<String> = eventsource_stream::EventStream::new(r.bytes_stream())
        .map(|e| e.unwrap().event)
        .collect()
        .await;
    assert_eq!(events.first().map(String::as_str), Some("started"));
    assert_eq!(events.last().map(String::as_str), Some("finished"));
    assert!(events.contains(&"text_delta".to_owned()), "{events:?}");
}

#[tokio::test]
async fn an_approval_given_by_another_client_resumes_a_run_whose_starter_left() {
    let model = FakeModel::start(vec![
        tool_call("c1", "delete_file", json!({"path": "a.txt"})),
        text(&["done"]),
    ])
    .await;
    let s = TestServer::start(Some(&model.url)).await;
    // Client 1 starts the run over SSE, reads until the approval request, and disconnects.
    let r = s
        .post("/api/v1/agents/helper/runs", RUNNER)
        .header("accept", "text/event-stream")
        .json(&json!({"input": "delete a.txt"}))
        .send()
        .await
        .unwrap();
    let mut stream = eventsource_stream::EventStream::new(r.bytes_stream());
    let mut run_id = String::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        let data: Value = serde_json::from_str(&event.data).unwrap();
        if event.event == "started" {
            run_id = data["data"]["run_id"].as_str().unwrap().to_owned();
        }
        if event.event == "approval_requested" {
            break;
        }
    }
    drop(stream);
    let waiting = wait_status(&s, &run_id, "waiting").await;
    assert_eq!(waiting["pending_approvals"][0]["tool"], "delete_file");
    // Client 2 lists and approves.
    let pending = json_of(
        s.get("/api/v1/approvals", READER).send().await.unwrap(),
        200,
    )
    .await;
    let id = pending[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(pending[0]["arguments"], json!({"path": "a.txt"}));
    json_of(
        s.post(&format!("/api/v1/approvals/{id}"), RUNNER)
            .json(&json!({"decision": "approve"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let done = wait_status(&s, &run_id, "succeeded").await;
    assert_eq!(done["answer"], "done");
    // A late subscriber replays the whole run, approval included.
    let r = s
        .get(&format!("/api/v1/runs/{run_id}/events"), READER)
        .send()
        .await
        .unwrap();
    let events: Vec<String> = eventsource_stream::EventStream::new(r.bytes_stream())
        .map(|e| e.unwrap().event)
        .collect()
        .await;
    assert!(
        events.contains(&"approval_resolved".to_owned()) && events.last().unwrap() == "finished",
        "{events:?}"
    );
    let tool_msg = done["pending_approvals"].clone();
    assert_eq!(tool_msg, json!([]));
    // The same approval cannot be answered twice.
    problem_of(
        s.post(&format!("/api/v1/approvals/{id}"), RUNNER)
            .json(&json!({"decision": "approve"}))
            .send()
            .await
            .unwrap(),
        404,
        "approval_not_found",
    )
    .await;
}

#[tokio::test]
async fn a_rejected_call_reaches_the_model_as_an_error() {
    let model = FakeModel::start(vec![
        tool_call("c1", "delete_file", json!({"path": "b"})),
        text(&["ok, not deleted"]),
    ])
    .await;
    let s = TestServer::start(Some(&model.url)).await;
    let run = json_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "delete b"}))
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    assert_eq!(run["status"], "waiting");
    let id = run["pending_approvals"][0]["id"].as_str().unwrap();
    let p = problem_of(
        s.post(&format!("/api/v1/approvals/{id}"), RUNNER)
            .json(&json!({"decision": "edit"}))
            .send()
            .await
            .unwrap(),
        422,
        "invalid_field",
    )
    .await;
    assert_eq!(p["pointer"], "/arguments");
    json_of(
        s.post(&format!("/api/v1/approvals/{id}"), RUNNER)
            .json(&json!({"decision": "reject", "reason": "keep it"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    wait_status(&s, run["id"].as_str().unwrap(), "succeeded").await;
    let requests = model.requests.lock().await;
    let last = requests.last().unwrap().to_string();
    assert!(last.contains("keep it"), "{last}");
}

#[tokio::test]
async fn a_cancelled_run_ends_cancelled_and_cannot_be_cancelled_again() {
    let model = FakeModel::start(vec![tool_call("c1", "delete_file", json!({"path": "c"}))]).await;
    let s = TestServer::start(Some(&model.url)).await;
    let run = json_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "delete c"}))
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    let id = run["id"].as_str().unwrap();
    json_of(
        s.post(&format!("/api/v1/runs/{id}/cancel"), RUNNER)
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    wait_status(&s, id, "cancelled").await;
    problem_of(
        s.post(&format!("/api/v1/runs/{id}/cancel"), RUNNER)
            .send()
            .await
            .unwrap(),
        409,
        "run_finished",
    )
    .await;
    assert_eq!(
        json_of(
            s.get("/api/v1/approvals", READER).send().await.unwrap(),
            200
        )
        .await,
        json!([])
    );
}

#[tokio::test]
async fn continuing_a_run_sends_the_earlier_conversation() {
    let model = FakeModel::start(vec![text(&["Hi Ada"]), text(&["Your name is Ada"])]).await;
    let s = TestServer::start(Some(&model.url)).await;
    let first = json_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "I am Ada"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let id = first["id"].as_str().unwrap();
    let second = json_of(
        s.post(&format!("/api/v1/runs/{id}/continue"), RUNNER)
            .json(&json!({"input": "my name?"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (
            second["parent_run"].as_str(),
            second["conversation_id"].clone()
        ),
        (Some(id), first["conversation_id"].clone())
    );
    let requests = model.requests.lock().await;
    assert!(
        requests[1].to_string().contains("I am Ada"),
        "{}",
        requests[1]
    );
}

#[tokio::test]
async fn run_input_errors_are_problems_and_start_nothing() {
    let s = TestServer::start(None).await;
    problem_of(
        s.post("/api/v1/agents/ghost/runs", RUNNER)
            .json(&json!({"input": "x"}))
            .send()
            .await
            .unwrap(),
        404,
        "agent_not_found",
    )
    .await;
    let p = problem_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": " "}))
            .send()
            .await
            .unwrap(),
        422,
        "invalid_field",
    )
    .await;
    assert_eq!(p["pointer"], "/input");
    let p = problem_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": 3}))
            .send()
            .await
            .unwrap(),
        422,
        "invalid_field",
    )
    .await;
    assert_eq!(p["pointer"], "/input");
    problem_of(
        s.post("/api/v1/agents/helper/runs", READER)
            .json(&json!({"input": "x"}))
            .send()
            .await
            .unwrap(),
        403,
        "missing_scope",
    )
    .await;
    problem_of(
        s.get("/api/v1/runs/run_nope", READER).send().await.unwrap(),
        404,
        "run_not_found",
    )
    .await;
    problem_of(
        s.post("/api/v1/questions/q9/answer", RUNNER)
            .json(&json!({"answer": "x"}))
            .send()
            .await
            .unwrap(),
        404,
        "question_not_found",
    )
    .await;
    let runs = json_of(s.get("/api/v1/runs", READER).send().await.unwrap(), 200).await;
    assert_eq!(runs["items"], json!([]));
}

#[tokio::test]
async fn shutdown_ends_open_event_streams_with_an_event() {
    let model = FakeModel::start(vec![tool_call("c1", "delete_file", json!({"path": "d"}))]).await;
    let s = TestServer::start(Some(&model.url)).await;
    let run = json_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "delete d"}))
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    let r = s
        .get(
            &format!("/api/v1/runs/{}/events", run["id"].as_str().unwrap()),
            READER,
        )
        .send()
        .await
        .unwrap();
    let reader = tokio::spawn(async move {
        eventsource_stream::EventStream::new(r.bytes_stream())
            .map(|e| e.map(|e| e.event).unwrap_or_default())
            .collect::<Vec<_>>()
            .await
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.stop().await;
    let events = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        events.last().map(String::as_str),
        Some("shutdown"),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_call_repeated_in_one_turn_shows_as_merged_in_the_run_events() {
    let model = FakeModel::start(vec![
        crate::support::tool_calls(&[
            ("c1", "echo", json!({"text": "pong"})),
            ("c2", "echo", json!({"text": "pong"})),
        ]),
        text(&["pong"]),
    ])
    .await;
    let s = TestServer::start(Some(&model.url)).await;
    let run = json_of(
        s.post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "echo pong twice"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(run["status"], "succeeded", "{run}");
    let detail = json_of(
        s.get(
            &format!("/api/v1/runs/{}", run["id"].as_str().unwrap()),
            READER,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    let events = detail["events"].as_array().unwrap();
    let merged: Vec<&serde_json::Value> = events
        .iter()
        .filter(|e| e["type"] == "call_merged")
        .collect();
    assert_eq!(merged.len(), 1, "{events:?}");
    assert_eq!(merged[0]["data"]["call"]["id"], "c2");
    assert_eq!(merged[0]["data"]["same_as"], "c1");
    let finished = events
        .iter()
        .filter(|e| e["type"] == "tool_call_finished")
        .count();
    assert_eq!(finished, 1, "the echo ran once: {events:?}");
}

/// With a database an ended run leaves the server's memory; everything about it is still
/// answered, from the store: its detail, its events (replayed to the end), the list, a second
/// cancel (409) and a continuation. SQLite and Postgres.
#[tokio::test]
async fn an_ended_run_is_answered_from_the_store_after_it_leaves_memory() {
    crate::support::on_both(|db| async move {
        let model = FakeModel::start(vec![text(&["first"]), text(&["second"])]).await;
        let s = TestServer::start_stored(&db, Some(&model.url)).await;
        let run = json_of(
            s.post("/api/v1/agents/helper/runs", RUNNER)
                .json(&json!({"input": "hello"}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let id = run["id"].as_str().unwrap().to_owned();
        // Leaving memory follows the run's last write; give it a moment.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let detail = json_of(
            s.get(&format!("/api/v1/runs/{id}"), READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (detail["status"].clone(), detail["answer"].clone()),
            (json!("succeeded"), json!("first"))
        );
        let r = s
            .get(&format!("/api/v1/runs/{id}/events"), READER)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let events: Vec<String> = eventsource_stream::EventStream::new(r.bytes_stream())
            .map(|e| e.unwrap().event)
            .collect()
            .await;
        assert_eq!(
            (
                events.first().map(String::as_str),
                events.last().map(String::as_str)
            ),
            (Some("started"), Some("finished")),
            "{events:?}"
        );
        problem_of(
            s.post(&format!("/api/v1/runs/{id}/cancel"), RUNNER)
                .send()
                .await
                .unwrap(),
            409,
            "run_finished",
        )
        .await;
        let listed = json_of(
            s.get("/api/v1/runs?agent=helper", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(listed["items"][0]["id"], json!(id));
        let next = json_of(
            s.post(&format!("/api/v1/runs/{id}/continue"), RUNNER)
                .json(&json!({"input": "again"}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (next["answer"].clone(), next["parent_run"].clone()),
            (json!("second"), json!(id))
        );
        s.stop().await;
        db
    })
    .await;
}
