//! Servers that fail: the cause said in words, refused credentials and missing programs not
//! retried, and the tools of a server that died named as down rather than unknown.

use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use serde_json::json;
use toolbelt_core::{Executor, Registry, ToolErrorKind};
use toolbelt_mcp::{McpClient, McpServer, McpServerConfig, ServerStatus};

use crate::support::{call, eventually, npm_server, quick_backoff, start};

/// Starts a client that is expected to fail, and waits until it is down.
async fn down(config: McpServerConfig) -> (McpClient, ServerStatus) {
    let client = McpClient::builder("s", config)
        .backoff(quick_backoff())
        .start()
        .unwrap();
    let mut status = client.watch_status();
    let seen = status
        .wait_for(|s| matches!(s, ServerStatus::Down { .. }))
        .await
        .unwrap()
        .clone();
    (client, seen)
}

/// A loopback port nobody listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[tokio::test]
async fn a_refused_connection_is_said_in_words_and_retried() {
    let port = closed_port();
    let (_client, status) = down(McpServerConfig::http(format!(
        "http://127.0.0.1:{port}/mcp"
    )))
    .await;
    let ServerStatus::Down {
        reason, permanent, ..
    } = status
    else {
        unreachable!()
    };
    assert_eq!(
        (reason.as_str(), permanent),
        (
            format!("connection refused to 127.0.0.1:{port}").as_str(),
            false
        )
    );
}

#[tokio::test]
async fn a_401_names_the_challenge_and_is_not_retried() {
    let app = axum::Router::new().fallback(|| async {
        (
            axum::http::StatusCode::UNAUTHORIZED,
            [(
                "www-authenticate",
                r#"Bearer realm="toolbelt", error="invalid_token""#,
            )],
        )
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = McpClient::builder(
        "locked",
        McpServerConfig::http(&url).with_bearer_token("old"),
    )
    .start()
    .unwrap();
    let started = Instant::now();
    let err = client.ready(Duration::from_secs(30)).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        err.to_string(),
        format!(
            "MCP server `locked` not ready after {} ms: down (401 Unauthorized: Bearer realm=\"toolbelt\", error=\"invalid_token\"; not retried until its configuration changes)",
            match err {
                toolbelt_mcp::McpError::NotReady { waited_ms, .. } => waited_ms,
                _ => unreachable!(),
            }
        )
    );
    task.abort();
}

#[tokio::test]
async fn a_program_that_cannot_start_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing").display().to_string();
    let client = McpClient::builder(
        "ghost",
        McpServerConfig::stdio(&missing, Vec::<String>::new()),
    )
    .start()
    .unwrap();
    let started = Instant::now();
    client.ready(Duration::from_secs(30)).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        client.why_unavailable().unwrap(),
        format!(
            "MCP server `ghost` is down (cannot start `{missing}`: No such file or directory; not retried until its configuration changes)"
        )
    );
}

#[tokio::test]
async fn a_re_served_tool_of_a_dead_stdio_server_is_named_as_down_not_unknown() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > '{}'; exec node '{}' stdio",
        pid_file.display(),
        entry.display()
    );
    let config = McpServerConfig::stdio("sh", ["-c".to_owned(), script]);
    let registry = Arc::new(Registry::new());
    // Slow restarts, so the tool is still down when it is called.
    let client = McpClient::builder("everything", config)
        .registry(registry.clone())
        .backoff(slow_backoff())
        .start()
        .unwrap();
    client.ready(Duration::from_secs(30)).await.unwrap();
    let known = client.clone();
    let server = McpServer::from_registry(registry.clone(), None, Executor::new())
        .with_unavailable(move |name| {
            known
                .knows_tool(name)
                .then(|| known.why_unavailable())
                .flatten()
        });
    let app = axum::Router::new().nest_service("/mcp", server.router(None));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (outer, _imported) = start("outer", McpServerConfig::http(&url)).await;
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    std::process::Command::new("kill")
        .args(["-9", pid.trim()])
        .status()
        .unwrap();
    eventually(10, "the server to be down", || !client.status().is_up()).await;
    let mut params = CallToolRequestParams::new("everything.echo");
    params.arguments = json!({"message": "hi"}).as_object().cloned();
    let result = outer.peer().unwrap().call_tool(params).await.unwrap();
    let ContentBlock::Text(text) = &result.content[0] else {
        panic!("{result:?}")
    };
    assert!(
        text.text
            .starts_with("error: MCP server `everything` is down (connection ended"),
        "{}",
        text.text
    );
    task.abort();
}

fn slow_backoff() -> toolbelt_mcp::Backoff {
    toolbelt_mcp::Backoff::new(Duration::from_secs(60), Duration::from_secs(60))
}

#[tokio::test]
async fn a_killed_http_server_takes_its_tools_down_on_the_next_call() {
    let Some(entry) = npm_server("server-everything") else {
        return;
    };
    let port = closed_port();
    let mut server = tokio::process::Command::new("node")
        .arg(&entry)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let addr = format!("127.0.0.1:{port}");
    eventually(20, "the HTTP server to listen", || {
        std::net::TcpStream::connect(&addr).is_ok()
    })
    .await;
    let registry = Arc::new(Registry::new());
    let client = McpClient::builder(
        "remote",
        McpServerConfig::http(format!("http://{addr}/mcp")),
    )
    .registry(registry.clone())
    .backoff(slow_backoff())
    .start()
    .unwrap();
    client.ready(Duration::from_secs(30)).await.unwrap();
    server.kill().await.unwrap();
    let _ = server.wait().await;
    let err = call(&registry, "remote.echo", json!({"message": "x"}))
        .await
        .outcome
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.to_string()),
        (
            ToolErrorKind::Failed,
            format!("MCP server `remote` is down (connection refused to {addr})")
        )
    );
    eventually(10, "the tools to leave the registry", || {
        !registry.contains("remote.echo")
    })
    .await;
    assert!(!client.status().is_up());
}
