//! [`AgentAccess`]: which agents a caller may act on.
//!
//! A token (or any other principal a front-end knows) may be limited to a list of agents; it
//! then reaches those agents and what belongs to them (their tools, runs, approvals, questions
//! and routines) and nothing else. The rule lives here so that every entry point (REST, MCP,
//! the console through REST) answers the same way: the server asks the access before it
//! reads an agent, a run or a routine, and filters its lists through it.

use std::collections::BTreeSet;

use toolbelt_store::{AgentSpec, Stored};

use crate::agents::AgentFactory;
use crate::error::HostError;

/// Which agents a caller may act on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AgentAccess {
    /// Every agent, and what belongs to the whole server (tools, MCP servers, skills, settings).
    #[default]
    All,
    /// Only these agents and what belongs to them.
    Only(BTreeSet<String>),
}

impl AgentAccess {
    /// Access limited to `agents` (an empty list reaches no agent at all).
    pub fn only<I, S>(agents: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Only(agents.into_iter().map(Into::into).collect())
    }

    /// `All` for `None`, else [`AgentAccess::only`].
    pub fn from_list(agents: Option<Vec<String>>) -> Self {
        agents.map_or(Self::All, Self::only)
    }

    /// Whether every agent (and the whole server) is reachable.
    pub fn is_all(&self) -> bool {
        matches!(self, Self::All)
    }

    /// The agents reachable, `None` for all of them.
    pub fn agents(&self) -> Option<&BTreeSet<String>> {
        match self {
            Self::All => None,
            Self::Only(agents) => Some(agents),
        }
    }

    /// Whether `agent` is reachable.
    pub fn allows(&self, agent: &str) -> bool {
        match self {
            Self::All => true,
            Self::Only(agents) => agents.contains(agent),
        }
    }

    /// `Ok` when `agent` is reachable.
    ///
    /// # Errors
    /// [`HostError::AgentNotAllowed`] naming the agents that are.
    pub fn check(&self, agent: &str) -> Result<(), HostError> {
        if self.allows(agent) {
            return Ok(());
        }
        Err(HostError::AgentNotAllowed {
            agent: agent.to_owned(),
            allowed: self.agents().into_iter().flatten().cloned().collect(),
        })
    }

    /// `Ok` when the whole server is reachable (tools, MCP servers, skills, settings, stats).
    ///
    /// # Errors
    /// [`HostError::ServerNotAllowed`] naming the agents that are.
    pub fn check_server(&self) -> Result<(), HostError> {
        match self {
            Self::All => Ok(()),
            Self::Only(agents) => Err(HostError::ServerNotAllowed {
                allowed: agents.iter().cloned().collect(),
            }),
        }
    }

    /// Keeps the items whose agent is reachable.
    pub fn retain<T>(&self, items: &mut Vec<T>, agent_of: impl Fn(&T) -> &str) {
        if let Self::Only(agents) = self {
            items.retain(|item| agents.contains(agent_of(item)));
        }
    }
}

impl AgentFactory {
    /// The agent `name` as [`AgentFactory::record`] finds it, when `access` reaches it; a
    /// name it does not reach is refused before any lookup (so the answer does not tell
    /// whether it exists), and a missing one suggests only reachable names.
    ///
    /// # Errors
    /// [`HostError::AgentNotAllowed`], [`HostError::AgentNotFound`], the database's error.
    pub async fn record_for(
        &self,
        name: &str,
        access: &AgentAccess,
    ) -> Result<Stored<AgentSpec>, HostError> {
        access.check(name)?;
        match self.record(name).await {
            Err(HostError::AgentNotFound { name, mut known }) => {
                known.retain(|k| access.allows(k));
                Err(HostError::AgentNotFound { name, known })
            }
            other => other,
        }
    }

    /// Every agent `access` reaches.
    ///
    /// # Errors
    /// The database's error.
    pub async fn records_for(
        &self,
        access: &AgentAccess,
    ) -> Result<Vec<Stored<AgentSpec>>, HostError> {
        let mut records = self.records().await?;
        access.retain(&mut records, |r| r.name.as_str());
        Ok(records)
    }

    /// The tools `access` reaches: `None` for every tool, else the tools a run of one of its
    /// agents is offered (an agent that cannot be built offers none).
    ///
    /// # Errors
    /// The database's error.
    pub async fn tools_for(
        &self,
        access: &AgentAccess,
    ) -> Result<Option<BTreeSet<String>>, HostError> {
        if access.is_all() {
            return Ok(None);
        }
        let mut names = BTreeSet::new();
        for record in self.records_for(access).await? {
            match self.tools(&record).await {
                Ok((_, report)) => {
                    names.extend(report.into_iter().filter(|r| r.available).map(|r| r.name));
                }
                Err(HostError::Store(e)) => return Err(HostError::Store(e)),
                Err(_) => {}
            }
        }
        Ok(Some(names))
    }

    /// `Ok` when `access` reaches the tool `name` (see [`AgentFactory::tools_for`]).
    ///
    /// # Errors
    /// [`HostError::ToolNotAllowed`]; the database's error.
    pub async fn check_tool(&self, name: &str, access: &AgentAccess) -> Result<(), HostError> {
        match self.tools_for(access).await? {
            Some(tools) if !tools.contains(name) => Err(HostError::ToolNotAllowed {
                tool: name.to_owned(),
                allowed: access.agents().into_iter().flatten().cloned().collect(),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_reaches_everything_and_only_reaches_its_agents() {
        assert!(AgentAccess::All.allows("anyone"));
        assert!(AgentAccess::All.check_server().is_ok());
        let only = AgentAccess::only(["writer"]);
        assert!(only.allows("writer"));
        assert!(!only.allows("reviewer"));
        let Err(HostError::AgentNotAllowed { agent, allowed }) = only.check("reviewer") else {
            panic!("reviewer reached");
        };
        assert_eq!(
            (agent.as_str(), allowed),
            ("reviewer", vec!["writer".to_owned()])
        );
        assert!(matches!(
            only.check_server(),
            Err(HostError::ServerNotAllowed { .. })
        ));
        let mut names = vec!["writer", "reviewer", "writer"];
        only.retain(&mut names, |n| n);
        assert_eq!(names, ["writer", "writer"]);
        assert!(!AgentAccess::only(Vec::<String>::new()).allows("writer"));
        assert_eq!(AgentAccess::from_list(None), AgentAccess::All);
    }
}
