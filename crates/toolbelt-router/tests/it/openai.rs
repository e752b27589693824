//! `OpenAiEmbedder` against a scripted local `/v1/embeddings` server.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_router::{Embedder, OpenAiEmbedder};
use wiremock::matchers::{body_json, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[tokio::test]
async fn posts_texts_and_orders_vectors_by_index() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/embeddings"))
        .and(header("authorization", "Bearer k"))
        .and(body_json(json!({"model": "m", "input": ["a", "b"]})))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]}, {"index": 0, "embedding": [1.0, 0.0]}]})))
        .mount(&server)
        .await;
    let embedder = OpenAiEmbedder::new(format!("{}/v1", server.uri()), "m").with_api_key("k");
    let vectors = embedder.embed(&["a".into(), "b".into()]).await.unwrap();
    assert_eq!(vectors, [vec![1.0, 0.0], vec![0.0, 1.0]]);
}

#[tokio::test]
async fn http_errors_name_the_status() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).set_body_string("slow down"))
        .mount(&server)
        .await;
    let err = OpenAiEmbedder::new(format!("{}/v1", server.uri()), "m")
        .embed(&["a".into()])
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("answered 429 Too Many Requests: slow down"),
        "{err}"
    );
}
