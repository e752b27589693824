//! What waits for a person, as one concept: a call waiting for a decision or an `ask_human`
//! question waiting for an answer. Both are a [`Waiting`] in their run's pending list and a
//! [`Wait`] in the registry's one table, under an id from [`mint`].

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;
use toolbelt_agent::ApprovalPrompt;
use toolbelt_core::{ApprovalResponse, BoxFuture};
use toolbelt_tools::{HumanChannel, HumanError, HumanQuestion};

use super::error::RunError;
use super::events::{ApprovalResolved, RunEventData};
use super::registry::{RunRegistry, lock};
use super::run::RunEntry;

/// A tool call waiting for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub arguments: Value,
    /// The tool's description.
    pub description: String,
}

/// A question the `ask_human` tool is waiting on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

/// One thing a run waits on a person for, as its pending list and the API show it.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Waiting {
    /// A call waiting for a decision.
    Approval(ApprovalView),
    /// A question waiting for an answer.
    Question(QuestionView),
}

impl Waiting {
    fn id(&self) -> &str {
        match self {
            Self::Approval(view) => &view.id,
            Self::Question(view) => &view.id,
        }
    }

    pub(super) fn approval(&self) -> Option<&ApprovalView> {
        match self {
            Self::Approval(view) => Some(view),
            Self::Question(_) => None,
        }
    }

    pub(super) fn question(&self) -> Option<&QuestionView> {
        match self {
            Self::Question(view) => Some(view),
            Self::Approval(_) => None,
        }
    }
}

/// Which kind of wait an id names; its prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WaitKind {
    /// `apr_…`.
    Approval,
    /// `ask_…`.
    Question,
}

