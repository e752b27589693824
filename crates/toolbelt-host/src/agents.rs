//! [`AgentFactory`]: a stored (or configured) agent becomes a runnable [`Agent`] here, and
//! only here.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use toolbelt_agent::{Agent, ProviderCompleter};
use toolbelt_core::{Executor, Registry, ToolHandle, Toolset};
use toolbelt_llm::{ModelProfiles, ToolChoice};
use toolbelt_router::{AnyRouter, Completer, EmbeddingSlot, HybridRouter, LearnedUsage, SkillSet};
use toolbelt_store::{
    AgentSpec, Condition, LiveRegistry, Reason, Store, StoreError, Stored, ToolEntry, ToolSource,
    availability, selection_includes,
};
use toolbelt_tools::declarative::Secrets;

use crate::environment::environment;
use crate::error::HostError;
use crate::factories::AgentToolFactory;
use crate::provider::{ProviderFor, env_provider, provider_config};
use crate::router::{RERANK_MAX_TOKENS, for_profile, router_for};
use crate::skills::skill_set;

/// Turns agent records into runnable agents over one process's tools.
///
/// Every rule of a stored agent holds in what [`AgentFactory::build`] returns: its selection
/// and bound tools, version pins (an older version is built from the store), each tool's
/// availability rules (agent kinds, labels, capabilities, secrets, settings, MCP health, time
/// windows), its router settings, run options (temperature, `max_tokens`, `tool_choice`,
/// `parallel_tool_calls`, `max_iterations`, run and tool timeouts), approval policy, the
/// stored skills and its provider settings. [`AgentFactory::tools`] reports the same decision
/// tool by tool, with the reasons a tool is left out.
///
/// Agents from a configuration file are records too ([`AgentSpec::unstored`]); a stored
/// agent of the same name wins. Clones share everything.
#[derive(Clone)]
pub struct AgentFactory {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    tools: Tools,
    configured: BTreeMap<String, Stored<AgentSpec>>,
    router: HybridRouter,
    /// `router`, shared: agents with default router settings and `/route` use this one, so
    /// they share its indexes and caches.
    shared: AnyRouter,
    /// The default base router's slots: English (MiniLM) and multilingual (USE).
    english: EmbeddingSlot,
    multilingual: EmbeddingSlot,
    secrets: Secrets,
    providers: ProviderFor,
    /// Per agent, what [`AgentFactory::build`] made for its current definition: runs of an
    /// unchanged agent share one provider (its HTTP client and connections) and one executor
    /// (its concurrency permits and result cache).
    parts: std::sync::Mutex<BTreeMap<String, Parts>>,
    /// The stored skills as last indexed.
    skills: std::sync::Mutex<Option<IndexedSkills>>,
}

/// Stored skills indexed once, with the `(name, content hash)` list they came from.
struct IndexedSkills {
    seen: Vec<(String, String)>,
    set: SkillSet,
}

/// What one definition of an agent (its record at one revision) builds once.
struct Parts {
    /// The record's revision and update time when built (configured agents have 0 and 0).
    revision: (i64, i64),
    provider: toolbelt_llm::Provider,
    executor: Executor,
}

#[derive(Clone)]
enum Tools {
    /// A process without a database: the tools of one registry, no versions or rules.
    Plain(Arc<Registry>),
    /// Tools that follow the store.
    Live(Arc<LiveRegistry>),
}

impl std::fmt::Debug for AgentFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentFactory")
            .field("tools", &self.registry().len())
            .field("configured", &self.inner.configured.keys())
            .finish_non_exhaustive()
    }
}

/// Configures an [`AgentFactory`]; see [`AgentFactory::live`] and [`AgentFactory::plain`].
#[must_use]
pub struct AgentFactoryBuilder {
    tools: Tools,
    configured: Vec<Stored<AgentSpec>>,
    router: Option<HybridRouter>,
    secrets: Option<Secrets>,
    providers: Option<ProviderFor>,
    attach: Option<AgentToolFactory>,
}

impl AgentFactoryBuilder {
    /// Agents defined outside the database (a configuration file), as records.
    pub fn configured(mut self, records: impl IntoIterator<Item = Stored<AgentSpec>>) -> Self {
        self.configured.extend(records);
        self
    }

