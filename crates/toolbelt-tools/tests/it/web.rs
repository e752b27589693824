//! http_get and http_request: SSRF refusals, the allow-list, redirects, size caps.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::ToolError;
use toolbelt_tools::HttpConfig;
use wiremock::matchers::{body_string, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::{Fx, is_denied};

/// A fixture whose HTTP tools may reach 127.0.0.1 (and only that internal address).
fn local(edit: impl FnOnce(HttpConfig) -> HttpConfig) -> Fx {
    Fx::with(|cfg| cfg.with_http(edit(HttpConfig::new().allow_net("127.0.0.1/32").unwrap())))
}

async fn server_saying(body: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/hello"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_string(body)
                .insert_header("content-type", "text/plain"),
        )
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn loopback_is_refused_by_default_and_allowed_once_allow_listed() {
    let server = server_saying("hi").await;
    let url = format!("{}/hello", server.uri());
    let err = Fx::new().err("http_get", json!({"url": url})).await;
    assert!(is_denied(&err), "{err}");
    assert!(
        err.to_string()
            .contains("is in a forbidden range (loopback)"),
        "{err}"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 0);
    let out = local(|h| h)
        .call("http_get", json!({"url": url}))
        .await
        .unwrap();
    assert_eq!(
        out.text,
        "HTTP 200 OK\ncontent-type: text/plain\ncontent-length: 2\n\nhi"
    );
    assert_eq!(out.json.unwrap()["status"], 200);
}

#[tokio::test]
async fn metadata_private_and_disguised_loopback_addresses_are_refused() {
    let fx = Fx::new();
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://[::1]:8080/",
        "http://[::ffff:169.254.169.254]/",
        "http://2852039166/",
        "http://0x7f.1/",
    ] {
        let err = fx.err("http_get", json!({"url": url})).await;
        assert!(is_denied(&err), "{url}: {err}");
    }
    let err = fx
        .err("http_get", json!({"url": "http://169.254.169.254/"}))
        .await;
    assert_eq!(
        err.to_string(),
        "denied: 169.254.169.254 is in a forbidden range (link-local or cloud metadata); requests there are refused unless the host allow-lists it"
    );
}

#[tokio::test]
async fn names_are_checked_after_dns_resolution() {
    let server = server_saying("hi").await;
    let port = server.address().port();
    let err = Fx::new()
        .err(
            "http_get",
            json!({"url": format!("http://localhost:{port}/hello")}),
        )
        .await;
    assert!(is_denied(&err), "{err}");
    assert!(err.to_string().contains("localhost resolves to"), "{err}");
    let open = Fx::with(|cfg| cfg.with_http(HttpConfig::new().allow_host("localhost")));
    let out = open
        .ok(
            "http_get",
            json!({"url": format!("http://localhost:{port}/hello")}),
        )
        .await;
    assert!(out.ends_with("\n\nhi"), "{out}");
}

#[tokio::test]
async fn http_request_sends_method_headers_and_body() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/items"))
        .and(header("x-key", "k"))
        .and(body_string("{\"a\":1}"))
        .respond_with(ResponseTemplate::new(201).set_body_string("made"))
        .expect(1)
        .mount(&server)
        .await;
    let fx = local(|h| h);
    let args = json!({"method": "POST", "url": format!("{}/items", server.uri()), "headers": {"x-key": "k"}, "body": "{\"a\":1}"});
    let out = fx.ok("http_request", args).await;
    assert!(
        out.starts_with("HTTP 201 Created") && out.ends_with("\n\nmade"),
        "{out}"
    );
}

#[tokio::test]
async fn every_redirect_hop_is_checked_and_redirects_are_limited() {
    let server = MockServer::start().await;
    let to =
        |location: String| ResponseTemplate::new(302).insert_header("location", location.as_str());
    Mock::given(path("/meta"))
        .respond_with(to("http://169.254.169.254/".to_owned()))
        .mount(&server)
        .await;
    Mock::given(path("/loop"))
        .respond_with(to(format!("{}/loop", server.uri())))
        .mount(&server)
        .await;
    let fx = local(|h| h.with_max_redirects(2));
    let err = fx
        .err("http_get", json!({"url": format!("{}/meta", server.uri())}))
        .await;
    assert!(
        err.to_string()
            .starts_with("denied: redirect refused: 169.254.169.254 is in a forbidden range"),
        "{err}"
    );
    let err = fx
        .err("http_get", json!({"url": format!("{}/loop", server.uri())}))
        .await;
    assert_eq!(err.to_string(), "denied: stopped after 2 redirects");
    assert_eq!(server.received_requests().await.unwrap().len(), 4);
}

#[tokio::test]
async fn bodies_are_capped_and_bad_input_is_named() {
    let server = server_saying(&"x".repeat(10_000)).await;
    let fx = local(|h| h.with_max_response_bytes(100));
    let out = fx
        .call(
            "http_get",
            json!({"url": format!("{}/hello", server.uri())}),
        )
        .await
        .unwrap();
    assert!(
        out.text.ends_with(&format!(
            "{}\n[body cut at 100 bytes; the rest was not downloaded]",
            "x".repeat(100)
        )),
        "{}",
        out.text
    );
    let err = fx
        .err("http_get", json!({"url": "file:///etc/passwd"}))
        .await;
    assert_eq!(
        err.to_string(),
        "denied: scheme \"file\" is not allowed; use http or https"
    );
    let err = fx.err("http_get", json!({"url": "not a url"})).await;
    let ToolError::InvalidArguments { violations } = err else {
        panic!("{err}")
    };
    assert_eq!(violations[0].pointer, "/url");
    let err = fx
        .err(
            "http_request",
            json!({"method": "TRACE", "url": server.uri()}),
        )
        .await;
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
}
