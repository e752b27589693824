//! Shared set-up of the MCP benches: a toolbelt MCP server on a loopback port.

use std::sync::Arc;

use serde_json::json;
use toolbelt_core::{Executor, FnTool, Registry, ToolHandle};
use toolbelt_mcp::McpServer;

/// A no-op tool with a one-integer schema.
pub(crate) fn noop(name: &str) -> ToolHandle {
    FnTool::builder(name)
        .description("Does nothing")
        .tag("bench")
        .parameters(json!({"type": "object", "properties": {"n": {"type": "integer"}}}))
        .handler(|_args, _ctx| async { "ok" })
        .unwrap()
}

/// Serves `count` no-op tools over streamable HTTP; returns the URL.
pub(crate) async fn serve(count: usize) -> String {
    let registry = Arc::new(Registry::new());
    registry
        .add_tools((0..count).map(|i| noop(&format!("noop{i}"))))
        .unwrap();
    let server = McpServer::from_registry(registry, None, Executor::new());
    let app = axum::Router::new().nest_service("/mcp", server.http_service(None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}
