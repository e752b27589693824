//! MCP servers stored in the database, connected by the server: each enabled one gets an
//! [`McpClient`] importing its tools into the live registry (tagged `mcp` and `mcp:<name>`),
//! restarted with backoff when it dies; a change in the store (through this server's API, the
//! CLI or another instance) reaches the running clients within [`POLL`].
//!
//! Stored configurations hold no secret values: `{{secret.NAME}}` in `env`, `headers`,
//! `bearerToken` or `url` is replaced when connecting, from the secrets the operator declared
//! ([`Secrets`]: `TOOLBELT_SECRET_*` variables, the secrets file, allow-listed variables), as
//! declarative tools do; any other environment variable is never read.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use toolbelt_mcp::{McpClient, McpServerConfig, ServerStatus};
use toolbelt_tools::declarative::{Secrets, secret_names};

use crate::state::AppState;

/// How often the stored servers are compared with the running clients.
pub const POLL: Duration = Duration::from_secs(2);

/// The running clients of the stored MCP servers, by name. Clones share them.
#[derive(Clone, Default)]
pub struct McpServers {
    running: Arc<Mutex<BTreeMap<String, Running>>>,
}

struct Running {
    revision: i64,
    client: McpClient,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers").finish_non_exhaustive()
    }
}

/// Why a stored configuration cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// JSON pointer into the configuration.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

/// Parses and checks a stored configuration (the `mcpServers` entry shape): the transport is
/// known, and a bearer token or a header that carries credentials (`Authorization`, `Cookie`,
/// a name with `token`, `key`, `secret`, `password`, `auth` or `credential`) is a
/// `{{secret.NAME}}` reference, never a value.
///
/// # Errors
/// [`ConfigProblem`] naming the field.
pub fn check_config(name: &str, config: &Value) -> Result<McpServerConfig, ConfigProblem> {
    let parsed: McpServerConfig =
        serde_json::from_value(config.clone()).map_err(|e| ConfigProblem {
            pointer: String::new(),
            message: e.to_string(),
        })?;
    parsed.transport_of(name).map_err(|e| ConfigProblem {
        pointer: if parsed.url.is_some() {
            "/url".to_owned()
        } else {
            "/command".to_owned()
        },
        message: e.to_string(),
    })?;
    if let Some(token) = &parsed.bearer_token
        && !is_secret_reference(token)
    {
        return Err(ConfigProblem {
            pointer: "/bearerToken".to_owned(),
            message: "must name a secret, e.g. \"{{secret.GITHUB_TOKEN}}\" (values are not stored)"
                .to_owned(),
        });
    }
    // A header that carries credentials holds a secret reference, never the credential: the
    // stored configuration is shown to `read` tokens.
    for (header, value) in &parsed.headers {
        if carries_credentials(header) && secret_names(value).is_empty() {
            return Err(ConfigProblem {
                pointer: format!("/headers/{}", header.replace('~', "~0").replace('/', "~1")),
                message: format!(
                    "the header `{header}` carries credentials: write a secret reference, e.g. \
                     \"Bearer {{{{secret.API_TOKEN}}}}\" (values are not stored)"
                ),
            });
        }
    }
    Ok(parsed)
}

/// Whether a header of this name carries credentials (`Authorization`, `Cookie`, API keys,
/// tokens, passwords).
fn carries_credentials(header: &str) -> bool {
    let lower = header.to_ascii_lowercase();
    [
        "auth",
        "cookie",
        "token",
        "key",
        "secret",
        "password",
        "credential",
    ]
    .iter()
    .any(|word| lower.contains(word))
}

fn is_secret_reference(text: &str) -> bool {
    let text = text.trim();
    text.starts_with("{{") && text.ends_with("}}") && secret_names(text).len() == 1
}

/// The configuration to connect with: each `{{secret.NAME}}` filled in from `secrets`.
///
/// # Errors
/// A message naming the first secret that is not declared (the same whether or not an
/// environment variable of that name exists).
pub fn resolve_secrets(
    config: &McpServerConfig,
    secrets: &Secrets,
) -> Result<McpServerConfig, String> {
    let fill = |text: &str| {
        secrets
            .fill(text)
            .map(|(filled, _)| filled)
            .map_err(|e| e.to_string())
    };
    let mut config = config.clone();
    for value in config.env.values_mut().chain(config.headers.values_mut()) {
        *value = fill(value)?;
    }
    if let Some(token) = &config.bearer_token {
        config.bearer_token = Some(fill(token)?);
    }
    if let Some(url) = &config.url {
        config.url = Some(fill(url)?);
    }
    Ok(config)
}

