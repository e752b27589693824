//! `toolbelt routines …` and `toolbelt memory …` against a database (SQLite; Postgres when
//! `TOOLBELT_TEST_PG_URL` is set, in a schema of its own via the URL's `options`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use toolbelt::store::Store;
use toolbelt_tools::{MemoryScope, MemoryStore, NewMemory};

use crate::cli_db::{Db, databases, schema};
use crate::{err as stderr, ok as stdout};

fn toolbelt(db: &Db, dir: &Path, args: &[&str]) -> Output {
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .current_dir(dir)
            .env("TOOLBELT_DATABASE_URL", &db.url)
            .args(args),
        "",
    )
}

#[tokio::test]
async fn routines_and_memory_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path(), "cli_mr") {
        schema(&db, true).await;
        let run = |args: &[&str]| toolbelt(&db, dir.path(), args);
        let out = stdout(&run(&[
            "routines",
            "create",
            "mail",
            "--agent",
            "assistant",
            "--prompt",
            "提醒我看邮件",
            "--cron",
            "0 9 * * *",
            "--tz",
            "Asia/Shanghai",
        ]));
        assert!(
            out.starts_with("created mail: cron 0 9 * * * (Asia/Shanghai) [active] next "),
            "{out}"
        );
        let err = stderr(&run(&[
            "routines", "create", "bad", "--agent", "a", "--prompt", "p", "--cron", "0 9 * *",
        ]));
        assert!(
            err.contains("/cron: `0 9 * *` has 4 fields; use a cron expression of 5 fields"),
            "{err}"
        );
        let err = stderr(&run(&[
            "routines", "create", "bad", "--agent", "a", "--prompt", "p", "--every", "0",
        ]));
        assert!(err.contains("/every_seconds: 0 is not allowed"), "{err}");
        let err = stderr(&run(&[
            "routines",
            "create",
            "bad",
            "--agent",
            "a",
            "--prompt",
            "p",
            "--cron",
            "0 9 * * *",
            "--tz",
            "Nowhere/City",
        ]));
        assert!(
            err.contains("/timezone: `Nowhere/City` is not a known IANA time zone"),
            "{err}"
        );
        assert!(stdout(&run(&["routines", "pause", "mail"])).contains("[paused] next -"));
        assert!(stdout(&run(&["routines", "resume", "mail"])).contains("[active]"));
        assert!(stdout(&run(&["routines", "run", "mail"])).contains("next tick"));
        let ls = stdout(&run(&["routines", "ls", "--json"]));
        let doc: serde_json::Value = serde_json::from_str(&ls).unwrap();
        assert_eq!(doc[0]["name"], "mail");
        assert_eq!(doc[0]["run_requested"], true);
        assert_eq!(stdout(&run(&["routines", "runs"])), "no recorded runs\n");
        assert_eq!(
            stdout(&run(&["routines", "rm", "mail"])),
            "deleted routine `mail`\n"
        );
        assert!(stderr(&run(&["routines", "rm", "mail"])).contains("no routine named `mail`"));

        // Memory written through the library, read and forgotten through the CLI.
        let store = Store::open(&db.url).await.unwrap();
        let memory = Arc::new(store.memory());
        let entry = memory
            .store(
                &MemoryScope::agent("assistant"),
                NewMemory::new("用户喜欢短回答"),
            )
            .await
            .unwrap();
        store.close().await;
        let id = entry.id.to_string();
        let ls = stdout(&run(&["memory", "ls", "--agent", "assistant"]));
        assert!(
            ls.contains(&format!("#{id} ")) && ls.contains("用户喜欢短回答"),
            "{ls}"
        );
        assert_eq!(
            stdout(&run(&["memory", "ls", "--agent", "other"])),
            "no entries\n"
        );
        let hits = stdout(&run(&[
            "memory",
            "recall",
            "--agent",
            "assistant",
            "短回答",
        ]));
        assert!(hits.contains("用户喜欢短回答"), "{hits}");
        let preview = stdout(&run(&["memory", "forget", "--agent", "assistant", &id]));
        assert!(preview.starts_with("would forget 1 entries"), "{preview}");
        let refused = run(&["memory", "forget", "--agent", "other", &id, "--yes"]);
        assert!(!refused.status.success());
        assert_eq!(
            stdout(&run(&[
                "memory",
                "forget",
                "--agent",
                "assistant",
                &id,
                "--yes"
            ])),
            "forgot 1 entries\n"
        );
        assert_eq!(
            stdout(&run(&["memory", "ls", "--agent", "assistant"])),
            "no entries\n"
        );
        schema(&db, false).await;
    }
}
