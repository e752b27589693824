//! `toolbelt mcp`: serve a toolset as an MCP server, or list what MCP servers offer.
//!
//! `toolbelt mcp serve --groups file_ops` speaks MCP on stdin/stdout (what
//! Claude Desktop, Cursor and other clients start); `--http 127.0.0.1:8931`
//! serves streamable HTTP at `/mcp` instead. `toolbelt mcp tools --mcp-config
//! servers.json` connects to the servers of an `mcpServers` file and lists
//! the tools they would add.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;
use toolbelt_core::{ApprovalPolicy, Effect, Executor, Registry, Selection};
use toolbelt_mcp::{McpClient, McpConfig, McpServer};
use toolbelt_router::{HybridRouter, KeywordRouter, LexicalRouter, SearchTools};
use toolbelt_server::{ConfigToken, Scope, TokenBook};
use toolbelt_tools::{BuiltinConfig, Memory, MemoryScope, Routines, Workspace};

/// How long `toolbelt mcp tools` and `--mcp-config` wait for each server to start.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Subcommands of `toolbelt mcp`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum McpCommand {
    /// Serve tools over MCP (stdio by default, streamable HTTP with --http).
    Serve(ServeArgs),
    /// Connect to the servers of an `mcpServers` file and list their tools.
    Tools(ToolsArgs),
    /// Store an MCP server in the database; `toolbelt serve` connects it
    /// (`toolbelt mcp add fs -- npx -y @modelcontextprotocol/server-filesystem /data`, or --url).
    Add(super::mcp_stored::AddArgs),
    /// Store every server of an `mcpServers` file in the database.
    Import(super::mcp_stored::ImportArgs),
    /// List the stored MCP servers (--check connects to each and counts its tools).
    #[command(visible_alias = "list")]
    Ls(super::mcp_stored::LsArgs),
    /// Remove a stored MCP server.
    Rm(super::mcp_stored::NameArgs),
    /// Connect a stored MCP server again.
    Enable(super::mcp_stored::NameArgs),
    /// Keep a stored MCP server but do not connect it (its tools are unavailable).
    Disable(super::mcp_stored::NameArgs),
}

/// Arguments of `toolbelt mcp serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Tool groups or tools to serve, e.g. "file_ops,web,-web_fetch" (default: all).
    #[arg(long, value_name = "SELECTION")]
    groups: Option<String>,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Workspace root the file, shell and git tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Also serve the tools of the MCP servers in this `mcpServers` JSON file.
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// Run calls that need approval without asking (otherwise the client is asked through
    /// elicitation over stdio, and refused over --http unless --client-approves).
    #[arg(long, short = 'y')]
    yes: bool,
    /// With --http: let the client that makes a call approve it through elicitation. Off by
    /// default: over HTTP the caller is often a program, and the caller whose call waits must
    /// not be the one who approves it. Over stdio the client is the app of the person who
    /// started the server, and is always asked.
    #[arg(long, requires = "http")]
    client_approves: bool,
    /// Export the tools routed: the client first sees only `search_tools`, and each search adds
    /// the tools it found to the session's list (for catalogs too large to list whole).
    #[arg(long)]
    routed: bool,
    /// With --routed: tools one search returns when the client gives no `limit` (1-20).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u8).range(1..=20))]
    search_limit: u8,
    /// With --http: accept `Authorization: Bearer <token>` where the token is this
    /// environment variable's value.
    #[arg(long, value_name = "VAR", requires = "http")]
    token_env: Option<String>,
    /// Keep the memory (`memory_*` tools) and the routines (`routine` tool) in this database,
    /// as the agent `--agent` (`toolbelt serve` on the same database runs the routines); with
    /// --http, also accept its unrevoked tokens (`toolbelt tokens create ... --scope run`).
    /// Without it those tools are not served.
    #[arg(long, value_name = "URL")]
    database_url: Option<String>,
    /// With --database-url: the agent served. A stored agent (`toolbelt agents create`) is
    /// served as `toolbelt serve` serves it at /mcp/NAME: its selection, bindings, pinned
    /// versions, availability rules and approval policy, its tools followed as the database
    /// changes. Its memory is the one the client reads and writes, and its routines run it.
    /// `default` with no stored agent of that name serves the built-in tools (--groups applies).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "default",
        requires = "database_url"
    )]
    agent: String,
    /// With --http: another host name clients reach the server by (the `Host` check refuses
    /// names not listed; loopback names and the bound address always pass). Repeatable.
    #[arg(long = "allow-host", value_name = "NAME", requires = "http")]
    allow_hosts: Vec<String>,
}

