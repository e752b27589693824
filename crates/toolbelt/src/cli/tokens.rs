//! `toolbelt tokens create|ls|revoke`: API tokens, stored hashed in the database.

use std::process::ExitCode;

use anyhow::{Context, bail};

use super::db::DbArgs;

/// `toolbelt tokens ...`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum TokensCommand {
    /// Create a token; the secret is printed once and only its hash is stored.
    Create {
        /// A unique name (who or what uses it).
        name: String,
        /// Scopes: admin (change tools and agents), run (call tools, run agents), read.
        #[arg(long = "scope", value_name = "SCOPE", required = true)]
        scopes: Vec<String>,
        /// Limit the token to this agent (repeat for several, or give a comma-separated list):
        /// it then reaches those agents' tools, runs, approvals, questions and routines only,
        /// and nothing of the whole server (tools, MCP servers, skills, settings).
        #[arg(long = "agent", value_name = "AGENT", value_delimiter = ',')]
        agents: Vec<String>,
        #[command(flatten)]
        db: DbArgs,
    },
    /// List tokens (names, scopes, dates; never secrets).
    #[command(visible_alias = "list")]
    Ls {
        #[command(flatten)]
        db: DbArgs,
    },
    /// Revoke a token by name (kept for the audit trail).
    Revoke {
        /// The token's name.
        name: String,
        #[command(flatten)]
        db: DbArgs,
    },
}

/// Opens the store without the memory model (tokens need none).
async fn open(db: &DbArgs) -> anyhow::Result<toolbelt_store::Store> {
    let url = db.url()?;
    toolbelt_host::paths::prepare_database(&url)?;
    toolbelt_store::Store::open(&url).await.with_context(|| {
        format!(
            "opening the database {}",
            toolbelt_store::redacted_url(&url)
        )
    })
}

pub(crate) async fn run(cmd: TokensCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TokensCommand::Create {
            name,
            scopes,
            agents,
            db,
        } => {
            for s in &scopes {
                if !matches!(s.as_str(), "admin" | "run" | "read") {
                    bail!("--scope {s:?} is not known; use admin, run or read");
                }
            }
            if let Some(empty) = agents.iter().find(|a| a.trim().is_empty()) {
                bail!("--agent {empty:?}: an agent name must not be empty");
            }
            let store = open(&db).await?;
            let limit = (!agents.is_empty()).then_some(agents.as_slice());
            let (record, secret) = store.tokens().create_for(&name, &scopes, limit).await?;
            let reach = record.agents.as_ref().map_or_else(
                || "every agent".to_owned(),
                |a| format!("only the agents {}", a.join(", ")),
            );
            eprintln!(
                "created token `{}` with scopes {} for {reach}; keep the secret below, it is not shown again",
                record.name,
                record.scopes.join(", ")
            );
            println!("{secret}");
        }
        TokensCommand::Ls { db } => {
            let store = open(&db).await?;
            println!(
                "{:<24} {:<18} {:<8} {:<24} last used",
                "name", "scopes", "state", "agents"
            );
            for t in store.tokens().list().await? {
                let state = if t.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                let used = t
                    .last_used_at
                    .map_or_else(|| "never".to_owned(), |ms| format!("{}s ago", age_secs(ms)));
                let agents = t
                    .agents
                    .as_ref()
                    .map_or_else(|| "all".to_owned(), |a| a.join(","));
                println!(
                    "{:<24} {:<18} {:<8} {:<24} {used}",
                    t.name,
                    t.scopes.join(","),
                    state,
                    agents
                );
            }
        }
        TokensCommand::Revoke { name, db } => {
            let store = open(&db).await?;
            store.tokens().revoke(&name).await?;
            println!("revoked `{name}`");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn age_secs(at_ms: i64) -> i64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(at_ms);
    (now - at_ms).max(0) / 1000
}
