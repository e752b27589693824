//! [`McpClient`]: one supervised connection to an MCP server whose tools are
//! imported as first-class toolbelt tools.
//!
//! A supervisor task connects (stdio or streamable HTTP), lists the tools,
//! and keeps them in step: it reloads them on `notifications/tools/list_changed`,
//! and when the server dies it marks the server down, removes its tools from
//! the attached [`Registry`] (so no model is offered them) and reconnects with
//! exponential backoff; the tools come back when the server does.

mod failure;
mod handler;
mod spawner;
mod tool;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use rmcp::Peer;
use rmcp::model::{ProgressToken, ProtocolVersion, ServerNotification, SubscriptionFilter};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RoleClient, RunningService};
use rmcp::transport::{
    ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess,
    streamable_http_client::StreamableHttpClientTransportConfig,
};
use serde::Serialize;
use tokio::sync::{Notify, broadcast, watch};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use toolbelt_core::{Backoff, Registry, ToolContext, ToolHandle};

use crate::config::{McpServerConfig, Transport};
use crate::error::McpError;
pub(crate) use failure::{Failure, FailureKind};
use handler::ClientHandlerImpl;
pub use spawner::{SpawnRefused, StdioCommand, StdioProcess, StdioSpawner};
pub use tool::McpTool;

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ServerStatus {
    /// Connecting (first time or after a failure).
    Connecting,
    /// Connected; its tools are available.
    Up {
        /// Number of tools imported.
        tools: usize,
    },
    /// Not connected; its tools are unavailable until it is back.
    Down {
        /// What went wrong.
        reason: String,
        /// Consecutive failures so far.
        failures: u32,
        /// Wait before the next attempt (zero when `permanent`: there is none).
        retry_in: Duration,
        /// Retrying cannot help until the configuration changes (credentials refused, a
        /// program that cannot be started): the supervisor does not try again.
        permanent: bool,
    },
    /// Stopped by [`McpClient::shutdown`].
    Stopped,
}

impl ServerStatus {
    /// Whether the server's tools can be called now.
    pub fn is_up(&self) -> bool {
        matches!(self, Self::Up { .. })
    }

    /// Whether the server is down for good (until its configuration changes).
    pub fn is_permanently_down(&self) -> bool {
        matches!(
            self,
            Self::Down {
                permanent: true,
                ..
            }
        )
    }
}

impl std::fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connecting => write!(f, "connecting"),
            Self::Up { tools } => write!(f, "up ({tools} tools)"),
            Self::Down {
                reason,
                permanent: true,
                ..
            } => write!(
                f,
                "down ({reason}; not retried until its configuration changes)"
            ),
            Self::Down {
                reason,
                failures,
                retry_in,
                ..
            } => write!(
                f,
                "down ({reason}; {failures} failed attempt(s), next in {} ms)",
                retry_in.as_millis()
            ),
            Self::Stopped => write!(f, "stopped"),
        }
    }
}

/// Something that happened to an MCP client, for event streams and logs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpEvent {
    /// The server's status changed.
    Status {
        /// Server name.
        server: String,
        /// New status.
        status: ServerStatus,
    },
    /// The server's tool list was (re)loaded.
    ToolsChanged {
        /// Server name.
        server: String,
        /// The imported names.
        tools: Vec<String>,
    },
    /// A running call reported progress (`notifications/progress`).
    Progress {
        /// Server name.
        server: String,
        /// The imported tool's name.
        tool: String,
        /// The toolbelt call id, when the call had one.
        call_id: Option<String>,
        /// Progress so far.
        progress: f64,
        /// Total, when known.
        total: Option<f64>,
        /// Message, when given.
        message: Option<String>,
    },
}

/// How the supervisor retries a server that fails by default: from 250 ms, doubling, up to
/// 30 s.
pub const RECONNECT_BACKOFF: Backoff =
    Backoff::new(Duration::from_millis(250), Duration::from_secs(30));

