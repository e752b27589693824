//! [`ServerConfig`]: everything `toolbelt serve` reads from a file, the environment and flags.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format as _, Serialized, Toml};
use serde::{Deserialize, Serialize};

use crate::scope::Scope;
use toolbelt_store::AgentSpec;

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// A bearer token known from the configuration (kept as a SHA-256 hash).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigToken {
    /// A name for logs.
    pub name: String,
    /// Hex SHA-256 of the token (`toolbelt tokens hash` prints it); preferred over `token`.
    #[serde(default)]
    pub sha256: Option<String>,
    /// The token in clear (for tests and local set-ups).
    #[serde(default)]
    pub token: Option<String>,
    /// What the token may do.
    pub scopes: Vec<Scope>,
    /// The agents it is limited to (their tools, runs, approvals, questions and routines);
    /// absent for every agent and the whole server.
    #[serde(default)]
    pub agents: Option<Vec<String>>,
}

/// Server settings. Sources, later wins: defaults, `toolbelt.toml` (or `--config`),
/// `TOOLBELT_*` environment variables (`TOOLBELT_ADDR`, `TOOLBELT_DEV`, ...), flags.
///
/// `Debug` never shows a secret: clear-text tokens print as `***` and the database URL
/// without its password.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// Development mode: no authentication (refused unless `addr` is loopback).
    pub dev: bool,
    /// Database URL (`sqlite://PATH` or `postgres://...`; default `toolbelt.db` in the data
    /// directory, see [`toolbelt_host::paths`]).
    pub database_url: String,
    /// Largest request body accepted, in bytes.
    pub body_limit_bytes: usize,
    /// Longest a request may take to produce its response head, in seconds.
    pub request_timeout_secs: u64,
    /// Requests per second allowed per token (per client address without a token); 0 turns the limit off.
    pub rate_limit_per_second: u64,
    /// Requests allowed in a burst above the rate.
    pub rate_limit_burst: u32,
    /// Origins allowed by CORS; empty (the default) sends no CORS headers at all.
    pub cors_origins: Vec<String>,
    /// Log line format.
    pub log_format: LogFormat,
    /// Directory the file, shell and git tools are confined to.
    pub workspace: PathBuf,
    /// Internal host names that HTTP tools may reach although the SSRF guard refuses private
    /// and loopback addresses (`billing.internal`; env `TOOLBELT_OUTBOUND_HOSTS`, comma-separated;
    /// `--allow-host`). A cloud metadata address opens only when named itself.
    pub outbound_hosts: Vec<String>,
    /// Internal address ranges that HTTP tools may reach (`10.0.4.0/24`, `10.0.4.7`; env
    /// `TOOLBELT_OUTBOUND_NETS`, comma-separated; `--allow-net`).
    pub outbound_nets: Vec<String>,
    /// Tokens from the configuration (in addition to stored ones).
    pub tokens: Vec<ConfigToken>,
    /// Agents known to the server besides the stored ones (`[[agents]]` in `toolbelt.toml`), in
    /// the shape of a stored agent (`toolbelt_store::AgentSpec`: `name`, `selection`,
    /// `provider`, `model`, `options`, `router`, ...). The default is one agent, `default`, with
    /// every built-in tool and the model from the environment.
    pub agents: Vec<AgentSpec>,
    /// Seconds `POST /agents/{id}/runs` (JSON) waits for a run before answering `202` with its state.
    pub run_wait_secs: u64,
    /// Serve the web console at `/` (its data still needs a token unless `dev`).
    pub console: bool,
    /// Serve each agent's tools over MCP (streamable HTTP) at `/mcp/{agent}` (`run` scope).
    pub mcp: bool,
    /// URL other instances and clients reach this one by, stored with the runs it holds so
    /// that an approval sent to another instance is told where to go (default: `http://` and
    /// the bound address; set it when listening on `0.0.0.0` or behind a proxy).
    pub public_url: Option<String>,
    /// Older name of `allowed_hosts`, still accepted: both lists are used.
    pub mcp_hosts: Vec<String>,
    /// Host names (optionally `name:port`) clients reach this server by, besides the loopback
    /// names, `addr` and the host of `public_url`; every route refuses other `Host` headers
    /// (the DNS-rebinding guard). `"*"` turns the check off (behind a proxy that checks
    /// `Host`; ignored in `dev` mode).
    pub allowed_hosts: Vec<String>,
    /// Serve `/metrics` without a token; by default it needs the `read` scope.
    pub metrics_public: bool,
    /// Longest a client may take to send a request's headers, in seconds (slow-header
    /// connections are closed); 0 turns the limit off.
    pub header_read_timeout_secs: u64,
    /// Most MCP sessions open at once, over every agent; a new session beyond it is refused.
    pub max_mcp_sessions: usize,
    /// Whether the MCP client that makes a call through `/mcp/{agent}` may approve it
    /// (elicitation). Off by default: the caller whose call waits is not a person deciding;
    /// such calls are refused unless the agent's policy allows the tool.
    pub mcp_client_approves: bool,
    /// Largest `input` of a run (`POST /agents/{id}/runs`, `POST /runs/{id}/continue`), in bytes.
    pub max_run_input_bytes: usize,
    /// Programs a stored (API or `toolbelt mcp add`) stdio MCP server may run, matched
    /// against its `command` exactly as written: `node` allows `node` found on `PATH`, not
    /// `/tmp/x/node`; `/opt/node/bin/node` allows that path only (env `TOOLBELT_MCP_COMMANDS`,
    /// comma-separated; `--mcp-command`, repeatable). Empty (the default): stored servers are
    /// HTTP only. Every stdio server runs in the command sandbox (docs/SECURITY.md).
    pub mcp_commands: Vec<String>,
    /// Directories stdio MCP servers may read besides the workspace, the system paths and
    /// their program's directory: a `node_modules` tree, a virtualenv (env
    /// `TOOLBELT_MCP_READ_PATHS`, `:`-separated like `PATH`).
    pub mcp_read_paths: Vec<PathBuf>,
    /// Learning from use (opt-in; `--learn-from-runs`, env `TOOLBELT_LEARN_FROM_RUNS`): the
    /// router (`/route`, agent runs, routed MCP) also indexes each tool with the requests of
    /// the runs whose calls of it succeeded, read from this database's run log at start-up
    /// and every `learn_refresh_secs` (docs/ROUTING.md, "Learning from use"). Needs a database.
    pub learn_from_runs: bool,
    /// Age at which a learned request counts half, in days (`--learn-half-life-days`).
    pub learn_half_life_days: u64,
    /// Seconds between two reads of the run log while learning (at least 1).
    pub learn_refresh_secs: u64,
}

