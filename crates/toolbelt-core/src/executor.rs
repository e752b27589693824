//! [`Executor`]: validate, approve, time out, retry and run tool calls.

mod approval;
mod cache;
mod output;
mod retry;
mod timeout;
mod validate;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, broadcast};
use tokio::task::JoinSet;
use tracing::Instrument;

pub use self::approval::{ApprovalPolicy, ApprovalRequest, ApprovalResponse, Approver, Decision};
use self::cache::ResultCache;
use crate::call::{CallResult, ToolCall};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::events::ExecEvent;
use crate::output::ToolOutput;
use crate::spec::ToolKind;
use crate::tool::ToolHandle;
use crate::toolset::Toolset;

/// Runs tool calls with validation, approval, timeouts, retries, output limits,
/// an optional result cache, and events.
///
/// A batch runs read-only and parallel-safe calls concurrently (up to the
/// concurrency limit) and serialises the others in call order; results come
/// back in call order. Cloning shares the same limits, cache and subscribers.
///
/// ```
/// # tokio_test_block_on(async {
/// use serde_json::json;
/// use toolbelt_core::{Executor, FnTool, ToolCall, ToolContext, Toolset};
///
/// let echo = FnTool::builder("echo").description("Echo the text")
///     .parameters(json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}))
///     .handler(|args, _ctx| async move { args["text"].as_str().unwrap_or_default().to_owned() })
///     .unwrap();
/// let tools = Toolset::from_tools([echo]);
/// let exec = Executor::new();
/// let res = exec.execute(&tools, ToolCall::new("1", "echo", json!({"text": "hi"})), &ToolContext::new()).await;
/// assert_eq!(res.outcome.unwrap().text, "hi");
/// let bad = exec.execute(&tools, ToolCall::new("2", "echo", json!({})), &ToolContext::new()).await;
/// assert!(bad.outcome.unwrap_err().to_string().contains("\"text\" is a required property"));
/// # });
/// # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
/// # }
/// ```
#[derive(Clone)]
pub struct Executor {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("default_timeout", &self.shared.default_timeout)
            .field("concurrency", &self.shared.concurrency)
            .field("policy", &self.shared.policy)
            .finish_non_exhaustive()
    }
}

struct Shared {
    default_timeout: Duration,
    concurrency: usize,
    permits: Arc<Semaphore>,
    policy: ApprovalPolicy,
    approver: Option<Arc<dyn Approver>>,
    cache: ResultCache,
    spill: output::SpillDir,
    events: broadcast::Sender<ExecEvent>,
}

impl Shared {
    /// Sends an event only when someone listens, so an unobserved executor pays nothing.
    fn emit(&self, event: impl FnOnce() -> ExecEvent) {
        if self.events.receiver_count() > 0 {
            let _ = self.events.send(event());
        }
    }
}

impl Default for Executor {
    fn default() -> Self {
        Self::new()
    }
}

impl Executor {
    /// An executor with default settings (see [`ExecutorBuilder`]).
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts configuring an executor.
    pub fn builder() -> ExecutorBuilder {
        ExecutorBuilder::default()
    }

