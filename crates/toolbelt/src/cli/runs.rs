//! `toolbelt runs ls|show|cancel|approvals|approve|reject|answer`: agent runs, from the
//! database or through a server; approvals and cancelling need the server that holds the run.

use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use toolbelt_host::runs::{ApprovalView, QuestionView, RunDetail, RunRegistry, RunStatus, RunView};
use toolbelt_llm::Message;

use super::remote::{Api, Backend, Call, Target};
use super::run::clip;

/// Subcommands of `toolbelt runs`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RunsCommand {
    /// List runs, newest first.
    #[command(visible_alias = "list")]
    Ls(LsArgs),
    /// Print a run: status, input, answer, and its transcript.
    Show(ShowArgs),
    /// Ask a running run to stop (needs --server).
    Cancel(IdArgs),
    /// List the calls and questions waiting for a person (needs --server).
    Approvals(ApprovalsArgs),
    /// Let a waiting call run, as is or with other arguments (needs --server).
    Approve(ApproveArgs),
    /// Refuse a waiting call; the model is told why (needs --server).
    Reject(RejectArgs),
    /// Answer a question a run asked (needs --server).
    Answer(AnswerArgs),
}

/// `runs ls`.
#[derive(Debug, clap::Args)]
pub(crate) struct LsArgs {
    /// Only this agent's runs.
    #[arg(long)]
    agent: Option<String>,
    /// Only runs in this state: running, waiting, succeeded, failed, cancelled, interrupted.
    #[arg(long, value_parser = parse_status)]
    status: Option<RunStatus>,
    /// At most this many (1-500).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=500))]
    limit: u16,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

/// `runs show`.
#[derive(Debug, clap::Args)]
pub(crate) struct ShowArgs {
    /// The run's id (`run_…`).
    id: String,
    /// Print JSON (the run with its messages and events).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

/// A run id.
#[derive(Debug, clap::Args)]
pub(crate) struct IdArgs {
    /// The run's id (`run_…`).
    id: String,
    #[command(flatten)]
    target: Target,
}

/// `runs approvals`.
#[derive(Debug, clap::Args)]
pub(crate) struct ApprovalsArgs {
    /// Print JSON (`{"approvals": […], "questions": […]}`).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    target: Target,
}

/// `runs approve`.
#[derive(Debug, clap::Args)]
pub(crate) struct ApproveArgs {
    /// The approval's id (from `toolbelt runs approvals`).
    id: String,
    /// Run the call with these arguments (a JSON object) instead of the model's.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    #[command(flatten)]
    target: Target,
}

/// `runs reject`.
#[derive(Debug, clap::Args)]
pub(crate) struct RejectArgs {
    /// The approval's id (from `toolbelt runs approvals`).
    id: String,
    /// Why, shown to the model.
    #[arg(long)]
    reason: Option<String>,
    #[command(flatten)]
    target: Target,
}

/// `runs answer`.
#[derive(Debug, clap::Args)]
pub(crate) struct AnswerArgs {
    /// The question's id (from `toolbelt runs approvals`).
    id: String,
    /// The answer.
    answer: String,
    #[command(flatten)]
    target: Target,
}

fn parse_status(s: &str) -> Result<RunStatus, String> {
    serde_json::from_value(json!(s)).map_err(|_| {
        format!(
            "`{s}` is not a run state; one of: running, waiting, succeeded, failed, cancelled, interrupted"
        )
    })
}

fn status_name(status: RunStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The server, or an error saying why the command needs one.
async fn server(target: &Target, what: &str) -> anyhow::Result<Api> {
    match target.connect().await? {
        Backend::Remote(api) => Ok(api),
        Backend::Local(_) => bail!(
            "`toolbelt runs {what}` needs --server URL (or TOOLBELT_SERVER): a waiting run is held \
             by the server process that runs it, not by the database"
        ),
    }
}

pub(crate) async fn run(cmd: RunsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        RunsCommand::Ls(args) => ls(args).await?,
        RunsCommand::Show(args) => show(args).await?,
        RunsCommand::Cancel(args) => {
            let api = server(&args.target, "cancel").await?;
            let view: RunView = from(api.send(Call::post(&["runs", &args.id, "cancel"])).await?)?;
            println!("{} is {}", view.id, status_name(view.status));
        }
        RunsCommand::Approvals(args) => approvals(args).await?,
        RunsCommand::Approve(args) => {
            let api = server(&args.target, "approve").await?;
            let body = match &args.args {
                Some(text) => {
                    let arguments: Value = serde_json::from_str(text)
                        .with_context(|| format!("--args is not JSON: {text}"))?;
                    if !arguments.is_object() {
                        bail!("--args must be a JSON object, e.g. '{{\"path\": \"a.txt\"}}'");
                    }
                    json!({"decision": "edit", "arguments": arguments})
                }
                None => json!({"decision": "approve"}),
            };
            let view = decide(&api, &args.id, body).await?;
            println!(
                "approved {} ({} in {}); the run goes on",
                view.id, view.tool, view.run_id
            );
        }
        RunsCommand::Reject(args) => {
            let api = server(&args.target, "reject").await?;
            let mut body = json!({"decision": "reject"});
            if let Some(reason) = &args.reason {
                body["reason"] = json!(reason);
            }
            let view = decide(&api, &args.id, body).await?;
            println!(
                "rejected {} ({} in {}); the model is told why",
                view.id, view.tool, view.run_id
            );
        }
        RunsCommand::Answer(args) => {
            let api = server(&args.target, "answer").await?;
            let call =
                Call::post(&["questions", &args.id, "answer"]).json(json!({"answer": args.answer}));
            api.send(call).await?;
            println!("answered {}; the run goes on", args.id);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Sends a decision on approval `id` (`POST /approvals/{id}`).
async fn decide(api: &Api, id: &str, body: Value) -> anyhow::Result<ApprovalView> {
    from(api.send(Call::post(&["approvals", id]).json(body)).await?)
}

fn from<T: serde::de::DeserializeOwned>(answer: Value) -> anyhow::Result<T> {
    serde_json::from_value(answer).context("the server's answer is not what its API documents")
}

async fn ls(args: LsArgs) -> anyhow::Result<()> {
    let runs: Vec<RunView> = match args.target.connect().await? {
        Backend::Local(store) => {
            let registry = RunRegistry::new().with_store(store);
            let mut runs = registry
                .stored_list(args.agent.as_deref(), args.status)
                .await;
            runs.truncate(usize::from(args.limit));
            runs
        }
        Backend::Remote(api) => {
            let call = Call::get(&["runs"])
                .query("agent", args.agent.clone())
                .query("status", args.status.map(status_name))
                .query("limit", Some(args.limit.to_string()));
            let page: Value = api.send(call).await?;
            from(page["items"].clone())?
        }
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else if runs.is_empty() {
        println!("no runs");
    } else {
        for run in &runs {
            let waiting = run.pending_approvals.len() + run.pending_questions.len();
            println!(
                "{:<36} {:<16} {:<11} {}{}",
                run.id,
                run.agent,
                status_name(run.status),
                clip(&run.input, 60),
                if waiting > 0 {
                    format!("  ({waiting} waiting for a person)")
                } else {
                    String::new()
                }
            );
        }
    }
    Ok(())
}

async fn show(args: ShowArgs) -> anyhow::Result<()> {
    let detail: RunDetail = match args.target.connect().await? {
        Backend::Local(store) => {
            RunRegistry::new()
                .with_store(store)
                .detail(&args.id)
                .await?
        }
        Backend::Remote(api) => from(api.send(Call::get(&["runs", &args.id])).await?)?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&detail)?);
        return Ok(());
    }
    let run = &detail.run;
    println!(
        "{} (agent {}, {}, {} in / {} out tokens)",
        run.id,
        run.agent,
        status_name(run.status),
        run.usage.input_tokens,
        run.usage.output_tokens
    );
    println!("  input: {}", clip(&run.input, 200));
    if let Some(answer) = &run.answer {
        println!("  answer: {}", clip(answer, 200));
    }
    if let Some(error) = &run.error {
        println!("  error: {error}");
    }
    for a in &run.pending_approvals {
        println!(
            "  waiting: approval {} for {} {}",
            a.id,
            a.tool,
            clip(&a.arguments.to_string(), 120)
        );
    }
    for q in &run.pending_questions {
        println!("  waiting: question {}: {}", q.id, clip(&q.question, 120));
    }
    if !detail.messages.is_empty() {
        println!("transcript:");
        for message in &detail.messages {
            print_message(message);
        }
    }
    Ok(())
}

fn print_message(message: &Message) {
    let value = serde_json::to_value(message).unwrap_or(Value::Null);
    let role = value["role"].as_str().unwrap_or("?");
    let content = match &value["content"] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    println!("  {role:>9}: {}", clip(&content, 160));
    for call in value["tool_calls"].as_array().into_iter().flatten() {
        println!(
            "  {:>9}  calls {} {}",
            "",
            call["name"].as_str().unwrap_or("?"),
            clip(&call["arguments"].to_string(), 120)
        );
    }
}

async fn approvals(args: ApprovalsArgs) -> anyhow::Result<()> {
    let api = server(&args.target, "approvals").await?;
    let approvals: Vec<ApprovalView> = from(api.send(Call::get(&["approvals"])).await?)?;
    let questions: Vec<QuestionView> = from(api.send(Call::get(&["questions"])).await?)?;
    if args.json {
        let doc = json!({"approvals": approvals, "questions": questions});
        println!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(());
    }
    if approvals.is_empty() && questions.is_empty() {
        println!("nothing is waiting for a person");
    }
    for a in &approvals {
        println!(
            "approval {}  {} wants {} {}",
            a.id,
            a.run_id,
            a.tool,
            clip(&a.arguments.to_string(), 120)
        );
    }
    for q in &questions {
        let choices = if q.choices.is_empty() {
            String::new()
        } else {
            format!(" [{}]", q.choices.join(" / "))
        };
        println!(
            "question {}  {}: {}{choices}",
            q.id,
            q.run_id.as_deref().unwrap_or("-"),
            clip(&q.question, 120)
        );
    }
    Ok(())
}
