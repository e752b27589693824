//! [`McpServer`]: any toolbelt toolset served as an MCP server, over stdio
//! ([`McpServer::serve_stdio`]) or streamable HTTP ([`McpServer::http_service`],
//! [`McpServer::router`]).
//!
//! Every `tools/call` goes through the core [`Executor`]: arguments are
//! validated against the tool's schema (a violation comes back as a tool
//! result with `isError: true` naming the JSON pointer), the tool's timeout and
//! retry policy apply, and a call that needs approval is put to the client as
//! an elicitation when the client supports it, or refused with a message
//! saying so. When the tools come from a [`Registry`], a change to the
//! registry is announced with `notifications/tools/list_changed`.
//!
//! A server built [`McpServer::with_search`] exports its tools routed: `tools/list` shows the
//! search tool and the tools this session's searches found, so a client with a large catalog
//! behind it sees a few schemas rather than all of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, Implementation, InputRequest, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool as McpToolDef,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::task::JoinSet;
use toolbelt_core::{
    ApprovalRequest, ApprovalResponse, Approver, BoxFuture, Executor, Extensions, Progress,
    ProgressSink, Registry, Selection, ToolCall, ToolContext, ToolHandle, Toolset,
};

use crate::convert::{result_from_outcome, tool_definition};
use crate::error::McpError;

/// Where an [`McpServer`] takes its tools from.
#[derive(Clone)]
enum Source {
    /// A fixed toolset.
    Fixed(Toolset),
    /// A live registry, optionally narrowed by a selection; changes are announced.
    Registry {
        registry: Arc<Registry>,
        selection: Option<Selection>,
    },
    /// A toolset the host publishes (numbered by its generation); each new one is announced.
    Published(tokio::sync::watch::Receiver<(u64, Toolset)>),
}

#[derive(Clone)]
struct Inner {
    source: Source,
    executor: Executor,
    name: String,
    instructions: Option<String>,
    extensions: Extensions,
    search: Option<Arc<Search>>,
    unavailable: Option<Arc<Unavailable>>,
    client_approves: bool,
}

/// Says why a tool that is not served now cannot be called (its MCP server is down), or `None`
/// for a name nobody knows.
type Unavailable = dyn Fn(&str) -> Option<String> + Send + Sync;

/// Builds the search tool of a routed export over the tools served now.
type SearchFactory = dyn Fn(&Toolset) -> Result<ToolHandle, String> + Send + Sync;

/// The search tool of a routed export, rebuilt when the served tools change.
struct Search {
    factory: Box<SearchFactory>,
    /// The tool, and the registry generation it was built for.
    built: Mutex<Option<(u64, ToolHandle)>>,
}

/// Most tools one session's searches add to its `tools/list` (the oldest go first).
const MAX_FOUND: usize = 64;

