//! `/api/v1/agents/{id}/runs`, `/api/v1/runs`, `/api/v1/approvals`, `/api/v1/questions`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolbelt_core::ApprovalResponse;
use toolbelt_host::runs::{
    ApprovalView, Held, QuestionView, RunDetail, RunEntry, RunError, RunEvent, RunStart, RunStatus,
    RunView,
};
use utoipa::{IntoParams, ToSchema};

use crate::agents::host_problem;
use crate::api::extract::{ApiJson, ApiQuery};
use crate::api::schema::{
    ApprovalViewSchema, QuestionViewSchema, RunDetailSchema, RunStatusSchema, RunViewSchema,
};
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;
use crate::tokens::Principal;

/// Body of `POST /agents/{id}/runs` and `POST /runs/{id}/continue`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunBody {
    /// The user's input.
    pub input: String,
}

/// `Ok` when `who` may act on run `id`'s agent. A run of an agent out of its reach is answered
/// as a run that does not exist (its lists do not show it either).
async fn reach_run(state: &AppState, who: &Principal, id: &str) -> Result<(), Problem> {
    if who.access.is_all() {
        return Ok(());
    }
    let agent = match state.runs().get(id) {
        Ok(entry) => entry.agent().to_owned(),
        Err(_) => state.runs().detail(id).await?.run.agent,
    };
    if who.access.allows(&agent) {
        return Ok(());
    }
    Err(Problem::not_found("run_not_found", format!("no run `{id}`")).with_pointer("id"))
}

/// Whether `who` may act on the agent of the run `run_id` this instance holds.
fn reaches_held_run(state: &AppState, who: &Principal, run_id: &str) -> bool {
    who.access.is_all()
        || state
            .runs()
            .get(run_id)
            .is_ok_and(|entry| who.access.allows(entry.agent()))
}

fn wants_sse(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"))
}

fn check_input(input: &str, max_bytes: usize) -> Result<(), Problem> {
    if input.trim().is_empty() {
        return Err(Problem::invalid_field("/input", "the input is empty"));
    }
    if input.len() > max_bytes {
        return Err(Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "input_too_large",
            format!(
                "/input: {} bytes is more than a run takes ({max_bytes} bytes, max_run_input_bytes)",
                input.len()
            ),
        )
        .with_pointer("/input"));
    }
    Ok(())
}

