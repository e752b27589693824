//! Process-level tests: SIGKILL durability and refusing a newer schema. The child is this test
//! binary re-run with `--ignored --exact child_writes_one_tool` and the database in env vars.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use toolbelt_store::{SCHEMA_VERSION, Store, StoreError, StoreOptions};

use crate::support::{databases, http_def};

/// Not a test of its own: the child process of `a_write_survives_sigkill`.
#[tokio::test]
#[ignore = "child process of a_write_survives_sigkill"]
async fn child_writes_one_tool() {
    let url = std::env::var("TOOLBELT_CHILD_URL").unwrap();
    let mut options = StoreOptions::default();
    if let Ok(schema) = std::env::var("TOOLBELT_CHILD_SCHEMA") {
        options = options.with_pg_schema(schema);
    }
    let store = Store::open_with(&url, options).await.unwrap();
    store
        .tools()
        .create(&http_def("durable", "kept"), "tester", None)
        .await
        .unwrap();
    println!("ok");
    // Wait to be killed: nothing after the write may be needed for it to last.
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
}

#[tokio::test]
async fn a_write_survives_sigkill() {
    for db in databases() {
        db.open().await.close().await; // migrate first, so the child only writes
        let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--ignored",
                "--exact",
                "child::child_writes_one_tool",
                "--nocapture",
            ])
            .env("TOOLBELT_CHILD_URL", &db.url)
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        if let Some(schema) = &db.options.pg_schema {
            command.env("TOOLBELT_CHILD_SCHEMA", schema);
        }
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut reported = false;
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.trim() == "ok" {
                reported = true;
                break;
            }
        }
        assert!(
            reported,
            "the child never reported its write ({})",
            db.engine
        );
        child.start_kill().unwrap(); // SIGKILL on Unix
        child.wait().await.unwrap();
        let store = db.open().await;
        assert_eq!(
            store.tools().get("durable").await.unwrap().spec.description,
            "kept"
        );
        store.close().await;
        db.cleanup().await;
    }
}

#[tokio::test]
async fn a_newer_schema_is_refused_naming_both_versions() {
    for db in databases() {
        let store = db.open().await;
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (9999, 'future', TRUE, $1, 0)",
        )
        .bind(vec![0_u8; 4])
        .execute(store.pool())
        .await
        .unwrap();
        store.close().await;
        let err = Store::open_with(&db.url, db.options.clone())
            .await
            .unwrap_err();
        assert!(matches!(
            err,
            StoreError::SchemaTooNew {
                found: 9999,
                known: SCHEMA_VERSION
            }
        ));
        assert_eq!(
            err.to_string(),
            format!(
                "the database schema is at version 9999, newer than this build knows (up to {SCHEMA_VERSION}); use a newer toolbelt"
            )
        );
        db.cleanup().await;
    }
}
