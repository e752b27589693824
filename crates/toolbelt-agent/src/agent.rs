//! [`Agent`] and [`AgentBuilder`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use toolbelt_core::{Executor, IntoToolHandle, ToolHandle, ToolKind, ToolName, Toolset};
use toolbelt_llm::{ModelProfile, ModelProfiles, Provider, ToolChoice};
use toolbelt_router::{AnyRouter, HybridRouter, SkillSet};

use crate::error::{AgentError, BuildError};
use crate::options::{AgentOptions, RunOptions};
use crate::run;
use crate::session::Session;
use crate::stream::RunStream;
use crate::transcript::RunOutput;

/// A provider, a toolset, an optional router and options: a working agent.
///
/// Cloning is an `Arc` clone; runs of one agent may go on concurrently.
///
/// ```no_run
/// # async fn demo(provider: toolbelt_llm::Provider, tools: toolbelt_core::Toolset) -> anyhow::Result<()> {
/// use toolbelt_agent::Agent;
///
/// let agent = Agent::builder(provider).system_prompt("You are terse.").tools(tools).build()?;
/// let out = agent.run("What is 15 * 23?").await?;
/// println!("{} ({} tokens)", out.answer, out.usage().total());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Agent {
    pub(crate) inner: Arc<AgentInner>,
}

pub(crate) struct AgentInner {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) provider: Provider,
    pub(crate) tools: Toolset,
    pub(crate) router: Option<AnyRouter>,
    pub(crate) executor: Executor,
    pub(crate) options: AgentOptions,
    /// Tools always offered when a router narrows the set (explicit pins and meta tools).
    pub(crate) pinned: Vec<String>,
    /// The agent's skills, held by a hybrid router that only chooses skills: it looks
    /// instructions up by name and chooses when the route decision lists none.
    pub(crate) skills: Option<HybridRouter>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("name", &self.inner.name)
            .field("provider", &self.inner.provider)
            .field("tools", &self.inner.tools)
            .field("router", &self.inner.router)
            .field("options", &self.inner.options)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// Starts an agent that talks to `provider`.
    pub fn builder(provider: Provider) -> AgentBuilder {
        AgentBuilder {
            name: "agent".to_owned(),
            description: None,
            provider,
            tools: Toolset::empty(),
            extra: Vec::new(),
            router: None,
            executor: None,
            options: AgentOptions::default(),
            pinned: Vec::new(),
            skills: None,
            error: None,
        }
    }

    /// The agent's name (its tool name when used as a tool).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What the agent does (its tool description when used as a tool).
    pub fn description(&self) -> &str {
        &self.inner.description
    }

    /// The tools the agent may call.
    pub fn tools(&self) -> &Toolset {
        &self.inner.tools
    }

    /// The options it runs with.
    pub fn options(&self) -> &AgentOptions {
        &self.inner.options
    }

    /// The model profile it runs with (set, or found by model id when built).
    pub fn profile(&self) -> ModelProfile {
        self.inner.options.profile.clone().unwrap_or_default()
    }

    /// The executor its tool calls go through.
    pub fn executor(&self) -> &Executor {
        &self.inner.executor
    }

    /// The skills whose instructions it may add to a run (see [`AgentBuilder::skills`]).
    pub fn skills(&self) -> Option<&SkillSet> {
        self.inner.skills.as_ref().and_then(HybridRouter::skills)
    }

    /// Runs the agent on `input` in a fresh conversation.
    ///
    /// # Errors
    /// [`AgentError`] when the run ends without an answer (iteration limit,
    /// provider failure, timeout, cancellation); it keeps the transcript.
    pub async fn run(&self, input: impl Into<String>) -> Result<RunOutput, AgentError> {
        self.run_with(input, RunOptions::new()).await
    }

    /// Runs the agent on `input` with per-run settings.
    ///
    /// # Errors
    /// As [`Agent::run`].
    pub async fn run_with(
        &self,
        input: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunOutput, AgentError> {
        run::execute(&self.inner, input.into(), options, None).await
    }

    /// Runs the agent on `input`, streaming [`AgentEvent`](crate::AgentEvent)s.
    ///
    /// The run advances as the stream is polled; dropping the stream cancels it.
    pub fn run_stream(&self, input: impl Into<String>) -> RunStream<'static> {
        self.run_stream_with(input, RunOptions::new())
    }

    /// [`Agent::run_stream`] with per-run settings.
    pub fn run_stream_with(
        &self,
        input: impl Into<String>,
        options: RunOptions,
    ) -> RunStream<'static> {
        let inner = Arc::clone(&self.inner);
        let input = input.into();
        RunStream::new(
            move |sink| async move { run::execute(&inner, input, options, Some(sink)).await },
        )
    }

    /// A conversation with this agent that continues across runs.
    pub fn session(&self) -> Session {
        Session::new(self.clone())
    }
}

