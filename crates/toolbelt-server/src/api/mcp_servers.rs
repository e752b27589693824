//! `/api/v1/mcp-servers`: MCP servers stored in the database, with their health. The host
//! connects each enabled one and imports its tools (see [`toolbelt_host::mcp_servers`]).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_host::McpServers;
use toolbelt_host::mcp_servers::{ConfigProblem, Health};
use toolbelt_store::McpServerRecord;
use toolbelt_store::Revision;
use utoipa::ToSchema;

use crate::api::extract::ApiJson;
use crate::problem::{ApiResult, FieldError, Problem, ProblemDocument};
use crate::state::AppState;

/// Body of `PUT /mcp-servers/{name}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerBody {
    /// One entry of an `mcpServers` file (Claude Desktop / Cursor shape): `command`, `args`,
    /// `env`, `cwd` for stdio; `url`, `headers`, `bearerToken` for streamable HTTP; optional
    /// `type`, `toolPrefix`, `timeoutMs`. Secrets as `{{secret.NAME}}`, never values.
    #[schema(value_type = Object)]
    pub config: Value,
    /// Whether to connect to it (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
    /// The revision being replaced: the change is refused (412) when another came first.
    /// Without it an existing server's configuration is replaced as it is.
    #[serde(default)]
    pub revision: Option<i64>,
}

/// Body of `PATCH /mcp-servers/{name}`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerPatch {
    /// Connect to it, or not.
    pub enabled: bool,
    /// The revision being changed (optional).
    #[serde(default)]
    pub revision: Option<i64>,
}

/// A stored MCP server and how its connection is doing in this instance.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct McpServerView {
    /// Unique name; its tools are tagged `mcp:<name>`.
    pub name: String,
    /// Its configuration as stored.
    #[schema(value_type = Object)]
    pub config: Value,
    /// Whether the server connects to it.
    pub enabled: bool,
    /// Pass it back to change the server.
    pub revision: i64,
    /// Unix ms.
    pub created_at_ms: i64,
    /// Unix ms.
    pub updated_at_ms: i64,
    /// The connection in this instance.
    pub health: McpHealth,
}

/// How a stored server's connection is doing in this instance.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct McpHealth {
    /// `connecting`, `up`, `down`, `disabled`, `stopped` or `not_started` (no client in this
    /// instance yet, or its configuration cannot be used).
    pub state: String,
    /// Tools imported, when up.
    pub tools: Option<usize>,
    /// Why it is down or not started.
    pub error: Option<String>,
    /// Consecutive failed connections, when down.
    pub failures: Option<u32>,
}

impl From<Health> for McpHealth {
    fn from(health: Health) -> Self {
        let Health {
            state,
            tools,
            error,
            failures,
        } = health;
        Self {
            state,
            tools,
            error,
            failures,
        }
    }
}

async fn view(servers: &McpServers, record: McpServerRecord) -> McpServerView {
    let health = servers.health(&record).await.into();
    McpServerView {
        name: record.name,
        config: record.config,
        enabled: record.enabled,
        revision: record.revision,
        created_at_ms: record.created_at,
        updated_at_ms: record.updated_at,
        health,
    }
}

/// The store and the host's supervisor of the servers stored there.
fn stored(state: &AppState) -> Result<(&toolbelt_store::Store, &McpServers), Problem> {
    state
        .store()
        .zip(state.mcp_servers())
        .ok_or_else(|| Problem::no_database("stored MCP servers"))
}

