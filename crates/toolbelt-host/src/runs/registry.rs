//! [`RunRegistry`]: the runs of this process, by id, and the tasks that drive them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};
use toolbelt_store::Revision;

use serde_json::{Value, json};
use tokio_util::task::TaskTracker;
use toolbelt_agent::{Agent, AgentError, AgentEvent, RunOptions};
use toolbelt_core::{CallResult, Extensions};
use toolbelt_llm::{Message, Usage};

use super::cluster::Probe;
use super::error::RunError;
use super::events::{
    CallReport, PendingWaits, RunEnd, RunEventData, RunTranscript, Started, ToolProgress,
};
use super::observer::{RunObserver, Unobserved};
use super::run::{RunDetail, RunEntry, RunState, RunStatus, RunView, UsageView};
use super::waits::Waits;

/// The runs of this process, by id. Clones share the same runs.
#[derive(Clone)]
pub struct RunRegistry {
    pub(super) inner: Arc<Inner>,
}

pub(super) struct Inner {
    runs: RwLock<HashMap<String, Arc<RunEntry>>>,
    pub(super) by_conversation: Mutex<HashMap<String, Arc<RunEntry>>>,
    /// What the runs wait on a person for: approvals and questions, by wait id.
    pub(super) waits: Waits,
    pub(super) tasks: TaskTracker,
    /// This process's id, stored with each run it starts (ADR 0045).
    pub(super) instance_id: String,
    /// The URL this process advertises to the others (`--public-url` or the bound address).
    public_url: OnceLock<String>,
    pub(super) store: OnceLock<toolbelt_store::Store>,
    run_log: OnceLock<toolbelt_store::RunLogWriter>,
    observer: OnceLock<Arc<dyn RunObserver>>,
    /// Asks other instances whether they answer.
    pub(super) probe: Probe,
    /// Set when the process stops: runs it cancels end as `interrupted`, to be continued later.
    stopping: AtomicBool,
    /// Without a store: the finished runs kept, oldest first (at most [`KEEP_FINISHED`]).
    finished: Mutex<VecDeque<String>>,
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
    /// The model name, for the observer's token counts.
    pub model: String,
}

impl RunStart {
    /// A new conversation starting with `input`.
    pub fn new(input: impl Into<String>) -> Self {
        Self {
            input: input.into(),
            ..Self::default()
        }
    }

    /// The model name, for the observer's token counts.
    #[must_use]
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Continues run `parent` of conversation `conversation_id`, whose messages were `history`.
    #[must_use]
    pub fn continuing(
        mut self,
        parent: impl Into<String>,
        conversation_id: impl Into<String>,
        history: Vec<Message>,
    ) -> Self {
        self.parent_run = Some(parent.into());
        self.conversation_id = Some(conversation_id.into());
        self.history = history;
        self
    }
}