/// Configures an [`Agent`]; see [`Agent::builder`].
#[must_use]
pub struct AgentBuilder {
    name: String,
    description: Option<String>,
    provider: Provider,
    tools: Toolset,
    extra: Vec<ToolHandle>,
    router: Option<AnyRouter>,
    executor: Option<Executor>,
    options: AgentOptions,
    pinned: Vec<String>,
    skills: Option<SkillSet>,
    error: Option<BuildError>,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The agent's name (default `agent`); its tool name when used as a tool.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// What the agent does; its tool description when used as a tool.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Instructions sent first in every request.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.options.system_prompt = Some(prompt.into());
        self
    }

    /// The tools the agent may call, e.g. `registry.select("file,shell")?`.
    pub fn tools(mut self, tools: Toolset) -> Self {
        self.tools = tools;
        self
    }

    /// Adds one tool to the toolset (a tool of the same name is replaced).
    pub fn tool(mut self, tool: impl IntoToolHandle) -> Self {
        match tool.into_tool_handle() {
            Ok(handle) => self.extra.push(handle),
            Err(e) => self.error = self.error.or(Some(BuildError::Tool(e))),
        }
        self
    }

    /// Routes each run's input to the tools it needs; only those are offered.
    pub fn router(mut self, router: AnyRouter) -> Self {
        self.router = Some(router);
        self
    }

    /// Skills the agent may follow. Only their names and descriptions are routed on;
    /// a run adds the instructions of the skills chosen for its request to the system
    /// message of every model request of that run, once each.
    ///
    /// The chosen skills are those the route decision lists
    /// ([`RouteDecision::skills`](toolbelt_router::RouteDecision::skills), e.g. from a
    /// [`HybridRouter::with_skills`] router) that are in this set; when the decision
    /// lists none, or there is no router, the agent chooses by the hybrid router's
    /// default rule (at most two skills, each confidently matched by name and
    /// description). An empty set is the same as none.
    pub fn skills(mut self, skills: SkillSet) -> Self {
        self.skills = (!skills.is_empty()).then_some(skills);
        self
    }

    /// Offers `tool` even when the router did not choose it. Meta tools
    /// (such as `search_tools`) are pinned without asking.
    pub fn pin(mut self, tool: impl Into<String>) -> Self {
        self.pinned.push(tool.into());
        self
    }

    /// The executor for tool calls (default [`Executor::new`]): timeouts,
    /// concurrency, approval policy and approver.
    pub fn executor(mut self, executor: Executor) -> Self {
        self.executor = Some(executor);
        self
    }

    /// Most model calls per run (default 10).
    pub fn max_iterations(mut self, limit: u32) -> Self {
        self.options.max_iterations = limit;
        self
    }

    /// Whether and which tools the model must call (default auto).
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.options.tool_choice = choice;
        self
    }

    /// Whether a forcing tool choice applies to the first model call only (default true).
    pub fn reset_tool_choice(mut self, reset: bool) -> Self {
        self.options.reset_tool_choice = reset;
        self
    }

    /// Whether one turn's calls may run concurrently (default true).
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.options.parallel_tool_calls = parallel;
        self
    }

    /// Limit on a whole run (default none).
    pub fn run_timeout(mut self, timeout: Duration) -> Self {
        self.options.run_timeout = Some(timeout);
        self
    }

    /// The model id to request (default: the provider's).
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.options.model = Some(model.into());
        self
    }

    /// Sampling temperature.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.options.temperature = Some(temperature);
        self
    }

    /// Sampling seed (for repeatable runs on servers that honour it).
    pub fn seed(mut self, seed: u64) -> Self {
        self.options.seed = Some(seed);
        self
    }

    /// Most tokens per answer (default: the model profile's).
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.options.max_tokens = Some(max_tokens);
        self
    }

    /// Whether tool calls written as text are parsed and run (default: as
    /// the model profile says).
    pub fn text_tool_calls(mut self, enabled: bool) -> Self {
        self.options.text_tool_calls = Some(enabled);
        self
    }

    /// How many times one identical call may run per run (default 2).
    pub fn max_identical_calls(mut self, limit: u32) -> Self {
        self.options.max_identical_calls = limit;
        self
    }

    /// Most tool calls per run (default 50).
    pub fn max_tool_calls(mut self, limit: u32) -> Self {
        self.options.max_tool_calls = limit;
        self
    }

    /// Corrective turns in a row for empty or unreadable answers (default 1).
    pub fn corrective_turns(mut self, turns: u32) -> Self {
        self.options.corrective_turns = turns;
        self
    }

    /// Whether streamed runs ask the provider for a stream (default true).
    pub fn stream(mut self, on: bool) -> Self {
        self.options.stream = on;
        self
    }

    /// The model's profile, instead of the built-in one for its model id.
    pub fn profile(mut self, profile: ModelProfile) -> Self {
        self.options.profile = Some(profile);
        self
    }

    /// Replaces all options at once.
    pub fn options(mut self, options: AgentOptions) -> Self {
        self.options = options;
        self
    }

    /// Checks the definition and builds the agent.
    ///
    /// # Errors
    /// [`BuildError`] when `max_iterations` is 0, when the tool choice or a
    /// pin names a tool the agent does not have, or a tool's spec is invalid.
    pub fn build(self) -> Result<Agent, BuildError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if let Err(source) = ToolName::new(&self.name) {
            return Err(BuildError::InvalidName {
                name: self.name,
                source,
            });
        }
        if self.options.max_iterations == 0 {
            return Err(BuildError::ZeroIterations);
        }
        let tools = if self.extra.is_empty() {
            self.tools
        } else {
            self.tools.with_tools(self.extra)
        };
        if let ToolChoice::Tool(name) = &self.options.tool_choice
            && !tools.contains(name)
        {
            return Err(BuildError::UnknownToolChoice {
                name: name.clone(),
                available: tools.names(),
            });
        }
        if let Some(name) = self.pinned.iter().find(|n| !tools.contains(n)) {
            return Err(BuildError::UnknownPinned {
                name: name.clone(),
                available: tools.names(),
            });
        }
        let mut pinned = self.pinned;
        pinned.extend(
            tools
                .iter()
                .filter(|t| t.spec().kind == ToolKind::Meta)
                .map(|t| t.name().to_string()),
        );
        pinned.sort();
        pinned.dedup();
        let mut options = self.options;
        if options.profile.is_none() {
            let model = options
                .model
                .as_deref()
                .or_else(|| self.provider.model())
                .unwrap_or_default();
            options.profile = Some(ModelProfiles::builtin().find(model));
        }
        let description = self
            .description
            .unwrap_or_else(|| format!("Ask the `{}` agent to carry out a task", self.name));
        Ok(Agent {
            inner: Arc::new(AgentInner {
                name: self.name,
                description,
                provider: self.provider,
                tools,
                router: self.router,
                executor: self.executor.unwrap_or_default(),
                options,
                pinned,
                skills: self
                    .skills
                    .map(|skills| HybridRouter::default().with_skills(skills)),
            }),
        })
    }
}
