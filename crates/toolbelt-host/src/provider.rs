//! Which model a stored agent talks to: its provider settings over the process environment.

use std::sync::Arc;

use toolbelt_llm::{Provider, ProviderConfig};
use toolbelt_store::{AgentSpec, Stored};

use crate::error::HostError;

/// Chooses the provider of an agent. The default, [`provider_config`] over the environment,
/// suits a server or the CLI; tests put a scripted provider here.
pub type ProviderFor = Arc<dyn Fn(&Stored<AgentSpec>) -> Result<Provider, HostError> + Send + Sync>;

/// The provider settings of `record`: the environment (`TOOLBELT_PROVIDER`, `TOOLBELT_MODEL`,
/// `OPENAI_BASE_URL`, `OPENAI_API_KEY`, their Anthropic twins, …) with the agent's own
/// `provider`, `model`, `options.base_url` and `options.api_key_env` on top. A `provider` other
/// than `openai` or `anthropic` is taken as a label and leaves the choice to the environment.
///
/// # Errors
/// [`HostError::Provider`] when no provider is configured.
pub fn provider_config(record: &Stored<AgentSpec>) -> Result<ProviderConfig, HostError> {
    provider_config_from(record, |name| {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    })
}

/// [`provider_config`] with `env` in place of the process environment (a CLI puts its flags
/// there).
///
/// # Errors
/// [`HostError::Provider`] when no provider is configured.
pub fn provider_config_from(
    record: &Stored<AgentSpec>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<ProviderConfig, HostError> {
    let kind = record
        .provider
        .clone()
        .filter(|p| matches!(p.as_str(), "openai" | "anthropic"));
    let o = &record.options;
    ProviderConfig::from_vars(|name| match name {
        "TOOLBELT_PROVIDER" => kind.clone().or_else(|| env(name)),
        "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" => o.base_url.clone().or_else(|| env(name)),
        "TOOLBELT_MODEL" => record.model.clone().or_else(|| env(name)),
        "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => match &o.api_key_env {
            Some(var) => env(var),
            None => env(name),
        },
        other => env(other),
    })
    .map_err(|source| HostError::Provider {
        agent: record.name.clone(),
        source,
    })
}

/// The provider [`provider_config`] describes.
pub(crate) fn env_provider() -> ProviderFor {
    Arc::new(|record: &Stored<AgentSpec>| {
        provider_config(record)?
            .into_provider()
            .map_err(|source| HostError::Provider {
                agent: record.name.clone(),
                source,
            })
    })
}
