//! The facts availability conditions are checked against.

use toolbelt_store::{Condition, Environment, Store, StoreError};
use toolbelt_tools::declarative::Secrets;

/// The environment facts `conditions` are checked against: the secrets they name that
/// `secrets` holds, the settings set as environment variables, and the enabled MCP servers
/// (a process that does not supervise them cannot probe their health, so an enabled server
/// counts as healthy).
///
/// # Errors
/// The database's error.
pub async fn environment(
    store: &Store,
    secrets: &Secrets,
    conditions: &[Condition],
) -> Result<Environment, StoreError> {
    let mut env = Environment::now();
    for condition in conditions {
        match condition {
            Condition::Secret(name) if secrets.contains(name) => {
                env = env.with_secrets([name.clone()]);
            }
            Condition::Setting(name) if std::env::var_os(name).is_some() => {
                env = env.with_settings([name.clone()]);
            }
            _ => {}
        }
    }
    let healthy: Vec<String> = store
        .mcp_servers()
        .list()
        .await?
        .into_iter()
        .filter(|s| s.enabled)
        .map(|s| s.name)
        .collect();
    Ok(env.with_healthy_mcp_servers(healthy))
}
