//! `toolbelt routines`: create, list, pause, resume, remove and run routines stored in the database.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use toolbelt_store::StoreRoutines;
use toolbelt_tools::{
    MissedPolicy, RoutineDraft, RoutineStore, Schedule, describe_routine, format_ms,
};

use super::db::DbArgs;

/// Subcommands of `toolbelt routines`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RoutinesCommand {
    /// List routines with their schedule, state and next run.
    #[command(visible_alias = "list")]
    Ls(LsArgs),
    /// Create a routine: a prompt an agent runs on a cron schedule or an interval.
    Create(CreateArgs),
    /// Pause a routine (its occurrences are not run or recorded until resumed).
    Pause(NameArgs),
    /// Resume a paused routine from now on.
    Resume(NameArgs),
    /// Delete a routine (its recorded runs stay).
    Rm(NameArgs),
    /// Ask the scheduler to run a routine at its next tick.
    Run(NameArgs),
    /// Show the recorded occurrences (runs, missed, interrupted), newest first.
    Runs(RunsArgs),
}

/// Arguments of `toolbelt routines ls`.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// A routine by name.
#[derive(Debug, clap::Args)]
pub(crate) struct NameArgs {
    #[command(flatten)]
    db: DbArgs,
    /// The routine's name.
    name: String,
}

/// Arguments of `toolbelt routines runs`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunsArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Only this routine's.
    name: Option<String>,
    /// Most rows.
    #[arg(long, default_value_t = 20)]
    limit: i64,
}

/// Arguments of `toolbelt routines create`.
#[derive(Debug, clap::Args)]
pub(crate) struct CreateArgs {
    #[command(flatten)]
    db: DbArgs,
    /// Unique name.
    name: String,
    /// The agent that runs the prompt.
    #[arg(long)]
    agent: String,
    /// What the agent is asked each time.
    #[arg(long)]
    prompt: String,
    /// Cron expression: 5 fields (`0 9 * * *`) or 6 with seconds first.
    #[arg(long, conflicts_with = "every", required_unless_present = "every")]
    cron: Option<String>,
    /// IANA time zone of the cron expression.
    #[arg(long, default_value = "UTC")]
    tz: String,
    /// Run every this many seconds instead.
    #[arg(long, value_name = "SECONDS")]
    every: Option<u64>,
    /// Missed occurrences: skip, run_once or run_all.
    #[arg(long, default_value = "skip")]
    missed: String,
}

pub(crate) async fn run(cmd: RoutinesCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        RoutinesCommand::Ls(args) => {
            let routines = args.db.open().await?.routines();
            let all = routines.all().await?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else if all.is_empty() {
                println!("no routines");
            } else {
                for info in &all {
                    println!("{}", describe_routine(info));
                }
            }
        }
        RoutinesCommand::Create(args) => {
            let routines = args.db.open().await?.routines();
            let schedule = match (&args.cron, args.every) {
                (Some(expr), _) => Schedule::cron(expr, &args.tz)?,
                (None, Some(seconds)) => Schedule::every(seconds)?,
                (None, None) => anyhow::bail!("give --cron or --every"),
            };
            let draft = RoutineDraft::new(args.name, args.agent, args.prompt, schedule)
                .with_missed(MissedPolicy::parse(&args.missed)?);
            let info = routines.create(draft).await?;
            println!("created {}", describe_routine(&info));
        }
        RoutinesCommand::Pause(args) => {
            let info = store(&args.db).await?.set_paused(&args.name, true).await?;
            println!("{}", describe_routine(&info));
        }
        RoutinesCommand::Resume(args) => {
            let info = store(&args.db).await?.set_paused(&args.name, false).await?;
            println!("{}", describe_routine(&info));
        }
        RoutinesCommand::Rm(args) => {
            store(&args.db).await?.delete(&args.name).await?;
            println!("deleted routine `{}`", args.name);
        }
        RoutinesCommand::Run(args) => {
            store(&args.db).await?.run_now(&args.name).await?;
            println!(
                "routine `{}` will run at the scheduler's next tick (the server runs the scheduler)",
                args.name
            );
        }
        RoutinesCommand::Runs(args) => {
            let routines = args.db.open().await?.routines();
            let runs = routines.runs(args.name.as_deref(), args.limit).await?;
            if runs.is_empty() {
                println!("no recorded runs");
            }
            for r in runs {
                println!(
                    "{} {} {}{} {}",
                    format_ms(r.due_at),
                    r.routine,
                    r.status,
                    if r.manual { " (manual)" } else { "" },
                    r.detail.unwrap_or_default()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

async fn store(db: &DbArgs) -> anyhow::Result<Arc<StoreRoutines>> {
    let store = db.open().await.context("routines need the database")?;
    Ok(Arc::new(store.routines()))
}