/// A progress route: which imported call a progress token belongs to.
#[derive(Debug, Clone)]
struct ProgressRoute {
    tool: String,
    call_id: Option<String>,
    /// The call's context: its progress goes to the executor's events and the host's
    /// [`ProgressSink`](toolbelt_core::ProgressSink) through it.
    ctx: ToolContext,
}

/// State shared by the client handle, its tools, the rmcp handler and the supervisor.
pub(crate) struct Shared {
    name: String,
    config: McpServerConfig,
    /// The client a streamable-HTTP server is reached with, when the host gave one.
    http_client: Option<reqwest::Client>,
    /// Starts a stdio server, when the host gave one (default: a plain child process).
    spawner: Option<StdioSpawner>,
    prefix: String,
    backoff: Backoff,
    peer: RwLock<Option<Peer<RoleClient>>>,
    tools: RwLock<Vec<ToolHandle>>,
    status: watch::Sender<ServerStatus>,
    events: broadcast::Sender<McpEvent>,
    progress: Mutex<HashMap<ProgressToken, ProgressRoute>>,
    list_changed: Notify,
    /// A call found the connection broken (an HTTP server that died does not close anything
    /// the client would notice otherwise).
    lost: Notify,
    /// Which connection that call used, and what it met.
    lost_reason: Mutex<(u64, String)>,
    /// Counts connections, so a call's report about an old one is not held against a new one.
    connection: std::sync::atomic::AtomicU64,
    /// Names of the tools of the last list (kept while the server is down).
    known: RwLock<Vec<String>>,
    registry: Option<Arc<Registry>>,
    stop: CancellationToken,
}

impl Shared {
    fn emit(&self, event: McpEvent) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(event);
        }
    }

    fn set_status(&self, status: ServerStatus) {
        self.status.send_replace(status.clone());
        self.emit(McpEvent::Status {
            server: self.name.clone(),
            status,
        });
    }

    pub(crate) fn peer(&self) -> Option<Peer<RoleClient>> {
        self.peer.read().ok().and_then(|p| p.clone())
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    pub(crate) fn status(&self) -> ServerStatus {
        self.status.borrow().clone()
    }

    pub(crate) fn on_progress(
        &self,
        token: &ProgressToken,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) {
        let route = self
            .progress
            .lock()
            .ok()
            .and_then(|routes| routes.get(token).cloned());
        let Some(route) = route else {
            return;
        };
        route.ctx.report_progress(progress, total, message.clone());
        tracing::debug!(server = %self.name, tool = %route.tool, progress, ?total, "mcp progress");
        self.emit(McpEvent::Progress {
            server: self.name.clone(),
            tool: route.tool,
            call_id: route.call_id,
            progress,
            total,
            message,
        });
    }

    pub(crate) fn track_progress(&self, token: ProgressToken, tool: &str, ctx: &ToolContext) {
        if let Ok(mut routes) = self.progress.lock() {
            routes.insert(
                token,
                ProgressRoute {
                    tool: tool.to_owned(),
                    call_id: ctx.call_id().map(str::to_owned),
                    ctx: ctx.clone(),
                },
            );
        }
    }

    pub(crate) fn untrack_progress(&self, token: &ProgressToken) {
        if let Ok(mut routes) = self.progress.lock() {
            routes.remove(token);
        }
    }

    pub(crate) fn notify_list_changed(&self) {
        self.list_changed.notify_one();
    }

    /// A call met a broken connection: the supervisor takes the server down and reconnects.
    pub(crate) fn connection_lost(&self, connection: u64, reason: &str) {
        if let Ok(mut lost) = self.lost_reason.lock() {
            *lost = (connection, reason.to_owned());
        }
        self.lost.notify_one();
    }

    /// The connection calls go through now (see [`Shared::connection_lost`]).
    pub(crate) fn connection(&self) -> u64 {
        self.connection.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Why connection `connection` was lost, if a call reported it.
    fn lost_reason(&self, connection: u64) -> Option<String> {
        self.lost_reason
            .lock()
            .ok()
            .filter(|lost| lost.0 == connection)
            .map(|lost| lost.1.clone())
    }

    /// What a connection failure looked like from `target`.
    pub(crate) fn target(&self) -> String {
        self.config
            .url
            .clone()
            .or_else(|| self.config.command.clone())
            .unwrap_or_else(|| self.name.clone())
    }
}

/// A supervised connection to one MCP server.
///
/// Dropping the last handle stops the supervisor and the server process, and takes the
/// server's tools out of the registry.
#[derive(Clone)]
pub struct McpClient {
    // Declared first: dropped while `shared` is still alive, so its tools can be removed.
    _supervisor: Arc<Supervisor>,
    shared: Arc<Shared>,
}

/// Owns the supervisor task; stops it when dropped.
struct Supervisor {
    tasks: Mutex<JoinSet<()>>,
    stop: CancellationToken,
    shared: Weak<Shared>,
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Ok(mut tasks) = self.tasks.lock() {
            tasks.abort_all();
        }
        // The aborted task cannot take the tools out any more: do it here.
        if let Some(shared) = self.shared.upgrade() {
            go_down(&shared);
        }
    }
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.shared.name)
            .field("status", &*self.shared.status.borrow())
            .finish_non_exhaustive()
    }
}

