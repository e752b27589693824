//! Learning from use over the store's run log: [`StoreRunLog`].

use toolbelt_router::{CallOutcome, RouteError, RunLog, UseRecord};
use toolbelt_store::{Store, ToolUse};

/// The store's run log as a [`RunLog`]: each tool call of a stored run, with the run's
/// request, newest `limit` calls at most.
///
/// ```no_run
/// # async fn demo(store: toolbelt_store::Store) -> Result<(), toolbelt_router::RouteError> {
/// use toolbelt_router::{LearnConfig, LearnedUsage};
///
/// let now = 1_700_000_000;
/// let usage =
///     LearnedUsage::from_run_log(&toolbelt_host::StoreRunLog::new(store), now, &LearnConfig::default())
///         .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct StoreRunLog {
    store: Store,
    limit: usize,
}

impl StoreRunLog {
    /// Most calls read by default (the newest).
    pub const DEFAULT_LIMIT: usize = 10_000;

    /// The run log of `store`.
    pub fn new(store: Store) -> Self {
        Self {
            store,
            limit: Self::DEFAULT_LIMIT,
        }
    }

    /// Reads at most the newest `limit` calls.
    #[must_use]
    pub fn with_limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }
}

impl RunLog for StoreRunLog {
    async fn tool_uses(&self, since: u64) -> Result<Vec<UseRecord>, RouteError> {
        let since_ms = i64::try_from(since.saturating_mul(1000)).unwrap_or(i64::MAX);
        let limit = i64::try_from(self.limit).unwrap_or(i64::MAX);
        let uses = self
            .store
            .run_log()
            .tool_uses(since_ms, limit)
            .await
            .map_err(|e| RouteError::Backend {
                backend: "the store's run log",
                message: e.to_string(),
            })?;
        Ok(uses.into_iter().map(record_of).collect())
    }
}

/// A logged call as learning reads it: seconds, and succeeded or failed (the log keeps no
/// other outcome; a denied or rejected call is logged as failed).
fn record_of(used: ToolUse) -> UseRecord {
    let outcome = if used.ok {
        CallOutcome::Succeeded
    } else {
        CallOutcome::Failed
    };
    let at = u64::try_from(used.at / 1000).unwrap_or(0);
    UseRecord::new(used.tool, used.request, at, outcome)
}
