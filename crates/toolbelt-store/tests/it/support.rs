//! The per-engine fixture: a fresh SQLite file and a fresh Postgres schema per test.

use std::future::Future;

use serde_json::json;
use toolbelt_core::ToolSpec;
use toolbelt_store::{Store, StoreOptions, ToolDef, ToolSource};

/// A database a test may use, removed afterwards.
pub(crate) struct TestDb {
    pub(crate) url: String,
    pub(crate) options: StoreOptions,
    pub(crate) engine: &'static str,
    _dir: Option<tempfile::TempDir>,
}

impl TestDb {
    pub(crate) fn sqlite() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("t.db").display());
        Self {
            url,
            options: StoreOptions::default(),
            engine: "sqlite",
            _dir: Some(dir),
        }
    }

    pub(crate) fn postgres() -> Option<Self> {
        let url = std::env::var("TOOLBELT_TEST_PG_URL").ok()?;
        let schema = format!("t_{}", uuid::Uuid::now_v7().simple());
        Some(Self {
            url,
            options: StoreOptions::default().with_pg_schema(schema),
            engine: "postgres",
            _dir: None,
        })
    }

    pub(crate) async fn open(&self) -> Store {
        Store::open_with(&self.url, self.options.clone())
            .await
            .unwrap()
    }

    pub(crate) async fn cleanup(&self) {
        if let Some(schema) = &self.options.pg_schema {
            let store =
                Store::open_with(&self.url, StoreOptions::default().with_migrate(false)).await;
            // The default schema may be unmigrated: open without migrating and drop ours.
            let pool = match store {
                Ok(store) => store.pool().clone(),
                Err(_) => {
                    sqlx::any::install_default_drivers();
                    sqlx::AnyPool::connect(&self.url).await.unwrap()
                }
            };
            let sql = format!("DROP SCHEMA IF EXISTS \"{schema}\" CASCADE");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&pool)
                .await
                .unwrap();
        }
    }
}

/// The databases every test runs on.
pub(crate) fn databases() -> Vec<TestDb> {
    let mut dbs = vec![TestDb::sqlite()];
    match TestDb::postgres() {
        Some(db) => dbs.push(db),
        None => eprintln!("skipped: postgres (TOOLBELT_TEST_PG_URL is unset)"),
    }
    dbs
}

/// Runs `test` once per engine with a freshly migrated store.
pub(crate) async fn each_engine<F, Fut>(test: F)
where
    F: Fn(Store) -> Fut,
    Fut: Future<Output = ()>,
{
    for db in databases() {
        let store = db.open().await;
        eprintln!("engine: {}", db.engine);
        test(store.clone()).await;
        store.close().await;
        db.cleanup().await;
    }
}

pub(crate) fn spec(name: &str, description: &str) -> ToolSpec {
    ToolSpec::builder(name)
        .description(description)
        .parameters(json!({
            "type": "object",
            "properties": {"q": {"type": "string"}},
            "required": ["q"]
        }))
        .tag("web")
        .build()
        .unwrap()
}

pub(crate) fn http_def(name: &str, description: &str) -> ToolDef {
    ToolDef::new(spec(name, description), ToolSource::Declarative)
        .with_definition(json!({"http": {"method": "GET", "url": "http://127.0.0.1:1/{{q}}"}}))
}