    /// The base router every agent's router settings start from (default
    /// [`HybridRouter::standard`] with the [`AgentFactory::encoder_slot`]s as its English and
    /// multilingual embedding slots); clones share its slots and caches.
    pub fn router(mut self, router: HybridRouter) -> Self {
        self.router = Some(router);
        self
    }

    /// Where `{{secret.NAME}}` values and secret conditions are looked up (default: the
    /// process's declared secrets, [`Secrets::from_env`]).
    pub fn secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = Some(secrets);
        self
    }

    /// How an agent's provider is chosen (default: [`provider_config`] over the environment).
    pub fn providers(mut self, providers: ProviderFor) -> Self {
        self.providers = Some(providers);
        self
    }

    /// Connects the agent-tool factory of the live registry, so stored agent tools run agents
    /// built by this factory.
    pub fn agent_tools(mut self, factory: &AgentToolFactory) -> Self {
        self.attach = Some(factory.clone());
        self
    }

    /// The factory.
    pub fn build(self) -> AgentFactory {
        let (english, multilingual) = (EmbeddingSlot::new(), EmbeddingSlot::new());
        let router = self.router.unwrap_or_else(|| {
            HybridRouter::standard()
                .with_embedding_slot(english.clone())
                .with_multilingual_slot(multilingual.clone())
        });
        let factory = AgentFactory {
            inner: Arc::new(Inner {
                shared: AnyRouter::new(router.clone()),
                router,
                english,
                multilingual,
                tools: self.tools,
                configured: self
                    .configured
                    .into_iter()
                    .map(|r| (r.name.clone(), r))
                    .collect(),
                secrets: self.secrets.unwrap_or_else(Secrets::from_env),
                providers: self.providers.unwrap_or_else(env_provider),
                parts: std::sync::Mutex::new(BTreeMap::new()),
                skills: std::sync::Mutex::new(None),
            }),
        };
        if let Some(tools) = self.attach {
            tools.attach(&factory);
        }
        factory
    }
}

/// Which of the base router's embedding rankings an encoder fills (docs/ROUTING.md, "The
/// default router in every entry point").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EncoderRole {
    /// An English sentence encoder (MiniLM): it ranks input that is not mostly Chinese,
    /// Japanese or Korean ([`HybridRouter::with_embedding_slot`]).
    English,
    /// A multilingual encoder (USE-multilingual): it ranks CJK input, and all input while
    /// there is no English encoder ([`HybridRouter::with_multilingual_slot`]).
    Multilingual,
}

impl EncoderRole {
    /// `english` or `multilingual`, as logs say it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::English => "english",
            Self::Multilingual => "multilingual",
        }
    }
}

/// A runnable agent and what was decided building it.
#[derive(Debug)]
#[non_exhaustive]
pub struct BuiltAgent {
    /// The agent.
    pub agent: Agent,
    /// The model its runs are counted under (empty when the provider does not say).
    pub model: String,
    /// Every tool the factory considered, offered or not, and why.
    pub tools: Vec<ToolReport>,
}

/// Whether an agent is offered a tool, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ToolReport {
    /// The tool.
    pub name: String,
    /// Whether a run of the agent is offered it.
    pub available: bool,
    /// Why (or why not): `bound to the agent`, ``selected by `…` ``, or the reasons it is kept
    /// from the agent, joined by `; `.
    pub why: String,
    /// Whether the agent's selection or bindings name it (a named tool may still be
    /// unavailable: disabled, missing, or kept from this agent by its rules).
    pub selected: bool,
    /// The version a run gets (a stored tool's pin or current version).
    pub version: Option<i64>,
    /// Where the tool comes from, for a stored tool.
    pub source: Option<ToolSource>,
}

impl AgentFactory {
    /// A factory over tools that follow the store of `live`.
    pub fn live(live: Arc<LiveRegistry>) -> AgentFactoryBuilder {
        Self::builder(Tools::Live(live))
    }

    /// A factory over the tools of `registry`, for a process without a database: selections
    /// and bindings apply; there are no versions or availability rules to apply.
    pub fn plain(registry: Arc<Registry>) -> AgentFactoryBuilder {
        Self::builder(Tools::Plain(registry))
    }

