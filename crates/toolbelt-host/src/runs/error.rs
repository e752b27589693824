//! [`RunError`]: why a request about a run, an approval or a question was not served.

use toolbelt_store::StoreError;
use toolbelt_tools::HumanError;

use super::cluster::Holder;
use super::run::RunStatus;

/// Why the registry could not do what was asked. Front-ends map each variant to their own
/// answer; [`RunError::code`] is the stable name of the condition.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// This instance holds no run with this id (nor, for reads, the store).
    #[error("no run `{id}` on this server")]
    RunNotFound {
        /// The id asked for.
        id: String,
    },
    /// The run has already ended.
    #[error("run `{id}` has already ended ({status})")]
    RunFinished {
        /// The run.
        id: String,
        /// How it ended.
        status: RunStatus,
    },
    /// No call waits for a decision under this id on this instance.
    #[error("no pending approval `{id}`: it was answered, its run ended, or it never existed")]
    ApprovalNotFound {
        /// The id asked for.
        id: String,
    },
    /// No question waits for an answer under this id on this instance.
    #[error("{reason}; it was answered, timed out, or never asked")]
    QuestionNotFound {
        /// The id asked for.
        id: String,
        /// What the question channel said.
        reason: HumanError,
    },
    /// Another instance on the same database holds the run, and answers.
    #[error(
        "{what} is held by instance `{}` at {}; send the request there ({})",
        .holder.id, .holder.url, .holder.location
    )]
    HeldByOtherInstance {
        /// What the request named, in words (``run `run_1` ``, ``approval `apr_1` (run `run_1`)``).
        what: String,
        /// The instance holding it.
        holder: Holder,
    },
    /// Another instance on the same database holds the run and does not answer.
    #[error(
        "{what} is held by instance `{}` at {}, which does not answer (stopped?); only that instance can go on with the run",
        .holder.id, .holder.url
    )]
    HolderUnreachable {
        /// What the request named, in words.
        what: String,
        /// The instance holding it.
        holder: Holder,
    },
    /// The store could not record the run (nothing was started).
    #[error("the run could not be recorded")]
    Store(#[source] StoreError),
}

impl RunError {
    /// The stable name of the condition: `run_not_found`, `run_finished`,
    /// `approval_not_found`, `question_not_found`, `held_by_other_instance`,
    /// `holder_unreachable` or `store_failed`.
    pub fn code(&self) -> &'static str {
        match self {
            Self::RunNotFound { .. } => "run_not_found",
            Self::RunFinished { .. } => "run_finished",
            Self::ApprovalNotFound { .. } => "approval_not_found",
            Self::QuestionNotFound { .. } => "question_not_found",
            Self::HeldByOtherInstance { .. } => "held_by_other_instance",
            Self::HolderUnreachable { .. } => "holder_unreachable",
            Self::Store(_) => "store_failed",
        }
    }

    /// Whether this instance does not know what was named (a run, an approval or a
    /// question): another instance may hold it ([`super::RunRegistry::held_elsewhere`]).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            Self::RunNotFound { .. }
                | Self::ApprovalNotFound { .. }
                | Self::QuestionNotFound { .. }
        )
    }

    /// The instance holding the run, for the two "held elsewhere" conditions.
    pub fn holder(&self) -> Option<&Holder> {
        match self {
            Self::HeldByOtherInstance { holder, .. } | Self::HolderUnreachable { holder, .. } => {
                Some(holder)
            }
            _ => None,
        }
    }
}
