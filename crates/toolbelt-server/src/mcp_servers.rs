//! MCP servers stored in the database, connected by the server: each enabled one gets an
//! [`McpClient`] importing its tools into the live registry (tagged `mcp` and `mcp:<name>`),
//! restarted with backoff when it dies; a change in the store (through this server's API, the
//! CLI or another instance) reaches the running clients within [`POLL`].
//!
//! Stored configurations hold no secret values: `{{secret.NAME}}` in `env`, `headers`,
//! `bearerToken` or `url` is replaced when connecting, from the secrets the operator declared
//! ([`Secrets`]: `TOOLBELT_SECRET_*` variables, the secrets file, allow-listed variables), as
//! declarative tools do; any other environment variable is never read.
//!
//! A stored stdio server runs only a program of the host's allow-list
//! ([`ServerConfig::mcp_commands`]): the API refuses any other (`422` at `/config/command`), and
//! one stored otherwise (the CLI, an older version) is never started, its health saying why.
//! Every stdio server, allowed or configured by the host, is spawned in the command sandbox
//! ([`sandboxed_spawner`], docs/SECURITY.md, ADR 0060).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Mutex;
use tokio::task::JoinHandle;
use toolbelt_mcp::{
    McpClient, McpServerConfig, ServerStatus, SpawnRefused, StdioCommand, StdioProcess,
    StdioSpawner,
};
use toolbelt_tools::declarative::{Secrets, secret_names};
use toolbelt_tools::sandbox::{Sandbox, SandboxError, SandboxMode, SandboxPolicy};

use crate::config::ServerConfig;
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
/// ([`ServerConfig::mcp_commands`]), compared exactly as written (no `PATH` look-up, no
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

/// Starts stdio MCP servers in the command sandbox (ADR 0060): Landlock, capabilities dropped,
/// namespaces where available, in `mode` (workspace-write by default: read-write in the
/// workspace `root`); readable: the system paths, `PATH`, the program's directory and
/// `read_paths`; writable besides: a private scratch directory (`TMPDIR`) and a private
/// `HOME`, both deleted when the process ends. The network is allowed (servers started
/// with `npx` or `uvx` download their package; many call APIs). The environment is empty but
/// `PATH`, `LANG`, `LC_ALL`, `TZ`, `HOME`, `TMPDIR` and the server's own `env`.
///
/// When the kernel cannot enforce the sandbox (no Landlock) and `mode` is not `full-access`,
/// the server is refused for good, its status saying why.
pub fn sandboxed_spawner(
    root: PathBuf,
    mode: SandboxMode,
    read_paths: Vec<PathBuf>,
) -> StdioSpawner {
    sandboxed_spawner_writing(root, mode, read_paths, Vec::new())
}

/// [`sandboxed_spawner`] with `write_paths` writable besides the workspace (ignored in
/// `read-only` mode).
pub fn sandboxed_spawner_writing(
    root: PathBuf,
    mode: SandboxMode,
    read_paths: Vec<PathBuf>,
    write_paths: Vec<PathBuf>,
) -> StdioSpawner {
    let paths = Arc::new((read_paths, write_paths));
    Arc::new(move |spec: StdioCommand| {
        let root = root.clone();
        let paths = paths.clone();
        Box::pin(async move { spawn_sandboxed(&root, mode, &paths.0, &paths.1, spec).await })
    })
}

/// The spawner of one entry of a host's own `--mcp-config` file (the CLI's `run`, `tools`,
/// `route` and `mcp serve`): the command sandbox over `root`, in the entry's `sandbox.mode`
/// (`workspace-write` when absent), its `readPaths` and `TOOLBELT_MCP_READ_PATHS` readable,
/// its `writePaths` writable.
///
/// # Errors
/// The entry's `sandbox.mode` is not one of `read-only`, `workspace-write`, `full-access`.
pub fn config_spawner(
    root: &Path,
    sandbox: Option<&toolbelt_mcp::McpSandbox>,
) -> Result<StdioSpawner, String> {
    let mode = match sandbox.and_then(|s| s.mode.as_deref()) {
        None => SandboxMode::WorkspaceWrite,
        Some(mode) => mode.parse().map_err(|_| {
            format!(
                "sandbox.mode: `{mode}` is not a sandbox mode (read-only, workspace-write, \
                 full-access)"
            )
        })?,
    };
    Ok(host_spawner(root, mode, sandbox))
}

/// The spawner of a process of the host's own (the CLI's): the sandbox over `root`
/// (canonicalised), `TOOLBELT_MCP_READ_PATHS` and `sandbox`'s paths.
fn host_spawner(
    root: &Path,
    mode: SandboxMode,
    sandbox: Option<&toolbelt_mcp::McpSandbox>,
) -> StdioSpawner {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut read_paths = env_read_paths();
    let mut write_paths = Vec::new();
    if let Some(sandbox) = sandbox {
        read_paths.extend(sandbox.read_paths.iter().cloned());
        write_paths.extend(sandbox.write_paths.iter().cloned());
    }
    sandboxed_spawner_writing(root, mode, read_paths, write_paths)
}

