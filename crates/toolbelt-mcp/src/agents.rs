//! [`agents_router`]: one streamable HTTP MCP endpoint per agent, `/mcp/{agent}`, and its
//! routed export at `/mcp/{agent}/routed`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rmcp::transport::StreamableHttpService;
use toolbelt_core::BoxFuture;

use crate::server::{McpServer, McpServerHandler};
use crate::sessions::{CappedSessions, SessionCount};

type Service = StreamableHttpService<McpServerHandler, CappedSessions>;
type Resolve = dyn Fn(String, Export) -> BoxFuture<'static, Option<AgentEndpoint>> + Send + Sync;

/// Which export of an agent's tools a request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Export {
    /// `/mcp/{agent}`: every tool the agent may use.
    All,
    /// `/mcp/{agent}/routed`: a search tool and what the session's searches found (build the
    /// server with [`McpServer::with_search`]).
    Routed,
}

/// What `/mcp/{agent}` serves for one agent: its [`McpServer`], and a revision that changes
/// when the agent's definition does (its tool selection, its approval policy).
#[derive(Debug, Clone)]
pub struct AgentEndpoint {
    /// The agent's tools as an MCP server.
    pub server: McpServer,
    /// Any text that differs between two definitions of the agent (e.g. its JSON).
    pub revision: String,
}

impl AgentEndpoint {
    /// Pairs a server with the revision of the definition it was built from.
    pub fn new(server: McpServer, revision: impl Into<String>) -> Self {
        Self {
            server,
            revision: revision.into(),
        }
    }
}

struct Agents {
    resolve: Box<Resolve>,
    allowed_hosts: Option<Vec<String>>,
    sessions: Arc<SessionCount>,
    services: Mutex<HashMap<(String, Export), (String, Service)>>,
}

/// An axum router serving MCP over streamable HTTP at `/mcp/{agent}` and
/// `/mcp/{agent}/routed`.
///
/// `resolve` maps an agent name and an [`Export`] to its [`AgentEndpoint`] (usually
/// [`McpServer::from_registry`] with the agent's selection, plus [`McpServer::with_search`]
/// for [`Export::Routed`]), or `None` for an unknown agent (`404` naming it). It is asked at the first request for an agent and again at each new
/// session (a request without `Mcp-Session-Id`): when the revision changed, the agent gets a
/// fresh server, and sessions of the old one end (clients start a new session, as MCP says
/// they do on `404`). Authentication is the host's middleware: wrap the router in a layer that
/// checks the bearer token. `allowed_hosts` is the DNS-rebinding guard (rmcp's default: the
/// loopback names).
pub fn agents_router<F>(resolve: F, allowed_hosts: Option<Vec<String>>) -> axum::Router
where
    F: Fn(String, Export) -> BoxFuture<'static, Option<AgentEndpoint>> + Send + Sync + 'static,
{
    agents_router_with_limit(resolve, allowed_hosts, usize::MAX)
}

/// [`agents_router`] with at most `max_sessions` MCP sessions open at once over every agent:
/// a request that would open one more is answered `503 Service Unavailable` saying so.
pub fn agents_router_with_limit<F>(
    resolve: F,
    allowed_hosts: Option<Vec<String>>,
    max_sessions: usize,
) -> axum::Router
where
    F: Fn(String, Export) -> BoxFuture<'static, Option<AgentEndpoint>> + Send + Sync + 'static,
{
    let state = Arc::new(Agents {
        resolve: Box::new(resolve),
        allowed_hosts,
        sessions: SessionCount::new(max_sessions),
        services: Mutex::new(HashMap::new()),
    });
    axum::Router::new()
        .route(
            "/mcp/{agent}",
            axum::routing::any(
                |State(agents): State<Arc<Agents>>, Path(agent): Path<String>, request| {
                    handle(agents, agent, Export::All, request)
                },
            ),
        )
        .route(
            "/mcp/{agent}/routed",
            axum::routing::any(
                |State(agents): State<Arc<Agents>>, Path(agent): Path<String>, request| {
                    handle(agents, agent, Export::Routed, request)
                },
            ),
        )
        .with_state(state)
}

async fn handle(agents: Arc<Agents>, agent: String, export: Export, request: Request) -> Response {
    let key = (agent.clone(), export);
    let cached = agents
        .services
        .lock()
        .ok()
        .and_then(|s| s.get(&key).cloned());
    let in_session = request.headers().contains_key("mcp-session-id");
    if !in_session && request.method() == axum::http::Method::POST && agents.sessions.is_full() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "too many MCP sessions are open (the cap is {}); close one (DELETE with its \
                 Mcp-Session-Id) or try again later",
                agents.sessions.max()
            ),
        )
            .into_response();
    }
    let service = match cached {
        Some((_, service)) if in_session => Some(service),
        cached => match (agents.resolve)(agent.clone(), export).await {
            None => None,
            Some(endpoint) => match cached {
                Some((revision, service)) if revision == endpoint.revision => Some(service),
                _ => {
                    let service = endpoint
                        .server
                        .capped_http_service(agents.allowed_hosts.clone(), agents.sessions.clone());
                    if let Ok(mut services) = agents.services.lock() {
                        services.insert(key, (endpoint.revision, service.clone()));
                    }
                    Some(service)
                }
            },
        },
    };
    let delete = request.method() == axum::http::Method::DELETE;
    match service {
        Some(service) => {
            let mut response = service.handle(request).await.map(Body::new);
            // See `McpServer::router`: clients expect 200 or 204 for a closed session.
            if delete && response.status() == StatusCode::ACCEPTED {
                *response.status_mut() = StatusCode::NO_CONTENT;
            }
            response
        }
        None => (
            StatusCode::NOT_FOUND,
            format!("no agent `{agent}` serves MCP here"),
        )
            .into_response(),
    }
}