/// A toolset served over MCP. Cheap to clone: each connection (each HTTP
/// session) gets a clone.
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Serves exactly `tools`, calling them through `executor`.
    pub fn new(tools: Toolset, executor: Executor) -> Self {
        Self::with_source(Source::Fixed(tools), executor)
    }

    /// Serves the tools of `registry` picked by `selection` (all when `None`),
    /// following the registry as it changes and announcing each change.
    pub fn from_registry(
        registry: Arc<Registry>,
        selection: Option<Selection>,
        executor: Executor,
    ) -> Self {
        Self::with_source(
            Source::Registry {
                registry,
                selection,
            },
            executor,
        )
    }

    /// Serves the toolset `tools` holds now: the host publishes a new `(generation, toolset)`
    /// whenever what it serves changes (for example when the tools an agent may use are
    /// decided again after the registry changed), and each one is announced with
    /// `notifications/tools/list_changed`.
    pub fn from_published(
        tools: tokio::sync::watch::Receiver<(u64, Toolset)>,
        executor: Executor,
    ) -> Self {
        Self::with_source(Source::Published(tools), executor)
    }

    fn with_source(source: Source, executor: Executor) -> Self {
        Self {
            inner: Arc::new(Inner {
                source,
                executor,
                name: "toolbelt".to_owned(),
                instructions: None,
                extensions: Extensions::new(),
                search: None,
                unavailable: None,
                client_approves: true,
            }),
        }
    }

    /// Sets the server name and instructions reported in `initialize` (default `toolbelt`, none).
    #[must_use]
    pub fn with_name(self, name: impl Into<String>, instructions: Option<String>) -> Self {
        self.map_inner(|inner| {
            inner.name = name.into();
            inner.instructions = instructions;
        })
    }

    /// Typed extensions every call's [`ToolContext`] starts with (a workspace
    /// root, a store handle: what the served tools need).
    #[must_use]
    pub fn with_extensions(self, extensions: Extensions) -> Self {
        self.map_inner(|inner| inner.extensions = extensions)
    }

    /// Exports the tools routed. `tools/list` shows the tool `factory` builds (a search over
    /// the tools it is given, such as the router's `search_tools`) and the tools this
    /// session's searches returned; each search that finds new tools sends
    /// `notifications/tools/list_changed`. Every served tool stays callable by name, so a
    /// client that does not re-list can call what a search described. The search tool's
    /// output must list the tools it found as `{"tools": [{"name": ...}, ...]}`. `factory` is
    /// called again when the registry changes; when it fails, every tool is listed.
    #[must_use]
    pub fn with_search(
        self,
        factory: impl Fn(&Toolset) -> Result<ToolHandle, String> + Send + Sync + 'static,
    ) -> Self {
        let search = Arc::new(Search {
            factory: Box::new(factory),
            built: Mutex::new(None),
        });
        self.map_inner(|inner| inner.search = Some(search))
    }

    /// Answers a call to a tool that is not served now with `why(name)` when that says
    /// something (e.g. "MCP server `everything` is down (…)", from
    /// [`McpClient::why_unavailable`](crate::McpClient::why_unavailable) of the client that
    /// imported it) instead of "unknown tool".
    #[must_use]
    pub fn with_unavailable(
        self,
        why: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        let why: Arc<Unavailable> = Arc::new(why);
        self.map_inner(|inner| inner.unavailable = Some(why))
    }

    /// Whether the MCP client that made a call may approve it (default `true`): a call that
    /// needs approval is put to the client through elicitation (or an input-required result),
    /// which counts as a person's decision. A host whose clients are programs rather than a
    /// person's app (a shared HTTP endpoint) turns this off: such calls are then refused with
    /// a message saying how to allow them, since the caller whose call waits must not be the
    /// one who approves it.
    #[must_use]
    pub fn with_client_approval(self, allowed: bool) -> Self {
        self.map_inner(|inner| inner.client_approves = allowed)
    }

    /// The search tool of a routed export, built for the tools served now.
    fn search_tool(&self) -> Option<ToolHandle> {
        let search = self.inner.search.as_ref()?;
        let generation = match &self.inner.source {
            Source::Fixed(_) => 0,
            Source::Registry { registry, .. } => *registry.watch().borrow(),
            Source::Published(tools) => tools.borrow().0,
        };
        let mut built = search.built.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((at, tool)) = built.as_ref()
            && *at == generation
        {
            return Some(tool.clone());
        }
        match (search.factory)(&self.toolset()) {
            Ok(tool) => {
                *built = Some((generation, tool.clone()));
                Some(tool)
            }
            Err(error) => {
                tracing::warn!(%error, "the search tool could not be built; listing every tool");
                None
            }
        }
    }

    fn map_inner(self, change: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = (*self.inner).clone();
        change(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// The tools served now.
    pub fn toolset(&self) -> Toolset {
        match &self.inner.source {
            Source::Fixed(tools) => tools.clone(),
            Source::Published(tools) => tools.borrow().1.clone(),
            Source::Registry {
                registry,
                selection,
            } => match selection {
                None => registry.all(),
                Some(selection) => registry.resolve(selection).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "selection no longer resolves; serving no tools");
                    Toolset::empty()
                }),
            },
        }
    }

    /// The MCP definitions of the tools served now.
    pub fn tool_definitions(&self) -> Vec<McpToolDef> {
        self.toolset().specs().map(tool_definition).collect()
    }

    /// A fresh connection handler (what rmcp serves).
    pub fn handler(&self) -> McpServerHandler {
        McpServerHandler {
            server: self.clone(),
            tasks: Arc::new(Mutex::new(JoinSet::new())),
            found: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Serves over this process's stdin/stdout until the client disconnects.
    ///
    /// # Errors
    /// [`McpError::Transport`] when initialisation or the connection fails.
    pub async fn serve_stdio(&self) -> Result<(), McpError> {
        self.serve_io(rmcp::transport::stdio()).await
    }

    /// Serves over any byte stream pair (a pipe, a socket, a duplex in tests).
    ///
    /// # Errors
    /// [`McpError::Transport`] when initialisation or the connection fails.
    pub async fn serve_io<R, W>(&self, io: (R, W)) -> Result<(), McpError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let running = self
            .handler()
            .serve(io)
            .await
            .map_err(|e| McpError::Transport {
                message: format!("initialisation failed: {e}"),
            })?;
        running.waiting().await.map_err(|e| McpError::Transport {
            message: e.to_string(),
        })?;
        Ok(())
    }

    /// A tower service speaking streamable HTTP, one handler per session.
    ///
    /// `allowed_hosts` guards against DNS rebinding (rmcp's default is the
    /// loopback names); pass the host names the server is reached by.
    pub fn http_service(
        &self,
        allowed_hosts: Option<Vec<String>>,
    ) -> StreamableHttpService<McpServerHandler, LocalSessionManager> {
        let server = self.clone();
        let mut config = StreamableHttpServerConfig::default();
        if let Some(hosts) = allowed_hosts {
            config.allowed_hosts = hosts;
        }
        StreamableHttpService::new(
            move || Ok(server.handler()),
            Arc::new(LocalSessionManager::default()),
            config,
        )
    }

    /// [`Self::http_service`] whose sessions count against `sessions`, shared with other
    /// endpoints.
    pub(crate) fn capped_http_service(
        &self,
        allowed_hosts: Option<Vec<String>>,
        sessions: Arc<crate::sessions::SessionCount>,
    ) -> StreamableHttpService<McpServerHandler, crate::sessions::CappedSessions> {
        let server = self.clone();
        let mut config = StreamableHttpServerConfig::default();
        if let Some(hosts) = allowed_hosts {
            config.allowed_hosts = hosts;
        }
        StreamableHttpService::new(
            move || Ok(server.handler()),
            Arc::new(crate::sessions::CappedSessions::new(sessions)),
            config,
        )
    }

    /// An axum router answering MCP at its root (`nest_service` it under
    /// `/mcp/{agent}`); token checks are the host's middleware. A session `DELETE` is answered
    /// `204 No Content` (rmcp says `202`, which clients such as the Python SDK report as a
    /// failed close).
    pub fn router(&self, allowed_hosts: Option<Vec<String>>) -> axum::Router {
        axum::Router::new()
            .fallback_service(self.http_service(allowed_hosts))
            .layer(axum::middleware::from_fn(deleted_is_no_content))
    }

    async fn call(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        tools: Toolset,
    ) -> CallToolResponse {
        if !tools.contains(&params.name)
            && let Some(why) = self
                .inner
                .unavailable
                .as_ref()
                .and_then(|why| why(&params.name))
        {
            let error = toolbelt_core::ToolError::retryable(why);
            return CallToolResponse::Complete(result_from_outcome(&Err(error)));
        }
        let answered = params
            .input_responses
            .as_ref()
            .and_then(|r| r.get(APPROVAL_KEY))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        let modern = context
            .protocol_version()
            .is_some_and(|v| !v.has_initialize());
        let form = context
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some());
        let asked = Arc::new(AtomicBool::new(false));
        let mode = match answered {
            _ if !self.inner.client_approves => Ask::NotAPerson,
            Some(answer) => Ask::Answered(answer),
            None if form && modern => Ask::InputRequired(asked.clone()),
            None if form => Ask::Elicit(context.peer.clone()),
            None => Ask::Unsupported,
        };
        let args = params.arguments.map_or_else(|| json!({}), Value::Object);
        let call = ToolCall::new(context.id.to_string(), params.name.to_string(), args);
        let approver: Arc<dyn Approver> = Arc::new(McpApprover { mode });
        let mut ctx = ToolContext::new()
            .with_extensions(self.inner.extensions.clone())
            .with_call_id(context.id.to_string())
            .with_cancellation(context.ct.clone())
            .with(approver);
        // The tool's progress goes to the client as `notifications/progress` when it asked
        // for it (a progress token in the request), in order, through one task per call that
        // ends with the call (a tool that kept its context alive would not hold it open).
        let forwarder = context.meta.get_progress_token().map(|token| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Progress>();
            let (done, mut finished) = tokio::sync::oneshot::channel::<()>();
            let peer = context.peer.clone();
            ctx = ctx.clone().with(ProgressSink::new(move |p| {
                let _ = tx.send(p.clone());
            }));
            let task = tokio::spawn(async move {
                let mut closing = false;
                loop {
                    let next = if closing {
                        rx.try_recv().ok()
                    } else {
                        tokio::select! {
                            biased;
                            p = rx.recv() => p,
                            _ = &mut finished => {
                                closing = true;
                                rx.try_recv().ok()
                            }
                        }
                    };
                    let Some(p) = next else { break };
                    let mut note = ProgressNotificationParam::new(token.clone(), p.progress);
                    note.total = p.total;
                    note.message = p.message;
                    if peer.notify_progress(note).await.is_err() {
                        break;
                    }
                }
            });
            (done, task)
        });
        let result = self.inner.executor.execute(&tools, call, &ctx).await;
        if let Some((done, task)) = forwarder {
            // The reports made so far are sent before the result.
            let _ = done.send(());
            let _ = task.await;
        }
        if asked.load(Ordering::SeqCst) {
            // Protocol 2026-07-28 has no server-to-client requests: the
            // question goes back as an input-required result, and the client
            // calls again with the answer.
            let mut requests = InputRequests::new();
            let form = approval_form(&result.call.name, &result.call.arguments);
            requests.insert(
                APPROVAL_KEY.to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(form)),
            );
            return CallToolResponse::InputRequired(InputRequiredResult::new(
                Some(requests),
                Some(APPROVAL_KEY.to_owned()),
            ));
        }
        CallToolResponse::Complete(result_from_outcome(&result.outcome))
    }
}