/// Why a stored server's URL will not be reached (an internal address not in the outbound
/// allow-list, a scheme other than http/https), as the API's health shows it; `None` when it
/// may be, or when the URL is only known once its secrets are filled in.
pub fn outbound_problem(state: &AppState, config: &McpServerConfig) -> Option<String> {
    let url = config.url.as_deref()?;
    if !secret_names(url).is_empty() {
        return None;
    }
    state
        .check_outbound(url)
        .err()
        .map(|e| format!("/url: {e} (open it with the server's outbound_hosts or outbound_nets)"))
}

/// Why a stored server's command will not be run: a stdio server runs a program on this
/// machine, so only a command the host's configuration lists in `mcp_commands` is run,
/// compared as written (`node` allows `node` found on `PATH`, not `/tmp/x/node`). `None` for
/// URL servers and listed commands.
pub fn command_problem(allowed: &[String], config: &McpServerConfig) -> Option<String> {
    let command = config.command.as_deref()?;
    if allowed.iter().any(|a| a == command) {
        return None;
    }
    let listed = if allowed.is_empty() {
        "none: stored MCP servers are HTTP only".to_owned()
    } else {
        allowed.join(", ")
    };
    Some(format!(
        "/command: `{command}` is not a command this server runs for a stored MCP server \
         (allowed: {listed}); the host's operator allows one with mcp_commands in the \
         configuration, TOOLBELT_MCP_COMMANDS or `toolbelt serve --mcp-command`"
    ))
}

/// What the API shows of a stored server's connection.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct Health {
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

impl Health {
    fn of(status: &ServerStatus) -> Self {
        match status {
            ServerStatus::Connecting => Self::state("connecting"),
            ServerStatus::Up { tools } => Self {
                tools: Some(*tools),
                ..Self::state("up")
            },
            ServerStatus::Down {
                reason, failures, ..
            } => Self {
                error: Some(reason.clone()),
                failures: Some(*failures),
                ..Self::state("down")
            },
            _ => Self::state("stopped"),
        }
    }

    fn state(state: &str) -> Self {
        Self {
            state: state.to_owned(),
            tools: None,
            error: None,
            failures: None,
        }
    }
}

impl McpServers {
    /// The connection state of the stored server `name` (`enabled` as stored).
    pub async fn health(&self, name: &str, enabled: bool, problem: Option<String>) -> Health {
        if !enabled {
            return Health::state("disabled");
        }
        match self.running.lock().await.get(name) {
            Some(running) => Health::of(&running.client.status()),
            None => Health {
                error: problem,
                ..Health::state("not_started")
            },
        }
    }

    /// Brings the running clients in line with the store: starts enabled servers that are not
    /// running or whose configuration changed, stops the rest. A configuration that cannot be
    /// used is logged and skipped (the API refuses such configurations; the CLI checks too).
    pub async fn sync(&self, state: &AppState) {
        let Some(store) = &state.store else { return };
        let stored = match store.list_mcp_servers().await {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, "MCP servers: the store could not be read");
                return;
            }
        };
        let secrets = Secrets::from_env();
        let mut running = self.running.lock().await;
        let wanted: BTreeMap<&str, _> = stored
            .iter()
            .filter(|s| s.enabled)
            .map(|s| (s.name.as_str(), s))
            .collect();
        running.retain(|name, r| {
            let keep = wanted
                .get(name.as_str())
                .is_some_and(|s| s.revision == r.revision);
            if !keep {
                tracing::info!(server = %name, "MCP server stopped (removed, disabled or changed)");
                r.client.shutdown();
            }
            keep
        });
        for (name, record) in wanted {
            if running.contains_key(name) {
                continue;
            }
            let config = check_config(name, &record.config)
                .map_err(|p| format!("{}: {}", p.pointer, p.message))
                .and_then(|c| resolve_secrets(&c, &secrets));
            let config = match config {
                Ok(config) => config,
                Err(error) => {
                    tracing::warn!(server = %name, %error, "MCP server not started");
                    continue;
                }
            };
            // A program runs on this machine only when the host's configuration allows it.
            if let Some(error) = command_problem(&state.config.mcp_commands, &config) {
                tracing::warn!(server = %name, %error, "MCP server not started");
                continue;
            }
            // A URL is reached as the HTTP tools reach one: the SSRF guard after DNS and at
            // every redirect, the server's outbound allow-list opening internal hosts.
            if let Some(url) = &config.url
                && let Err(error) = state.check_outbound(url)
            {
                tracing::warn!(server = %name, %error, "MCP server not started");
                continue;
            }
            let mut builder = McpClient::builder(name, config).registry(state.shared_registry());
            match state.http_client() {
                Ok(client) => builder = builder.http_client(client),
                Err(error) => {
                    tracing::warn!(server = %name, %error, "MCP server not started");
                    continue;
                }
            }
            match builder.start() {
                Ok(client) => {
                    tracing::info!(server = %name, "MCP server starting");
                    running.insert(
                        name.to_owned(),
                        Running {
                            revision: record.revision,
                            client,
                        },
                    );
                }
                Err(error) => tracing::warn!(server = %name, %error, "MCP server not started"),
            }
        }
    }

    /// Stops every client (their tools leave the registry).
    pub async fn stop_all(&self) {
        for (_, running) in std::mem::take(&mut *self.running.lock().await) {
            running.client.shutdown();
        }
    }
}

