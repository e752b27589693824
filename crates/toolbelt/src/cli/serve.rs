//! `toolbelt serve`: the REST API on the built-in tools and the configured agents.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use toolbelt_server::{LogFormat, Server, ServerConfig};
// Links the built-in tools so `#[tool]` registrations are discovered.
use toolbelt_tools as _;

/// Arguments of `toolbelt serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (default 127.0.0.1:7878; env TOOLBELT_ADDR).
    #[arg(long)]
    addr: Option<SocketAddr>,
    /// Database URL (default: toolbelt.db in the data directory, $TOOLBELT_DATA, else
    /// $XDG_DATA_HOME/toolbelt, else ~/.local/share/toolbelt; env TOOLBELT_DATABASE_URL).
    /// A SQLite file must lie outside the workspace.
    #[arg(long)]
    database_url: Option<String>,
    /// No authentication: allowed on a loopback address only.
    #[arg(long)]
    dev: bool,
    /// Configuration file (default ./toolbelt.toml when it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log line format.
    #[arg(long, value_enum)]
    log_format: Option<LogFormatArg>,
    /// Directory the file, shell and git tools are confined to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// URL other instances and clients reach this one by (default: http:// and the bound
    /// address; env TOOLBELT_PUBLIC_URL). Stored with each run, so that an approval sent to
    /// another instance on the same database is told where the run lives.
    #[arg(long, value_name = "URL")]
    public_url: Option<String>,
    /// An internal host name HTTP tools may reach although the SSRF guard refuses private and
    /// loopback addresses (repeatable; added to `outbound_hosts` and `TOOLBELT_OUTBOUND_HOSTS`).
    #[arg(long = "outbound-host", value_name = "HOST")]
    outbound_hosts: Vec<String>,
    /// An internal address range HTTP tools may reach (`10.0.4.0/24`; repeatable; added to
    /// `outbound_nets` and `TOOLBELT_OUTBOUND_NETS`).
    #[arg(long = "outbound-net", value_name = "CIDR")]
    outbound_nets: Vec<String>,
    /// A program stored stdio MCP servers may run, matched exactly as written in their
    /// `command` (`node`, `/opt/uv/bin/uvx`; repeatable; added to `mcp_commands` and
    /// `TOOLBELT_MCP_COMMANDS`). Without any, stored MCP servers are HTTP only. They run in
    /// the command sandbox (docs/SECURITY.md).
    #[arg(long = "mcp-command", value_name = "PROGRAM")]
    mcp_commands: Vec<String>,
    /// Export spans over OTLP/HTTP to this base URL (traces go to URL/v1/traces; default:
    /// `OTEL_EXPORTER_OTLP_ENDPOINT`; needs the `otel` feature).
    #[arg(long, value_name = "URL")]
    otel_endpoint: Option<String>,
    /// Route by words only, even when the embedding models are present (by default `/route`
    /// and the agents add MiniLM's ranking for input that is not mostly CJK and
    /// USE-multilingual's for CJK input, each once it has loaded and embedded the tools: a
    /// fraction of a second after start-up with vectors and weights cached, a few seconds
    /// the first time; until then they route by words).
    #[arg(long, env = "TOOLBELT_NO_EMBEDDER", value_parser = clap::builder::FalseyValueParser::new())]
    no_embedder: bool,
    /// Learning from use (opt-in): the router also indexes each tool with the requests of
    /// past runs whose calls of it succeeded, read from this server's run log at start-up
    /// and every 10 minutes (`learn_refresh_secs`; env TOOLBELT_LEARN_FROM_RUNS). See
    /// docs/ROUTING.md, "Learning from use".
    #[arg(long)]
    learn_from_runs: bool,
    /// Age at which a learned request counts half, in days (default 30).
    #[arg(long, value_name = "DAYS")]
    learn_half_life_days: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormatArg {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl ServeArgs {
    /// `--otel-endpoint`, when given.
    pub(crate) fn otel_endpoint(&self) -> Option<&str> {
        self.otel_endpoint.as_deref()
    }

    /// Whether logs must be JSON (flag, or `TOOLBELT_LOG_FORMAT=json`).
    pub(crate) fn json_logs(&self) -> bool {
        match self.log_format {
            Some(f) => f == LogFormatArg::Json,
            None => std::env::var("TOOLBELT_LOG_FORMAT").is_ok_and(|v| v == "json"),
        }
    }
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let mut config =
        ServerConfig::load(args.config.as_deref()).context("reading the configuration")?;
    if let Some(addr) = args.addr {
        config.addr = addr;
    }
    if let Some(url) = args.database_url {
        config.database_url = url;
    }
    if args.dev {
        config.dev = true;
    }
    if let Some(url) = args.public_url {
        config.public_url = Some(url);
    }
    if let Some(dir) = args.workspace {
        config.workspace = dir;
    }
    if args.learn_from_runs {
        config.learn_from_runs = true;
    }
    if let Some(days) = args.learn_half_life_days {
        config.learn_half_life_days = days;
    }
    config.outbound_hosts.extend(args.outbound_hosts);
    config.outbound_nets.extend(args.outbound_nets);
    config.mcp_commands.extend(args.mcp_commands);
    if let Some(f) = args.log_format {
        config.log_format = match f {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        };
    }
    // The database, the secrets file and a configuration holding clear-text tokens stay out
    // of the workspace: the file and shell tools (and so a model) could read them there.
    let mut kept = toolbelt_host::paths::KeptData::new()
        .database(config.database_url.clone())
        .secrets_file_from_env();
    let config_file = args
        .config
        .clone()
        .unwrap_or_else(|| PathBuf::from("toolbelt.toml"));
    if config.tokens.iter().any(|t| t.token.is_some()) && config_file.exists() {
        kept = kept.file(
            "the configuration file (it holds tokens in clear)",
            config_file,
        );
    }
    kept.check_outside(&config.workspace)
        .context("refusing to start")?;
    toolbelt_host::paths::prepare_database(&config.database_url)?;
    let compiled = toolbelt_core::discovered_tools().context("loading the built-in tools")?;
    let db = toolbelt_server::database::open(&config.database_url, compiled, "toolbelt serve")
        .await
        .with_context(|| format!("opening the database {}", config.database_url))?;
    if db.interrupted > 0 {
        tracing::warn!(
            runs = db.interrupted,
            "runs left unfinished by a stopped server are marked interrupted"
        );
    }
    if let Some(embedder) = super::models::memory_embedder() {
        db.live.store().memory().set_embedder(embedder);
    }
    // Which of the sandbox's guards hold on this machine, said once at start-up (the probe
    // logs its summary: a warning when commands cannot be confined).
    let _ = toolbelt_tools::sandbox::probe();
    let workspace =
        std::fs::canonicalize(&config.workspace).unwrap_or_else(|_| config.workspace.clone());
    use toolbelt_tools::sandbox::{CommandUser, SandboxMode, command_user};
    match command_user(&workspace, SandboxMode::WorkspaceWrite) {
        CommandUser::Owner { uid, gid } => tracing::info!(
            uid,
            gid,
            "sandbox: commands run as the workspace's owner, not as root"
        ),
        CommandUser::RootWithoutCapabilities => tracing::warn!(
            "sandbox: the workspace belongs to root, so commands run as uid 0 with no \
             capability; give the workspace to a user (chown) for commands to run as that user"
        ),
        _ => {}
    }
    // The same server the library starts (`Server::builder`): the host's agent factory
    // builds every agent (stored or configured); the routine loop, learning and the stored
    // MCP servers run until it shuts down.
    let builder = Server::builder(config).database(db);
    // The router's encoder slots are filled once each encoder has loaded and embedded the
    // tools (by words until then): MiniLM for input that is not mostly CJK, USE-multilingual
    // for CJK input (docs/ROUTING.md, "The default router in every entry point").
    let (builder, router_line) = with_encoders(builder, args.no_embedder);
    let server = builder.start().await?;
    let state = server.state();
    let config = state.config();
    let addr = server.addr();
    tracing::info!(%addr, tools = state.registry().len(), dev = config.dev, ready_ms = started.elapsed().as_millis() as u64, "toolbelt serve ready");
    println!(
        "toolbelt serving on http://{addr} ({} tools)",
        state.registry().len()
    );
    let auth = if config.dev {
        String::new()
    } else {
        " -H \"Authorization: Bearer $TOOLBELT_TOKEN\"".to_owned()
    };
    println!(
        "try: curl -s{auth} -H 'content-type: application/json' -d '{{\"input\": \"list the files here\"}}' http://{addr}/api/v1/route"
    );
    println!("docs: http://{addr}/api/v1/docs/");
    println!("{router_line}");
    if !config.outbound_hosts.is_empty() || !config.outbound_nets.is_empty() {
        println!(
            "HTTP tools may reach these internal hosts: {}",
            config
                .outbound_hosts
                .iter()
                .chain(&config.outbound_nets)
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !config.mcp_commands.is_empty() {
        println!(
            "stored stdio MCP servers may run (in the command sandbox): {}",
            config.mcp_commands.join(", ")
        );
    }
    server.run_until(shutdown_signal()).await?;
    Ok(ExitCode::SUCCESS)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// Gives the server the encoders found in the default places (none with `no_embedder`) and
/// the start-up line that says how it routes.
fn with_encoders(
    mut builder: toolbelt_server::ServerBuilder,
    no_embedder: bool,
) -> (toolbelt_server::ServerBuilder, String) {
    use toolbelt_host::EncoderRole;
    if no_embedder {
        return (
            builder,
            "router: by words (BM25 + keyword groups): --no-embedder".into(),
        );
    }
    let loads = super::models::encoder_loads(false);
    let has = |role| loads.iter().any(|(r, _)| *r == role);
    let mut line =
        super::models::router_line(has(EncoderRole::English), has(EncoderRole::Multilingual));
    if !loads.is_empty() {
        line.push_str(" (by words until the models have loaded)");
    }
    for (role, load) in loads {
        builder = builder.encoder(role, load);
    }
    (builder, line)
}