/// The key of the approval question in input requests and responses.
const APPROVAL_KEY: &str = "toolbelt_approval";

/// The approval form put to the user.
fn approval_form(tool: &str, arguments: &Value) -> ElicitRequestParams {
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"approve": {"type": "boolean", "title": "Run this call?"}},
        "required": ["approve"]
    }))
    .unwrap_or_else(|_| ElicitationSchema::new(Default::default()));
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!("Allow the tool `{tool}` to run with these arguments?\n{arguments}"),
        requested_schema: schema,
    }
}

/// A `DELETE` that rmcp answered `202 Accepted` is answered `204 No Content`: the session is
/// gone, nothing is pending, and clients expect 200 or 204.
async fn deleted_is_no_content(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let delete = request.method() == http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == http::StatusCode::ACCEPTED {
        *response.status_mut() = http::StatusCode::NO_CONTENT;
    }
    response
}

/// What an elicitation answer means for the call.
fn decide(tool: &str, answer: &ElicitResult) -> ApprovalResponse {
    let approve = answer
        .content
        .as_ref()
        .and_then(|c| c.get("approve"))
        .and_then(Value::as_bool);
    if answer.action == ElicitationAction::Accept {
        match approve {
            Some(true) => ApprovalResponse::Approve,
            Some(false) => ApprovalResponse::Reject(format!("the user did not approve `{tool}`")),
            None => ApprovalResponse::Reject(format!(
                "the MCP client accepted the approval form for `{tool}` but sent no answer \
                 (expected `{{\"approve\": true}}` or `false`); the call was not run"
            )),
        }
    } else {
        ApprovalResponse::Reject(format!(
            "the user answered {:?} to the approval of `{tool}`",
            answer.action
        ))
    }
}