    fn builder(tools: Tools) -> AgentFactoryBuilder {
        AgentFactoryBuilder {
            tools,
            configured: Vec::new(),
            router: None,
            secrets: None,
            providers: None,
            attach: None,
        }
    }

    /// The registry the agents' tools come from.
    pub fn registry(&self) -> &Registry {
        match &self.inner.tools {
            Tools::Plain(r) => r,
            Tools::Live(l) => l.registry(),
        }
    }

    /// The registry, shared (an MCP endpoint follows its changes).
    pub fn shared_registry(&self) -> Arc<Registry> {
        match &self.inner.tools {
            Tools::Plain(r) => Arc::clone(r),
            Tools::Live(l) => l.shared_registry(),
        }
    }

    /// The live registry, when tools follow a store.
    pub fn live_registry(&self) -> Option<&Arc<LiveRegistry>> {
        match &self.inner.tools {
            Tools::Plain(_) => None,
            Tools::Live(l) => Some(l),
        }
    }

    /// The store, when there is one.
    pub fn store(&self) -> Option<&Store> {
        self.live_registry().map(|l| l.store())
    }

    /// The base router agents' routers are made from.
    pub fn router(&self) -> &HybridRouter {
        &self.inner.router
    }

    /// The base router, shared: what an agent with default router settings routes with, and
    /// what a server's `/route` previews with.
    pub fn shared_router(&self) -> &AnyRouter {
        &self.inner.shared
    }

    /// Learning from use: indexes `usage`'s requests with their tools in the base router's
    /// BM25 index (`None` removes them). Every router made from the base shares that index,
    /// so `/route`, agent runs and routed MCP endpoints rank with it from the next request.
    pub fn set_learned_usage(&self, usage: Option<LearnedUsage>) {
        self.inner.router.lexical().set_learned_usage(usage);
    }

    /// The slot the default base router takes the encoder of `role` from: fill it once the
    /// encoder has loaded and every agent (and `/route`) ranks with it from the next request.
    pub fn encoder_slot(&self, role: EncoderRole) -> &EmbeddingSlot {
        match role {
            EncoderRole::English => &self.inner.english,
            EncoderRole::Multilingual => &self.inner.multilingual,
        }
    }

    /// The router `record`'s settings ask for (`None`: every tool is sent), as its runs get.
    ///
    /// # Errors
    /// [`HostError::InvalidAgent`] at `router.strategy` or `router.max_tools`.
    pub fn router_of(&self, record: &Stored<AgentSpec>) -> Result<Option<AnyRouter>, HostError> {
        let settings = &record.router;
        // A small model's profile changes what an unsure router sends (as `toolbelt run`
        // does): no tools, except the file tools for a workspace question.
        static PROFILES: std::sync::OnceLock<ModelProfiles> = std::sync::OnceLock::new();
        let profile = PROFILES.get_or_init(ModelProfiles::builtin).find(
            &record
                .model
                .clone()
                .unwrap_or_else(|| self.model_name(record)),
        );
        let small = !profile.tools_when_unsure;
        let default = matches!(settings.strategy.as_deref(), None | Some("hybrid"))
            && settings.max_tools.is_none()
            && settings.always.is_empty()
            && settings.llm_rerank.is_none();
        if default && !small {
            return Ok(Some(self.inner.shared.clone()));
        }
        // The LLM tier asks the agent's own model (its provider is shared per revision).
        let model = match settings.llm_rerank {
            Some(_) => {
                let (provider, _) = self.parts(record)?;
                let completer = ProviderCompleter::new(provider).with_max_tokens(RERANK_MAX_TOKENS);
                Some(Arc::new(completer) as Arc<dyn Completer>)
            }
            None => None,
        };
        if small {
            let config = for_profile(self.inner.router.config().clone(), &profile, usize::MAX);
            let base = self.inner.router.clone().with_config(config);
            return router_for(&record.name, settings, &base, model);
        }
        router_for(&record.name, settings, &self.inner.router, model)
    }

    /// The secrets conditions and templates are checked against.
    pub fn secrets(&self) -> &Secrets {
        &self.inner.secrets
    }

