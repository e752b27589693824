//! The attacks of a security review, each replayed over HTTP: DNS rebinding, cross-site
//! requests, rate-limit evasion, open metrics, CORS `*`, slow headers, session floods and
//! oversized run inputs. Each test fails when its guard is removed.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{ADMIN, READER, RUNNER, TestServer, json_of, on_both, problem_of};

fn dev(config: &mut toolbelt_server::ServerConfig) {
    config.dev = true;
}

#[tokio::test]
async fn a_foreign_host_is_refused_on_every_route_in_dev_mode() {
    let s = TestServer::start_with(None, dev).await;
    for path in ["/api/v1/whoami", "/healthz", "/", "/api/v1/openapi.json"] {
        let url = format!("{}{path}", s.url);
        let r = s
            .http
            .get(&url)
            .header("host", "attacker.example")
            .send()
            .await
            .unwrap();
        let body = problem_of(r, 403, "host_not_allowed").await;
        assert!(
            body["detail"].as_str().unwrap().contains("allowed_hosts"),
            "{body}"
        );
        let ok = s.http.get(&url).send().await.unwrap();
        assert_eq!(ok.status(), 200, "{path}");
    }
    // A name listed in `allowed_hosts` (or its older alias `mcp_hosts`) passes.
    let s = TestServer::start_with(None, |c| {
        dev(c);
        c.allowed_hosts = vec!["box.lan".into()];
        c.mcp_hosts = vec!["old.lan".into()];
    })
    .await;
    for host in ["box.lan:7878", "old.lan"] {
        let r = s
            .get("/api/v1/whoami", ADMIN)
            .header("host", host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{host}");
    }
}

#[tokio::test]
async fn a_cross_site_text_plain_post_cannot_bind_a_tool() {
    on_both(|db| async move {
        let s = TestServer::start_stored_with(&db, dev).await;
        let agent = json!({"name": "ops", "selection": "util", "provider": "openai", "model": "m"});
        json_of(
            s.http
                .post(format!("{}/api/v1/agents", s.url))
                .json(&agent)
                .send()
                .await
                .unwrap(),
            201,
        )
        .await;
        let bind = format!("{}/api/v1/agents/ops/tools/delete_file", s.url);
        let post = || {
            s.http
                .post(&bind)
                .header("content-type", "text/plain")
                .body("{}")
        };
        let r = post()
            .header("origin", "http://attacker.example")
            .send()
            .await
            .unwrap();
        problem_of(r, 403, "foreign_origin").await;
        // A browser that sent no Origin still cannot pass a form body.
        let body = problem_of(post().send().await.unwrap(), 415, "unsupported_media_type").await;
        assert!(
            body["detail"].as_str().unwrap().contains("text/plain"),
            "{body}"
        );
        let tools = json_of(
            s.http
                .get(format!("{}/api/v1/agents/ops/tools", s.url))
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let bound = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "delete_file")
            .unwrap();
        assert_eq!(bound["available"], json!(false), "{} {tools}", db.engine);
        db
    })
    .await;
}

#[tokio::test]
async fn a_body_less_post_needs_a_custom_header_or_json() {
    on_both(|db| async move {
        let s = TestServer::start_stored_with(&db, dev).await;
        let tool = json!({"spec": {"name": "shout", "description": "Echo", "parameters": {"type": "object"}},
            "definition": {"command": {"argv": ["echo", "hi"], "read_only": true}}});
        json_of(s.http.post(format!("{}/api/v1/tools", s.url)).json(&tool).send().await.unwrap(), 201).await;
        let post = |action: &str| s.http.post(format!("{}/api/v1/tools/shout/{action}", s.url));
        problem_of(post("disable").send().await.unwrap(), 415, "unsupported_media_type").await;
        let stored = json_of(s.http.get(format!("{}/api/v1/tools/shout/stored", s.url)).send().await.unwrap(), 200).await;
        assert_eq!(stored["enabled"], json!(true), "{} {stored}", db.engine);
        json_of(post("disable").header("x-requested-with", "t").send().await.unwrap(), 200).await;
        json_of(post("enable").header("content-type", "application/json").send().await.unwrap(), 200).await;
        db
    })
    .await;
}

#[tokio::test]
async fn only_this_server_and_listed_origins_may_change_state() {
    let s = TestServer::start_with(None, |c| {
        dev(c);
        c.cors_origins = vec!["https://ui.example".into()];
    })
    .await;
    let route = |origin: &str| {
        s.http
            .post(format!("{}/api/v1/route", s.url))
            .header("origin", origin)
            .json(&json!({"input": "echo hi"}))
            .send()
    };
    problem_of(
        route("http://attacker.example").await.unwrap(),
        403,
        "foreign_origin",
    )
    .await;
    problem_of(route("null").await.unwrap(), 403, "foreign_origin").await;
    assert_eq!(route("https://ui.example").await.unwrap().status(), 200);
    assert_eq!(route(&s.url).await.unwrap().status(), 200);
}

#[tokio::test]
async fn made_up_tokens_share_the_budget_of_their_address() {
    let s = TestServer::start_with(None, |c| {
        c.rate_limit_per_second = 1;
        c.rate_limit_burst = 3;
    })
    .await;
    let mut statuses = Vec::new();
    for i in 0..4 {
        let r = s
            .get("/api/v1/whoami", &format!("tb_made_up_{i}"))
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 429]);
}

