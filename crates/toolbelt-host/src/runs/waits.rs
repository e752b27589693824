//! What waits for a person: calls waiting for a decision and `ask_human` questions.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
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

/// A call waiting for a decision and the prompt that answers it.
pub(super) struct Pending {
    pub(super) view: ApprovalView,
    pub(super) prompt: ApprovalPrompt,
}

impl RunRegistry {
    /// Records a call waiting for a decision, stores the run, and only then shows the approval
    /// (status `waiting`, an `approval_requested` event, answerable): another instance on the
    /// same database asked about it finds where it lives.
    pub(super) async fn add_approval(&self, entry: &Arc<RunEntry>, prompt: ApprovalPrompt) {
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
        let data = RunEventData::ApprovalRequested(view.clone());
        entry.lock().approvals.insert(
            view.id.clone(),
            Pending {
                view: view.clone(),
                prompt,
            },
        );
        self.persist(entry).await;
        entry.lock().set_waiting_from_pending();
        lock(&self.inner.approvals).insert(view.id.clone(), Arc::clone(entry));
        tracing::info!(run = %entry.id, agent = %entry.agent, approval = %view.id, tool = %view.tool, "run waits for an approval");
        entry.push(data);
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
    /// [`RunError::ApprovalNotFound`] when it is not pending (answered, run ended, never
    /// asked).
    pub fn resolve(&self, id: &str, response: ApprovalResponse) -> Result<ApprovalView, RunError> {
        let not_found = || RunError::ApprovalNotFound { id: id.to_owned() };
        let entry = lock(&self.inner.approvals)
            .remove(id)
            .ok_or_else(not_found)?;
        let pending = {
            let mut state = entry.lock();
            let pending = state.approvals.remove(id);
            state.set_waiting_from_pending();
            pending
        };
        let pending = pending.ok_or_else(not_found)?;
        let (decision, extra) = match &response {
            ApprovalResponse::Approve => ("approve", Value::Null),
            ApprovalResponse::Edit(args) => ("edit", args.clone()),
            ApprovalResponse::Reject(reason) => ("reject", Value::String(reason.clone())),
            _ => ("other", Value::Null),
        };
        tracing::info!(run = %entry.id, agent = %entry.agent, approval = %id, decision, "approval answered");
        entry.push(RunEventData::ApprovalResolved(ApprovalResolved {
            approval_id: id.to_owned(),
            decision: decision.to_owned(),
            detail: extra,
        }));
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
    /// [`RunError::QuestionNotFound`].
    pub fn answer_question(&self, id: &str, answer: String) -> Result<(), RunError> {
        self.inner
            .questions
            .answer(id, answer)
            .map_err(|reason| RunError::QuestionNotFound {
                id: id.to_owned(),
                reason,
            })
    }

    /// The channel to give `ask_human` (as a `Human` extension): questions
    /// become run events and are answered through [`RunRegistry::answer_question`].
    pub fn human_channel(&self) -> impl HumanChannel + use<> {
        RunQuestions {
            registry: self.clone(),
        }
    }
}

/// `ask_human`'s channel in a registry: a question becomes an event of its run.
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
                run.lock().set_waiting_from_pending();
                tracing::info!(run = %run.id, agent = %run.agent, question = %view.id, "run waits for an answer");
                run.push(RunEventData::QuestionAsked(view.clone()));
            }
            let id = view.id.clone();
            let answer = self.registry.inner.questions.ask(question).await;
            if let Some(run) = &run {
                {
                    let mut state = run.lock();
                    state.questions.remove(&id);
                    state.set_waiting_from_pending();
                }
                run.push(RunEventData::QuestionAnswered {
                    question_id: id,
                    answered: answer.is_ok(),
                });
                self.registry.persist(run).await;
            }
            answer
        })
    }
}