    /// The agent `name`: stored first, then configured.
    ///
    /// # Errors
    /// [`HostError::AgentNotFound`] listing up to 20 names that exist; the database's error.
    pub async fn record(&self, name: &str) -> Result<Stored<AgentSpec>, HostError> {
        if let Some(store) = self.store() {
            match store.agents().get(name).await {
                Ok(record) => return Ok(record),
                Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(record) = self.inner.configured.get(name) {
            return Ok(record.clone());
        }
        let known = self
            .records()
            .await
            .map(|records| records.into_iter().take(20).map(|r| r.value.name).collect())
            .unwrap_or_default();
        Err(HostError::AgentNotFound {
            name: name.to_owned(),
            known,
        })
    }

    /// Every agent: stored ones, then configured ones no stored agent shadows.
    ///
    /// # Errors
    /// The database's error.
    pub async fn records(&self) -> Result<Vec<Stored<AgentSpec>>, HostError> {
        let mut out = match self.store() {
            Some(store) => store.agents().list().await?,
            None => Vec::new(),
        };
        let stored: BTreeSet<String> = out.iter().map(|r| r.name.clone()).collect();
        out.extend(
            self.inner
                .configured
                .values()
                .filter(|r| !stored.contains(&r.name))
                .cloned(),
        );
        Ok(out)
    }

    /// The model `record`'s runs are counted under (empty when no provider is configured).
    pub fn model_name(&self, record: &Stored<AgentSpec>) -> String {
        provider_config(record)
            .map(|c| c.model_or_default().to_owned())
            .unwrap_or_default()
    }

    /// The tools a run of `record` gets, and a report on every tool the process knows.
    ///
    /// # Errors
    /// [`HostError::InvalidAgent`] at `selection` when the selection does not parse (a
    /// process without a database); the database's error.
    pub async fn tools(
        &self,
        record: &Stored<AgentSpec>,
    ) -> Result<(Toolset, Vec<ToolReport>), HostError> {
        match &self.inner.tools {
            Tools::Plain(registry) => plain_tools(registry, record),
            Tools::Live(live) => self.live_tools(live, record).await,
        }
    }

    async fn live_tools(
        &self,
        live: &LiveRegistry,
        record: &Stored<AgentSpec>,
    ) -> Result<(Toolset, Vec<ToolReport>), HostError> {
        let stored = live.store().tools().list().await?;
        let tags: BTreeSet<String> = stored.iter().flat_map(|t| t.spec.tags.clone()).collect();
        let conditions: Vec<Condition> = stored
            .iter()
            .flat_map(|t| t.availability.conditions.clone())
            .collect();
        let env = environment(live.store(), &self.inner.secrets, &conditions).await?;
        let bound: BTreeSet<&str> = record.tools.iter().map(|b| b.tool.as_str()).collect();
        let mut handles: Vec<ToolHandle> = Vec::new();
        let mut report = Vec::with_capacity(stored.len());
        for tool in &stored {
            let verdict = availability(record, tool, &tags, &env);
            let mut why = None;
            if verdict.is_available() {
                match handle_at(live, tool, verdict.version).await {
                    Ok(handle) => handles.push(handle),
                    Err(reason) => why = Some(reason),
                }
            }
            let available = verdict.is_available() && why.is_none();
            let why = why.unwrap_or_else(|| {
                if !verdict.is_available() {
                    verdict
                        .reasons
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; ")
                } else if bound.contains(tool.name()) {
                    "bound to the agent".to_owned()
                } else {
                    format!("selected by `{}`", record.selection)
                }
            });
            let selected = !verdict
                .reasons
                .iter()
                .any(|r| matches!(r, Reason::NotSelected { .. }));
            report.push(ToolReport {
                name: tool.name().to_owned(),
                available,
                why,
                selected,
                version: Some(verdict.version),
                source: Some(tool.source),
            });
        }
        // Tools in the registry that are not stored (a host may add some of its own).
        let stored_names: BTreeSet<&str> = stored.iter().map(|t| t.name()).collect();
        for handle in live.registry().list().iter() {
            let name = handle.name().to_string();
            if stored_names.contains(name.as_str()) {
                continue;
            }
            let included = bound.contains(name.as_str())
                || selection_includes(&record.selection, &name, &handle.spec().tags, &tags);
            if included {
                handles.push(handle.clone());
            }
            report.push(ToolReport {
                why: if included {
                    format!("selected by `{}`", record.selection)
                } else {
                    format!("not selected by `{}` and not bound", record.selection)
                },
                name,
                available: included,
                selected: included,
                version: None,
                source: None,
            });
        }
        report.sort_by(|a, b| a.name.cmp(&b.name));
        Ok((Toolset::from_tools(handles), report))
    }

    /// Builds the runnable agent of `record`.
    ///
    /// # Errors
    /// [`HostError::Provider`] when no provider is configured; [`HostError::InvalidAgent`]
    /// naming the field the runtime refuses (`router.strategy`, `options.tool_choice` naming a
    /// tool the agent does not get, …); the database's error.
    ///
    /// The tools are decided again on every call (availability rules read the clock, secrets
    /// and settings); the provider and the executor are made once per definition of the agent
    /// (its revision) and shared by the runs of that definition, and the stored skills are
    /// indexed again only when they changed.
    pub async fn build(&self, record: &Stored<AgentSpec>) -> Result<BuiltAgent, HostError> {
        let (toolset, report) = self.tools(record).await?;
        let (provider, executor) = self.parts(record)?;
        let router = self.router_of(record)?;
        let skills = match self.store() {
            Some(store) => self.skills(store).await,
            None => SkillSet::default(),
        };
        let o = &record.options;
        let mut builder = Agent::builder(provider)
            .name(&record.name)
            .tools(toolset)
            .executor(executor)
            .skills(skills);
        if !record.description.is_empty() {
            builder = builder.description(&record.description);
        }
        if let Some(router) = router {
            builder = builder.router(router);
        }
        if let Some(prompt) = &record.system_prompt {
            builder = builder.system_prompt(prompt);
        }
        if let Some(model) = &record.model {
            builder = builder.model(model);
        }
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
            builder = builder.tool_choice(tool_choice(choice));
        }
        let agent = builder
            .build()
            .map_err(|e| HostError::invalid(&record.name, "options", e.to_string()))?;
        Ok(BuiltAgent {
            agent,
            model: self.model_name(record),
            tools: report,
        })
    }

    /// The provider and executor of `record`'s definition: made on the first build of each
    /// revision, then shared.
    fn parts(
        &self,
        record: &Stored<AgentSpec>,
    ) -> Result<(toolbelt_llm::Provider, Executor), HostError> {
        let revision = (record.revision, record.updated_at);
        let lock = || {
            self.inner
                .parts
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(p) = lock().get(&record.name)
            && p.revision == revision
        {
            return Ok((p.provider.clone(), p.executor.clone()));
        }
        // Made outside the lock (a provider may build a TLS client); two first builds of one
        // revision at once both make one, and the later is kept.
        let provider = (self.inner.providers)(record)?;
        let o = &record.options;
        let mut executor = Executor::builder().policy(o.approval.clone().unwrap_or_default());
        if let Some(ms) = o.tool_timeout_ms {
            executor = executor.default_timeout(Duration::from_millis(ms));
        }
        let executor = executor.build();
        lock().insert(
            record.name.clone(),
            Parts {
                revision,
                provider: provider.clone(),
                executor: executor.clone(),
            },
        );
        Ok((provider, executor))
    }

    /// The stored skills, indexed again only when their names or contents changed.
    async fn skills(&self, store: &Store) -> SkillSet {
        let records = match store.skills().list().await {
            Ok(records) => records,
            Err(error) => {
                tracing::warn!(%error, "cannot read the stored skills; running without them");
                return SkillSet::default();
            }
        };
        let key: Vec<(String, String)> = records
            .iter()
            .map(|r| (r.name.clone(), r.content_hash()))
            .collect();
        let mut cached = self
            .inner
            .skills
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(indexed) = cached.as_ref()
            && indexed.seen == key
        {
            return indexed.set.clone();
        }
        let set = skill_set(records);
        *cached = Some(IndexedSkills {
            seen: key,
            set: set.clone(),
        });
        set
    }

    /// Builds the agent stored or configured as `name`.
    ///
    /// # Errors
    /// As [`AgentFactory::record`] and [`AgentFactory::build`].
    pub async fn build_named(&self, name: &str) -> Result<BuiltAgent, HostError> {
        let record = self.record(name).await?;
        self.build(&record).await
    }

    /// The tools of the agent `agent` as published to a long-lived consumer (an MCP endpoint):
    /// `initial` (from [`AgentFactory::tools`], with its `report`) first, then decided again
    /// by [`AgentFactory::tools`] after every change of the registry, a new generation sent
    /// only when what is offered (names and versions) changed. The task ends when every
    /// receiver is dropped. Needs a Tokio runtime.
    pub fn follow_tools(
        &self,
        agent: String,
        initial: Toolset,
        report: &[ToolReport],
    ) -> tokio::sync::watch::Receiver<(u64, Toolset)> {
        let (tx, rx) = tokio::sync::watch::channel((0, initial));
        let agents = self.clone();
        let mut current = offered(report);
        let mut changes = agents.registry().watch();
        tokio::spawn(async move {
            let mut generation = 0;
            loop {
                tokio::select! {
                    () = tx.closed() => break,
                    changed = changes.changed() => if changed.is_err() { break },
                }
                let plan = match agents.record(&agent).await {
                    Ok(record) => agents.tools(&record).await,
                    Err(e) => Err(e),
                };
                match plan {
                    Ok((tools, report)) => {
                        let now = offered(&report);
                        if now != current {
                            current = now;
                            generation += 1;
                            if tx.send((generation, tools)).is_err() {
                                break;
                            }
                        }
                    }
                    Err(error) => {
                        tracing::warn!(%agent, %error, "the agent's tools could not be decided again");
                    }
                }
            }
        });
        rx
    }
}

/// What a report offers: the available tools with their versions.
fn offered(report: &[ToolReport]) -> Vec<(String, Option<i64>)> {
    report
        .iter()
        .filter(|r| r.available)
        .map(|r| (r.name.clone(), r.version))
        .collect()
}

/// The handle of `tool` at `version`: the live registry's when current, else built from the
/// stored version. `Err` says why it is not offered.
async fn handle_at(
    live: &LiveRegistry,
    tool: &ToolEntry,
    version: i64,
) -> Result<ToolHandle, String> {
    if version == tool.current_version {
        return live.registry().get(tool.name()).ok_or_else(|| {
            tracing::warn!(tool = %tool.name(), "stored tool not in this process's registry");
            "not built by this process".to_owned()
        });
    }
    live.tool_at(tool.name(), version).await.map_err(|error| {
        tracing::warn!(tool = %tool.name(), version, %error, "pinned version not built");
        format!("version {version} cannot be built here: {error}")
    })
}

/// The tools of a process without a database: the selection plus the bound tools.
fn plain_tools(
    registry: &Registry,
    record: &Stored<AgentSpec>,
) -> Result<(Toolset, Vec<ToolReport>), HostError> {
    let mut items: Vec<String> = Vec::new();
    if !record.selection.trim().is_empty() {
        items.push(record.selection.clone());
    }
    items.extend(record.tools.iter().map(|b| format!("tool:{}", b.tool)));
    let expr = items.join(",");
    let toolset = registry
        .select(&expr)
        .map_err(|e| HostError::invalid(&record.name, "selection", e.to_string()))?;
    let mut report: Vec<ToolReport> = registry
        .list()
        .iter()
        .map(|t| {
            let name = t.name().to_string();
            let available = toolset.contains(&name);
            ToolReport {
                why: if available {
                    format!("selected by `{expr}`")
                } else {
                    format!("not selected by `{expr}`")
                },
                name,
                available,
                selected: available,
                version: None,
                source: None,
            }
        })
        .collect();
    report.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((toolset, report))
}

fn tool_choice(choice: &str) -> ToolChoice {
    match choice {
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        other => match other.strip_prefix("tool:") {
            Some(name) => ToolChoice::Tool(name.to_owned()),
            None => ToolChoice::Auto,
        },
    }
}

impl AgentFactory {
    pub(crate) fn downgrade(&self) -> std::sync::Weak<Inner> {
        Arc::downgrade(&self.inner)
    }

    pub(crate) fn upgrade(inner: &std::sync::Weak<Inner>) -> Option<Self> {
        inner.upgrade().map(|inner| Self { inner })
    }
}
