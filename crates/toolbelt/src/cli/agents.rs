//! `toolbelt agents create|show|bind|unbind|ls|rm`: agents stored as data.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolbelt::stored::environment;
use toolbelt_store::{AgentDraft, AgentRecord, Binding, Store, availability, split_pin};
use toolbelt_tools::declarative::Secrets;

use super::db::DbArgs;

/// Subcommands of `toolbelt agents`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum AgentsCommand {
    /// Store a new agent, from flags or a YAML/JSON file.
    Create(CreateArgs),
    /// Print an agent and the tools it gets, with the reason for each tool it does not.
    Show(ShowArgs),
    /// Bind a tool (`name` or `name@version`) to an agent.
    Bind(BindArgs),
    /// Remove a tool binding from an agent.
    Unbind(BindArgs),
    /// List stored agents.
    Ls(LsArgs),
    /// Delete an agent and its bindings.
    Rm(RmArgs),
}

/// `agents create`.
#[derive(Debug, clap::Args)]
pub(crate) struct CreateArgs {
    /// The agent's name (or give `-f`).
    name: Option<String>,
    /// A YAML or JSON agent definition.
    #[arg(
        short = 'f',
        long = "file",
        value_name = "FILE",
        conflicts_with = "name"
    )]
    file: Option<PathBuf>,
    /// The agent's kind.
    #[arg(long, default_value = "assistant")]
    kind: String,
    /// Selection expression over groups and tools, e.g. `web,file_read@2,-shell`.
    #[arg(long, default_value = "")]
    selection: String,
    /// A tool to bind, `name` or `name@version` (repeatable).
    #[arg(long = "tool", value_name = "TOOL")]
    tools: Vec<String>,
    /// The system prompt.
    #[arg(long)]
    system_prompt: Option<String>,
    /// Provider name.
    #[arg(long)]
    provider: Option<String>,
    /// Model name.
    #[arg(long)]
    model: Option<String>,
    #[command(flatten)]
    db: DbArgs,
}

/// `agents show`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The agent's name.
    name: String,
    /// A secrets file (`NAME=value` lines) besides the environment, for tool conditions.
    #[arg(long, value_name = "FILE")]
    secrets_file: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArgs,
}

/// `agents bind` / `agents unbind`.
#[derive(Debug, clap::Args)]
pub(crate) struct BindArgs {
    /// The agent's name.
    agent: String,
    /// The tool, `name` or `name@version` (bind only).
    tool: String,
    /// The revision you read; refused if the agent changed since.
    #[arg(long)]
    revision: Option<i64>,
    #[command(flatten)]
    db: DbArgs,
}

/// `agents ls`.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    db: DbArgs,
}

/// `agents rm`.
#[derive(Debug, clap::Args)]
pub(crate) struct RmArgs {
    /// The agent's name.
    name: String,
    /// The revision you read; refused if the agent changed since.
    #[arg(long)]
    revision: Option<i64>,
    #[command(flatten)]
    db: DbArgs,
}

fn who() -> String {
    std::env::var("USER").unwrap_or_else(|_| "cli".to_owned())
}