/// Connects the stored MCP servers and follows the store until the server shuts down.
/// `None` when the state has no store.
pub fn spawn(state: &AppState) -> Option<JoinHandle<()>> {
    state.store.as_ref()?;
    let state = state.clone();
    Some(tokio::spawn(async move {
        loop {
            state.mcp_servers.sync(&state).await;
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = state.shutdown.cancelled() => break,
            }
        }
        state.mcp_servers.stop_all().await;
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_referenced_by_name_and_filled_in_when_connecting() {
        let config = check_config(
            "gh",
            &json!({"url": "https://example.test/mcp", "bearerToken": "{{secret.GH_TOKEN}}",
                    "headers": {"X-Team": "team-{{ secret.TEAM }}"}}),
        )
        .unwrap();
        let secrets = Secrets::from_pairs([("GH_TOKEN", "t0k"), ("TEAM", "core")]);
        let resolved = resolve_secrets(&config, &secrets).unwrap();
        assert_eq!(resolved.bearer_token.as_deref(), Some("t0k"));
        assert_eq!(resolved.headers["X-Team"], "team-core");
        let missing =
            resolve_secrets(&config, &Secrets::from_pairs([("TEAM", "core")])).unwrap_err();
        assert!(missing.contains("`GH_TOKEN` is not declared"), "{missing}");
        // A plain environment variable is not a secret, even when it exists.
        let env = Secrets::from_vars([("GH_TOKEN", "plain"), ("TOOLBELT_SECRET_TEAM", "core")]);
        assert_eq!(
            resolve_secrets(&config, &env).unwrap_err(),
            "the secret `GH_TOKEN` is not declared; ask the operator to set the environment \
             variable TOOLBELT_SECRET_GH_TOKEN or add `GH_TOKEN=...` to the secrets file"
        );
        let literal = check_config(
            "gh",
            &json!({"url": "https://example.test/mcp", "bearerToken": "ghp_secret"}),
        )
        .unwrap_err();
        assert_eq!(literal.pointer, "/bearerToken");
        for header in ["Authorization", "X-Api-Key", "Cookie", "private-token"] {
            let literal = check_config(
                "gh",
                &json!({"url": "https://example.test/mcp", "headers": {header: "Bearer ghp_secret"}}),
            )
            .unwrap_err();
            assert_eq!(literal.pointer, format!("/headers/{header}"));
            assert!(
                literal.message.contains("{{secret.API_TOKEN}}"),
                "{}",
                literal.message
            );
        }
        check_config(
            "gh",
            &json!({"url": "https://example.test/mcp",
                    "headers": {"Authorization": "Bearer {{secret.GH_TOKEN}}", "X-Team": "core"}}),
        )
        .unwrap();
        let neither = check_config("x", &json!({"args": ["a"]})).unwrap_err();
        assert_eq!(neither.pointer, "/command");
        // Fields of other clients' configs are accepted as they come (the mcpServers shape).
        assert!(check_config("x", &json!({"command": "a", "autoApprove": []})).is_ok());
    }
}
