//! Fixtures: a store on each engine, and stored command tools.

use serde_json::json;
use toolbelt_core::{ToolPolicy, ToolSpec};
use toolbelt_store::{Availability, Store, StoreOptions, ToolDef, ToolSource};

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
pub(crate) fn printer(name: &str, description: &str, text: &str) -> ToolDef {
    let spec = ToolSpec::builder(name)
        .description(description)
        .parameters(json!({"type": "object", "properties": {}}))
        .policy(ToolPolicy::read_only())
        .build()
        .unwrap();
    ToolDef::new(spec, ToolSource::Declarative)
        .with_definition(json!({"command": {"argv": ["printf", "%s", text], "read_only": true}}))
}

/// Availability for agents of `kinds` only.
pub(crate) fn only_kinds(kinds: &[&str]) -> Availability {
    let mut availability = Availability::default();
    availability.agent_kinds = kinds.iter().map(|k| (*k).to_owned()).collect();
    availability
}

/// A database a test opens (possibly twice, as two processes would), removed afterwards.
pub(crate) struct TestDb {
    url: String,
    options: StoreOptions,
    pub(crate) engine: &'static str,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    /// A connection pool of its own on this database.
    pub(crate) async fn open(&self) -> Store {
        Store::open_with(&self.url, self.options.clone())
            .await
            .unwrap()
    }

    /// Drops the Postgres schema (the SQLite file goes with its directory).
    pub(crate) async fn cleanup(&self) {
        if self.options.pg_schema.is_some() {
            drop_schema(&self.open().await).await;
        }
    }
}

/// A SQLite file and, when `TOOLBELT_TEST_PG_URL` is set, a Postgres schema of its own.
pub(crate) fn databases() -> Vec<TestDb> {
    let dir = tempfile::tempdir().unwrap();
    let mut dbs = vec![TestDb {
        url: format!("sqlite://{}", dir.path().join("t.db").display()),
        options: StoreOptions::default(),
        engine: "sqlite",
        _dir: Some(dir),
    }];
    match std::env::var("TOOLBELT_TEST_PG_URL") {
        Ok(url) => dbs.push(TestDb {
            url,
            options: StoreOptions::default()
                .with_pg_schema(format!("t_{}", uuid::Uuid::now_v7().simple())),
            engine: "postgres",
            _dir: None,
        }),
        Err(_) => eprintln!("skipped: postgres (TOOLBELT_TEST_PG_URL is unset)"),
    }
    dbs
}

/// Runs `test` once per engine with a freshly migrated store.
pub(crate) async fn each_engine<F, Fut>(test: F)
where
    F: Fn(Store) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for db in databases() {
        let store = db.open().await;
        eprintln!("engine: {}", db.engine);
        test(store.clone()).await;
        store.close().await;
        db.cleanup().await;
    }
}