/// A new wait id: the kind's prefix and a UUID v7, so ids are unique across the instances of
/// one database and ordered by time (`apr_…` for approvals, `ask_…` for questions).
fn mint(kind: WaitKind) -> String {
    let prefix = match kind {
        WaitKind::Approval => "apr",
        WaitKind::Question => "ask",
    };
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// How a wait is answered.
enum Reply {
    /// The agent's prompt for the call.
    Approval(Box<ApprovalPrompt>),
    /// The `ask_human` call waiting for the text.
    Question(oneshot::Sender<String>),
}

/// A wait in the registry's table: what it shows, its run (a question may have none), and
/// how it is answered.
pub(super) struct Wait {
    waiting: Waiting,
    run: Option<Arc<RunEntry>>,
    reply: Reply,
}

/// Everything the runs of a registry wait on a person for, by id.
#[derive(Default)]
pub(super) struct Waits {
    open: Mutex<BTreeMap<String, Wait>>,
}

impl Waits {
    fn insert(&self, wait: Wait) {
        lock(&self.open).insert(wait.waiting.id().to_owned(), wait);
    }

    /// Takes out the wait `id` when it is of `kind`.
    fn take(&self, id: &str, kind: WaitKind) -> Option<Wait> {
        let mut open = lock(&self.open);
        let matches = open.get(id).is_some_and(|wait| {
            matches!(
                (&wait.reply, kind),
                (Reply::Approval(_), WaitKind::Approval) | (Reply::Question(_), WaitKind::Question)
            )
        });
        if matches { open.remove(id) } else { None }
    }

    /// Drops the waits `ids` that are open: an approval's prompt dropped rejects its call,
    /// a question's asker gets no answer.
    pub(super) fn drop_all(&self, ids: &[String]) {
        let mut open = lock(&self.open);
        for id in ids {
            open.remove(id);
        }
    }

    /// The views of every open wait, in id order.
    fn views(&self) -> Vec<Waiting> {
        lock(&self.open)
            .values()
            .map(|wait| wait.waiting.clone())
            .collect()
    }
}

impl RunRegistry {
    /// Puts `waiting` in `entry`'s pending list and stores the run, then opens it in the table
    /// and shows it (status `waiting`, its event): another instance on the same database
    /// asked about it finds where it lives, and nothing answers it before it is stored.
    async fn open_wait(&self, entry: &Arc<RunEntry>, waiting: Waiting, reply: Reply) {
        let id = waiting.id().to_owned();
        entry.lock().waits.insert(id, waiting.clone());
        self.persist(entry).await;
        entry.lock().set_waiting_from_pending();
        let event = match &waiting {
            Waiting::Approval(view) => {
                tracing::info!(run = %entry.id, agent = %entry.agent, approval = %view.id, tool = %view.tool, "run waits for an approval");
                RunEventData::ApprovalRequested(view.clone())
            }
            Waiting::Question(view) => {
                tracing::info!(run = %entry.id, agent = %entry.agent, question = %view.id, "run waits for an answer");
                RunEventData::QuestionAsked(view.clone())
            }
        };
        self.inner.waits.insert(Wait {
            waiting,
            run: Some(Arc::clone(entry)),
            reply,
        });
        entry.push(event);
    }

    /// Records a call waiting for a decision (see [`RunRegistry::open_wait`]).
    pub(super) async fn add_approval(&self, entry: &Arc<RunEntry>, prompt: ApprovalPrompt) {
        let request = prompt.request();
        let view = ApprovalView {
            id: mint(WaitKind::Approval),
            run_id: entry.id.clone(),
            tool: request.call.name.clone(),
            call_id: request.call.id.clone(),
            arguments: request.call.arguments.clone(),
            description: request.spec.description.clone(),
        };
        self.open_wait(
            entry,
            Waiting::Approval(view),
            Reply::Approval(Box::new(prompt)),
        )
        .await;
    }

    /// Every call waiting for a decision, in id order.
    pub fn approvals(&self) -> Vec<ApprovalView> {
        self.inner
            .waits
            .views()
            .iter()
            .filter_map(Waiting::approval)
            .cloned()
            .collect()
    }

    /// Answers the approval `id`.
    ///
    /// # Errors
    /// [`RunError::ApprovalNotFound`] when it is not pending (answered, run ended, never
    /// asked).
    pub fn resolve(&self, id: &str, response: ApprovalResponse) -> Result<ApprovalView, RunError> {
        let not_found = || RunError::ApprovalNotFound { id: id.to_owned() };
        let wait = self
            .inner
            .waits
            .take(id, WaitKind::Approval)
            .ok_or_else(not_found)?;
        let (Waiting::Approval(view), Reply::Approval(prompt), Some(entry)) =
            (wait.waiting, wait.reply, wait.run)
        else {
            return Err(not_found());
        };
        {
            let mut state = entry.lock();
            if state.waits.remove(id).is_none() {
                // Its run ended meanwhile.
                return Err(not_found());
            }
            state.set_waiting_from_pending();
        }
        let (decision, detail) = match &response {
            ApprovalResponse::Approve => ("approve", Value::Null),
            ApprovalResponse::Edit(args) => ("edit", args.clone()),
            ApprovalResponse::Reject(reason) => ("reject", Value::String(reason.clone())),
            _ => ("other", Value::Null),
        };
        tracing::info!(run = %entry.id, agent = %entry.agent, approval = %id, decision, "approval answered");
        entry.push(RunEventData::ApprovalResolved(ApprovalResolved {
            approval_id: id.to_owned(),
            decision: decision.to_owned(),
            detail,
        }));
        (*prompt).respond(response);
        let registry = self.clone();
        self.inner
            .tasks
            .spawn(async move { registry.persist(&entry).await });
        Ok(view)
    }

    /// Every open question, in id order.
    pub fn questions(&self) -> Vec<QuestionView> {
        self.inner
            .waits
            .views()
            .iter()
            .filter_map(Waiting::question)
            .cloned()
            .collect()
    }

    /// Answers the open question `id`.
    ///
    /// # Errors
    /// [`RunError::QuestionNotFound`].
    pub fn answer_question(&self, id: &str, answer: String) -> Result<(), RunError> {
        let not_found = |reason| RunError::QuestionNotFound {
            id: id.to_owned(),
            reason,
        };
        let wait = self
            .inner
            .waits
            .take(id, WaitKind::Question)
            .ok_or_else(|| not_found(HumanError::UnknownQuestion { id: id.to_owned() }))?;
        let Reply::Question(reply) = wait.reply else {
            return Err(not_found(HumanError::UnknownQuestion { id: id.to_owned() }));
        };
        reply
            .send(answer)
            .map_err(|_| not_found(HumanError::Closed))
    }

    /// The channel to give `ask_human` (as a `Human` extension): questions
    /// become run events and are answered through [`RunRegistry::answer_question`].
    pub fn human_channel(&self) -> impl HumanChannel + use<> {
        RunQuestions {
            registry: self.clone(),
        }
    }

    /// Takes the wait `id` out of the table and out of its run's pending list.
    fn close_wait(&self, id: &str, run: Option<&RunEntry>) {
        self.inner.waits.drop_all(&[id.to_owned()]);
        if let Some(run) = run {
            let mut state = run.lock();
            state.waits.remove(id);
            state.set_waiting_from_pending();
        }
    }
}

/// `ask_human`'s channel in a registry: a question becomes a wait of its run.
struct RunQuestions {
    registry: RunRegistry,
}

/// Closes a question whose asker stopped waiting (the call timed out or was cancelled).
struct Withdraw<'a> {
    registry: &'a RunRegistry,
    id: String,
    run: Option<Arc<RunEntry>>,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.registry.close_wait(&self.id, self.run.as_deref());
    }
}

impl HumanChannel for RunQuestions {
    fn ask(&self, question: HumanQuestion) -> BoxFuture<'_, Result<String, HumanError>> {
        Box::pin(async move {
            let registry = &self.registry;
            let run = registry.run_of_conversation(question.conversation_id.as_deref());
            let view = QuestionView {
                id: mint(WaitKind::Question),
                run_id: run.as_ref().map(|r| r.id.clone()),
                question: question.question,
                choices: question.choices,
            };
            let id = view.id.clone();
            let (tx, rx) = oneshot::channel();
            // From here on, a caller that stops waiting (timeout, cancel) closes the question.
            let withdraw = Withdraw {
                registry,
                id: id.clone(),
                run: run.clone(),
            };
            match &run {
                Some(run) => {
                    registry
                        .open_wait(run, Waiting::Question(view), Reply::Question(tx))
                        .await;
                }
                None => registry.inner.waits.insert(Wait {
                    waiting: Waiting::Question(view),
                    run: None,
                    reply: Reply::Question(tx),
                }),
            }
            let answer = rx.await.map_err(|_| HumanError::Closed);
            drop(withdraw);
            if let Some(run) = &run {
                run.push(RunEventData::QuestionAnswered {
                    question_id: id,
                    answered: answer.is_ok(),
                });
                registry.persist(run).await;
            }
            answer
        })
    }
}
