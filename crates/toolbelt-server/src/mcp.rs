//! `/mcp/{agent}`: each agent's tools over MCP (streamable HTTP), behind the `run` scope and
//! for tokens that may act on the agent.
//!
//! The endpoint serves what a run of the agent may use, decided by the host's agent factory
//! (selection, bindings, version pins, availability rules) and decided again after every
//! change of the live registry (a change in what is offered is announced with
//! `list_changed`); a changed agent definition gives new sessions a fresh server. Calls go
//! through an
//! executor with the agent's approval policy (a call that needs approval is refused with a
//! message, since the client whose call waits is not a person deciding; with
//! `mcp_client_approves = true` it is asked through MCP elicitation where the client supports
//! it), with the
//! agent's memory and routines in the call context, and written to the run log. A changed
//! agent definition gives new sessions a fresh server.
//!
//! `/mcp/{agent}/routed` serves the same tools routed: the client first sees only
//! `search_tools` (the hybrid router's ranking: words, concepts, keyword groups), and each
//! search adds the tools it found to the session's list (`list_changed`).

use axum::middleware::from_fn_with_state;
use std::sync::Arc;
use toolbelt_core::{ExecEvent, Executor};

use toolbelt_mcp::{AgentEndpoint, Export, McpServer, agents_router_with_limit};
use toolbelt_router::SearchTools;

use crate::auth::require_run;
use crate::guard::AllowedHosts;
use crate::state::AppState;

/// The `/mcp/{agent}` routes.
pub(crate) fn router(state: &AppState) -> axum::Router {
    let resolver = state.clone();
    // The server-wide guard checks `Host` first; rmcp's own check gets the same list.
    let hosts = AllowedHosts::from_config(state.config()).for_rmcp();
    agents_router_with_limit(
        move |agent, export| {
            let state = resolver.clone();
            Box::pin(async move { endpoint(&state, &agent, export).await })
        },
        Some(hosts),
        state.config().max_mcp_sessions,
    )
    .layer(from_fn_with_state(state.clone(), require_run))
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
    let record = match state.agents().record(agent).await {
        Ok(record) => record,
        Err(error) => {
            tracing::debug!(%agent, %error, "MCP: no such agent");
            return None;
        }
    };
    // The tools a run of the agent gets (selection, bindings, pins, availability), from the
    // host's factory like every other entry point.
    let (tools, report) = match state.agents().tools(&record).await {
        Ok(plan) => plan,
        Err(error) => {
            tracing::warn!(%agent, %error, "MCP: the agent's tools cannot be built");
            return None;
        }
    };
    // A new session gets a fresh server when the definition changed; the tools follow the
    // registry (decided again by the factory after each change, then announced).
    let revision = format!(
        "{}|{}",
        record.revision,
        serde_json::to_string(&record.value).unwrap_or_default()
    );
    let tools = state
        .agents()
        .follow_tools(record.name.clone(), tools, &report);
    let description = (!record.description.is_empty()).then(|| record.description.clone());
    let executor = Executor::builder()
        .policy(record.options.approval.clone().unwrap_or_default())
        .build();
    audit(&executor, state.run_log().cloned(), record.name.clone());
    let server = McpServer::from_published(tools, executor)
        .with_name(format!("toolbelt:{}", record.name), description)
        .with_extensions(state.run_extensions(&record.name))
        .with_client_approval(state.config().mcp_client_approves);
    let server = if export == Export::Routed {
        let router = Arc::new(state.agents().router().clone());
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