async fn answer(state: &AppState, entry: Arc<RunEntry>, headers: &HeaderMap) -> Response {
    if wants_sse(headers) {
        return sse(state, entry, 0).into_response();
    }
    let view = entry
        .settle(Duration::from_secs(state.config().run_wait_secs))
        .await;
    let status = if view.status.is_terminal() {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    let location = format!("/api/v1/runs/{}", view.id);
    let mut response = (status, Json(view)).into_response();
    if let Ok(value) = location.parse() {
        response.headers_mut().insert(header::LOCATION, value);
    }
    response
}

/// Starts a run of the agent. With `Accept: text/event-stream` the answer is
/// the run's events as SSE; otherwise JSON once the run ends or waits for a
/// person (`202` then, with its pending approvals). Disconnecting cancels nothing.
#[utoipa::path(post, path = "/api/v1/agents/{id}/runs", tag = "runs",
    params(("id" = String, Path, description = "Agent id")), request_body = RunBody,
    responses((status = 200, description = "Ended (JSON), or the event stream (SSE)", body = RunViewSchema),
        (status = 202, description = "Still running or waiting for a person", body = RunViewSchema),
        (status = 404, body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn start_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RunBody>,
) -> ApiResult<Response> {
    check_input(&body.input, state.config().max_run_input_bytes)?;
    let built = state
        .agents()
        .build_named(&id)
        .await
        .map_err(host_problem)?;
    let start = RunStart::new(body.input).with_model(built.model);
    let entry = state
        .runs()
        .start(built.agent, start, state.run_extensions(&id))
        .await?;
    Ok(answer(&state, entry, &headers).await)
}

/// Continues the conversation of an ended run with a new input (a new run).
#[utoipa::path(post, path = "/api/v1/runs/{id}/continue", tag = "runs",
    params(("id" = String, Path, description = "Run id")), request_body = RunBody,
    responses((status = 200, body = RunViewSchema), (status = 202, body = RunViewSchema),
        (status = 404, body = ProblemDocument), (status = 409, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn continue_run(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RunBody>,
) -> ApiResult<Response> {
    check_input(&body.input, state.config().max_run_input_bytes)?;
    reach_run(&state, &who, &id).await?;
    let detail = state.runs().detail(&id).await?;
    if !detail.run.status.is_terminal() {
        return Err(Problem::conflict(
            "run_active",
            format!("run `{id}` is still going; wait for it to end or cancel it first"),
        ));
    }
    let agent_name = detail.run.agent.clone();
    let built = state
        .agents()
        .build_named(&agent_name)
        .await
        .map_err(host_problem)?;
    let start = RunStart::new(body.input)
        .with_model(built.model)
        .continuing(id, detail.run.conversation_id, detail.messages);
    let entry = state
        .runs()
        .start(built.agent, start, state.run_extensions(&agent_name))
        .await?;
    Ok(answer(&state, entry, &headers).await)
}

/// Filters of `GET /runs`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct RunQuery {
    /// Only runs of this agent.
    pub agent: Option<String>,
    /// Only runs in this state.
    #[param(value_type = Option<RunStatusSchema>)]
    pub status: Option<RunStatus>,
    /// Start after this run id (from `next_cursor`).
    pub cursor: Option<String>,
    /// Page size, 1-500 (default 50).
    pub limit: Option<usize>,
}

/// A page of runs, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunPage {
    /// The runs.
    #[schema(value_type = Vec<RunViewSchema>)]
    pub items: Vec<RunView>,
    /// Pass as `cursor` for the next page.
    pub next_cursor: Option<String>,
}

/// Lists runs, newest first.
#[utoipa::path(get, path = "/api/v1/runs", tag = "runs", params(RunQuery),
    responses((status = 200, body = RunPage), (status = 400, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn list_runs(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    ApiQuery(query): ApiQuery<RunQuery>,
) -> ApiResult<Json<RunPage>> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(Problem::bad_request(
            "invalid_query",
            format!("`limit` must be 1-500, not {limit}"),
        )
        .with_pointer("limit"));
    }
    let mut runs = state.runs().list(query.agent.as_deref(), query.status);
    runs.extend(
        state
            .runs()
            .stored_list(query.agent.as_deref(), query.status)
            .await,
    );
    who.access.retain(&mut runs, |r| r.agent.as_str());
    runs.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then(b.id.cmp(&a.id)));
    if let Some(cursor) = &query.cursor {
        let at = runs.iter().position(|r| &r.id == cursor).ok_or_else(|| {
            Problem::bad_request(
                "invalid_query",
                format!("cursor `{cursor}` is not a run id"),
            )
            .with_pointer("cursor")
        })?;
        runs.drain(..=at);
    }
    let more = runs.len() > limit;
    runs.truncate(limit);
    let next_cursor = more.then(|| runs.last().map(|r| r.id.clone())).flatten();
    Ok(Json(RunPage {
        items: runs,
        next_cursor,
    }))
}

/// A run with its transcript and events.
#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, body = RunDetailSchema), (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<Json<RunDetail>> {
    reach_run(&state, &who, &id).await?;
    Ok(Json(state.runs().detail(&id).await?))
}