    /// Receives an [`ExecEvent`] for every step of every call from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ExecEvent> {
        self.shared.events.subscribe()
    }

    /// The approval policy in force.
    pub fn policy(&self) -> &ApprovalPolicy {
        &self.shared.policy
    }

    /// Runs one call against `tools`.
    ///
    /// Never returns `Err`: every failure (unknown tool, invalid arguments,
    /// denial, timeout, cancellation, tool error) is in [`CallResult::outcome`]
    /// for the model to read.
    pub async fn execute(&self, tools: &Toolset, call: ToolCall, ctx: &ToolContext) -> CallResult {
        let tool = tools.require(&call.name).cloned();
        let span = tracing::info_span!("tool_call", tool = %call.name, call_id = %call.id);
        run_call(&self.shared, tool, call, ctx)
            .instrument(span)
            .await
    }

    /// Runs a batch of calls and returns their results in call order.
    ///
    /// Consecutive calls that may run in parallel (read-only, or declared
    /// parallel-safe) run concurrently; any other call runs alone, after the
    /// calls before it and before the calls after it. Cancelling `ctx` ends
    /// calls still in flight with [`ToolError::Cancelled`].
    pub async fn execute_batch(
        &self,
        tools: &Toolset,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
    ) -> Vec<CallResult> {
        self.execute_batch_with(tools, calls, ctx, true, |_| {})
            .await
    }

    /// [`Executor::execute_batch`], telling `observe` as each call starts and
    /// finishes (finishes come in completion order, results in call order).
    ///
    /// With `parallel` false every call runs alone, in call order. `observe`
    /// runs on the caller's task, so it may borrow from the caller: this is how
    /// an agent streams per-call events of one run.
    pub async fn execute_batch_with(
        &self,
        tools: &Toolset,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
        parallel: bool,
        mut observe: impl FnMut(BatchEvent<'_>),
    ) -> Vec<CallResult> {
        let mut results: Vec<Option<CallResult>> = (0..calls.len()).map(|_| None).collect();
        let mut group: Vec<(usize, Result<ToolHandle, ToolError>, ToolCall)> = Vec::new();
        for (index, call) in calls.into_iter().enumerate() {
            let tool = tools.require(&call.name).cloned();
            let concurrent = parallel && tool.as_ref().map_or(true, |t| t.spec().policy.parallel);
            if concurrent {
                group.push((index, tool, call));
                continue;
            }
            self.run_group(std::mem::take(&mut group), ctx, &mut results, &mut observe)
                .await;
            self.run_group(vec![(index, tool, call)], ctx, &mut results, &mut observe)
                .await;
        }
        self.run_group(group, ctx, &mut results, &mut observe).await;
        results.into_iter().flatten().collect()
    }

    async fn run_group(
        &self,
        group: Vec<(usize, Result<ToolHandle, ToolError>, ToolCall)>,
        ctx: &ToolContext,
        results: &mut [Option<CallResult>],
        observe: &mut impl FnMut(BatchEvent<'_>),
    ) {
        if group.len() <= 1 {
            // A call alone runs on the caller's task: no spawn, no thread hop.
            for (index, tool, call) in group {
                observe(BatchEvent::Started(&call));
                let span = tracing::info_span!("tool_call", tool = %call.name, call_id = %call.id);
                let result = run_call(&self.shared, tool, call, ctx)
                    .instrument(span)
                    .await;
                observe(BatchEvent::Finished(&result));
                results[index] = Some(result);
            }
            return;
        }
        // Owned by the JoinSet: dropping this future (a cancelled run) aborts the calls.
        let mut set = JoinSet::new();
        let mut pending = std::collections::HashMap::with_capacity(group.len());
        for (index, tool, call) in group {
            observe(BatchEvent::Started(&call));
            let shared = Arc::clone(&self.shared);
            let ctx = ctx.clone();
            let span = tracing::info_span!("tool_call", tool = %call.name, call_id = %call.id);
            let fallback = call.clone();
            let handle = set.spawn(
                async move { (index, run_call(&shared, tool, call, &ctx).await) }.instrument(span),
            );
            pending.insert(handle.id(), (index, fallback));
        }
        while let Some(joined) = set.join_next_with_id().await {
            let (index, result) = match joined {
                Ok((id, (index, result))) => {
                    pending.remove(&id);
                    (index, result)
                }
                // Tools cannot panic through `run_call`; this is an executor bug or an abort.
                Err(e) => {
                    let Some((index, call)) = pending.remove(&e.id()) else {
                        continue;
                    };
                    tracing::error!(error = %e, "a tool call task failed");
                    let outcome = Err(ToolError::failed(format!("internal error: {e}")));
                    (
                        index,
                        CallResult {
                            call,
                            outcome,
                            duration: Duration::ZERO,
                            attempts: 0,
                            cached: false,
                        },
                    )
                }
            };
            observe(BatchEvent::Finished(&result));
            results[index] = Some(result);
        }
    }
}

/// Progress of a batch, reported to the observer of [`Executor::execute_batch_with`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum BatchEvent<'a> {
    /// The call is about to run.
    Started(&'a ToolCall),
    /// The call ended.
    Finished(&'a CallResult),
}

/// `base` with this call's progress reporter when anyone would hear a report: a subscriber
/// of the executor's events or a [`ProgressSink`](crate::ProgressSink) in the context.
fn with_progress(shared: &Shared, base: &ToolContext, call: &ToolCall) -> ToolContext {
    let sink = base.get::<crate::ProgressSink>().cloned();
    if sink.is_none() && shared.events.receiver_count() == 0 {
        return base.clone();
    }
    let events = shared.events.clone();
    base.clone().with(crate::progress::CallProgress {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        deliver: std::sync::Arc::new(move |progress: &crate::Progress| {
            if let Some(sink) = &sink {
                sink.send(progress);
            }
            if events.receiver_count() > 0 {
                let _ = events.send(ExecEvent::Progress(progress.clone()));
            }
        }),
    })
}

async fn run_call(
    shared: &Shared,
    tool: Result<ToolHandle, ToolError>,
    mut call: ToolCall,
    base: &ToolContext,
) -> CallResult {
    let started = Instant::now();
    shared.emit(|| ExecEvent::CallStarted {
        call_id: call.id.clone(),
        tool: call.name.clone(),
    });
    let mut attempts = 0;
    let mut cached = false;
    let outcome = async {
        let tool = tool?;
        if base.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        validate::check(&tool, &call.arguments)?;
        approve(shared, &tool, &mut call, base).await?;
        let spec = tool.spec();
        let key = spec
            .policy
            .cacheable
            .then(|| ResultCache::key(spec, &call.arguments, base));
        if let Some(hit) = key.as_deref().and_then(|k| shared.cache.get(k)) {
            cached = true;
            return Ok(hit);
        }
        // Taken after approval so that a call waiting for a person holds no slot;
        // not taken at all by calls that wait on a person or an inner agent (whose
        // own calls take permits), so nested agents cannot deadlock the executor.
        let waits = spec.policy.waits || spec.kind == ToolKind::Agent;
        let _permit = if waits {
            None
        } else {
            tokio::select! {
                permit = shared.permits.acquire() => {
                    Some(permit.map_err(|_| ToolError::Cancelled)?)
                }
                // A cancelled call stops waiting for a slot.
                () = base.cancellation().cancelled() => return Err(ToolError::Cancelled),
            }
        };
        let ctx = with_progress(shared, base, &call).with_call_id(call.id.as_str());
        let (outcome, n) = retry::run_attempts(shared, &tool, &call.arguments, &ctx).await;
        attempts = n;
        // Error messages obey the output cap too (a failed command's output is in its error).
        let out = output::limit(
            outcome.map_err(|e| output::limit_error(e, spec.policy.max_output_bytes))?,
            &spec.policy,
            spec.name.as_str(),
            &shared.spill,
        )
        .await?;
        if let Some(key) = key {
            shared.cache.put(key, out.clone());
        }
        Ok::<ToolOutput, ToolError>(out)
    }
    .await;
    let duration = started.elapsed();
    if let Err(err) = &outcome {
        tracing::debug!(error = %err, ?duration, "tool call failed");
    }
    shared.emit(|| ExecEvent::CallFinished {
        call_id: call.id.clone(),
        tool: call.name.clone(),
        duration,
        error: outcome.as_ref().err().map(ToolError::kind),
        cached,
    });
    CallResult {
        call,
        outcome,
        duration,
        attempts,
        cached,
    }
}

async fn approve(
    shared: &Shared,
    tool: &ToolHandle,
    call: &mut ToolCall,
    ctx: &ToolContext,
) -> Result<(), ToolError> {
    match shared.policy.decide(tool.spec()) {
        Decision::Allow => Ok(()),
        Decision::Deny => Err(ToolError::Denied {
            reason: format!("the approval policy does not allow `{}`", tool.name()),
        }),
        Decision::Ask => {
            // A run may bring its own approver (an agent's event stream); it wins.
            let run_approver = ctx.get::<Arc<dyn Approver>>();
            let Some(approver) = run_approver.or(shared.approver.as_ref()) else {
                return Err(ToolError::Denied {
                    reason: format!(
                        "`{}` needs approval and no approver is configured",
                        tool.name()
                    ),
                });
            };
            shared.emit(|| ExecEvent::ApprovalRequested {
                call_id: call.id.clone(),
                tool: call.name.clone(),
            });
            let request = ApprovalRequest {
                call: call.clone(),
                spec: tool.spec().clone(),
            };
            let response = tokio::select! {
                response = approver.approve(request) => response,
                () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
            };
            match response {
                ApprovalResponse::Approve => Ok(()),
                ApprovalResponse::Edit(args) => {
                    validate::check(tool, &args)?;
                    call.arguments = args;
                    Ok(())
                }
                ApprovalResponse::Reject(reason) => Err(ToolError::Denied {
                    reason: if reason.is_empty() {
                        "rejected by the user".to_owned()
                    } else {
                        reason
                    },
                }),
            }
        }
    }
}

/// Configures an [`Executor`].
#[must_use]
pub struct ExecutorBuilder {
    default_timeout: Duration,
    concurrency: usize,
    policy: ApprovalPolicy,
    approver: Option<Arc<dyn Approver>>,
    cache_capacity: usize,
    cache_ttl: Duration,
    spill_dir: PathBuf,
    event_capacity: usize,
}

impl Default for ExecutorBuilder {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(60),
            concurrency: 16,
            policy: ApprovalPolicy::default(),
            approver: None,
            cache_capacity: 1024,
            cache_ttl: Duration::from_secs(300),
            spill_dir: std::env::temp_dir(),
            event_capacity: 1024,
        }
    }
}

