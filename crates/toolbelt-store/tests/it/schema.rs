//! The migrations give both engines the same logical schema: same tables, same columns.
//! Full-text index structures differ by design (ADR 0020) and are left out: SQLite's FTS5
//! table `memories_fts` (and its shadow tables), Postgres's generated `memories.terms_tsv`.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use toolbelt_store::{Engine, Store};

use crate::support::databases;

async fn columns(store: &Store) -> BTreeMap<String, Vec<String>> {
    let sql = match store.engine() {
        Engine::Sqlite => {
            "SELECT m.name AS t, p.name AS c FROM sqlite_master m JOIN pragma_table_info(m.name) p WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE '_sqlx%' AND m.name NOT LIKE 'memories_fts%' ORDER BY m.name, p.cid"
        }
        _ => {
            "SELECT table_name::text AS t, column_name::text AS c FROM information_schema.columns WHERE table_schema = current_schema() AND table_name NOT LIKE '_sqlx%' AND column_name <> 'terms_tsv' ORDER BY table_name, ordinal_position"
        }
    };
    let rows: Vec<(String, String)> = sqlx::query_as(sql).fetch_all(store.pool()).await.unwrap();
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (table, column) in rows {
        map.entry(table).or_default().push(column);
    }
    map
}

#[tokio::test]
async fn both_engines_have_the_same_tables_and_columns() {
    let mut seen = Vec::new();
    for db in databases() {
        let store = db.open().await;
        seen.push(columns(&store).await);
        store.close().await;
        db.cleanup().await;
    }
    let tables: Vec<&String> = seen[0].keys().collect();
    assert_eq!(
        tables,
        [
            "agent_tools",
            "agents",
            "api_tokens",
            "changes",
            "mcp_servers",
            "memories",
            "memory_version",
            "routine_runs",
            "routines",
            "run_log",
            "runs",
            "skills",
            "tool_versions",
            "tools"
        ]
    );
    assert_eq!(
        seen[0]["tools"],
        [
            "name",
            "source",
            "current_version",
            "latest_version",
            "current_hash",
            "enabled",
            "missing",
            "availability",
            "revision",
            "created_at",
            "updated_at",
            "changed_by"
        ]
    );
    for other in &seen[1..] {
        assert_eq!(other, &seen[0]);
    }
}

#[tokio::test]
async fn a_single_connection_start_uses_one_postgres_connection_until_widened() {
    let Ok(url) = std::env::var("TOOLBELT_TEST_PG_URL") else {
        eprintln!("skipped: postgres (TOOLBELT_TEST_PG_URL is unset)");
        return;
    };
    let schema = format!("t_{}", uuid::Uuid::now_v7().simple());
    let options = toolbelt_store::StoreOptions::default()
        .with_pg_schema(schema.as_str())
        .with_single_connection_start(true);
    let store = Store::open_with(&url, options).await.unwrap();
    // Back to back, as a server's start-up runs them: one connection, reused.
    for _ in 0..5 {
        store.applied_schema_version().await.unwrap();
    }
    assert_eq!(store.pool().size(), 1);
    store.widen_pool().unwrap();
    let (a, b, c) = tokio::join!(
        store.applied_schema_version(),
        store.applied_schema_version(),
        store.applied_schema_version()
    );
    let v = toolbelt_store::SCHEMA_VERSION;
    assert_eq!((a.unwrap(), b.unwrap(), c.unwrap()), (v, v, v));
    assert_eq!(store.pool().options().get_max_connections(), 8);
    let drop = format!("DROP SCHEMA \"{schema}\" CASCADE");
    sqlx::query(sqlx::AssertSqlSafe(drop))
        .execute(store.pool())
        .await
        .unwrap();
}