/// The rmcp handler of one MCP connection.
#[derive(Clone)]
pub struct McpServerHandler {
    server: McpServer,
    tasks: Arc<Mutex<JoinSet<()>>>,
    /// Tools this session's searches returned (routed export), oldest first.
    found: Arc<Mutex<Vec<String>>>,
}

impl McpServerHandler {
    /// Adds the tools a search returned to this session's list; whether any was new.
    fn add_found(&self, response: &CallToolResponse, tools: &Toolset) -> bool {
        let CallToolResponse::Complete(result) = response else {
            return false;
        };
        if result.is_error == Some(true) {
            return false;
        }
        let names = result
            .structured_content
            .as_ref()
            .and_then(|v| v["tools"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .filter(|name| tools.contains(name));
        let mut found = self.found.lock().unwrap_or_else(PoisonError::into_inner);
        let mut added = false;
        for name in names {
            if !found.iter().any(|f| f == name) {
                found.push(name.to_owned());
                added = true;
            }
        }
        let over = found.len().saturating_sub(MAX_FOUND);
        found.drain(..over);
        added
    }
}

impl Drop for McpServerHandler {
    fn drop(&mut self) {
        // The last clone of a connection's handler stops its watcher.
        if Arc::strong_count(&self.tasks) == 1
            && let Ok(mut tasks) = self.tasks.lock()
        {
            tasks.abort_all();
        }
    }
}

impl ServerHandler for McpServerHandler {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            self.server.inner.name.clone(),
            env!("CARGO_PKG_VERSION"),
        ));
        if let Some(instructions) = &self.server.inner.instructions {
            info = info.with_instructions(instructions.clone());
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Some(search) = self.server.search_tool() else {
            return Ok(ListToolsResult::with_all_items(
                self.server.tool_definitions(),
            ));
        };
        let tools = self.server.toolset();
        let found = self
            .found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let definitions = std::iter::once(tool_definition(search.spec()))
            .chain(
                found
                    .iter()
                    .filter_map(|name| tools.get(name))
                    .map(|tool| tool_definition(tool.spec())),
            )
            .collect();
        Ok(ListToolsResult::with_all_items(definitions))
    }