/// Builds an [`McpClient`].
#[must_use]
pub struct McpClientBuilder {
    name: String,
    config: McpServerConfig,
    backoff: Backoff,
    registry: Option<Arc<Registry>>,
    http_client: Option<reqwest::Client>,
    spawner: Option<StdioSpawner>,
}

impl std::fmt::Debug for McpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClientBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("backoff", &self.backoff)
            .field("spawner", &self.spawner.is_some())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// A builder for the server called `name` (used in tags, prefixes and messages).
    pub fn builder(name: impl Into<String>, config: McpServerConfig) -> McpClientBuilder {
        McpClientBuilder {
            name: name.into(),
            config,
            backoff: RECONNECT_BACKOFF,
            registry: None,
            http_client: None,
            spawner: None,
        }
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Its status now.
    pub fn status(&self) -> ServerStatus {
        self.shared.status()
    }

    /// Watches its status.
    pub fn watch_status(&self) -> watch::Receiver<ServerStatus> {
        self.shared.status.subscribe()
    }

    /// Receives its events (status, tool list changes, progress).
    pub fn subscribe(&self) -> broadcast::Receiver<McpEvent> {
        self.shared.events.subscribe()
    }

    /// The imported tools while the server is up; empty while it is down.
    pub fn tools(&self) -> Vec<ToolHandle> {
        if !self.status().is_up() {
            return Vec::new();
        }
        self.shared
            .tools
            .read()
            .map(|t| t.clone())
            .unwrap_or_default()
    }

    /// Whether `name` (as imported, with its prefix) was among the server's tools when it
    /// last listed them; still true while the server is down.
    pub fn knows_tool(&self, name: &str) -> bool {
        self.shared
            .known
            .read()
            .is_ok_and(|known| known.iter().any(|k| k == name))
    }

    /// Why a tool of this server cannot be used now, or `None` when it can.
    pub fn why_unavailable(&self) -> Option<String> {
        match self.status() {
            ServerStatus::Up { .. } => None,
            status => Some(format!("MCP server `{}` is {status}", self.shared.name)),
        }
    }

    /// The underlying rmcp peer while connected (for resources, prompts, raw calls).
    pub fn peer(&self) -> Option<Peer<RoleClient>> {
        self.shared.peer()
    }

    /// Waits until the server is up (or `timeout` passes, or it is down for good).
    ///
    /// # Errors
    /// [`McpError::NotReady`] with the status at the deadline, or at once when the server is
    /// down for a reason retrying cannot fix (a program that cannot be started, a refused
    /// token).
    pub async fn ready(&self, timeout: Duration) -> Result<(), McpError> {
        let started = Instant::now();
        let mut status = self.watch_status();
        let waited = tokio::time::timeout(
            timeout,
            status.wait_for(|s| s.is_up() || s.is_permanently_down()),
        )
        .await
        .is_ok_and(|seen| seen.is_ok_and(|status| status.is_up()));
        match waited {
            true => Ok(()),
            false => Err(McpError::NotReady {
                server: self.shared.name.clone(),
                waited_ms: started.elapsed().as_millis(),
                status: self.status().to_string(),
            }),
        }
    }

    /// Stops the supervisor, closes the connection and removes the tools from the registry
    /// (at once; the status becomes `Stopped` when the connection has closed).
    pub fn shutdown(&self) {
        self.shared.stop.cancel();
        go_down(&self.shared);
    }
}

