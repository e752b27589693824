//! `/api/v1/mcp-servers` on SQLite and Postgres: a stored MCP server (the npm reference server
//! `server-everything`, installed by `scripts/setup-mcp-peers.sh`) is connected, its tools are
//! callable through the API, and disabling or deleting it takes them away.

use std::path::PathBuf;
use std::time::{Duration, Instant};
use toolbelt_store::Revision;

use serde_json::{Value, json};

use crate::support::{ADMIN, READER, TestServer, json_of, on_both, problem_of};

fn peers() -> PathBuf {
    let dir = std::env::var_os("TOOLBELT_MCP_PEERS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-peers"),
        PathBuf::from,
    );
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// The server's configuration for the reference server: `node` allow-listed, the peers'
/// `node_modules` readable in the sandbox.
fn node_allowed(config: &mut toolbelt_server::ServerConfig) {
    config.mcp_commands = vec!["node".to_owned()];
    config.mcp_read_paths = vec![peers()];
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

/// Polls `GET /mcp-servers/{name}` until `check` holds on it (10 s at most).
async fn wait_for(s: &TestServer, name: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let view = json_of(
            s.get(&format!("/api/v1/mcp-servers/{name}"), READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        if check(&view) {
            return view;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{what}: {view}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_stored_mcp_server_is_connected_called_disabled_and_deleted() {
    let Some(entry) = everything() else { return };
    on_both(|db| {
        let entry = entry.clone();
        async move {
            let s = TestServer::start_stored_with(&db, node_allowed).await;
            let config = json!({"command": "node", "args": [entry, "stdio"]});
            let put = |body: Value| {
                s.http
                    .put(format!("{}/api/v1/mcp-servers/everything", s.url))
                    .bearer_auth(ADMIN)
                    .json(&body)
                    .send()
            };
            // Reading is not enough to add one.
            let denied = s
                .http
                .put(format!("{}/api/v1/mcp-servers/everything", s.url))
                .bearer_auth(READER)
                .json(&json!({"config": config}))
                .send()
                .await
                .unwrap();
            assert_eq!(denied.status().as_u16(), 403);
            let created = json_of(put(json!({"config": config})).await.unwrap(), 201).await;
            assert_eq!((created["enabled"].clone(), created["revision"].clone()), (json!(true), json!(1)));
            let up = wait_for(&s, "everything", "never came up", |v| v["health"]["state"] == "up").await;
            assert!(up["health"]["tools"].as_u64().unwrap() > 5, "{up}");
            // Its tools are in the registry, tagged, and callable through the API.
            let tools = json_of(s.get("/api/v1/tools?tag=mcp:everything&limit=100", READER).send().await.unwrap(), 200).await;
            let names: Vec<&str> = tools["items"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
            assert!(names.contains(&"everything.echo"), "{names:?}");
            let echoed = json_of(
                s.post("/api/v1/tools/everything.echo/call", ADMIN)
                    .json(&json!({"arguments": {"message": "stored and served"}}))
                    .send()
                    .await
                    .unwrap(),
                200,
            )
            .await;
            assert!(echoed.to_string().contains("stored and served"), "{echoed}");
            // PUT again replaces it (200, a new revision); a stale revision is refused.
            let replaced = json_of(put(json!({"config": config})).await.unwrap(), 200).await;
            assert_eq!(replaced["revision"], 2, "{replaced}");
            problem_of(put(json!({"config": config, "revision": 1})).await.unwrap(), 412, "revision_mismatch").await;
            // Bad configurations are refused naming the field, and nothing changes.
            let bad = problem_of(
                put(json!({"config": {"url": "ftp://example.test"}, "revision": 1})).await.unwrap(),
                422,
                "invalid_mcp_config",
            )
            .await;
            assert_eq!(bad["errors"][0]["pointer"], "/config/url", "{bad}");
            let literal = problem_of(
                put(json!({"config": {"url": "https://example.test/mcp", "bearerToken": "ghp_x"}, "revision": 1}))
                    .await
                    .unwrap(),
                422,
                "invalid_mcp_config",
            )
            .await;
            assert_eq!(literal["errors"][0]["pointer"], "/config/bearerToken", "{literal}");
            // Disabled: disconnected, its tools gone.
            let disabled = json_of(
                s.http
                    .patch(format!("{}/api/v1/mcp-servers/everything", s.url))
                    .bearer_auth(ADMIN)
                    .json(&json!({"enabled": false}))
                    .send()
                    .await
                    .unwrap(),
                200,
            )
            .await;
            assert_eq!(disabled["health"]["state"], "disabled");
            let start = Instant::now();
            loop {
                let r = s.post("/api/v1/tools/everything.echo/call", ADMIN)
                    .json(&json!({"arguments": {"message": "x"}}))
                    .send()
                    .await
                    .unwrap();
                if r.status().as_u16() == 404 {
                    break;
                }
                assert!(start.elapsed() < Duration::from_secs(10), "the tool stayed after disabling: {} {}", r.status(), r.text().await.unwrap());
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let listed = json_of(s.get("/api/v1/mcp-servers", READER).send().await.unwrap(), 200).await;
            assert_eq!(listed[0]["name"], "everything");
            let deleted = s
                .http
                .delete(format!("{}/api/v1/mcp-servers/everything", s.url))
                .bearer_auth(ADMIN)
                .send()
                .await
                .unwrap();
            assert_eq!(deleted.status().as_u16(), 204);
            problem_of(s.get("/api/v1/mcp-servers/everything", READER).send().await.unwrap(), 404, "mcp_server_not_found").await;
            s.stop().await;
            db
        }
    })
    .await;
}

#[tokio::test]
async fn a_server_stored_by_another_process_is_connected_within_the_poll() {
    let Some(entry) = everything() else { return };
    on_both(|db| {
        let entry = entry.clone();
        async move {
            let s = TestServer::start_stored_with(&db, node_allowed).await;
            // As `toolbelt mcp add` would: straight into the database, not through this server.
            let other = db.open().await;
            other
                .mcp_servers()
                .create(
                    "direct",
                    &json!({"command": "node", "args": [entry, "stdio"]}),
                )
                .await
                .unwrap();
            let up = wait_for(&s, "direct", "never connected from the store", |v| {
                v["health"]["state"] == "up"
            })
            .await;
            assert!(up["health"]["tools"].as_u64().unwrap() > 5, "{up}");
            other
                .mcp_servers()
                .delete("direct", Revision::Any)
                .await
                .unwrap();
            let start = Instant::now();
            loop {
                let tools = json_of(
                    s.get("/api/v1/tools?tag=mcp:direct", READER)
                        .send()
                        .await
                        .unwrap(),
                    200,
                )
                .await;
                if tools["items"].as_array().unwrap().is_empty() {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "tools stayed after the delete"
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            s.stop().await;
            db
        }
    })
    .await;
}

/// An MCP server over streamable HTTP on 127.0.0.1 (the test's `echo` tool), for as long as
/// the test runs; its URL.
async fn loopback_mcp_server() -> String {
    let registry = std::sync::Arc::new(toolbelt_core::Registry::new());
    registry.add_tools([crate::support::echo()]).unwrap();
    let server =
        toolbelt_mcp::McpServer::from_registry(registry, None, toolbelt_core::Executor::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().nest_service(
        "/mcp",
        server.router(Some(vec!["127.0.0.1".to_owned(), addr.to_string()])),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/mcp")
}

#[tokio::test]
async fn a_stored_servers_url_passes_the_ssrf_guard_unless_the_outbound_list_opens_it() {
    on_both(|db| async move {
        let url = loopback_mcp_server().await;
        let guarded = TestServer::start_stored(&db, None).await;
        let put = guarded
            .http
            .put(format!("{}/api/v1/mcp-servers/local", guarded.url))
            .bearer_auth(ADMIN)
            .json(&json!({"config": {"url": url}}))
            .send()
            .await
            .unwrap();
        json_of(put, 201).await;
        // Loopback is an internal address: refused as the HTTP tools refuse it.
        let down = wait_for(&guarded, "local", "never refused", |v| {
            v["health"]["state"] == "not_started"
        })
        .await;
        let error = down["health"]["error"].as_str().unwrap_or_default();
        assert!(
            error.starts_with("/url: ")
                && error.contains("127.0.0.1")
                && error.contains("outbound_nets"),
            "{down}"
        );
        // A host name is checked after DNS, by the client's resolver: `localhost` is refused too.
        let by_name = url.replace("127.0.0.1", "localhost");
        let put = guarded
            .http
            .put(format!("{}/api/v1/mcp-servers/byname", guarded.url))
            .bearer_auth(ADMIN)
            .json(&json!({"config": {"url": by_name}}))
            .send()
            .await
            .unwrap();
        json_of(put, 201).await;
        let down = wait_for(&guarded, "byname", "never refused", |v| {
            v["health"]["state"] == "down"
        })
        .await;
        let error = down["health"]["error"].as_str().unwrap_or_default();
        assert!(error.contains("forbidden range (loopback)"), "{down}");
        let deleted = guarded
            .http
            .delete(format!("{}/api/v1/mcp-servers/byname", guarded.url))
            .bearer_auth(ADMIN)
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status().as_u16(), 204);
        guarded.stop().await;
        // With loopback in the server's outbound allow-list it connects.
        let open = TestServer::start_stored_with(&db, |config| {
            config.outbound_nets = vec!["127.0.0.1/32".to_owned()];
        })
        .await;
        let up = wait_for(&open, "local", "never connected", |v| {
            v["health"]["state"] == "up"
        })
        .await;
        assert_eq!(up["health"]["tools"], 1, "{up}");
        open.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn a_stdio_command_outside_the_allow_list_is_refused_and_never_started() {
    on_both(|db| async move {
        let s = TestServer::start_stored_with(&db, |config| {
            config.mcp_commands = vec!["node".to_owned()];
        })
        .await;
        let put = s
            .http
            .put(format!("{}/api/v1/mcp-servers/shell", s.url))
            .bearer_auth(ADMIN)
            .json(&json!({"config": {"command": "sh", "args": ["-c", "cat /etc/shadow"]}}))
            .send()
            .await
            .unwrap();
        let problem = problem_of(put, 422, "invalid_mcp_config").await;
        assert_eq!(
            problem["errors"][0]["pointer"], "/config/command",
            "{problem}"
        );
        let message = problem["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.contains("`sh`")
                && message.contains("`node`")
                && message.contains("mcp_commands"),
            "{problem}"
        );
        // The basename is not enough: `/tmp/x/node` is not `node`.
        let put = s
            .http
            .put(format!("{}/api/v1/mcp-servers/fake", s.url))
            .bearer_auth(ADMIN)
            .json(&json!({"config": {"command": "/tmp/x/node"}}))
            .send()
            .await
            .unwrap();
        problem_of(put, 422, "invalid_mcp_config").await;
        // Stored behind the API's back (`toolbelt mcp add`, an older version): never started.
        let marker = tempfile::tempdir().unwrap();
        let file = marker.path().join("ran");
        let other = db.open().await;
        other
            .mcp_servers()
            .create(
                "direct",
                &json!({"command": "sh", "args": ["-c", format!("touch {}", file.display())]}),
            )
            .await
            .unwrap();
        let refused = wait_for(&s, "direct", "never refused", |v| {
            v["health"]["state"] == "not_started" && v["health"]["error"].is_string()
        })
        .await;
        let error = refused["health"]["error"].as_str().unwrap();
        assert!(
            error.starts_with("/command: `sh` is not in the server's allow-list"),
            "{refused}"
        );
        // Two polls later it has still not run.
        tokio::time::sleep(toolbelt_host::mcp_servers::POLL * 2).await;
        assert!(!file.exists(), "the refused command ran");
        // Enabling it again through the API is refused as a PUT is.
        other
            .mcp_servers()
            .set_enabled("direct", false, Revision::Any)
            .await
            .unwrap();
        let patch = s
            .http
            .patch(format!("{}/api/v1/mcp-servers/direct", s.url))
            .bearer_auth(ADMIN)
            .json(&json!({"enabled": true}))
            .send()
            .await
            .unwrap();
        let problem = problem_of(patch, 422, "invalid_mcp_config").await;
        assert_eq!(
            problem["errors"][0]["pointer"], "/config/command",
            "{problem}"
        );
        s.stop().await;
        db
    })
    .await;
}
