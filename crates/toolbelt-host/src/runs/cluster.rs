//! Instances on one database (ADR 0045): which one holds a run this one does not, and whether
//! it answers.

use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::RunError;
use super::events::RunTranscript;
use super::registry::{RunRegistry, store_id};

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

/// The instance holding a run, and where to send a request about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// The instance's id (generated at its start-up; `/healthz` shows it).
    pub id: String,
    /// The URL the instance advertises.
    pub url: String,
    /// The same request on that instance.
    pub location: String,
}

/// The HTTP client that asks other instances whether they answer: made at the first probe
/// and shared by every probe of the registry after it.
#[derive(Default)]
pub(super) struct Probe {
    client: OnceLock<Option<reqwest::Client>>,
}

impl Probe {
    /// How long an instance has to answer.
    const TIMEOUT: Duration = Duration::from_secs(1);

    fn client(&self) -> Option<&reqwest::Client> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .timeout(Self::TIMEOUT)
                    .build()
                    .ok()
            })
            .as_ref()
    }

    /// Whether the instance `id` answers at `url` (its `/healthz` names it), within 1 s.
    async fn answers(&self, url: &str, id: &str) -> bool {
        let Some(client) = self.client() else {
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
}

impl RunRegistry {
    /// Where `what`, unknown to this instance, lives: another instance on the same database
    /// started the run. [`RunError::HeldByOtherInstance`] names that instance, its URL and
    /// the same request there when it answers on its `/healthz`;
    /// [`RunError::HolderUnreachable`] when it does not. `None` when the store knows no
    /// unfinished run holding `what`.
    pub async fn held_elsewhere(&self, what: Held<'_>) -> Option<RunError> {
        let store = self.inner.store.get()?;
        let record = match what {
            Held::Run(id) => store
                .runs()
                .get(store_id(id))
                .await
                .ok()
                .filter(|r| !r.status.is_finished())?,
            Held::Approval(id) | Held::Question(id) => {
                // Only the waiting runs whose transcript holds the id, found in the
                // database however many runs wait.
                let waiting = store
                    .runs()
                    .mentioning(toolbelt_store::RunStatus::Waiting, id, 64)
                    .await
                    .ok()?;
                waiting.into_iter().find(|r| {
                    let pending = RunTranscript::read(&r.transcript).pending;
                    match what {
                        Held::Approval(_) => pending.approvals.iter().any(|a| a.id == id),
                        _ => pending.questions.iter().any(|q| q.id == id),
                    }
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
        let holder = Holder {
            id: holder_id.to_owned(),
            url: url.to_owned(),
            location,
        };
        Some(if self.inner.probe.answers(url, holder_id).await {
            RunError::HeldByOtherInstance { what, holder }
        } else {
            RunError::HolderUnreachable { what, holder }
        })
    }
}
