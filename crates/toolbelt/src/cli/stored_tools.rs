//! `toolbelt tools add|update|rm|enable|disable|show|versions|rollback|why|import`: tools in the
//! database.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;
use toolbelt_store::Revision;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use toolbelt::stored::{ToolFile, check_agent_tool, environment, update_tool};
use toolbelt_server::api::manage::{StoredTool, VersionView};
use toolbelt_store::{ToolSource, availability};
use toolbelt_tools::declarative::Secrets;

use super::remote::{Api, Backend, Call, Target};

/// The database-backed subcommands of `toolbelt tools`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum StoredToolsCommand {
    /// Store a new HTTP, command or agent tool from a YAML or JSON file.
    Add(FileArgs),
    /// Store a new version of a tool from a YAML or JSON file.
    Update(UpdateArgs),
    /// Delete a stored tool and its history (refused while agents bind it).
    Rm(NameArgs),
    /// Offer a stored tool to agents again.
    Enable(NameArgs),
    /// Stop offering a stored tool to any agent.
    Disable(NameArgs),
    /// Print a stored tool: current version, spec, definition, rules.
    Show(ShowArgs),
    /// List every version of a stored tool.
    Versions(ShowArgs),
    /// Make an earlier version of a tool current again.
    Rollback(RollbackArgs),
    /// Say whether an agent may use a tool, and if not, why.
    Why(WhyArgs),
    /// Store tools made from a document (`import openapi FILE|URL`).
    #[command(subcommand)]
    Import(super::import::ImportCommand),
}

/// A definition file.
#[derive(Debug, clap::Args)]
pub(crate) struct FileArgs {
    /// The definition (YAML or JSON).
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: PathBuf,
    /// Who is making the change (default: $USER).
    #[arg(long = "by", value_name = "NAME")]
    by: Option<String>,
    #[command(flatten)]
    target: Target,
}

/// `tools update`.
#[derive(Debug, clap::Args)]
pub(crate) struct UpdateArgs {
    #[command(flatten)]
    file: FileArgs,
    /// The revision you read; refused if the tool changed since (default: the current one).
    #[arg(long)]
    revision: Option<i64>,
}

/// A tool name.
#[derive(Debug, clap::Args)]
pub(crate) struct NameArgs {
    /// The tool's name.
    name: String,
    /// The revision you read; refused if the tool changed since.
    #[arg(long)]
    revision: Option<i64>,
    #[command(flatten)]
    target: Target,
}

/// `tools show` / `tools versions`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The tool's name.
    name: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

/// `tools rollback`.
#[derive(Debug, clap::Args)]
pub(crate) struct RollbackArgs {
    /// The tool's name.
    name: String,
    /// The version to make current.
    version: i64,
    #[command(flatten)]
    target: Target,
}

/// `tools why`.
#[derive(Debug, clap::Args)]
pub(crate) struct WhyArgs {
    /// The tool's name.
    name: String,
    /// The agent asking.
    #[arg(long)]
    agent: String,
    /// A secrets file (`NAME=value` lines) besides the environment.
    #[arg(long, value_name = "FILE")]
    secrets_file: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

fn who(by: Option<&String>) -> String {
    by.cloned()
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "cli".to_owned())
}

fn summary(tool: &StoredTool) -> String {
    format!(
        "{} (version {} of {}, revision {}, {}{}{})",
        tool.name,
        tool.current_version,
        tool.latest_version,
        tool.revision,
        tool.source,
        if tool.enabled { "" } else { ", disabled" },
        if tool.missing { ", missing" } else { "" }
    )
}

/// A server's answer as a stored tool.
fn stored(answer: Value) -> anyhow::Result<StoredTool> {
    serde_json::from_value(answer).context("the server's answer is not a stored tool")
}

/// The body of `POST /tools` / `PUT /tools/{name}` for the tool file `file`.
fn tool_body(file: &ToolFile) -> anyhow::Result<Value> {
    let def = file.to_def()?;
    if def.source != ToolSource::Declarative {
        bail!(
            "`{}` is an agent tool: the API stores HTTP and command tools; store agent tools with \
             the database (--database-url instead of --server)",
            def.spec.name
        );
    }
    let mut body = json!({"spec": def.spec, "definition": def.definition});
    if let Some(note) = &file.note {
        body["note"] = json!(note);
    }
    if let Some(availability) = &file.availability {
        body["availability"] = serde_json::to_value(availability)?;
    }
    Ok(body)
}

