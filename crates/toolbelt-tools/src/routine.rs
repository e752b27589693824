//! Group `routine`: prompts an agent runs on a schedule (the `routine` tool: create,
//! list, pause, resume, delete, run now).
//!
//! Routines live behind the [`RoutineStore`] trait (crate `toolbelt-persist`), reached
//! through the [`Routines`] context extension; `toolbelt-store` keeps them in SQLite or
//! Postgres and its scheduler runs them.

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;
use toolbelt_persist::{
    MissedPolicy, RoutineDraft, RoutineInfo, RoutineStore, SCHEDULE_FORMS, Schedule,
    describe_routine, format_ms,
};

/// The routines the `routine` tool manages: a context extension around a
/// [`RoutineStore`], for one agent. The tool sees, creates and changes only that agent's
/// routines, and every routine it creates runs that agent: a model cannot schedule work for
/// another agent or touch routines it does not own (the REST API, admin-only, manages all).
#[derive(Clone)]
pub struct Routines {
    store: Arc<dyn RoutineStore>,
    default_agent: String,
    default_tz: String,
}

impl fmt::Debug for Routines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Routines")
            .field("default_agent", &self.default_agent)
            .field("default_tz", &self.default_tz)
            .finish_non_exhaustive()
    }
}

impl Routines {
    /// `store`, seen as `agent`'s routines: the tool lists and changes only those, and the
    /// routines it creates run `agent`. Cron without `timezone` uses UTC.
    pub fn new(store: Arc<dyn RoutineStore>, default_agent: impl Into<String>) -> Self {
        Self {
            store,
            default_agent: default_agent.into(),
            default_tz: "UTC".to_owned(),
        }
    }

    /// Sets the time zone of cron expressions given without one.
    #[must_use]
    pub fn with_default_tz(mut self, tz: impl Into<String>) -> Self {
        self.default_tz = tz.into();
        self
    }

    /// The store.
    pub fn store(&self) -> &dyn RoutineStore {
        &*self.store
    }
}

/// What the `routine` tool does.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RoutineAction {
    Create,
    List,
    Pause,
    Resume,
    Delete,
    RunNow,
}

fn info_json(info: &RoutineInfo) -> serde_json::Value {
    json!({
        "name": info.name,
        "agent": info.agent,
        "prompt": info.prompt,
        "schedule": info.schedule,
        "missed": info.missed,
        "paused": info.paused,
        "next_run": info.next_due_ms.map(format_ms),
        "run_requested": info.run_requested,
        "last_status": info.last_status,
    })
}

fn required<'a>(
    value: Option<&'a String>,
    pointer: &str,
    action: &str,
) -> Result<&'a str, ToolError> {
    value
        .map(String::as_str)
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| {
            ToolError::invalid_argument(pointer, format!("`{action}` needs `{}`", &pointer[1..]))
        })
}

/// The calling agent's routine `name`, or "no routine named …": another agent's routine is
/// answered exactly as a missing one.
async fn own(routines: &Routines, name: &str) -> Result<(), ToolError> {
    let all = routines.store().list().await?;
    if all
        .iter()
        .any(|r| r.name == name && r.agent == routines.default_agent)
    {
        Ok(())
    } else {
        Err(toolbelt_persist::RoutineError::NotFound {
            name: name.to_owned(),
        }
        .into())
    }
}

/// Run a prompt on a schedule (定时, every morning, cron): create, list, pause, resume, delete or run a routine now.
// One argument per schema property: a struct would hide them from `#[tool]`.
// A routine runs this agent later, unattended, with its tools: every change is a person's
// decision (approval), and the tool never names another agent.
#[allow(clippy::too_many_arguments)]
#[tool(tags("routine"), mutating, needs_approval = true)]
pub async fn routine(
    ctx: &ToolContext,
    /// create, list, pause, resume, delete or run_now.
    action: RoutineAction,
    /// The routine's name (all actions but list).
    name: Option<String>,
    /// create: what the agent is asked each time (e.g. "Remind me to read my email").
    prompt: Option<String>,
    /// create: cron expression, 5 fields (`0 9 * * *` = every day at 09:00) or 6 with seconds first.
    cron: Option<String>,
    /// create: IANA time zone of the cron expression (e.g. `Asia/Shanghai`); default UTC.
    timezone: Option<String>,
    /// create: run every this many seconds instead of a cron expression.
    every_seconds: Option<u64>,
    /// create: occurrences missed while the server was down: skip (default), run_once or run_all.
    missed: Option<MissedPolicy>,
) -> Result<ToolOutput, ToolError> {
    let routines = ctx.get::<Routines>().ok_or_else(|| {
        ToolError::failed(
            "routines are not configured; the host must add a `Routines` extension to the tool context",
        )
    })?;
    let store = routines.store();
    let (text, value) = match action {
        RoutineAction::List => {
            let mut all = store.list().await?;
            all.retain(|r| r.agent == routines.default_agent);
            let text = if all.is_empty() {
                "no routines".to_owned()
            } else {
                all.iter()
                    .map(describe_routine)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            (
                text,
                json!({ "routines": all.iter().map(info_json).collect::<Vec<_>>() }),
            )
        }
        RoutineAction::Create => {
            let name = required(name.as_ref(), "/name", "create")?;
            let prompt = required(prompt.as_ref(), "/prompt", "create")?;
            let schedule = match (cron, every_seconds) {
                (Some(expr), None) => {
                    Schedule::cron(&expr, timezone.as_deref().unwrap_or(&routines.default_tz))?
                }
                (None, Some(seconds)) => Schedule::every(seconds)?,
                _ => {
                    return Err(ToolError::invalid_argument(
                        "/cron",
                        format!("give exactly one of `cron` and `every_seconds`: {SCHEDULE_FORMS}"),
                    ));
                }
            };
            let draft = RoutineDraft::new(
                name.trim(),
                routines.default_agent.clone(),
                prompt.trim(),
                schedule,
            )
            .with_missed(missed.unwrap_or_default());
            draft.validate()?;
            let info = store.create(draft).await?;
            (
                format!("created {}", describe_routine(&info)),
                info_json(&info),
            )
        }
        RoutineAction::Pause | RoutineAction::Resume => {
            let name = required(name.as_ref(), "/name", "pause")?;
            own(routines, name).await?;
            let info = store
                .set_paused(name, action == RoutineAction::Pause)
                .await?;
            (describe_routine(&info), info_json(&info))
        }
        RoutineAction::Delete => {
            let name = required(name.as_ref(), "/name", "delete")?;
            own(routines, name).await?;
            store.delete(name).await?;
            (
                format!("deleted routine `{name}`"),
                json!({ "deleted": name }),
            )
        }
        RoutineAction::RunNow => {
            let name = required(name.as_ref(), "/name", "run_now")?;
            own(routines, name).await?;
            let info = store.run_now(name).await?;
            (
                format!("routine `{name}` will run at the scheduler's next tick"),
                info_json(&info),
            )
        }
    };
    let mut out = ToolOutput::text(text);
    out.json = Some(value);
    Ok(out)
}
