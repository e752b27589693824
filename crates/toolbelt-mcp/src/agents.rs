//! [`agents_router`]: one streamable HTTP MCP endpoint per agent, `/mcp/{agent}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::server::{McpServer, McpServerHandler};

type Service = StreamableHttpService<McpServerHandler, LocalSessionManager>;
type Resolve = dyn Fn(&str) -> Option<McpServer> + Send + Sync;

struct Agents {
    resolve: Box<Resolve>,
    allowed_hosts: Option<Vec<String>>,
    services: Mutex<HashMap<String, Service>>,
}

/// An axum router serving MCP over streamable HTTP at `/mcp/{agent}`.
///
/// `resolve` maps an agent name to the [`McpServer`] of its tools (usually
/// [`McpServer::from_registry`] with the agent's selection); it is asked once
/// per agent, and the server (with its sessions) is kept. An unknown agent
/// gets `404` naming it. Authentication is the host's middleware: wrap the
/// router in a layer that checks the bearer token. `allowed_hosts` is the
/// DNS-rebinding guard (rmcp's default: the loopback names).
pub fn agents_router<F>(resolve: F, allowed_hosts: Option<Vec<String>>) -> axum::Router
where
    F: Fn(&str) -> Option<McpServer> + Send + Sync + 'static,
{
    let state = Arc::new(Agents {
        resolve: Box::new(resolve),
        allowed_hosts,
        services: Mutex::new(HashMap::new()),
    });
    axum::Router::new()
        .route("/mcp/{agent}", axum::routing::any(handle))
        .with_state(state)
}

async fn handle(
    State(agents): State<Arc<Agents>>,
    Path(agent): Path<String>,
    request: Request,
) -> Response {
    let service = {
        let Ok(mut services) = agents.services.lock() else {
            return (StatusCode::INTERNAL_SERVER_ERROR, "agent table poisoned").into_response();
        };
        match services.get(&agent) {
            Some(service) => Some(service.clone()),
            None => (agents.resolve)(&agent).map(|server| {
                let service = server.http_service(agents.allowed_hosts.clone());
                services.insert(agent.clone(), service.clone());
                service
            }),
        }
    };
    match service {
        Some(service) => service.handle(request).await.map(Body::new),
        None => (
            StatusCode::NOT_FOUND,
            format!("no agent `{agent}` serves MCP here"),
        )
            .into_response(),
    }
}
