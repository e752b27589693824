//! `toolbelt serve` built with `otel` exports its spans over OTLP/HTTP to a local receiver.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, header};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use pretty_assertions::assert_eq;
use prost::Message as _;

use super::cli_serve::{http, serve_on};

/// What the receiver got: the service names and the spans of every export.
#[derive(Default)]
struct Received {
    services: Vec<String>,
    spans: Vec<Span>,
}

/// A stand-in collector: `POST /v1/traces` with a protobuf `ExportTraceServiceRequest`.
async fn receiver(received: Arc<Mutex<Received>>) -> std::net::SocketAddr {
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| async move {
            if headers.get(header::CONTENT_TYPE).unwrap() != "application/x-protobuf" {
                return StatusCode::UNSUPPORTED_MEDIA_TYPE;
            }
            let request = ExportTraceServiceRequest::decode(body).unwrap();
            let mut received = received.lock().unwrap();
            for resource_spans in request.resource_spans {
                for attribute in resource_spans.resource.unwrap_or_default().attributes {
                    if let ("service.name", Some(Value::StringValue(name))) = (
                        attribute.key.as_str(),
                        attribute.value.and_then(|v| v.value),
                    ) {
                        received.services.push(name);
                    }
                }
                for scope in resource_spans.scope_spans {
                    received.spans.extend(scope.spans);
                }
            }
            StatusCode::OK
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[test]
fn spans_of_a_request_reach_the_collector_when_the_server_stops() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let received = Arc::new(Mutex::new(Received::default()));
    let addr = runtime.block_on(receiver(received.clone()));
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("http://{addr}");
    let (mut child, port) = serve_on(
        dir.path(),
        "sqlite://t.db",
        &["--dev", "--otel-endpoint", &endpoint],
    );
    let (status, body) = http(
        port,
        "POST",
        "/api/v1/tools/todo_list/call",
        None,
        r#"{"arguments": {}}"#,
    );
    assert_eq!(status, 200, "{body}");
    // SIGTERM: a graceful stop, which must flush what is queued.
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    assert!(child.wait().unwrap().success());
    let received = received.lock().unwrap();
    let named = |name: &str| received.spans.iter().find(|s| s.name == name).cloned();
    let request = named("POST /api/v1/tools/{name}/call").expect("the request's span");
    let call = named("tool_call").expect("the tool call's span");
    assert_eq!(
        (call.trace_id, call.parent_span_id),
        (request.trace_id.clone(), request.span_id.clone())
    );
    assert!(received.services.iter().all(|s| s == "toolbelt"));
    assert!(!received.services.is_empty());
}

#[test]
fn an_otel_endpoint_that_is_not_a_url_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["serve", "--dev", "--otel-endpoint", "localhost:4318"])
        .output()
        .unwrap();
    let err = super::err(&out);
    assert!(
        err.contains("--otel-endpoint `localhost:4318` is not an http(s) URL"),
        "{err}"
    );
}
