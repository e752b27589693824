//! The run loop: route, ask the model, run its tool calls, repeat.

mod dispatch;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use toolbelt_core::{Approver, CallResult, ToolCall, ToolContext, ToolKind, Toolset};
use toolbelt_llm::{
    ChatRequest, ChatResponse, Message, ProviderError, StreamEvent, ToolChoice, ToolSchema,
};
use toolbelt_router::{AnyRouter, RouteOutcome, RouteRequest};
use tracing::Instrument;

use crate::agent::AgentInner;
use crate::approval::StreamApprover;
use crate::error::AgentError;
use crate::event::{AgentEvent, EventSink, emit};
use crate::options::RunOptions;
use crate::session::new_conversation_id;
use crate::text_calls;
use crate::transcript::{AnswerKind, RunOutput, Step, Transcript};

/// How many earlier messages a router sees as context.
const ROUTER_RECENT: usize = 4;

/// Runs `agent` on `input`; with a sink, streams events and asks approvals through it.
pub(crate) async fn execute(
    agent: &AgentInner,
    input: String,
    options: RunOptions,
    sink: Option<EventSink>,
) -> Result<RunOutput, AgentError> {
    let span = tracing::info_span!("agent_run", agent = %agent.name, depth = options.depth);
    execute_in_span(agent, input, options, sink)
        .instrument(span)
        .await
}

async fn execute_in_span(
    agent: &AgentInner,
    input: String,
    options: RunOptions,
    sink: Option<EventSink>,
) -> Result<RunOutput, AgentError> {
    let cancel = options.cancel.unwrap_or_default();
    // Tools get a child token: ending the run stops them without cancelling the caller's token.
    let tools_cancel = cancel.child_token();
    let mut ctx = ToolContext::new()
        .with_extensions(options.extensions)
        .with_cancellation(tools_cancel.clone())
        .with_depth(options.depth)
        .with_conversation_id(options.conversation_id.unwrap_or_else(new_conversation_id));
    let approver: Option<Arc<dyn Approver>> = match &sink {
        Some(sink) => Some(Arc::new(StreamApprover { sink: sink.clone() })),
        None => options.approver,
    };
    if let Some(approver) = approver {
        ctx = ctx.with::<Arc<dyn Approver>>(approver);
    }
    let history_len = options.history.len();
    let mut messages = options.history;
    messages.push(Message::user(input.clone()));
    let mut run = Run {
        agent,
        sink: sink.as_ref(),
        ctx,
        transcript: Transcript {
            messages,
            history_len,
            ..Transcript::default()
        },
        active: Active::of(agent.tools.clone()),
        input,
        limit: options
            .max_iterations
            .unwrap_or(agent.options.max_iterations),
    };
    let timeout = options.timeout.or(agent.options.run_timeout);
    let result = {
        let deadline = async {
            match timeout {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(Stop::Cancelled),
            () = deadline => Err(Stop::Timeout(timeout.unwrap_or_default())),
            result = run.drive() => result,
        }
    };
    tools_cancel.cancel();
    let mut transcript = run.transcript;
    let name = || agent.name.clone();
    match result {
        Ok(Finish::Answer(answer)) => Ok(RunOutput {
            answer,
            kind: AnswerKind::Final,
            transcript,
        }),
        Ok(Finish::Clarify(question)) => Ok(RunOutput {
            answer: question,
            kind: AnswerKind::Clarification,
            transcript,
        }),
        Err(stop) => {
            tracing::debug!(reason = stop.reason(), "run stopped");
            transcript.close_open_calls(stop.reason());
            let transcript = Box::new(transcript);
            Err(match stop {
                Stop::MaxIterations(limit) => AgentError::MaxIterations {
                    agent: name(),
                    limit,
                    transcript,
                },
                Stop::Provider(source) => AgentError::Provider {
                    agent: name(),
                    source,
                    transcript,
                },
                Stop::Timeout(after) => AgentError::Timeout {
                    agent: name(),
                    after,
                    transcript,
                },
                Stop::Cancelled => AgentError::Cancelled {
                    agent: name(),
                    transcript,
                },
            })
        }
    }
}

/// How a run ended well.
enum Finish {
    Answer(String),
    Clarify(String),
}

/// How a run ended early.
enum Stop {
    MaxIterations(u32),
    Provider(ProviderError),
    Timeout(Duration),
    Cancelled,
}

impl Stop {
    fn reason(&self) -> &'static str {
        match self {
            Self::MaxIterations(_) => "the agent reached its iteration limit",
            Self::Provider(_) => "the model provider failed",
            Self::Timeout(_) => "the run timed out",
            Self::Cancelled => "the run was cancelled",
        }
    }
}

