//! `/api/v1/tools` and `/api/v1/groups`: read the live registry and call tools.

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_core::{ToolCall, ToolContext, ToolError, ToolSpec, Toolset};
use utoipa::{IntoParams, ToSchema};

use crate::api::extract::{ApiJson, ApiQuery};
use crate::metrics;
use crate::problem::{ApiResult, FieldError, Problem, ProblemDocument};
use crate::state::AppState;

/// A tool in a list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolSummary {
    /// The name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its groups.
    pub tags: Vec<String>,
    /// What it is (`function`, `mcp`, `agent`, `meta`).
    pub kind: String,
    /// Where it comes from: `compiled` (built into the server), `http` or `command` (a stored
    /// declarative tool), `agent` (a stored agent used as a tool), `mcp:SERVER` (imported from
    /// that MCP server) or `meta` (a tool about tools).
    pub source: String,
    /// Its version.
    pub version: String,
    /// Whether it only reads.
    pub read_only: bool,
    /// Whether a person must approve each call.
    pub needs_approval: bool,
}

impl ToolSummary {
    /// The summary of `spec`, from `source` (see [`toolbelt_host::tool_origin`]).
    pub fn of(spec: &ToolSpec, source: String) -> Self {
        Self {
            name: spec.name.to_string(),
            description: spec.description.clone(),
            tags: spec.tags.clone(),
            kind: kind_name(spec),
            source,
            version: spec.version.clone(),
            read_only: spec.policy.is_read_only(),
            needs_approval: spec.policy.needs_approval,
        }
    }
}

/// The kind's wire name (`function`, `mcp`, ...).
fn kind_name(spec: &ToolSpec) -> String {
    serde_json::to_value(spec.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// A page of tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolPage {
    /// The tools, by name.
    pub items: Vec<ToolSummary>,
    /// Pass as `cursor` for the next page; absent on the last page.
    pub next_cursor: Option<String>,
}

/// Filters and paging of `GET /tools`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ToolQuery {
    /// Only tools in this group.
    pub tag: Option<String>,
    /// Only tools of this kind (`function`, `mcp`, `agent`, ...).
    pub kind: Option<String>,
    /// Only tools from this source (`compiled`, `http`, `command`, `agent`, `meta`, `mcp` for
    /// every MCP server or `mcp:SERVER` for one).
    pub source: Option<String>,
    /// Only tools whose name or description contains this text (case-insensitive).
    pub q: Option<String>,
    /// Start after this tool name (from `next_cursor`).
    pub cursor: Option<String>,
    /// Page size, 1-5000 (default 100). Summaries are small: a console or client can take a
    /// catalog of a few thousand tools in one request.
    pub limit: Option<usize>,
}

