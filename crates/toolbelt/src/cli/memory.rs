//! `toolbelt memory`: list, search and forget what agents remembered, in the database.

use std::process::ExitCode;

use toolbelt_tools::{MemoryScope, MemoryStore, RecallQuery, format_ms, owns};

use super::db::DbArgs;

/// Subcommands of `toolbelt memory`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum MemoryCommand {
    /// List an agent's entries (and those other agents shared), newest first.
    #[command(visible_alias = "list")]
    Ls(LsArgs),
    /// Search an agent's memory.
    Recall(RecallArgs),
    /// Forget entries by id (the agent's own only); shows what would go without --yes.
    Forget(ForgetArgs),
}

/// Whose memory.
#[derive(Debug, clap::Args)]
pub(crate) struct ScopeArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The agent.
    #[arg(long)]
    agent: String,
    /// The user, when memory is kept per user.
    #[arg(long)]
    user: Option<String>,
}

impl ScopeArgs {
    fn scope(&self) -> MemoryScope {
        let scope = MemoryScope::agent(&self.agent);
        match &self.user {
            Some(user) => scope.for_user(user),
            None => scope,
        }
    }
}

/// Arguments of `toolbelt memory ls`.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// Only entries with this tag (repeatable).
    #[arg(long = "tag")]
    tags: Vec<String>,
    /// Most entries.
    #[arg(long, default_value_t = 50)]
    limit: usize,
}

/// Arguments of `toolbelt memory recall`.
#[derive(Debug, clap::Args)]
pub(crate) struct RecallArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// What to look for.
    query: String,
    /// Most hits.
    #[arg(long, default_value_t = 5)]
    limit: usize,
}

/// Arguments of `toolbelt memory forget`.
#[derive(Debug, clap::Args)]
pub(crate) struct ForgetArgs {
    #[command(flatten)]
    scope: ScopeArgs,
    /// Ids of the entries.
    #[arg(required = true)]
    ids: Vec<i64>,
    /// Delete; without it only show what would go.
    #[arg(long)]
    yes: bool,
}

fn line(e: &toolbelt_tools::MemoryEntry) -> String {
    let tags = if e.tags.is_empty() {
        String::new()
    } else {
        format!(" [{}]", e.tags.join(", "))
    };
    format!(
        "#{} {} {}{tags}: {}",
        e.id,
        format_ms(e.created_at_ms),
        e.agent,
        e.text
    )
}

pub(crate) async fn run(cmd: MemoryCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        MemoryCommand::Ls(args) => {
            let memory = args.scope.db.open().await?.memory();
            let tags: Vec<String> = args.tags.iter().map(|t| t.trim().to_lowercase()).collect();
            let entries = memory
                .list(&args.scope.scope(), &tags, args.limit, 0)
                .await?;
            if entries.is_empty() {
                println!("no entries");
            }
            for e in &entries {
                println!("{}", line(e));
            }
        }
        MemoryCommand::Recall(args) => {
            let memory = args.scope.db.open().await?.memory();
            let q = RecallQuery::new(&args.query).with_limit(args.limit);
            let hits = memory.recall(&args.scope.scope(), &q).await?;
            if hits.is_empty() {
                println!("nothing remembered matches");
            }
            for h in &hits {
                println!("{:.3} {}", h.score, line(&h.entry));
            }
        }
        MemoryCommand::Forget(args) => {
            let memory = args.scope.db.open().await?.memory();
            let scope = args.scope.scope();
            let targets = memory.owned(&scope, &args.ids).await?;
            let missing: Vec<i64> = args
                .ids
                .iter()
                .copied()
                .filter(|id| !targets.iter().any(|e| e.id == *id && owns(&scope, e)))
                .collect();
            if !missing.is_empty() {
                eprintln!(
                    "not this agent's (or no such entry): {}",
                    missing
                        .iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            if args.yes {
                let ids: Vec<i64> = targets.iter().map(|e| e.id).collect();
                let gone = memory.forget(&scope, &ids).await?;
                println!("forgot {gone} entries");
            } else {
                println!(
                    "would forget {} entries (add --yes to delete):",
                    targets.len()
                );
                for e in &targets {
                    println!("{}", line(e));
                }
            }
            if !missing.is_empty() {
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
