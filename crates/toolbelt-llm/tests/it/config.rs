//! Provider configuration from variables (without touching the process environment).

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_llm::{
    ChatRequest, DEFAULT_OPENAI_MODEL, Message, ProviderConfig, ProviderError, ProviderKind,
};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn from(vars: &[(&str, &str)]) -> Result<ProviderConfig, ProviderError> {
    ProviderConfig::from_vars(|name| {
        vars.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

fn config_message(vars: &[(&str, &str)]) -> String {
    match from(vars) {
        Err(ProviderError::Config(message)) => message,
        other => panic!("expected a config error, got {other:?}"),
    }
}

#[test]
fn nothing_configured_names_every_variable_to_set() {
    let message = config_message(&[("OPENAI_API_KEY", "  ")]);
    for variable in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "TOOLBELT_MODEL",
        "TOOLBELT_PROVIDER",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(
            message.contains(variable),
            "{variable} missing from: {message}"
        );
    }
}

#[test]
fn openai_key_alone_uses_openai_and_the_default_model() {
    let config = from(&[("OPENAI_API_KEY", "sk-1")]).unwrap();
    let want = ProviderConfig::openai().with_api_key("sk-1");
    assert_eq!(config, want);
    assert_eq!(config.model_or_default(), DEFAULT_OPENAI_MODEL);
}

#[test]
fn compatible_server_needs_a_model() {
    let message = config_message(&[("OPENAI_BASE_URL", "http://localhost:11434/v1")]);
    assert!(message.contains("TOOLBELT_MODEL"), "{message}");
    let config = from(&[
        ("OPENAI_BASE_URL", "http://localhost:11434/v1"),
        ("TOOLBELT_MODEL", "qwen2.5"),
    ])
    .unwrap();
    assert_eq!(
        config,
        ProviderConfig::openai()
            .with_base_url("http://localhost:11434/v1")
            .with_model("qwen2.5")
    );
}

#[test]
fn anthropic_reads_its_own_variables() {
    let vars = [
        ("TOOLBELT_PROVIDER", "Anthropic"),
        ("ANTHROPIC_API_KEY", "ak"),
        ("ANTHROPIC_BASE_URL", "http://proxy:8080"),
        ("TOOLBELT_MODEL", "claude-x"),
        ("OPENAI_API_KEY", "ignored"),
    ];
    let want = ProviderConfig::anthropic()
        .with_api_key("ak")
        .with_base_url("http://proxy:8080")
        .with_model("claude-x");
    assert_eq!(from(&vars).unwrap(), want);
    let message = config_message(&[("TOOLBELT_PROVIDER", "anthropic")]);
    assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
}

#[test]
fn unknown_provider_lists_the_allowed_ones() {
    let message = config_message(&[("TOOLBELT_PROVIDER", "gemini")]);
    assert_eq!(
        message,
        "TOOLBELT_PROVIDER is `gemini`; expected `openai` or `anthropic`"
    );
}

#[test]
fn bad_base_url_is_reported_when_building() {
    let config = from(&[
        ("OPENAI_BASE_URL", "localhost:11434"),
        ("TOOLBELT_MODEL", "m"),
    ])
    .unwrap();
    let err = config.into_provider().unwrap_err();
    assert!(
        err.to_string()
            .contains("OPENAI_BASE_URL `localhost:11434`"),
        "{err}"
    );
}

#[test]
fn debug_output_hides_the_key() {
    let config = ProviderConfig::anthropic().with_api_key("secret-key");
    let debug = format!("{config:?}");
    assert!(
        !debug.contains("secret-key") && debug.contains("<redacted>"),
        "{debug}"
    );
    assert_eq!(config.kind, ProviderKind::Anthropic);
}

#[tokio::test]
async fn provider_built_from_variables_talks_to_the_configured_server() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-2"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"choices": [{"message": {"content": "pong"}}]})),
        )
        .mount(&server)
        .await;
    let base = format!("{}/v1/", server.uri());
    let vars = [
        ("OPENAI_BASE_URL", base.as_str()),
        ("OPENAI_API_KEY", "sk-2"),
        ("TOOLBELT_MODEL", "llama3.2"),
    ];
    let provider = from(&vars).unwrap().into_provider().unwrap();
    let answer = provider
        .chat(ChatRequest::new(vec![Message::user("ping")]))
        .await
        .unwrap();
    assert_eq!(answer.content.as_deref(), Some("pong"));
    let sent: serde_json::Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(sent["model"], json!("llama3.2"));
}
