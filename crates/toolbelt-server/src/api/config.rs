//! `GET /api/v1/config`: the settings this instance runs with (admin), secrets left out.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::problem::ProblemDocument;
use crate::state::AppState;

/// The instance's effective settings, after the configuration file, the environment and the
/// flags. The database URL is shown without its password; tokens are counted, never shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ServerSettings {
    /// Address it listens on, as configured.
    pub addr: String,
    /// Development mode (no authentication).
    pub dev: bool,
    /// The database, without a password.
    pub database: String,
    /// The directory the file, shell and git tools are confined to.
    pub workspace: String,
    /// Internal host names HTTP tools may reach despite the SSRF guard.
    pub outbound_hosts: Vec<String>,
    /// Internal address ranges HTTP tools may reach despite the SSRF guard.
    pub outbound_nets: Vec<String>,
    /// Commands a stored MCP server may run (empty: stored servers are HTTP only).
    pub mcp_commands: Vec<String>,
    /// Largest request body, in bytes.
    pub body_limit_bytes: usize,
    /// Seconds a request may take to produce its response head.
    pub request_timeout_secs: u64,
    /// Requests per second per token (0: no limit).
    pub rate_limit_per_second: u64,
    /// Burst above the rate.
    pub rate_limit_burst: u32,
    /// Origins allowed by CORS.
    pub cors_origins: Vec<String>,
    /// Whether the web console is served.
    pub console: bool,
    /// Whether agents' tools are served over MCP.
    pub mcp: bool,
    /// Extra host names the MCP endpoint accepts.
    pub mcp_hosts: Vec<String>,
    /// The URL other instances reach this one by, when set.
    pub public_url: Option<String>,
    /// Tokens from the configuration file (stored tokens are listed by `toolbelt tokens ls`).
    pub configured_tokens: usize,
    /// What the command sandbox enforces on this machine.
    pub sandbox: String,
}

/// The settings this instance runs with.
#[utoipa::path(get, path = "/api/v1/config", tag = "server",
    responses((status = 200, body = ServerSettings), (status = 401, body = ProblemDocument),
        (status = 403, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn get_config(State(state): State<AppState>) -> Json<ServerSettings> {
    let c = state.config();
    Json(ServerSettings {
        addr: c.addr.to_string(),
        dev: c.dev,
        database: toolbelt_store::redacted_url(&c.database_url),
        workspace: c.workspace.display().to_string(),
        outbound_hosts: c.outbound_hosts.clone(),
        outbound_nets: c.outbound_nets.clone(),
        mcp_commands: c.mcp_commands.clone(),
        body_limit_bytes: c.body_limit_bytes,
        request_timeout_secs: c.request_timeout_secs,
        rate_limit_per_second: c.rate_limit_per_second,
        rate_limit_burst: c.rate_limit_burst,
        cors_origins: c.cors_origins.clone(),
        console: c.console,
        mcp: c.mcp,
        mcp_hosts: c.mcp_hosts.clone(),
        public_url: c.public_url.clone(),
        configured_tokens: c.tokens.len(),
        sandbox: toolbelt_tools::sandbox::probe().summary(),
    })
}
