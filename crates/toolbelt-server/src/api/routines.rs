//! `/api/v1/routines`: prompts an agent runs on a schedule, and the history of each.

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use toolbelt_tools::{
    MissedPolicy, RoutineDraft, RoutineError, RoutineInfo, RoutineStore, SCHEDULE_FORMS, Schedule,
};
use utoipa::ToSchema;

use crate::api::extract::ApiJson;
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;
use crate::tokens::Principal;

/// Body of `POST /routines`: the same fields as the `routine` tool's `create`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoutineBody {
    /// Unique name.
    pub name: String,
    /// The agent that runs the prompt (default `default`).
    #[serde(default)]
    pub agent: Option<String>,
    /// What the agent is asked each time.
    pub prompt: String,
    /// Cron expression, 5 fields (`0 9 * * *`) or 6 with seconds first; or give `every_seconds`.
    #[serde(default)]
    pub cron: Option<String>,
    /// IANA time zone of `cron` (default UTC).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Run every this many seconds instead of a cron expression.
    #[serde(default)]
    pub every_seconds: Option<u64>,
    /// Occurrences missed while no server ran: `skip` (default), `run_once` or `run_all`.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub missed: Option<MissedPolicy>,
}

/// A routine as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RoutineView {
    /// Unique name.
    pub name: String,
    /// The agent that runs the prompt.
    pub agent: String,
    /// What the agent is asked each time.
    pub prompt: String,
    /// `cron` (with `expr` and `tz`) or `interval` (with `seconds`).
    #[schema(value_type = Object)]
    pub schedule: Schedule,
    /// The schedule in words.
    pub describe: String,
    /// `skip`, `run_once` or `run_all`.
    pub missed: String,
    /// Paused routines do not run.
    pub paused: bool,
    /// The next occurrence (Unix ms), unless paused.
    pub next_due_ms: Option<i64>,
    /// A `run now` is waiting for the scheduler.
    pub run_requested: bool,
    /// How the latest occurrence ended.
    pub last_status: Option<String>,
    /// When it was created (Unix ms).
    pub created_at_ms: i64,
}

impl From<RoutineInfo> for RoutineView {
    fn from(info: RoutineInfo) -> Self {
        Self {
            describe: info.schedule.describe(),
            name: info.name,
            agent: info.agent,
            prompt: info.prompt,
            schedule: info.schedule,
            missed: info.missed.as_str().to_owned(),
            paused: info.paused,
            next_due_ms: info.next_due_ms,
            run_requested: info.run_requested,
            last_status: info.last_status,
            created_at_ms: info.created_at_ms,
        }
    }
}

/// One occurrence of a routine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RoutineRunView {
    /// The occurrence (Unix ms); for `run now`, when it was asked for.
    pub due_at_ms: i64,
    /// Asked for with `run now`.
    pub manual: bool,
    /// `running`, `completed`, `failed`, `interrupted` or `missed`.
    pub status: String,
    /// The server instance that ran it.
    pub claimed_by: String,
    /// When it ended (Unix ms).
    pub finished_at_ms: Option<i64>,
    /// The agent run (see `GET /runs/{id}`).
    pub run_id: Option<String>,
    /// The answer's first line, or why it failed.
    pub detail: Option<String>,
}

/// A routine with its latest occurrences, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RoutineDetail {
    /// The routine.
    pub routine: RoutineView,
    /// Its latest 50 occurrences.
    pub runs: Vec<RoutineRunView>,
}

/// The routines store, when `who` may act on the agent of routine `name`. A routine of an
/// agent out of its reach is answered as one that does not exist, as the `routine` tool does.
async fn reach(
    state: &AppState,
    who: &Principal,
    name: &str,
) -> Result<toolbelt_store::StoreRoutines, Problem> {
    let store = routines(state)?;
    if !who.access.is_all() {
        let info = store.get(name).await.map_err(problem)?;
        if !who.access.allows(&info.agent) {
            return Err(problem(RoutineError::NotFound {
                name: name.to_owned(),
            }));
        }
    }
    Ok(store)
}

fn routines(state: &AppState) -> Result<toolbelt_store::StoreRoutines, Problem> {
    state
        .store()
        .map(toolbelt_store::Store::routines)
        .ok_or_else(|| Problem::no_database("routines"))
}

fn problem(err: RoutineError) -> Problem {
    match err {
        RoutineError::Invalid { pointer, reason } => {
            Problem::invalid_field(pointer, reason).with_code("invalid_routine")
        }
        RoutineError::NotFound { .. } => Problem::not_found("routine_not_found", err.to_string()),
        RoutineError::AlreadyExists { .. } => Problem::conflict("routine_exists", err.to_string()),
        other => Problem::internal(other),
    }
}

