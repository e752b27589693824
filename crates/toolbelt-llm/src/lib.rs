#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod anthropic;
mod config;
mod error;
mod http;
mod message;
mod names;
mod normalize;
mod openai;
mod parse;
mod profile;
mod provider;
mod request;
mod retry;

pub use anthropic::{
    ANTHROPIC_BASE_URL, ANTHROPIC_MAX_TOOLS, ANTHROPIC_VERSION, AnthropicClient,
    AnthropicClientBuilder, DEFAULT_MAX_TOKENS,
};
pub use config::{
    DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL, ProviderConfig, ProviderKind, provider_from_env,
};
pub use error::ProviderError;
pub use message::Message;
pub use names::NameMap;
pub use normalize::{
    MAX_INLINED_NODES, MAX_SCHEMA_DEPTH, SchemaDialect, SchemaError, is_strict_compatible,
    normalize_schema, try_normalize_schema,
};
pub use openai::{
    DEFAULT_REQUEST_TIMEOUT, OPENAI_BASE_URL, OPENAI_MAX_TOOLS, OpenAiClient, OpenAiClientBuilder,
};
pub use parse::{ParsedText, parse_tool_calls, repair_json, unparsed_arguments};
pub use profile::{ModelProfile, ModelProfiles, ProfileError};
pub use provider::{ChatProvider, ChatStream, Provider, ProviderLimits};
pub use request::{
    ChatRequest, ChatResponse, FinishReason, StreamEvent, ToolChoice, ToolSchema, Usage,
};
pub use retry::RetryConfig;

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<Provider>();
    assert_send_sync::<OpenAiClient>();
    assert_send_sync::<AnthropicClient>();
    assert_send_sync::<ProviderError>();
    assert_send_sync::<ChatRequest>();
};
