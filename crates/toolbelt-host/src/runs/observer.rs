//! [`RunObserver`]: what a front-end counts about runs (the server's Prometheus series).

use toolbelt_core::CallResult;
use toolbelt_llm::Usage;
use toolbelt_router::RouteDecision;

use super::run::RunStatus;

/// Told what happens in the runs of a registry ([`super::RunRegistry::with_observer`]).
/// Every method does nothing unless implemented; each is called on the run's task, so it
/// should return quickly.
pub trait RunObserver: Send + Sync + 'static {
    /// The router chose tools (or none) for a model turn.
    fn routed(&self, decision: &RouteDecision) {
        let _ = decision;
    }

    /// A tool call finished, well or not.
    fn call_finished(&self, result: &CallResult) {
        let _ = result;
    }

    /// A run of `agent` on `model` ended with an answer or an error, having used `usage`
    /// (called before [`RunObserver::run_ended`]).
    fn tokens(&self, agent: &str, model: &str, usage: Usage) {
        let _ = (agent, model, usage);
    }

    /// A run of `agent` ended as `status`.
    fn run_ended(&self, agent: &str, status: RunStatus) {
        let _ = (agent, status);
    }
}

/// The observer of a registry given none.
pub(super) struct Unobserved;

impl RunObserver for Unobserved {}