impl McpClientBuilder {
    /// The retry schedule after failures.
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Keeps `registry` in step with the server's tools (added when up,
    /// replaced on list changes, removed while down).
    pub fn registry(mut self, registry: Arc<Registry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// The HTTP client a streamable-HTTP server is reached with (default: a plain one). A
    /// host passes one that checks addresses (the HTTP tools' SSRF guard and allow-list).
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.http_client = Some(client);
        self
    }

    /// Starts a stdio server's process with `spawner` instead of a plain child process: a
    /// host confines it (toolbelt's server and CLI spawn it in the command sandbox).
    pub fn spawner(mut self, spawner: StdioSpawner) -> Self {
        self.spawner = Some(spawner);
        self
    }

    /// Checks the configuration and starts the supervisor (it connects in the
    /// background: use [`McpClient::ready`] to wait).
    ///
    /// # Errors
    /// [`McpError::Config`] when the entry describes no usable transport.
    pub fn start(self) -> Result<McpClient, McpError> {
        let transport = self.config.transport_of(&self.name)?;
        let stop = CancellationToken::new();
        let (events, _) = broadcast::channel(256);
        let shared = Arc::new(Shared {
            prefix: self.config.prefix_for(&self.name),
            name: self.name,
            config: self.config,
            http_client: self.http_client,
            spawner: self.spawner,
            backoff: self.backoff,
            peer: RwLock::new(None),
            tools: RwLock::new(Vec::new()),
            status: watch::Sender::new(ServerStatus::Connecting),
            events,
            progress: Mutex::new(HashMap::new()),
            list_changed: Notify::new(),
            lost: Notify::new(),
            lost_reason: Mutex::new((0, String::new())),
            connection: std::sync::atomic::AtomicU64::new(0),
            known: RwLock::new(Vec::new()),
            registry: self.registry,
            stop: stop.clone(),
        });
        let mut tasks = JoinSet::new();
        tasks.spawn(supervise(Arc::downgrade(&shared), transport, stop.clone()));
        Ok(McpClient {
            _supervisor: Arc::new(Supervisor {
                tasks: Mutex::new(tasks),
                stop,
                shared: Arc::downgrade(&shared),
            }),
            shared,
        })
    }
}

type Running = RunningService<RoleClient, ClientHandlerImpl>;

/// How a connection starts: the `initialize` handshake (2025-11-25, what every server we
/// met speaks), or `server/discover` for a server that speaks only the stateless 2026-07-28.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Initialize,
    Discover,
}

impl Lifecycle {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Self::Initialize => ClientLifecycleMode::Initialize,
            Self::Discover => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        }
    }
}

