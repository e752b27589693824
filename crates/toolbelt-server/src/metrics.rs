//! Prometheus metrics: one process-wide recorder, names and the helpers that record; and
//! the routing decisions per minute of this process that `GET /api/v1/stats` reports.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use toolbelt_core::CallResult;
use toolbelt_host::runs::{RunObserver, RunStatus};

/// Tool calls by tool and outcome (`ok` or the error kind).
pub const TOOL_CALLS: &str = "toolbelt_tool_calls_total";
/// Tool call wall time by tool, in seconds.
pub const TOOL_CALL_SECONDS: &str = "toolbelt_tool_call_duration_seconds";
/// Routing decisions by outcome and whether the router fell back to every tool.
pub const ROUTE_DECISIONS: &str = "toolbelt_route_decisions_total";
/// Model tokens by agent, model and direction (`input` / `output`).
pub const AGENT_TOKENS: &str = "toolbelt_agent_tokens_total";
/// Finished runs by agent and outcome.
pub const RUNS: &str = "toolbelt_runs_total";
/// HTTP requests by method, route and status.
pub const HTTP_REQUESTS: &str = "toolbelt_http_requests_total";
/// HTTP request latency by route, in seconds.
pub const HTTP_SECONDS: &str = "toolbelt_http_request_duration_seconds";

const BUCKETS: &[f64] = &[
    0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process-wide Prometheus handle, installing the recorder on first use.
///
/// `None` when another recorder was installed first (then `/metrics` says so).
pub fn handle() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), BUCKETS)
                .ok()?;
            match builder.install_recorder() {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "metrics recorder not installed");
                    None
                }
            }
        })
        .clone()
}

fn describe() {
    metrics::describe_counter!(TOOL_CALLS, "Tool calls by tool and outcome");
    metrics::describe_histogram!(
        TOOL_CALL_SECONDS,
        metrics::Unit::Seconds,
        "Tool call wall time by tool"
    );
    metrics::describe_counter!(ROUTE_DECISIONS, "Routing decisions by outcome and fallback");
    metrics::describe_counter!(AGENT_TOKENS, "Model tokens by agent, model and direction");
    metrics::describe_counter!(RUNS, "Finished agent runs by agent and outcome");
    metrics::describe_counter!(HTTP_REQUESTS, "HTTP requests by method, route and status");
    metrics::describe_histogram!(
        HTTP_SECONDS,
        metrics::Unit::Seconds,
        "HTTP request latency by route"
    );
}

/// Records one finished tool call.
pub fn record_call(result: &CallResult) {
    record_tool_call(
        result.call.name.clone(),
        result
            .outcome
            .as_ref()
            .err()
            .map(toolbelt_core::ToolError::kind),
        result.duration,
    );
}

/// Records one tool call from its parts (an executor's `CallFinished` event).
pub fn record_tool_call(
    tool: String,
    error: Option<toolbelt_core::ToolErrorKind>,
    duration: std::time::Duration,
) {
    let outcome = error.map_or("ok", kind_name);
    metrics::counter!(TOOL_CALLS, "tool" => tool.clone(), "outcome" => outcome).increment(1);
    metrics::histogram!(TOOL_CALL_SECONDS, "tool" => tool).record(duration.as_secs_f64());
}

/// Records one routing decision.
pub fn record_route(decision: &toolbelt_router::RouteDecision) {
    let outcome = match &decision.outcome {
        toolbelt_router::RouteOutcome::Tools => "tools",
        toolbelt_router::RouteOutcome::Direct => "direct",
        toolbelt_router::RouteOutcome::Clarify { .. } => "clarify",
        _ => "other",
    };
    count_route(decision.fallback);
    let fallback = if decision.fallback { "true" } else { "false" };
    metrics::counter!(ROUTE_DECISIONS, "outcome" => outcome, "fallback" => fallback).increment(1);
}

/// Minutes of routing decisions kept in memory for `GET /api/v1/stats`.
const ROUTE_MINUTES: usize = 24 * 60;

/// Routing decisions per minute of this process: (minute start ms, decisions, fallbacks).
static ROUTES: Mutex<VecDeque<(i64, u64, u64)>> = Mutex::new(VecDeque::new());

/// Counts one routing decision in the current minute (called by [`record_route`]).
fn count_route(fallback: bool) {
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let minute = now_ms / 60_000 * 60_000;
    let Ok(mut routes) = ROUTES.lock() else {
        return;
    };
    match routes.back_mut() {
        Some(last) if last.0 == minute => {
            last.1 += 1;
            last.2 += u64::from(fallback);
        }
        _ => {
            routes.push_back((minute, 1, u64::from(fallback)));
            while routes.len() > ROUTE_MINUTES {
                routes.pop_front();
            }
        }
    }
}

/// The routing decisions this process counted per minute, from the minute starting at
/// `since_ms` (Unix ms) on, oldest first: (minute start ms, decisions, fallbacks).
pub(crate) fn route_minutes_since(since_ms: i64) -> Vec<(i64, u64, u64)> {
    ROUTES.lock().map_or_else(
        |_| Vec::new(),
        |minutes| {
            minutes
                .iter()
                .filter(|m| m.0 >= since_ms)
                .copied()
                .collect()
        },
    )
}

/// Records the tokens of a run.
pub fn record_tokens(agent: &str, model: &str, usage: toolbelt_llm::Usage) {
    let (agent, model) = (agent.to_owned(), model.to_owned());
    metrics::counter!(AGENT_TOKENS, "agent" => agent.clone(), "model" => model.clone(), "direction" => "input")
        .increment(usage.input_tokens);
    metrics::counter!(AGENT_TOKENS, "agent" => agent, "model" => model, "direction" => "output")
        .increment(usage.output_tokens);
}

/// Records a finished run.
pub fn record_run(agent: &str, outcome: &'static str) {
    metrics::counter!(RUNS, "agent" => agent.to_owned(), "outcome" => outcome).increment(1);
}

/// The run registry's observer: routing decisions, tool calls, tokens and finished runs
/// become the series above.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunMetrics;

impl RunObserver for RunMetrics {
    fn routed(&self, decision: &toolbelt_router::RouteDecision) {
        record_route(decision);
    }

    fn call_finished(&self, result: &CallResult) {
        record_call(result);
    }

    fn tokens(&self, agent: &str, model: &str, usage: toolbelt_llm::Usage) {
        record_tokens(agent, model, usage);
    }

    fn run_ended(&self, agent: &str, status: RunStatus) {
        record_run(agent, status.as_str());
    }
}

/// Records one HTTP request.
pub fn record_http(method: &str, route: &str, status: u16, elapsed: Duration) {
    metrics::counter!(HTTP_REQUESTS, "method" => method.to_owned(), "route" => route.to_owned(), "status" => status.to_string())
        .increment(1);
    metrics::histogram!(HTTP_SECONDS, "route" => route.to_owned()).record(elapsed.as_secs_f64());
}

/// The snake_case name of an error kind.
pub fn kind_name(kind: toolbelt_core::ToolErrorKind) -> &'static str {
    use toolbelt_core::ToolErrorKind as K;
    match kind {
        K::UnknownTool => "unknown_tool",
        K::InvalidArguments => "invalid_arguments",
        K::Timeout => "timeout",
        K::Denied => "denied",
        K::Cancelled => "cancelled",
        K::Failed => "failed",
        _ => "other",
    }
}
