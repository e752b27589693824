//! Stored tools and agents meet the runtime: the tool file format (`toolbelt tools add -f`),
//! the factory that builds declarative tools for a [`LiveRegistry`],
//! and the facts `why` checks availability against.

use std::path::Path;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolbelt_core::{ToolHandle, ToolPolicy, ToolSpec};
use toolbelt_store::{
    Availability, Condition, Environment, LiveRegistry, Store, StoreError, ToolDraft, ToolFactory,
    ToolSource,
};
use toolbelt_tools::declarative::{CommandDef, Definition, HttpDef, Secrets};

/// A tool definition file (YAML or JSON): what `toolbelt tools add -f` reads.
///
/// ```yaml
/// name: weather
/// description: Current weather for a city
/// tags: [web]
/// parameters:
///   type: object
///   properties: {city: {type: string}}
///   required: [city]
/// http:
///   url: "https://wttr.in/{{city}}?format=j1"
///   extract: "$.current_condition[0].temp_C"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct ToolFile {
    /// The tool's name (ADR 0007 rules).
    pub name: String,
    /// What the tool does, for a model choosing among tools.
    pub description: String,
    /// Groups.
    #[serde(default)]
    pub tags: Vec<String>,
    /// JSON Schema of the arguments (default: an object with no properties).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// `read_only` or `mutating` (default: read-only for HTTP GET/HEAD, mutating otherwise).
    #[serde(default)]
    pub effect: Option<String>,
    /// Whether calls need approval (default: the effect's default).
    #[serde(default)]
    pub needs_approval: Option<bool>,
    /// Longest a call may run, in ms.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// An HTTP tool.
    #[serde(default)]
    pub http: Option<HttpDef>,
    /// A command tool.
    #[serde(default)]
    pub command: Option<CommandDef>,
    /// An agent tool: `{agent: NAME}` runs the stored agent NAME.
    #[serde(default)]
    pub agent: Option<AgentToolDef>,
    /// Who may use the tool, and when.
    #[serde(default)]
    pub availability: Option<Availability>,
    /// Why this version, shown by `toolbelt tools versions`.
    #[serde(default)]
    pub note: Option<String>,
}

/// An agent-as-tool definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct AgentToolDef {
    /// The stored agent to run.
    pub agent: String,
}

fn empty_object_schema() -> Value {
    json!({"type": "object", "properties": {}})
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> StoreError {
    StoreError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

impl ToolFile {
    /// Reads a YAML or JSON file (YAML is a superset of JSON).
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the file, the line and the field.
    pub fn read(path: &Path) -> Result<Self, StoreError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid(path.display().to_string(), e.to_string()))?;
        Self::parse(&text).map_err(|e| match e {
            StoreError::Invalid { field, reason } if field == "file" => {
                invalid(path.display().to_string(), reason)
            }
            other => other,
        })
    }

    /// Parses YAML or JSON text.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] with field `file` and the parser's message (line, column, field).
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        from_yaml(text).map_err(|reason| invalid("file", reason))
    }

    /// Checks the file and turns it into a draft, changed by `changed_by`.
    ///
    /// # Errors
    /// [`StoreError::Invalid`] naming the field: not exactly one of `http`/`command`/`agent`, a
    /// bad effect, or what [`Definition::validate`] finds.
    pub fn to_draft(&self, changed_by: &str) -> Result<ToolDraft, StoreError> {
        let kinds = [
            self.http.is_some(),
            self.command.is_some(),
            self.agent.is_some(),
        ];
        if kinds.iter().filter(|k| **k).count() != 1 {
            return Err(invalid(
                "http/command/agent",
                "a tool file needs exactly one of `http`, `command` or `agent`",
            ));
        }
        let read_only_default = self
            .http
            .as_ref()
            .is_some_and(|h| matches!(h.method.to_uppercase().as_str(), "GET" | "HEAD"))
            || self.agent.is_some();
        let mut policy = match self.effect.as_deref() {
            None if read_only_default => ToolPolicy::read_only(),
            None | Some("mutating") => ToolPolicy::mutating(),
            Some("read_only") => ToolPolicy::read_only(),
            Some(other) => {
                return Err(invalid(
                    "effect",
                    format!("`{other}` is not one of read_only, mutating"),
                ));
            }
        };
        if let Some(needs) = self.needs_approval {
            policy.needs_approval = needs;
        }
        let parameters = if self.agent.is_some() {
            agent_tool_parameters()
        } else {
            self.parameters.clone()
        };
        let mut builder = ToolSpec::builder(&self.name)
            .description(&self.description)
            .parameters(parameters)
            .tags(self.tags.clone())
            .policy(policy);
        if let Some(ms) = self.timeout_ms {
            builder = builder.timeout(Duration::from_millis(ms));
        }
        let spec = builder
            .build()
            .map_err(|e| invalid("spec", e.to_string()))?;
        // `effect: read_only` is how a tool file declares a command or a non-GET request free
        // of side effects; the definition carries it, as the declarative tool reads it there.
        let declared_read_only = self.effect.as_deref() == Some("read_only");
        let (source, definition) = if let Some(http) = &self.http {
            let mut http = http.clone();
            http.read_only |= declared_read_only;
            let definition = Definition::Http(http.clone());
            definition
                .validate(&spec)
                .map_err(|e| invalid(e.field, e.reason))?;
            (ToolSource::Declarative, json!({ "http": http }))
        } else if let Some(command) = &self.command {
            let mut command = command.clone();
            command.read_only |= declared_read_only;
            let definition = Definition::Command(command.clone());
            definition
                .validate(&spec)
                .map_err(|e| invalid(e.field, e.reason))?;
            (ToolSource::Declarative, json!({ "command": command }))
        } else if let Some(agent) = &self.agent {
            if self.parameters != empty_object_schema() {
                return Err(invalid(
                    "parameters",
                    "an agent tool takes `input` and `context`; leave `parameters` out",
                ));
            }
            (ToolSource::Agent, json!({ "agent": agent }))
        } else {
            return Err(invalid("http/command/agent", "missing"));
        };
        let mut draft = ToolDraft::new(spec, source, changed_by).with_definition(definition);
        draft.note.clone_from(&self.note);
        draft.availability.clone_from(&self.availability);
        Ok(draft)
    }
}

