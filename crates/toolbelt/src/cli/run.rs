//! `toolbelt run`: run an agent in the terminal, streaming its answer.
//!
//! The answer goes to stdout as it streams; the route decision, each tool
//! call with its arguments and outcome, approval prompts and the usage go to
//! stderr, so `toolbelt run ... > answer.txt` keeps only the answer. Tool
//! calls a model writes as text are held back until the answer is known, so
//! they never reach stdout.

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use toolbelt_agent::{Agent, AgentError, AgentEvent, ApprovalPrompt, RunOptions, RunOutput};
use toolbelt_core::{
    ApprovalPolicy, BoxFuture, CallResult, CancellationToken, Executor, Registry, ToolCall,
};
use toolbelt_host::EncoderRole;
use toolbelt_llm::{ModelProfile, ModelProfiles, ProviderConfig, ProviderError};
use toolbelt_router::{
    AnyRouter, EmbeddingRouter, HybridConfig, HybridRouter, LexicalRouter, RouteDecision,
    RouteOutcome, SearchTools,
};
use toolbelt_tools::{
    AgentInfo, BuiltinConfig, Human, HumanChannel, HumanError, HumanQuestion, Memory, MemoryScope,
    Routines, Workspace,
};

/// Exit code when no provider is configured (the run never started).
const EXIT_NOT_CONFIGURED: u8 = 2;

/// Arguments of `toolbelt run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// What to ask the agent.
    input: String,
    /// The agent: one stored in the database (`toolbelt agents create`; built as the server
    /// builds it: its tools, pins, availability rules, router settings, options and approval
    /// policy), else a built-in one: `assistant` (default, all tools), `coder` (files, shell,
    /// git, todo) or `researcher` (web, files, todo).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// Tool groups or tools to give the agent, e.g. "file_ops,shell,-shell_exec" (default: the agent's).
    #[arg(long, value_name = "SELECTION")]
    groups: Option<String>,
    /// Approve every tool call without asking.
    #[arg(long, short = 'y')]
    yes: bool,
    /// `openai` (OpenAI-compatible, the default) or `anthropic`; overrides TOOLBELT_PROVIDER.
    #[arg(long, value_name = "KIND")]
    provider: Option<String>,
    /// Model id; overrides TOOLBELT_MODEL.
    #[arg(long)]
    model: Option<String>,
    /// API root; overrides OPENAI_BASE_URL (or ANTHROPIC_BASE_URL).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// API key; overrides OPENAI_API_KEY (or ANTHROPIC_API_KEY). Prefer the variable.
    #[arg(long, value_name = "KEY")]
    api_key: Option<String>,
    /// Most model calls in the run.
    #[arg(long, default_value_t = 10, value_name = "N")]
    max_iterations: u32,
    /// Stop the run after this many seconds.
    #[arg(long, value_name = "SECONDS")]
    timeout: Option<u64>,
    /// Offer every selected tool instead of routing each request to the few it needs.
    #[arg(long)]
    no_router: bool,
    /// How `shell_exec` commands are confined: `read-only`, `workspace-write` (default) or `full-access`.
    #[arg(long, value_name = "MODE", default_value = "workspace-write")]
    sandbox: toolbelt_tools::sandbox::SandboxMode,
    /// Let `shell_exec` commands use the network (denied by default).
    #[arg(long)]
    sandbox_network: bool,
    /// Add the tools of the MCP servers in this `mcpServers` JSON file (Claude Desktop / Cursor shape).
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<std::path::PathBuf>,
    /// Most tokens per answer (default: the model profile's, e.g. 1024 for small local
    /// models, 4096 for unknown ones). An answer cut at the limit exits with code 3.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_tokens: Option<u32>,
    /// Write the run's transcript (messages, steps with every routing decision, call and
    /// result, and the token usage) to this JSON file when the run ends, also when it fails.
    #[arg(long, value_name = "FILE")]
    transcript: Option<std::path::PathBuf>,
    /// Ask for whole answers instead of streams (servers that cannot stream tool calls).
    /// Also set by TOOLBELT_STREAM=off; a run switches by itself when a server breaks a stream.
    #[arg(long)]
    no_stream: bool,
    /// Most tool calls in the run.
    #[arg(long, default_value_t = 50, value_name = "N")]
    max_tool_calls: u32,
    /// How many times one identical call (same tool and arguments) may run; a further
    /// repeat is refused and the model told, and repeating it again ends the run.
    #[arg(long, default_value_t = 2, value_name = "N")]
    max_identical_calls: u32,
    /// Whether tool calls the model writes as text are run: `on` or `off`
    /// (default: the model profile's; on only for models known to write them).
    #[arg(long, value_name = "on|off", value_parser = on_off)]
    text_tool_calls: Option<bool>,
    /// A JSON file of model profiles searched before the shipped ones (also TOOLBELT_PROFILES).
    #[arg(long, value_name = "FILE")]
    profiles: Option<std::path::PathBuf>,
    /// Sampling temperature.
    #[arg(long, value_name = "T")]
    temperature: Option<f32>,
    /// Sampling seed, for repeatable runs on servers that honour it.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Where the memory (`memory_*` tools) and the routines (`routine` tool) are kept;
    /// `toolbelt serve` on the same database runs the routines.
    #[command(flatten)]
    db: super::db::DbArgs,
    /// Run without a database: the memory and routine tools then say they are not configured.
    #[arg(long)]
    no_store: bool,
    /// Route by words only, even when the embedding models are present (by default MiniLM's
    /// ranking joins the router for input that is not mostly CJK and USE-multilingual's for
    /// CJK input; loading both takes about half a second).
    #[arg(long, env = "TOOLBELT_NO_EMBEDDER", value_parser = clap::builder::FalseyValueParser::new())]
    no_embedder: bool,
    /// Skills come from the database when it holds any (`toolbelt skills add`), else from
    /// this folder when it exists; a chosen skill's instructions join the run's requests.
    #[command(flatten)]
    skills: super::skills::SkillsDir,
}