pub(crate) async fn run(cmd: AgentsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AgentsCommand::Create(args) => {
            let draft = create_draft(&args)?;
            let store = args.db.open().await?;
            let agent = store.create_agent(&draft).await?;
            println!(
                "created agent {} (revision {}, {} bound tool(s))",
                agent.name,
                agent.revision,
                agent.tools.len()
            );
        }
        AgentsCommand::Show(args) => return show(args).await,
        AgentsCommand::Bind(args) => {
            let (tool, version) =
                split_pin(&args.tool).map_err(|reason| anyhow::anyhow!(reason))?;
            let mut binding = Binding::new(tool);
            binding.pinned_version = version;
            let store = args.db.open().await?;
            let agent = store
                .bind_tool(&args.agent, &binding, args.revision, &who())
                .await?;
            println!(
                "bound {} to {} (revision {})",
                args.tool, agent.name, agent.revision
            );
        }
        AgentsCommand::Unbind(args) => {
            let store = args.db.open().await?;
            let agent = store
                .unbind_tool(&args.agent, &args.tool, args.revision, &who())
                .await?;
            println!(
                "unbound {} from {} (revision {})",
                args.tool, agent.name, agent.revision
            );
        }
        AgentsCommand::Ls(args) => {
            let store = args.db.open().await?;
            let agents = store.list_agents().await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&agents)?);
            } else if agents.is_empty() {
                println!("no agents stored (`toolbelt agents create NAME` makes one)");
            } else {
                for agent in agents {
                    println!(
                        "{:<24} {:<12} selection `{}`, {} bound tool(s)",
                        agent.name,
                        agent.kind,
                        agent.selection,
                        agent.tools.len()
                    );
                }
            }
        }
        AgentsCommand::Rm(args) => {
            let store = args.db.open().await?;
            store.delete_agent(&args.name, args.revision).await?;
            println!("deleted agent {}", args.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn create_draft(args: &CreateArgs) -> anyhow::Result<AgentDraft> {
    let mut draft = if let Some(path) = &args.file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("could not read {}", path.display()))?;
        toolbelt::stored::from_yaml::<AgentDraft>(&text).map_err(|reason| {
            anyhow::anyhow!("invalid agent definition {}: {reason}", path.display())
        })?
    } else {
        let Some(name) = &args.name else {
            anyhow::bail!("give the agent's name or a definition file with -f");
        };
        let mut draft = AgentDraft::new(name.clone()).with_selection(args.selection.clone());
        draft.kind.clone_from(&args.kind);
        draft.system_prompt.clone_from(&args.system_prompt);
        draft.provider.clone_from(&args.provider);
        draft.model.clone_from(&args.model);
        for tool in &args.tools {
            let (name, version) = split_pin(tool).map_err(|reason| anyhow::anyhow!(reason))?;
            let mut binding = Binding::new(name);
            binding.pinned_version = version;
            draft = draft.with_tool(binding);
        }
        draft
    };
    draft.changed_by = who();
    Ok(draft)
}

#[derive(serde::Serialize)]
struct ToolLine {
    name: String,
    version: i64,
    source: &'static str,
    available: bool,
    reasons: Vec<String>,
}

async fn tool_lines(
    store: &Store,
    agent: &AgentRecord,
    secrets: &Secrets,
) -> anyhow::Result<Vec<ToolLine>> {
    let tools = store.list_tools().await?;
    let tags: BTreeSet<String> = tools.iter().flat_map(|t| t.spec.tags.clone()).collect();
    let mut lines = Vec::new();
    for tool in &tools {
        let env = environment(store, secrets, &tool.availability.conditions).await?;
        let verdict = availability(agent, tool, &tags, &env);
        let selected = !verdict
            .reasons
            .iter()
            .any(|r| matches!(r, toolbelt_store::Reason::NotSelected { .. }));
        if selected {
            lines.push(ToolLine {
                name: tool.name.clone(),
                version: verdict.version,
                source: tool.source.as_str(),
                available: verdict.is_available(),
                reasons: verdict.reasons.iter().map(ToString::to_string).collect(),
            });
        }
    }
    Ok(lines)
}

async fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open().await?;
    let agent = store.get_agent(&args.name).await?;
    let secrets = match &args.secrets_file {
        Some(path) => Secrets::from_env_and_file(path)
            .with_context(|| format!("could not read the secrets file {}", path.display()))?,
        None => Secrets::from_env(),
    };
    let lines = tool_lines(&store, &agent, &secrets).await?;
    if args.json {
        let doc = serde_json::json!({"agent": agent, "tools": lines});
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "agent {} (kind {}, revision {})",
        agent.name, agent.kind, agent.revision
    );
    if !agent.labels.is_empty() {
        println!("  labels: {}", agent.labels.join(", "));
    }
    if let Some(model) = &agent.model {
        println!(
            "  model: {}{model}",
            agent
                .provider
                .as_deref()
                .map(|p| format!("{p}/"))
                .unwrap_or_default()
        );
    }
    if let Some(prompt) = &agent.system_prompt {
        println!(
            "  system prompt: {}",
            prompt.lines().next().unwrap_or_default()
        );
    }
    println!("  selection: `{}`", agent.selection);
    for binding in &agent.tools {
        match binding.pinned_version {
            Some(v) => println!("  bound: {}@{v}", binding.tool),
            None => println!("  bound: {}", binding.tool),
        }
    }
    println!("tools:");
    if lines.is_empty() {
        println!(
            "  (none: bind one with `toolbelt agents bind {} TOOL`)",
            agent.name
        );
    }
    for line in &lines {
        if line.available {
            println!("  {} @{} ({})", line.name, line.version, line.source);
        } else {
            println!(
                "  {} @{} ({}) NOT AVAILABLE: {}",
                line.name,
                line.version,
                line.source,
                line.reasons.join("; ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
