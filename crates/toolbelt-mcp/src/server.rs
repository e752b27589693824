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

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, Implementation, InputRequest, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool as McpToolDef,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ErrorData, Peer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::task::JoinSet;
use toolbelt_core::{
    ApprovalRequest, ApprovalResponse, Approver, BoxFuture, Executor, Extensions, Registry,
    Selection, ToolCall, ToolContext, Toolset,
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
}

#[derive(Clone)]
struct Inner {
    source: Source,
    executor: Executor,
    name: String,
    instructions: Option<String>,
    extensions: Extensions,
}

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

    fn with_source(source: Source, executor: Executor) -> Self {
        Self {
            inner: Arc::new(Inner {
                source,
                executor,
                name: "toolbelt".to_owned(),
                instructions: None,
                extensions: Extensions::new(),
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

    /// An axum router answering MCP at its root (`nest_service` it under
    /// `/mcp/{agent}`); token checks are the host's middleware.
    pub fn router(&self, allowed_hosts: Option<Vec<String>>) -> axum::Router {
        axum::Router::new().fallback_service(self.http_service(allowed_hosts))
    }

    async fn call(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> CallToolResponse {
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
            Some(answer) => Ask::Answered(answer),
            None if form && modern => Ask::InputRequired(asked.clone()),
            None if form => Ask::Elicit(context.peer.clone()),
            None => Ask::Unsupported,
        };
        let args = params.arguments.map_or_else(|| json!({}), Value::Object);
        let call = ToolCall::new(context.id.to_string(), params.name.to_string(), args);
        let approver: Arc<dyn Approver> = Arc::new(McpApprover { mode });
        let ctx = ToolContext::new()
            .with_extensions(self.inner.extensions.clone())
            .with_call_id(context.id.to_string())
            .with_cancellation(context.ct.clone())
            .with(approver);
        let tools = self.toolset();
        let result = self.inner.executor.execute(&tools, call, &ctx).await;
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

/// What an elicitation answer means for the call.
fn decide(tool: &str, answer: &ElicitResult) -> ApprovalResponse {
    let approved = answer.action == ElicitationAction::Accept
        && answer
            .content
            .as_ref()
            .and_then(|c| c.get("approve"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
    if approved {
        ApprovalResponse::Approve
    } else if answer.action == ElicitationAction::Accept {
        ApprovalResponse::Reject(format!("the user did not approve `{tool}`"))
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
        Ok(ListToolsResult::with_all_items(
            self.server.tool_definitions(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<McpToolDef> {
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
        Ok(self.server.call(request, context).await)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let Source::Registry { registry, .. } = &self.server.inner.source else {
            return;
        };
        let mut changes = registry.watch();
        let peer = context.peer.clone();
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
