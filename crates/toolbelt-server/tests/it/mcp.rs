//! `/mcp/{agent}` inside the server, on SQLite and Postgres: an MCP client (toolbelt's own, over
//! streamable HTTP with a bearer token) lists and calls an agent's tools, sees a tool created
//! through the API appear, gets approvals refused with a message, and the scopes are checked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolbelt_core::{Executor, Registry, ToolCall, ToolContext, Toolset};
use toolbelt_mcp::{McpClient, McpServerConfig};

use crate::support::{ADMIN, READER, RUNNER, TestServer, json_of, on_both};

pub(crate) async fn connect(url: &str, token: &str) -> (McpClient, Arc<Registry>) {
    let registry = Arc::new(Registry::new());
    let client = McpClient::builder(
        "tb",
        McpServerConfig::http(url)
            .with_bearer_token(token)
            .with_tool_prefix(""),
    )
    .registry(registry.clone())
    .start()
    .unwrap();
    client.ready(Duration::from_secs(30)).await.unwrap();
    (client, registry)
}

async fn status_of_post(s: &TestServer, path: &str, token: &str) -> u16 {
    s.http
        .post(format!("{}{path}", s.url))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn each_agent_serves_its_tools_over_mcp_with_tokens() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        // The configured agent `helper` selects `util,danger`.
        let (client, imported) = connect(&format!("{}/mcp/helper", s.url), RUNNER).await;
        let mut names = imported.all().names();
        names.sort();
        assert_eq!(names, ["delete_file", "echo", "noop"], "{}", db.engine);

        let tools = Toolset::from_tools(imported.list());
        let call = |name: &str, args: serde_json::Value| {
            let tools = tools.clone();
            let call = ToolCall::new("c1", name, args);
            async move {
                Executor::new()
                    .execute(&tools, call, &ToolContext::new())
                    .await
                    .outcome
            }
        };
        let out = call("echo", json!({"text": "hi over mcp"})).await.unwrap();
        assert!(out.text.contains("hi over mcp"), "{out:?}");
        // Bad arguments come back as a tool error naming the pointer.
        let err = call("echo", json!({"text": 5})).await.unwrap_err();
        assert!(err.to_string().contains("/text"), "{err}");
        // delete_file needs approval; this client cannot be asked: refused, with why.
        let err = call("delete_file", json!({"path": "x"})).await.unwrap_err();
        assert!(err.to_string().to_lowercase().contains("approv"), "{err}");

        // A stored tool in `util`, created through the API, reaches the connected client.
        let shout = json!({
            "spec": {"name": "shout", "description": "Shout", "tags": ["util"],
                     "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
            "definition": {"command": {"argv": ["echo", "{{text}}"], "read_only": true}}
        });
        json_of(s.post("/api/v1/tools", ADMIN).json(&shout).send().await.unwrap(), 201).await;
        let start = Instant::now();
        while !imported.contains("shout") {
            assert!(start.elapsed() < Duration::from_secs(10), "shout never arrived over MCP");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        client.shutdown();

        // The calls reach the run log (what the console's overview reads). The audit task
        // logs from the executor's events, so the entries may land just after the replies.
        let totals = |stats: &serde_json::Value, tool: &str| {
            stats["totals"].as_array().unwrap().iter().find(|t| t["tool"] == tool).map(|row| {
                (row["calls"].as_i64().unwrap(), row["errors"].as_i64().unwrap())
            })
        };
        let start = Instant::now();
        loop {
            let stats = json_of(s.get("/api/v1/stats?minutes=60", READER).send().await.unwrap(), 200).await;
            // The bad-arguments call was refused by the client's own schema check: one echo call.
            if totals(&stats, "echo") == Some((1, 0)) && totals(&stats, "delete_file") == Some((1, 1)) {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(10), "MCP calls not in the run log: {stats}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // And in the Prometheus metrics (the denied approval included).
        let metrics = s.get("/metrics", READER).send().await.unwrap().text().await.unwrap();
        assert!(
            metrics.contains("toolbelt_tool_calls_total{tool=\"delete_file\",outcome=\"denied\"}"),
            "{metrics}"
        );

        // Scopes: reading is not enough to use tools; no token at all is 401; unknown agents 404.
        assert_eq!(status_of_post(&s, "/mcp/helper", READER).await, 403);
        assert_eq!(status_of_post(&s, "/mcp/helper", "nope").await, 401);
        assert_eq!(status_of_post(&s, "/mcp/nobody", RUNNER).await, 404);
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn the_routed_export_shows_search_tools_then_what_it_found() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let url = format!("{}/mcp/helper/routed", s.url);
        let (client, imported) = connect(&url, RUNNER).await;
        assert_eq!(imported.all().names(), ["search_tools"], "{}", db.engine);
        let found = Executor::new()
            .execute(
                &Toolset::from_tools(imported.list()),
                ToolCall::new(
                    "c1",
                    "search_tools",
                    json!({"query": "echo some text back", "limit": 1}),
                ),
                &ToolContext::new(),
            )
            .await
            .outcome
            .unwrap();
        let tools = &found.json.as_ref().unwrap()["tools"];
        assert_eq!(tools[0]["name"], "echo", "{found:?}");
        assert!(
            tools[0]["parameters"]["properties"]["text"].is_object(),
            "{found:?}"
        );
        // The search announced a new list: the client now has `echo` too, and only that.
        let start = Instant::now();
        while !imported.contains("echo") {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "echo was never listed"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut names = imported.all().names();
        names.sort();
        assert_eq!(names, ["echo", "search_tools"]);
        let out = Executor::new()
            .execute(
                &Toolset::from_tools(imported.list()),
                ToolCall::new("c2", "echo", json!({"text": "routed"})),
                &ToolContext::new(),
            )
            .await
            .outcome
            .unwrap();
        assert!(out.text.contains("routed"), "{out:?}");
        client.shutdown();
        assert_eq!(status_of_post(&s, "/mcp/helper/routed", READER).await, 403);
        assert_eq!(status_of_post(&s, "/mcp/nobody/routed", RUNNER).await, 404);
        s.stop().await;
        db
    })
    .await;
}
