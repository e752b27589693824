//! Stored MCP server configurations: checked before they are stored (the transport known,
//! credentials only as `{{secret.NAME}}` references, no sandbox of their own), checked against
//! the host's allow-list of commands, and their secrets filled in when connecting.

use serde_json::Value;
use toolbelt_mcp::McpServerConfig;
use toolbelt_tools::declarative::{SecretError, Secrets, secret_names};

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
    if parsed.sandbox.is_some() {
        return Err(ConfigProblem {
            pointer: "/sandbox".to_owned(),
            message: "a stored server runs in the server's own sandbox (workspace-write over its \
                      workspace, the paths of `mcp_read_paths`); `sandbox` is read only from a \
                      host's own configuration file (`toolbelt … --mcp-config`)"
                .to_owned(),
        });
    }
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

/// Why a stored server's `command` may not run: it is not in the host's allow-list `allowed`
/// ([`McpSupervision::commands`](super::McpSupervision::commands)), compared exactly as written (no `PATH` look-up, no
/// basename: `/tmp/x/node` is not `node`). `None` for an HTTP server or an allowed command.
pub fn command_problem(allowed: &[String], config: &McpServerConfig) -> Option<ConfigProblem> {
    let command = config.command.as_deref()?;
    if allowed.iter().any(|a| a == command) {
        return None;
    }
    let list = if allowed.is_empty() {
        "the list is empty, so stored MCP servers are HTTP only".to_owned()
    } else {
        format!(
            "allowed: {}",
            allowed
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Some(ConfigProblem {
        pointer: "/command".to_owned(),
        message: format!(
            "`{command}` is not in the server's allow-list of MCP commands ({list}); the \
             operator adds it with `mcp_commands` in the server's configuration file, \
             TOOLBELT_MCP_COMMANDS or `toolbelt serve --mcp-command {command}` \
             (or use an HTTP server, `url`)"
        ),
    })
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
/// The first secret that is not declared (the same whether or not an environment variable of
/// that name exists).
pub fn resolve_secrets(
    config: &McpServerConfig,
    secrets: &Secrets,
) -> Result<McpServerConfig, SecretError> {
    let fill = |text: &str| secrets.fill(text).map(|(filled, _)| filled);
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
