//! Databases for CLI tests: SQLite always, Postgres (a schema of its own, selected through the
//! URL's `options`) when `TOOLBELT_TEST_PG_URL` is set.

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::path::Path;

/// A database URL for the CLI, and the Postgres schema it lives in.
pub(crate) struct Db {
    pub(crate) url: String,
    pub(crate) schema: Option<String>,
}

/// SQLite in `dir`, and Postgres in a schema named `<prefix>_<pid>` when configured.
pub(crate) fn databases(dir: &Path, prefix: &str) -> Vec<Db> {
    let mut dbs = vec![Db {
        url: format!("sqlite://{}", dir.join("cli.db").display()),
        schema: None,
    }];
    match std::env::var("TOOLBELT_TEST_PG_URL") {
        Ok(base) => {
            let schema = format!("{prefix}_{}", std::process::id());
            let sep = if base.contains('?') { '&' } else { '?' };
            dbs.push(Db {
                url: format!("{base}{sep}options=-c%20search_path%3D{schema}"),
                schema: Some(schema),
            });
        }
        Err(_) => eprintln!("skipped: postgres (TOOLBELT_TEST_PG_URL is unset)"),
    }
    dbs
}

/// Creates (or drops) the Postgres schema of `db`; nothing for SQLite.
pub(crate) async fn schema(db: &Db, create: bool) {
    let (Some(schema), Ok(base)) = (&db.schema, std::env::var("TOOLBELT_TEST_PG_URL")) else {
        return;
    };
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(&base).await.unwrap();
    let sql = if create {
        format!("CREATE SCHEMA \"{schema}\"")
    } else {
        format!("DROP SCHEMA \"{schema}\" CASCADE")
    };
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .execute(&pool)
        .await
        .unwrap();
}

/// A store on SQLite (in a temporary directory kept beside it) and, when
/// `TOOLBELT_TEST_PG_URL` is set, one on Postgres in a schema named `<test>_<pid>`.
pub(crate) async fn stores(test: &str) -> Vec<(toolbelt::store::Store, Option<tempfile::TempDir>)> {
    use toolbelt::store::{Store, StoreOptions};
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("s.db").display());
    let mut stores = vec![(Store::open(&url).await.unwrap(), Some(dir))];
    match std::env::var("TOOLBELT_TEST_PG_URL") {
        Ok(pg) => {
            let schema = format!("{test}_{}", std::process::id());
            let options = StoreOptions::default().with_pg_schema(schema);
            stores.push((Store::open_with(&pg, options).await.unwrap(), None));
        }
        Err(_) => eprintln!("skipped: postgres (TOOLBELT_TEST_PG_URL is unset)"),
    }
    stores
}

/// Drops the Postgres schema of `store` (nothing for SQLite).
pub(crate) async fn drop_schema(store: &toolbelt::store::Store) {
    if let Some(schema) = store.pg_schema().map(str::to_owned) {
        let sql = format!("DROP SCHEMA \"{schema}\" CASCADE");
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(store.pool())
            .await
            .unwrap();
    }
}