fn on_off(value: &str) -> Result<bool, String> {
    match value.to_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        other => Err(format!("`{other}`: expected `on` or `off`")),
    }
}

/// Exit code when the answer was cut at the output budget.
const EXIT_TRUNCATED: u8 = 3;

/// A built-in agent definition.
struct Preset {
    name: &'static str,
    prompt: &'static str,
    groups: Option<&'static str>,
}

const PRESETS: &[Preset] = &[
    Preset {
        name: "assistant",
        prompt: "You are a capable assistant working in the user's current directory. Use the \
                 tools when they help and check results before relying on them. Then answer the \
                 user's request directly and briefly with what you found: quote the facts, do \
                 not describe your tool calls.",
        groups: None,
    },
    Preset {
        name: "coder",
        prompt: "You are a careful software engineer working in the user's repository. Read \
                 before you edit, keep changes small, run the project's checks when you can, and \
                 report what changed.",
        groups: Some("file_ops,shell,git_ops,todo"),
    },
    Preset {
        name: "researcher",
        prompt: "You are a researcher. Gather facts from the web and local files, cite where \
                 each fact came from, and say plainly what you could not verify.",
        groups: Some("web,file_ops,todo"),
    },
];

pub(crate) async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    // A stored agent of that name wins over a built-in one, as in the server.
    if let Some(name) = args.agent.clone()
        && !args.no_store
    {
        let store = args.db.open().await?;
        match store.agents().get(&name).await {
            Ok(record) => return run_stored(args, store, record).await,
            Err(toolbelt_store::StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e).context("reading the stored agent"),
        }
    }
    let config = match provider_config(&args) {
        Ok(config) => config,
        Err(ProviderError::Config(what)) => return Ok(not_configured(&what)),
        Err(e) => return Err(e).context("reading the provider settings"),
    };
    let model = config.model_or_default().to_owned();
    let config = if args.no_stream {
        config.with_stream(false)
    } else {
        config
    };
    let profile = model_profile(args.profiles.as_deref(), &model)?;
    let provider = match config.into_provider() {
        Ok(provider) => provider,
        Err(ProviderError::Config(what)) => return Ok(not_configured(&what)),
        Err(e) => return Err(e).context("setting up the model provider"),
    };
    let preset = find_preset(args.agent.as_deref())?;
    // The encoders load on the blocking pool while the tools and MCP servers are set up.
    let encoders = Encoders::start(args.no_router || args.no_embedder);
    let registry = Arc::new(Registry::discovered().context("loading the built-in tools")?);
    // Held for the run: dropping the clients stops the MCP servers.
    let _mcp_clients = match &args.mcp_config {
        Some(path) => super::mcp::import(&registry, path, std::path::Path::new(".")).await?,
        None => Vec::new(),
    };
    let selection = args.groups.as_deref().or(preset.groups);
    let mut tools = match selection {
        Some(expr) => registry.select(expr)?,
        None => registry.all(),
    };
    let router = if args.no_router || tools.is_empty() {
        None
    } else {
        // Small models do better with their few tools alone than with a search tool beside them.
        if profile.max_tools >= SEARCH_TOOLS_FROM {
            let search = SearchTools::new(LexicalRouter::default(), tools.clone()).into_handle()?;
            tools = tools.with_tools([search]);
        }
        let rankings = encoders.wait().await;
        route_note(args.no_embedder, rankings.0.is_some(), rankings.1.is_some());
        Some(hybrid_router(&profile, tools.len(), rankings))
    };
    let policy = if args.yes {
        ApprovalPolicy::allow_all()
    } else {
        ApprovalPolicy::new()
    };
    let mut builder = Agent::builder(provider)
        .name(preset.name)
        .system_prompt(preset.prompt)
        .tools(tools)
        .executor(Executor::builder().policy(policy).build())
        .max_iterations(args.max_iterations)
        .max_tool_calls(args.max_tool_calls)
        .max_identical_calls(args.max_identical_calls)
        .stream(!args.no_stream)
        .profile(profile);
    if let Some(on) = args.text_tool_calls {
        builder = builder.text_tool_calls(on);
    }
    if let Some(t) = args.temperature {
        builder = builder.temperature(t);
    }
    if let Some(seed) = args.seed {
        builder = builder.seed(seed);
    }
    if let Some(router) = router {
        builder = builder.router(router);
    }
    if let Some(secs) = args.timeout {
        builder = builder.run_timeout(Duration::from_secs(secs));
    }
    let store = if args.no_store {
        None
    } else {
        Some(args.db.open().await?)
    };
    let skills = super::skills::for_run(store.as_ref(), &args.skills).await?;
    if !skills.is_empty() {
        builder = builder.skills(skills);
    }
    let agent = builder.build()?;
    drive(agent, &args, store, preset.prompt, &model, "default").await
}

