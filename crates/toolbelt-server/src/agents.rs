//! The problem documents for the host's errors about agents and runs: one code per condition.
//! Every agent, configured or stored, is a `toolbelt_store::AgentSpec` built by the host's
//! `AgentFactory`; the API serves it as `Stored<AgentSpec>` (`StoredAgent` in OpenAPI).

use axum::http::StatusCode;
use toolbelt_host::HostError;
use toolbelt_host::runs::RunError;

use crate::problem::{InstanceRef, Problem};

/// The problem document for a host error: one code per condition.
pub(crate) fn host_problem(error: HostError) -> Problem {
    match error {
        HostError::AgentNotFound { name, known } => {
            Problem::not_found("agent_not_found", format!("no agent `{name}`"))
                .with_pointer("id")
                .with_nearest(known)
        }
        HostError::InvalidAgent {
            agent,
            field,
            reason,
        } => {
            let code = if field == "selection" {
                "invalid_selection"
            } else {
                "invalid_agent"
            };
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                code,
                format!("agent `{agent}`: {field}: {reason}"),
            )
            .with_pointer(format!("/{}", field.replace('.', "/")))
        }
        e @ HostError::Provider { .. } => {
            let detail = match std::error::Error::source(&e) {
                Some(source) => format!("{e}: {source}"),
                None => e.to_string(),
            };
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "provider_unavailable",
                detail,
            )
        }
        e @ HostError::AgentNotAllowed { .. } => {
            Problem::new(StatusCode::FORBIDDEN, "agent_not_allowed", e.to_string())
        }
        e @ HostError::ToolNotAllowed { .. } => {
            Problem::new(StatusCode::FORBIDDEN, "tool_not_allowed", e.to_string())
        }
        e @ HostError::ServerNotAllowed { .. } => {
            Problem::new(StatusCode::FORBIDDEN, "server_not_allowed", e.to_string())
        }
        HostError::Store(e) => crate::problem::Problem::from(e),
        other => Problem::internal(other),
    }
}

/// The problem document for a run error: one code per condition ([`RunError::code`]), the
/// holding instance in `instance` when another one holds the run.
impl From<RunError> for Problem {
    fn from(error: RunError) -> Self {
        let code = error.code();
        let problem = match &error {
            RunError::RunNotFound { .. }
            | RunError::ApprovalNotFound { .. }
            | RunError::QuestionNotFound { .. } => {
                Problem::not_found(code, error.to_string()).with_pointer("id")
            }
            RunError::RunFinished { .. } => Problem::conflict(code, error.to_string()),
            RunError::HeldByOtherInstance { .. } => {
                Problem::new(StatusCode::MISDIRECTED_REQUEST, code, error.to_string())
                    .with_pointer("id")
            }
            RunError::HolderUnreachable { .. } => {
                Problem::conflict(code, error.to_string()).with_pointer("id")
            }
            RunError::Store(source) => return Problem::internal(format!("{error}: {source}")),
            _ => return Problem::internal(error),
        };
        match error.holder() {
            Some(holder) => problem.with_instance(InstanceRef {
                id: holder.id.clone(),
                url: holder.url.clone(),
                location: holder.location.clone(),
            }),
            None => problem,
        }
    }
}
