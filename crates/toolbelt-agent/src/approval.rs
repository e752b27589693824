//! Pausing a streamed run for a person's decision on a tool call.

use std::fmt;

use tokio::sync::oneshot;
use toolbelt_core::{ApprovalRequest, ApprovalResponse, Approver, BoxFuture};

use crate::event::{AgentEvent, EventSink};

/// A call waiting for a decision, carried by [`AgentEvent::ApprovalRequested`].
///
/// Answer with [`approve`](Self::approve), [`edit`](Self::edit) or
/// [`reject`](Self::reject); dropping the prompt rejects the call. A
/// rejected call reaches the model as a tool error it can react to.
pub struct ApprovalPrompt {
    id: String,
    request: ApprovalRequest,
    responder: oneshot::Sender<ApprovalResponse>,
}

impl fmt::Debug for ApprovalPrompt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalPrompt")
            .field("id", &self.id)
            .field("call", &self.request.call)
            .finish_non_exhaustive()
    }
}

impl ApprovalPrompt {
    /// An id unique across runs and processes: `<run id>/<call id>` (call ids
    /// come from the model and repeat across runs; the run id is a UUID v7).
    /// Hosts that let people answer later (a server) key prompts by it.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The call and the tool's spec.
    pub fn request(&self) -> &ApprovalRequest {
        &self.request
    }

    /// Runs the call as it is.
    pub fn approve(self) {
        self.respond(ApprovalResponse::Approve);
    }

    /// Runs the call with `arguments` instead (validated again before it runs).
    pub fn edit(self, arguments: serde_json::Value) {
        self.respond(ApprovalResponse::Edit(arguments));
    }

    /// Refuses the call; `reason` is shown to the model.
    pub fn reject(self, reason: impl Into<String>) {
        self.respond(ApprovalResponse::Reject(reason.into()));
    }

    /// Answers with any [`ApprovalResponse`].
    pub fn respond(self, response: ApprovalResponse) {
        // The run may have ended meanwhile (cancelled); then nobody waits.
        let _ = self.responder.send(response);
    }
}

/// The approver a streamed run puts in its tool context: it turns each
/// request into an event and waits for the answer.
pub(crate) struct StreamApprover {
    pub(crate) sink: EventSink,
    pub(crate) run_id: String,
}

impl Approver for StreamApprover {
    fn approve(&self, request: ApprovalRequest) -> BoxFuture<'_, ApprovalResponse> {
        let (responder, answer) = oneshot::channel();
        let sent = self
            .sink
            .send(AgentEvent::ApprovalRequested(ApprovalPrompt {
                id: format!("{}/{}", self.run_id, request.call.id),
                request,
                responder,
            }));
        Box::pin(async move {
            if !sent {
                return ApprovalResponse::Reject("nobody is listening for approvals".to_owned());
            }
            answer.await.unwrap_or_else(|_| {
                ApprovalResponse::Reject("the approval request was dropped unanswered".to_owned())
            })
        })
    }
}
