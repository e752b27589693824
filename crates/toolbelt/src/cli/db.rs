//! `toolbelt db`: migrate the database and sync the compiled-in tools into it.

use std::process::ExitCode;

use anyhow::Context;
use toolbelt_core::Registry;
use toolbelt_store::Store;

/// Where the database is; shared by every subcommand that uses it.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct DbArgs {
    /// `sqlite://PATH` (created on first use) or `postgres://USER@HOST/DB` [default:
    /// toolbelt.db in the data directory: $TOOLBELT_DATA, else $XDG_DATA_HOME/toolbelt,
    /// else ~/.local/share/toolbelt; the server uses the same one]
    #[arg(
        long = "database-url",
        env = "TOOLBELT_DATABASE_URL",
        value_name = "URL"
    )]
    pub(crate) url: Option<String>,
}

impl DbArgs {
    /// This URL.
    pub(crate) fn with_url(url: impl Into<String>) -> Self {
        Self {
            url: Some(url.into()),
        }
    }

    /// The URL given, or the default database in the data directory.
    pub(crate) fn url(&self) -> anyhow::Result<String> {
        match &self.url {
            Some(url) => Ok(url.clone()),
            None => Ok(toolbelt_host::paths::default_database_url()?),
        }
    }

    /// Opens the store (applying pending migrations, creating a SQLite file's directory);
    /// memory recalls rank by meaning too when the multilingual model is found.
    pub(crate) async fn open(&self) -> anyhow::Result<Store> {
        let url = self.url()?;
        toolbelt_host::paths::prepare_database(&url)?;
        let store = Store::open(&url)
            .await
            .with_context(|| format!("could not open the database {}", redact_url(&url)))?;
        if let Some(embedder) = super::models::memory_embedder() {
            store.memory().set_embedder(embedder);
        }
        Ok(store)
    }
}

/// The URL without a password.
fn redact_url(url: &str) -> String {
    toolbelt_store::redacted_url(url)
}

/// Subcommands of `toolbelt db`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum DbCommand {
    /// Apply pending migrations, then store the compiled-in tools (new versions for changed ones,
    /// `missing` for vanished ones).
    Migrate(MigrateArgs),
}

/// Arguments of `toolbelt db migrate`.
#[derive(Debug, clap::Args)]
pub(crate) struct MigrateArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Only migrate; do not sync the compiled-in tools.
    #[arg(long)]
    no_sync: bool,
}

pub(crate) async fn run(cmd: DbCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DbCommand::Migrate(args) => {
            let store = args.db.open().await?;
            let version = store.migrate().await?;
            println!(
                "database {} at schema version {version} ({})",
                redact_url(&args.db.url()?),
                store.engine().as_str()
            );
            if !args.no_sync {
                let registry =
                    Registry::discovered().context("could not collect the linked tools")?;
                let specs: Vec<_> = registry.list().iter().map(|t| t.spec().clone()).collect();
                let report = store
                    .tools()
                    .sync_compiled(&specs, "toolbelt db migrate")
                    .await?;
                println!(
                    "compiled tools: {} new, {} updated, {} unchanged, {} missing, {} restored",
                    report.created.len(),
                    report.updated.len(),
                    report.unchanged,
                    report.missing.len(),
                    report.restored.len()
                );
                for name in &report.clashes {
                    println!(
                        "note: compiled tool `{name}` is not stored: a declarative tool has that name"
                    );
                }
            }
            store.close().await;
            Ok(ExitCode::SUCCESS)
        }
    }
}
