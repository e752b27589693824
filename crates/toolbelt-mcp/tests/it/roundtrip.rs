//! toolbelt → toolbelt: a registry served over streamable HTTP and imported by
//! an `McpClient`; registry changes travel as `list_changed`.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{Executor, FnTool, Registry, Selection, ToolErrorKind, ToolHandle};
use toolbelt_mcp::{McpServer, McpServerConfig};

use crate::support::{call, eventually, start};

pub(crate) fn add_tool(name: &str) -> ToolHandle {
    FnTool::builder(name)
        .description("Adds two integers")
        .tag("math")
        .parameters(json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"]}))
        .handler(|args, _ctx| async move {
            let sum = args["a"].as_i64().unwrap_or(0) + args["b"].as_i64().unwrap_or(0);
            toolbelt_core::Json(json!({"sum": sum}))
        })
        .unwrap()
}

/// Serves `registry` (tools tagged `math`) on a loopback port; returns the URL.
pub(crate) async fn serve_http(registry: Arc<Registry>) -> (String, tokio::task::JoinHandle<()>) {
    let server = McpServer::from_registry(
        registry,
        Some(Selection::parse("math").unwrap()),
        Executor::new(),
    );
    let app = axum::Router::new().nest_service("/mcp/demo", server.http_service(None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp/demo", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (url, task)
}

#[tokio::test]
async fn a_served_registry_is_imported_called_and_followed() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    let (url, task) = serve_http(served.clone()).await;
    let (client, registry) =
        start("remote", McpServerConfig::http(&url).with_tool_prefix("")).await;
    assert_eq!(registry.all().names(), ["math.add"]);
    let spec = registry.get("math.add").unwrap().spec().clone();
    assert!(spec.has_tag("mcp:remote") && spec.policy.is_read_only());
    let sum = call(&registry, "math.add", json!({"a": 2, "b": 40}))
        .await
        .outcome
        .unwrap();
    assert_eq!(sum.json, Some(json!({"sum": 42})));
    // A change on the serving side reaches the importing registry.
    served.add_tool(add_tool("math.add_again")).unwrap();
    eventually(10, "list_changed to add the new tool", || {
        registry.contains("math.add_again")
    })
    .await;
    served.remove("math.add").unwrap();
    eventually(10, "list_changed to remove the old tool", || {
        !registry.contains("math.add")
    })
    .await;
    drop(client);
    task.abort();
}

#[tokio::test]
async fn remote_validation_errors_come_back_as_tool_errors_with_the_pointer() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    let (url, task) = serve_http(served).await;
    let (_client, registry) = start("remote", McpServerConfig::http(&url)).await;
    // Bypass local validation: call the imported tool directly.
    let tool = registry.get("remote.math.add").unwrap();
    let err = tool
        .call(json!({"a": "x", "b": 1}), toolbelt_core::ToolContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    assert!(err.to_string().contains("at /a"), "{err}");
    task.abort();
}

#[tokio::test]
async fn agents_router_serves_each_agents_tools_at_its_own_path() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    let registry = served.clone();
    let app = toolbelt_mcp::agents_router(
        move |agent, _export| {
            let endpoint = (agent == "calc").then(|| {
                toolbelt_mcp::AgentEndpoint::new(
                    McpServer::from_registry(registry.clone(), None, Executor::new()),
                    "1",
                )
            });
            Box::pin(std::future::ready(endpoint))
        },
        None,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (_client, imported) =
        start("calc", McpServerConfig::http(format!("{base}/mcp/calc"))).await;
    assert_eq!(imported.all().names(), ["calc.math.add"]);
    let missing = raw_post_status(&format!("{base}/mcp/nobody")).await;
    assert_eq!(missing, 404);
    task.abort();
}

/// The status of a bare POST (no MCP body) to `url`.
async fn raw_post_status(url: &str) -> u16 {
    let (host, path) = url.trim_start_matches("http://").split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response[9..12].parse().unwrap()
}

#[tokio::test]
async fn an_imported_tool_never_overwrites_a_tool_of_another_source() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    served.add_tool(add_tool("math.mul")).unwrap();
    let (url, task) = serve_http(served).await;
    let local = Arc::new(Registry::new());
    let mine = add_tool("math.add");
    local.add_tool(mine.clone()).unwrap();
    let client =
        toolbelt_mcp::McpClient::builder("r", McpServerConfig::http(&url).with_tool_prefix(""))
            .registry(local.clone())
            .start()
            .unwrap();
    client
        .ready(std::time::Duration::from_secs(10))
        .await
        .unwrap();
    assert!(
        local.get("math.add").unwrap().ptr_eq(&mine),
        "the local tool stays"
    );
    assert!(local.get("math.mul").unwrap().spec().has_tag("mcp:r"));
    client.shutdown();
    eventually(10, "the imported tool to leave", || {
        !local.contains("math.mul")
    })
    .await;
    assert!(
        local.contains("math.add"),
        "shutdown removes only what the client added"
    );
    task.abort();
}

/// A search tool for routed exports: the tools whose name contains the query.
fn name_search(tools: &toolbelt_core::Toolset) -> Result<ToolHandle, String> {
    let names = tools.names();
    FnTool::builder("search_tools")
        .description("Find tools by a word of their name")
        .parameters(
            json!({"type": "object", "properties": {"query": {"type": "string"}},
            "required": ["query"]}),
        )
        .handler(move |args, _ctx| {
            let query = args["query"].as_str().unwrap_or_default().to_owned();
            let found: Vec<_> = names
                .iter()
                .filter(|n| n.contains(&query))
                .map(|n| json!({"name": n}))
                .collect();
            async move { toolbelt_core::Json(json!({"tools": found})) }
        })
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn a_routed_export_lists_the_search_tool_then_what_each_search_found() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    served.add_tool(add_tool("math.times")).unwrap();
    let server =
        McpServer::from_registry(served.clone(), None, Executor::new()).with_search(name_search);
    let app = axum::Router::new().nest_service("/mcp", server.http_service(None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (_client, imported) =
        start("remote", McpServerConfig::http(&url).with_tool_prefix("")).await;
    // Only the search tool at first.
    assert_eq!(imported.all().names(), ["search_tools"]);
    let out = call(&imported, "search_tools", json!({"query": "add"}))
        .await
        .outcome
        .unwrap();
    assert_eq!(out.json, Some(json!({"tools": [{"name": "math.add"}]})));
    // The search announced a new list, and the client re-listed.
    eventually(10, "the found tool to be listed", || {
        imported.contains("math.add")
    })
    .await;
    assert!(!imported.contains("math.times"));
    let sum = call(&imported, "math.add", json!({"a": 40, "b": 2}))
        .await
        .outcome
        .unwrap();
    assert_eq!(sum.json, Some(json!({"sum": 42})));
    // A tool added to the registry is searchable (the search tool is rebuilt for it).
    served.add_tool(add_tool("math.add_three")).unwrap();
    call(&imported, "search_tools", json!({"query": "three"}))
        .await
        .outcome
        .unwrap();
    eventually(10, "the new tool to be found and listed", || {
        imported.contains("math.add_three")
    })
    .await;
    // A search that fails (bad arguments) adds nothing.
    let bad = call(&imported, "search_tools", json!({"query": 7})).await;
    assert!(bad.outcome.is_err());
    assert_eq!(imported.len(), 3, "{:?}", imported.all().names());
    task.abort();
}

#[tokio::test]
async fn a_served_tools_progress_reaches_the_importing_side() {
    let served = Arc::new(Registry::new());
    let steps = FnTool::builder("math.steps")
        .description("Count to three, reporting each step")
        .tag("math")
        .handler(|_args, ctx| async move {
            for step in 1..=3 {
                ctx.report_progress(f64::from(step), Some(3.0), Some(format!("step {step}")));
            }
            "counted"
        })
        .unwrap();
    served.add_tool(steps).unwrap();
    let (url, task) = serve_http(served).await;
    let (_client, registry) =
        start("remote", McpServerConfig::http(&url).with_tool_prefix("")).await;
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink_seen = seen.clone();
    let ctx = toolbelt_core::ToolContext::new().with(toolbelt_core::ProgressSink::new(move |p| {
        sink_seen
            .lock()
            .unwrap()
            .push((p.progress, p.message.clone().unwrap_or_default()))
    }));
    let result = Executor::new()
        .execute(
            &registry.all(),
            toolbelt_core::ToolCall::new("c1", "math.steps", json!({})),
            &ctx,
        )
        .await;
    assert_eq!(result.outcome.unwrap().text, "counted");
    // Notifications are sent before the result, so they are all in by now.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            (1.0, "step 1".to_owned()),
            (2.0, "step 2".to_owned()),
            (3.0, "step 3".to_owned())
        ]
    );
    task.abort();
}

#[tokio::test]
async fn shutting_down_or_dropping_a_client_takes_its_tools_out_at_once() {
    let served = Arc::new(Registry::new());
    served.add_tool(add_tool("math.add")).unwrap();
    let (url, task) = serve_http(served).await;
    let (client, registry) = start("a", McpServerConfig::http(&url)).await;
    assert!(registry.contains("a.math.add"));
    client.shutdown();
    assert!(!registry.contains("a.math.add"));
    let (client, registry) = start("b", McpServerConfig::http(&url)).await;
    assert!(registry.contains("b.math.add"));
    drop(client);
    assert!(!registry.contains("b.math.add"));
    task.abort();
}

#[tokio::test]
async fn closing_a_session_answers_204() {
    let server = McpServer::new(toolbelt_core::Toolset::empty(), Executor::new());
    let app = axum::Router::new().nest_service("/mcp", server.router(None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let opened = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .unwrap();
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let closed = http
        .delete(&url)
        .header("mcp-session-id", session)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status().as_u16(), 204);
    task.abort();
}
