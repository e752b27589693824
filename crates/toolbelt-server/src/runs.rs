//! [`RunRegistry`]: agent runs that live on the server, not on the connection that started them.
//!
//! A run is a task owned by the registry. Its events are appended to a
//! history that every subscriber replays from any point, so a client that
//! connects late (or reconnects with `Last-Event-ID`) sees everything. A
//! disconnect cancels nothing; approvals and questions are answered from any
//! client; only [`RunRegistry::cancel`] stops a run.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use toolbelt_agent::{Agent, AgentError, AgentEvent, ApprovalPrompt, RunOptions};
use toolbelt_core::{ApprovalResponse, BoxFuture, CallResult, Extensions};
use toolbelt_llm::{Message, Usage};
use toolbelt_tools::{HumanChannel, HumanError, HumanQuestion, PendingQuestions};
use utoipa::ToSchema;

use crate::metrics;
use crate::problem::{InstanceRef, Problem};

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model or a tool is working.
    Running,
    /// Paused on an approval or a question.
    Waiting,
    /// Ended with an answer.
    Succeeded,
    /// Ended without an answer.
    Failed,
    /// Stopped by a cancel request.
    Cancelled,
    /// The server stopped while the run was going on; continue it to go on.
    Interrupted,
}

impl RunStatus {
    /// Whether the run has ended.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Running | Self::Waiting)
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Waiting => "waiting",
            Self::Succeeded => "succeeded",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Interrupted => "interrupted",
        }
    }
}

/// One event of a run, as sent over SSE (`id` = `seq`, `event` = `type`, `data` = this JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunEvent {
    /// 1-based position in the run's history.
    pub seq: u64,
    /// `started`, `routed`, `text_delta`, `model_turn`, `tool_call_started`,
    /// `approval_requested`, `approval_resolved`, `question_asked`, `question_answered`,
    /// `tool_progress` (`call_id`, `tool`, `progress`, `total`, `message`),
    /// `tool_call_finished`, `call_merged` (`call`, `same_as`: a call repeated in one turn,
    /// not run again), `tools_added`, `skills_added` (`skills`), `finished`, `failed`,
    /// `cancelled`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The event's fields.
    #[schema(value_type = Object)]
    pub data: Value,
}

/// A tool call waiting for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalView {
    /// Id to answer with (`POST /api/v1/approvals/{id}`).
    pub id: String,
    /// The run it belongs to.
    pub run_id: String,
    /// The tool.
    pub tool: String,
    /// The call id.
    pub call_id: String,
    /// The arguments the model gave.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// The tool's description.
    pub description: String,
}

/// A question the `ask_human` tool is waiting on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QuestionView {
    /// Id to answer with (`POST /api/v1/questions/{id}/answer`).
    pub id: String,
    /// The run asking, when known.
    pub run_id: Option<String>,
    /// The question.
    pub question: String,
    /// Suggested answers; empty for a free answer.
    pub choices: Vec<String>,
}

/// Tokens used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UsageView {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl From<Usage> for UsageView {
    fn from(u: Usage) -> Self {
        Self {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
        }
    }
}

/// A run as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunView {
    /// Run id.
    pub id: String,
    /// The agent's id.
    pub agent: String,
    /// Where the run is.
    pub status: RunStatus,
    /// The user's input.
    pub input: String,
    /// The conversation (shared by runs that continue each other).
    pub conversation_id: String,
    /// The run this one continues, if any.
    pub parent_run: Option<String>,
    /// Start, Unix milliseconds.
    pub created_at_ms: u64,
    /// End, Unix milliseconds.
    pub finished_at_ms: Option<u64>,
    /// The answer, once succeeded.
    pub answer: Option<String>,
    /// Why it failed.
    pub error: Option<String>,
    /// Tokens used.
    pub usage: UsageView,
    /// Calls waiting for a decision.
    pub pending_approvals: Vec<ApprovalView>,
    /// Questions waiting for an answer.
    pub pending_questions: Vec<QuestionView>,
}

/// A run with its transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: RunView,
    /// The conversation as the model saw it last (no system prompt).
    #[schema(value_type = Vec<crate::api::schema::MessageSchema>)]
    pub messages: Vec<Message>,
    /// Every event so far.
    pub events: Vec<RunEvent>,
}

struct Pending {
    view: ApprovalView,
    prompt: ApprovalPrompt,
}

struct RunState {
    status: RunStatus,
    events: Vec<RunEvent>,
    approvals: BTreeMap<String, Pending>,
    questions: BTreeMap<String, QuestionView>,
    answer: Option<String>,
    error: Option<String>,
    usage: Usage,
    messages: Vec<Message>,
    finished_at_ms: Option<u64>,
}

