//! Fixtures: a store on each engine, and stored command tools.

use serde_json::json;
use toolbelt_core::{ToolPolicy, ToolSpec};
use toolbelt_store::{Availability, Store, StoreOptions, ToolDraft, ToolSource};

/// A fresh store on SQLite (in a temporary directory) and, when `TOOLBELT_TEST_PG_URL` is
/// set, one in a Postgres schema of its own.
pub(crate) async fn stores(test: &str) -> Vec<(Store, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    let mut stores = vec![(Store::open(&url).await.unwrap(), Some(dir))];
    match std::env::var("TOOLBELT_TEST_PG_URL") {
        Ok(pg) => {
            let schema = format!("host_{test}_{}", std::process::id());
            let options = StoreOptions::default().with_pg_schema(schema);
            stores.push((Store::open_with(&pg, options).await.unwrap(), None));
        }
        Err(_) => eprintln!("skipped: postgres (TOOLBELT_TEST_PG_URL is unset)"),
    }
    stores
}

/// Drops the Postgres schema of `store` (nothing for SQLite).
pub(crate) async fn drop_schema(store: &Store) {
    if let Some(schema) = store.pg_schema().map(str::to_owned) {
        let sql = format!("DROP SCHEMA \"{schema}\" CASCADE");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(store.pool())
            .await
            .unwrap();
    }
}

/// A read-only command tool `name` that prints `text`, described as `description`.
pub(crate) fn printer(name: &str, description: &str, text: &str) -> ToolDraft {
    let spec = ToolSpec::builder(name)
        .description(description)
        .parameters(json!({"type": "object", "properties": {}}))
        .policy(ToolPolicy::read_only())
        .build()
        .unwrap();
    ToolDraft::new(spec, ToolSource::Declarative, "test")
        .with_definition(json!({"command": {"argv": ["printf", "%s", text], "read_only": true}}))
}

/// Availability for agents of `kinds` only.
pub(crate) fn only_kinds(kinds: &[&str]) -> Availability {
    let mut availability = Availability::default();
    availability.agent_kinds = kinds.iter().map(|k| (*k).to_owned()).collect();
    availability
}