async fn remote_stored(api: &Api, name: &str) -> anyhow::Result<StoredTool> {
    stored(api.send(Call::get(&["tools", name, "stored"])).await?)
}

pub(crate) async fn run(cmd: StoredToolsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        StoredToolsCommand::Add(args) => {
            let file = ToolFile::read(&args.file)?;
            let def = file.to_def()?;
            let tool = match args.target.connect().await? {
                Backend::Local(store) => {
                    check_agent_tool(&store, &def).await?;
                    let by = who(args.by.as_ref());
                    store
                        .tools()
                        .create(&def, &by, file.note.as_deref())
                        .await?
                        .into()
                }
                Backend::Remote(api) => stored(
                    api.send(Call::post(&["tools"]).json(tool_body(&file)?))
                        .await?,
                )?,
            };
            println!("created {}", summary(&tool));
        }
        StoredToolsCommand::Update(args) => {
            let file = ToolFile::read(&args.file.file)?;
            let def = file.to_def()?;
            let name = def.name();
            let tool = match args.file.target.connect().await? {
                Backend::Local(store) => {
                    check_agent_tool(&store, &def).await?;
                    let revision = match args.revision {
                        Some(revision) => revision,
                        None => store.tools().get(name).await?.revision,
                    };
                    update_tool(
                        &store,
                        &def,
                        file.availability.as_ref(),
                        Revision::Exactly(revision),
                        &who(args.file.by.as_ref()),
                        file.note.as_deref(),
                    )
                    .await?
                    .into()
                }
                Backend::Remote(api) => {
                    let body = tool_body(&file)?;
                    let revision = match args.revision {
                        Some(revision) => revision,
                        None => remote_stored(&api, name).await?.revision,
                    };
                    let call = Call::put(&["tools", name])
                        .json(body)
                        .if_match(Some(revision));
                    stored(api.send(call).await?)?
                }
            };
            println!("updated {}", summary(&tool));
        }
        StoredToolsCommand::Rm(args) => {
            match args.target.connect().await? {
                Backend::Local(store) => {
                    store
                        .tools()
                        .delete(&args.name, Revision::from(args.revision))
                        .await?
                }
                Backend::Remote(api) => {
                    let call = Call::delete(&["tools", &args.name]).if_match(args.revision);
                    api.send(call).await?;
                }
            }
            println!("deleted {}", args.name);
        }
        StoredToolsCommand::Enable(args) => {
            let tool = set_enabled(&args, true).await?;
            println!("enabled {}", summary(&tool));
        }
        StoredToolsCommand::Disable(args) => {
            let tool = set_enabled(&args, false).await?;
            println!("disabled {}", summary(&tool));
        }
        StoredToolsCommand::Show(args) => {
            let tool = match args.target.connect().await? {
                Backend::Local(store) => store.tools().get(&args.name).await?.into(),
                Backend::Remote(api) => remote_stored(&api, &args.name).await?,
            };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&tool)?);
            } else {
                println!("{}", summary(&tool));
                let text = |key: &str| tool.spec.get(key).and_then(Value::as_str);
                println!("  {}", text("description").unwrap_or_default());
                let tags: Vec<&str> = tool.spec["tags"]
                    .as_array()
                    .map(|t| t.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !tags.is_empty() {
                    println!("  tags: {}", tags.join(", "));
                }
                if let Some(definition) = &tool.definition {
                    println!("  definition: {definition}");
                }
                if let Some(availability) = &tool.availability {
                    println!("  availability: {}", serde_json::to_string(availability)?);
                }
            }
        }
        StoredToolsCommand::Versions(args) => {
            let (tool, versions): (StoredTool, Vec<VersionView>) =
                match args.target.connect().await? {
                    Backend::Local(store) => {
                        let tool = store.tools().get(&args.name).await?.into();
                        let versions = store.tools().versions(&args.name).await?;
                        (tool, versions.into_iter().map(VersionView::from).collect())
                    }
                    Backend::Remote(api) => {
                        let tool = remote_stored(&api, &args.name).await?;
                        let versions = api
                            .send(Call::get(&["tools", &args.name, "versions"]))
                            .await?;
                        let versions = serde_json::from_value(versions)
                            .context("the server's answer is not a list of versions")?;
                        (tool, versions)
                    }
                };
            if args.json {
                println!("{}", serde_json::to_string_pretty(&versions)?);
            } else {
                for v in versions {
                    let current = if v.version == tool.current_version {
                        "*"
                    } else {
                        " "
                    };
                    let description = v.spec["description"].as_str().unwrap_or_default();
                    println!(
                        "{current} {:>3}  {}  by {}{}  {}",
                        v.version,
                        v.spec_hash.get(..12).unwrap_or(&v.spec_hash),
                        v.changed_by,
                        v.note.map(|n| format!(" ({n})")).unwrap_or_default(),
                        description.lines().next().unwrap_or_default()
                    );
                }
            }
        }
        StoredToolsCommand::Rollback(args) => {
            let tool = match args.target.connect().await? {
                Backend::Local(store) => store
                    .tools()
                    .rollback(&args.name, args.version, Revision::Any, &who(None))
                    .await?
                    .into(),
                Backend::Remote(api) => {
                    let call = Call::post(&["tools", &args.name, "rollback"])
                        .json(json!({"version": args.version}));
                    stored(api.send(call).await?)?
                }
            };
            println!("rolled back {}", summary(&tool));
        }
        StoredToolsCommand::Why(args) => return why(args).await,
        StoredToolsCommand::Import(cmd) => return super::import::run(cmd).await,
    }
    Ok(ExitCode::SUCCESS)
}