/// The run's events as SSE, from the start (or after `Last-Event-ID`), live until it ends.
#[utoipa::path(get, path = "/api/v1/runs/{id}/events", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, description = "text/event-stream of RunEvent", content_type = "text/event-stream"),
        (status = 404, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn run_events(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    reach_run(&state, &who, &id).await?;
    let entry = state.runs().get_or_stored(&id).await?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    Ok(sse(&state, entry, after).into_response())
}

/// Asks a run to stop.
#[utoipa::path(post, path = "/api/v1/runs/{id}/cancel", tag = "runs",
    params(("id" = String, Path, description = "Run id")),
    responses((status = 202, body = RunViewSchema), (status = 404, body = ProblemDocument), (status = 409, body = ProblemDocument),
        (status = 421, description = "another instance holds the run", body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<RunView>)> {
    reach_run(&state, &who, &id).await?;
    let entry = match state.runs().cancel(&id) {
        Ok(entry) => entry,
        Err(not_here) => {
            // An ended run leaves memory once stored.
            if let Some(status) = state.runs().ended_in_store(&id).await {
                return Err(RunError::RunFinished { id, status }.into());
            }
            return Err(elsewhere(&state, Held::Run(&id), not_here).await);
        }
    };
    let view = entry.settle(Duration::from_secs(2)).await;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

fn sse(
    state: &AppState,
    entry: Arc<RunEntry>,
    after: usize,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let shutdown = state.shutdown().clone();
    let stream = futures::stream::unfold(
        (
            entry,
            after,
            None::<tokio::sync::watch::Receiver<u64>>,
            false,
        ),
        move |(entry, cursor, rx, done)| {
            let shutdown = shutdown.clone();
            async move {
                if done {
                    return None;
                }
                let mut rx = rx.unwrap_or_else(|| entry.watch());
                loop {
                    let (events, ended) = entry.events_from(cursor);
                    if !events.is_empty() {
                        let next = cursor + events.len();
                        let batch: Vec<Result<Event, Infallible>> =
                            events.iter().map(|e| Ok(to_sse(e))).collect();
                        let finished = ended && entry.events_from(next).0.is_empty();
                        return Some((
                            futures::stream::iter(batch),
                            (entry, next, Some(rx), finished),
                        ));
                    }
                    if ended {
                        return None;
                    }
                    tokio::select! {
                        changed = rx.changed() => if changed.is_err() { return None; },
                        () = shutdown.cancelled() => {
                            let bye = Event::default().event("shutdown")
                                .data(r#"{"reason":"the server is shutting down; the run goes on if the server does; reconnect with Last-Event-ID"}"#);
                            return Some((futures::stream::iter(vec![Ok(bye)]), (entry, cursor, Some(rx), true)));
                        }
                    }
                }
            }
        },
    );
    use futures::StreamExt as _;
    Sse::new(stream.flatten()).keep_alive(KeepAlive::default())
}

fn to_sse(event: &RunEvent) -> Event {
    Event::default()
        .id(event.seq.to_string())
        .event(event.kind())
        .data(serde_json::to_string(event).unwrap_or_default())
}

/// Lists the calls waiting for a decision, across runs.
#[utoipa::path(get, path = "/api/v1/approvals", tag = "approvals",
    responses((status = 200, body = Vec<ApprovalViewSchema>)), security(("bearer" = [])))]
pub(crate) async fn list_approvals(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
) -> Json<Vec<ApprovalView>> {
    let mut approvals = state.runs().approvals();
    approvals.retain(|a| reaches_held_run(&state, &who, &a.run_id));
    Json(approvals)
}

/// A decision on a pending call.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalBody {
    /// `approve`, `edit` (run with `arguments` instead) or `reject`.
    pub decision: ApprovalDecision,
    /// The edited arguments (with `edit`).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub arguments: Option<Value>,
    /// Why (with `reject`; shown to the model).
    #[serde(default)]
    pub reason: Option<String>,
}

/// What to do with a pending call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run it as is.
    Approve,
    /// Run it with other arguments.
    Edit,
    /// Do not run it.
    Reject,
}