/// The agent `scripts/run.sh` starts with ([`ServerConfig::default_agent`]).
fn default_agent() -> AgentSpec {
    let mut agent = AgentSpec::new("default");
    agent.description = "General assistant with every built-in tool".to_owned();
    agent.system_prompt = Some(
        "You are a careful assistant. Use the tools when they help; say what you did.".to_owned(),
    );
    agent.selection = "*".to_owned();
    agent.options.max_iterations = Some(10);
    agent
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 7878)),
            dev: false,
            // One default for every command and the server; without any home directory the
            // start-up check refuses this relative file (it lies in the workspace).
            database_url: toolbelt_host::paths::default_database_url()
                .unwrap_or_else(|_| "sqlite://toolbelt.db".to_owned()),
            body_limit_bytes: 1024 * 1024,
            request_timeout_secs: 30,
            rate_limit_per_second: 20_000,
            rate_limit_burst: 40_000,
            cors_origins: Vec::new(),
            log_format: LogFormat::Text,
            workspace: PathBuf::from("."),
            outbound_hosts: Vec::new(),
            outbound_nets: Vec::new(),
            tokens: Vec::new(),
            agents: vec![default_agent()],
            run_wait_secs: 20,
            console: true,
            mcp: true,
            mcp_hosts: Vec::new(),
            public_url: None,
            allowed_hosts: Vec::new(),
            metrics_public: false,
            header_read_timeout_secs: 10,
            max_mcp_sessions: 1000,
            mcp_client_approves: false,
            max_run_input_bytes: 64 * 1024,
            mcp_commands: Vec::new(),
            mcp_read_paths: Vec::new(),
            learn_from_runs: false,
            learn_half_life_days: 30,
            learn_refresh_secs: 600,
        }
    }
}

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A source could not be read or a value has the wrong type.
    #[error("invalid configuration")]
    Load(#[from] Box<figment::Error>),
    /// `dev` on an address that is not loopback.
    #[error("--dev turns authentication off and is allowed only on a loopback address, not {addr}")]
    DevNotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// Neither `dev` nor any token on a non-loopback address.
    #[error(
        "refusing to listen on {addr} without authentication: create a token (`toolbelt tokens create`) or listen on 127.0.0.1"
    )]
    NoTokenOffLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// `public_url` is not an `http(s)://` URL.
    #[error("public_url `{url}` must be an http:// or https:// URL (e.g. http://10.0.0.5:7878)")]
    BadPublicUrl {
        /// The value given.
        url: String,
    },
    /// An `outbound_hosts` or `outbound_nets` entry does not parse.
    #[error("{key}[{index}]: {reason}")]
    BadAllowList {
        /// `outbound_hosts` or `outbound_nets`.
        key: &'static str,
        /// Its position.
        index: usize,
        /// What is wrong.
        reason: String,
    },
    /// A configured token has neither `sha256` nor `token`, or a bad hash.
    #[error("token `{name}`: {reason}")]
    BadToken {
        /// The token's name.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
}

