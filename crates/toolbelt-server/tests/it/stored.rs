//! The API over a database, on SQLite and Postgres: tool writes with revisions, tokens, runs after a restart, two instances.

use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    ADMIN, FakeModel, READER, RUNNER, TestDb, TestServer, json_of, on_both, problem_of, text,
    tool_call,
};

fn shout(description: &str) -> Value {
    json!({
        "spec": {"name": "shout", "description": description, "tags": ["util"],
                 "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        "definition": {"command": {"argv": ["echo", "{{text}}"], "read_only": true}}
    })
}

async fn versions(s: &TestServer) -> usize {
    json_of(
        s.get("/api/v1/tools/shout/versions", READER)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await
    .as_array()
    .unwrap()
    .len()
}

#[tokio::test]
async fn tools_are_created_updated_with_revisions_and_rolled_back() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let created = s
            .post("/api/v1/tools", ADMIN)
            .json(&shout("Echo loudly"))
            .send()
            .await
            .unwrap();
        assert_eq!(created.headers()["etag"], "\"1\"", "{}", db.engine);
        json_of(created, 201).await;
        let called = json_of(
            s.post("/api/v1/tools/shout/call", RUNNER)
                .json(&json!({"arguments": {"text": "hi"}}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            called["text"].as_str().map(str::trim),
            Some("hi"),
            "{called}"
        );
        problem_of(
            s.post("/api/v1/tools", ADMIN)
                .json(&shout("again"))
                .send()
                .await
                .unwrap(),
            409,
            "already_exists",
        )
        .await;
        let put = |rev: Option<&str>| {
            let r = s
                .http
                .put(format!("{}/api/v1/tools/shout", s.url))
                .bearer_auth(ADMIN)
                .json(&shout("Echo v2"));
            match rev {
                Some(rev) => r.header("if-match", rev),
                None => r,
            }
        };
        problem_of(put(None).send().await.unwrap(), 428, "if_match_required").await;
        problem_of(
            put(Some("\"9\"")).send().await.unwrap(),
            412,
            "revision_mismatch",
        )
        .await;
        // No revision means "any": `-1` is an ordinary revision that matches nothing.
        problem_of(
            put(Some("\"-1\"")).send().await.unwrap(),
            412,
            "revision_mismatch",
        )
        .await;
        assert_eq!(versions(&s).await, 1, "a refused write changes nothing");
        let updated = json_of(put(Some("\"1\"")).send().await.unwrap(), 200).await;
        assert_eq!(
            (
                updated["current_version"].clone(),
                updated["revision"].clone()
            ),
            (json!(2), json!(2))
        );
        let live = json_of(
            s.get("/api/v1/tools/shout", READER).send().await.unwrap(),
            200,
        )
        .await;
        assert_eq!(live["description"], "Echo v2");
        json_of(
            s.post("/api/v1/tools/shout/rollback", ADMIN)
                .json(&json!({"version": 1}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let live = json_of(
            s.get("/api/v1/tools/shout", READER).send().await.unwrap(),
            200,
        )
        .await;
        assert_eq!(live["description"], "Echo loudly");
        problem_of(
            s.post("/api/v1/tools/shout/rollback", ADMIN)
                .json(&json!({"version": 7}))
                .send()
                .await
                .unwrap(),
            404,
            "tool_version_not_found",
        )
        .await;
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn a_command_without_read_only_is_stored_as_mutating_and_needing_approval() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let mut body = shout("Echo loudly");
        body["definition"] = json!({"command": {"argv": ["echo", "{{text}}"]}});
        json_of(
            s.post("/api/v1/tools", ADMIN)
                .json(&body)
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        let stored = json_of(
            s.get("/api/v1/tools/shout/stored", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let policy = &stored["spec"]["policy"];
        assert_eq!(
            (&policy["effect"], &policy["needs_approval"]),
            (&json!("mutating"), &json!(true)),
            "{stored}"
        );
        let listed = json_of(
            s.get("/api/v1/tools?q=shout", READER).send().await.unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (
                &listed["items"][0]["read_only"],
                &listed["items"][0]["needs_approval"]
            ),
            (&json!(false), &json!(true)),
            "{listed}"
        );
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn disabled_and_deleted_tools_cannot_be_called() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        json_of(
            s.post("/api/v1/tools", ADMIN)
                .json(&shout("Echo"))
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        json_of(
            s.post("/api/v1/tools/shout/disable", ADMIN)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let call = || {
            s.post("/api/v1/tools/shout/call", RUNNER)
                .json(&json!({"arguments": {"text": "x"}}))
                .send()
        };
        problem_of(call().await.unwrap(), 404, "tool_not_found").await;
        json_of(
            s.post("/api/v1/tools/shout/enable", ADMIN)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        json_of(call().await.unwrap(), 200).await;
        let r = s
            .http
            .delete(format!("{}/api/v1/tools/shout", s.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
        problem_of(call().await.unwrap(), 404, "tool_not_found").await;
        problem_of(
            s.get("/api/v1/tools/shout/stored", READER)
                .send()
                .await
                .unwrap(),
            404,
            "tool_not_found",
        )
        .await;
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn bad_tool_definitions_name_the_field_and_store_nothing() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let mut bad = shout("x");
        bad["spec"]["parameters"] = json!({"type": 12});
        let p = problem_of(
            s.post("/api/v1/tools", ADMIN)
                .json(&bad)
                .send()
                .await
                .unwrap(),
            422,
            "invalid_field",
        )
        .await;
        assert_eq!(p["pointer"], "/spec/parameters", "{p}");
        let mut bad = shout("x");
        bad["definition"] = json!({"command": {"argv": ["echo", "{{nope}}"]}});
        let p = problem_of(
            s.post("/api/v1/tools", ADMIN)
                .json(&bad)
                .send()
                .await
                .unwrap(),
            422,
            "invalid_definition",
        )
        .await;
        assert!(
            p["pointer"]
                .as_str()
                .unwrap()
                .starts_with("/definition/command/argv"),
            "{p}"
        );
        let mut bad = shout("x");
        bad["definition"] = json!({"ftp": {}});
        problem_of(
            s.post("/api/v1/tools", ADMIN)
                .json(&bad)
                .send()
                .await
                .unwrap(),
            422,
            "invalid_definition",
        )
        .await;
        problem_of(
            s.post("/api/v1/tools", RUNNER)
                .json(&shout("x"))
                .send()
                .await
                .unwrap(),
            403,
            "missing_scope",
        )
        .await;
        problem_of(
            s.get("/api/v1/tools/shout/stored", READER)
                .send()
                .await
                .unwrap(),
            404,
            "tool_not_found",
        )
        .await;
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn stored_tokens_work_until_revoked() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let store = db.open().await;
        let (_, secret) = store
            .tokens()
            .create("ci", &["read".to_owned()])
            .await
            .unwrap();
        json_of(s.get("/api/v1/tools", &secret).send().await.unwrap(), 200).await;
        problem_of(
            s.post("/api/v1/tools/noop/call", &secret)
                .json(&json!({}))
                .send()
                .await
                .unwrap(),
            403,
            "missing_scope",
        )
        .await;
        store.tokens().revoke("ci").await.unwrap();
        tokio::time::sleep(toolbelt_server::STORE_TOKEN_TTL + Duration::from_millis(200)).await;
        problem_of(
            s.get("/api/v1/tools", &secret).send().await.unwrap(),
            401,
            "invalid_token",
        )
        .await;
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn a_run_waiting_at_shutdown_is_interrupted_after_restart_and_can_be_continued() {
    on_both(|db| async move {
        let model = FakeModel::start(vec![
            tool_call("c1", "delete_file", json!({"path": "x"})),
            text(&["continued"]),
        ])
        .await;
        let s = TestServer::start_stored(&db, Some(&model.url)).await;
        let run = json_of(
            s.post("/api/v1/agents/helper/runs", RUNNER)
                .json(&json!({"input": "delete x"}))
                .send()
                .await
                .unwrap(),
            202,
        )
        .await;
        assert_eq!(run["status"], "waiting");
        let id = run["id"].as_str().unwrap().to_owned();
        s.stop().await;
        let s = TestServer::start_stored(&db, Some(&model.url)).await;
        let after = json_of(
            s.get(&format!("/api/v1/runs/{id}"), READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(after["status"], "interrupted", "{}: {after}", db.engine);
        assert!(after["messages"].as_array().unwrap().len() >= 2, "{after}");
        let listed = json_of(
            s.get("/api/v1/runs?status=interrupted", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(listed["items"][0]["id"], json!(id));
        let next = json_of(
            s.post(&format!("/api/v1/runs/{id}/continue"), RUNNER)
                .json(&json!({"input": "go on"}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (next["answer"].clone(), next["parent_run"].clone()),
            (json!("continued"), json!(id))
        );
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn two_instances_on_one_postgres_database_agree_within_a_second() {
    let Some(db) = TestDb::postgres() else { return };
    let a = TestServer::start_stored(&db, None).await;
    let b = TestServer::start_stored(&db, None).await;
    json_of(
        a.post("/api/v1/tools", ADMIN)
            .json(&shout("Echo"))
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let started = Instant::now();
    loop {
        let r = b
            .post("/api/v1/tools/shout/call", RUNNER)
            .json(&json!({"arguments": {"text": "x"}}))
            .send()
            .await
            .unwrap();
        if r.status() == 200 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "not visible on instance b after 1 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = a
        .http
        .delete(format!("{}/api/v1/tools/shout", a.url))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    let started = Instant::now();
    loop {
        let r = b
            .post("/api/v1/tools/shout/call", RUNNER)
            .json(&json!({"arguments": {"text": "x"}}))
            .send()
            .await
            .unwrap();
        if r.status() == 404 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "still callable on instance b after 1 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.stop().await;
    b.stop().await;
    db.cleanup().await;
}

#[tokio::test]
async fn agents_are_stored_and_tools_bound_and_unbound() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let agent = json!({"name": "ops", "description": "Ops helper", "selection": "util", "provider": "openai", "model": "m"});
        let created = s.post("/api/v1/agents", ADMIN).json(&agent).send().await.unwrap();
        assert_eq!(created.headers()["etag"], "\"1\"");
        json_of(created, 201).await;
        problem_of(s.post("/api/v1/agents", ADMIN).json(&agent).send().await.unwrap(), 409, "agent_exists").await;
        let available = |v: &Value, tool: &str| v.as_array().unwrap().iter().find(|t| t["name"] == tool).unwrap()["available"].clone();
        let tools = json_of(s.get("/api/v1/agents/ops/tools", READER).send().await.unwrap(), 200).await;
        assert_eq!((available(&tools, "echo"), available(&tools, "delete_file")), (json!(true), json!(false)));
        json_of(s.post("/api/v1/agents/ops/tools/delete_file", ADMIN).send().await.unwrap(), 200).await;
        let tools = json_of(s.get("/api/v1/agents/ops/tools", READER).send().await.unwrap(), 200).await;
        assert_eq!(available(&tools, "delete_file"), json!(true), "{}", db.engine);
        let routed = json_of(s.post("/api/v1/route", RUNNER).json(&json!({"input": "delete a file", "agent": "ops"})).send().await.unwrap(), 200).await;
        assert_eq!(routed["toolset_size"], 3);
        let r = s.http.delete(format!("{}/api/v1/agents/ops/tools/delete_file", s.url)).bearer_auth(ADMIN).send().await.unwrap();
        json_of(r, 200).await;
        let tools = json_of(s.get("/api/v1/agents/ops/tools", READER).send().await.unwrap(), 200).await;
        assert_eq!(available(&tools, "delete_file"), json!(false));
        let bad = s.post("/api/v1/agents/ops/tools/ghost", ADMIN).send().await.unwrap();
        assert!(matches!(bad.status().as_u16(), 404 | 422), "{}", bad.status());
        problem_of(s.post("/api/v1/agents/ops/tools/echo", ADMIN).header("if-match", "\"1\"").send().await.unwrap(), 412, "revision_mismatch").await;
        let put = s.http.put(format!("{}/api/v1/agents/ops", s.url)).bearer_auth(ADMIN).json(&agent).send().await.unwrap();
        problem_of(put, 428, "if_match_required").await;
        problem_of(s.post("/api/v1/agents", ADMIN).json(&json!({"name": "x", "colour": 1})).send().await.unwrap(), 422, "invalid_field").await;
        let listed = json_of(s.get("/api/v1/agents", READER).send().await.unwrap(), 200).await;
        let ids: Vec<&str> = listed.as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
        assert_eq!(ids, ["ops", "helper"]);
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn the_console_reads_stats_stored_tools_and_why_a_tool_is_unavailable() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        json_of(
            s.post("/api/v1/tools", ADMIN)
                .json(&shout("Echo"))
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        for text in ["a", "b"] {
            let r = s
                .post("/api/v1/tools/shout/call", RUNNER)
                .json(&json!({"arguments": {"text": text}}))
                .send()
                .await
                .unwrap();
            assert_eq!(json_of(r, 200).await["ok"], true);
        }
        json_of(
            s.post("/api/v1/route", RUNNER)
                .json(&json!({"input": "shout hello"}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let stats = json_of(
            s.get("/api/v1/stats?minutes=60&bucket_secs=60", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let shout_calls: i64 = stats["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| b["tool"] == "shout")
            .map(|b| b["calls"].as_i64().unwrap())
            .sum();
        assert_eq!(shout_calls, 2, "{} {stats}", db.engine);
        assert_eq!(stats["bucket_ms"], 60_000);
        assert_eq!(stats["totals"][0]["tool"], "shout", "{stats}");
        assert_eq!(stats["totals"][0]["calls"], 2);
        let decisions: u64 = stats["routes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["decisions"].as_u64().unwrap())
            .sum();
        assert!(decisions >= 1, "{stats}");
        let bad = s
            .get("/api/v1/stats?minutes=0", READER)
            .send()
            .await
            .unwrap();
        assert_eq!(
            problem_of(bad, 400, "invalid_query").await["pointer"],
            "minutes"
        );
        let bad = s
            .get("/api/v1/stats?bucket_secs=1", READER)
            .send()
            .await
            .unwrap();
        assert_eq!(
            problem_of(bad, 400, "invalid_query").await["pointer"],
            "bucket_secs"
        );
        let anonymous = s
            .http
            .get(format!("{}/api/v1/stats", s.url))
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 401);

        json_of(
            s.post("/api/v1/tools/shout/disable", ADMIN)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let stored = json_of(
            s.get("/api/v1/stored-tools", READER).send().await.unwrap(),
            200,
        )
        .await;
        let row = stored
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "shout")
            .unwrap()
            .clone();
        assert_eq!(
            (
                row["source"].clone(),
                row["enabled"].clone(),
                row["restricted"].clone()
            ),
            (json!("declarative"), json!(false), json!(false))
        );
        let agent = json!({"name": "ops", "selection": "util"});
        json_of(
            s.post("/api/v1/agents", ADMIN)
                .json(&agent)
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        let tools = json_of(
            s.get("/api/v1/agents/ops/tools", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let why = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "shout")
            .unwrap()
            .clone();
        assert_eq!(why["available"], false);
        assert!(why["why"].as_str().unwrap().contains("disabled"), "{why}");
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn the_console_is_served_at_the_root_and_reveals_no_data() {
    let s = TestServer::start(None).await;
    let page = s.http.get(format!("{}/", s.url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("default-src 'self'")
    );
    let html = page.text().await.unwrap();
    assert!(html.contains("/console/app.js"), "{html}");
    let js = s
        .http
        .get(format!("{}/console/pages/tools.js", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(
        js.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let missing = s
        .http
        .get(format!("{}/console/nope.js", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let api = s
        .http
        .get(format!("{}/api/v1/tools", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(api.status(), 401, "the data still needs a token");
    s.stop().await;
}

#[tokio::test]
async fn the_api_takes_the_cli_tool_file_shape_too() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        // The shape `toolbelt tools add -f` reads, posted as it is.
        let file = json!({
            "name": "shout", "description": "Shout a text back", "tags": ["util"],
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "command": {"argv": ["echo", "{{text}}"]}, "effect": "read_only"
        });
        let created = json_of(s.post("/api/v1/tools", ADMIN).json(&file).send().await.unwrap(), 201).await;
        assert_eq!(created["name"], "shout", "{created}");
        let out = json_of(
            s.post("/api/v1/tools/shout/call", RUNNER)
                .json(&json!({"arguments": {"text": "hi"}}))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(out["text"].as_str().map(str::trim), Some("hi"), "{out}");
        // Its errors name the field of that shape.
        let mut bad = file.clone();
        bad["name"] = json!("shout2");
        bad["command"] = json!({"argv": ["echo", "{{nope}}"]});
        let problem = problem_of(
            s.post("/api/v1/tools", ADMIN).json(&bad).send().await.unwrap(),
            422,
            "invalid_definition",
        )
        .await;
        assert!(
            problem["errors"][0]["pointer"].as_str().unwrap().starts_with("/command/argv"),
            "{problem}"
        );
        let mut unknown = file.clone();
        unknown["name"] = json!("shout3");
        unknown["colour"] = json!("red");
        let problem = problem_of(
            s.post("/api/v1/tools", ADMIN).json(&unknown).send().await.unwrap(),
            422,
            "invalid_field",
        )
        .await;
        assert!(problem["detail"].as_str().unwrap().contains("colour"), "{problem}");
        db
    })
    .await;
}