/// Lists the routines.
#[utoipa::path(get, path = "/api/v1/routines", tag = "routines",
    responses((status = 200, body = Vec<RoutineView>), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn list_routines(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
) -> ApiResult<Json<Vec<RoutineView>>> {
    let mut all = routines(&state)?.list().await.map_err(problem)?;
    who.access.retain(&mut all, |r| r.agent.as_str());
    Ok(Json(all.into_iter().map(RoutineView::from).collect()))
}

/// Creates a routine. Schedules: cron (5 or 6 fields, with an IANA time zone) or an interval.
#[utoipa::path(post, path = "/api/v1/routines", tag = "routines", request_body = RoutineBody,
    responses((status = 201, body = RoutineView), (status = 409, body = ProblemDocument),
        (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn create_routine(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiJson(body): ApiJson<RoutineBody>,
) -> ApiResult<(StatusCode, Json<RoutineView>)> {
    let store = routines(&state)?;
    let schedule = match (body.cron, body.every_seconds) {
        (Some(expr), None) => Schedule::cron(&expr, body.timezone.as_deref().unwrap_or("UTC")),
        (None, Some(seconds)) => Schedule::every(seconds),
        _ => Err(RoutineError::invalid(
            "/cron",
            format!("give exactly one of `cron` and `every_seconds`: {SCHEDULE_FORMS}"),
        )),
    }
    .map_err(problem)?;
    let agent = body.agent.unwrap_or_else(|| "default".to_owned());
    who.access
        .check(&agent)
        .map_err(|e| crate::agents::host_problem(e).with_pointer("/agent"))?;
    state
        .agents()
        .record_for(&agent, &who.access)
        .await
        .map_err(|e| {
            let p = crate::agents::host_problem(e);
            Problem::invalid_field("/agent", p.detail.clone()).with_code("agent_not_found")
        })?;
    let draft = RoutineDraft::new(body.name.trim(), agent, body.prompt.trim(), schedule)
        .with_missed(body.missed.unwrap_or_default());
    draft.validate().map_err(problem)?;
    let info = store.create(draft).await.map_err(problem)?;
    Ok((StatusCode::CREATED, Json(info.into())))
}

/// One routine with its latest occurrences.
#[utoipa::path(get, path = "/api/v1/routines/{name}", tag = "routines",
    params(("name" = String, Path, description = "Routine name")),
    responses((status = 200, body = RoutineDetail), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn get_routine(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> ApiResult<Json<RoutineDetail>> {
    let store = reach(&state, &who, &name).await?;
    let info = store.get(&name).await.map_err(problem)?;
    let runs = store.runs(Some(&name), 50).await.map_err(problem)?;
    Ok(Json(RoutineDetail {
        routine: info.into(),
        runs: runs
            .into_iter()
            .map(|r| RoutineRunView {
                due_at_ms: r.due_at,
                manual: r.manual,
                status: r.status,
                claimed_by: r.claimed_by,
                finished_at_ms: r.finished_at,
                run_id: r.run_id,
                detail: r.detail,
            })
            .collect(),
    }))
}

/// Deletes a routine (its history goes with it).
#[utoipa::path(delete, path = "/api/v1/routines/{name}", tag = "routines",
    params(("name" = String, Path, description = "Routine name")),
    responses((status = 204), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn delete_routine(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    reach(&state, &who, &name)
        .await?
        .delete(&name)
        .await
        .map_err(problem)?;
    Ok(StatusCode::NO_CONTENT)
}

async fn set_paused(
    state: &AppState,
    who: &Principal,
    name: &str,
    paused: bool,
) -> ApiResult<Json<RoutineView>> {
    let info = reach(state, who, name)
        .await?
        .set_paused(name, paused)
        .await
        .map_err(problem)?;
    Ok(Json(info.into()))
}

/// Pauses a routine: no occurrence runs until it is resumed.
#[utoipa::path(post, path = "/api/v1/routines/{name}/pause", tag = "routines",
    params(("name" = String, Path, description = "Routine name")),
    responses((status = 200, body = RoutineView), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn pause_routine(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> ApiResult<Json<RoutineView>> {
    set_paused(&state, &who, &name, true).await
}

/// Resumes a routine from now (what fell due while paused is not owed).
#[utoipa::path(post, path = "/api/v1/routines/{name}/resume", tag = "routines",
    params(("name" = String, Path, description = "Routine name")),
    responses((status = 200, body = RoutineView), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn resume_routine(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> ApiResult<Json<RoutineView>> {
    set_paused(&state, &who, &name, false).await
}

/// Runs a routine at the scheduler's next tick, besides its schedule.
#[utoipa::path(post, path = "/api/v1/routines/{name}/run", tag = "routines",
    params(("name" = String, Path, description = "Routine name")),
    responses((status = 202, body = RoutineView), (status = 404, body = ProblemDocument), (status = 503, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn run_routine(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(name): Path<String>,
) -> ApiResult<(StatusCode, Json<RoutineView>)> {
    let info = reach(&state, &who, &name)
        .await?
        .run_now(&name)
        .await
        .map_err(problem)?;
    Ok((StatusCode::ACCEPTED, Json(info.into())))
}
