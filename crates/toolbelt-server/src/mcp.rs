//! `/mcp/{agent}`: each agent's tools over MCP (streamable HTTP), behind the `run` scope.
//!
//! The endpoint serves what a run of the agent may use: its selection over the live registry
//! (tools added or removed at run time are announced with `list_changed`), called through an
//! executor with the agent's approval policy (a call that needs approval is asked through MCP
//! elicitation where the client supports it, refused with a message otherwise), with the
//! agent's memory and routines in the call context, and written to the run log. A changed
//! agent definition gives new sessions a fresh server.
//!
//! `/mcp/{agent}/routed` serves the same tools routed: the client first sees only
//! `search_tools` (the hybrid router's ranking: words, concepts, keyword groups), and each
//! search adds the tools it found to the session's list (`list_changed`).

use axum::middleware::from_fn_with_state;
use std::sync::Arc;
use toolbelt_core::{ExecEvent, Executor, Selection};

use toolbelt_mcp::{AgentEndpoint, Export, McpServer, agents_router};
use toolbelt_router::{HybridRouter, KeywordRouter, LexicalRouter, SearchTools};

use crate::auth::require_run;
use crate::config::ServerConfig;
use crate::state::AppState;

/// The `/mcp/{agent}` routes.
pub(crate) fn router(state: &AppState) -> axum::Router {
    let resolver = state.clone();
    agents_router(
        move |agent, export| {
            let state = resolver.clone();
            Box::pin(async move { endpoint(&state, &agent, export).await })
        },
        Some(allowed_hosts(&state.config)),
    )
    .layer(from_fn_with_state(state.clone(), require_run))
}

/// Host names the endpoint answers to: loopback, the listening address, and `mcp_hosts`.
fn allowed_hosts(config: &ServerConfig) -> Vec<String> {
    let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1", "[::1]"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    hosts.push(config.addr.ip().to_string());
    hosts.push(config.addr.to_string());
    hosts.extend(config.mcp_hosts.iter().cloned());
    hosts
}

/// Counts each call the agent's MCP executor finishes in the metrics and writes it to the run
/// log when there is one (tool, agent, duration, outcome; the arguments are not in the
/// executor's events). The task ends with the executor.
fn audit(executor: &Executor, log: Option<toolbelt_store::RunLogWriter>, agent: String) {
    let mut events = executor.subscribe();
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(ExecEvent::CallFinished {
                    tool,
                    duration,
                    error,
                    ..
                }) => {
                    crate::metrics::record_tool_call(tool.clone(), error, duration);
                    let Some(log) = &log else { continue };
                    let ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
                    let mut entry = toolbelt_store::LogEntry::tool_call(tool, ms)
                        .with_agent(agent.clone())
                        .with_actor("mcp");
                    if let Some(kind) = error {
                        entry = entry.failed(crate::metrics::kind_name(kind));
                    }
                    if log.log(entry).await.is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                    tracing::warn!(%agent, missed, "MCP audit: calls not logged (event buffer overrun)");
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
}

async fn endpoint(state: &AppState, agent: &str, export: Export) -> Option<AgentEndpoint> {
    let def = match state.agents.find(agent).await {
        Ok(def) => def,
        Err(problem) => {
            tracing::debug!(%agent, ?problem, "MCP: no such agent");
            return None;
        }
    };
    let selection = match Selection::parse(&def.tools) {
        Ok(selection) => selection,
        Err(error) => {
            tracing::warn!(%agent, %error, "MCP: the agent's tool selection does not parse");
            return None;
        }
    };
    let revision = serde_json::to_string(&def).unwrap_or_default();
    let description = (!def.description.is_empty()).then(|| def.description.clone());
    let executor = Executor::builder().policy(def.approval.clone()).build();
    audit(&executor, state.run_log.clone(), def.id.clone());
    let server = McpServer::from_registry(state.shared_registry(), Some(selection), executor)
        .with_name(format!("toolbelt:{}", def.id), description)
        .with_extensions(state.run_extensions(&def.id));
    let server = if export == Export::Routed {
        let router = Arc::new(
            HybridRouter::new(LexicalRouter::default()).with_keyword(KeywordRouter::builtin()),
        );
        server.with_search(move |tools| {
            SearchTools::hybrid(router.clone(), tools.clone())
                .into_handle()
                .map_err(|e| e.to_string())
        })
    } else {
        server
    };
    Some(AgentEndpoint::new(server, revision))
}