/// Runs `agent` in the terminal until it ends: the answer to stdout, events to stderr,
/// approvals and questions asked at the terminal. `routines_agent` is the agent new
/// routines run (the `routine` tool's default).
async fn drive(
    agent: Agent,
    args: &RunArgs,
    store: Option<toolbelt_store::Store>,
    description: &str,
    model: &str,
    routines_agent: &str,
) -> anyhow::Result<ExitCode> {
    let name = agent.name().to_owned();
    let terminal = Arc::new(Terminal::new());
    // The file tools never touch the database or the secrets file, should they lie here.
    let mut kept = toolbelt_host::paths::KeptData::new().secrets_file_from_env();
    if let Ok(url) = args.db.url() {
        kept = kept.database(url);
    }
    let workspace = Workspace::current_dir()
        .context("opening the current directory")?
        .with_reserved(kept.reserved_paths());
    let info = AgentInfo::new(&name)
        .with_description(description)
        .with_model(model)
        .with_tools(agent.tools().specs());
    let shell = toolbelt_tools::ShellConfig::new().with_sandbox(
        toolbelt_tools::sandbox::SandboxPolicy::new()
            .with_mode(args.sandbox)
            .with_network(args.sandbox_network),
    );
    let mut builtins = BuiltinConfig::new(workspace)
        .with_shell(shell)
        .with_human(Human::from_arc(terminal.clone()))
        .with_agent_info(info);
    if let Some(store) = store {
        // Memory is the agent's own; routines run the server's `default` agent unless the
        // model names another, since `toolbelt serve` is what fires them.
        builtins = builtins
            .with_memory(Memory::new(
                Arc::new(store.memory()),
                MemoryScope::agent(&name),
            ))
            .with_routines(Routines::new(Arc::new(store.routines()), routines_agent));
    }
    let extensions = builtins.extensions();
    let cancel = CancellationToken::new();
    let mut options = RunOptions::new()
        .with_extensions(extensions)
        .with_cancellation(cancel.clone());
    if let Some(max) = args.max_tokens {
        options = options.with_max_tokens(max);
    }
    let mut stream = agent.run_stream_with(args.input.clone(), options);
    let mut view = View {
        transcript: args.transcript.clone(),
        ..View::default()
    };
    let interrupt = || {
        eprintln!("\n(interrupted: stopping the run)");
        cancel.cancel();
    };
    loop {
        tokio::select! {
            event = stream.next_event() => match event {
                Some(AgentEvent::ApprovalRequested(prompt)) => {
                    view.end_line();
                    // Dropping the prompt on Ctrl-C rejects the call; the run then stops.
                    tokio::select! {
                        answered = terminal.approve(prompt) => answered?,
                        _ = tokio::signal::ctrl_c() => interrupt(),
                    }
                }
                Some(event) => view.show(event)?,
                None => break,
            },
            _ = tokio::signal::ctrl_c(), if !cancel.is_cancelled() => interrupt(),
        }
    }
    Ok(view.exit)
}

