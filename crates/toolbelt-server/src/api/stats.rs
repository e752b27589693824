//! `/api/v1/stats` (time series from the run log, for the console's overview) and
//! `/api/v1/stored-tools` (every stored tool with its source and switches, enabled or not).

use std::time::{SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::extract::ApiQuery;
use crate::problem::{ApiResult, Problem, ProblemDocument};
use crate::state::AppState;

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Window and resolution of `GET /stats`.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StatsQuery {
    /// How far back, in minutes, 1-43200 (default 1440: one day).
    pub minutes: Option<i64>,
    /// Bucket width in seconds, 10-86400 (default: the window divided into 48 buckets).
    pub bucket_secs: Option<i64>,
    /// Time series for this many of the most called tools, 1-100 (default 8); `totals` lists
    /// up to 50 times as many tools.
    pub top: Option<i64>,
}

/// Calls of one tool in one bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ToolBucket {
    /// The tool.
    pub tool: String,
    /// Bucket start, Unix ms.
    pub at_ms: i64,
    /// Calls.
    pub calls: i64,
    /// Failed calls.
    pub errors: i64,
    /// Mean duration, ms.
    pub mean_ms: f64,
    /// Longest call, ms.
    pub max_ms: i64,
}

/// Routing decisions in one bucket (this server process only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RouteBucket {
    /// Bucket start, Unix ms.
    pub at_ms: i64,
    /// Decisions made.
    pub decisions: u64,
    /// Of which fell back to the fallback tool set.
    pub fallbacks: u64,
}

/// Tokens of one agent in the window.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AgentTokenView {
    /// The agent.
    pub agent: String,
    /// Runs.
    pub runs: i64,
    /// Prompt tokens.
    pub input_tokens: i64,
    /// Completion tokens.
    pub output_tokens: i64,
}

/// Time series for the overview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatsView {
    /// Window start, Unix ms.
    pub since_ms: i64,
    /// Bucket width, ms.
    pub bucket_ms: i64,
    /// Tool calls per bucket of the `top` most called tools, from the stored run log (every
    /// instance on the database).
    pub tools: Vec<ToolBucket>,
    /// Tool calls over the whole window per tool, most called first (`at_ms` = `since_ms`).
    pub totals: Vec<ToolBucket>,
    /// Routing decisions and fallbacks per bucket, counted by this process since it started.
    pub routes: Vec<RouteBucket>,
    /// Runs and tokens per agent, from the stored run log.
    pub agents: Vec<AgentTokenView>,
}

/// Calls, errors and latency per tool over time, routing fallbacks, tokens per agent.
#[utoipa::path(get, path = "/api/v1/stats", tag = "stats", params(StatsQuery),
    responses((status = 200, body = StatsView), (status = 400, body = ProblemDocument),
        (status = 503, body = ProblemDocument)), security(("bearer" = [])))]
pub(crate) async fn stats(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<StatsQuery>,
) -> ApiResult<Json<StatsView>> {
    let minutes = query.minutes.unwrap_or(1440);
    if !(1..=43_200).contains(&minutes) {
        return Err(Problem::bad_request(
            "invalid_query",
            format!("`minutes` must be 1-43200, not {minutes}"),
        )
        .with_pointer("minutes"));
    }
    let bucket_ms = match query.bucket_secs {
        Some(s) if (10..=86_400).contains(&s) => s * 1000,
        Some(s) => {
            return Err(Problem::bad_request(
                "invalid_query",
                format!("`bucket_secs` must be 10-86400, not {s}"),
            )
            .with_pointer("bucket_secs"));
        }
        None => (minutes * 60_000 / 48).max(10_000),
    };
    let top = query.top.unwrap_or(8);
    if !(1..=100).contains(&top) {
        return Err(Problem::bad_request(
            "invalid_query",
            format!("`top` must be 1-100, not {top}"),
        )
        .with_pointer("top"));
    }
    let now = now_ms();
    let since_ms = (now - minutes * 60_000) / bucket_ms * bucket_ms;
    let (tools, totals, agents) = match state.store() {
        Some(store) => {
            if let Some(log) = state.run_log() {
                let _ = log.flush().await;
            }
            let tools = store
                .run_log()
                .tool_call_stats(since_ms, bucket_ms, top)
                .await
                .map_err(Problem::from)?;
            let totals = store
                .run_log()
                .tool_call_totals(since_ms, top * 50)
                .await
                .map_err(Problem::from)?;
            let agents = store
                .run_log()
                .agent_token_stats(since_ms)
                .await
                .map_err(Problem::from)?;
            (tools, totals, agents)
        }
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    let view = |b: toolbelt_store::ToolCallBucket| ToolBucket {
        mean_ms: if b.calls > 0 {
            b.total_ms as f64 / b.calls as f64
        } else {
            0.0
        },
        tool: b.tool,
        at_ms: b.bucket_start,
        calls: b.calls,
        errors: b.errors,
        max_ms: b.max_ms,
    };
    let tools = tools.into_iter().map(view).collect();
    let totals = totals.into_iter().map(view).collect();
    let agents = agents
        .into_iter()
        .map(|a| AgentTokenView {
            agent: a.agent,
            runs: a.runs,
            input_tokens: a.tokens_in,
            output_tokens: a.tokens_out,
        })
        .collect();
    let mut routes: Vec<RouteBucket> = Vec::new();
    for (minute, decisions, fallbacks) in crate::metrics::route_minutes_since(since_ms) {
        let at_ms = minute / bucket_ms * bucket_ms;
        match routes.last_mut() {
            Some(last) if last.at_ms == at_ms => {
                last.decisions += decisions;
                last.fallbacks += fallbacks;
            }
            _ => routes.push(RouteBucket {
                at_ms,
                decisions,
                fallbacks,
            }),
        }
    }
    Ok(Json(StatsView {
        since_ms,
        bucket_ms,
        tools,
        totals,
        routes,
        agents,
    }))
}

/// A stored tool in a list: where it comes from and whether it is switched on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StoredToolSummary {
    /// The name.
    pub name: String,
    /// `builtin`, `declarative`, `mcp`, ...
    pub source: String,
    /// Whether it is switched on.
    pub enabled: bool,
    /// Whether its code is missing from this binary.
    pub missing: bool,
    /// The version in use.
    pub current_version: i64,
    /// Whether availability rules restrict which agents may use it.
    pub restricted: bool,
}

/// Every stored tool (enabled or not), by name; `[]` without a store.
#[utoipa::path(get, path = "/api/v1/stored-tools", tag = "tools",
    responses((status = 200, body = Vec<StoredToolSummary>), (status = 401, body = ProblemDocument)),
    security(("bearer" = [])))]
pub(crate) async fn list_stored_tools(
    State(state): State<AppState>,
) -> ApiResult<Json<Vec<StoredToolSummary>>> {
    let Some(store) = state.store() else {
        return Ok(Json(Vec::new()));
    };
    let mut tools: Vec<StoredToolSummary> = store
        .tools()
        .states()
        .await
        .map_err(Problem::from)?
        .into_iter()
        .map(|r| StoredToolSummary {
            restricted: r.availability != toolbelt_store::Availability::default(),
            source: r.source.as_str().to_owned(),
            name: r.name,
            enabled: r.enabled,
            missing: r.missing,
            current_version: r.current_version,
        })
        .collect();
    // Byte order, as `/tools` uses (a Postgres collation may order otherwise).
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(tools))
}