/// One run: its identity, state, event history and cancel switch.
pub struct RunEntry {
    id: String,
    agent: String,
    input: String,
    conversation_id: String,
    parent_run: Option<String>,
    created_at_ms: u64,
    cancel: CancellationToken,
    state: Mutex<RunState>,
    /// Number of events so far; subscribers wait on it.
    progress: watch::Sender<u64>,
    /// Held from a write's snapshot to its end, so writes of one run land in
    /// the order their snapshots were taken (an approval's write, spawned
    /// apart, must not land after the run's final one with an older state).
    persisting: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for RunEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunEntry")
            .field("id", &self.id)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl RunEntry {
    /// An ended run as the store holds it (read-only: nothing drives it).
    fn ended(detail: RunDetail) -> Self {
        let run = detail.run;
        let mut usage = Usage::default();
        usage.input_tokens = run.usage.input_tokens;
        usage.output_tokens = run.usage.output_tokens;
        let (progress, _) = watch::channel(detail.events.len() as u64);
        Self {
            id: run.id,
            agent: run.agent,
            input: run.input,
            conversation_id: run.conversation_id,
            parent_run: run.parent_run,
            created_at_ms: run.created_at_ms,
            cancel: CancellationToken::new(),
            state: Mutex::new(RunState {
                status: run.status,
                events: detail.events,
                approvals: BTreeMap::new(),
                questions: BTreeMap::new(),
                answer: run.answer,
                error: run.error,
                usage,
                messages: detail.messages,
                finished_at_ms: run.finished_at_ms,
            }),
            progress,
            persisting: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent it runs.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// The run id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Appends an event and wakes subscribers.
    fn push(&self, kind: &str, data: Value) {
        let seq = {
            let mut state = self.lock();
            let seq = state.events.len() as u64 + 1;
            state.events.push(RunEvent {
                seq,
                kind: kind.to_owned(),
                data,
            });
            seq
        };
        self.progress.send_replace(seq);
    }

    fn set_waiting_from_pending(state: &mut RunState) {
        if state.status.is_terminal() {
            return;
        }
        state.status = if state.approvals.is_empty() && state.questions.is_empty() {
            RunStatus::Running
        } else {
            RunStatus::Waiting
        };
    }

    /// The run as the API shows it.
    pub fn view(&self) -> RunView {
        let state = self.lock();
        self.view_locked(&state)
    }

    fn view_locked(&self, state: &RunState) -> RunView {
        RunView {
            id: self.id.clone(),
            agent: self.agent.clone(),
            status: state.status,
            input: self.input.clone(),
            conversation_id: self.conversation_id.clone(),
            parent_run: self.parent_run.clone(),
            created_at_ms: self.created_at_ms,
            finished_at_ms: state.finished_at_ms,
            answer: state.answer.clone(),
            error: state.error.clone(),
            usage: state.usage.into(),
            pending_approvals: state.approvals.values().map(|p| p.view.clone()).collect(),
            pending_questions: state.questions.values().cloned().collect(),
        }
    }

    /// The run with its transcript.
    pub fn detail(&self) -> RunDetail {
        let state = self.lock();
        RunDetail {
            run: self.view_locked(&state),
            messages: state.messages.clone(),
            events: state.events.clone(),
        }
    }

    /// Events from position `from` (0-based) on, and whether the run has ended.
    pub fn events_from(&self, from: usize) -> (Vec<RunEvent>, bool) {
        let state = self.lock();
        let events = state
            .events
            .get(from..)
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        (events, state.status.is_terminal())
    }

    /// A receiver that changes whenever an event is appended.
    pub fn watch(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// The current status.
    pub fn status(&self) -> RunStatus {
        self.lock().status
    }

    /// How many approvals and questions wait.
    fn pending(&self) -> (usize, usize) {
        let state = self.lock();
        (state.approvals.len(), state.questions.len())
    }

    /// Waits until the run ends or waits for a person, at most `limit`.
    pub async fn settle(&self, limit: Duration) -> RunView {
        let mut rx = self.watch();
        let _ = tokio::time::timeout(limit, async {
            loop {
                if self.status() != RunStatus::Running {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        self.view()
    }
}

/// The runs of this server, by id. Clones share the same runs.
#[derive(Clone)]
pub struct RunRegistry {
    inner: Arc<Inner>,
}

struct Inner {
    runs: RwLock<HashMap<String, Arc<RunEntry>>>,
    approvals: Mutex<HashMap<String, Arc<RunEntry>>>,
    by_conversation: Mutex<HashMap<String, Arc<RunEntry>>>,
    questions: PendingQuestions,
    tasks: TaskTracker,
    /// This process's id, stored with each run it starts (ADR 0045).
    instance_id: String,
    /// The URL this process advertises to the others (`--public-url` or the bound address).
    public_url: std::sync::OnceLock<String>,
    store: std::sync::OnceLock<toolbelt_store::Store>,
    run_log: std::sync::OnceLock<toolbelt_store::RunLogWriter>,
    /// Set when the server stops: runs it cancels end as `interrupted`, to be continued later.
    stopping: std::sync::atomic::AtomicBool,
    /// Without a store: the finished runs kept, oldest first (at most [`KEEP_FINISHED`]).
    finished: Mutex<std::collections::VecDeque<String>>,
}

/// How many finished runs a registry without a store keeps in memory (the oldest leave
/// first). With a store a run leaves memory as soon as its end is stored, and reads fall
/// through to the store.
pub(crate) const KEEP_FINISHED: usize = 1_000;

impl std::fmt::Debug for RunRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunRegistry").finish_non_exhaustive()
    }
}

impl Default for RunRegistry {
    fn default() -> Self {
        Self::new()
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// What a new run starts from.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunStart {
    /// The user's input.
    pub input: String,
    /// Earlier messages (a continued conversation).
    pub history: Vec<Message>,
    /// The conversation id to keep (a fresh one otherwise).
    pub conversation_id: Option<String>,
    /// The run this continues.
    pub parent_run: Option<String>,
    /// The model name, for the token metrics.
    pub model: String,
}

impl RunRegistry {
    /// No runs.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                runs: RwLock::default(),
                approvals: Mutex::default(),
                by_conversation: Mutex::default(),
                questions: PendingQuestions::new(),
                tasks: TaskTracker::new(),
                instance_id: uuid::Uuid::new_v4().simple().to_string(),
                public_url: std::sync::OnceLock::new(),
                store: std::sync::OnceLock::new(),
                run_log: std::sync::OnceLock::new(),
                stopping: std::sync::atomic::AtomicBool::new(false),
                finished: Mutex::default(),
            }),
        }
    }

    /// This instance's id: fresh at each start-up, stored with the runs it starts, shown by
    /// `/healthz`.
    pub fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }

    /// Sets the URL other instances and clients reach this one by (the first call wins;
    /// [`crate::serve`] sets the bound address when the configuration names none).
    pub fn set_public_url(&self, url: impl Into<String>) {
        let _ = self.inner.public_url.set(url.into());
    }

    /// Records every run in `store` (created at start, updated when it waits and when it ends),
    /// so a restarted server shows it (as `interrupted` if it had not ended) and can continue it.
    /// Clones made before share the store.
    #[must_use]
    pub fn with_store(self, store: toolbelt_store::Store) -> Self {
        let _ = self.inner.store.set(store);
        self
    }

    /// Records every tool call and finished run of these runs in the audit log.
    #[must_use]
    pub fn with_run_log(self, writer: toolbelt_store::RunLogWriter) -> Self {
        let _ = self.inner.run_log.set(writer);
        self
    }

    async fn audit(&self, entry: toolbelt_store::LogEntry) {
        if let Some(log) = self.inner.run_log.get()
            && log.log(entry).await.is_err()
        {
            tracing::warn!("the run log has stopped; an audit entry was lost");
        }
    }

    /// Writes the run's state to the store, when there is one.
    async fn persist(&self, entry: &RunEntry) {
        let Some(store) = self.inner.store.get() else {
            return;
        };
        let _in_order = entry.persisting.lock().await;
        let (status, update) = {
            let state = entry.lock();
            let waits = !state.approvals.is_empty() || !state.questions.is_empty();
            let status = match state.status {
                // Stored as waiting before the API shows it (see `add_approval`).
                RunStatus::Running if waits => toolbelt_store::RunStatus::Waiting,
                RunStatus::Running => toolbelt_store::RunStatus::Running,
                RunStatus::Waiting => toolbelt_store::RunStatus::Waiting,
                RunStatus::Succeeded => toolbelt_store::RunStatus::Completed,
                RunStatus::Failed => toolbelt_store::RunStatus::Failed,
                RunStatus::Cancelled => toolbelt_store::RunStatus::Cancelled,
                RunStatus::Interrupted => toolbelt_store::RunStatus::Interrupted,
            };
            // What waits for a person is stored too, so that another instance on the same
            // database can tell which run (and instance) an approval or a question belongs to.
            let approvals: Vec<&ApprovalView> = state.approvals.values().map(|p| &p.view).collect();
            let questions: Vec<&QuestionView> = state.questions.values().collect();
            let mut update = toolbelt_store::RunUpdate::status(status).with_transcript(json!({
                "messages": state.messages,
                "events": state.events,
                "usage": UsageView::from(state.usage),
                "pending": {"approvals": approvals, "questions": questions},
            }));
            if let Some(answer) = &state.answer {
                update = update.with_output(json!({"answer": answer}));
            }
            if let Some(error) = &state.error {
                update = update.with_error(error.clone());
            }
            (status, update)
        };
        if let Err(e) = store.update_run(store_id(&entry.id), &update, None).await {
            tracing::error!(run = %entry.id, status = status.as_str(), error = %e, "could not record the run");
        }
    }

    async fn audit_run(&self, entry: &RunEntry) {
        let (ms, ok, error, usage) = {
            let state = entry.lock();
            let ms = state
                .finished_at_ms
                .unwrap_or_else(now_ms)
                .saturating_sub(entry.created_at_ms);
            (
                ms,
                state.status == RunStatus::Succeeded,
                state.error.clone(),
                state.usage,
            )
        };
        let mut log = toolbelt_store::LogEntry::agent_run(
            entry.agent.clone(),
            i64::try_from(ms).unwrap_or(i64::MAX),
        )
        .with_run(entry.id.clone())
        .with_tokens(
            i64::try_from(usage.input_tokens).unwrap_or(i64::MAX),
            i64::try_from(usage.output_tokens).unwrap_or(i64::MAX),
        );
        if !ok {
            log = log.failed(error.unwrap_or_else(|| "did not succeed".to_owned()));
        }
        self.audit(log).await;
    }

    /// A run that is not in memory but in the store (e.g. from before a restart).
    async fn stored(&self, id: &str) -> Option<RunDetail> {
        let store = self.inner.store.get()?;
        let record = store.get_run(store_id(id)).await.ok()?;
        Some(detail_from_record(&record))
    }

    /// The run `id` with its transcript, from memory or from the store.
    ///
    /// # Errors
    /// 404 `run_not_found`.
    pub async fn detail(&self, id: &str) -> Result<RunDetail, Problem> {
        match self.get(id) {
            Ok(entry) => Ok(entry.detail()),
            Err(not_found) => self.stored(id).await.ok_or(not_found),
        }
    }

    /// Runs in the store that this process does not hold, newest first.
    pub async fn stored_list(
        &self,
        agent: Option<&str>,
        status: Option<RunStatus>,
    ) -> Vec<RunView> {
        let Some(store) = self.inner.store.get() else {
            return Vec::new();
        };
        let held = self
            .inner
            .runs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect::<std::collections::HashSet<_>>();
        match store.list_runs(agent, None, 500).await {
            Ok(records) => records
                .iter()
                .filter(|r| !held.contains(&format!("run_{}", r.id)))
                .map(|r| detail_from_record(r).run)
                .filter(|v| status.is_none_or(|s| v.status == s))
                .collect(),
            Err(e) => {
                tracing::error!(error = %e, "could not list stored runs");
                Vec::new()
            }
        }
    }

    /// The channel to give `ask_human` (as a `Human` extension): questions
    /// become run events and are answered through [`RunRegistry::answer_question`].
    pub fn human_channel(&self) -> impl HumanChannel + use<> {
        RunQuestions {
            registry: self.clone(),
        }
    }

    /// Starts `agent` on `start` in a task owned by the registry.
    ///
    /// # Errors
    /// 500 when the store cannot record the run (nothing is started then).
    pub async fn start(
        &self,
        agent: Agent,
        start: RunStart,
        extensions: Extensions,
    ) -> Result<Arc<RunEntry>, Problem> {
        let conversation_id = start
            .conversation_id
            .clone()
            .unwrap_or_else(|| format!("conv_{}", uuid::Uuid::new_v4().simple()));
        let id = match self.inner.store.get() {
            Some(store) => {
                let instance =
                    json!({"id": self.inner.instance_id, "url": self.inner.public_url.get()});
                let input = json!({"input": start.input, "conversation_id": conversation_id, "parent_run": start.parent_run, "instance": instance});
                let record = store
                    .create_run(agent.name(), &input, None)
                    .await
                    .map_err(Problem::internal)?;
                format!("run_{}", record.id)
            }
            None => format!("run_{}", uuid::Uuid::new_v4().simple()),
        };
        let (progress, _) = watch::channel(0);
        let entry = Arc::new(RunEntry {
            id: id.clone(),
            agent: agent.name().to_owned(),
            input: start.input.clone(),
            conversation_id: conversation_id.clone(),
            parent_run: start.parent_run.clone(),
            created_at_ms: now_ms(),
            cancel: CancellationToken::new(),
            persisting: tokio::sync::Mutex::new(()),
            state: Mutex::new(RunState {
                status: RunStatus::Running,
                events: Vec::new(),
                approvals: BTreeMap::new(),
                questions: BTreeMap::new(),
                answer: None,
                error: None,
                usage: Usage::default(),
                messages: start.history.clone(),
                finished_at_ms: None,
            }),
            progress,
        });
        self.write_runs().insert(id.clone(), Arc::clone(&entry));
        lock(&self.inner.by_conversation).insert(conversation_id.clone(), Arc::clone(&entry));
        entry.push(
            "started",
            json!({"run_id": id, "agent": entry.agent, "input": start.input, "conversation_id": conversation_id}),
        );
        // One log line per run start, wait, decision and end (the input is not logged: it may
        // hold what a user would not want in a log file).
        tracing::info!(run = %id, agent = %entry.agent, model = %start.model, "run started");
        let options = RunOptions::new()
            .with_cancellation(entry.cancel.clone())
            .with_history(start.history)
            .with_conversation_id(conversation_id)
            .with_extensions(extensions);
        let registry = self.clone();
        let driven = Arc::clone(&entry);
        self.inner.tasks.spawn(async move {
            registry.persist(&driven).await;
            registry
                .drive(driven, agent, start.input, options, start.model)
                .await;
        });
        Ok(entry)
    }

    async fn drive(
        &self,
        entry: Arc<RunEntry>,
        agent: Agent,
        input: String,
        options: RunOptions,
        model: String,
    ) {
        let mut stream = agent.run_stream_with(input, options);
        while let Some(event) = stream.next_event().await {
            if let AgentEvent::ToolCallFinished(result) = &event {
                self.audit(
                    audit_entry(result)
                        .with_run(entry.id.clone())
                        .with_agent(entry.agent.clone()),
                )
                .await;
            }
            if let AgentEvent::ApprovalRequested(prompt) = event {
                self.add_approval(&entry, prompt).await;
                continue;
            }
            let before = (entry.status(), entry.pending());
            self.on_event(&entry, event, &model);
            if (entry.status(), entry.pending()) != before {
                self.persist(&entry).await;
                if entry.status().is_terminal() {
                    self.audit_run(&entry).await;
                }
            }
        }
        // The stream always ends with Finished or Failed; this covers the impossible case.
        if !entry.status().is_terminal() {
            self.finish(
                &entry,
                RunStatus::Failed,
                None,
                Some("the run ended without a result".to_owned()),
                None,
            );
            self.persist(&entry).await;
            self.audit_run(&entry).await;
        }
        self.retire(&entry);
    }

    /// Takes an ended run out of memory: at once when its end is stored (reads fall through
    /// to the store), else when more than [`KEEP_FINISHED`] runs have ended after it. Whoever
    /// still holds the entry (a waiting request, an event stream) keeps it until done.
    fn retire(&self, entry: &Arc<RunEntry>) {
        let gone: Vec<String> = if self.inner.store.get().is_some() {
            vec![entry.id.clone()]
        } else {
            let mut finished = lock(&self.inner.finished);
            finished.push_back(entry.id.clone());
            let over = finished.len().saturating_sub(KEEP_FINISHED);
            finished.drain(..over).collect()
        };
        for id in gone {
            let Some(removed) = self.write_runs().remove(&id) else {
                continue;
            };
            let mut by_conversation = lock(&self.inner.by_conversation);
            if by_conversation
                .get(&removed.conversation_id)
                .is_some_and(|e| Arc::ptr_eq(e, &removed))
            {
                by_conversation.remove(&removed.conversation_id);
            }
        }
    }

    /// How many runs are in memory (running, waiting, or ended and not yet retired).
    pub fn in_memory(&self) -> usize {
        self.inner
            .runs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The run `id` from memory, or an ended run from the store (its events replayed, for
    /// `GET /runs/{id}/events` after the run left memory).
    ///
    /// # Errors
    /// 404 `run_not_found` when neither holds it, or the store's copy has not ended (another
    /// instance holds it).
    pub async fn get_or_stored(&self, id: &str) -> Result<Arc<RunEntry>, Problem> {
        let not_found = match self.get(id) {
            Ok(entry) => return Ok(entry),
            Err(not_found) => not_found,
        };
        match self.stored(id).await {
            Some(detail) if detail.run.status.is_terminal() => {
                Ok(Arc::new(RunEntry::ended(detail)))
            }
            _ => Err(not_found),
        }
    }

    /// Whether the store holds run `id` as ended (it left this instance's memory).
    pub async fn ended_in_store(&self, id: &str) -> Option<RunStatus> {
        self.stored(id)
            .await
            .map(|d| d.run.status)
            .filter(|s| s.is_terminal())
    }

    fn on_event(&self, entry: &Arc<RunEntry>, event: AgentEvent, model: &str) {
        match event {
            AgentEvent::Routed(decision) => {
                metrics::record_route(&decision);
                entry.push(
                    "routed",
                    serde_json::to_value(&decision).unwrap_or(Value::Null),
                );
            }
            AgentEvent::TextDelta(text) => entry.push("text_delta", json!({"text": text})),
            AgentEvent::ModelTurn {
                iteration,
                tool_calls,
            } => entry.push(
                "model_turn",
                json!({"iteration": iteration, "tool_calls": tool_calls}),
            ),
            AgentEvent::ToolCallStarted(call) => {
                entry.push(
                    "tool_call_started",
                    serde_json::to_value(&call).unwrap_or(Value::Null),
                );
            }
            AgentEvent::ToolCallFinished(result) => {
                metrics::record_call(&result);
                entry.push("tool_call_finished", call_result_json(&result));
            }
            AgentEvent::CallMerged { call, same_as } => {
                entry.push(
                    "call_merged",
                    json!({"call": serde_json::to_value(&call).unwrap_or(Value::Null), "same_as": same_as}),
                );
            }
            AgentEvent::ToolsAdded { by, tools } => {
                entry.push("tools_added", json!({"by": by, "tools": tools}));
            }
            AgentEvent::SkillsAdded { skills } => {
                entry.push("skills_added", json!({"skills": skills}));
            }
            AgentEvent::ToolProgress(progress) => {
                entry.push(
                    "tool_progress",
                    serde_json::to_value(&progress).unwrap_or(Value::Null),
                );
            }
            AgentEvent::Finished(output) => {
                let usage = output.usage();
                metrics::record_tokens(&entry.agent, model, usage);
                self.finish(
                    entry,
                    RunStatus::Succeeded,
                    Some(output.answer.clone()),
                    None,
                    Some((output.transcript.messages.clone(), usage)),
                );
            }
            AgentEvent::Failed(error) => {
                let status = if matches!(error, AgentError::Cancelled { .. })
                    && self.inner.stopping.load(Ordering::Relaxed)
                {
                    RunStatus::Interrupted
                } else if matches!(error, AgentError::Cancelled { .. }) {
                    RunStatus::Cancelled
                } else {
                    RunStatus::Failed
                };
                let usage = error.transcript().usage;
                metrics::record_tokens(&entry.agent, model, usage);
                let message = error_chain(&error);
                let transcript = error.into_transcript();
                self.finish(
                    entry,
                    status,
                    None,
                    Some(message),
                    Some((transcript.messages, usage)),
                );
            }
            _ => {}
        }
    }

    /// Records a call waiting for a decision, stores the run, and only then shows the approval
    /// (status `waiting`, an `approval_requested` event, answerable): another instance on the
    /// same database asked about it finds where it lives.
    async fn add_approval(&self, entry: &Arc<RunEntry>, prompt: ApprovalPrompt) {
        let request = prompt.request();
        let view = ApprovalView {
            // Unique across instances (one database may serve several), time-ordered.
            id: format!("apr_{}", uuid::Uuid::now_v7().simple()),
            run_id: entry.id.clone(),
            tool: request.call.name.clone(),
            call_id: request.call.id.clone(),
            arguments: request.call.arguments.clone(),
            description: request.spec.description.clone(),
        };
        let data = serde_json::to_value(&view).unwrap_or(Value::Null);
        entry.lock().approvals.insert(
            view.id.clone(),
            Pending {
                view: view.clone(),
                prompt,
            },
        );
        self.persist(entry).await;
        RunEntry::set_waiting_from_pending(&mut entry.lock());
        lock(&self.inner.approvals).insert(view.id.clone(), Arc::clone(entry));
        tracing::info!(run = %entry.id, agent = %entry.agent, approval = %view.id, tool = %view.tool, "run waits for an approval");
        entry.push("approval_requested", data);
    }

    fn finish(
        &self,
        entry: &Arc<RunEntry>,
        status: RunStatus,
        answer: Option<String>,
        error: Option<String>,
        transcript: Option<(Vec<Message>, Usage)>,
    ) {
        let dropped: Vec<String> = {
            let mut state = entry.lock();
            state.status = status;
            state.answer = answer.clone();
            state.error = error.clone();
            state.finished_at_ms = Some(now_ms());
            if let Some((messages, usage)) = transcript {
                state.messages = messages;
                state.usage = usage;
            }
            state.questions.clear();
            let ids = state.approvals.keys().cloned().collect();
            state.approvals.clear();
            ids
        };
        {
            let mut approvals = lock(&self.inner.approvals);
            for id in dropped {
                approvals.remove(&id);
            }
        }
        metrics::record_run(&entry.agent, status.as_str());
        let usage = UsageView::from(entry.lock().usage);
        let ms = now_ms().saturating_sub(entry.created_at_ms);
        match &error {
            Some(error) => {
                tracing::info!(run = %entry.id, agent = %entry.agent, status = status.as_str(), ms, tokens_in = usage.input_tokens, tokens_out = usage.output_tokens, %error, "run ended");
            }
            None => {
                tracing::info!(run = %entry.id, agent = %entry.agent, status = status.as_str(), ms, tokens_in = usage.input_tokens, tokens_out = usage.output_tokens, "run ended");
            }
        }
        let kind = match status {
            RunStatus::Succeeded => "finished",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Interrupted => "interrupted",
            _ => "failed",
        };
        entry.push(
            kind,
            json!({"status": status, "answer": answer, "error": error, "usage": usage}),
        );
    }

    /// The run `id`.
    ///
    /// # Errors
    /// 404 `run_not_found`.
    pub fn get(&self, id: &str) -> Result<Arc<RunEntry>, Problem> {
        self.inner
            .runs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| {
                Problem::not_found("run_not_found", format!("no run `{id}` on this server"))
                    .with_pointer("id")
            })
    }

    /// Every run, newest first, optionally of one agent and status.
    pub fn list(&self, agent: Option<&str>, status: Option<RunStatus>) -> Vec<RunView> {
        let mut runs: Vec<RunView> = self
            .inner
            .runs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|r| agent.is_none_or(|a| r.agent == a))
            .map(|r| r.view())
            .filter(|v| status.is_none_or(|s| v.status == s))
            .collect();
        runs.sort_by(|a, b| b.created_at_ms.cmp(&a.created_at_ms).then(b.id.cmp(&a.id)));
        runs
    }

    /// Asks run `id` to stop; its task ends it as `cancelled`.
    ///
    /// # Errors
    /// 404 `run_not_found`; 409 `run_finished` when it has already ended.
    pub fn cancel(&self, id: &str) -> Result<Arc<RunEntry>, Problem> {
        let entry = self.get(id)?;
        if entry.status().is_terminal() {
            return Err(Problem::conflict(
                "run_finished",
                format!("run `{id}` has already ended ({})", entry.status().as_str()),
            ));
        }
        entry.cancel.cancel();
        Ok(entry)
    }

    /// Every call waiting for a decision.
    pub fn approvals(&self) -> Vec<ApprovalView> {
        let entries: Vec<Arc<RunEntry>> = lock(&self.inner.approvals).values().cloned().collect();
        let mut out: Vec<ApprovalView> = Vec::new();
        for entry in entries {
            for p in entry.lock().approvals.values() {
                if !out.iter().any(|v| v.id == p.view.id) {
                    out.push(p.view.clone());
                }
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// Answers the approval `id`.
    ///
    /// # Errors
    /// 404 `approval_not_found` when it is not pending (answered, run ended, never asked).
    pub fn resolve(&self, id: &str, response: ApprovalResponse) -> Result<ApprovalView, Problem> {
        let entry = lock(&self.inner.approvals).remove(id).ok_or_else(|| {
            Problem::not_found(
                "approval_not_found",
                format!("no pending approval `{id}`: it was answered, its run ended, or it never existed"),
            )
            .with_pointer("id")
        })?;
        let pending = {
            let mut state = entry.lock();
            let pending = state.approvals.remove(id);
            RunEntry::set_waiting_from_pending(&mut state);
            pending
        };
        let Some(pending) = pending else {
            return Err(Problem::not_found(
                "approval_not_found",
                format!("no pending approval `{id}`"),
            ));
        };
        let (decision, extra) = match &response {
            ApprovalResponse::Approve => ("approve", Value::Null),
            ApprovalResponse::Edit(args) => ("edit", args.clone()),
            ApprovalResponse::Reject(reason) => ("reject", Value::String(reason.clone())),
            _ => ("other", Value::Null),
        };
        tracing::info!(run = %entry.id, agent = %entry.agent, approval = %id, decision, "approval answered");
        entry.push(
            "approval_resolved",
            json!({"approval_id": id, "decision": decision, "detail": extra}),
        );
        let view = pending.view.clone();
        pending.prompt.respond(response);
        let registry = self.clone();
        self.inner
            .tasks
            .spawn(async move { registry.persist(&entry).await });
        Ok(view)
    }

    /// Every open question.
    pub fn questions(&self) -> Vec<QuestionView> {
        let runs = lock(&self.inner.by_conversation);
        self.inner
            .questions
            .pending()
            .into_iter()
            .map(|q| QuestionView {
                run_id: q
                    .conversation_id
                    .as_deref()
                    .and_then(|c| runs.get(c))
                    .map(|r| r.id.clone()),
                id: q.id,
                question: q.question,
                choices: q.choices,
            })
            .collect()
    }

    /// Answers the open question `id`.
    ///
    /// # Errors
    /// 404 `question_not_found`.
    pub fn answer_question(&self, id: &str, answer: String) -> Result<(), Problem> {
        self.inner.questions.answer(id, answer).map_err(|e| {
            Problem::not_found(
                "question_not_found",
                format!("{e}; it was answered, timed out, or never asked"),
            )
            .with_pointer("id")
        })
    }

    /// Where `what`, unknown to this instance, lives: another instance on the same database
    /// started the run. `421 held_by_other_instance` names that instance, its URL and the
    /// same request there when it answers on its `/healthz`; `409 holder_unreachable` when it
    /// does not. `None` when the store knows no unfinished run holding `what` (a plain 404).
    pub async fn held_elsewhere(&self, what: Held<'_>) -> Option<Problem> {
        let store = self.inner.store.get()?;
        let record = match what {
            Held::Run(id) => store
                .get_run(store_id(id))
                .await
                .ok()
                .filter(|r| !r.status.is_finished())?,
            Held::Approval(id) | Held::Question(id) => {
                let key = if matches!(what, Held::Approval(_)) {
                    "approvals"
                } else {
                    "questions"
                };
                // Only the waiting runs whose transcript holds the id, found in the
                // database however many runs wait.
                let waiting = store
                    .runs_mentioning(toolbelt_store::RunStatus::Waiting, id, 64)
                    .await
                    .ok()?;
                waiting.into_iter().find(|r| {
                    r.transcript["pending"][key]
                        .as_array()
                        .is_some_and(|pending| pending.iter().any(|p| p["id"] == id))
                })?
            }
        };
        let holder = &record.input["instance"];
        let holder_id = holder["id"].as_str()?;
        if holder_id == self.inner.instance_id {
            return None;
        }
        let url = holder["url"].as_str()?.trim_end_matches('/');
        let run = format!("run_{}", record.id);
        let (what, location) = match what {
            Held::Run(id) => (
                format!("run `{id}`"),
                format!("{url}/api/v1/runs/{id}/cancel"),
            ),
            Held::Approval(id) => (
                format!("approval `{id}` (run `{run}`)"),
                format!("{url}/api/v1/approvals/{id}"),
            ),
            Held::Question(id) => (
                format!("question `{id}` (run `{run}`)"),
                format!("{url}/api/v1/questions/{id}/answer"),
            ),
        };
        let instance = InstanceRef {
            id: holder_id.to_owned(),
            url: url.to_owned(),
            location,
        };
        let problem = if instance_answers(url, holder_id).await {
            Problem::new(
                axum::http::StatusCode::MISDIRECTED_REQUEST,
                "held_by_other_instance",
                format!(
                    "{what} is held by instance `{holder_id}` at {url}; send the request there ({})",
                    instance.location
                ),
            )
        } else {
            Problem::conflict(
                "holder_unreachable",
                format!(
                    "{what} is held by instance `{holder_id}` at {url}, which does not answer (stopped?); only that instance can go on with the run"
                ),
            )
        };
        Some(problem.with_pointer("id").with_instance(instance))
    }

    /// Stops every run that is still going (used at shutdown); they end as `interrupted`
    /// and can be continued after a restart.
    pub fn cancel_all(&self) {
        self.inner.stopping.store(true, Ordering::Relaxed);
        for entry in self
            .inner
            .runs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            entry.cancel.cancel();
        }
    }

    /// Waits for every run task to end.
    pub async fn wait_idle(&self) {
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }

    fn write_runs(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<RunEntry>>> {
        self.inner
            .runs
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn run_of_conversation(&self, conversation: Option<&str>) -> Option<Arc<RunEntry>> {
        conversation.and_then(|c| lock(&self.inner.by_conversation).get(c).cloned())
    }
}

/// What an approval, answer or cancel request names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Held<'a> {
    /// A run id (`run_…`).
    Run(&'a str),
    /// An approval id (`apr_…`).
    Approval(&'a str),
    /// A question id.
    Question(&'a str),
}

/// Whether the instance `id` answers at `url` (its `/healthz` names it), within 1 s.
async fn instance_answers(url: &str, id: &str) -> bool {
    let Ok(client) = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
    else {
        return false;
    };
    match client.get(format!("{url}/healthz")).send().await {
        Ok(response) => response
            .json::<Value>()
            .await
            .is_ok_and(|health| health["instance"] == id),
        Err(_) => false,
    }
}

/// The audit entry of a finished call (arguments as executed; secrets are never in them:
/// declarative tools resolve `{{secret.*}}` at call time).
pub fn audit_entry(result: &CallResult) -> toolbelt_store::LogEntry {
    let ms = i64::try_from(result.duration.as_millis()).unwrap_or(i64::MAX);
    let entry = toolbelt_store::LogEntry::tool_call(result.call.name.clone(), ms)
        .with_arguments(result.call.arguments.clone());
    match &result.outcome {
        Ok(_) => entry,
        Err(e) => entry.failed(e.to_string()),
    }
}

/// The store's id of run `id` (the API prefixes `run_`).
fn store_id(id: &str) -> &str {
    id.strip_prefix("run_").unwrap_or(id)
}

fn detail_from_record(record: &toolbelt_store::RunRecord) -> RunDetail {
    use toolbelt_store::RunStatus as S;
    let status = match record.status {
        S::Completed => RunStatus::Succeeded,
        S::Failed => RunStatus::Failed,
        S::Cancelled => RunStatus::Cancelled,
        S::Waiting => RunStatus::Waiting,
        S::Interrupted => RunStatus::Interrupted,
        // Queued or running: held by another instance on the same database.
        _ => RunStatus::Running,
    };
    let t = &record.transcript;
    let messages: Vec<Message> = serde_json::from_value(t["messages"].clone()).unwrap_or_default();
    let events: Vec<RunEvent> = serde_json::from_value(t["events"].clone()).unwrap_or_default();
    let usage: UsageView = serde_json::from_value(t["usage"].clone()).unwrap_or_default();
    let str_of = |v: &Value| v.as_str().map(str::to_owned);
    RunDetail {
        run: RunView {
            id: format!("run_{}", record.id),
            agent: record.agent.clone(),
            status,
            input: str_of(&record.input["input"]).unwrap_or_default(),
            conversation_id: str_of(&record.input["conversation_id"]).unwrap_or_default(),
            parent_run: str_of(&record.input["parent_run"]),
            created_at_ms: u64::try_from(record.created_at).unwrap_or_default(),
            finished_at_ms: record.finished_at.and_then(|t| u64::try_from(t).ok()),
            answer: record.output.as_ref().and_then(|o| str_of(&o["answer"])),
            error: record.error.clone(),
            usage,
            pending_approvals: Vec::new(),
            pending_questions: Vec::new(),
        },
        messages,
        events,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The JSON of a finished call, as events and transcripts show it.
pub fn call_result_json(result: &CallResult) -> Value {
    match &result.outcome {
        Ok(output) => json!({
            "call": result.call,
            "ok": true,
            "output": {"text": output.text, "json": output.json, "truncated": output.truncated},
            "duration_ms": result.duration.as_secs_f64() * 1000.0,
            "attempts": result.attempts,
            "cached": result.cached,
        }),
        Err(error) => json!({
            "call": result.call,
            "ok": false,
            "error": {"kind": metrics::kind_name(error.kind()), "message": error.to_string()},
            "duration_ms": result.duration.as_secs_f64() * 1000.0,
            "attempts": result.attempts,
            "cached": result.cached,
        }),
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// `ask_human`'s channel on a server: a question becomes an event of its run.
struct RunQuestions {
    registry: RunRegistry,
}

impl HumanChannel for RunQuestions {
    fn ask(&self, question: HumanQuestion) -> BoxFuture<'_, Result<String, HumanError>> {
        Box::pin(async move {
            let run = self
                .registry
                .run_of_conversation(question.conversation_id.as_deref());
            let view = QuestionView {
                id: question.id.clone(),
                run_id: run.as_ref().map(|r| r.id.clone()),
                question: question.question.clone(),
                choices: question.choices.clone(),
            };
            if let Some(run) = &run {
                // Stored before it is shown, as approvals are.
                run.lock().questions.insert(view.id.clone(), view.clone());
                self.registry.persist(run).await;
                RunEntry::set_waiting_from_pending(&mut run.lock());
                tracing::info!(run = %run.id, agent = %run.agent, question = %view.id, "run waits for an answer");
                run.push(
                    "question_asked",
                    serde_json::to_value(&view).unwrap_or(Value::Null),
                );
            }
            let id = view.id.clone();
            let answer = self.registry.inner.questions.ask(question).await;
            if let Some(run) = &run {
                {
                    let mut state = run.lock();
                    state.questions.remove(&id);
                    RunEntry::set_waiting_from_pending(&mut state);
                }
                run.push(
                    "question_answered",
                    json!({"question_id": id, "answered": answer.is_ok()}),
                );
                self.registry.persist(run).await;
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolbelt_agent::testing::ScriptedProvider;
    use toolbelt_llm::ChatResponse;

    fn agent() -> Agent {
        let provider = ScriptedProvider::from_fn(|_| ChatResponse::text("done").into());
        Agent::builder(provider.provider())
            .name("helper")
            .build()
            .unwrap()
    }

    async fn run_to_end(registry: &RunRegistry) -> String {
        let entry = registry
            .start(agent(), RunStart::default(), Extensions::new())
            .await
            .unwrap();
        let view = entry.settle(Duration::from_secs(10)).await;
        assert_eq!(view.status, RunStatus::Succeeded);
        entry.id().to_owned()
    }

    /// Waits until at most `n` runs are in memory (retiring follows the run's last write).
    async fn until_in_memory(registry: &RunRegistry, n: usize) {
        for _ in 0..400 {
            if registry.in_memory() <= n {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        panic!(
            "{} runs still in memory, expected {n}",
            registry.in_memory()
        );
    }

    #[tokio::test]
    async fn with_a_store_an_ended_run_leaves_memory_and_is_read_back_from_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("runs.db").display());
        let store = toolbelt_store::Store::open(&url).await.unwrap();
        let registry = RunRegistry::new().with_store(store);
        let id = run_to_end(&registry).await;
        until_in_memory(&registry, 0).await;
        let detail = registry.detail(&id).await.unwrap();
        assert_eq!(
            (detail.run.status, detail.run.answer.as_deref()),
            (RunStatus::Succeeded, Some("done"))
        );
        let replayed = registry.get_or_stored(&id).await.unwrap();
        let (events, ended) = replayed.events_from(0);
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            (kinds.first().copied(), kinds.last().copied(), ended),
            (Some("started"), Some("finished"), true)
        );
        assert_eq!(
            registry.ended_in_store(&id).await,
            Some(RunStatus::Succeeded)
        );
        assert!(registry.get_or_stored("run_nope").await.is_err());
    }

    #[tokio::test]
    async fn without_a_store_the_newest_ended_runs_stay_and_older_ones_leave() {
        let registry = RunRegistry::new();
        let first = run_to_end(&registry).await;
        for _ in 0..KEEP_FINISHED {
            run_to_end(&registry).await;
        }
        until_in_memory(&registry, KEEP_FINISHED).await;
        assert!(registry.get(&first).is_err(), "the oldest run stayed");
        assert_eq!(registry.list(None, None).len(), KEEP_FINISHED);
    }
}
