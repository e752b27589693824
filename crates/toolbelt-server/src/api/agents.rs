//! `/api/v1/agents`: the agents and which tools each may use.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::agents::AgentDef;
use crate::problem::{ApiResult, ProblemDocument};
use crate::state::AppState;

/// Lists the agents.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents",
    responses((status = 200, body = Vec<AgentDef>)), security(("bearer" = [])))]
pub(crate) async fn list_agents(State(state): State<AppState>) -> Json<Vec<AgentDef>> {
    Json(state.agents.list())
}

/// One agent.
#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = AgentDef), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn get_agent(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<AgentDef>> {
    state.agents.get(&id).map(Json)
}

/// Whether an agent may use a tool, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolAvailability {
    /// The tool.
    pub name: String,
    /// Whether the agent's model is offered it.
    pub available: bool,
    /// Why (or why not).
    pub why: String,
}

/// Every tool with whether the agent may use it and why.
#[utoipa::path(get, path = "/api/v1/agents/{id}/tools", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = Vec<ToolAvailability>), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn agent_tools(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ToolAvailability>>> {
    let agent = state.agents.get(&id)?;
    let selected = agent.toolset(state.registry())?;
    let mut out: Vec<ToolAvailability> = state
        .registry()
        .list()
        .iter()
        .map(|t| {
            let name = t.name().to_string();
            let available = selected.contains(&name);
            let why = if available {
                format!("selected by `{}`", agent.tools)
            } else {
                format!("not selected by `{}`", agent.tools)
            };
            ToolAvailability {
                name,
                available,
                why,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(out))
}

/// Checks an agent definition without storing it (the same checks creation runs).
#[utoipa::path(post, path = "/api/v1/agents/validate", tag = "agents", request_body = AgentDef,
    responses((status = 204, description = "valid"), (status = 422, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn validate_agent(
    State(state): State<AppState>,
    crate::api::extract::ApiJson(def): crate::api::extract::ApiJson<AgentDef>,
) -> ApiResult<axum::http::StatusCode> {
    def.validate(state.registry())?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}