/// Lists the tools, filtered and paged by name.
#[utoipa::path(get, path = "/api/v1/tools", tag = "tools", params(ToolQuery),
    responses((status = 200, body = ToolPage), (status = 400, body = ProblemDocument), (status = 401, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn list_tools(
    State(state): State<AppState>,
    axum::extract::Extension(who): axum::extract::Extension<crate::tokens::Principal>,
    ApiQuery(query): ApiQuery<ToolQuery>,
) -> ApiResult<Json<ToolPage>> {
    let limit = query.limit.unwrap_or(100);
    if !(1..=5000).contains(&limit) {
        return Err(Problem::bad_request(
            "invalid_query",
            format!("`limit` must be 1-5000, not {limit}"),
        )
        .with_pointer("limit"));
    }
    let needle = query.q.as_deref().map(str::to_lowercase);
    // A token limited to agents sees the tools its agents are offered.
    let reach = state
        .agents()
        .tools_for(&who.access)
        .await
        .map_err(crate::agents::host_problem)?;
    let tools = state.registry().list();
    let live = state.live().map(AsRef::as_ref);
    let source_of = |s: &ToolSpec| toolbelt_host::tool_origin(live, s);
    // Filter and sort borrowed specs; only the page's rows are built.
    let mut specs: Vec<&ToolSpec> = tools
        .iter()
        .map(|t| t.spec())
        .filter(|s| reach.as_ref().is_none_or(|r| r.contains(s.name.as_str())))
        .filter(|s| query.cursor.as_deref().is_none_or(|c| s.name.as_str() > c))
        .filter(|s| query.tag.as_deref().is_none_or(|t| s.has_tag(t)))
        .filter(|s| query.kind.as_deref().is_none_or(|k| kind_name(s) == k))
        .filter(|s| {
            query
                .source
                .as_deref()
                .is_none_or(|wanted| source_matches(&source_of(s), wanted))
        })
        .filter(|s| {
            needle.as_deref().is_none_or(|n| {
                s.name.as_str().to_lowercase().contains(n)
                    || s.description.to_lowercase().contains(n)
            })
        })
        .collect();
    let more = specs.len() > limit;
    if more {
        specs.select_nth_unstable_by(limit, |a, b| a.name.as_str().cmp(b.name.as_str()));
        specs.truncate(limit);
    }
    specs.sort_unstable_by(|a, b| a.name.as_str().cmp(b.name.as_str()));
    let items: Vec<ToolSummary> = specs
        .into_iter()
        .map(|s| ToolSummary::of(s, source_of(s)))
        .collect();
    let next_cursor = more.then(|| items.last().map(|t| t.name.clone())).flatten();
    Ok(Json(ToolPage { items, next_cursor }))
}

/// Whether a tool's source matches the `source` filter: exactly, or `mcp` for every `mcp:SERVER`.
pub fn source_matches(source: &str, wanted: &str) -> bool {
    source == wanted || (wanted == "mcp" && source.starts_with("mcp:"))
}

/// `Ok` when `who` may use the tool `name`: every tool for a token that reaches every agent,
/// else the tools its agents are offered (403 `tool_not_allowed`, whether or not it exists).
pub(crate) async fn reach_tool(
    state: &AppState,
    who: &crate::tokens::Principal,
    name: &str,
) -> Result<(), Problem> {
    state
        .agents()
        .check_tool(name, &who.access)
        .await
        .map_err(crate::agents::host_problem)
}

/// The tool `name`, or 404 naming the closest names.
pub(crate) fn find_tool(
    state: &AppState,
    name: &str,
) -> Result<toolbelt_core::ToolHandle, Problem> {
    state.registry().get(name).ok_or_else(|| {
        let nearest = match Toolset::from_tools(state.registry().list()).require(name) {
            Err(ToolError::UnknownTool { nearest, .. }) => nearest,
            _ => Vec::new(),
        };
        Problem::not_found("tool_not_found", format!("no tool `{name}`"))
            .with_pointer("name")
            .with_nearest(nearest)
    })
}

/// A tool's full definition.
#[utoipa::path(get, path = "/api/v1/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "Tool name")),
    responses((status = 200, description = "The tool's spec", body = crate::api::schema::ToolSpecSchema), (status = 404, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn get_tool(
    State(state): State<AppState>,
    axum::extract::Extension(who): axum::extract::Extension<crate::tokens::Principal>,
    Path(name): Path<String>,
) -> ApiResult<Json<Value>> {
    reach_tool(&state, &who, &name).await?;
    let tool = find_tool(&state, &name)?;
    Ok(Json(
        serde_json::to_value(tool.spec()).map_err(Problem::internal)?,
    ))
}

/// Body of `POST /tools/{name}/call`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CallRequest {
    /// The arguments, checked against the tool's parameter schema.
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// The outcome of a call that ran (or was refused by policy).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CallResponse {
    /// Whether the tool produced output.
    pub ok: bool,
    /// The output text (absent on error).
    pub text: Option<String>,
    /// Structured output, when the tool gave one.
    #[schema(value_type = Option<Object>)]
    pub json: Option<Value>,
    /// The error the tool reported (`kind`: `failed`, `timeout`, `denied`, `cancelled`).
    pub error: Option<CallError>,
    /// Wall time in milliseconds.
    pub duration_ms: f64,
}

/// A tool's own failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CallError {
    /// `failed`, `timeout`, `denied` or `cancelled`.
    pub kind: String,
    /// What went wrong.
    pub message: String,
    /// Whether trying again may work.
    pub retryable: bool,
}

/// Calls a tool. Bad arguments are 422 with the JSON pointer of each wrong value
/// (under `/arguments`); a tool that ran and failed is 200 with `ok: false`.
#[utoipa::path(post, path = "/api/v1/tools/{name}/call", tag = "tools",
    params(("name" = String, Path, description = "Tool name")),
    request_body = CallRequest,
    responses((status = 200, body = CallResponse), (status = 404, body = ProblemDocument), (status = 422, body = ProblemDocument),
        (status = 400, body = ProblemDocument), (status = 413, body = ProblemDocument), (status = 415, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn call_tool(
    State(state): State<AppState>,
    axum::extract::Extension(who): axum::extract::Extension<crate::tokens::Principal>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<CallRequest>,
) -> ApiResult<Json<CallResponse>> {
    reach_tool(&state, &who, &name).await?;
    let tool = find_tool(&state, &name)?;
    let toolset = Toolset::from_tools([tool]);
    let ctx = ToolContext::new().with_extensions(state.extensions().clone());
    let call = ToolCall::new(
        format!("http_{}", uuid::Uuid::new_v4().simple()),
        name,
        body.arguments,
    );
    let result = state.executor().execute(&toolset, call, &ctx).await;
    metrics::record_call(&result);
    if let Some(log) = state.run_log()
        && log
            .log(toolbelt_host::runs::audit_entry(&result).with_actor(who.name.clone()))
            .await
            .is_err()
    {
        tracing::warn!("the run log has stopped; an audit entry was lost");
    }
    let duration_ms = result.duration.as_secs_f64() * 1000.0;
    match result.outcome {
        Ok(output) => Ok(Json(CallResponse {
            ok: true,
            text: Some(output.text),
            json: output.json,
            error: None,
            duration_ms,
        })),
        Err(ToolError::InvalidArguments { violations }) => {
            let errors = violations
                .into_iter()
                .map(|v| FieldError {
                    pointer: format!("/arguments{}", v.pointer),
                    message: v.message,
                })
                .collect::<Vec<_>>();
            let detail = errors
                .iter()
                .map(|e| format!("{}: {}", e.pointer, e.message))
                .collect::<Vec<_>>()
                .join("; ");
            Err(Problem::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_arguments",
                format!("the arguments break the tool's schema: {detail}"),
            )
            .with_errors(errors))
        }
        Err(error) => Ok(Json(CallResponse {
            ok: false,
            text: None,
            json: None,
            error: Some(CallError {
                kind: metrics::kind_name(error.kind()).to_owned(),
                message: error.to_string(),
                retryable: error.is_retryable(),
            }),
            duration_ms,
        })),
    }
}

/// A group and its tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct GroupView {
    /// The group (tag).
    pub name: String,
    /// Its tools, by name.
    pub tools: Vec<String>,
}

/// Lists the groups with their tools.
#[utoipa::path(get, path = "/api/v1/groups", tag = "tools",
    responses((status = 200, body = Vec<GroupView>), (status = 500, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn list_groups(
    State(state): State<AppState>,
    axum::extract::Extension(who): axum::extract::Extension<crate::tokens::Principal>,
) -> ApiResult<Json<Vec<GroupView>>> {
    let reach = state
        .agents()
        .tools_for(&who.access)
        .await
        .map_err(crate::agents::host_problem)?;
    let groups: Vec<GroupView> = state
        .registry()
        .tags()
        .into_iter()
        .map(|(tag, _)| {
            let mut tools: Vec<String> = state
                .registry()
                .tools_by_tag(&tag)
                .iter()
                .map(|t| t.name().to_string())
                .filter(|n| reach.as_ref().is_none_or(|r| r.contains(n)))
                .collect();
            tools.sort();
            GroupView { name: tag, tools }
        })
        .filter(|g| !g.tools.is_empty())
        .collect();
    Ok(Json(groups))
}