async fn connect(
    shared: &Weak<Shared>,
    transport: &Transport,
    lifecycle: Lifecycle,
) -> Result<Running, Failure> {
    let handler = ClientHandlerImpl::new(shared.clone());
    match transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let spawner = shared
                .upgrade()
                .and_then(|s| s.spawner.clone().map(|spawner| (spawner, s.name.clone())));
            if let Some((spawner, server)) = spawner {
                let process = spawner(StdioCommand {
                    server,
                    command: command.clone(),
                    args: args.clone(),
                    env: env.clone(),
                    cwd: cwd.clone(),
                })
                .await
                .map_err(|refused| Failure {
                    reason: refused.reason,
                    kind: if refused.permanent {
                        FailureKind::Permanent
                    } else {
                        FailureKind::Transient
                    },
                })?;
                let stdout = spawner::Held {
                    stdout: process.stdout,
                    _keep: process.keep,
                };
                return handler
                    .serve_with_lifecycle((stdout, process.stdin), lifecycle.mode())
                    .await
                    .map_err(|e| Failure::of(&e, command));
            }
            let cmd = tokio::process::Command::new(command).configure(|cmd| {
                cmd.args(args);
                cmd.envs(env);
                if let Some(cwd) = cwd {
                    cmd.current_dir(cwd);
                }
                cmd.kill_on_drop(true);
            });
            let (child, _stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::null())
                .spawn()
                .map_err(|e| Failure::of(&e, command))?;
            handler
                .serve_with_lifecycle(child, lifecycle.mode())
                .await
                .map_err(|e| Failure::of(&e, command))
        }
        Transport::Http {
            url,
            headers,
            bearer_token,
        } => {
            let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(token) = bearer_token {
                config = config.auth_header(token.clone());
            }
            config = config.custom_headers(http_headers(headers).map_err(|reason| Failure {
                reason,
                kind: FailureKind::Permanent,
            })?);
            let client = shared.upgrade().and_then(|s| s.http_client.clone());
            let transport = match client {
                Some(client) => StreamableHttpClientTransport::with_client(client, config),
                None => StreamableHttpClientTransport::from_config(config),
            };
            handler
                .serve_with_lifecycle(transport, lifecycle.mode())
                .await
                .map_err(|e| Failure::of(&e, url))
        }
    }
}

fn http_headers(
    headers: &BTreeMap<String, String>,
) -> Result<HashMap<http::HeaderName, http::HeaderValue>, String> {
    headers
        .iter()
        .map(|(k, v)| {
            let name = http::HeaderName::try_from(k.as_str())
                .map_err(|_| format!("`{k}` is not a valid header name"))?;
            let value = http::HeaderValue::try_from(v.as_str())
                .map_err(|_| format!("the value of header `{k}` is not a valid header value"))?;
            Ok((name, value))
        })
        .collect()
}

/// Lists the server's tools and wraps them.
async fn load_tools(
    shared: &Arc<Shared>,
    peer: &Peer<RoleClient>,
) -> Result<Vec<ToolHandle>, Failure> {
    let listed = peer.list_all_tools().await.map_err(|e| {
        let mut failure = Failure::of(&e, &shared.target());
        failure.reason = format!("tools/list failed: {}", failure.reason);
        failure
    })?;
    Ok(import_tools(shared, listed))
}

pub(crate) fn import_tools(
    shared: &Arc<Shared>,
    listed: Vec<rmcp::model::Tool>,
) -> Vec<ToolHandle> {
    let mut tools = Vec::with_capacity(listed.len());
    let mut taken = std::collections::HashSet::new();
    for def in listed {
        let remote = def.name.to_string();
        let local = crate::convert::unique_local_name(&remote, &mut taken);
        if local != remote {
            tracing::info!(server = %shared.name, tool = %remote, name = %local, "MCP tool renamed: its name has characters tool names do not carry");
        }
        match McpTool::new(
            Arc::downgrade(shared),
            &format!("{}{local}", shared.prefix),
            &shared.config,
            def,
        )
        .and_then(ToolHandle::new)
        {
            Ok(handle) => tools.push(handle),
            Err(e) => {
                tracing::warn!(server = %shared.name, tool = %remote, error = %e, "MCP tool skipped");
            }
        }
    }
    tools
}