/// `TOOLBELT_MCP_READ_PATHS`, split like `PATH`.
fn env_read_paths() -> Vec<PathBuf> {
    std::env::var_os("TOOLBELT_MCP_READ_PATHS")
        .map(|paths| {
            std::env::split_paths(&paths)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The spawner of [`sandboxed_spawner`] for the server's configuration: the workspace,
/// workspace-write mode (as the server's command tools), [`ServerConfig::mcp_read_paths`].
pub fn server_spawner(config: &ServerConfig) -> StdioSpawner {
    let root =
        std::fs::canonicalize(&config.workspace).unwrap_or_else(|_| config.workspace.clone());
    sandboxed_spawner(
        root,
        SandboxMode::WorkspaceWrite,
        config.mcp_read_paths.clone(),
    )
}

/// The spawner of the CLI's connections to stored servers (`toolbelt mcp ls --check`): the
/// current directory as the workspace (workspace-write), `TOOLBELT_MCP_READ_PATHS` readable.
pub fn cli_spawner() -> StdioSpawner {
    host_spawner(Path::new("."), SandboxMode::WorkspaceWrite, None)
}

async fn spawn_sandboxed(
    root: &Path,
    mode: SandboxMode,
    read_paths: &[PathBuf],
    write_paths: &[PathBuf],
    spec: StdioCommand,
) -> Result<StdioProcess, SpawnRefused> {
    let home = tempfile::Builder::new()
        .prefix("toolbelt-mcp-home-")
        .tempdir()
        .map_err(|e| SpawnRefused::transient(format!("cannot create the server's HOME: {e}")))?;
    let mut policy = SandboxPolicy::new()
        .with_mode(mode)
        .with_network(true)
        .with_write_path(home.path());
    if let Some(dir) = program_dir(&spec.command) {
        policy = policy.with_read_path(dir);
    }
    for path in read_paths {
        policy = policy.with_read_path(path);
    }
    for path in write_paths {
        policy = policy.with_write_path(path);
    }
    let sandbox = Sandbox::new(root, policy);
    if let Some((uid, gid)) = sandbox.run_as() {
        // The server runs as the workspace's owner: its HOME is that user's to write.
        std::os::unix::fs::chown(home.path(), Some(uid), Some(gid)).map_err(|e| {
            SpawnRefused::transient(format!("cannot hand the server its HOME: {e}"))
        })?;
    }
    let mut argv = vec![spec.command.clone()];
    argv.extend(spec.args.iter().cloned());
    let mut cmd = sandbox
        .command(&argv)
        .map_err(|e| SpawnRefused::permanent(e.to_string()))?;
    for var in ["PATH", "LANG", "LC_ALL", "TZ"] {
        if let Some(value) = std::env::var_os(var) {
            cmd.env(var, value);
        }
    }
    cmd.env("HOME", home.path()).envs(&spec.env);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = sandbox.spawn(cmd).await.map_err(|e| match e {
        SandboxError::Spawn { program, source } => {
            SpawnRefused::permanent(format!("could not start `{program}`: {source}"))
        }
        SandboxError::Scratch(_) => SpawnRefused::transient(e.to_string()),
        other => SpawnRefused::permanent(format!("MCP server not started in the sandbox: {other}")),
    })?;
    let (Some(stdin), Some(stdout)) = (child.child.stdin.take(), child.child.stdout.take()) else {
        return Err(SpawnRefused::transient("the server's pipes are missing"));
    };
    Ok(StdioProcess::new(stdin, stdout, (child, home)))
}

/// The canonical directory of `command` (as a path, or found on `PATH`).
fn program_dir(command: &str) -> Option<PathBuf> {
    let found = if command.contains('/') {
        PathBuf::from(command)
    } else {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(command))
            .find(|candidate| candidate.is_file())?
    };
    std::fs::canonicalize(found)
        .ok()?
        .parent()
        .map(Path::to_path_buf)
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
        let Some(store) = state.store() else { return };
        let stored = match store.mcp_servers().list().await {
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
            // A command outside the host's allow-list is never started, however it was stored.
            let config = check_config(name, &record.config)
                .and_then(
                    |c| match command_problem(&state.config().mcp_commands, &c) {
                        Some(problem) => Err(problem),
                        None => Ok(c),
                    },
                )
                .map_err(|p| format!("{}: {}", p.pointer, p.message))
                .and_then(|c| resolve_secrets(&c, &secrets));
            let config = match config {
                Ok(config) => config,
                Err(error) => {
                    tracing::warn!(server = %name, %error, "MCP server not started");
                    continue;
                }
            };
            // A URL is reached as the HTTP tools reach one: the SSRF guard after DNS and at
            // every redirect, the server's outbound allow-list opening internal hosts.
            if let Some(url) = &config.url
                && let Err(error) = state.check_outbound(url)
            {
                tracing::warn!(server = %name, %error, "MCP server not started");
                continue;
            }
            let mut builder = McpClient::builder(name, config)
                .registry(state.shared_registry())
                .spawner(server_spawner(state.config()));
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
    state.store()?;
    let state = state.clone();
    Some(tokio::spawn(async move {
        loop {
            state.mcp_servers().sync(&state).await;
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = state.shutdown().cancelled() => break,
            }
        }
        state.mcp_servers().stop_all().await;
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn a_command_is_allowed_only_as_written_in_the_allow_list() {
        let stdio = |command: &str| check_config("x", &json!({"command": command})).unwrap();
        let allowed = vec!["node".to_owned(), "/opt/uv/bin/uvx".to_owned()];
        assert_eq!(command_problem(&allowed, &stdio("node")), None);
        assert_eq!(command_problem(&allowed, &stdio("/opt/uv/bin/uvx")), None);
        for refused in ["sh", "/tmp/x/node", "uvx", "./node"] {
            let problem = command_problem(&allowed, &stdio(refused)).unwrap();
            assert_eq!(problem.pointer, "/command");
            assert!(
                problem.message.contains(&format!("`{refused}`"))
                    && problem.message.contains("`node`, `/opt/uv/bin/uvx`")
                    && problem.message.contains("TOOLBELT_MCP_COMMANDS"),
                "{}",
                problem.message
            );
        }
        let empty = command_problem(&[], &stdio("node")).unwrap();
        assert!(empty.message.contains("HTTP only"), "{}", empty.message);
        let http = check_config("x", &json!({"url": "https://example.test/mcp"})).unwrap();
        assert_eq!(command_problem(&[], &http), None);
    }

    /// What a stdio process started by the server's spawner prints, run as `sh -c script`.
    async fn run_spawned(root: &Path, script: &str) -> Result<String, SpawnRefused> {
        let spawner =
            sandboxed_spawner(root.to_path_buf(), SandboxMode::WorkspaceWrite, Vec::new());
        let mut process = spawner(StdioCommand::new(
            "probe",
            "sh",
            vec!["-c".to_owned(), script.to_owned()],
        ))
        .await?;
        process.stdin.shutdown().await.unwrap();
        let mut out = String::new();
        tokio::time::timeout(
            Duration::from_secs(20),
            process.stdout.read_to_string(&mut out),
        )
        .await
        .unwrap()
        .unwrap();
        Ok(out)
    }

    #[tokio::test]
    async fn a_stdio_server_runs_in_the_sandbox_and_cannot_read_outside_the_workspace() {
        let workspace = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(workspace.path()).unwrap();
        std::fs::write(root.join("inside.txt"), "inside-ok").unwrap();
        // A file the server's process can read, outside the workspace.
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.txt");
        std::fs::write(&secret, "top-secret-value").unwrap();
        assert!(std::fs::read_to_string(&secret).is_ok());
        let script = format!(
            "cat inside.txt; echo; cat {} 2>&1; echo; echo home=$HOME; touch \"$HOME/h\" && echo home-writable",
            secret.display()
        );
        if !toolbelt_tools::sandbox::probe().landlock() {
            let refused = run_spawned(&root, &script).await.unwrap_err();
            assert!(refused.permanent, "{refused:?}");
            assert!(
                refused.reason.contains("sandbox is unavailable"),
                "{refused:?}"
            );
            println!("skipped: the kernel has no Landlock; the spawn was refused as it must be");
            return;
        }
        let out = run_spawned(&root, &script).await.unwrap();
        assert!(out.contains("inside-ok"), "{out}");
        assert!(
            !out.contains("top-secret-value"),
            "the sandbox let it read {out}"
        );
        assert!(out.contains("Permission denied"), "{out}");
        assert!(out.contains("home-writable"), "{out}");
        // Not started at all when the program does not exist: a permanent refusal.
        let spawner = sandboxed_spawner(root.clone(), SandboxMode::WorkspaceWrite, Vec::new());
        let missing = spawner(StdioCommand::new(
            "probe",
            "/nonexistent/mcp-server",
            Vec::new(),
        ))
        .await
        .unwrap_err();
        assert!(
            missing.permanent && missing.reason.contains("could not start"),
            "{missing:?}"
        );
    }

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
        // The sandbox of a stored server is the host's to set, never the record's.
        let escape = check_config(
            "x",
            &json!({"command": "node", "sandbox": {"mode": "full-access"}}),
        )
        .unwrap_err();
        assert_eq!(escape.pointer, "/sandbox");
        assert!(
            escape.message.contains("server's own sandbox"),
            "{escape:?}"
        );
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