/// Arguments of `toolbelt mcp tools`.
#[derive(Debug, clap::Args)]
pub(crate) struct ToolsArgs {
    /// The `mcpServers` JSON file (Claude Desktop / Cursor shape).
    #[arg(long, value_name = "FILE")]
    mcp_config: PathBuf,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn run(cmd: McpCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::Serve(args) => serve(args).await,
        McpCommand::Tools(args) => tools(args).await,
        McpCommand::Add(args) => super::mcp_stored::add(args).await,
        McpCommand::Import(args) => super::mcp_stored::import(args).await,
        McpCommand::Ls(args) => super::mcp_stored::ls(args).await,
        McpCommand::Rm(args) => super::mcp_stored::rm(args).await,
        McpCommand::Enable(args) => super::mcp_stored::set_enabled(args, true).await,
        McpCommand::Disable(args) => super::mcp_stored::set_enabled(args, false).await,
    }
}

/// Starts a client for every enabled server of `path`, keeping `registry` in
/// step, and waits for each (a server that does not start is reported and
/// retried in the background). Stdio servers run in the command sandbox over `workspace`,
/// as each entry's `sandbox` key says (ADR 0062).
pub(crate) async fn import(
    registry: &Arc<Registry>,
    path: &Path,
    workspace: &Path,
) -> anyhow::Result<Vec<McpClient>> {
    let config = McpConfig::from_file(path)?;
    let mut clients = Vec::new();
    for (name, server) in config.enabled() {
        let spawner =
            toolbelt_host::mcp_servers::config_spawner(workspace, server.sandbox.as_ref())
                .map_err(|e| anyhow::anyhow!("{}: mcpServers.{name}.{e}", path.display()))?;
        let client = McpClient::builder(name.clone(), server.clone())
            .registry(registry.clone())
            .spawner(spawner)
            .start()?;
        clients.push(client);
    }
    for client in &clients {
        if let Err(e) = client.ready(READY_TIMEOUT).await {
            eprintln!("warning: {e}; its tools are unavailable until it starts");
        }
    }
    Ok(clients)
}

/// The workspace of `mcp serve`: `--root`, else the current directory.
fn workspace_root(args: &ServeArgs) -> PathBuf {
    args.root.clone().unwrap_or_else(|| PathBuf::from("."))
}

/// The built-in tools' configuration of `mcp serve`: the workspace and, with a database, the
/// memory of `agent` and routines that run it.
fn builtins(
    workspace: Workspace,
    store: Option<&toolbelt_store::Store>,
    agent: &str,
) -> BuiltinConfig {
    let config = BuiltinConfig::new(workspace);
    match store {
        Some(store) => config
            .with_memory(Memory::new(
                Arc::new(store.memory()),
                MemoryScope::agent(agent),
            ))
            .with_routines(Routines::new(Arc::new(store.routines()), agent)),
        None => config,
    }
}

/// The tools of [`NEEDS_AN_AGENT_HOST`] a database provides (`--database-url`).
const FROM_THE_DATABASE: &[&str] = &[
    "memory_store",
    "memory_recall",
    "memory_forget",
    "memory_list",
    "routine",
];

/// Built-in tools that need what only an agent's host provides, and what that is: `toolbelt
/// mcp serve` does not offer them, except memory and routines with `--database-url`.
const NEEDS_AN_AGENT_HOST: &[(&str, &str)] = &[
    ("self_info", "a running agent to describe"),
    ("config", "a server configuration to show"),
    ("ask_human", "a person to put the question to"),
    ("memory_store", "an agent's memory"),
    ("memory_recall", "an agent's memory"),
    ("memory_forget", "an agent's memory"),
    ("memory_list", "an agent's memory"),
    ("routine", "a scheduler to run routines"),
];

