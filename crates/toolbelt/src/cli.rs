//! Argument parsing and dispatch to one module per subcommand.

mod agents;
mod db;
mod import;
mod mcp;
mod mcp_stored;
mod memory;
mod models;
#[cfg(feature = "otel")]
mod otel;
mod remote;
mod route;
mod routines;
mod run;
mod runs;
mod serve;
mod skills;
mod stored_tools;
mod tokens;
mod tools;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;

/// Define LLM tools once, route each request to the few it needs, run them safely.
#[derive(Debug, Parser)]
#[command(name = "toolbelt", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Say more on stderr: where the embedding models were looked for, and informational logs.
    #[arg(long, short = 'v', global = true)]
    verbose: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List or call the tools this binary knows.
    #[command(subcommand)]
    Tools(tools::ToolsCommand),
    /// Route a request (or a batch of queries) to the tools it needs.
    Route(route::RouteArgs),
    /// Run an agent on one input, streaming its answer.
    Run(run::RunArgs),
    /// List and show agent runs; cancel them, approve or reject their calls, answer their questions.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Migrate the database and sync the compiled-in tools into it.
    #[command(subcommand)]
    Db(db::DbCommand),
    /// Create, show, bind and list agents stored in the database.
    #[command(subcommand)]
    Agents(agents::AgentsCommand),
    /// Create, list, pause, resume, remove and run routines (scheduled agent prompts).
    #[command(subcommand)]
    Routines(routines::RoutinesCommand),
    /// List, search and forget what agents remembered.
    #[command(subcommand)]
    Memory(memory::MemoryCommand),
    /// Serve tools over MCP, or list the tools of MCP servers.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// List, show, store or remove skills (folders with a SKILL.md; stored in the database).
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Serve the REST API (tools, routing, agents, runs over SSE, approvals, metrics).
    Serve(serve::ServeArgs),
    /// Create, list and revoke the API tokens of `toolbelt serve`.
    #[command(subcommand)]
    Tokens(tokens::TokensCommand),
}

pub(crate) fn main() -> ExitCode {
    let cli = Cli::parse();
    models::set_verbose(cli.verbose);
    let json_logs = matches!(&cli.command, Command::Serve(args) if args.json_logs());
    let filter = tracing_subscriber::EnvFilter::try_from_env("TOOLBELT_LOG").unwrap_or_else(|_| {
        tracing_subscriber::EnvFilter::new(
            if cli.verbose || matches!(cli.command, Command::Serve(_)) {
                // rmcp logs every notification it receives, whole, at info: a server's log
                // message or progress text may carry what a tool read (a secret included).
                "info,rmcp=warn"
            } else {
                "warn"
            },
        )
    });
    let fmt = if json_logs {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .boxed()
    };
    let registry = tracing_subscriber::registry().with(fmt.with_filter(filter));
    let otel_endpoint = match &cli.command {
        Command::Serve(args) => Some(args.otel_endpoint()),
        _ => None,
    };
    #[cfg(feature = "otel")]
    let otel_guard = match otel_endpoint {
        Some(endpoint) if otel::wanted(endpoint) => match otel::layer(endpoint) {
            Ok((layer, guard)) => {
                registry.with(layer).init();
                Some(guard)
            }
            Err(e) => {
                eprintln!("error: {e:#}");
                return ExitCode::FAILURE;
            }
        },
        _ => {
            registry.init();
            None
        }
    };
    #[cfg(not(feature = "otel"))]
    {
        if let Some(Some(_)) = otel_endpoint {
            eprintln!(
                "error: --otel-endpoint needs a toolbelt built with the `otel` feature (cargo build --features otel)"
            );
            return ExitCode::FAILURE;
        }
        registry.init();
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Tools(cmd) => tools::run(cmd).await,
            Command::Route(args) => route::run(args).await,
            Command::Run(args) => run::run(args).await,
            Command::Runs(cmd) => runs::run(cmd).await,
            Command::Db(cmd) => db::run(cmd).await,
            Command::Agents(cmd) => agents::run(cmd).await,
            Command::Routines(cmd) => routines::run(cmd).await,
            Command::Memory(cmd) => memory::run(cmd).await,
            Command::Mcp(cmd) => mcp::run(cmd).await,
            Command::Skills(cmd) => skills::run(cmd).await,
            Command::Serve(args) => serve::run(args).await,
            Command::Tokens(cmd) => tokens::run(cmd).await,
        }
    });
    // Spans queued for export leave after the server has stopped (graceful shutdown included).
    #[cfg(feature = "otel")]
    if let Some(guard) = otel_guard {
        guard.shutdown();
    }
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_command_line_is_well_formed() {
        // clap checks ids, conflicts and requirements only when a command is parsed; this
        // checks every subcommand at once.
        <super::Cli as clap::CommandFactory>::command().debug_assert();
    }
}