impl ExecutorBuilder {
    /// Timeout for tools that set none (default 60 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout;
        self
    }

    /// Most calls running at once, across batches (default 16; at least 1).
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = limit.max(1);
        self
    }

    /// Who may run what (default: each tool's `needs_approval`).
    pub fn policy(mut self, policy: ApprovalPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Who answers when the policy says [`Decision::Ask`]. Without one, such calls are denied.
    pub fn approver(mut self, approver: impl Approver) -> Self {
        self.approver = Some(Arc::new(approver));
        self
    }

    /// Shares an approver already behind an `Arc`.
    pub fn approver_arc(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Size and lifetime of the cache of cacheable tools' results (default 1024, 5 min).
    pub fn cache(mut self, capacity: usize, ttl: Duration) -> Self {
        self.cache_capacity = capacity;
        self.cache_ttl = ttl;
        self
    }

    /// Where outputs of [`Overflow::Spill`](crate::Overflow::Spill) tools are written
    /// (default: the system temporary directory). The executor makes one private
    /// directory in it (mode 0700, random name) on the first spill, writes each
    /// output there under a random name (mode 0600), and deletes the directory
    /// with everything in it when the last clone of the executor is dropped.
    pub fn spill_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.spill_dir = dir.into();
        self
    }

    /// Events buffered per slow subscriber before it lags (default 1024).
    pub fn event_capacity(mut self, capacity: usize) -> Self {
        self.event_capacity = capacity.max(1);
        self
    }

    /// Builds the executor.
    pub fn build(self) -> Executor {
        let (events, _) = broadcast::channel(self.event_capacity);
        Executor {
            shared: Arc::new(Shared {
                default_timeout: self.default_timeout,
                concurrency: self.concurrency,
                permits: Arc::new(Semaphore::new(self.concurrency)),
                policy: self.policy,
                approver: self.approver,
                cache: ResultCache::new(self.cache_capacity, self.cache_ttl),
                spill: output::SpillDir::new(self.spill_dir),
                events,
            }),
        }
    }
}
