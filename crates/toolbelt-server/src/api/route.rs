//! `POST /api/v1/route`: preview which tools the router would send.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_router::{RouteDecision, RouteRequest, ScoredTool, TokenSavings};
use utoipa::ToSchema;

use crate::agents::host_problem;
use crate::api::extract::ApiJson;
use crate::metrics;
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;

/// Body of `POST /route`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteBody {
    /// The user's input.
    pub input: String,
    /// Route over this agent's tools (default: every tool).
    #[serde(default)]
    pub agent: Option<String>,
    /// Or over this selection expression (e.g. `file_ops,web`).
    #[serde(default)]
    pub tools: Option<String>,
    /// Recent conversation texts, oldest first.
    #[serde(default)]
    pub recent: Vec<String>,
}

/// Prompt tokens of the tool schemas: sent against all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TokensView {
    /// Tokens of the tools sent.
    pub sent: usize,
    /// Tokens of every tool of the toolset.
    pub all: usize,
    /// Tokens saved.
    pub saved: usize,
}

/// The routing decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RouteView {
    /// `outcome` (`tools` / `direct` / `clarify`), `tools` with scores, `groups`, `fallback`, `router`, `reason`.
    #[schema(value_type = Object)]
    pub decision: Value,
    /// How many tools the router chose from.
    pub toolset_size: usize,
    /// Schema tokens sent, of all, saved.
    pub tokens: TokensView,
}

/// Previews the routing decision for an input over an agent's tools.
#[utoipa::path(post, path = "/api/v1/route", tag = "route", request_body = RouteBody,
    responses((status = 200, body = RouteView), (status = 404, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn route(
    State(state): State<AppState>,
    axum::extract::Extension(who): axum::extract::Extension<crate::tokens::Principal>,
    ApiJson(body): ApiJson<RouteBody>,
) -> ApiResult<Json<RouteView>> {
    if body.input.len() > toolbelt_router::MAX_QUERY_BYTES {
        return Err(Problem::invalid_field(
            "/input",
            format!("at most {} bytes", toolbelt_router::MAX_QUERY_BYTES),
        ));
    }
    let (toolset, router) = match (&body.agent, &body.tools) {
        (Some(_), Some(_)) => {
            return Err(Problem::invalid_field(
                "/tools",
                "give `agent` or `tools`, not both",
            ));
        }
        // The agent's tools and router, as its runs get them.
        (Some(agent), None) => {
            let record = state
                .agents()
                .record_for(agent, &who.access)
                .await
                .map_err(|e| host_problem(e).with_pointer("/agent"))?;
            let (toolset, _) = state.agents().tools(&record).await.map_err(host_problem)?;
            let router = state.agents().router_of(&record).map_err(host_problem)?;
            (toolset, router)
        }
        // A token limited to agents routes over one of its agents' tools only.
        (None, _) if !who.access.is_all() => {
            let allowed: Vec<&str> = who
                .access
                .agents()
                .into_iter()
                .flatten()
                .map(String::as_str)
                .collect();
            return Err(Problem::new(
                axum::http::StatusCode::FORBIDDEN,
                "agent_required",
                format!(
                    "this token may act only on agents ({}): name one in `agent`",
                    allowed.join(", ")
                ),
            )
            .with_pointer("/agent"));
        }
        (None, Some(expr)) => (
            state.registry().select(expr).map_err(|e| {
                Problem::invalid_field("/tools", e.to_string()).with_code("invalid_selection")
            })?,
            Some(state.router().clone()),
        ),
        (None, None) => (state.registry().all(), Some(state.router().clone())),
    };
    let request = RouteRequest::new(body.input, toolset.clone()).with_recent(body.recent);
    let decision = match router {
        Some(router) => router.route_or_fallback(&request).await,
        // Strategy `none`: every tool of the agent is sent.
        None => RouteDecision::tools(
            "none",
            toolset
                .iter()
                .map(|t| ScoredTool {
                    name: t.name().to_string(),
                    score: 0.0,
                })
                .collect(),
            "the agent's router strategy is `none`: every tool is sent",
        ),
    };
    metrics::record_route(&decision);
    let tokens = TokenSavings::measure(&toolset, &decision.tool_names());
    Ok(Json(RouteView {
        decision: serde_json::to_value(&decision).map_err(Problem::internal)?,
        toolset_size: toolset.len(),
        tokens: TokensView {
            sent: tokens.chosen,
            all: tokens.total,
            saved: tokens.saved(),
        },
    }))
}
