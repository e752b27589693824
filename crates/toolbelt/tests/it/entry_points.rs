//! One stored agent, every entry point: a REST run (JSON and SSE), a routine, the route
//! preview, the agent's tool list and `/mcp/{agent}` of the server the library starts, then
//! `toolbelt run --agent` and `toolbelt mcp serve --agent` on the same database, all offer the
//! same tools at the same versions and send the same options to the model (asserted on the
//! request bodies). SQLite; Postgres when `TOOLBELT_TEST_PG_URL` is set.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt::store::{
    AgentSpec, Availability, Binding, Revision, RouterSettings, Store, ToolDef, ToolSource,
};
use toolbelt_core::{ApprovalPolicy, Decision, Registry, ToolContext, ToolPolicy, ToolSpec};
use toolbelt_mcp::{McpClient, McpServerConfig};
use toolbelt_server::{RunningServer, Server, ServerConfig};

use crate::cli_db::{databases, schema};
use crate::cli_run::{recording_openai, text, tool_call, toolbelt_run};

fn printer(name: &str, description: &str, words: &str) -> ToolDef {
    let spec = ToolSpec::builder(name)
        .description(description)
        .parameters(json!({"type": "object", "properties": {}}))
        .policy(ToolPolicy::read_only())
        .build()
        .unwrap();
    ToolDef::new(spec, ToolSource::Declarative)
        .with_definition(json!({"command": {"argv": ["printf", "%s", words], "read_only": true}}))
}

/// `writer`: bound to `greet` pinned at version 1 (version 2 is current), selects `review`
/// (kept from it: reviewers only), routes with `max_tools` 2, and has options and an
/// approval policy of its own.
async fn store_writer(store: &Store, model_url: &str) {
    let v1 = store
        .tools()
        .create(
            &printer("greet", "Greet the user warmly", "hello from v1"),
            "test",
            None,
        )
        .await
        .unwrap();
    store
        .tools()
        .update(
            &printer("greet", "Greet the user warmly", "hello from v2"),
            Revision::Exactly(v1.revision),
            "test",
            None,
        )
        .await
        .unwrap();
    let mut reviewers = Availability::default();
    reviewers.agent_kinds = vec!["reviewer".to_owned()];
    store
        .tools()
        .create(
            &printer("review", "Review a change", "ok").with_availability(reviewers),
            "test",
            None,
        )
        .await
        .unwrap();
    let mut draft = AgentSpec::new("writer")
        .with_selection("review")
        .with_tool(Binding::new("greet").pinned(1));
    let mut router = RouterSettings::default();
    router.max_tools = Some(2);
    draft.router = router;
    draft.provider = Some("openai".to_owned());
    draft.model = Some("scripted".to_owned());
    draft.options.base_url = Some(model_url.to_owned());
    draft.options.api_key_env = Some("TOOLBELT_TEST_NO_KEY".to_owned());
    draft.options.temperature = Some(0.25);
    draft.options.max_tokens = Some(77);
    draft.options.parallel_tool_calls = Some(false);
    draft.options.approval = Some(ApprovalPolicy::new().with_tool("greet", Decision::Allow));
    store.agents().create(&draft, "unknown").await.unwrap();
}

/// What a model request carries that the agent's definition decides.
fn decided(body: &Value) -> Value {
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    json!({
        "tools": tools,
        "temperature": body["temperature"],
        "max_tokens": body["max_tokens"].as_u64().or(body["max_completion_tokens"].as_u64()),
        "parallel_tool_calls": body["parallel_tool_calls"],
    })
}

fn expected() -> Value {
    json!({"tools": ["greet"], "temperature": 0.25, "max_tokens": 77, "parallel_tool_calls": false})
}

