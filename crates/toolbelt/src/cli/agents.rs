//! `toolbelt agents create|show|bind|unbind|ls|rm`: agents stored as data.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use toolbelt_store::Revision;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use toolbelt::stored::environment;
use toolbelt_store::{AgentSpec, Binding, Store, Stored, availability, split_pin};
use toolbelt_tools::declarative::Secrets;

use super::remote::{Api, Backend, Call, Target};

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
    #[command(visible_alias = "list")]
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
    target: Target,
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
    target: Target,
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
    target: Target,
}

/// `agents ls`.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
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
    target: Target,
}

/// Who a change made from this command line is recorded as: `$USER`, else `cli`.
pub(crate) fn who() -> String {
    std::env::var("USER").unwrap_or_else(|_| "cli".to_owned())
}

/// An agent as stored, in the JSON both the store and the API give.
fn record_json(agent: &Stored<AgentSpec>) -> anyhow::Result<Value> {
    Ok(serde_json::to_value(agent)?)
}

fn text<'a>(agent: &'a Value, key: &str) -> &'a str {
    agent[key].as_str().unwrap_or_default()
}

fn bound_count(agent: &Value) -> usize {
    agent["tools"].as_array().map_or(0, Vec::len)
}

pub(crate) async fn run(cmd: AgentsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        AgentsCommand::Create(args) => {
            let draft = create_draft(&args)?;
            let agent = match args.target.connect().await? {
                Backend::Local(store) => {
                    record_json(&store.agents().create(&draft, &who()).await?)?
                }
                Backend::Remote(api) => {
                    api.send(Call::post(&["agents"]).json(serde_json::to_value(&draft)?))
                        .await?
                }
            };
            println!(
                "created agent {} (revision {}, {} bound tool(s))",
                text(&agent, "name"),
                agent["revision"],
                bound_count(&agent)
            );
        }
        AgentsCommand::Show(args) => return show(args).await,
        AgentsCommand::Bind(args) => {
            let (tool, version) =
                split_pin(&args.tool).map_err(|reason| anyhow::anyhow!(reason))?;
            let agent = match args.target.connect().await? {
                Backend::Local(store) => {
                    let mut binding = Binding::new(tool.clone());
                    binding.pinned_version = version;
                    let agent = store
                        .agents()
                        .bind(&args.agent, &binding, Revision::from(args.revision), &who())
                        .await?;
                    record_json(&agent)?
                }
                Backend::Remote(api) => {
                    let mut call = Call::post(&["agents", &args.agent, "tools", &tool])
                        .if_match(args.revision);
                    if let Some(v) = version {
                        call = call.json(json!({"version": v}));
                    }
                    api.send(call).await?
                }
            };
            println!(
                "bound {} to {} (revision {})",
                args.tool,
                text(&agent, "name"),
                agent["revision"]
            );
        }
        AgentsCommand::Unbind(args) => {
            let agent = match args.target.connect().await? {
                Backend::Local(store) => record_json(
                    &store
                        .agents()
                        .unbind(
                            &args.agent,
                            &args.tool,
                            Revision::from(args.revision),
                            &who(),
                        )
                        .await?,
                )?,
                Backend::Remote(api) => {
                    let call = Call::delete(&["agents", &args.agent, "tools", &args.tool])
                        .if_match(args.revision);
                    api.send(call).await?
                }
            };
            println!(
                "unbound {} from {} (revision {})",
                args.tool,
                text(&agent, "name"),
                agent["revision"]
            );
        }
        AgentsCommand::Ls(args) => {
            let agents: Vec<Value> = match args.target.connect().await? {
                Backend::Local(store) => store
                    .agents()
                    .list()
                    .await?
                    .iter()
                    .map(record_json)
                    .collect::<anyhow::Result<_>>()?,
                Backend::Remote(api) => remote_stored_agents(&api).await?,
            };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&agents)?);
            } else if agents.is_empty() {
                println!("no agents stored (`toolbelt agents create NAME` makes one)");
            } else {
                for agent in &agents {
                    println!(
                        "{:<24} {:<12} selection `{}`, {} bound tool(s)",
                        text(agent, "name"),
                        text(agent, "kind"),
                        text(agent, "selection"),
                        bound_count(agent)
                    );
                }
            }
        }
        AgentsCommand::Rm(args) => {
            match args.target.connect().await? {
                Backend::Local(store) => {
                    store
                        .agents()
                        .delete(&args.name, Revision::from(args.revision))
                        .await?
                }
                Backend::Remote(api) => {
                    let call = Call::delete(&["agents", &args.name]).if_match(args.revision);
                    api.send(call).await?;
                }
            }
            println!("deleted agent {}", args.name);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The server's stored agents (its agents from a configuration file, revision 0, are left
/// out, as they are not in the database), by name.
async fn remote_stored_agents(api: &Api) -> anyhow::Result<Vec<Value>> {
    let listed = api.send(Call::get(&["agents"])).await?;
    let mut agents: Vec<Value> = listed
        .as_array()
        .into_iter()
        .flatten()
        .filter(|agent| agent["revision"].as_i64().is_some_and(|r| r > 0))
        .cloned()
        .collect();
    agents.sort_by(|a, b| text(a, "name").cmp(text(b, "name")));
    Ok(agents)
}

fn create_draft(args: &CreateArgs) -> anyhow::Result<AgentSpec> {
    let draft = if let Some(path) = &args.file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("could not read {}", path.display()))?;
        toolbelt::stored::from_yaml::<AgentSpec>(&text).map_err(|reason| {
            anyhow::anyhow!("invalid agent definition {}: {reason}", path.display())
        })?
    } else {
        let Some(name) = &args.name else {
            anyhow::bail!("give the agent's name or a definition file with -f");
        };
        let mut draft = AgentSpec::new(name.clone()).with_selection(args.selection.clone());
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
    Ok(draft)
}

