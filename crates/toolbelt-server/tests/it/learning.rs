//! Learning from use: a server with `learn_from_runs` routes a request like one its runs
//! served with the tool that served it (after a refresh, and from start-up); a server
//! without it does not.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::support::{FakeModel, RUNNER, TestServer, json_of, on_both, text, tool_call};

/// The tools `/route` ranks for `input` over every tool, best first; none when it is unsure
/// and falls back to sending every tool unranked.
async fn ranked(s: &TestServer, input: &str) -> Vec<String> {
    let body = json!({"input": input});
    let view = json_of(
        s.post("/api/v1/route", RUNNER)
            .json(&body)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let decision = &view["decision"];
    if decision["fallback"] == json!(true) {
        return Vec::new();
    }
    let tools = decision["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// Shares three odd words with the run's request and none with any tool's text.
const LATER: &str = "frobnicate the zephyr ledger for april";

#[tokio::test]
async fn a_request_worded_like_a_served_one_ranks_its_tool_first_once_learned() {
    on_both(|db| async move {
        let model =
            FakeModel::start(vec![tool_call("c1", "noop", json!({})), text(&["done"])]).await;
        let learning = |c: &mut toolbelt_server::ServerConfig| {
            c.learn_from_runs = true;
            c.learn_refresh_secs = 1;
        };
        let s = TestServer::start_stored_model_with(&db, &model.url, learning).await;
        assert_eq!(
            ranked(&s, LATER).await,
            Vec::<String>::new(),
            "nothing learned yet"
        );
        let run = json!({"input": "frobnicate the zephyr ledger"});
        let done = json_of(
            s.post("/api/v1/agents/helper/runs", RUNNER)
                .json(&run)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(done["status"], "succeeded", "{done}");
        // The next read of the run log (every second here) teaches the router.
        let mut after = Vec::new();
        for _ in 0..50 {
            after = ranked(&s, LATER).await;
            if !after.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert_eq!(after, ["noop"], "{}", db.engine);
        s.stop().await;
        // The same database without the setting: the router does not learn.
        let off = TestServer::start_stored_model_with(&db, &model.url, |_| {}).await;
        assert_eq!(
            ranked(&off, LATER).await,
            Vec::<String>::new(),
            "{}",
            db.engine
        );
        off.stop().await;
        // With it, the log is read at start-up: the first request already ranks with it.
        let on = TestServer::start_stored_model_with(&db, &model.url, |c| c.learn_from_runs = true)
            .await;
        assert_eq!(ranked(&on, LATER).await, ["noop"], "{}", db.engine);
        on.stop().await;
        db
    })
    .await;
}