/// The last message of a request: the tool's result in the second request of a run.
fn last_message(body: &Value) -> String {
    body["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The server `toolbelt serve` starts, from the library, over `url` (no tokens: loopback).
async fn start_server(url: &str, workspace: &std::path::Path) -> RunningServer {
    let store = Store::open(url).await.unwrap();
    let db = toolbelt_server::database::open_store(store, Vec::new(), "test")
        .await
        .unwrap();
    let mut config = ServerConfig::default();
    config.dev = true;
    config.addr = "127.0.0.1:0".parse().unwrap();
    config.workspace = workspace.to_path_buf();
    Server::builder(config).database(db).start().await.unwrap()
}

async fn post(url: String, body: Value, accept: &str) -> reqwest::Response {
    let response = reqwest::Client::new()
        .post(url)
        .header("accept", accept)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response
}

/// Runs `writer` over REST (JSON, then SSE) and as a routine run now.
async fn server_runs(api: &str) {
    let view: Value = post(
        format!("{api}/agents/writer/runs"),
        json!({"input": "greet me"}),
        "application/json",
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(view["answer"], "done", "{view}");
    let events = post(
        format!("{api}/agents/writer/runs"),
        json!({"input": "greet me"}),
        "text/event-stream",
    )
    .await
    .text()
    .await
    .unwrap();
    assert!(events.contains("event: finished"), "{events}");
    let routine =
        json!({"name": "hello", "agent": "writer", "prompt": "greet me", "every_seconds": 3600});
    post(format!("{api}/routines"), routine, "application/json").await;
    post(
        format!("{api}/routines/hello/run"),
        json!({}),
        "application/json",
    )
    .await;
}

/// What the route preview and the tool list say of `writer`'s tools.
async fn previews(api: &str) -> (Value, Vec<Value>) {
    let route: Value = post(
        format!("{api}/route"),
        json!({"input": "greet me", "agent": "writer"}),
        "application/json",
    )
    .await
    .json()
    .await
    .unwrap();
    let tools: Value = reqwest::get(format!("{api}/agents/writer/tools"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let listed = tools
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "greet" || t["name"] == "review")
        .map(|t| json!([t["name"], t["available"], t["version"], t["why"]]))
        .collect();
    let offered: Vec<&str> = route["decision"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    (
        json!({"toolset_size": route["toolset_size"], "offered": offered}),
        listed,
    )
}

/// The tools an MCP endpoint serves, and what calling `greet` there answers.
async fn over_mcp(config: McpServerConfig) -> (Vec<String>, String) {
    let registry = Arc::new(Registry::new());
    let client = McpClient::builder("tb", config.with_tool_prefix(""))
        .registry(registry.clone())
        .start()
        .unwrap();
    client.ready(Duration::from_secs(30)).await.unwrap();
    let names = registry.all().names();
    let out = registry
        .get("greet")
        .unwrap()
        .call(json!({}), ToolContext::new())
        .await
        .unwrap();
    client.shutdown();
    (names, out.text.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_entry_point_builds_the_stored_agent_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path(), "entry_points") {
        schema(&db, true).await;
        let run = || vec![tool_call("greet", json!({})), text(&["done"])];
        let (model_url, requests, model) = recording_openai([run(), run(), run(), run()].concat());
        store_writer(&Store::open(&db.url).await.unwrap(), &model_url).await;
        let server = start_server(&db.url, dir.path()).await;
        let api = format!("http://{}/api/v1", server.addr());

        server_runs(&api).await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while requests.lock().unwrap().len() < 6 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The terminal: the stored agent by name, over the same database.
        let (cwd, url) = (dir.path().to_path_buf(), db.url.clone());
        let out = tokio::task::spawn_blocking(move || {
            let env = [("TOOLBELT_NO_EMBEDDER", "1")];
            toolbelt_run(
                &cwd,
                &env,
                &["--agent", "writer", "--database-url", &url, "greet me"],
                "",
            )
        })
        .await
        .unwrap();
        assert_eq!(crate::ok(&out).trim(), "done");
        model.join().unwrap();
        let seen: Vec<(Value, String)> = requests
            .lock()
            .unwrap()
            .chunks(2)
            .map(|run| (decided(&run[0]), last_message(&run[1])))
            .collect();
        let want = (expected(), "hello from v1".to_owned());
        assert_eq!(seen, vec![want; 4], "{}", db.url);

        let (route, listed) = previews(&api).await;
        assert_eq!(route, json!({"toolset_size": 1, "offered": ["greet"]}));
        assert_eq!(
            listed,
            [
                json!(["greet", true, 1, "bound to the agent"]),
                json!([
                    "review",
                    false,
                    1,
                    "agent kind `assistant` is not allowed; allowed kinds: reviewer"
                ]),
            ]
        );
        let want = (vec!["greet".to_owned()], "hello from v1".to_owned());
        // `/mcp/writer` of the server, and `toolbelt mcp serve --agent writer` over stdio.
        let http = McpServerConfig::http(format!("http://{}/mcp/writer", server.addr()));
        assert_eq!(over_mcp(http).await, want);
        let args = [
            "mcp",
            "serve",
            "--database-url",
            &db.url,
            "--agent",
            "writer",
        ];
        let mut stdio = McpServerConfig::stdio(env!("CARGO_BIN_EXE_toolbelt"), args).with_env(
            "TOOLBELT_DATA",
            dir.path().join(".toolbelt-data").display().to_string(),
        );
        stdio.cwd = Some(dir.path().to_path_buf());
        assert_eq!(over_mcp(stdio).await, want);

        server.shutdown().await.unwrap();
        schema(&db, false).await;
    }
}
