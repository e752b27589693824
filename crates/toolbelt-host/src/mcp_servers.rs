//! MCP servers stored in the database, supervised by the host: each enabled one gets an
//! [`McpClient`] importing its tools into the live registry (tagged `mcp` and `mcp:<name>`),
//! restarted with backoff when it dies; a change in the store (through a server's API, the
//! CLI or another instance) reaches the running clients within [`POLL`].
//!
//! Stored configurations hold no secret values: `{{secret.NAME}}` in `env`, `headers`,
//! `bearerToken` or `url` is replaced when connecting, from the secrets the operator declared
//! ([`Secrets`]: `TOOLBELT_SECRET_*` variables, the secrets file, allow-listed variables), as
//! declarative tools do; any other environment variable is never read.
//!
//! A stored stdio server runs only a program of the host's allow-list
//! ([`McpSupervision::with_commands`]): a front-end refuses any other, and one stored otherwise
//! (the CLI, an older version) is never started, its health saying why. Every stdio server,
//! allowed or configured by the host, is spawned in the command sandbox ([`sandboxed_spawner`],
//! docs/SECURITY.md, ADR 0060).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex;
use toolbelt_core::Registry;
use toolbelt_mcp::{McpClient, McpServerConfig, ServerStatus, StdioSpawner};
use toolbelt_store::{McpServerRecord, Store};
use toolbelt_tools::HttpConfig;
use toolbelt_tools::declarative::{Secrets, secret_names};

mod config;
mod spawner;

pub use config::{ConfigProblem, check_config, command_problem, resolve_secrets};
pub use spawner::{cli_spawner, config_spawner, sandboxed_spawner, sandboxed_spawner_writing};

/// How often the stored servers are compared with the running clients.
pub const POLL: Duration = Duration::from_secs(2);

/// How a host supervises the stored MCP servers: the stdio programs it allows, how it starts
/// them, and what its HTTP clients may reach.
#[derive(Clone)]
#[must_use]
pub struct McpSupervision {
    commands: Vec<String>,
    spawner: StdioSpawner,
    http: Option<HttpConfig>,
}

impl std::fmt::Debug for McpSupervision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSupervision")
            .field("commands", &self.commands)
            .field("http", &self.http.is_some())
            .finish_non_exhaustive()
    }
}

impl McpSupervision {
    /// Stdio servers started by `spawner` (e.g. [`sandboxed_spawner`]), none allowed yet,
    /// HTTP servers reached with a default client.
    pub fn new(spawner: StdioSpawner) -> Self {
        Self {
            commands: Vec::new(),
            spawner,
            http: None,
        }
    }

    /// The programs a stored stdio server may run, compared exactly as written (empty: stored
    /// servers are HTTP only).
    pub fn with_commands(mut self, commands: Vec<String>) -> Self {
        self.commands = commands;
        self
    }

    /// Reaches stored servers' URLs as the HTTP tools reach theirs: the SSRF guard after DNS
    /// and at every redirect, `http`'s outbound allow-list opening internal hosts.
    pub fn with_http(mut self, http: HttpConfig) -> Self {
        self.http = Some(http);
        self
    }

    /// The programs a stored stdio server may run.
    pub fn commands(&self) -> &[String] {
        &self.commands
    }
}

/// The running clients of the stored MCP servers, by name, over the host's store and live
/// registry. Clones share them.
#[derive(Clone)]
pub struct McpServers {
    shared: Arc<Shared>,
}

struct Shared {
    store: Store,
    registry: Arc<Registry>,
    settings: McpSupervision,
    running: Mutex<BTreeMap<String, Running>>,
}

struct Running {
    revision: i64,
    client: McpClient,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field("settings", &self.shared.settings)
            .finish_non_exhaustive()
    }
}