/// Takes the tools `toolbelt mcp serve` cannot run out of `registry` (memory and routines stay
/// when `with_store`); an explicit `--groups` that names one of them is refused, saying why.
fn hide_host_only_tools(
    registry: &Registry,
    groups: Option<&str>,
    with_store: bool,
) -> anyhow::Result<()> {
    let hidden = |name: &str| !(with_store && FROM_THE_DATABASE.contains(&name));
    if let Some(groups) = groups.filter(|g| g.trim() != "*") {
        let chosen = registry
            .resolve(&Selection::parse(groups).context("--groups")?)
            .context("--groups")?;
        let refused: Vec<String> = NEEDS_AN_AGENT_HOST
            .iter()
            .filter(|(name, _)| hidden(name) && chosen.contains(name))
            .map(|(name, what)| format!("`{name}` needs {what}"))
            .collect();
        if !refused.is_empty() {
            anyhow::bail!(
                "`toolbelt mcp serve` cannot serve these tools: {}; agents get them from \
                 `toolbelt serve` or `toolbelt run` (memory and routines: give --database-url). \
                 Leave them out of --groups",
                refused.join(", ")
            );
        }
    }
    let present: Vec<&str> = NEEDS_AN_AGENT_HOST
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| hidden(name) && registry.contains(name))
        .collect();
    registry
        .remove_tools(present)
        .context("hiding the tools that need an agent's host")?;
    Ok(())
}

async fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let store = match &args.database_url {
        Some(url) => {
            toolbelt_host::paths::prepare_database(url)?;
            let store = toolbelt_store::Store::open(url).await.with_context(|| {
                format!(
                    "--database-url: could not open {}",
                    toolbelt_store::redacted_url(url)
                )
            })?;
            // Recall ranks by meaning too when the multilingual model is found, as elsewhere.
            if let Some(embedder) = super::models::memory_embedder() {
                store.memory().set_embedder(embedder);
            }
            Some(store)
        }
        None => None,
    };
    let workspace = match &args.root {
        Some(root) => Workspace::new(root),
        None => Workspace::current_dir(),
    }
    .context("opening the workspace root")?;
    // The file tools never touch the database or the secrets file, should they lie here.
    let mut kept = toolbelt_host::paths::KeptData::new().secrets_file_from_env();
    if let Some(url) = &args.database_url {
        kept = kept.database(url.clone());
    }
    let workspace = workspace.with_reserved(kept.reserved_paths());
    let extensions = builtins(workspace, store.as_ref(), &args.agent).extensions();
    // A stored agent named by --agent: its tools as every entry point decides them.
    let stored = match &store {
        Some(store) => stored_agent(store, &args).await?,
        None => None,
    };
    let (server, clients) = match stored {
        Some(agent) => {
            let StoredAgent {
                factory,
                record,
                tools,
                report,
                clients,
                watch,
            } = agent;
            let published = factory.follow_tools(record.name.clone(), tools, &report);
            let policy = if args.yes {
                ApprovalPolicy::allow_all()
            } else {
                record.options.approval.clone().unwrap_or_default()
            };
            let description = (!record.description.is_empty()).then(|| record.description.clone());
            let server =
                McpServer::from_published(published, Executor::builder().policy(policy).build())
                    .with_name(format!("toolbelt:{}", record.name), description);
            // Held while serving: the database's changes are followed, the factory kept.
            let keep = (factory, watch);
            (server, (clients, Some(keep)))
        }
        None => {
            let registry = Arc::new(Registry::discovered().context("loading the built-in tools")?);
            let clients = match &args.mcp_config {
                Some(path) => import(&registry, path, &workspace_root(&args)).await?,
                None => Vec::new(),
            };
            // After the import, so that --groups may name the imported servers' tags.
            hide_host_only_tools(&registry, args.groups.as_deref(), store.is_some())?;
            let selection = args
                .groups
                .as_deref()
                .map(Selection::parse)
                .transpose()
                .context("--groups")?;
            if let Some(selection) = &selection {
                registry.resolve(selection).context("--groups")?;
            }
            let policy = if args.yes {
                ApprovalPolicy::allow_all()
            } else {
                ApprovalPolicy::new()
            };
            let server = McpServer::from_registry(
                registry,
                selection,
                Executor::builder().policy(policy).build(),
            );
            (server, (clients, None))
        }
    };
    let (clients, _kept_alive) = clients;
    let server = server
        .with_extensions(extensions)
        .with_client_approval(args.http.is_none() || args.client_approves)
        .with_unavailable(move |name| {
            // A tool of an imported server that went down: say so rather than "unknown tool".
            clients
                .iter()
                .find(|client| client.knows_tool(name))
                .and_then(McpClient::why_unavailable)
        });
    let server = if args.routed {
        let router = Arc::new(search_router().await?);
        let limit = usize::from(args.search_limit);
        server.with_search(move |tools| {
            SearchTools::hybrid(router.clone(), tools.clone())
                .with_default_limit(limit)
                .into_handle()
                .map_err(|e| e.to_string())
        })
    } else {
        server
    };
    match &args.http {
        None => server.serve_stdio().await?,
        Some(addr) => {
            let tokens = http_tokens(&args, store.as_ref()).await?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            let local = listener.local_addr()?;
            if !local.ip().is_loopback() && !tokens.has_any_token().await? {
                anyhow::bail!(
                    "refusing to serve MCP on {local} without authentication: give \
                     --token-env VAR or --database-url with a stored token, or listen on 127.0.0.1"
                );
            }
            let mut hosts = vec![
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
                "::1".to_owned(),
                local.ip().to_string(),
                local.to_string(),
            ];
            hosts.extend(args.allow_hosts.iter().cloned());
            let mut app = axum::Router::new().nest_service("/mcp", server.router(Some(hosts)));
            if tokens.has_any_token().await? {
                app = app.layer(axum::middleware::from_fn_with_state(
                    (tokens, args.agent.clone()),
                    require_run,
                ));
            }
            eprintln!("serving MCP (streamable HTTP) at http://{local}/mcp");
            // The server's loop: it closes connections that never finish their headers.
            toolbelt_server::serve_router(listener, app, Some(Duration::from_secs(10)), async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// A stored agent `mcp serve --agent` serves, with what keeps its tools current.
struct StoredAgent {
    factory: toolbelt_host::AgentFactory,
    record: toolbelt_store::Stored<toolbelt_store::AgentSpec>,
    tools: toolbelt_core::Toolset,
    report: Vec<toolbelt_host::ToolReport>,
    clients: Vec<McpClient>,
    watch: toolbelt_store::WatchHandle,
}

/// The agent `--agent` names in the database, built as the server builds it (selection,
/// bindings, pins, availability), its stored tools loaded and followed; `None` for the
/// built-in `default` when no agent of that name is stored.
///
/// # Errors
/// No stored agent of another name (listing the known ones); `--groups` beside a stored agent
/// (its selection decides); the database's errors.
async fn stored_agent(
    store: &toolbelt_store::Store,
    args: &ServeArgs,
) -> anyhow::Result<Option<StoredAgent>> {
    let record = match store.agents().get(&args.agent).await {
        Ok(record) => record,
        Err(toolbelt_store::StoreError::NotFound { .. }) if args.agent == "default" => {
            return Ok(None);
        }
        Err(toolbelt_store::StoreError::NotFound { .. }) => {
            let known: Vec<String> = store
                .agents()
                .list()
                .await?
                .into_iter()
                .map(|a| a.value.name)
                .collect();
            anyhow::bail!(
                "--agent {}: no agent of that name in the database (stored: {})",
                args.agent,
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            );
        }
        Err(e) => return Err(e).context("reading the stored agent"),
    };
    if args.groups.is_some() {
        anyhow::bail!(
            "--groups does not apply to the stored agent `{}`: its selection and bindings \
             decide its tools (`toolbelt agents show {}`)",
            args.agent,
            args.agent
        );
    }
    let compiled = toolbelt_core::discovered_tools().context("loading the built-in tools")?;
    let db = toolbelt_host::load(
        store.clone(),
        compiled,
        "toolbelt mcp serve",
        toolbelt_tools::declarative::Secrets::from_env(),
    )
    .await
    .context("loading the stored tools")?;
    let registry = db.live.shared_registry();
    let clients = match &args.mcp_config {
        Some(path) => import(&registry, path, &workspace_root(args)).await?,
        None => Vec::new(),
    };
    hide_host_only_tools(&registry, None, true)?;
    let factory = db.agent_factory().build();
    let (tools, report) = factory.tools(&record).await?;
    let watch = db.watch().context("following the database")?;
    Ok(Some(StoredAgent {
        factory,
        record,
        tools,
        report,
        clients,
        watch,
    }))
}

/// The tokens `--http` accepts: `--token-env`'s value and `--database-url`'s stored tokens.
async fn http_tokens(
    args: &ServeArgs,
    store: Option<&toolbelt_store::Store>,
) -> anyhow::Result<TokenBook> {
    let mut configured = Vec::new();
    if let Some(var) = &args.token_env {
        let token = std::env::var(var)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .with_context(|| format!("--token-env {var}: the variable is unset or empty"))?;
        configured.push(ConfigToken {
            name: var.clone(),
            sha256: None,
            token: Some(token.trim().to_owned()),
            scopes: vec![Scope::Run],
            agents: None,
        });
    }
    let mut book = TokenBook::from_config(&configured).context("--token-env")?;
    if let Some(store) = store {
        book = book.with_store(store.clone());
    }
    Ok(book)
}

/// Middleware of `--http` with tokens: the request needs a token with the `run` scope that may
/// act on the agent served (`--agent`).
async fn require_run(
    axum::extract::State((tokens, agent)): axum::extract::State<(TokenBook, String)>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let header = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    match tokens.authenticate(header).await {
        Ok(who) if !who.access.allows(&agent) => (
            axum::http::StatusCode::FORBIDDEN,
            format!(
                "the token `{}` may not act on agent `{agent}`, the one this server serves",
                who.name
            ),
        )
            .into_response(),
        Ok(who) if who.grants(Scope::Run) => next.run(request).await,
        Ok(who) => (
            axum::http::StatusCode::FORBIDDEN,
            format!("the token `{}` lacks the `run` scope", who.name),
        )
            .into_response(),
        Err(problem) => {
            let mut response = problem.into_response();
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
            response
        }
    }
}

/// The router behind `--routed`'s `search_tools`: words, concepts and keyword groups, plus
/// MiniLM (non-CJK input) and the multilingual encoder (CJK input) when their models are in a
/// default place (`scripts/fetch-model.sh`), loaded as `toolbelt serve` loads them.
async fn search_router() -> anyhow::Result<HybridRouter> {
    let mut router =
        HybridRouter::new(LexicalRouter::default()).with_keyword(KeywordRouter::builtin());
    for (role, load) in super::models::encoder_loads(false) {
        let ranking = load.await.map_err(anyhow::Error::from_boxed)?;
        router = match role {
            toolbelt_host::EncoderRole::English => router.with_embedding(ranking),
            toolbelt_host::EncoderRole::Multilingual => router.with_multilingual_embedding(ranking),
        };
    }
    Ok(router)
}

async fn tools(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    let registry = Arc::new(Registry::new());
    let clients = import(&registry, &args.mcp_config, Path::new(".")).await?;
    let mut out = std::io::stdout().lock();
    use std::io::Write;
    if args.json {
        let servers: Vec<_> = clients
            .iter()
            .map(|c| {
                json!({
                    "server": c.name(),
                    "status": c.status(),
                    "tools": c.tools().iter().map(|t| t.spec().clone()).collect::<Vec<_>>(),
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&servers)?)?;
    } else {
        for client in &clients {
            writeln!(out, "{} ({})", client.name(), client.status())?;
            for tool in client.tools() {
                let spec = tool.spec();
                let effect = match spec.policy.effect {
                    Effect::ReadOnly => "read-only",
                    Effect::Mutating => "mutating",
                };
                let approval = if spec.policy.needs_approval {
                    ", asks"
                } else {
                    ""
                };
                let line = spec.description.lines().next().unwrap_or_default();
                writeln!(out, "  {} [{effect}{approval}] {line}", spec.name)?;
            }
        }
    }
    let all_up = clients.iter().all(|c| c.status().is_up());
    Ok(if all_up {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
