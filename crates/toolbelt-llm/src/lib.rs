//! Chat providers for toolbelt: a provider-neutral request/response model, the
//! [`ChatProvider`] trait, OpenAI-compatible and Anthropic clients, streaming,
//! and parsing of tool calls written as text by models without native tool calls.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod error;
mod message;
mod provider;
mod request;

pub use error::ProviderError;
pub use message::Message;
pub use provider::{ChatProvider, ChatStream, Provider, ProviderLimits};
pub use request::{
    ChatRequest, ChatResponse, FinishReason, StreamEvent, ToolChoice, ToolSchema, Usage,
};