/// Puts `tools` in the registry in place of `previous`.
fn sync_registry(shared: &Shared, previous: &[ToolHandle], tools: &[ToolHandle]) {
    let Some(registry) = &shared.registry else {
        return;
    };
    // Two batches (one publish each) rather than one write per tool: remove
    // the tools this client put there, then add the new list. A name held by
    // another source (a built-in, another server) is never overwritten.
    let ours: Vec<&str> = previous
        .iter()
        .filter(|t| {
            registry
                .get(t.name().as_str())
                .is_some_and(|held| held.ptr_eq(t))
        })
        .map(|t| t.name().as_str())
        .collect();
    if !ours.is_empty()
        && let Err(e) = registry.remove_tools(ours)
    {
        tracing::warn!(server = %shared.name, error = %e, "could not remove MCP tools");
    }
    let (fresh, taken): (Vec<&ToolHandle>, Vec<&ToolHandle>) = tools
        .iter()
        .partition(|t| !registry.contains(t.name().as_str()));
    for tool in taken {
        tracing::warn!(server = %shared.name, tool = %tool.name(), "name already registered by another source; MCP tool not added");
    }
    if let Err(e) = registry.add_tools(fresh.into_iter().cloned()) {
        tracing::warn!(server = %shared.name, error = %e, "could not register MCP tools");
    }
}

fn set_tools(shared: &Shared, tools: Vec<ToolHandle>) {
    if let Ok(mut known) = shared.known.write() {
        *known = tools.iter().map(|t| t.name().to_string()).collect();
    }
    let previous = shared
        .tools
        .write()
        .map(|mut t| std::mem::replace(&mut *t, tools.clone()))
        .unwrap_or_default();
    sync_registry(shared, &previous, &tools);
    shared.emit(McpEvent::ToolsChanged {
        server: shared.name.clone(),
        tools: tools.iter().map(|t| t.name().to_string()).collect(),
    });
}

fn go_down(shared: &Shared) {
    if let Ok(mut peer) = shared.peer.write() {
        *peer = None;
    }
    let previous = shared.tools.read().map(|t| t.clone()).unwrap_or_default();
    // Tools stay known (for `why_unavailable`) but leave the registry.
    sync_registry(shared, &previous, &[]);
}

async fn supervise(weak: Weak<Shared>, transport: Transport, stop: CancellationToken) {
    let mut failures = 0u32;
    let mut lifecycle = Lifecycle::Initialize;
    loop {
        let Some(shared) = weak.upgrade() else { return };
        shared.set_status(ServerStatus::Connecting);
        let outcome = match connect(&weak, &transport, lifecycle).await {
            Ok(running) => {
                let outcome = run_connected(&shared, running, lifecycle, &stop).await;
                if stop.is_cancelled() {
                    go_down(&shared);
                    shared.set_status(ServerStatus::Stopped);
                    return;
                }
                outcome
            }
            Err(failure) => Ended {
                failure,
                was_up: false,
            },
        };
        if outcome.was_up {
            failures = 0;
        }
        let failure = outcome.failure;
        if failure.kind == FailureKind::StatelessOnly && lifecycle == Lifecycle::Initialize {
            // Not a failure of the server: it wants the 2026-07-28 lifecycle. Ask again at once.
            tracing::info!(server = %shared.name, "the server speaks only 2026-07-28; connecting with server/discover");
            lifecycle = Lifecycle::Discover;
            continue;
        }
        failures += 1;
        let permanent = failure.kind == FailureKind::Permanent;
        let retry_in = if permanent {
            Duration::ZERO
        } else {
            shared.backoff.delay(failures)
        };
        tracing::warn!(server = %shared.name, reason = %failure.reason, ?retry_in, permanent, "MCP server down");
        go_down(&shared);
        shared.set_status(ServerStatus::Down {
            reason: failure.reason,
            failures,
            retry_in,
            permanent,
        });
        drop(shared);
        if permanent {
            stop.cancelled().await;
            if let Some(shared) = weak.upgrade() {
                shared.set_status(ServerStatus::Stopped);
            }
            return;
        }
        tokio::select! {
            () = stop.cancelled() => {
                if let Some(shared) = weak.upgrade() {
                    shared.set_status(ServerStatus::Stopped);
                }
                return;
            }
            () = tokio::time::sleep(retry_in) => {}
        }
    }
}

