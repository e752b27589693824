//! Opening the database a server runs on: the host's [`toolbelt_host::open`], re-exported.

pub use toolbelt_host::{Database, POLL_INTERVAL, open};

/// [`open`] on a store already opened (tests open one per Postgres schema), with the
/// declared secrets of the environment.
///
/// # Errors
/// As [`open`].
pub async fn open_store(
    store: toolbelt_store::Store,
    compiled: Vec<toolbelt_core::ToolHandle>,
    by: &str,
) -> Result<Database, toolbelt_store::StoreError> {
    toolbelt_host::open_store(
        store,
        compiled,
        by,
        toolbelt_tools::declarative::Secrets::from_env(),
    )
    .await
}
