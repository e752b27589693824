//! `toolbelt mcp add|import|ls|enable|disable|rm` against a database (SQLite and, when
//! configured, Postgres), with the npm reference server `server-everything` as the peer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

use crate::cli_db::{Db, databases, schema};

fn peers() -> PathBuf {
    let dir = std::env::var_os("TOOLBELT_MCP_PEERS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-peers"),
        PathBuf::from,
    );
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

fn everything() -> Option<PathBuf> {
    let entry = peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if entry.exists() {
        Some(entry)
    } else {
        println!("skipped: server-everything is not installed (run scripts/setup-mcp-peers.sh)");
        None
    }
}

fn toolbelt(db: &Db, dir: &Path, args: &[&str]) -> Output {
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .current_dir(dir)
            .env("TOOLBELT_DATABASE_URL", &db.url)
            .env("TOOLBELT_MEMORY_EMBEDDER", "off")
            // `mcp ls --check` starts the peer in the sandbox: its node_modules must be readable.
            .env("TOOLBELT_MCP_READ_PATHS", peers())
            .args(args),
        "",
    )
}

fn text(out: &Output) -> (bool, String, String) {
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn stored_mcp_servers_are_added_checked_disabled_imported_and_removed() {
    let Some(entry) = everything() else { return };
    let entry = entry.display().to_string();
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path(), "cli_mcp") {
        schema(&db, true).await;
        let d = dir.path();
        let (ok, out, err) = text(&toolbelt(
            &db,
            d,
            &["mcp", "add", "everything", "--", "node", &entry, "stdio"],
        ));
        assert!(
            ok && out.contains("added MCP server `everything`"),
            "{out}{err}"
        );
        // Twice: refused unless --replace.
        let (ok, _, err) = text(&toolbelt(
            &db,
            d,
            &["mcp", "add", "everything", "--", "node", &entry, "stdio"],
        ));
        assert!(!ok && err.contains("--replace"), "{err}");
        // A bearer token is a secret's name, never a value; a bad URL names the field.
        let (ok, _, err) = text(&toolbelt(
            &db,
            d,
            &["mcp", "add", "web", "--url", "ftp://x"],
        ));
        assert!(!ok && err.contains("/url"), "{err}");
        let (ok, _, err) = text(&toolbelt(
            &db,
            d,
            &[
                "mcp",
                "add",
                "web",
                "--config",
                r#"{"url": "https://x.test/mcp", "bearerToken": "ghp_1"}"#,
            ],
        ));
        assert!(!ok && err.contains("/bearerToken"), "{err}");
        let (ok, out, err) = text(&toolbelt(
            &db,
            d,
            &[
                "mcp",
                "add",
                "web",
                "--url",
                "https://x.test/mcp",
                "--bearer-token-secret",
                "X_TOKEN",
                "--disabled",
            ],
        ));
        assert!(ok && out.contains("(disabled)"), "{out}{err}");
        // --check connects to the enabled one and counts its tools.
        let (ok, out, err) = text(&toolbelt(&db, d, &["mcp", "ls", "--check", "--json"]));
        assert!(ok, "{out}{err}");
        let rows: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(rows[0]["name"], "everything");
        assert_eq!(rows[0]["health"]["state"], "up", "{rows}");
        assert!(rows[0]["health"]["tools"].as_u64().unwrap() > 5);
        assert_eq!(rows[1]["config"]["bearerToken"], "{{secret.X_TOKEN}}");
        assert_eq!(rows[1]["health"]["state"], "disabled");
        let (ok, out, _) = text(&toolbelt(&db, d, &["mcp", "disable", "everything"]));
        assert!(ok && out.contains("disabled"));
        let (_, out, _) = text(&toolbelt(&db, d, &["mcp", "ls"]));
        assert!(out.contains("everything  [disabled]  node"), "{out}");
        // An mcpServers file: new names are added, known ones left alone without --replace.
        let file = d.join("servers.json");
        std::fs::write(&file, json!({"mcpServers": {
            "everything": {"command": "node", "args": [entry, "stdio"]},
            "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "disabled": true}
        }}).to_string()).unwrap();
        let (ok, out, err) = text(&toolbelt(
            &db,
            d,
            &["mcp", "import", file.to_str().unwrap()],
        ));
        assert!(
            !ok && out.contains("added `files`") && err.contains("skipped `everything`"),
            "{out}{err}"
        );
        let (ok, out, err) = text(&toolbelt(
            &db,
            d,
            &["mcp", "import", "--replace", file.to_str().unwrap()],
        ));
        assert!(ok && out.contains("replaced `everything`"), "{out}{err}");
        for name in ["everything", "files", "web"] {
            let (ok, _, err) = text(&toolbelt(&db, d, &["mcp", "rm", name]));
            assert!(ok, "{err}");
        }
        let (_, out, _) = text(&toolbelt(&db, d, &["mcp", "ls"]));
        assert!(out.contains("no MCP servers stored"), "{out}");
        schema(&db, false).await;
    }
}

#[tokio::test]
async fn check_waits_once_for_all_down_servers_and_not_at_all_for_missing_programs() {
    let dir = tempfile::tempdir().unwrap();
    let db = databases(dir.path(), "cli_mcp_check").remove(0);
    schema(&db, true).await;
    let d = dir.path();
    // A closed port (down, retried) three times, and a program that does not exist.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for name in ["a", "b", "c"] {
        let url = format!("http://127.0.0.1:{port}/mcp");
        assert!(text(&toolbelt(&db, d, &["mcp", "add", name, "--url", &url])).0);
    }
    assert!(
        text(&toolbelt(
            &db,
            d,
            &["mcp", "add", "ghost", "--", "/no/such/server"]
        ))
        .0
    );
    let started = std::time::Instant::now();
    let (ok, out, err) = text(&toolbelt(&db, d, &["mcp", "ls", "--check", "--json"]));
    let took = started.elapsed();
    assert!(!ok, "{out}{err}");
    assert!(took < std::time::Duration::from_secs(25), "took {took:?}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let states: Vec<(&str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap(),
                r["health"]["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("a", "down"),
            ("b", "down"),
            ("c", "down"),
            ("ghost", "down")
        ]
    );
    let error = rows[3]["health"]["error"].as_str().unwrap();
    assert_eq!(
        error.split_once(" ms: ").map(|(_, status)| status),
        Some(
            "down (could not start `/no/such/server`: No such file or directory (os error 2); not retried until its configuration changes)"
        ),
        "{error}"
    );
    schema(&db, false).await;
}