#[derive(serde::Serialize)]
struct ToolLine {
    name: String,
    version: Option<i64>,
    source: String,
    available: bool,
    reasons: Vec<String>,
}

async fn tool_lines(
    store: &Store,
    agent: &Stored<AgentSpec>,
    secrets: &Secrets,
) -> anyhow::Result<Vec<ToolLine>> {
    let tools = store.tools().list().await?;
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
                name: tool.name().to_owned(),
                version: Some(verdict.version),
                source: tool.source.as_str().to_owned(),
                available: verdict.is_available(),
                reasons: verdict.reasons.iter().map(ToString::to_string).collect(),
            });
        }
    }
    Ok(lines)
}

/// The stored agent and the tools its selection names, as the server sees them: a tool is
/// available when a run of the agent gets it.
async fn remote_show(api: &Api, name: &str) -> anyhow::Result<(Value, Vec<ToolLine>)> {
    let agent = api.send(Call::get(&["agents", name, "stored"])).await?;
    let answer = api.send(Call::get(&["agents", name, "tools"])).await?;
    let lines = answer
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["selected"].as_bool().unwrap_or(false))
        .map(|t| {
            let available = t["available"].as_bool().unwrap_or(false);
            ToolLine {
                name: text(t, "name").to_owned(),
                version: t["version"].as_i64(),
                source: t["source"].as_str().unwrap_or("compiled").to_owned(),
                available,
                reasons: if available {
                    Vec::new()
                } else {
                    text(t, "why").split("; ").map(str::to_owned).collect()
                },
            }
        })
        .collect();
    Ok((agent, lines))
}

async fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let (agent, lines) = match args.target.connect().await? {
        Backend::Local(store) => {
            let agent = store.agents().get(&args.name).await?;
            let secrets = match &args.secrets_file {
                Some(path) => Secrets::from_env_and_file(path).with_context(|| {
                    format!("could not read the secrets file {}", path.display())
                })?,
                None => Secrets::from_env(),
            };
            let lines = tool_lines(&store, &agent, &secrets).await?;
            (record_json(&agent)?, lines)
        }
        Backend::Remote(api) => {
            if args.secrets_file.is_some() {
                bail!("--secrets-file applies to the database; the server checks its own secrets");
            }
            remote_show(&api, &args.name).await?
        }
    };
    if args.json {
        let doc = serde_json::json!({"agent": agent, "tools": lines});
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(ExitCode::SUCCESS);
    }
    let name = text(&agent, "name");
    println!(
        "agent {name} (kind {}, revision {})",
        text(&agent, "kind"),
        agent["revision"]
    );
    let labels: Vec<&str> = agent["labels"]
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !labels.is_empty() {
        println!("  labels: {}", labels.join(", "));
    }
    if let Some(model) = agent["model"].as_str() {
        let provider = agent["provider"]
            .as_str()
            .map(|p| format!("{p}/"))
            .unwrap_or_default();
        println!("  model: {provider}{model}");
    }
    if let Some(prompt) = agent["system_prompt"].as_str() {
        println!(
            "  system prompt: {}",
            prompt.lines().next().unwrap_or_default()
        );
    }
    println!("  selection: `{}`", text(&agent, "selection"));
    for binding in agent["tools"].as_array().into_iter().flatten() {
        let tool = text(binding, "tool");
        match binding["version"].as_i64() {
            Some(v) => println!("  bound: {tool}@{v}"),
            None => println!("  bound: {tool}"),
        }
    }
    println!("tools:");
    if lines.is_empty() {
        println!("  (none: bind one with `toolbelt agents bind {name} TOOL`)");
    }
    for line in &lines {
        let version = line.version.map(|v| format!(" @{v}")).unwrap_or_default();
        if line.available {
            println!("  {}{version} ({})", line.name, line.source);
        } else {
            println!(
                "  {}{version} ({}) NOT AVAILABLE: {}",
                line.name,
                line.source,
                line.reasons.join("; ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
