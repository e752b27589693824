//! The run loop: route, ask the model, run its tool calls, repeat.

mod answers;
mod dispatch;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::Value;
use toolbelt_core::{Approver, CallResult, ToolCall, ToolContext, ToolKind, Toolset};
use toolbelt_llm::{
    ChatRequest, ChatResponse, FinishReason, Message, ModelProfile, ProviderError, StreamEvent,
    ToolChoice, ToolSchema,
};
use toolbelt_router::{AnyRouter, RouteOutcome, RouteRequest, Skill};
use tracing::Instrument;

use crate::agent::AgentInner;
use crate::approval::StreamApprover;
use crate::error::AgentError;
use crate::event::{AgentEvent, EventSink, emit};
use crate::options::RunOptions;
use crate::session::new_conversation_id;
use crate::text_calls::{self, TextAnswer, TextGate};
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
    let run_id = uuid::Uuid::now_v7().to_string();
    let approver: Option<Arc<dyn Approver>> = match &sink {
        Some(sink) => Some(Arc::new(StreamApprover {
            sink: sink.clone(),
            run_id: run_id.clone(),
        })),
        None => options.approver,
    };
    if let Some(approver) = approver {
        ctx = ctx.with::<Arc<dyn Approver>>(approver);
    }
    let history_len = options.history.len();
    let mut messages = options.history;
    messages.push(Message::user(input.clone()));
    let profile = agent.options.profile.clone().unwrap_or_default();
    let mut run = Run {
        agent,
        sink: sink.as_ref(),
        ctx,
        transcript: Transcript {
            run_id,
            messages,
            history_len,
            ..Transcript::default()
        },
        active: Active::of(agent.tools.clone()),
        input,
        limit: options
            .max_iterations
            .unwrap_or(agent.options.max_iterations),
        max_tokens: options
            .max_tokens
            .or(agent.options.max_tokens)
            .unwrap_or(profile.max_tokens),
        text_calls: agent
            .options
            .text_tool_calls
            .unwrap_or(profile.text_tool_calls),
        stream: agent.options.stream,
        profile,
        seen: HashMap::new(),
        unsaved_told: false,
        unused_told: false,
        unread_told: false,
        blocked_turns: 0,
        answer_now: false,
        tool_calls: 0,
        corrections: 0,
        skills_prompt: None,
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
        Ok(Finish::Truncated(answer)) => Ok(RunOutput {
            answer,
            kind: AnswerKind::Truncated,
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
                Stop::BadAnswer(reason) => AgentError::BadAnswer {
                    agent: name(),
                    reason,
                    transcript,
                },
                Stop::Loop { tool, times } => AgentError::Loop {
                    agent: name(),
                    tool,
                    times,
                    transcript,
                },
                Stop::ToolCallLimit(limit) => AgentError::ToolCallLimit {
                    agent: name(),
                    limit,
                    transcript,
                },
                Stop::NarratedCall(tool) => AgentError::NarratedCall {
                    agent: name(),
                    tool,
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
    Truncated(String),
}

/// How a run ended early.
enum Stop {
    MaxIterations(u32),
    Provider(ProviderError),
    Timeout(Duration),
    Cancelled,
    BadAnswer(String),
    Loop {
        tool: String,
        times: u32,
    },
    ToolCallLimit(u32),
    /// The model described calling this tool instead of calling it, also after being told.
    NarratedCall(String),
}

impl Stop {
    fn reason(&self) -> &'static str {
        match self {
            Self::MaxIterations(_) => "the agent reached its iteration limit",
            Self::Provider(_) => "the model provider failed",
            Self::Timeout(_) => "the run timed out",
            Self::Cancelled => "the run was cancelled",
            Self::BadAnswer(_) => "the model gave no usable answer",
            Self::Loop { .. } => "the model kept repeating the same call",
            Self::ToolCallLimit(_) => "the run reached its tool-call limit",
            Self::NarratedCall(_) => "the model described a tool call instead of making it",
        }
    }
}

/// What one answer of the model amounts to.
enum Turn {
    /// Tool calls to run (with any prose around them).
    Calls(Option<String>, Vec<ToolCall>),
    /// A final answer.
    Text(String),
    /// Empty or unreadable: the reason, for the model.
    Bad(String),
    /// A final answer that narrates a call of `tool` instead of making it;
    /// `reason` tells the model to call it.
    Narrated { tool: String, reason: String },
    /// A small model's answer that needed a call it did not make: it shows a file's
    /// content, or claims to have written it, with no call that writes; or it answers
    /// about a file the request names that no call read. `reason` tells it which tool to
    /// call. The next request offers that tool alone and requires one call of it, also
    /// after an answer asked for without tools.
    CallNeeded { tool: String, reason: String },
    /// With no tools offered, the call refused as a repeat (`times` asked for);
    /// `reason` quotes its earlier result and asks for the answer.
    Repeated {
        tool: String,
        times: u32,
        reason: String,
    },
}

/// What becomes of one call of a turn.
#[derive(Clone)]
enum Fate {
    /// It runs; its result is at this index of the turn's results.
    Run(usize),
    /// It equals an earlier call of the turn and shares that call's result (at this index).
    Merged(usize),
    /// It repeats an earlier call too often: not run; the count so far.
    Blocked(u32),
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
    /// Output budget per answer.
    max_tokens: u32,
    /// Whether calls written as text are parsed.
    text_calls: bool,
    /// Whether answers are streamed (turns off after a stream the server broke).
    stream: bool,
    profile: ModelProfile,
    /// Times each call (tool + canonical arguments) was asked for.
    seen: HashMap<String, u32>,
    /// Whether the model was told that content it showed was not saved (once per run).
    unsaved_told: bool,
    /// Whether the model was told that its answer used none of the results (once per run).
    unused_told: bool,
    /// Whether the model was told that no call read a file the request names (once per run).
    unread_told: bool,
    /// Turns that had a blocked (repeated) call.
    blocked_turns: u32,
    /// Whether the next request offers no tools: the model repeated a call
    /// whose result it already has, so it is asked for its answer.
    answer_now: bool,
    /// Tool calls run so far.
    tool_calls: u32,
    /// Corrective turns in a row.
    corrections: u32,
    /// The instructions of the skills chosen for this run, added to the system message.
    skills_prompt: Option<String>,
}

impl Run<'_> {
    async fn drive(&mut self) -> Result<Finish, Stop> {
        if let Some(router) = &self.agent.router
            && let Some(question) = self.route(router).await
        {
            return Ok(Finish::Clarify(question));
        }
        self.add_skills();
        let mut choice = self.agent.options.tool_choice.clone();
        if let ToolChoice::Tool(name) = &choice
            && !self.active.tools.contains(name)
        {
            // A forced tool must be offered, whatever the router chose.
            let name = name.clone();
            self.add_active([name]);
        }
        // After a reminder that a call of a tool is needed, the next request requires one.
        let mut call_needed: Option<String> = None;
        for iteration in 1..=self.limit {
            let answer_now = std::mem::take(&mut self.answer_now);
            let request = if answer_now {
                self.answer_request()
            } else if let Some(tool) = call_needed.take() {
                self.call_request(&tool)
            } else {
                self.request(&choice)
            };
            let offered: Vec<String> = if request.tool_choice == ToolChoice::None {
                Vec::new()
            } else {
                request.tools.iter().map(|t| t.name.clone()).collect()
            };
            let started = Instant::now();
            let parse_text = self.parses_text(&choice);
            // Only a tool offered in this request can be narrated instead of called.
            let narration = !answer_now && !offered.is_empty();
            let (response, mut gate) = self
                .ask_model(request, parse_text, narration)
                .await
                .map_err(Stop::Provider)?;
            let mut turn = self.classify(&response, parse_text, iteration);
            if self.profile.one_call_per_turn
                && let Turn::Calls(_, calls) = &mut turn
            {
                // A small model's runaway answer: its reads run (copies merged), and of
                // the calls that change something, the first only; the others are no calls.
                let before = calls.len();
                let mut changed = false;
                calls.retain(|c| {
                    let changes = self
                        .agent
                        .tools
                        .get(&c.name)
                        .is_some_and(|t| !t.spec().policy.is_read_only());
                    !changes || !std::mem::replace(&mut changed, true)
                });
                if calls.len() < before {
                    tracing::debug!(
                        dropped = before - calls.len(),
                        "calls that change something beyond the first of an answer dropped"
                    );
                }
            }
            // Servers that parse calls report `tool_calls`, not `length`, for a cut-off
            // answer (llama.cpp): the output count tells too.
            let cut_off = response.finish_reason == FinishReason::Length
                || response.usage.output_tokens >= u64::from(self.max_tokens);
            if cut_off
                && let Turn::Calls(_, calls) = &mut turn
                && calls.len() > 1
                && calls.last().is_some_and(|c| c.arguments.is_string())
            {
                // The token limit cut the last call off: its arguments are unreadable
                // text, and it is no call (a runaway turn of forty copies ended so).
                tracing::debug!("the last call of a turn cut off by the token limit is dropped");
                calls.pop();
            }
            if narration
                && let Turn::Text(text) = &turn
                && let Some(tool) = text_calls::narrated_tool(text, &self.active.names)
            {
                tracing::debug!(%tool, "the answer narrates a call instead of making it");
                let reason = self.narration_reason(&tool, parse_text);
                turn = Turn::Narrated { tool, reason };
            }
            if iteration < self.limit
                && let Turn::Text(text) = &turn
                && let Some((tool, reason)) = self.unsaved_reason(text)
            {
                tracing::debug!("the answer shows or claims a file it did not write");
                self.unsaved_told = true;
                turn = Turn::CallNeeded { tool, reason };
            }
            if iteration < self.limit
                && let Turn::Text(_) = &turn
                && let Some((tool, reason)) = self.unread_reason()
            {
                tracing::debug!("the answer is about a file no call read");
                self.unread_told = true;
                turn = Turn::CallNeeded { tool, reason };
            }
            if iteration < self.limit
                && let Turn::Text(text) = &turn
                && let Some(reason) = self.unused_results_reason(text)
            {
                tracing::debug!("the answer uses nothing the tools returned");
                self.unused_told = true;
                turn = Turn::Bad(reason);
            }
            if answer_now && let Turn::Calls(_, calls) = &turn {
                // No tools were offered: another call is not run but corrected. The
                // refused call again gets its earlier result quoted beside the request,
                // once (small models read the last message best); after that it ends the run.
                let limit = self.agent.options.max_identical_calls;
                if let Some((call, times)) = calls.iter().find_map(|c| {
                    let times = *self.seen.get(&call_key(c))?;
                    (times >= limit).then_some((c, times + 1))
                }) {
                    let key = call_key(call);
                    let tool = call.name.clone();
                    let quoted = (times == limit + 2)
                        .then(|| self.earlier_result(&key))
                        .flatten()
                        .map(|earlier| quoted_result(&earlier));
                    let Some(quoted) = quoted else {
                        self.transcript.usage += response.usage;
                        return Err(Stop::Loop { tool, times });
                    };
                    self.seen.insert(key, times);
                    self.answer_now = true;
                    let reason = format!(
                        "no tools are offered for this answer, and `{tool}` with these \
                         arguments already ran. Its result was:\n{quoted}\nAnswer my request \
                         from that result, in plain text. My request: {}",
                        self.input
                    );
                    turn = Turn::Repeated {
                        tool,
                        times,
                        reason,
                    };
                } else {
                    self.answer_now = true;
                    turn = Turn::Bad(
                        "no tools are offered for this answer. Give your final answer in plain \
                         text from the tool results above."
                            .to_owned(),
                    );
                }
            }
            let (content, calls) = match &turn {
                Turn::Calls(prose, calls) => (prose.clone(), calls.clone()),
                // An empty answer stays in the conversation as "" (not null,
                // which some servers refuse without tool calls).
                Turn::Text(_)
                | Turn::Bad(_)
                | Turn::CallNeeded { .. }
                | Turn::Narrated { .. }
                | Turn::Repeated { .. } => (
                    Some(response.content.clone().unwrap_or_default()),
                    Vec::new(),
                ),
            };
            self.transcript.usage += response.usage;
            // The conversation holds each distinct call of the turn once: shown its own
            // call forty times over, the 1.5B model wrote the next turn's call forty times.
            self.transcript.messages.push(Message::assistant_tool_calls(
                content.clone(),
                distinct_calls(&calls),
            ));
            let truncated = response.finish_reason == FinishReason::Length;
            self.transcript.steps.push(Step::Model {
                iteration,
                tools_offered: offered,
                content: content.clone(),
                tool_calls: calls.clone(),
                finish_reason: response.finish_reason,
                usage: response.usage,
                duration: started.elapsed(),
            });
            let calls = match turn {
                Turn::Text(text) => {
                    if let (Some(sink), Some(rest)) = (self.sink, gate.release()) {
                        sink.send(AgentEvent::TextDelta(rest));
                    }
                    return Ok(if truncated {
                        Finish::Truncated(text)
                    } else {
                        Finish::Answer(text)
                    });
                }
                Turn::Bad(reason) => {
                    self.correct(reason.clone(), iteration, Stop::BadAnswer(reason))?;
                    // Asked for an answer without tools, the model stays so after a correction.
                    self.answer_now |= answer_now;
                    continue;
                }
                Turn::Narrated { tool, reason } => {
                    self.correct(reason, iteration, Stop::NarratedCall(tool.clone()))?;
                    call_needed = Some(tool);
                    continue;
                }
                Turn::CallNeeded { tool, reason } => {
                    self.correct(reason.clone(), iteration, Stop::BadAnswer(reason))?;
                    call_needed = Some(tool);
                    // The runtime asks for calls again: a repeat refused before this no
                    // longer counts toward ending the run (count-rows: refused a third
                    // listing, told to read the CSV, the model read it three times and the
                    // loop guard ended the run with the answer in hand).
                    self.blocked_turns = 0;
                    continue;
                }
                Turn::Repeated {
                    tool,
                    times,
                    reason,
                } => {
                    self.correct(reason, iteration, Stop::Loop { tool, times })?;
                    continue;
                }
                Turn::Calls(_, calls) => {
                    // Prose beside native calls is no call: what the gate held of it
                    // (from an intent phrase on) is shown. Text calls stay held.
                    if !parse_text
                        && !response.tool_calls.is_empty()
                        && let (Some(sink), Some(rest)) = (self.sink, gate.release())
                    {
                        sink.send(AgentEvent::TextDelta(rest));
                    }
                    calls
                }
            };
            self.corrections = 0;
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
            self.run_calls(calls).await?;
        }
        Err(Stop::MaxIterations(self.limit))
    }

    /// Tells the model what was wrong with its answer, for another turn; or
    /// ends the run with `stop` when the corrective turns (in a row) are used
    /// up or no model call is left.
    fn correct(&mut self, reason: String, iteration: u32, stop: Stop) -> Result<(), Stop> {
        if self.corrections >= self.agent.options.corrective_turns || iteration == self.limit {
            return Err(stop);
        }
        self.corrections += 1;
        self.transcript
            .messages
            .push(Message::user(format!("(runtime) {reason}")));
        self.transcript.steps.push(Step::Corrected { reason });
        Ok(())
    }

    /// What a model that narrated a call of `tool` is told: that describing a
    /// call does not run it, and how to call it (its arguments; the written
    /// form when calls are parsed from text).
    fn narration_reason(&self, tool: &str, parse_text: bool) -> String {
        let schema = self.active.schemas.iter().find(|s| s.name == tool);
        let required: Vec<&str> = schema
            .and_then(|s| s.parameters["required"].as_array())
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let arguments: Vec<String> = schema
            .and_then(|s| s.parameters["properties"].as_object())
            .into_iter()
            .flat_map(|p| p.keys())
            .map(|k| {
                if required.contains(&k.as_str()) {
                    format!("{k} (required)")
                } else {
                    k.clone()
                }
            })
            .collect();
        let arguments = if arguments.is_empty() {
            String::new()
        } else {
            format!(" Its arguments: {}.", arguments.join(", "))
        };
        let how = if parse_text {
            format!(
                " To call it, answer with only a ```json block holding {{\"name\": \"{tool}\", \
                 \"arguments\": {{...}}}}."
            )
        } else {
            String::new()
        };
        format!(
            "you described calling `{tool}` but did not call it; describing a call does not \
             run it, and the user sees no result. The `{tool}` tool is offered with this message: \
             call it now.{arguments}{how} Then answer from its result."
        )
    }

    /// What a small model that showed a file's content, or claimed to have written the file,
    /// without a call that writes is told: the file its request names, and the offered tool
    /// that writes. `None` when the run wrote something, read that file, no offered tool
    /// writes, no corrective turn is left, or the model was told once.
    fn unsaved_reason(&self, answer: &str) -> Option<(String, String)> {
        // Small models only (the profile that offers no tools when unsure); their router
        // offers a tool that writes only to a request for a change.
        // A reminder, never a failure: only while a corrective turn is left.
        if self.profile.tools_when_unsure
            || self.unsaved_told
            || self.corrections >= self.agent.options.corrective_turns
        {
            return None;
        }
        let writer_spec = self
            .active
            .tools
            .specs()
            .find(|s| !s.policy.is_read_only())?;
        let writer = writer_spec.name.clone();
        // Which arguments to give, when the writer takes a path and a content: told only to
        // call the tool, the 1.5B model answered "I wrote README.md …" in prose 5 times of 5;
        // told the arguments, it called the tool 5 times of 5 (create-readme, replayed).
        let takes = |name: &str| writer_spec.parameters["properties"].get(name).is_some();
        let with_arguments = takes("path") && takes("content");
        // The paths the run's successful changes went to; a change without one (a shell
        // command, a commit) could have written anything: no reminder then.
        let mut written: Vec<String> = Vec::new();
        for change in self.ok_results().filter(|r| !self.reads_only(&r.call.name)) {
            let paths = answers::path_values(&change.call.arguments);
            if paths.is_empty() {
                return None;
            }
            written.extend(paths);
        }
        let file = if written.is_empty() && self.ok_results().next().is_none() {
            answers::unsaved_file(&self.input, answer)?
        } else {
            // A call ran but nothing was written: a final answer cannot have done what a
            // request to write asks (copy-host: config.txt read, then "The contents of
            // config.txt have been read."); nor can one after a change to another file
            // (create-readme: `example.txt` written, README.md not).
            let file = answers::file_to_write(&self.input)?.to_owned();
            if answers::names_path(&file, written.iter().map(String::as_str)) {
                return None;
            }
            file
        };
        // A file this run read exists: it is what the request reads, or what it edits, and
        // "write it" could replace it whole. No reminder then.
        if self
            .ok_results()
            .any(|r| r.call.arguments.to_string().contains(&file))
        {
            return None;
        }
        let reason = if with_arguments {
            format!(
                "nothing was saved: no tool wrote {file}. Call `{writer}` with `path` \
                 \"{file}\" and `content` the text to save."
            )
        } else {
            format!(
                "nothing was saved: no tool wrote {file}. Call `{writer}` now to write {file} \
                 as my request asks, then say in one sentence what you saved."
            )
        };
        Some((writer.to_string(), reason))
    }

    /// What a small model whose answer is about a file the request names, which no call of
    /// the run mentioned, is told: to read it first. `None` for other models, when no
    /// offered tool reads a `path`, or once told.
    fn unread_reason(&self) -> Option<(String, String)> {
        if self.profile.tools_when_unsure
            || self.unread_told
            || self.corrections >= self.agent.options.corrective_turns
        {
            return None;
        }
        // A tool that only reads and takes a `path`: `file_read` rather than `list_dir`.
        let reader = self
            .active
            .schemas
            .iter()
            .filter(|s| self.reads_only(&s.name))
            .filter(|s| {
                s.parameters["required"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|p| p == "path"))
            })
            .max_by_key(|s| s.name.contains("read"))?
            .name
            .clone();
        let paths: Vec<String> = self
            .transcript
            .steps
            .iter()
            .flat_map(|s| match s {
                Step::Tool { result } => answers::path_values(&result.call.arguments),
                _ => Vec::new(),
            })
            .collect();
        let file = answers::unread_file(&self.input, paths.iter().map(String::as_str))?;
        // Not the whole request again: "List the files …, then read notes.md" restated
        // led the model to list the folder once more.
        let reason = format!(
            "my request names {file}, and no tool read it in this run, so your answer cannot \
             come from it. Call `{reader}` with the path {file} now, then answer from what it \
             returns."
        );
        Some((reader, reason))
    }

    /// The latest result, as the model saw it, of the call whose identity is `key`.
    fn earlier_result(&self, key: &str) -> Option<String> {
        self.transcript.steps.iter().rev().find_map(|s| match s {
            Step::Tool { result } if call_key(&result.call) == key => Some(result.to_model_text()),
            _ => None,
        })
    }

    /// The calls of this run that succeeded, in order.
    fn ok_results(&self) -> impl Iterator<Item = &CallResult> {
        self.transcript.steps.iter().filter_map(|s| match s {
            Step::Tool { result } if result.is_ok() => Some(result),
            _ => None,
        })
    }

    /// Whether the agent's tool `name` only reads.
    fn reads_only(&self, name: &str) -> bool {
        self.agent
            .tools
            .get(name)
            .is_some_and(|t| t.spec().policy.is_read_only())
    }

    /// What a small model whose short answer uses nothing the tools returned, or whose
    /// answer describes its calls instead of answering, is told.
    /// `None` for other models, without a successful call this run, after a call that
    /// changed something, or once told.
    fn unused_results_reason(&self, answer: &str) -> Option<String> {
        if self.profile.tools_when_unsure
            || self.unused_told
            || self.corrections >= self.agent.options.corrective_turns
        {
            return None;
        }
        // Facts read, to report; after a change the answer confirms it instead.
        let mut results: Vec<String> = Vec::new();
        let mut called: Vec<String> = Vec::new();
        for result in self.ok_results() {
            if !self.reads_only(&result.call.name) {
                return None;
            }
            results.push(result.to_model_text());
            called.push(result.call.name.clone());
        }
        let unused =
            answers::ignores_results(&self.input, answer, results.iter().map(String::as_str));
        if !unused && !answers::describes_call(answer, called.iter().map(String::as_str)) {
            return None;
        }
        Some(format!(
            "your answer talks about the tool calls instead of answering. Answer my request \
             with the facts from the tool results (names, numbers, lines). My request: {}",
            self.input
        ))
    }

    /// Asks the router which tools this run needs; returns a clarifying question if any.
    async fn route(&mut self, router: &AnyRouter) -> Option<String> {
        let history = &self.transcript.messages[..self.transcript.history_len];
        let request = RouteRequest::new(self.input.clone(), self.agent.tools.clone())
            .with_recent(recent_texts(history))
            .with_used_tools(used_tools(history));
        let decision = router.route_or_fallback(&request).await;
        tracing::debug!(router = %decision.router, outcome = ?decision.outcome,
            tools = ?decision.tool_names(), fallback = decision.fallback,
            reason = %decision.reason, "routed");
        emit(self.sink, || AgentEvent::Routed(decision.clone()));
        let question = match &decision.outcome {
            RouteOutcome::Tools if decision.fallback => None,
            RouteOutcome::Tools => {
                // The router ranks best first; the profile caps how many a model gets.
                let chosen = decision
                    .tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .filter(|n| !self.agent.pinned.iter().any(|p| p == n))
                    .take(self.profile.max_tools)
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

    /// Chooses the run's skills once, before the first model call: those the route
    /// decision lists that the agent has, else the agent's own choice for the input.
    /// Their instructions then join every request of the run (see [`Run::request`]).
    fn add_skills(&mut self) {
        let Some(chooser) = &self.agent.skills else {
            return;
        };
        let Some(set) = chooser.skills() else {
            return;
        };
        let mut names: Vec<String> = self
            .transcript
            .route()
            .map(|d| d.skills.iter().map(|s| s.name.clone()).collect())
            .unwrap_or_default();
        names.retain(|n| set.get(n).is_some());
        if names.is_empty() {
            names = chooser
                .choose_skills(&self.input)
                .into_iter()
                .map(|s| s.name)
                .collect();
        }
        let mut chosen: Vec<&Skill> = Vec::with_capacity(names.len());
        for name in &names {
            if let Some(skill) = set.get(name)
                && !chosen.iter().any(|c| c.name == skill.name)
            {
                chosen.push(skill);
            }
        }
        if chosen.is_empty() {
            return;
        }
        self.skills_prompt = Some(skills_prompt(&chosen));
        let skills: Vec<String> = chosen.iter().map(|s| s.name.clone()).collect();
        tracing::debug!(?skills, "skills added");
        emit(self.sink, || AgentEvent::SkillsAdded {
            skills: skills.clone(),
        });
        self.transcript.steps.push(Step::SkillsAdded { skills });
    }

    fn request(&self, choice: &ToolChoice) -> ChatRequest {
        let options = &self.agent.options;
        let mut messages = Vec::with_capacity(self.transcript.messages.len() + 1);
        // Skills go into the system message rather than the conversation: they apply
        // to this run only, and a session's next run must not carry them in its history.
        let system = match (&options.system_prompt, &self.skills_prompt) {
            (Some(prompt), Some(skills)) => Some(format!("{prompt}\n\n{skills}")),
            (Some(text), None) | (None, Some(text)) => Some(text.clone()),
            (None, None) => None,
        };
        if let Some(system) = system {
            messages.push(Message::system(system));
        }
        messages.extend(self.transcript.messages.iter().cloned());
        let mut request = ChatRequest::new(messages);
        if !self.active.schemas.is_empty() {
            request.tools = self.active.schemas.clone();
            request.tool_choice = choice.clone();
            request.parallel_tool_calls =
                Some(options.parallel_tool_calls && !self.profile.one_call_per_turn);
        }
        request.model.clone_from(&options.model);
        request.temperature = options.temperature;
        request.seed = options.seed;
        request.max_tokens = Some(self.max_tokens);
        request
    }

    /// The request after a reminder that a call of `tool` is needed: that tool alone,
    /// one call of it required. Servers that take `tool_choice` only as `auto`, `none` or
    /// `required` (llama.cpp's) cannot be asked for a named tool, so the others are left
    /// out; one call, because a grammar-forced small model wrote the same call until its
    /// tokens ran out. A tool no longer offered leaves the request as it is.
    fn call_request(&self, tool: &str) -> ChatRequest {
        let mut request = self.request(&ToolChoice::Auto);
        if request.tools.iter().any(|t| t.name == tool) {
            request.tools.retain(|t| t.name == tool);
            request.tool_choice = ToolChoice::Required;
            request.parallel_tool_calls = Some(false);
        }
        request
    }

    /// The request for an answer without tools, after a refused repeat: no tools, and
    /// this run's calls and results given as one message of text. A conversation full of
    /// calls invites one more: the 1.5B model, shown its own earlier calls, wrote the
    /// refused call again instead of answering. The transcript keeps every message.
    fn answer_request(&self) -> ChatRequest {
        let mut request = self.request(&ToolChoice::None);
        request.tools.clear();
        request.tool_choice = ToolChoice::Auto;
        request.parallel_tool_calls = None;
        let run = &self.transcript.messages[self
            .transcript
            .history_len
            .min(self.transcript.messages.len())..];
        let keep = request.messages.len() - run.len();
        request.messages.truncate(keep);
        request.messages.push(Message::user(self.input.clone()));
        // Each distinct call once, with its latest result, in the order first made.
        let mut results: Vec<(String, String)> = Vec::new();
        for step in &self.transcript.steps {
            if let Step::Tool { result } = step {
                let call = format!("`{}` {}", result.call.name, result.call.arguments);
                let text = quoted_result(&result.to_model_text());
                match results.iter_mut().find(|(c, _)| *c == call) {
                    Some(seen) => seen.1 = text,
                    None => results.push((call, text)),
                }
            }
        }
        let results: Vec<String> = results
            .into_iter()
            .map(|(call, text)| format!("{call} gave:\n{text}"))
            .collect();
        // What the runtime said last (the refusal's request for an answer, or a correction).
        let told = run
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content } => content.strip_prefix("(runtime) "),
                _ => None,
            })
            .unwrap_or("Answer my request now in plain text, without calling tools.");
        request.messages.push(Message::user(format!(
            "(runtime) The tools called for my request gave these results:\n\n{}\n\n{told}",
            results.join("\n\n")
        )));
        request
    }

    /// Whether calls written as text are looked for in this turn's answer.
    fn parses_text(&self, choice: &ToolChoice) -> bool {
        self.text_calls && *choice != ToolChoice::None && !self.active.schemas.is_empty()
    }

    /// Asks the model. A streamed run passes text on as it comes, except text
    /// that may be a written tool call (with `parse_text`) or a narrated one
    /// (with `narration`, from an intent phrase on): the gate holds that until the answer
    /// is known (it is released only for a plain-text answer). When a stream
    /// fails in a way a whole request may not, and nothing was shown yet,
    /// the run asks again without streaming and stays so.
    async fn ask_model(
        &mut self,
        request: ChatRequest,
        parse_text: bool,
        narration: bool,
    ) -> Result<(ChatResponse, TextGate), ProviderError> {
        let provider = &self.agent.provider;
        let mut gate = TextGate::new(parse_text, narration);
        let Some(sink) = self.sink else {
            return Ok((provider.chat(request).await?, gate));
        };
        if self.stream {
            match self.stream_answer(request.clone(), &mut gate, sink).await {
                Ok(response) => return Ok((response, gate)),
                Err(e) if e.suggests_no_stream() && !gate.sent_any() => {
                    tracing::warn!(error = %e, "streaming failed; asking for whole answers from now on");
                    self.stream = false;
                    gate = TextGate::new(parse_text, narration);
                }
                Err(e) => return Err(e),
            }
        }
        let response = provider.chat(request).await?;
        if let Some(text) = response.content.as_deref().and_then(|t| gate.push(t)) {
            sink.send(AgentEvent::TextDelta(text));
        }
        Ok((response, gate))
    }

    async fn stream_answer(
        &self,
        request: ChatRequest,
        gate: &mut TextGate,
        sink: &EventSink,
    ) -> Result<ChatResponse, ProviderError> {
        let provider = &self.agent.provider;
        let mut stream = provider.chat_stream(request).await?;
        while let Some(event) = stream.next().await {
            match event? {
                StreamEvent::TextDelta(text) => {
                    if let Some(shown) = gate.push(&text) {
                        sink.send(AgentEvent::TextDelta(shown));
                    }
                }
                StreamEvent::Completed(response) => return Ok(response),
                _ => {}
            }
        }
        Err(ProviderError::StreamEnded {
            provider: provider.name(),
            message: "the stream ended without a complete answer".to_owned(),
        })
    }

    /// What the answer amounts to: native calls, calls written as text (when
    /// parsed), a final answer, or an empty or unreadable one.
    fn classify(&self, response: &ChatResponse, parse_text: bool, iteration: u32) -> Turn {
        if !response.tool_calls.is_empty() {
            return Turn::Calls(response.content.clone(), response.tool_calls.clone());
        }
        let text = response.content.clone().unwrap_or_default();
        if text.trim().is_empty() || answers::only_tags(&text) {
            return Turn::Bad(if response.finish_reason == FinishReason::Length {
                format!(
                    "your answer was empty: it hit the {}-token output limit before any text. \
                     Answer briefly in plain text.",
                    self.max_tokens
                )
            } else {
                "your answer was empty. Answer the user's request in plain text, or call one \
                 of the offered tools."
                    .to_owned()
            });
        }
        if !parse_text {
            return Turn::Text(text);
        }
        match text_calls::classify(text, &self.active.tools, iteration) {
            TextAnswer::Text(text) => Turn::Text(text),
            TextAnswer::Calls(prose, calls) => Turn::Calls(prose, calls),
            TextAnswer::Malformed(reason) => Turn::Bad(reason),
        }
    }

    /// Runs a turn's calls, minus repeats of earlier identical calls beyond
    /// the limit (the model is told instead); stops the run when the model
    /// persists in repeating, or when the turn would exceed the call budget.
    /// Identical calls within the turn (same tool, equal arguments) run once; the
    /// conversation holds the first of them (see `distinct_calls`).
    async fn run_calls(&mut self, calls: Vec<ToolCall>) -> Result<(), Stop> {
        let agent = self.agent;
        let mut plan: Vec<(ToolCall, Fate)> = Vec::with_capacity(calls.len());
        let mut run: Vec<ToolCall> = Vec::with_capacity(calls.len());
        // What became of each distinct call of the turn; repeats across turns count,
        // identical calls within one turn count once.
        let mut this_turn: HashMap<String, Fate> = HashMap::new();
        for call in calls {
            let key = call_key(&call);
            if let Some(first) = this_turn.get(&key) {
                // A copy of a refused call needs no answer of its own: the conversation
                // holds the first only (see `distinct_calls`).
                if let Fate::Run(at) = first {
                    plan.push((call, Fate::Merged(*at)));
                }
                continue;
            }
            let count = self.seen.entry(key.clone()).or_insert(0);
            *count += 1;
            let fate = if *count > agent.options.max_identical_calls {
                Fate::Blocked(*count)
            } else {
                run.push(call.clone());
                Fate::Run(run.len() - 1)
            };
            this_turn.insert(key, fate.clone());
            plan.push((call, fate));
        }
        let budget = agent.options.max_tool_calls;
        if self.tool_calls.saturating_add(run.len() as u32) > budget {
            return Err(Stop::ToolCallLimit(budget));
        }
        let blocked = plan.iter().find_map(|(call, fate)| match fate {
            Fate::Blocked(times) => Some((call, *times)),
            _ => None,
        });
        if let Some((call, times)) = blocked {
            if self.blocked_turns >= 1 {
                return Err(Stop::Loop {
                    tool: call.name.clone(),
                    times,
                });
            }
            self.blocked_turns += 1;
            self.answer_now = true;
        }
        self.tool_calls += run.len() as u32;
        let results = if run.is_empty() {
            Vec::new()
        } else {
            self.dispatch(run).await
        };
        for (call, fate) in plan {
            self.record(call, fate, &results);
        }
        if self.answer_now {
            // Small models attend to the last user turn: restate the request there.
            self.transcript.messages.push(Message::user(format!(
                "(runtime) Answer my request now in plain text from the tool results, \
                 without calling tools. My request: {}",
                self.input
            )));
        }
        Ok(())
    }

    /// Answers one call of the turn, in call order: its result, the result of
    /// the identical call it was merged into, or why it was not run.
    fn record(&mut self, call: ToolCall, fate: Fate, results: &[CallResult]) {
        match fate {
            Fate::Run(at) => {
                let Some(result) = results.get(at) else {
                    return;
                };
                self.transcript.messages.push(Message::tool_result(
                    result.call.id.clone(),
                    result.call.name.clone(),
                    result.to_model_text(),
                    !result.is_ok(),
                ));
                self.add_found_tools(result);
                self.transcript.steps.push(Step::Tool {
                    result: result.clone(),
                });
            }
            Fate::Merged(at) => {
                let Some(result) = results.get(at) else {
                    return;
                };
                let same_as = result.call.id.clone();
                tracing::info!(tool = %call.name, id = %call.id, %same_as,
                    "identical call in the same turn merged: it shares the result of the first");
                // The conversation holds the first call only (see `distinct_calls`), so
                // this one gets no message of its own.
                emit(self.sink, || AgentEvent::CallMerged {
                    call: call.clone(),
                    same_as: same_as.clone(),
                });
                self.transcript.steps.push(Step::Merged { call, same_as });
            }
            Fate::Blocked(times) => {
                let earlier = match self.earlier_result(&call_key(&call)) {
                    Some(text) => format!("; its result was:\n{}\n", quoted_result(&text)),
                    None => "; its result is above. ".to_owned(),
                };
                let reason = format!(
                    "error: not run: this exact call (same tool, same arguments) was already made \
                     {} times{earlier}Give your final answer from the results; no tools are \
                     offered for it. Repeating the call ends the run.",
                    times - 1
                );
                self.transcript.messages.push(Message::tool_result(
                    call.id.clone(),
                    call.name.clone(),
                    reason.clone(),
                    true,
                ));
                self.transcript.steps.push(Step::Blocked { call, reason });
            }
        }
    }

    /// Runs calls; their results, in call order.
    async fn dispatch(&mut self, run: Vec<ToolCall>) -> Vec<CallResult> {
        let agent = self.agent;
        dispatch::run(
            &agent.executor,
            &agent.tools,
            run,
            &self.ctx,
            agent.options.parallel_tool_calls,
            self.sink,
        )
        .await
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

/// The text that gives the model the chosen skills' instructions.
fn skills_prompt(skills: &[&Skill]) -> String {
    let mut text = String::from(
        "Skills for this request follow. Apply the instructions of each skill that fits it.",
    );
    for skill in skills {
        text.push_str(&format!("\n\n<skill name=\"{}\">\n", skill.name));
        if !skill.dir.as_os_str().is_empty() && !skill.files.is_empty() {
            let files: Vec<String> = skill
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect();
            text.push_str(&format!(
                "(The skill's folder is {}; it holds {}.)\n",
                skill.dir.display(),
                files.join(", ")
            ));
        }
        text.push_str(&skill.instructions);
        text.push_str("\n</skill>");
    }
    text
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

/// Most characters of an earlier result quoted again to a model that repeats its call.
const QUOTED_RESULT_CHARS: usize = 2_000;

/// An earlier result as quoted to a model that asks for it again: whole, or its
/// first [`QUOTED_RESULT_CHARS`] characters and how much was left out.
fn quoted_result(text: &str) -> String {
    match text.char_indices().nth(QUOTED_RESULT_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!(
            "{}\n[… {} more characters not shown]",
            &text[..cut],
            text[cut..].chars().count()
        ),
    }
}

/// A call's identity for the loop guard: its tool and its arguments with
/// object keys sorted (so key order does not hide a repeat).
/// `calls` with each call identical to an earlier one (same tool, same arguments) left out.
fn distinct_calls(calls: &[ToolCall]) -> Vec<ToolCall> {
    let mut seen = std::collections::HashSet::new();
    calls
        .iter()
        .filter(|c| seen.insert(call_key(c)))
        .cloned()
        .collect()
}

fn call_key(call: &ToolCall) -> String {
    fn canonical(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for key in keys {
                    out.push_str(&Value::from(key.as_str()).to_string());
                    out.push(':');
                    canonical(&map[key], out);
                    out.push(',');
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for item in items {
                    canonical(item, out);
                    out.push(',');
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut key = call.name.clone();
    key.push('\0');
    canonical(&call.arguments, &mut key);
    key
}

#[cfg(test)]
mod tests {
    use super::{QUOTED_RESULT_CHARS, quoted_result};

    #[test]
    fn a_long_result_is_quoted_cut_with_what_was_left_out() {
        assert_eq!(quoted_result("short"), "short");
        let long = "é".repeat(QUOTED_RESULT_CHARS + 3);
        let quoted = quoted_result(&long);
        assert!(quoted.starts_with(&"é".repeat(QUOTED_RESULT_CHARS)));
        assert!(
            quoted.ends_with("\n[… 3 more characters not shown]"),
            "{quoted}"
        );
    }
}