/// How a connection ended: why, and whether the server was up before.
struct Ended {
    failure: Failure,
    was_up: bool,
}

/// Follows `tools/list_changed` on a 2026-07-28 connection: a `subscriptions/listen` stream.
/// Resolves when a change is announced; never when the server refused the subscription.
async fn next_change(subscription: &mut Option<rmcp::service::Subscription>) {
    let Some(stream) = subscription.as_mut() else {
        return std::future::pending().await;
    };
    loop {
        match stream.next().await {
            Ok(Some(ServerNotification::ToolListChangedNotification(_))) => return,
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => {
                *subscription = None;
                return std::future::pending().await;
            }
        }
    }
}

/// Serves one connection until it ends; `None` when stopped.
async fn run_connected(
    shared: &Arc<Shared>,
    running: Running,
    lifecycle: Lifecycle,
    stop: &CancellationToken,
) -> Ended {
    let peer = running.peer().clone();
    let closer = running.cancellation_token();
    let connection = shared
        .connection
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        + 1;
    let tools = match load_tools(shared, &peer).await {
        Ok(tools) => tools,
        Err(failure) => {
            closer.cancel();
            return Ended {
                failure,
                was_up: false,
            };
        }
    };
    // On 2026-07-28 a server announces list changes only on a listen stream.
    let mut subscription = match lifecycle {
        Lifecycle::Initialize => None,
        Lifecycle::Discover => {
            let filter = SubscriptionFilter::builder().tools_list_changed().build();
            match peer.listen(filter).await {
                Ok(subscription) => Some(subscription),
                Err(e) => {
                    tracing::info!(server = %shared.name, error = %e, "no subscriptions/listen: tool list changes will not be followed");
                    None
                }
            }
        }
    };
    if let Ok(mut slot) = shared.peer.write() {
        *slot = Some(peer.clone());
    }
    let count = tools.len();
    set_tools(shared, tools);
    shared.set_status(ServerStatus::Up { tools: count });
    let waiting = running.waiting();
    tokio::pin!(waiting);
    loop {
        tokio::select! {
            quit = &mut waiting => {
                let reason = match quit {
                    Ok(reason) => format!("connection ended ({reason:?})"),
                    Err(e) => format!("connection task failed: {e}"),
                };
                return Ended { failure: Failure::transient(reason), was_up: true };
            }
            () = shared.lost.notified() => {
                // A report about an earlier connection is stale: this one is fine.
                let Some(reason) = shared.lost_reason(connection) else { continue };
                closer.cancel();
                let _ = (&mut waiting).await;
                return Ended { failure: Failure::transient(reason), was_up: true };
            }
            () = async {
                tokio::select! {
                    () = shared.list_changed.notified() => {}
                    () = next_change(&mut subscription) => {}
                }
            } => {
                match load_tools(shared, &peer).await {
                    Ok(tools) => {
                        let count = tools.len();
                        set_tools(shared, tools);
                        shared.set_status(ServerStatus::Up { tools: count });
                    }
                    Err(e) => tracing::warn!(server = %shared.name, error = %e.reason, "tools reload failed"),
                }
            }
            () = stop.cancelled() => {
                closer.cancel();
                let _ = (&mut waiting).await;
                return Ended { failure: Failure::transient("stopped"), was_up: true };
            }
        }
    }
}
