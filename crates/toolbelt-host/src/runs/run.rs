//! [`RunEntry`]: one run's identity, state, event history and cancel switch, and the views
//! front-ends show of it.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use toolbelt_llm::{Message, Usage};

use super::events::{RunEvent, RunEventData};
use super::waits::{ApprovalView, QuestionView, Waiting};

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

    /// The status as its JSON spelling (`running`, `waiting`, …).
    pub fn as_str(self) -> &'static str {
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

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tokens used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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

/// A run as front-ends show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDetail {
    /// The run.
    #[serde(flatten)]
    pub run: RunView,
    /// The conversation as the model saw it last (no system prompt).
    pub messages: Vec<Message>,
    /// Every event so far.
    pub events: Vec<RunEvent>,
}

pub(super) struct RunState {
    pub(super) status: RunStatus,
    pub(super) events: Vec<RunEvent>,
    /// What the run waits on a person for, by wait id (approvals and questions).
    pub(super) waits: BTreeMap<String, Waiting>,
    pub(super) answer: Option<String>,
    pub(super) error: Option<String>,
    pub(super) usage: Usage,
    pub(super) messages: Vec<Message>,
    pub(super) finished_at_ms: Option<u64>,
}

impl RunState {
    /// A run that has just started from `history`.
    pub(super) fn started(history: Vec<Message>) -> Self {
        Self {
            status: RunStatus::Running,
            events: Vec::new(),
            waits: BTreeMap::new(),
            answer: None,
            error: None,
            usage: Usage::default(),
            messages: history,
            finished_at_ms: None,
        }
    }

    /// The calls waiting for a decision, in id order.
    pub(super) fn approvals(&self) -> impl Iterator<Item = &ApprovalView> {
        self.waits.values().filter_map(Waiting::approval)
    }

    /// The questions waiting for an answer, in id order.
    pub(super) fn questions(&self) -> impl Iterator<Item = &QuestionView> {
        self.waits.values().filter_map(Waiting::question)
    }

    /// `running` or `waiting` from what waits for a person; an ended run stays as it is.
    pub(super) fn set_waiting_from_pending(&mut self) {
        if self.status.is_terminal() {
            return;
        }
        self.status = if self.waits.is_empty() {
            RunStatus::Running
        } else {
            RunStatus::Waiting
        };
    }
}

/// One run: its identity, state, event history and cancel switch.
pub struct RunEntry {
    pub(super) id: String,
    pub(super) agent: String,
    pub(super) input: String,
    pub(super) conversation_id: String,
    pub(super) parent_run: Option<String>,
    pub(super) created_at_ms: u64,
    pub(super) cancel: CancellationToken,
    pub(super) state: Mutex<RunState>,
    /// Number of events so far; subscribers wait on it.
    pub(super) progress: watch::Sender<u64>,
    /// Held from a write's snapshot to its end, so writes of one run land in
    /// the order their snapshots were taken (an approval's write, spawned
    /// apart, must not land after the run's final one with an older state).
    pub(super) persisting: tokio::sync::Mutex<()>,
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
    /// A run that starts now in `state`.
    pub(super) fn new(
        id: String,
        agent: String,
        input: String,
        conversation_id: String,
        parent_run: Option<String>,
        created_at_ms: u64,
        state: RunState,
    ) -> Self {
        let (progress, _) = watch::channel(state.events.len() as u64);
        Self {
            id,
            agent,
            input,
            conversation_id,
            parent_run,
            created_at_ms,
            cancel: CancellationToken::new(),
            state: Mutex::new(state),
            progress,
            persisting: tokio::sync::Mutex::new(()),
        }
    }

    /// An ended run as the store holds it (read-only: nothing drives it).
    pub(super) fn ended(detail: RunDetail) -> Self {
        let run = detail.run;
        let mut usage = Usage::default();
        usage.input_tokens = run.usage.input_tokens;
        usage.output_tokens = run.usage.output_tokens;
        let state = RunState {
            status: run.status,
            events: detail.events,
            waits: BTreeMap::new(),
            answer: run.answer,
            error: run.error,
            usage,
            messages: detail.messages,
            finished_at_ms: run.finished_at_ms,
        };
        Self::new(
            run.id,
            run.agent,
            run.input,
            run.conversation_id,
            run.parent_run,
            run.created_at_ms,
            state,
        )
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, RunState> {
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
    pub(super) fn push(&self, data: RunEventData) {
        let seq = {
            let mut state = self.lock();
            let seq = state.events.len() as u64 + 1;
            state.events.push(RunEvent { seq, data });
            seq
        };
        self.progress.send_replace(seq);
    }

    /// The run as front-ends show it.
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
            pending_approvals: state.approvals().cloned().collect(),
            pending_questions: state.questions().cloned().collect(),
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
    pub(super) fn pending(&self) -> usize {
        self.lock().waits.len()
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
