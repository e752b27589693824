//! Admin endpoints over the store: create, update, enable, disable, delete, version and roll back tools.
//!
//! Every write goes to the store first (one transaction, durable when it returns), then this
//! instance's live registry refreshes that one tool at once; other instances follow the change feed.
//! Updates need `If-Match: "<revision>"` (from the `ETag` of `GET /tools/{name}`); a stale
//! revision is `412`, never a silent merge.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_core::ToolSpec;
use toolbelt_store::{
    Availability, Revision, StoreError, Stored, ToolDef, ToolEntry, ToolSource, ToolVersion,
};
use toolbelt_tools::declarative::Definition;
use utoipa::ToSchema;

use crate::api::extract::ApiJson;
use crate::api::schema::{
    AvailabilitySchema, DefinitionSchema, StoredDefinitionSchema, ToolSpecSchema,
};
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;
use crate::tokens::Principal;

/// A stored tool: its current spec and bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StoredTool {
    /// The name.
    pub name: String,
    /// `compiled`, `declarative`, `mcp` or `agent`.
    pub source: String,
    /// The version in use.
    pub current_version: i64,
    /// The newest version.
    pub latest_version: i64,
    /// Whether it is offered.
    pub enabled: bool,
    /// A compiled tool this build no longer has.
    pub missing: bool,
    /// Revision for `If-Match`.
    pub revision: i64,
    /// Who changed it last.
    pub changed_by: String,
    /// Last change, Unix milliseconds.
    pub updated_at: i64,
    /// The current spec.
    #[schema(value_type = ToolSpecSchema)]
    pub spec: Value,
    /// The definition of a declarative or agent tool; null for a compiled one.
    #[schema(value_type = Option<StoredDefinitionSchema>)]
    pub definition: Option<Value>,
    /// Who may use the tool, and when (`agent_kinds`, `agent_labels`, `capabilities`,
    /// `conditions`); absent when anyone may.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AvailabilitySchema)]
    pub availability: Option<Value>,
}

impl From<Stored<ToolEntry>> for StoredTool {
    fn from(r: Stored<ToolEntry>) -> Self {
        let entry = &r.value;
        let def = &entry.def;
        Self {
            name: def.name().to_owned(),
            source: def.source.as_str().to_owned(),
            current_version: entry.current_version,
            latest_version: entry.latest_version,
            enabled: entry.enabled,
            missing: entry.missing,
            revision: r.revision,
            changed_by: r.changed_by.clone(),
            updated_at: r.updated_at,
            spec: serde_json::to_value(&def.spec).unwrap_or(Value::Null),
            definition: def.definition.clone(),
            availability: (!def.availability.is_unrestricted())
                .then(|| serde_json::to_value(&def.availability).unwrap_or(Value::Null)),
        }
    }
}

/// Body of `POST /tools` and `PUT /tools/{name}`: a declarative tool.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolBody {
    /// `name`, `description`, `parameters` (JSON Schema), `tags`, `timeout_ms`, `policy`, ...
    #[schema(value_type = ToolSpecSchema)]
    pub spec: ToolSpec,
    /// `{"http": {...}}` or `{"command": {...}}`.
    #[schema(value_type = DefinitionSchema)]
    pub definition: Value,
    /// Why it changed.
    #[serde(default)]
    pub note: Option<String>,
    /// Who may use the tool, and when (`agent_kinds`, `agent_labels`, `capabilities`,
    /// `conditions`); absent keeps the stored rules (none on create).
    #[serde(default)]
    #[schema(value_type = Option<AvailabilitySchema>)]
    pub availability: Option<Availability>,
}

fn store_of(state: &AppState) -> Result<&std::sync::Arc<toolbelt_store::LiveRegistry>, Problem> {
    state
        .live()
        .ok_or_else(|| Problem::no_database("stored tools"))
}