impl RunRegistry {
    /// No runs.
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                runs: RwLock::default(),
                by_conversation: Mutex::default(),
                waits: Waits::default(),
                tasks: TaskTracker::new(),
                instance_id: uuid::Uuid::new_v4().simple().to_string(),
                public_url: OnceLock::new(),
                store: OnceLock::new(),
                run_log: OnceLock::new(),
                observer: OnceLock::new(),
                probe: Probe::default(),
                stopping: AtomicBool::new(false),
                finished: Mutex::default(),
            }),
        }
    }

    /// This instance's id: fresh at each start-up, stored with the runs it starts, shown by
    /// the server's `/healthz`.
    pub fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }

    /// Sets the URL other instances and clients reach this one by (the first call wins; the
    /// server sets its bound address when the configuration names none).
    pub fn set_public_url(&self, url: impl Into<String>) {
        let _ = self.inner.public_url.set(url.into());
    }

    /// Records every run in `store` (created at start, updated when it waits and when it ends),
    /// so a restarted server shows it (as `interrupted` if it had not ended) and can continue it.
    /// Clones made before share the store; the first store given wins.
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

    /// Tells `observer` what happens in these runs (routing, calls, tokens, ends). Clones made
    /// before share it; the first observer given wins.
    #[must_use]
    pub fn with_observer(self, observer: Arc<dyn RunObserver>) -> Self {
        let _ = self.inner.observer.set(observer);
        self
    }

    fn observer(&self) -> &dyn RunObserver {
        match self.inner.observer.get() {
            Some(observer) => observer.as_ref(),
            None => &Unobserved,
        }
    }

    async fn audit(&self, entry: toolbelt_store::LogEntry) {
        if let Some(log) = self.inner.run_log.get()
            && log.log(entry).await.is_err()
        {
            tracing::warn!("the run log has stopped; an audit entry was lost");
        }
    }

    /// Writes the run's state to the store, when there is one.
    pub(super) async fn persist(&self, entry: &RunEntry) {
        let Some(store) = self.inner.store.get() else {
            return;
        };
        let _in_order = entry.persisting.lock().await;
        let (status, update) = {
            let state = entry.lock();
            let waits = !state.waits.is_empty();
            let status = match state.status {
                // Stored as waiting before it is shown (see `add_approval`).
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
            let transcript = RunTranscript {
                messages: state.messages.clone(),
                events: state.events.clone(),
                usage: state.usage.into(),
                pending: PendingWaits {
                    approvals: state.approvals().cloned().collect(),
                    questions: state.questions().cloned().collect(),
                },
            };
            let transcript = match serde_json::to_value(&transcript) {
                Ok(transcript) => transcript,
                Err(e) => {
                    tracing::error!(run = %entry.id, error = %e, "could not write the run's transcript");
                    return;
                }
            };
            let mut update = toolbelt_store::RunUpdate::status(status).with_transcript(transcript);
            if let Some(answer) = &state.answer {
                update = update.with_output(json!({"answer": answer}));
            }
            if let Some(error) = &state.error {
                update = update.with_error(error.clone());
            }
            (status, update)
        };
        if let Err(e) = store
            .runs()
            .update(store_id(&entry.id), &update, Revision::Any)
            .await
        {
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
        let record = store.runs().get(store_id(id)).await.ok()?;
        Some(detail_from_record(&record))
    }

    /// The run `id` with its transcript, from memory or from the store.
    ///
    /// # Errors
    /// [`RunError::RunNotFound`].
    pub async fn detail(&self, id: &str) -> Result<RunDetail, RunError> {
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
            .collect::<HashSet<_>>();
        match store.runs().list(agent, None, 500).await {
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

    /// Starts `agent` on `start` in a task owned by the registry.
    ///
    /// # Errors
    /// [`RunError::Store`] when the store cannot record the run (nothing is started then).
    pub async fn start(
        &self,
        agent: Agent,
        start: RunStart,
        extensions: Extensions,
    ) -> Result<Arc<RunEntry>, RunError> {
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
                    .runs()
                    .create(agent.name(), &input, None)
                    .await
                    .map_err(RunError::Store)?;
                format!("run_{}", record.id)
            }
            None => format!("run_{}", uuid::Uuid::new_v4().simple()),
        };
        let entry = Arc::new(RunEntry::new(
            id.clone(),
            agent.name().to_owned(),
            start.input.clone(),
            conversation_id.clone(),
            start.parent_run.clone(),
            now_ms(),
            RunState::started(start.history.clone()),
        ));
        self.write_runs().insert(id.clone(), Arc::clone(&entry));
        lock(&self.inner.by_conversation).insert(conversation_id.clone(), Arc::clone(&entry));
        entry.push(RunEventData::Started(Started {
            run_id: id.clone(),
            agent: entry.agent.clone(),
            input: start.input.clone(),
            conversation_id: conversation_id.clone(),
        }));
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
    /// reading a run's events after the run left memory).
    ///
    /// # Errors
    /// [`RunError::RunNotFound`] when neither holds it, or the store's copy has not ended
    /// (another instance holds it).
    pub async fn get_or_stored(&self, id: &str) -> Result<Arc<RunEntry>, RunError> {
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
                self.observer().routed(&decision);
                entry.push(RunEventData::Routed(Box::new(decision)));
            }
            AgentEvent::TextDelta(text) => entry.push(RunEventData::TextDelta { text }),
            AgentEvent::ModelTurn {
                iteration,
                tool_calls,
            } => entry.push(RunEventData::ModelTurn {
                iteration,
                tool_calls,
            }),
            AgentEvent::ToolCallStarted(call) => entry.push(RunEventData::ToolCallStarted(call)),
            AgentEvent::ToolCallFinished(result) => {
                self.observer().call_finished(&result);
                entry.push(RunEventData::ToolCallFinished(CallReport::from(&result)));
            }
            AgentEvent::CallMerged { call, same_as } => {
                entry.push(RunEventData::CallMerged { call, same_as });
            }
            AgentEvent::ToolsAdded { by, tools } => {
                entry.push(RunEventData::ToolsAdded { by, tools });
            }
            AgentEvent::SkillsAdded { skills } => {
                entry.push(RunEventData::SkillsAdded { skills });
            }
            AgentEvent::ToolProgress(progress) => {
                entry.push(RunEventData::ToolProgress(ToolProgress::from(&progress)));
            }
            AgentEvent::Finished(output) => {
                let usage = output.usage();
                self.observer().tokens(&entry.agent, model, usage);
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
                self.observer().tokens(&entry.agent, model, usage);
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
            let ids = state.waits.keys().cloned().collect();
            state.waits.clear();
            ids
        };
        self.inner.waits.drop_all(&dropped);
        self.observer().run_ended(&entry.agent, status);
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
        let end = RunEnd {
            status,
            answer,
            error,
            usage,
        };
        entry.push(match status {
            RunStatus::Succeeded => RunEventData::Finished(end),
            RunStatus::Cancelled => RunEventData::Cancelled(end),
            RunStatus::Interrupted => RunEventData::Interrupted(end),
            _ => RunEventData::Failed(end),
        });
    }

    /// The run `id`.
    ///
    /// # Errors
    /// [`RunError::RunNotFound`].
    pub fn get(&self, id: &str) -> Result<Arc<RunEntry>, RunError> {
        self.inner
            .runs
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
            .ok_or_else(|| RunError::RunNotFound { id: id.to_owned() })
    }

    /// Every run in memory, newest first, optionally of one agent and status.
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
    /// [`RunError::RunNotFound`]; [`RunError::RunFinished`] when it has already ended.
    pub fn cancel(&self, id: &str) -> Result<Arc<RunEntry>, RunError> {
        let entry = self.get(id)?;
        let status = entry.status();
        if status.is_terminal() {
            return Err(RunError::RunFinished {
                id: id.to_owned(),
                status,
            });
        }
        entry.cancel.cancel();
        Ok(entry)
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

    pub(super) fn run_of_conversation(&self, conversation: Option<&str>) -> Option<Arc<RunEntry>> {
        conversation.and_then(|c| lock(&self.inner.by_conversation).get(c).cloned())
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

/// The store's id of run `id` (front-ends prefix `run_`).
pub(super) fn store_id(id: &str) -> &str {
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
    let transcript = RunTranscript::read(&record.transcript);
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
            usage: transcript.usage,
            pending_approvals: Vec::new(),
            pending_questions: Vec::new(),
        },
        messages: transcript.messages,
        events: transcript.events,
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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

#[cfg(test)]
mod tests;
