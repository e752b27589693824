//! [`Scope`]: what a bearer token may do.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// What a token may do. `admin` includes `run`, which includes `read`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Read tools, agents, runs and metrics.
    Read,
    /// Call tools, run agents, answer approvals and questions.
    Run,
    /// Change tools and agents.
    Admin,
}

impl Scope {
    /// Whether holding `self` grants `needed`.
    pub fn grants(self, needed: Scope) -> bool {
        self >= needed
    }

    /// The scope's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Run => "run",
            Self::Admin => "admin",
        }
    }
}