/// What a tool body asks the store to write: the tool, why, and its rules (absent: the stored
/// rules stay on an update, anyone may use a new tool).
struct ToolWrite {
    def: ToolDef,
    note: Option<String>,
    availability: Option<Availability>,
}

fn tool_write(body: ToolBody) -> Result<ToolWrite, Problem> {
    // The spec first: a definition is checked against the arguments the spec declares.
    if let Err(e) = jsonschema::meta::validate(&body.spec.parameters) {
        return Err(Problem::invalid_field(
            "/spec/parameters",
            format!("not a valid JSON Schema: {e}"),
        ));
    }
    body.spec
        .validate()
        .map_err(|e| Problem::invalid_field("/spec", e.to_string()))?;
    let definition = Definition::from_value(&body.definition).map_err(|e| {
        Problem::invalid_field("/definition", e.reason).with_code("invalid_definition")
    })?;
    definition.validate(&body.spec).map_err(|e| {
        let pointer = crate::api::error::field_pointer(&e.field);
        Problem::invalid_field(pointer, e.reason).with_code("invalid_definition")
    })?;
    // Stored with the policy the tool runs with: a command without `read_only` is mutating and
    // needs approval whatever the spec said, and the stored spec says so.
    let spec = definition.effective_spec(body.spec);
    let def = ToolDef::new(spec, ToolSource::Declarative)
        .with_definition(body.definition)
        .with_availability(body.availability.clone().unwrap_or_default());
    Ok(ToolWrite {
        def,
        note: body.note,
        availability: body.availability,
    })
}

pub(crate) fn if_match(headers: &HeaderMap) -> Result<Option<i64>, Problem> {
    let Some(value) = headers.get(header::IF_MATCH) else {
        return Ok(None);
    };
    value
        .to_str()
        .ok()
        .map(|v| v.trim().trim_start_matches("W/").trim_matches('"'))
        .and_then(|v| v.parse::<i64>().ok())
        .map(Some)
        .ok_or_else(|| {
            Problem::bad_request(
                "invalid_if_match",
                "If-Match must be a revision, e.g. `\"3\"`",
            )
            .with_pointer("If-Match")
        })
}

/// Brings this instance's registry in line with the tool just written, before answering: a
/// tool a 2xx created or changed is served at once. Only that tool's row is read, so a write
/// costs the same whatever the catalog holds (ADR 0057); other changes arrive through the feed.
async fn refresh(state: &AppState, name: &str) {
    if let Some(live) = state.live()
        && let Err(e) = live.refresh([name]).await
    {
        tracing::error!(error = %e, tool = %name, "could not refresh the live registry after a change");
    }
}

fn with_etag(status: StatusCode, tool: StoredTool) -> Response {
    let etag = HeaderValue::from_str(&format!("\"{}\"", tool.revision)).ok();
    let mut response = (status, Json(tool)).into_response();
    if let Some(etag) = etag {
        response.headers_mut().insert(header::ETAG, etag);
    }
    response
}

/// The write a tool body describes, in either shape: the API's `{"spec", "definition"}`, or
/// the CLI's tool file (`name`, `description`, `parameters`, and `http`, `command` or `agent` at
/// the top level), so a file written for `toolbelt tools add -f` can be posted as it is.
async fn body_write(state: &AppState, body: &Value) -> Result<ToolWrite, Problem> {
    let bytes = serde_json::to_vec(body).map_err(Problem::internal)?;
    if body.get("spec").is_some() || body.get("definition").is_some() {
        return tool_write(crate::api::extract::parse_json::<ToolBody>(&bytes)?);
    }
    let file: toolbelt_host::tool_file::ToolFile = crate::api::extract::parse_json(&bytes)?;
    let def = file.to_def().map_err(file_problem)?;
    if let Some(live) = state.live() {
        toolbelt_host::tool_file::check_agent_tool(live.store(), &def)
            .await
            .map_err(file_problem)?;
    }
    Ok(ToolWrite {
        def,
        note: file.note,
        availability: file.availability,
    })
}

