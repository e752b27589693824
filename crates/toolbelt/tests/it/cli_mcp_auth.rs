//! `toolbelt mcp serve --http` with tokens: no token, no service off loopback; with
//! `--token-env` a request needs that bearer token.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::err;

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// The status of an MCP `initialize` POST to `addr`, with `token` when given.
fn initialize(addr: &str, token: Option<&str>) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut socket = loop {
        match std::net::TcpStream::connect(addr) {
            Ok(socket) => break socket,
            Err(e) => assert!(Instant::now() < deadline, "no server at {addr}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    socket.write_all(request.as_bytes()).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut head = [0_u8; 12];
    socket.read_exact(&mut head).unwrap();
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[test]
fn mcp_serve_http_refuses_a_public_address_without_a_token() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["mcp", "serve", "--groups", "file_read", "--http"])
        .arg(format!("0.0.0.0:{}", free_port()))
        .env_remove("TOOLBELT_DATABASE_URL")
        .output()
        .unwrap();
    let stderr = err(&out);
    assert!(stderr.contains("without authentication"), "{stderr}");
}

#[test]
fn mcp_serve_http_with_token_env_needs_the_token() {
    let addr = format!("127.0.0.1:{}", free_port());
    let dir = tempfile::tempdir().unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args([
            "mcp",
            "serve",
            "--groups",
            "file_read",
            "--token-env",
            "TB_MCP_TEST_TOKEN",
        ])
        .args(["--http", &addr])
        .env("TB_MCP_TEST_TOKEN", "tb_secret_for_mcp")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let without = initialize(&addr, None);
    let wrong = initialize(&addr, Some("tb_guess"));
    let with = initialize(&addr, Some("tb_secret_for_mcp"));
    server.kill().unwrap();
    let _ = server.wait();
    assert_eq!((without, wrong, with), (401, 401, 200));
}

/// `toolbelt tokens create … --agent` makes a stored token that `mcp serve --http` accepts only
/// for the agent it serves; `tokens ls` shows the agents. SQLite and Postgres.
#[tokio::test]
async fn a_stored_token_limited_to_another_agent_is_refused_by_mcp_serve_http() {
    let dir = tempfile::tempdir().unwrap();
    for db in super::cli_db::databases(dir.path(), "mcp_token_agents") {
        super::cli_db::schema(&db, true).await;
        let create = |name: &str, agent: &str| {
            let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
                .args(["tokens", "create", name, "--scope", "run", "--agent", agent])
                .args(["--database-url", &db.url])
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            assert!(
                stderr.contains(&format!("only the agents {agent}")),
                "{stderr}"
            );
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        let theirs = create("writers", "writer");
        let ours = create("defaults", "default");
        let listed = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(["tokens", "ls", "--database-url", &db.url])
            .output()
            .unwrap();
        let listed = String::from_utf8(listed.stdout).unwrap();
        assert!(
            listed
                .lines()
                .any(|l| l.starts_with("writers") && l.contains(" writer ")),
            "{listed}"
        );
        let addr = format!("127.0.0.1:{}", free_port());
        let work = tempfile::tempdir().unwrap();
        let mut server = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(["mcp", "serve", "--groups", "file_read", "--http", &addr])
            .args(["--database-url", &db.url])
            .current_dir(work.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let refused = initialize(&addr, Some(&theirs));
        let served = initialize(&addr, Some(&ours));
        server.kill().unwrap();
        let _ = server.wait();
        super::cli_db::schema(&db, false).await;
        assert_eq!((refused, served), (403, 200), "{}", db.url);
    }
}