/// Runs the agent stored as `record` in the database `store`: built by the host's agent
/// factory, as the server builds it (tools with their pins and availability rules, router
/// settings, options, approval policy, skills, provider settings). The flags `--provider`,
/// `--model`, `--base-url` and `--api-key` stand in for the environment under the agent's own
/// settings; `--yes`, `--temperature`, `--timeout` and `--max-tokens` override it.
async fn run_stored(
    args: RunArgs,
    store: toolbelt_store::Store,
    mut record: toolbelt_store::Stored<toolbelt_store::AgentSpec>,
) -> anyhow::Result<ExitCode> {
    if args.yes {
        record.options.approval = Some(ApprovalPolicy::allow_all());
    }
    if let Some(t) = args.temperature {
        record.options.temperature = Some(t);
    }
    if let Some(secs) = args.timeout {
        record.options.run_timeout_ms = Some(secs.saturating_mul(1000));
    }
    let config = match stored_provider_config(&args, &record) {
        Ok(config) => config,
        Err(toolbelt_host::HostError::Provider {
            source: ProviderError::Config(what),
            ..
        }) => return Ok(not_configured(&what)),
        Err(e) => return Err(e).context("reading the provider settings"),
    };
    let model = config.model_or_default().to_owned();
    let encoders = Encoders::start(args.no_embedder);
    let compiled = toolbelt_core::discovered_tools().context("loading the built-in tools")?;
    let db = toolbelt_host::load(
        store.clone(),
        compiled,
        "toolbelt run",
        toolbelt_tools::declarative::Secrets::from_env(),
    )
    .await
    .context("loading the stored tools")?;
    let no_stream = args.no_stream;
    let provider = config.with_stream(!no_stream).into_provider();
    let provider = Arc::new(std::sync::Mutex::new(Some(provider)));
    let factory = db
        .agent_factory()
        .providers(Arc::new(
            move |record: &toolbelt_store::Stored<toolbelt_store::AgentSpec>| {
                let taken = provider
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                match taken {
                    Some(provider) => {
                        provider.map_err(|source| toolbelt_host::HostError::Provider {
                            agent: record.name.clone(),
                            source,
                        })
                    }
                    // Agent tools the agent calls get their own provider from the environment.
                    None => toolbelt_host::provider_config(record)?
                        .with_stream(!no_stream)
                        .into_provider()
                        .map_err(|source| toolbelt_host::HostError::Provider {
                            agent: record.name.clone(),
                            source,
                        }),
                }
            },
        ))
        .build();
    let (english, multilingual) = encoders.wait().await;
    route_note(args.no_embedder, english.is_some(), multilingual.is_some());
    for (role, router) in [
        (EncoderRole::English, english),
        (EncoderRole::Multilingual, multilingual),
    ] {
        if let Some(router) = router {
            let _ = factory.encoder_slot(role).fill(router);
        }
    }
    let built = factory.build(&record).await?;
    drive(
        built.agent,
        &args,
        Some(store),
        &record.description,
        &model,
        &record.name,
    )
    .await
}