/// Parses YAML or JSON text into `T` with JSON's data model, so that enums are written as maps
/// (`{secret: NAME}`) in both syntaxes rather than as YAML tags.
///
/// # Errors
/// The YAML syntax error (with line and column) or the field that does not fit `T`.
pub fn from_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    let value: Value = serde_norway::from_str(text).map_err(|e| e.to_string())?;
    serde_json::from_value(value).map_err(|e| e.to_string())
}

/// The factory a [`LiveRegistry`] uses for declarative tools.
pub fn declarative_factory(secrets: Secrets) -> impl ToolFactory {
    move |spec: &ToolSpec, definition: Option<&Value>| -> Result<ToolHandle, StoreError> {
        let definition = definition.ok_or_else(|| invalid("definition", "missing"))?;
        Definition::from_value(definition)
            .and_then(|d| d.build(spec.clone(), secrets.clone()))
            .map_err(|e| invalid(e.field, e.reason))
    }
}

/// Checks that an agent tool's target agent exists (call before storing the draft).
///
/// # Errors
/// [`StoreError::Invalid`] naming `agent.agent` when no such agent is stored.
pub async fn check_agent_tool(store: &Store, draft: &ToolDraft) -> Result<(), StoreError> {
    if draft.source != ToolSource::Agent {
        return Ok(());
    }
    let name = draft
        .definition
        .as_ref()
        .and_then(|d| d.pointer("/agent/agent"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    match store.get_agent(name).await {
        Ok(_) => Ok(()),
        Err(StoreError::NotFound { .. }) => Err(invalid(
            "agent.agent",
            format!("no agent named `{name}` (`toolbelt agents ls` lists them)"),
        )),
        Err(e) => Err(e),
    }
}

/// The environment facts `why` checks conditions against: secrets the conditions name that
/// `secrets` holds, settings set as environment variables, and enabled MCP servers (this process
/// cannot probe their health, so an enabled server counts as healthy).
///
/// # Errors
/// The database's error.
pub async fn environment(
    store: &Store,
    secrets: &Secrets,
    conditions: &[Condition],
) -> Result<Environment, StoreError> {
    let mut env = Environment::now();
    for condition in conditions {
        match condition {
            Condition::Secret(name) if secrets.contains(name) => {
                env = env.with_secrets([name.clone()]);
            }
            Condition::Setting(name) if std::env::var_os(name).is_some() => {
                env = env.with_settings([name.clone()]);
            }
            _ => {}
        }
    }
    let healthy: Vec<String> = store
        .list_mcp_servers()
        .await?
        .into_iter()
        .filter(|s| s.enabled)
        .map(|s| s.name)
        .collect();
    Ok(env.with_healthy_mcp_servers(healthy))
}

/// The parameters of an agent tool: what [`toolbelt_agent::AgentTool`] reads.
pub fn agent_tool_parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "input": {"type": "string", "description": "The task or question for the agent"},
            "context": {"type": "string", "description": "Background the agent needs (optional)"}
        },
        "required": ["input"],
        "additionalProperties": false
    })
}

