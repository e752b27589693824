#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod agent;
mod agent_tool;
mod approval;
mod completer;
mod error;
mod event;
mod options;
mod run;
mod session;
mod stream;
mod text_calls;
mod transcript;

#[cfg(feature = "test-util")]
pub mod testing;

pub use agent::{Agent, AgentBuilder};
pub use agent_tool::{AgentTool, DEFAULT_MAX_DEPTH};
pub use approval::ApprovalPrompt;
pub use completer::ProviderCompleter;
pub use error::{AgentError, BuildError};
pub use event::AgentEvent;
pub use options::{AgentOptions, RunOptions};
pub use session::{Conversation, Session};
pub use stream::RunStream;
pub use transcript::{AnswerKind, RunOutput, Step, Transcript};

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    const fn assert_send<T: Send + 'static>() {}
    assert_send_sync::<Agent>();
    assert_send_sync::<AgentTool>();
    assert_send_sync::<Session>();
    assert_send_sync::<RunOutput>();
    assert_send_sync::<AgentError>();
    assert_send::<AgentEvent>();
    assert_send::<RunStream<'static>>();
};
