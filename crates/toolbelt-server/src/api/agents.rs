//! `/api/v1/agents`: the agents and which tools each may use.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use toolbelt_store::{AgentSpec, Revision, Stored};
use utoipa::ToSchema;

use crate::agents::host_problem;
use crate::api::extract::ApiJson;
use crate::api::manage::if_match;
use crate::api::schema::{AgentDraftSchema, AgentRecordSchema};
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;
use crate::tokens::Principal;

/// Lists the agents the caller may see, stored and configured, in one shape: a configured
/// agent has revision 0 and `changed_by: "configuration"`.
#[utoipa::path(get, path = "/api/v1/agents", tag = "agents",
    responses((status = 200, body = Vec<AgentRecordSchema>), (status = 500, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn list_agents(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
) -> ApiResult<Json<Vec<Stored<AgentSpec>>>> {
    let records = state
        .agents()
        .records_for(&who.access)
        .await
        .map_err(host_problem)?;
    Ok(Json(records))
}

/// One agent, stored or configured (revision 0), as runs of it get it.
#[utoipa::path(get, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = AgentRecordSchema), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn get_agent(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Stored<AgentSpec>>> {
    let record = state
        .agents()
        .record_for(&id, &who.access)
        .await
        .map_err(host_problem)?;
    Ok(Json(record))
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
    /// Whether the agent's selection or bindings name it (a named tool may still be
    /// unavailable: disabled, missing, or kept from this agent by its rules).
    #[serde(default)]
    pub selected: bool,
    /// The version a run gets (a stored tool's pin or current version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// `compiled`, `declarative`, `mcp` or `agent`, for a stored tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Every tool with whether the agent may use it and why.
#[utoipa::path(get, path = "/api/v1/agents/{id}/tools", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = Vec<ToolAvailability>), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn agent_tools(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<ToolAvailability>>> {
    // The same decision a run of the agent gets: the host's factory makes both.
    let record = state
        .agents()
        .record_for(&id, &who.access)
        .await
        .map_err(host_problem)?;
    let (_, report) = state.agents().tools(&record).await.map_err(host_problem)?;
    Ok(Json(
        report
            .into_iter()
            .map(|r| ToolAvailability {
                name: r.name,
                available: r.available,
                why: r.why,
                selected: r.selected,
                version: r.version,
                source: r.source.map(|s| s.as_str().to_owned()),
            })
            .collect(),
    ))
}

/// Checks an agent without storing it: the checks creation runs (name, kind, pins, options),
/// then the ones a run of it would meet (its selection against the tools this server has).
#[utoipa::path(post, path = "/api/v1/agents/validate", tag = "agents", request_body = AgentDraftSchema,
    responses((status = 204, description = "valid"), (status = 422, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn validate_agent(
    State(state): State<AppState>,
    ApiJson(spec): ApiJson<AgentSpec>,
) -> ApiResult<axum::http::StatusCode> {
    let record = Stored::unstored(spec.normalized().map_err(Problem::from)?, "validate");
    state.agents().tools(&record).await.map_err(host_problem)?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

/// The stored agent a write applies to.
fn store(state: &AppState) -> Result<&toolbelt_store::Store, Problem> {
    state
        .store()
        .ok_or_else(|| Problem::no_database("stored agents"))
}

/// A stored agent with its revision.
fn stored_response(status: axum::http::StatusCode, record: Stored<AgentSpec>) -> Response {
    let etag = axum::http::HeaderValue::from_str(&format!("\"{}\"", record.revision)).ok();
    let mut response = (status, Json(record)).into_response();
    if let Some(etag) = etag {
        response
            .headers_mut()
            .insert(axum::http::header::ETAG, etag);
    }
    response
}

/// Creates a stored agent (`name`, `kind`, `labels`, `system_prompt`, `provider`, `model`,
/// `options`, `router`, `selection`, `pins`, `tools`).
#[utoipa::path(post, path = "/api/v1/agents", tag = "agents", request_body = AgentDraftSchema,
    responses((status = 201, description = "The stored agent", body = AgentRecordSchema), (status = 409, body = ProblemDocument),
        (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn create_agent(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(draft): ApiJson<AgentSpec>,
) -> ApiResult<Response> {
    who.access.check(&draft.name).map_err(host_problem)?;
    let record = store(&state)?
        .agents()
        .create(&draft, &who.name)
        .await
        .map_err(|e| Problem::from(e).with_code_if("already_exists", "agent_exists"))?;
    Ok(stored_response(axum::http::StatusCode::CREATED, record))
}

/// Replaces a stored agent. Needs `If-Match: "<revision>"`.
#[utoipa::path(put, path = "/api/v1/agents/{id}", tag = "agents", request_body = AgentDraftSchema,
    params(("id" = String, Path, description = "Agent id"), ("If-Match" = String, Header, description = "The revision read")),
    responses((status = 200, body = AgentRecordSchema), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument),
        (status = 428, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn update_agent(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(draft): ApiJson<AgentSpec>,
) -> ApiResult<Response> {
    let Some(revision) = if_match(&headers)? else {
        return Err(Problem::new(
            axum::http::StatusCode::PRECONDITION_REQUIRED,
            "if_match_required",
            "send `If-Match: \"<revision>\"` with the revision you read (the ETag of GET /api/v1/agents/{id}/stored)",
        )
        .with_pointer("If-Match"));
    };
    if draft.name != id {
        return Err(Problem::invalid_field(
            "/name",
            format!("must be `{id}` (the agent in the URL)"),
        ));
    }
    let record = store(&state)?
        .agents()
        .update(&draft, Revision::Exactly(revision), &who.name)
        .await
        .map_err(Problem::from)?;
    Ok(stored_response(axum::http::StatusCode::OK, record))
}

/// The stored agent with its revision as `ETag`.
#[utoipa::path(get, path = "/api/v1/agents/{id}/stored", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 200, body = AgentRecordSchema), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn get_stored_agent(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    let record = store(&state)?
        .agents()
        .get(&id)
        .await
        .map_err(Problem::from)?;
    Ok(stored_response(axum::http::StatusCode::OK, record))
}

/// Deletes a stored agent. `If-Match` optional.
#[utoipa::path(delete, path = "/api/v1/agents/{id}", tag = "agents",
    params(("id" = String, Path, description = "Agent id")),
    responses((status = 204, description = "deleted"), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn delete_agent(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<axum::http::StatusCode> {
    let revision = if_match(&headers)?;
    store(&state)?
        .agents()
        .delete(&id, Revision::from(revision))
        .await
        .map_err(Problem::from)?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

/// Optional body of `POST /agents/{id}/tools/{tool}`.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BindBody {
    /// Pin this version of the tool (default: follow the current version).
    #[serde(default)]
    pub version: Option<i64>,
}

/// Binds a tool to a stored agent (`add_tool`); persists at once.
#[utoipa::path(post, path = "/api/v1/agents/{id}/tools/{tool}", tag = "agents",
    params(("id" = String, Path, description = "Agent id"), ("tool" = String, Path, description = "Tool name")),
    request_body(content = BindBody, description = "A version pin, or `{}` (or no body) to follow the current version"),
    responses((status = 200, body = AgentRecordSchema), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument),
        (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn bind_tool(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path((id, tool)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    let bind: BindBody = if body.is_empty() {
        BindBody::default()
    } else {
        crate::api::extract::parse_json(&body)?
    };
    let mut binding = toolbelt_store::Binding::new(tool);
    if let Some(v) = bind.version {
        binding = binding.pinned(v);
    }
    let record = store(&state)?
        .agents()
        .bind(
            &id,
            &binding,
            Revision::from(if_match(&headers)?),
            &who.name,
        )
        .await
        .map_err(Problem::from)?;
    Ok(stored_response(axum::http::StatusCode::OK, record))
}

/// Unbinds a tool from a stored agent (`remove_tool`); persists at once.
#[utoipa::path(delete, path = "/api/v1/agents/{id}/tools/{tool}", tag = "agents",
    params(("id" = String, Path, description = "Agent id"), ("tool" = String, Path, description = "Tool name")),
    responses((status = 200, body = AgentRecordSchema), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn unbind_tool(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path((id, tool)): Path<(String, String)>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let record = store(&state)?
        .agents()
        .unbind(&id, &tool, Revision::from(if_match(&headers)?), &who.name)
        .await
        .map_err(Problem::from)?;
    Ok(stored_response(axum::http::StatusCode::OK, record))
}