impl ServerConfig {
    /// The agent a server without `[[agents]]` knows: `default`, every built-in tool
    /// (selection `*`), at most 10 model calls per run, the model from the environment.
    pub fn default_agent() -> AgentSpec {
        default_agent()
    }

    /// Reads defaults, then `file` (when it exists), then `TOOLBELT_*` variables.
    ///
    /// # Errors
    /// [`ConfigError::Load`] naming the key that could not be read.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut figment = Figment::from(Serialized::defaults(Self::default()));
        let file = file.map_or_else(|| PathBuf::from("toolbelt.toml"), Path::to_path_buf);
        if file.exists() {
            figment = figment.merge(Toml::file(file));
        }
        let mut config: Self = figment
            .merge(Env::prefixed("TOOLBELT_").only(&[
                "addr",
                "dev",
                "database_url",
                "body_limit_bytes",
                "request_timeout_secs",
                "rate_limit_per_second",
                "rate_limit_burst",
                "log_format",
                "workspace",
                "run_wait_secs",
                "console",
                "mcp",
                "public_url",
                "metrics_public",
                "header_read_timeout_secs",
                "max_mcp_sessions",
                "mcp_client_approves",
                "max_run_input_bytes",
                "learn_from_runs",
                "learn_half_life_days",
                "learn_refresh_secs",
            ]))
            .extract()
            .map_err(|e| ConfigError::Load(Box::new(e)))?;
        // Lists from the environment, comma-separated (added to the file's).
        for (var, list) in [
            ("TOOLBELT_OUTBOUND_HOSTS", &mut config.outbound_hosts),
            ("TOOLBELT_OUTBOUND_NETS", &mut config.outbound_nets),
            ("TOOLBELT_MCP_COMMANDS", &mut config.mcp_commands),
        ] {
            if let Ok(value) = std::env::var(var) {
                list.extend(
                    value
                        .split(',')
                        .map(str::trim)
                        .filter(|v| !v.is_empty())
                        .map(str::to_owned),
                );
            }
        }
        if let Some(paths) = std::env::var_os("TOOLBELT_MCP_READ_PATHS") {
            config
                .mcp_read_paths
                .extend(std::env::split_paths(&paths).filter(|p| !p.as_os_str().is_empty()));
        }
        Ok(config)
    }

    /// How the host supervises the MCP servers stored in the database: stdio programs of
    /// [`ServerConfig::mcp_commands`] only, started in the command sandbox over the workspace
    /// (workspace-write, as the server's command tools) with [`ServerConfig::mcp_read_paths`]
    /// readable; URLs reached through `http` (the HTTP tools' guard and allow-list).
    pub(crate) fn mcp_supervision(
        &self,
        http: toolbelt_tools::HttpConfig,
    ) -> toolbelt_host::McpSupervision {
        let root =
            std::fs::canonicalize(&self.workspace).unwrap_or_else(|_| self.workspace.clone());
        let spawner = toolbelt_host::mcp_servers::sandboxed_spawner(
            root,
            toolbelt_tools::sandbox::SandboxMode::WorkspaceWrite,
            self.mcp_read_paths.clone(),
        );
        toolbelt_host::McpSupervision::new(spawner)
            .with_commands(self.mcp_commands.clone())
            .with_http(http)
    }

    /// The HTTP tools' configuration: every internal address refused but the allow-listed ones.
    ///
    /// # Errors
    /// [`ConfigError::BadAllowList`] naming the entry that does not parse.
    pub fn http_config(&self) -> Result<toolbelt_tools::HttpConfig, ConfigError> {
        let mut http = toolbelt_tools::HttpConfig::new();
        for (index, host) in self.outbound_hosts.iter().enumerate() {
            http = http
                .try_allow_host(host)
                .map_err(|reason| ConfigError::BadAllowList {
                    key: "outbound_hosts",
                    index,
                    reason,
                })?;
        }
        for (index, net) in self.outbound_nets.iter().enumerate() {
            http = http.allow_net(net).map_err(|e| ConfigError::BadAllowList {
                key: "outbound_nets",
                index,
                reason: e.to_string(),
            })?;
        }
        Ok(http)
    }

    /// Checks the rules that keep an instance safe to expose.
    ///
    /// `has_tokens` says whether any token exists (configured or stored).
    ///
    /// # Errors
    /// [`ConfigError::DevNotLoopback`], [`ConfigError::NoTokenOffLoopback`],
    /// [`ConfigError::BadPublicUrl`].
    pub fn check_exposure(&self, has_tokens: bool) -> Result<(), ConfigError> {
        if let Some(url) = &self.public_url {
            let rest = url
                .strip_prefix("http://")
                .or_else(|| url.strip_prefix("https://"));
            if rest.is_none_or(|host| host.is_empty() || host.contains(char::is_whitespace)) {
                return Err(ConfigError::BadPublicUrl { url: url.clone() });
            }
        }
        let loopback = self.addr.ip().is_loopback();
        if self.dev && !loopback {
            return Err(ConfigError::DevNotLoopback { addr: self.addr });
        }
        if !self.dev && !loopback && !has_tokens {
            return Err(ConfigError::NoTokenOffLoopback { addr: self.addr });
        }
        Ok(())
    }
}