/// The tools offered to the model, and their schemas ready to send.
struct Active {
    tools: Toolset,
    schemas: Vec<ToolSchema>,
    names: Vec<String>,
}

impl Active {
    fn of(tools: Toolset) -> Self {
        let schemas: Vec<ToolSchema> = tools.specs().map(ToolSchema::from).collect();
        let names = schemas.iter().map(|s| s.name.clone()).collect();
        Self {
            tools,
            schemas,
            names,
        }
    }
}

struct Run<'a> {
    agent: &'a AgentInner,
    sink: Option<&'a EventSink>,
    ctx: ToolContext,
    transcript: Transcript,
    active: Active,
    input: String,
    limit: u32,
}

impl Run<'_> {
    async fn drive(&mut self) -> Result<Finish, Stop> {
        if let Some(router) = &self.agent.router
            && let Some(question) = self.route(router).await
        {
            return Ok(Finish::Clarify(question));
        }
        let mut choice = self.agent.options.tool_choice.clone();
        if let ToolChoice::Tool(name) = &choice
            && !self.active.tools.contains(name)
        {
            // A forced tool must be offered, whatever the router chose.
            let name = name.clone();
            self.add_active([name]);
        }
        for iteration in 1..=self.limit {
            let request = self.request(&choice);
            let started = Instant::now();
            let response = self.ask_model(request).await.map_err(Stop::Provider)?;
            let (content, calls) =
                self.split_answer(response.content, response.tool_calls, &choice, iteration);
            self.transcript.usage += response.usage;
            self.transcript.messages.push(Message::assistant_tool_calls(
                content.clone(),
                calls.clone(),
            ));
            self.transcript.steps.push(Step::Model {
                iteration,
                tools_offered: self.offered(&choice),
                content: content.clone(),
                tool_calls: calls.clone(),
                finish_reason: response.finish_reason,
                usage: response.usage,
                duration: started.elapsed(),
            });
            if calls.is_empty() {
                return Ok(Finish::Answer(content.unwrap_or_default()));
            }
            emit(self.sink, || AgentEvent::ModelTurn {
                iteration,
                tool_calls: calls.clone(),
            });
            if iteration == self.limit {
                break;
            }
            if self.agent.options.reset_tool_choice {
                choice = ToolChoice::Auto;
            }
            self.run_calls(calls).await;
        }
        Err(Stop::MaxIterations(self.limit))
    }

    /// Asks the router which tools this run needs; returns a clarifying question if any.
    async fn route(&mut self, router: &AnyRouter) -> Option<String> {
        let history = &self.transcript.messages[..self.transcript.history_len];
        let request = RouteRequest::new(self.input.clone(), self.agent.tools.clone())
            .with_recent(recent_texts(history))
            .with_used_tools(used_tools(history));
        let decision = router.route_or_fallback(&request).await;
        tracing::debug!(router = %decision.router, outcome = ?decision.outcome,
            tools = ?decision.tool_names(), fallback = decision.fallback, "routed");
        emit(self.sink, || AgentEvent::Routed(decision.clone()));
        let question = match &decision.outcome {
            RouteOutcome::Tools if decision.fallback => None,
            RouteOutcome::Tools => {
                let chosen = decision
                    .tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .chain(self.agent.pinned.iter().map(String::as_str));
                self.active = Active::of(self.agent.tools.subset(chosen));
                None
            }
            RouteOutcome::Direct => {
                self.active = Active::of(Toolset::empty());
                None
            }
            RouteOutcome::Clarify { question } => Some(question.clone()),
            _ => None,
        };
        self.transcript.steps.push(Step::Routed { decision });
        if let Some(question) = &question {
            self.transcript
                .messages
                .push(Message::assistant(question.clone()));
        }
        question
    }

    fn request(&self, choice: &ToolChoice) -> ChatRequest {
        let options = &self.agent.options;
        let mut messages = Vec::with_capacity(self.transcript.messages.len() + 1);
        if let Some(system) = &options.system_prompt {
            messages.push(Message::system(system.clone()));
        }
        messages.extend(self.transcript.messages.iter().cloned());
        let mut request = ChatRequest::new(messages);
        if !self.active.schemas.is_empty() {
            request.tools = self.active.schemas.clone();
            request.tool_choice = choice.clone();
            request.parallel_tool_calls = Some(options.parallel_tool_calls);
        }
        request.model.clone_from(&options.model);
        request.temperature = options.temperature;
        request.max_tokens = options.max_tokens;
        request
    }

    fn offered(&self, choice: &ToolChoice) -> Vec<String> {
        if *choice == ToolChoice::None {
            Vec::new()
        } else {
            self.active.names.clone()
        }
    }

    /// Streams the answer when the run streams, so text reaches the caller as it comes.
    async fn ask_model(&self, request: ChatRequest) -> Result<ChatResponse, ProviderError> {
        let provider = &self.agent.provider;
        let Some(sink) = self.sink else {
            return provider.chat(request).await;
        };
        let mut stream = provider.chat_stream(request).await?;
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::TextDelta(text) => {
                    sink.send(AgentEvent::TextDelta(text));
                }
                StreamEvent::Completed(response) => return Ok(response),
                _ => {}
            }
        }
        Err(ProviderError::Decode {
            provider: provider.name(),
            message: "the answer stream ended before the answer was complete".to_owned(),
        })
    }

    /// The answer's text and tool calls; calls written as text count when enabled.
    fn split_answer(
        &self,
        content: Option<String>,
        calls: Vec<ToolCall>,
        choice: &ToolChoice,
        iteration: u32,
    ) -> (Option<String>, Vec<ToolCall>) {
        let parse = calls.is_empty()
            && self.agent.options.text_tool_calls
            && *choice != ToolChoice::None
            && !self.active.schemas.is_empty();
        match content {
            Some(text) if parse => text_calls::extract(text, &self.agent.tools, iteration),
            content => (content, calls),
        }
    }

    async fn run_calls(&mut self, calls: Vec<ToolCall>) {
        let agent = self.agent;
        let results = dispatch::run(
            &agent.executor,
            &agent.tools,
            calls,
            &self.ctx,
            agent.options.parallel_tool_calls,
            self.sink,
        )
        .await;
        for result in results {
            self.transcript.messages.push(Message::tool_result(
                result.call.id.clone(),
                result.call.name.clone(),
                result.to_model_text(),
                !result.is_ok(),
            ));
            self.add_found_tools(&result);
            self.transcript.steps.push(Step::Tool { result });
        }
    }

    /// Tools a meta tool (`search_tools`) returned join the offered set for the rest of the run.
    fn add_found_tools(&mut self, result: &CallResult) {
        let Some(tool) = self.agent.tools.get(&result.call.name) else {
            return;
        };
        if tool.spec().kind != ToolKind::Meta {
            return;
        }
        let Ok(Some(found)) = result.outcome.as_ref().map(|out| out.json.as_ref()) else {
            return;
        };
        let names: Vec<String> = found["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str())
            .filter(|n| self.agent.tools.contains(n) && !self.active.tools.contains(n))
            .map(str::to_owned)
            .collect();
        if names.is_empty() {
            return;
        }
        self.add_active(names.iter().cloned());
        let by = result.call.name.clone();
        emit(self.sink, || AgentEvent::ToolsAdded {
            by: by.clone(),
            tools: names.clone(),
        });
        self.transcript
            .steps
            .push(Step::ToolsAdded { by, tools: names });
    }

    fn add_active(&mut self, names: impl IntoIterator<Item = String>) {
        let mut all: Vec<String> = self.active.names.clone();
        all.extend(names);
        self.active = Active::of(self.agent.tools.subset(all));
    }
}

/// The texts of the last few user and assistant messages, oldest first.
fn recent_texts(history: &[Message]) -> Vec<String> {
    let mut texts: Vec<String> = history
        .iter()
        .rev()
        .filter(|m| matches!(m, Message::User { .. } | Message::Assistant { .. }))
        .filter_map(|m| m.text().map(str::to_owned))
        .take(ROUTER_RECENT)
        .collect();
    texts.reverse();
    texts
}

/// The tools called earlier in the conversation, first use first, without repeats.
fn used_tools(history: &[Message]) -> Vec<String> {
    let mut used: Vec<String> = Vec::new();
    for message in history {
        if let Message::Assistant { tool_calls, .. } = message {
            for call in tool_calls {
                if !used.contains(&call.name) {
                    used.push(call.name.clone());
                }
            }
        }
    }
    used
}