/// Builds a runnable [`Agent`](toolbelt_agent::Agent) from a stored agent: its options, and
/// every stored tool [`availability`](toolbelt_store::availability) grants it in `env` (pinned
/// versions through [`LiveRegistry::tool_at`], the rest from the live registry). Tools this
/// process cannot build are left out (logged). The stored router settings choose the router
/// ([`router_for`]).
///
/// # Errors
/// The database's error; [`StoreError::Invalid`] naming `agent` when the runtime refuses the
/// options (e.g. `tool_choice` names a tool the agent does not get).
pub async fn build_agent(
    live: &LiveRegistry,
    record: &toolbelt_store::AgentRecord,
    provider: toolbelt_llm::Provider,
    env: &Environment,
) -> Result<toolbelt_agent::Agent, StoreError> {
    let tools = live.store().list_tools().await?;
    let tags: std::collections::BTreeSet<String> =
        tools.iter().flat_map(|t| t.spec.tags.clone()).collect();
    let mut handles = Vec::new();
    for tool in &tools {
        let verdict = toolbelt_store::availability(record, tool, &tags, env);
        if !verdict.is_available() {
            continue;
        }
        let handle = if verdict.version == tool.current_version {
            live.registry().get(&tool.name)
        } else {
            match live.tool_at(&tool.name, verdict.version).await {
                Ok(handle) => Some(handle),
                Err(error) => {
                    tracing::warn!(tool = %tool.name, version = verdict.version, %error, "pinned version not built");
                    None
                }
            }
        };
        match handle {
            Some(handle) => handles.push(handle),
            None => {
                tracing::warn!(tool = %tool.name, agent = %record.name, "tool not in this process's registry")
            }
        }
    }
    let mut builder = toolbelt_agent::Agent::builder(provider)
        .name(&record.name)
        .description(&record.description)
        .tools(toolbelt_core::Toolset::from_tools(handles));
    if let Some(router) = router_for(&record.router)? {
        builder = builder.router(router);
    }
    if let Some(prompt) = &record.system_prompt {
        builder = builder.system_prompt(prompt);
    }
    if let Some(model) = &record.model {
        builder = builder.model(model);
    }
    let o = &record.options;
    if let Some(n) = o.max_iterations {
        builder = builder.max_iterations(n);
    }
    if let Some(parallel) = o.parallel_tool_calls {
        builder = builder.parallel_tool_calls(parallel);
    }
    if let Some(ms) = o.run_timeout_ms {
        builder = builder.run_timeout(Duration::from_millis(ms));
    }
    if let Some(t) = o.temperature {
        builder = builder.temperature(t);
    }
    if let Some(m) = o.max_tokens {
        builder = builder.max_tokens(m);
    }
    if let Some(choice) = &o.tool_choice {
        builder = builder.tool_choice(match choice.as_str() {
            "none" => toolbelt_llm::ToolChoice::None,
            "required" => toolbelt_llm::ToolChoice::Required,
            other => match other.strip_prefix("tool:") {
                Some(name) => toolbelt_llm::ToolChoice::Tool(name.to_owned()),
                None => toolbelt_llm::ToolChoice::Auto,
            },
        });
    }
    builder.build().map_err(|e| invalid("agent", e.to_string()))
}