/// A tool file's error, its field (`http.url`) as the JSON pointer of the body (`/http/url`).
fn file_problem(error: StoreError) -> Problem {
    match error {
        StoreError::Invalid { field, reason } => {
            let pointer = if field == "http/command/agent" {
                String::new()
            } else {
                format!("/{}", field.replace(['.', '['], "/").replace(']', ""))
            };
            Problem::invalid_field(pointer, reason).with_code("invalid_definition")
        }
        other => Problem::from(other),
    }
}

/// Creates a declarative tool (HTTP or command), from the API's `{"spec", "definition"}` body
/// or from a CLI tool file's shape (`name`, `description`, `parameters`, `http`/`command`/`agent`).
#[utoipa::path(post, path = "/api/v1/tools", tag = "tools", request_body = ToolBody,
    responses((status = 201, body = StoredTool), (status = 409, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn create_tool(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let live = store_of(&state)?;
    let write = body_write(&state, &body).await?;
    let record = live
        .store()
        .tools()
        .create(&write.def, &who.name, write.note.as_deref())
        .await
        .map_err(Problem::from)?;
    refresh(&state, record.name()).await;
    Ok(with_etag(StatusCode::CREATED, record.into()))
}

/// Replaces a declarative tool's definition (a new version). Needs `If-Match`.
#[utoipa::path(put, path = "/api/v1/tools/{name}", tag = "tools", request_body = ToolBody,
    params(("name" = String, Path, description = "Tool name"), ("If-Match" = String, Header, description = "The revision read")),
    responses((status = 200, body = StoredTool), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument),
        (status = 428, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn update_tool(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Value>,
) -> ApiResult<Response> {
    let live = store_of(&state)?;
    let Some(revision) = if_match(&headers)? else {
        return Err(Problem::new(
            StatusCode::PRECONDITION_REQUIRED,
            "if_match_required",
            "send `If-Match: \"<revision>\"` with the revision you read (the ETag of GET /api/v1/tools/{name}/stored)",
        )
        .with_pointer("If-Match"));
    };
    let write = body_write(&state, &body).await?;
    if write.def.name() != name {
        let pointer = if body.get("spec").is_some() {
            "/spec/name"
        } else {
            "/name"
        };
        return Err(Problem::invalid_field(
            pointer,
            format!("must be `{name}` (the tool in the URL); renaming is not supported"),
        ));
    }
    let record = toolbelt_host::tool_file::update_tool(
        live.store(),
        &write.def,
        write.availability.as_ref(),
        Revision::Exactly(revision),
        &who.name,
        write.note.as_deref(),
    )
    .await
    .map_err(Problem::from)?;
    refresh(&state, record.name()).await;
    Ok(with_etag(StatusCode::OK, record.into()))
}

/// The stored record of a tool, with its revision as `ETag`.
#[utoipa::path(get, path = "/api/v1/tools/{name}/stored", tag = "tools",
    params(("name" = String, Path, description = "Tool name")),
    responses((status = 200, body = StoredTool), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn get_stored(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> ApiResult<Response> {
    crate::api::tools::reach_tool(&state, &who, &name).await?;
    let live = store_of(&state)?;
    let record = live
        .store()
        .tools()
        .get(&name)
        .await
        .map_err(Problem::from)?;
    Ok(with_etag(StatusCode::OK, record.into()))
}

/// One version of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VersionView {
    /// The version number.
    pub version: i64,
    /// Content hash of the version (spec and definition): equal hashes, equal versions.
    pub spec_hash: String,
    /// The spec of that version.
    #[schema(value_type = ToolSpecSchema)]
    pub spec: Value,
    /// Its definition.
    #[schema(value_type = Option<StoredDefinitionSchema>)]
    pub definition: Option<Value>,
    /// Who made it.
    pub changed_by: String,
    /// When, Unix milliseconds.
    pub changed_at: i64,
    /// Why.
    pub note: Option<String>,
}

impl From<ToolVersion> for VersionView {
    fn from(v: ToolVersion) -> Self {
        Self {
            version: v.version,
            spec_hash: v.spec_hash,
            spec: serde_json::to_value(&v.spec).unwrap_or(Value::Null),
            definition: v.definition,
            changed_by: v.changed_by,
            changed_at: v.changed_at,
            note: v.note,
        }
    }
}

/// Every version of a tool, oldest first.
#[utoipa::path(get, path = "/api/v1/tools/{name}/versions", tag = "tools",
    params(("name" = String, Path, description = "Tool name")),
    responses((status = 200, body = Vec<VersionView>), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn versions(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> ApiResult<Json<Vec<VersionView>>> {
    crate::api::tools::reach_tool(&state, &who, &name).await?;
    let live = store_of(&state)?;
    let versions = live
        .store()
        .tools()
        .versions(&name)
        .await
        .map_err(Problem::from)?;
    Ok(Json(versions.into_iter().map(VersionView::from).collect()))
}

/// Body of `POST /tools/{name}/rollback`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RollbackBody {
    /// The version to make current.
    pub version: i64,
}

/// Makes an old version current again. `If-Match` optional.
#[utoipa::path(post, path = "/api/v1/tools/{name}/rollback", tag = "tools", request_body = RollbackBody,
    params(("name" = String, Path, description = "Tool name")),
    responses((status = 200, body = StoredTool), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn rollback(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RollbackBody>,
) -> ApiResult<Response> {
    let live = store_of(&state)?;
    let revision = if_match(&headers)?;
    let record = live
        .store()
        .tools()
        .rollback(&name, body.version, Revision::from(revision), &who.name)
        .await
        .map_err(Problem::from)?;
    refresh(&state, record.name()).await;
    Ok(with_etag(StatusCode::OK, record.into()))
}

async fn set_enabled(
    state: &AppState,
    who: &Principal,
    name: &str,
    headers: &HeaderMap,
    enabled: bool,
) -> ApiResult<Response> {
    let live = store_of(state)?;
    let revision = if_match(headers)?;
    let record = live
        .store()
        .tools()
        .set_enabled(name, enabled, Revision::from(revision), &who.name)
        .await
        .map_err(Problem::from)?;
    refresh(state, record.name()).await;
    Ok(with_etag(StatusCode::OK, record.into()))
}

/// Offers the tool again. `If-Match` optional.
#[utoipa::path(post, path = "/api/v1/tools/{name}/enable", tag = "tools",
    params(("name" = String, Path, description = "Tool name")),
    responses((status = 200, body = StoredTool), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn enable(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    set_enabled(&state, &who, &name, &headers, true).await
}

/// Stops offering the tool (kept with its history). `If-Match` optional.
#[utoipa::path(post, path = "/api/v1/tools/{name}/disable", tag = "tools",
    params(("name" = String, Path, description = "Tool name")),
    responses((status = 200, body = StoredTool), (status = 404, body = ProblemDocument), (status = 412, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn disable(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    set_enabled(&state, &who, &name, &headers, false).await
}

/// Deletes a tool and its history. `If-Match` optional; refused while agents bind it.
#[utoipa::path(delete, path = "/api/v1/tools/{name}", tag = "tools",
    params(("name" = String, Path, description = "Tool name")),
    responses((status = 204, description = "deleted"), (status = 404, body = ProblemDocument), (status = 409, body = ProblemDocument),
        (status = 412, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> ApiResult<StatusCode> {
    let live = store_of(&state)?;
    let revision = if_match(&headers)?;
    live.store()
        .tools()
        .delete(&name, Revision::from(revision))
        .await
        .map_err(Problem::from)?;
    refresh(&state, &name).await;
    Ok(StatusCode::NO_CONTENT)
}