/// Approves, edits or rejects a pending call; the run goes on.
#[utoipa::path(post, path = "/api/v1/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "Approval id")), request_body = ApprovalBody,
    responses((status = 200, body = ApprovalViewSchema), (status = 404, body = ProblemDocument), (status = 409, body = ProblemDocument),
        (status = 421, description = "another instance holds the run", body = ProblemDocument), (status = 422, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn resolve_approval(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ApprovalBody>,
) -> ApiResult<Json<ApprovalView>> {
    // Only a token that may run the agent answers for it; to any other the approval does not
    // exist.
    if let Some(pending) = state.runs().approvals().into_iter().find(|a| a.id == id)
        && !reaches_held_run(&state, &who, &pending.run_id)
    {
        return Err(Problem::not_found(
            "approval_not_found",
            format!("no pending approval `{id}`"),
        )
        .with_pointer("id"));
    }
    let response = match body.decision {
        ApprovalDecision::Approve => ApprovalResponse::Approve,
        ApprovalDecision::Edit => match body.arguments {
            Some(args @ Value::Object(_)) => ApprovalResponse::Edit(args),
            Some(_) => {
                return Err(Problem::invalid_field(
                    "/arguments",
                    "must be a JSON object",
                ));
            }
            None => {
                return Err(Problem::invalid_field(
                    "/arguments",
                    "`edit` needs the new arguments",
                ));
            }
        },
        ApprovalDecision::Reject => ApprovalResponse::Reject(
            body.reason
                .unwrap_or_else(|| "rejected by a person".to_owned()),
        ),
    };
    match state.runs().resolve(&id, response) {
        Ok(view) => Ok(Json(view)),
        Err(not_here) => Err(elsewhere(&state, Held::Approval(&id), not_here).await),
    }
}

/// The problem of a request naming something this instance does not hold: where it lives
/// when another instance holds it, `not_here` otherwise.
async fn elsewhere(state: &AppState, what: Held<'_>, not_here: RunError) -> Problem {
    if !not_here.is_not_found() {
        return not_here.into();
    }
    state
        .runs()
        .held_elsewhere(what)
        .await
        .unwrap_or(not_here)
        .into()
}

/// Lists the questions waiting for an answer, across runs.
#[utoipa::path(get, path = "/api/v1/questions", tag = "approvals",
    responses((status = 200, body = Vec<QuestionViewSchema>)), security(("bearer" = [])))]
pub(crate) async fn list_questions(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
) -> Json<Vec<QuestionView>> {
    let mut questions = state.runs().questions();
    questions.retain(|q| {
        who.access.is_all()
            || q.run_id
                .as_deref()
                .is_some_and(|run| reaches_held_run(&state, &who, run))
    });
    Json(questions)
}

/// An answer to a question.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerBody {
    /// The answer text.
    pub answer: String,
}

/// Answers a question; the run goes on.
#[utoipa::path(post, path = "/api/v1/questions/{id}/answer", tag = "approvals",
    params(("id" = String, Path, description = "Question id")), request_body = AnswerBody,
    responses((status = 204, description = "answered"), (status = 404, body = ProblemDocument), (status = 409, body = ProblemDocument),
        (status = 421, description = "another instance holds the run", body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn answer_question(
    State(state): State<AppState>,
    Extension(who): Extension<Principal>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<AnswerBody>,
) -> ApiResult<StatusCode> {
    if !who.access.is_all()
        && let Some(question) = state.runs().questions().into_iter().find(|q| q.id == id)
        && !question
            .run_id
            .as_deref()
            .is_some_and(|run| reaches_held_run(&state, &who, run))
    {
        return Err(
            Problem::not_found("question_not_found", format!("no open question `{id}`"))
                .with_pointer("id"),
        );
    }
    if let Err(not_here) = state.runs().answer_question(&id, body.answer) {
        return Err(elsewhere(&state, Held::Question(&id), not_here).await);
    }
    Ok(StatusCode::NO_CONTENT)
}