/// The stored agent's provider settings, with the flags standing in for the environment.
fn stored_provider_config(
    args: &RunArgs,
    record: &toolbelt_store::Stored<toolbelt_store::AgentSpec>,
) -> Result<ProviderConfig, toolbelt_host::HostError> {
    toolbelt_host::provider_config_from(record, |name| {
        let flag = match name {
            "TOOLBELT_PROVIDER" => &args.provider,
            "TOOLBELT_MODEL" => &args.model,
            "OPENAI_BASE_URL" | "ANTHROPIC_BASE_URL" => &args.base_url,
            "OPENAI_API_KEY" | "ANTHROPIC_API_KEY" => &args.api_key,
            _ => &None,
        };
        flag.clone()
            .or_else(|| std::env::var(name).ok().filter(|v| !v.is_empty()))
    })
}

/// Says what to set when no provider is configured.
fn not_configured(what: &str) -> ExitCode {
    eprintln!(
        "toolbelt run needs a model provider: {what}.\n\
         The flags --provider, --model, --base-url and --api-key override these variables."
    );
    ExitCode::from(EXIT_NOT_CONFIGURED)
}

/// The provider settings: the environment, with the flags on top.
fn provider_config(args: &RunArgs) -> Result<ProviderConfig, ProviderError> {
    let env = |name: &str| std::env::var(name).ok();
    let anthropic = args
        .provider
        .clone()
        .or_else(|| env("TOOLBELT_PROVIDER"))
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("anthropic"));
    let (url_var, key_var) = if anthropic {
        ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY")
    } else {
        ("OPENAI_BASE_URL", "OPENAI_API_KEY")
    };
    ProviderConfig::from_vars(|name| {
        let flag = match name {
            "TOOLBELT_PROVIDER" => &args.provider,
            "TOOLBELT_MODEL" => &args.model,
            n if n == url_var => &args.base_url,
            n if n == key_var => &args.api_key,
            _ => &None,
        };
        flag.clone().or_else(|| env(name))
    })
}

fn find_preset(name: Option<&str>) -> anyhow::Result<&'static Preset> {
    let name = name.unwrap_or("assistant");
    PRESETS.iter().find(|p| p.name == name).with_context(|| {
        let known: Vec<&str> = PRESETS.iter().map(|p| p.name).collect();
        format!(
            "unknown agent `{name}`: no agent of that name in the database (`toolbelt agents ls`), \
             and the built-in agents are {}",
            known.join(", ")
        )
    })
}

/// `search_tools` is offered only to models that take at least this many tools.
const SEARCH_TOOLS_FROM: usize = 4;

