//! `GET /api/v1/config` and the allow-list that lets HTTP tools reach internal services.

use pretty_assertions::assert_eq;
use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::support::{ADMIN, READER, RUNNER, TestServer, json_of, on_both};

fn internal_tool(url: &str) -> serde_json::Value {
    json!({
        "spec": {"name": "billing", "description": "Read the billing service's status", "tags": ["web"],
                 "parameters": {"type": "object", "properties": {}}},
        "definition": {"http": {"url": url}}
    })
}

#[tokio::test]
async fn an_http_tool_reaches_an_internal_service_only_when_the_server_allow_lists_it() {
    let internal = MockServer::start().await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(200).set_body_string("billing is up"))
        .mount(&internal)
        .await;
    let url = internal.uri();
    on_both(|db| {
        let url = url.clone();
        async move {
            // Without an allow-list the SSRF guard refuses loopback.
            let closed = TestServer::start_stored(&db, None).await;
            json_of(
                closed
                    .post("/api/v1/tools", ADMIN)
                    .json(&internal_tool(&url))
                    .send()
                    .await
                    .unwrap(),
                201,
            )
            .await;
            let refused = closed
                .post("/api/v1/tools/billing/call", RUNNER)
                .json(&json!({"arguments": {}}))
                .send()
                .await
                .unwrap();
            let body = refused.text().await.unwrap();
            assert!(body.contains("forbidden range"), "{body}");
            closed.abort();

            // The same database, a server that allow-lists 127.0.0.1.
            let open = TestServer::start_stored_with(&db, |c| {
                c.outbound_nets = vec!["127.0.0.1/32".to_owned()];
            })
            .await;
            let out = json_of(
                open.post("/api/v1/tools/billing/call", RUNNER)
                    .json(&json!({"arguments": {}}))
                    .send()
                    .await
                    .unwrap(),
                200,
            )
            .await;
            assert_eq!(out["text"], "billing is up", "{out}");

            // The admin sees the allow-list; a read token may not.
            let settings =
                json_of(open.get("/api/v1/config", ADMIN).send().await.unwrap(), 200).await;
            assert_eq!(settings["outbound_nets"], json!(["127.0.0.1/32"]));
            assert_eq!(settings["outbound_hosts"], json!([]));
            assert!(settings["sandbox"].as_str().is_some(), "{settings}");
            let denied = open.get("/api/v1/config", READER).send().await.unwrap();
            assert_eq!(denied.status(), 403);
            db
        }
    })
    .await;
}

#[tokio::test]
async fn the_config_never_shows_a_password_or_a_token() {
    let s = TestServer::start_with(None, |c| {
        c.database_url = "postgres://app:s3cret@db.internal/toolbelt".to_owned();
        c.outbound_hosts = vec!["billing.internal".to_owned()];
    })
    .await;
    let res = s.get("/api/v1/config", ADMIN).send().await.unwrap();
    let text = res.text().await.unwrap();
    assert!(!text.contains("s3cret") && !text.contains(ADMIN), "{text}");
    assert!(text.contains("billing.internal"), "{text}");
}

#[tokio::test]
async fn a_bad_allow_list_entry_is_named_at_start_up() {
    let mut config = toolbelt_server::ServerConfig::default();
    config.outbound_nets = vec!["10.0.0.0/8".to_owned(), "10.0.0.0/99".to_owned()];
    let err = config.http_config().unwrap_err().to_string();
    assert!(err.starts_with("outbound_nets[1]: "), "{err}");
    config.outbound_nets.clear();
    config.outbound_hosts = vec!["bad host".to_owned()];
    let err = config.http_config().unwrap_err().to_string();
    assert!(err.starts_with("outbound_hosts[0]: "), "{err}");
}