impl std::fmt::Debug for ConfigToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigToken")
            .field("name", &self.name)
            .field("sha256", &self.sha256)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("scopes", &self.scopes)
            .field("agents", &self.agents)
            .finish()
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("addr", &self.addr)
            .field("dev", &self.dev)
            .field(
                "database_url",
                &toolbelt_store::redacted_url(&self.database_url),
            )
            .field("body_limit_bytes", &self.body_limit_bytes)
            .field("request_timeout_secs", &self.request_timeout_secs)
            .field("rate_limit_per_second", &self.rate_limit_per_second)
            .field("rate_limit_burst", &self.rate_limit_burst)
            .field("cors_origins", &self.cors_origins)
            .field("log_format", &self.log_format)
            .field("workspace", &self.workspace)
            .field("outbound_hosts", &self.outbound_hosts)
            .field("outbound_nets", &self.outbound_nets)
            .field("tokens", &self.tokens)
            .field("agents", &self.agents)
            .field("run_wait_secs", &self.run_wait_secs)
            .field("console", &self.console)
            .field("mcp", &self.mcp)
            .field("public_url", &self.public_url)
            .field("mcp_hosts", &self.mcp_hosts)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("metrics_public", &self.metrics_public)
            .field("header_read_timeout_secs", &self.header_read_timeout_secs)
            .field("max_mcp_sessions", &self.max_mcp_sessions)
            .field("mcp_client_approves", &self.mcp_client_approves)
            .field("max_run_input_bytes", &self.max_run_input_bytes)
            .field("mcp_commands", &self.mcp_commands)
            .field("mcp_read_paths", &self.mcp_read_paths)
            .field("learn_from_runs", &self.learn_from_runs)
            .field("learn_half_life_days", &self.learn_half_life_days)
            .field("learn_refresh_secs", &self.learn_refresh_secs)
            .finish()
    }
}