async fn set_enabled(args: &NameArgs, enabled: bool) -> anyhow::Result<StoredTool> {
    Ok(match args.target.connect().await? {
        Backend::Local(store) => store
            .tools()
            .set_enabled(
                &args.name,
                enabled,
                Revision::from(args.revision),
                &who(None),
            )
            .await?
            .into(),
        Backend::Remote(api) => {
            let action = if enabled { "enable" } else { "disable" };
            let call = Call::post(&["tools", &args.name, action]).if_match(args.revision);
            stored(api.send(call).await?)?
        }
    })
}

async fn why(args: WhyArgs) -> anyhow::Result<ExitCode> {
    let store = match args.target.connect().await? {
        Backend::Local(store) => store,
        Backend::Remote(api) => return remote_why(&api, &args).await,
    };
    let tool = store.tools().get(&args.name).await?;
    let agent = store.agents().get(&args.agent).await?;
    let secrets = match &args.secrets_file {
        Some(path) => Secrets::from_env_and_file(path)
            .with_context(|| format!("could not read the secrets file {}", path.display()))?,
        None => Secrets::from_env(),
    };
    let env = environment(&store, &secrets, &tool.availability.conditions).await?;
    let tags: BTreeSet<String> = store
        .tools()
        .list()
        .await?
        .into_iter()
        .flat_map(|t| t.into_value().def.spec.tags)
        .collect();
    let verdict = availability(&agent, &tool, &tags, &env);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&verdict)?);
    } else if verdict.is_available() {
        println!(
            "{} is available to {} (version {})",
            tool.name(),
            agent.name,
            verdict.version
        );
    } else {
        println!("{} is not available to {}:", tool.name(), agent.name);
        for reason in &verdict.reasons {
            println!("  - {reason}");
        }
    }
    Ok(if verdict.is_available() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `tools why` through the server: its answer for the agent's tools (conditions checked
/// against the server's environment, not this shell's).
async fn remote_why(api: &Api, args: &WhyArgs) -> anyhow::Result<ExitCode> {
    if args.secrets_file.is_some() {
        bail!("--secrets-file applies to the database; the server checks its own secrets");
    }
    let lines = api
        .send(Call::get(&["agents", &args.agent, "tools"]))
        .await?;
    let line = lines
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"] == args.name.as_str())
        .ok_or_else(|| anyhow::anyhow!("tool `{}` not found", args.name))?;
    let available = line["available"].as_bool().unwrap_or(false);
    if args.json {
        println!("{}", serde_json::to_string_pretty(line)?);
    } else if available {
        match line["version"].as_i64() {
            Some(v) => println!("{} is available to {} (version {v})", args.name, args.agent),
            None => println!("{} is available to {}", args.name, args.agent),
        }
    } else {
        println!("{} is not available to {}:", args.name, args.agent);
        for reason in line["why"].as_str().unwrap_or_default().split("; ") {
            println!("  - {reason}");
        }
    }
    Ok(if available {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