/// The model's profile: from `--profiles` or TOOLBELT_PROFILES first, then the shipped ones.
fn model_profile(file: Option<&std::path::Path>, model: &str) -> anyhow::Result<ModelProfile> {
    let mut profiles = ModelProfiles::builtin();
    let from_env = std::env::var_os("TOOLBELT_PROFILES")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from);
    if let Some(path) = file.map(std::path::Path::to_path_buf).or(from_env) {
        profiles.prepend(ModelProfiles::load(&path)?);
    }
    Ok(profiles.find(model))
}

/// The embedding rankings of the default router ([`super::models::encoder_loads`]), loading
/// on the blocking pool while the tools are set up. A model that fails to load is reported
/// and routing goes on without it.
struct Encoders(
    Vec<(
        EncoderRole,
        tokio::task::JoinHandle<Option<EmbeddingRouter>>,
    )>,
);

impl Encoders {
    /// Starts loading the models found (none when `off`).
    fn start(off: bool) -> Self {
        let tasks = super::models::encoder_loads(off)
            .into_iter()
            .map(|(role, load)| {
                let task = tokio::spawn(async move {
                    match load.await {
                        Ok(ranking) => Some(ranking),
                        Err(e) => {
                            let e = anyhow::Error::from_boxed(e);
                            eprintln!("note: routing without the {} encoder: {e:#}", role.as_str());
                            None
                        }
                    }
                });
                (role, task)
            })
            .collect();
        Self(tasks)
    }

    /// The rankings that loaded, `(english, multilingual)`, once every load has ended.
    async fn wait(self) -> (Option<EmbeddingRouter>, Option<EmbeddingRouter>) {
        let (mut english, mut multilingual) = (None, None);
        for (role, task) in self.0 {
            let ranking = task.await.ok().flatten();
            match role {
                EncoderRole::English => english = ranking,
                EncoderRole::Multilingual => multilingual = ranking,
            }
        }
        (english, multilingual)
    }
}

/// Says on stderr how the run routes, once, when it ranks by words alone although
/// embeddings were asked for (a model missing or failing to load) or with `--verbose`;
/// `english` and `multilingual` say which encoders loaded.
fn route_note(off: bool, english: bool, multilingual: bool) {
    if off {
        return;
    }
    if !english && !multilingual || super::models::verbose() {
        eprintln!("{}", super::models::router_line(english, multilingual));
    }
}

/// The hybrid router for the model's profile (`toolbelt_host::for_profile`: at most
/// `max_tools` ranked tools; for small models none when unsure, except the file tools for a
/// workspace question; else the best `max_tools` when the toolset is larger than that).
fn hybrid_router(
    profile: &ModelProfile,
    toolset: usize,
    (english, multilingual): (Option<EmbeddingRouter>, Option<EmbeddingRouter>),
) -> AnyRouter {
    let config = HybridConfig::default().with_pinned(vec![SearchTools::NAME.to_owned()]);
    let config = toolbelt_host::for_profile(config, profile, toolset);
    let mut router = HybridRouter::standard().with_config(config);
    if let Some(english) = english {
        router = router.with_embedding(english);
    }
    if let Some(multilingual) = multilingual {
        router = router.with_multilingual_embedding(multilingual);
    }
    AnyRouter::new(router)
}

/// Prints a run's events: the answer to stdout, everything else to stderr.
struct View {
    /// Whether the cursor is in the middle of streamed answer text.
    mid_line: bool,
    exit: ExitCode,
    /// Where to write the transcript when the run ends (`--transcript`).
    transcript: Option<std::path::PathBuf>,
}

impl Default for View {
    fn default() -> Self {
        Self {
            mid_line: false,
            exit: ExitCode::SUCCESS,
            transcript: None,
        }
    }
}