/// How a stored server's connection is doing in this process (what the API shows).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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
    /// The supervisor of the servers stored in `store`, importing into `registry`; nothing
    /// connects before [`McpServers::sync`].
    pub fn new(store: Store, registry: Arc<Registry>, settings: McpSupervision) -> Self {
        Self {
            shared: Arc::new(Shared {
                store,
                registry,
                settings,
                running: Mutex::new(BTreeMap::new()),
            }),
        }
    }

    /// How the servers are supervised.
    pub fn settings(&self) -> &McpSupervision {
        &self.shared.settings
    }

    /// Checks a configuration about to be stored or enabled: [`check_config`], then the
    /// host's allow-list of commands ([`command_problem`]).
    ///
    /// # Errors
    /// [`ConfigProblem`] naming the field.
    pub fn check(
        &self,
        name: &str,
        config: &serde_json::Value,
    ) -> Result<McpServerConfig, ConfigProblem> {
        let parsed = check_config(name, config)?;
        match command_problem(&self.shared.settings.commands, &parsed) {
            Some(problem) => Err(problem),
            None => Ok(parsed),
        }
    }

    /// Why a stored server's URL will not be reached (an internal address not in the outbound
    /// allow-list, a scheme other than http/https); `None` when it may be, or when the URL is
    /// only known once its secrets are filled in.
    fn outbound_problem(&self, config: &McpServerConfig) -> Option<String> {
        let url = config.url.as_deref()?;
        if !secret_names(url).is_empty() {
            return None;
        }
        self.check_outbound(url).err().map(|e| {
            format!("/url: {e} (open it with the server's outbound_hosts or outbound_nets)")
        })
    }

    fn check_outbound(&self, url: &str) -> Result<(), String> {
        match &self.shared.settings.http {
            Some(http) => http.check_target(url),
            None => Ok(()),
        }
    }

    /// The connection state of the stored server `record`: `disabled` as stored, else its
    /// client's state, or `not_started` with the reason its configuration cannot be used.
    pub async fn health(&self, record: &McpServerRecord) -> Health {
        if !record.enabled {
            return Health::state("disabled");
        }
        if let Some(running) = self.shared.running.lock().await.get(&record.name) {
            return Health::of(&running.client.status());
        }
        let problem = match self.check(&record.name, &record.config) {
            Ok(config) => self.outbound_problem(&config),
            Err(p) => Some(format!("{}: {}", p.pointer, p.message)),
        };
        Health {
            error: problem,
            ..Health::state("not_started")
        }
    }

    /// Brings the running clients in line with the store: starts enabled servers that are not
    /// running or whose configuration changed, stops the rest. A configuration that cannot be
    /// used is logged and skipped (the API refuses such configurations; the CLI checks too).
    pub async fn sync(&self) {
        let shared = &self.shared;
        let stored = match shared.store.mcp_servers().list().await {
            Ok(stored) => stored,
            Err(error) => {
                tracing::warn!(%error, "MCP servers: the store could not be read");
                return;
            }
        };
        let secrets = Secrets::from_env();
        let mut running = shared.running.lock().await;
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
            match self.start(name, &record.config, &secrets) {
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

    /// Starts the client of one stored server; why not, in words.
    fn start(
        &self,
        name: &str,
        config: &serde_json::Value,
        secrets: &Secrets,
    ) -> Result<McpClient, String> {
        // A command outside the host's allow-list is never started, however it was stored.
        let config = self
            .check(name, config)
            .map_err(|p| format!("{}: {}", p.pointer, p.message))?;
        let config = resolve_secrets(&config, secrets).map_err(|e| e.to_string())?;
        // A URL is reached as the HTTP tools reach one: the SSRF guard after DNS and at
        // every redirect, the outbound allow-list opening internal hosts.
        if let Some(url) = &config.url {
            self.check_outbound(url)?;
        }
        let settings = &self.shared.settings;
        let mut builder = McpClient::builder(name, config)
            .registry(self.shared.registry.clone())
            .spawner(settings.spawner.clone());
        if let Some(http) = &settings.http {
            builder = builder.http_client(http.guarded_client()?);
        }
        builder.start().map_err(|e| e.to_string())
    }

    /// Stops every client (their tools leave the registry).
    pub async fn stop_all(&self) {
        for (_, running) in std::mem::take(&mut *self.shared.running.lock().await) {
            running.client.shutdown();
        }
    }

    /// Connects the stored servers and follows the store every [`POLL`] until `shutdown` is
    /// cancelled, then stops every client.
    pub(crate) async fn follow(self, shutdown: tokio_util::sync::CancellationToken) {
        loop {
            self.sync().await;
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = shutdown.cancelled() => break,
            }
        }
        self.stop_all().await;
    }
}

#[cfg(test)]
mod tests;