#[tokio::test]
async fn one_token_spelled_many_ways_has_one_budget() {
    let s = TestServer::start_with(None, |c| {
        c.rate_limit_per_second = 1;
        c.rate_limit_burst = 3;
    })
    .await;
    let mut statuses = Vec::new();
    for spelling in [
        format!("Bearer {READER}"),
        format!("bearer {READER}"),
        format!("BEARER   {READER} "),
        format!("Bearer\t{READER}"),
    ] {
        let url = format!("{}/api/v1/whoami", s.url);
        let r = s
            .http
            .get(url)
            .header("authorization", spelling)
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429]);
}

#[tokio::test]
async fn metrics_need_a_token_unless_configured_open() {
    let s = TestServer::start(None).await;
    let url = format!("{}/metrics", s.url);
    problem_of(s.http.get(&url).send().await.unwrap(), 401, "missing_token").await;
    assert_eq!(
        s.get("/metrics", READER).send().await.unwrap().status(),
        200
    );
    let open = TestServer::start_with(None, |c| c.metrics_public = true).await;
    let r = open
        .http
        .get(format!("{}/metrics", open.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn cors_star_allows_any_origin_without_credentials() {
    let s = TestServer::start_with(None, |c| c.cors_origins = vec!["*".into()]).await;
    let r = s
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/api/v1/route", s.url))
        .header("origin", "https://anywhere.example")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "authorization, content-type",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "*");
    assert!(!r.headers().contains_key("access-control-allow-credentials"));
}

#[tokio::test]
async fn a_client_that_never_finishes_its_headers_is_cut_off() {
    let s = TestServer::start_with(None, |c| c.header_read_timeout_secs = 1).await;
    let addr = s.url.trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
    socket
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut rest)).await;
    // Closed (possibly after a 408) well before the test gives up; no answer to a request
    // whose headers never ended.
    assert!(read.is_ok(), "the connection was still open after 5 s");
    let text = String::from_utf8_lossy(&rest);
    assert!(!text.contains("200 OK"), "{text}");
}

async fn initialize(s: &TestServer) -> reqwest::Response {
    s.post("/mcp/helper", RUNNER)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn mcp_sessions_are_capped() {
    let s = TestServer::start_with(None, |c| c.max_mcp_sessions = 2).await;
    for _ in 0..2 {
        let r = initialize(&s).await;
        assert_eq!(r.status(), 200);
        assert!(r.headers().contains_key("mcp-session-id"));
    }
    let over = initialize(&s).await;
    assert_eq!(over.status(), 503);
    let text = over.text().await.unwrap();
    assert!(
        text.contains("too many MCP sessions") && text.contains("cap is 2"),
        "{text}"
    );
}

#[tokio::test]
async fn a_run_input_over_the_cap_is_refused_naming_it() {
    let s = TestServer::start_with(None, |c| c.max_run_input_bytes = 1024).await;
    let big = "x".repeat(2000);
    let r = s
        .post("/api/v1/agents/helper/runs", RUNNER)
        .json(&json!({"input": big}))
        .send()
        .await
        .unwrap();
    let body = problem_of(r, 413, "input_too_large").await;
    assert_eq!(body["pointer"], "/input");
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("max_run_input_bytes"),
        "{body}"
    );
    // The route and tool-call paths are untouched by the cap.
    let r = s
        .post("/api/v1/tools/echo/call", ADMIN)
        .json(&json!({"arguments": {"text": "hi"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}