impl View {
    fn show(&mut self, event: AgentEvent) -> anyhow::Result<()> {
        match event {
            AgentEvent::TextDelta(text) => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()?;
                self.mid_line = !text.ends_with('\n');
            }
            AgentEvent::Routed(decision) => self.note(&route_line(&decision)),
            AgentEvent::ToolCallStarted(call) => self.note(&format!("→ {}", call_line(&call))),
            AgentEvent::ToolCallFinished(result) => self.note(&result_line(&result)),
            AgentEvent::ToolsAdded { by, tools } => {
                self.note(&format!("  {by} added: {}", tools.join(", ")));
            }
            AgentEvent::SkillsAdded { skills } => {
                self.note(&format!("· skills: {}", skills.join(", ")));
            }
            AgentEvent::ToolProgress(p) => {
                let of = p.total.map(|t| format!(" of {t}")).unwrap_or_default();
                let message = p.message.map(|m| format!(": {m}")).unwrap_or_default();
                self.note(&format!("  … {} {}{of}{message}", p.tool, p.progress));
            }
            AgentEvent::Finished(output) => self.finished(&output),
            AgentEvent::Failed(error) => self.failed(&error),
            _ => {}
        }
        Ok(())
    }

    fn end_line(&mut self) {
        if self.mid_line {
            println!();
            self.mid_line = false;
        }
    }

    fn note(&mut self, line: &str) {
        self.end_line();
        eprintln!("{line}");
    }

    fn finished(&mut self, output: &RunOutput) {
        // A clarifying question or a non-streamed answer has not been printed yet.
        let streamed = output.transcript.model_calls() > 0 && !output.is_clarification();
        if !streamed && !output.answer.is_empty() {
            print!("{}", output.answer);
            self.mid_line = true;
        }
        self.end_line();
        let usage = output.usage();
        eprintln!(
            "({}, {} tokens in, {} out)",
            count(output.transcript.model_calls(), "model call"),
            usage.input_tokens,
            usage.output_tokens
        );
        if output.is_truncated() {
            eprintln!(
                "warning: the answer was cut at the output limit (--max-tokens); it is incomplete"
            );
            self.exit = ExitCode::from(EXIT_TRUNCATED);
        }
        self.write_transcript(&output.transcript);
    }

    /// Writes the transcript where `--transcript` says; a file that cannot be written
    /// fails the command (exit 1), since whoever asked for it relies on it.
    fn write_transcript(&mut self, transcript: &toolbelt_agent::Transcript) {
        let Some(path) = &self.transcript else {
            return;
        };
        let written = serde_json::to_vec_pretty(transcript)
            .map_err(std::io::Error::other)
            .and_then(|json| std::fs::write(path, json));
        if let Err(e) = written {
            eprintln!(
                "error: --transcript {}: could not write the transcript: {e}",
                path.display()
            );
            self.exit = ExitCode::FAILURE;
        }
    }

    fn failed(&mut self, error: &AgentError) {
        self.end_line();
        let mut message = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        eprintln!("error: {message}");
        let transcript = error.transcript();
        eprintln!(
            "({} and {} before it stopped)",
            count(transcript.model_calls(), "model call"),
            count(transcript.tool_results().count(), "tool call")
        );
        self.exit = ExitCode::FAILURE;
        self.write_transcript(transcript);
    }
}

/// `1 model call`, `2 model calls`.
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn route_line(d: &RouteDecision) -> String {
    match &d.outcome {
        RouteOutcome::Direct => format!("· {} router: no tools needed", d.router),
        RouteOutcome::Clarify { .. } => format!("· {} router: the request is ambiguous", d.router),
        _ if d.fallback => format!("· {} router: unsure, offering every tool", d.router),
        _ => format!("· {} router: {}", d.router, d.tool_names().join(", ")),
    }
}

fn call_line(call: &ToolCall) -> String {
    format!("{} {}", call.name, clip(&call.arguments.to_string(), 200))
}

fn result_line(result: &CallResult) -> String {
    let ms = result.duration.as_millis();
    match &result.outcome {
        Ok(out) => format!(
            "  ✓ {} ({ms} ms): {}",
            result.call.name,
            clip(&out.text, 160)
        ),
        Err(e) => format!("  ✗ {} ({ms} ms): {e}", result.call.name),
    }
}

