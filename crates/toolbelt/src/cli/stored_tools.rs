//! `toolbelt tools add|update|rm|enable|disable|show|versions|rollback|why`: tools in the database.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use toolbelt::stored::{ToolFile, check_agent_tool, environment};
use toolbelt_store::{ToolRecord, availability};
use toolbelt_tools::declarative::Secrets;

use super::db::DbArgs;

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
    db: DbArgs,
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
    db: DbArgs,
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
    db: DbArgs,
}

/// `tools rollback`.
#[derive(Debug, clap::Args)]
pub(crate) struct RollbackArgs {
    /// The tool's name.
    name: String,
    /// The version to make current.
    version: i64,
    #[command(flatten)]
    db: DbArgs,
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
    db: DbArgs,
}

fn who(by: Option<&String>) -> String {
    by.cloned()
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "cli".to_owned())
}

fn summary(tool: &ToolRecord) -> String {
    format!(
        "{} (version {} of {}, revision {}, {}{}{})",
        tool.name,
        tool.current_version,
        tool.latest_version,
        tool.revision,
        tool.source.as_str(),
        if tool.enabled { "" } else { ", disabled" },
        if tool.missing { ", missing" } else { "" }
    )
}

pub(crate) async fn run(cmd: StoredToolsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        StoredToolsCommand::Add(args) => {
            let draft = ToolFile::read(&args.file)?.to_draft(&who(args.by.as_ref()))?;
            let store = args.db.open().await?;
            check_agent_tool(&store, &draft).await?;
            let tool = store.create_tool(&draft).await?;
            println!("created {}", summary(&tool));
        }
        StoredToolsCommand::Update(args) => {
            let draft = ToolFile::read(&args.file.file)?.to_draft(&who(args.file.by.as_ref()))?;
            let store = args.file.db.open().await?;
            check_agent_tool(&store, &draft).await?;
            let revision = match args.revision {
                Some(revision) => revision,
                None => store.get_tool(draft.spec.name.as_str()).await?.revision,
            };
            let tool = store.update_tool(&draft, revision).await?;
            println!("updated {}", summary(&tool));
        }
        StoredToolsCommand::Rm(args) => {
            let store = args.db.open().await?;
            store.delete_tool(&args.name, args.revision).await?;
            println!("deleted {}", args.name);
        }
        StoredToolsCommand::Enable(args) => {
            let store = args.db.open().await?;
            let tool = store
                .set_tool_enabled(&args.name, true, args.revision, &who(None))
                .await?;
            println!("enabled {}", summary(&tool));
        }
        StoredToolsCommand::Disable(args) => {
            let store = args.db.open().await?;
            let tool = store
                .set_tool_enabled(&args.name, false, args.revision, &who(None))
                .await?;
            println!("disabled {}", summary(&tool));
        }
        StoredToolsCommand::Show(args) => {
            let store = args.db.open().await?;
            let tool = store.get_tool(&args.name).await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&tool)?);
            } else {
                println!("{}", summary(&tool));
                println!("  {}", tool.spec.description);
                if !tool.spec.tags.is_empty() {
                    println!("  tags: {}", tool.spec.tags.join(", "));
                }
                if let Some(definition) = &tool.definition {
                    println!("  definition: {definition}");
                }
                if !tool.availability.is_unrestricted() {
                    println!(
                        "  availability: {}",
                        serde_json::to_string(&tool.availability)?
                    );
                }
            }
        }
        StoredToolsCommand::Versions(args) => {
            let store = args.db.open().await?;
            let tool = store.get_tool(&args.name).await?;
            let versions = store.tool_versions(&args.name).await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&versions)?);
            } else {
                for v in versions {
                    let current = if v.version == tool.current_version {
                        "*"
                    } else {
                        " "
                    };
                    println!(
                        "{current} {:>3}  {}  by {}{}  {}",
                        v.version,
                        &v.spec_hash[..12],
                        v.changed_by,
                        v.note.map(|n| format!(" ({n})")).unwrap_or_default(),
                        v.spec.description.lines().next().unwrap_or_default()
                    );
                }
            }
        }
        StoredToolsCommand::Rollback(args) => {
            let store = args.db.open().await?;
            let tool = store
                .rollback_tool(&args.name, args.version, None, &who(None))
                .await?;
            println!("rolled back {}", summary(&tool));
        }
        StoredToolsCommand::Why(args) => return why(args).await,
    }
    Ok(ExitCode::SUCCESS)
}

async fn why(args: WhyArgs) -> anyhow::Result<ExitCode> {
    let store = args.db.open().await?;
    let tool = store.get_tool(&args.name).await?;
    let agent = store.get_agent(&args.agent).await?;
    let secrets = match &args.secrets_file {
        Some(path) => Secrets::from_env_and_file(path)
            .with_context(|| format!("could not read the secrets file {}", path.display()))?,
        None => Secrets::from_env(),
    };
    let env = environment(&store, &secrets, &tool.availability.conditions).await?;
    let tags: BTreeSet<String> = store
        .list_tools()
        .await?
        .into_iter()
        .flat_map(|t| t.spec.tags)
        .collect();
    let verdict = availability(&agent, &tool, &tags, &env);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&verdict)?);
    } else if verdict.is_available() {
        println!(
            "{} is available to {} (version {})",
            tool.name, agent.name, verdict.version
        );
    } else {
        println!("{} is not available to {}:", tool.name, agent.name);
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