/// The router a stored agent's settings ask for; `None` for `none` (every tool is sent).
///
/// No strategy means `hybrid`. `max_tools` caps how many tools one request gets (keyword,
/// lexical, hybrid); `always` tools are sent whatever the ranking (hybrid, and `embedding`,
/// which is the hybrid router: the embedding signal joins it where the host adds an embedder).
///
/// # Errors
/// [`StoreError::Invalid`] at `router.strategy` for an unknown strategy, or at `router.max_tools`
/// for 0 (stored rows are checked on write; this guards rows written by other means).
pub fn router_for(
    settings: &toolbelt_store::RouterSettings,
) -> Result<Option<toolbelt_router::AnyRouter>, StoreError> {
    use toolbelt_router::{
        AnyRouter, HybridConfig, HybridRouter, KeywordRouter, LexicalConfig, LexicalRouter,
    };
    if settings.max_tools == Some(0) {
        return Err(invalid("router.max_tools", "must be at least 1"));
    }
    let strategy = settings.strategy.as_deref().unwrap_or("hybrid");
    let router = match strategy {
        "none" => return Ok(None),
        "keyword" => AnyRouter::new(KeywordRouter::builtin()),
        "lexical" => {
            let mut lexical = LexicalRouter::new(LexicalConfig::default());
            if let Some(n) = settings.max_tools {
                lexical = lexical.with_top_k(n);
            }
            AnyRouter::new(lexical)
        }
        "hybrid" | "embedding" => {
            let defaults = HybridConfig::default();
            let mut config = HybridConfig::default().with_pinned(settings.always.clone());
            if let Some(n) = settings.max_tools {
                config = config.with_k_range(defaults.min_k.min(n), defaults.max_k.min(n));
            }
            AnyRouter::new(
                HybridRouter::new(LexicalRouter::new(LexicalConfig::default()))
                    .with_config(config)
                    .with_keyword(KeywordRouter::builtin()),
            )
        }
        other => {
            return Err(invalid(
                "router.strategy",
                format!("`{other}` is not one of none, keyword, lexical, embedding, hybrid"),
            ));
        }
    };
    Ok(Some(router))
}

/// Chooses the provider for a stored agent (by its `provider`/`model` fields).
pub type ProviderFor = Arc<
    dyn Fn(&toolbelt_store::AgentRecord) -> Result<toolbelt_llm::Provider, StoreError>
        + Send
        + Sync,
>;

/// The factory for agent tools: a stored tool `{agent: {agent: NAME}}` that, when called, loads
/// the stored agent NAME as it is at that moment, builds it with [`build_agent`] and runs it
/// (depth-limited like every agent tool). Call [`AgentToolFactory::attach`] once the live
/// registry exists.
#[derive(Clone)]
pub struct AgentToolFactory {
    live: Arc<OnceLock<Weak<LiveRegistry>>>,
    provider_for: ProviderFor,
    secrets: Secrets,
}

impl std::fmt::Debug for AgentToolFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentToolFactory").finish_non_exhaustive()
    }
}

impl AgentToolFactory {
    /// A factory choosing providers with `provider_for` and checking conditions with `secrets`.
    pub fn new(provider_for: ProviderFor, secrets: Secrets) -> Self {
        Self {
            live: Arc::new(OnceLock::new()),
            provider_for,
            secrets,
        }
    }

    /// Connects the factory to the live registry its agents take their tools from.
    pub fn attach(&self, live: &Arc<LiveRegistry>) {
        let _ = self.live.set(Arc::downgrade(live));
    }
}

impl ToolFactory for AgentToolFactory {
    fn build(&self, spec: &ToolSpec, definition: Option<&Value>) -> Result<ToolHandle, StoreError> {
        let agent = definition
            .and_then(|d| d.pointer("/agent/agent"))
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("agent.agent", "an agent tool names the stored agent to run"))?
            .to_owned();
        ToolHandle::new(StoredAgentTool {
            spec: spec.clone(),
            agent,
            factory: self.clone(),
        })
        .map_err(|e| invalid("spec", e.to_string()))
    }
}

struct StoredAgentTool {
    spec: ToolSpec,
    agent: String,
    factory: AgentToolFactory,
}

impl toolbelt_core::Tool for StoredAgentTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(
        &self,
        args: Value,
        ctx: toolbelt_core::ToolContext,
    ) -> Result<toolbelt_core::ToolOutput, toolbelt_core::ToolError> {
        use toolbelt_core::ToolError;
        let live = self
            .factory
            .live
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| {
                ToolError::failed("the agent tool is not attached to a live registry")
            })?;
        let failed = |e: StoreError| ToolError::failed(format!("agent `{}`: {e}", self.agent));
        let record = live.store().get_agent(&self.agent).await.map_err(failed)?;
        let provider = (self.factory.provider_for)(&record).map_err(failed)?;
        let conditions: Vec<Condition> = live
            .store()
            .list_tools()
            .await
            .map_err(failed)?
            .into_iter()
            .flat_map(|t| t.availability.conditions)
            .collect();
        let env = environment(live.store(), &self.factory.secrets, &conditions)
            .await
            .map_err(failed)?;
        let agent = build_agent(&live, &record, provider, &env)
            .await
            .map_err(failed)?;
        toolbelt_agent::AgentTool::new(agent).call(args, ctx).await
    }
}