/// The first line of `text`, at most `max` characters, marked when cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let cut = line.chars().count() > max || line.len() < text.trim_end().len();
    let mut short: String = line.chars().take(max).collect();
    if cut {
        short.push('…');
    }
    short
}

/// The terminal as the one reader of stdin: approval prompts and `ask_human` share it.
struct Terminal {
    input: Mutex<BufReader<tokio::io::Stdin>>,
}

impl Terminal {
    fn new() -> Self {
        Self {
            input: Mutex::new(BufReader::new(tokio::io::stdin())),
        }
    }

    /// Prints `prompt` on stderr and reads one line; `None` at end of input.
    async fn ask_line(&self, prompt: &str) -> std::io::Result<Option<String>> {
        let mut input = self.input.lock().await;
        let mut err = tokio::io::stderr();
        err.write_all(prompt.as_bytes()).await?;
        err.flush().await?;
        let mut line = String::new();
        if input.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        Ok(Some(line.trim().to_owned()))
    }

    /// Asks whether `prompt`'s call may run: yes, no (with a reason) or edit its arguments.
    async fn approve(&self, prompt: ApprovalPrompt) -> std::io::Result<()> {
        let call = &prompt.request().call;
        let args = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
        let question = format!(
            "? run `{}` with {args}\n  [y]es / [n]o / [e]dit > ",
            call.name
        );
        loop {
            let Some(answer) = self.ask_line(&question).await? else {
                prompt.reject("no answer: the terminal input is closed");
                return Ok(());
            };
            match answer.to_lowercase().as_str() {
                "y" | "yes" => {
                    prompt.approve();
                    return Ok(());
                }
                "n" | "no" => {
                    let reason = self
                        .ask_line("  why (optional, shown to the model) > ")
                        .await?
                        .filter(|r| !r.is_empty())
                        .unwrap_or_else(|| "the user declined".to_owned());
                    prompt.reject(reason);
                    return Ok(());
                }
                "e" | "edit" => {
                    let Some(text) = self.ask_line("  new arguments as JSON > ").await? else {
                        prompt.reject("no answer: the terminal input is closed");
                        return Ok(());
                    };
                    match serde_json::from_str::<Value>(&text) {
                        Ok(edited) => {
                            prompt.edit(edited);
                            return Ok(());
                        }
                        Err(e) => eprintln!("  not JSON ({e}); try again"),
                    }
                }
                _ => eprintln!("  answer y, n or e"),
            }
        }
    }
}

impl HumanChannel for Terminal {
    fn ask(&self, question: HumanQuestion) -> BoxFuture<'_, Result<String, HumanError>> {
        Box::pin(async move {
            let mut prompt = format!("\n? {}\n", question.question);
            for (i, choice) in question.choices.iter().enumerate() {
                prompt.push_str(&format!("  {}) {choice}\n", i + 1));
            }
            prompt.push_str("> ");
            let answer = self.ask_line(&prompt).await?.ok_or(HumanError::Closed)?;
            let picked = answer
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| question.choices.get(i));
            Ok(picked.cloned().unwrap_or(answer))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_in_number() {
        assert_eq!(count(1, "model call"), "1 model call");
        assert_eq!(count(0, "tool call"), "0 tool calls");
        assert_eq!(count(2, "tool call"), "2 tool calls");
    }

    #[test]
    fn clip_keeps_the_first_line_and_marks_cuts() {
        assert_eq!(clip("short", 10), "short");
        assert_eq!(clip("one\ntwo", 10), "one…");
        assert_eq!(clip("abcdefghijkl", 5), "abcde…");
    }

    #[test]
    fn an_unknown_agent_names_the_known_ones() {
        let err = find_preset(Some("poet")).err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "unknown agent `poet`: no agent of that name in the database (`toolbelt agents ls`), \
                 and the built-in agents are assistant, coder, researcher"
            )
        );
    }
}