/// Lists the stored MCP servers with their health.
#[utoipa::path(get, path = "/api/v1/mcp-servers", tag = "mcp",
    responses((status = 200, body = Vec<McpServerView>), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn list_mcp_servers(
    State(state): State<AppState>,
) -> ApiResult<Json<Vec<McpServerView>>> {
    let (store, servers) = stored(&state)?;
    let records = store.mcp_servers().list().await.map_err(Problem::from)?;
    let mut views = Vec::with_capacity(records.len());
    for record in records {
        views.push(view(servers, record).await);
    }
    Ok(Json(views))
}

/// One stored MCP server with its health.
#[utoipa::path(get, path = "/api/v1/mcp-servers/{name}", tag = "mcp",
    params(("name" = String, Path, description = "Server name")),
    responses((status = 200, body = McpServerView), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn get_mcp_server(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<McpServerView>> {
    let (store, servers) = stored(&state)?;
    let record = store
        .mcp_servers()
        .get(&name)
        .await
        .map_err(Problem::from)?;
    Ok(Json(view(servers, record).await))
}

/// Creates an MCP server (201) or replaces its configuration (200). With `revision` only that
/// revision is replaced (412 when it is not the current one); without, whatever is stored. The
/// server connects to it at once and imports its tools.
#[utoipa::path(put, path = "/api/v1/mcp-servers/{name}", tag = "mcp", request_body = McpServerBody,
    params(("name" = String, Path, description = "Server name: letters, digits, `_` and `-`")),
    responses((status = 201, body = McpServerView), (status = 200, body = McpServerView),
        (status = 409, body = ProblemDocument), (status = 412, body = ProblemDocument),
        (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn put_mcp_server(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<McpServerBody>,
) -> ApiResult<(StatusCode, Json<McpServerView>)> {
    let (store, servers) = stored(&state)?;
    if name.is_empty()
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return Err(Problem::invalid_field(
            "name",
            "use 1 to 64 ASCII letters, digits, `_` or `-` (it prefixes the server's tool names)",
        )
        .with_code("invalid_name"));
    }
    servers.check(&name, &body.config).map_err(config_problem)?;
    // PUT replaces: without a revision the current one is replaced, whatever it is; with one,
    // only that revision (412 when another change came first).
    let revision = match body.revision {
        Some(revision) => Some(revision),
        None => match store.mcp_servers().get(&name).await {
            Ok(current) => Some(current.revision),
            Err(toolbelt_store::StoreError::NotFound { .. }) => None,
            Err(e) => return Err(Problem::from(e)),
        },
    };
    let created = revision.is_none();
    let written = match revision {
        Some(revision) => {
            store
                .mcp_servers()
                .update(&name, &body.config, Revision::Exactly(revision))
                .await
        }
        None => store.mcp_servers().create(&name, &body.config).await,
    };
    let mut record = written
        .map_err(|e| Problem::from(e).with_code_if("already_exists", "mcp_server_exists"))?;
    if let Some(enabled) = body.enabled
        && enabled != record.enabled
    {
        record = store
            .mcp_servers()
            .set_enabled(&name, enabled, Revision::Exactly(record.revision))
            .await
            .map_err(Problem::from)?;
    }
    servers.sync().await;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(view(servers, record).await)))
}

/// Enables or disables an MCP server (a disabled one is disconnected, its tools unavailable).
/// Enabling a stdio server whose command is not in the host's allow-list is refused (422).
#[utoipa::path(patch, path = "/api/v1/mcp-servers/{name}", tag = "mcp", request_body = McpServerPatch,
    params(("name" = String, Path, description = "Server name")),
    responses((status = 200, body = McpServerView), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument),
        (status = 412, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn patch_mcp_server(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<McpServerPatch>,
) -> ApiResult<Json<McpServerView>> {
    let (store, servers) = stored(&state)?;
    // Enabling a stdio server whose command the host does not allow is refused as a PUT is.
    if body.enabled {
        let current = store
            .mcp_servers()
            .get(&name)
            .await
            .map_err(Problem::from)?;
        if let Ok(config) = toolbelt_host::mcp_servers::check_config(&name, &current.config)
            && let Some(problem) =
                toolbelt_host::mcp_servers::command_problem(servers.settings().commands(), &config)
        {
            return Err(config_problem(problem));
        }
    }
    let record = store
        .mcp_servers()
        .set_enabled(&name, body.enabled, Revision::from(body.revision))
        .await
        .map_err(Problem::from)?;
    servers.sync().await;
    Ok(Json(view(servers, record).await))
}

/// A `422` naming the field of the configuration (`/config/...`).
fn config_problem(p: ConfigProblem) -> Problem {
    let pointer = format!("/config{}", p.pointer);
    Problem::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_mcp_config",
        format!("{pointer}: {}", p.message),
    )
    .with_errors(vec![FieldError {
        pointer,
        message: p.message,
    }])
}

/// Deletes an MCP server; its tools leave the registry.
#[utoipa::path(delete, path = "/api/v1/mcp-servers/{name}", tag = "mcp",
    params(("name" = String, Path, description = "Server name")),
    responses((status = 204), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn delete_mcp_server(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    let (store, servers) = stored(&state)?;
    store
        .mcp_servers()
        .delete(&name, Revision::Any)
        .await
        .map_err(Problem::from)?;
    servers.sync().await;
    Ok(StatusCode::NO_CONTENT)
}
