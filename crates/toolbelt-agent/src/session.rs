//! [`Session`] and [`Conversation`]: conversations that continue across runs.

use serde::{Deserialize, Serialize};
use toolbelt_llm::Message;

use crate::agent::Agent;
use crate::error::AgentError;
use crate::options::RunOptions;
use crate::run;
use crate::stream::RunStream;
use crate::transcript::{RunOutput, Transcript};

/// The messages of a conversation (no system prompt) and its id; plain data to store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Conversation {
    /// The id tools see as [`ToolContext::conversation_id`](toolbelt_core::ToolContext::conversation_id).
    pub id: String,
    /// The messages so far.
    pub messages: Vec<Message>,
}

impl Conversation {
    /// An empty conversation with a fresh id.
    pub fn new() -> Self {
        Self::with_id(new_conversation_id())
    }

    /// An empty conversation with this id.
    pub fn with_id(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            messages: Vec::new(),
        }
    }

    /// Takes in what a run did. A run that stopped early still counts: its
    /// unanswered tool calls get an error result, so the next run can go on.
    fn absorb(&mut self, transcript: &Transcript) {
        self.messages.clear();
        self.messages.extend(transcript.messages.iter().cloned());
    }
}

/// A fresh id, unique across processes: a UUID v7 (time-ordered).
pub(crate) fn new_conversation_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// An agent and a conversation with it; each run sees the earlier ones.
///
/// ```no_run
/// # async fn demo(agent: toolbelt_agent::Agent) -> Result<(), toolbelt_agent::AgentError> {
/// let mut chat = agent.session();
/// chat.run("My name is Ada.").await?;
/// let out = chat.run("What is my name?").await?;
/// # let _ = out; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Session {
    agent: Agent,
    conversation: Conversation,
}

impl Session {
    pub(crate) fn new(agent: Agent) -> Self {
        Self::resume(agent, Conversation::new())
    }

    /// Continues a stored conversation with `agent`.
    pub fn resume(agent: Agent, conversation: Conversation) -> Self {
        Self {
            agent,
            conversation,
        }
    }

    /// The conversation so far.
    pub fn conversation(&self) -> &Conversation {
        &self.conversation
    }

    /// The conversation, to edit (e.g. drop old turns).
    pub fn conversation_mut(&mut self) -> &mut Conversation {
        &mut self.conversation
    }

    /// Ends the session, keeping the conversation.
    pub fn into_conversation(self) -> Conversation {
        self.conversation
    }

    /// Runs the agent on `input` after the conversation so far.
    ///
    /// The conversation keeps what the run did, also when it stopped early.
    ///
    /// # Errors
    /// As [`Agent::run`].
    pub async fn run(&mut self, input: impl Into<String>) -> Result<RunOutput, AgentError> {
        self.run_with(input, RunOptions::new()).await
    }

    /// [`Session::run`] with per-run settings (its history is replaced by the conversation).
    ///
    /// # Errors
    /// As [`Agent::run`].
    pub async fn run_with(
        &mut self,
        input: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunOutput, AgentError> {
        let options = self.options(options);
        let result = run::execute(&self.agent.inner, input.into(), options, None).await;
        self.conversation.absorb(transcript_of(&result));
        result
    }

    /// Streams a run on `input` after the conversation so far.
    pub fn run_stream(&mut self, input: impl Into<String>) -> RunStream<'_> {
        self.run_stream_with(input, RunOptions::new())
    }

    /// [`Session::run_stream`] with per-run settings.
    pub fn run_stream_with(
        &mut self,
        input: impl Into<String>,
        options: RunOptions,
    ) -> RunStream<'_> {
        let options = self.options(options);
        let input = input.into();
        let agent = &self.agent.inner;
        let conversation = &mut self.conversation;
        RunStream::new(move |sink| async move {
            let result = run::execute(agent, input, options, Some(sink)).await;
            conversation.absorb(transcript_of(&result));
            result
        })
    }

    fn options(&self, mut options: RunOptions) -> RunOptions {
        options.history = self.conversation.messages.clone();
        if options.conversation_id.is_none() {
            options.conversation_id = Some(self.conversation.id.clone());
        }
        options
    }
}

fn transcript_of(result: &Result<RunOutput, AgentError>) -> &Transcript {
    match result {
        Ok(output) => &output.transcript,
        Err(error) => error.transcript(),
    }
}