#[cfg(test)]
mod debug_tests {
    use super::{ConfigToken, Scope, ServerConfig};

    #[test]
    fn debug_shows_no_token_and_no_database_password() {
        let config = ServerConfig {
            database_url: "postgres://app:s3cret@db/toolbelt".to_owned(),
            tokens: vec![ConfigToken {
                name: "ci".to_owned(),
                sha256: None,
                token: Some("tb_very_secret_token".to_owned()),
                scopes: vec![Scope::Run],
                agents: None,
            }],
            ..ServerConfig::default()
        };
        let printed = format!("{config:?}");
        assert!(!printed.contains("s3cret"), "{printed}");
        assert!(!printed.contains("tb_very_secret_token"), "{printed}");
        assert!(
            printed.contains("postgres://app:***@db/toolbelt"),
            "{printed}"
        );
        assert!(printed.contains("token: Some(\"***\")"), "{printed}");
    }
}

#[cfg(test)]
mod agent_tests {
    use super::ServerConfig;

    fn load(toml: &str) -> Result<ServerConfig, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("toolbelt.toml");
        std::fs::write(&file, toml).unwrap();
        ServerConfig::load(Some(&file)).map_err(|e| match e {
            super::ConfigError::Load(figment) => figment.to_string(),
            other => other.to_string(),
        })
    }

    #[test]
    fn configured_agents_are_written_as_stored_ones() {
        let config = load(
            r#"
[[agents]]
name = "writer"
selection = "file_ops,-shell_exec"
provider = "openai"
model = "qwen"
[agents.options]
max_iterations = 4
temperature = 0.2
"#,
        )
        .unwrap();
        let [writer] = config.agents.as_slice() else {
            panic!("{:?}", config.agents)
        };
        assert_eq!(
            (
                writer.name.as_str(),
                writer.selection.as_str(),
                writer.provider.as_deref(),
                writer.options.max_iterations,
                writer.options.temperature,
                writer.kind.as_str(),
            ),
            (
                "writer",
                "file_ops,-shell_exec",
                Some("openai"),
                Some(4),
                Some(0.2),
                "assistant"
            )
        );
    }

    #[test]
    fn without_agents_the_default_one_is_known_and_the_old_fields_are_named() {
        let config = load("dev = false\n").unwrap();
        assert_eq!(config.agents, vec![ServerConfig::default_agent()]);
        assert_eq!(config.agents[0].selection, "*");
        let error = load("[[agents]]\nid = \"writer\"\ntools = \"file_ops\"\n").unwrap_err();
        assert!(
            error.contains("found `id`") && error.contains("agents.0.id"),
            "{error}"
        );
    }
}