    fn get_tool(&self, name: &str) -> Option<McpToolDef> {
        if let Some(search) = self.server.search_tool()
            && search.spec().name.as_str() == name
        {
            return Some(tool_definition(search.spec()));
        }
        self.server
            .toolset()
            .get(name)
            .map(|tool| tool_definition(tool.spec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tools = self.server.toolset();
        let search = self
            .server
            .search_tool()
            .filter(|s| s.spec().name.as_str() == request.name);
        let Some(search) = search else {
            return Ok(self.server.call(request, context, tools).await);
        };
        let peer = context.peer.clone();
        let response = self
            .server
            .call(request, context, Toolset::from_tools([search]))
            .await;
        if self.add_found(&response, &tools) && peer.notify_tool_list_changed().await.is_err() {
            tracing::debug!("the MCP client left before hearing that its tool list changed");
        }
        Ok(response)
    }

    /// 2026-07-28 clients hear of list changes on a `subscriptions/listen` stream (there is no
    /// session to send them on): tool list changes are the one kind this server announces.
    fn accepted_subscription_filter(
        &self,
        _requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(SubscriptionFilter::builder().tools_list_changed().build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Source::Registry { registry, .. } = &self.server.inner.source else {
            // A fixed toolset never changes: hold the stream until the client ends it.
            context.cancelled().await;
            return Ok(());
        };
        let mut changes = registry.watch();
        let sink = context.sink().clone();
        let wanted = sink.accepted().tools_list_changed == Some(true);
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        context.cancelled().await;
                        return Ok(());
                    }
                    if wanted && sink.notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer.clone();
        match &self.server.inner.source {
            Source::Fixed(_) => {}
            Source::Registry { registry, .. } => {
                let mut changes = registry.watch();
                if let Ok(mut tasks) = self.tasks.lock() {
                    tasks.spawn(async move {
                        while changes.changed().await.is_ok() {
                            if peer.notify_tool_list_changed().await.is_err() {
                                break;
                            }
                        }
                    });
                }
            }
            Source::Published(tools) => {
                let mut changes = tools.clone();
                if let Ok(mut tasks) = self.tasks.lock() {
                    tasks.spawn(async move {
                        while changes.changed().await.is_ok() {
                            if peer.notify_tool_list_changed().await.is_err() {
                                break;
                            }
                        }
                    });
                }
            }
        }
    }
}

/// How a call's approval is put to the MCP client.
enum Ask {
    /// The client already answered (a retried 2026-07-28 call).
    Answered(ElicitResult),
    /// Ask with `elicitation/create` (sessions with an `initialize` handshake).
    Elicit(Peer<RoleServer>),
    /// Ask with an input-required result (2026-07-28); the flag records that it was needed.
    InputRequired(Arc<AtomicBool>),
    /// The client cannot be asked.
    Unsupported,
    /// The host does not take the calling client's answer as a person's decision.
    NotAPerson,
}

/// Answers the executor's approval requests through MCP.
struct McpApprover {
    mode: Ask,
}

impl Approver for McpApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalResponse> {
        Box::pin(async move {
            let tool = request.spec.name.to_string();
            match &self.mode {
                Ask::Answered(answer) => decide(&tool, answer),
                Ask::InputRequired(asked) => {
                    asked.store(true, Ordering::SeqCst);
                    ApprovalResponse::Reject(format!("`{tool}` waits for the user's approval"))
                }
                Ask::NotAPerson => ApprovalResponse::Reject(format!(
                    "`{tool}` needs approval, and this server does not take approvals from the MCP client that makes the call; the server's operator can allow the tool in the agent's approval policy, or let clients approve (toolbelt serve: `mcp_client_approves = true`; toolbelt mcp serve --http: `--client-approves`)"
                )),
                Ask::Unsupported => ApprovalResponse::Reject(format!(
                    "`{tool}` needs approval and this MCP client cannot be asked (it does not support elicitation); approve it in toolbelt's policy or use a client that supports elicitation"
                )),
                Ask::Elicit(peer) => {
                    let form = approval_form(&tool, &request.call.arguments);
                    match peer.create_elicitation(form).await {
                        Ok(answer) => decide(&tool, &answer),
                        Err(e) => ApprovalResponse::Reject(format!(
                            "could not ask the MCP client to approve `{tool}`: {e}"
                        )),
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn an_accepted_form_without_an_answer_is_refused_saying_what_was_missing() {
        let accepted_empty = ElicitResult::new(ElicitationAction::Accept);
        let ApprovalResponse::Reject(reason) = decide("file_write", &accepted_empty) else {
            panic!("approved without an answer");
        };
        assert_eq!(
            reason,
            "the MCP client accepted the approval form for `file_write` but sent no answer \
             (expected `{\"approve\": true}` or `false`); the call was not run"
        );
    }
}
