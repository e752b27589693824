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
        TokensCommand::Create { name, scopes, db } => {
            for s in &scopes {
                if !matches!(s.as_str(), "admin" | "run" | "read") {
                    bail!("--scope {s:?} is not known; use admin, run or read");
                }
            }
            let store = open(&db).await?;
            let (record, secret) = store.create_token(&name, &scopes).await?;
            eprintln!(
                "created token `{}` with scopes {}; keep the secret below, it is not shown again",
                record.name,
                record.scopes.join(", ")
            );
            println!("{secret}");
        }
        TokensCommand::Ls { db } => {
            let store = open(&db).await?;
            println!("{:<24} {:<18} {:<8} last used", "name", "scopes", "state");
            for t in store.list_tokens().await? {
                let state = if t.revoked_at.is_some() {
                    "revoked"
                } else {
                    "active"
                };
                let used = t
                    .last_used_at
                    .map_or_else(|| "never".to_owned(), |ms| format!("{}s ago", age_secs(ms)));
                println!(
                    "{:<24} {:<18} {:<8} {used}",
                    t.name,
                    t.scopes.join(","),
                    state
                );
            }
        }
        TokensCommand::Revoke { name, db } => {
            let store = open(&db).await?;
            store.revoke_token(&name).await?;
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
