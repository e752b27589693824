//! The hybrid router: adaptive k, pinned and used tools, low-confidence handling.

use pretty_assertions::assert_eq;
use toolbelt_core::BoxFuture;
use toolbelt_router::{
    AnyRouter, Embedder, EmbedderError, EmbeddingRouter, HybridConfig, HybridRouter, KeywordRouter,
    LexicalRouter, LowConfidence, RouteOutcome, ScoredTool,
};

use crate::{block_on, builtins, eval_catalog, request};

fn hybrid(config: HybridConfig) -> AnyRouter {
    AnyRouter::new(HybridRouter::default().with_config(config))
}

fn scored(scores: &[f32]) -> Vec<ScoredTool> {
    scores
        .iter()
        .enumerate()
        .map(|(i, &score)| ScoredTool {
            name: format!("t{i}"),
            score,
        })
        .collect()
}

#[test]
fn adaptive_k_follows_the_score_distribution() {
    let router = HybridRouter::default().with_config(
        HybridConfig::default()
            .with_k_range(2, 4)
            .with_relative_cutoff(0.5),
    );
    assert_eq!(router.adaptive_k(&scored(&[1.0, 0.1, 0.1])), 2, "floor");
    assert_eq!(
        router.adaptive_k(&scored(&[1.0, 0.9, 0.8, 0.2])),
        3,
        "cut at half the best"
    );
    assert_eq!(router.adaptive_k(&scored(&[1.0; 8])), 4, "ceiling");
    assert_eq!(
        router.adaptive_k(&scored(&[1.0])),
        1,
        "never more than ranked"
    );
}

#[test]
fn pinned_and_used_tools_are_always_sent() {
    let router = hybrid(HybridConfig::default().with_pinned(["ask_human"]));
    let req = request("delete the saved memory", &builtins()).with_used_tools(vec!["git".into()]);
    let names = block_on(router.route_or_fallback(&req)).tool_names();
    assert_eq!(names[0], "memory_forget");
    assert!(
        names.ends_with(&["git".to_owned(), "ask_human".to_owned()]),
        "{names:?}"
    );
    let forget = hybrid(HybridConfig::default().with_keep_used(false));
    assert!(
        !block_on(forget.route_or_fallback(&req))
            .tool_names()
            .contains(&"git".to_owned())
    );
}

#[test]
fn low_confidence_sends_all_tools_or_a_larger_k() {
    let tools = eval_catalog();
    let unbounded = HybridConfig::default().with_bounded_fallback(usize::MAX, 20);
    let all = block_on(hybrid(unbounded).route_or_fallback(&request("你好", &tools)));
    assert!(all.fallback && all.tools.len() == tools.len());
    let config = HybridConfig::default()
        .with_low_confidence(LowConfidence::TopK(15))
        .with_min_lexical_score(1000.0);
    let some = block_on(hybrid(config).route_or_fallback(&request("send an email", &tools)));
    assert!(
        !some.fallback && some.tools.len() == 15,
        "{}",
        some.tools.len()
    );
}

#[test]
fn an_unsure_router_can_send_no_tools_and_one_shared_word_is_not_sure() {
    let tools = builtins();
    let small_model = || {
        HybridConfig::default()
            .with_low_confidence(LowConfidence::NoTools)
            .with_min_lexical_words(2)
    };
    let router = hybrid(small_model());
    let question = "What is the capital of France? Answer in one word.";
    // "answer" is the only word it shares with a tool (ask_human's description).
    let d = block_on(router.route_or_fallback(&request(question, &tools)));
    assert_eq!(d.outcome, RouteOutcome::Direct, "{}", d.reason);
    assert!(d.tools.is_empty() && !d.fallback, "{:?}", d.tool_names());
    assert!(d.reason.contains("fewer than 2 words"), "{}", d.reason);
    // One word is enough by default.
    let default_words = hybrid(HybridConfig::default().with_low_confidence(LowConfidence::NoTools));
    let d = block_on(default_words.route_or_fallback(&request(question, &tools)));
    assert_eq!(d.tool_names()[0], "ask_human");
    // A word of the tool's name, or two of its text, are enough.
    for (input, first) in [
        ("read the notes", "file_read"),
        ("save this fact for later", "memory_store"),
    ] {
        let d = block_on(router.route_or_fallback(&request(input, &tools)));
        assert_eq!(d.outcome, RouteOutcome::Tools, "{input}: {}", d.reason);
        assert_eq!(d.tool_names()[0], first, "{input}");
    }
    // Tools used earlier in the conversation are still offered.
    let req = request(question, &tools).with_used_tools(vec!["file_read".into()]);
    let d = block_on(router.route_or_fallback(&req));
    assert_eq!(d.outcome, RouteOutcome::Tools);
    assert_eq!(d.tool_names(), ["file_read"]);
}

#[test]
fn file_names_in_a_request_call_for_file_tools_not_for_their_stems() {
    let router = AnyRouter::new(
        HybridRouter::default()
            .with_keyword(KeywordRouter::builtin())
            .with_config(HybridConfig::default().with_k_range(1, 3)),
    );
    let d = block_on(router.route_or_fallback(&request(
        "In config.txt, change the port from 8080 to 9090.",
        &builtins(),
    )));
    assert_eq!(d.groups, ["file_ops"], "{}", d.reason);
    assert!(
        d.tool_names().iter().any(|t| t == "file_edit"),
        "{:?}",
        d.tool_names()
    );
}

#[test]
fn group_expansion_adds_small_groups() {
    let config = HybridConfig::default()
        .with_k_range(1, 1)
        .with_expand_groups(Some(3));
    let d = block_on(hybrid(config).route_or_fallback(&request("forget that memory", &builtins())));
    assert_eq!(d.tool_names().len(), 3, "{:?}", d.tool_names());
}

/// An embedder that always fails.
struct Down;

impl Embedder for Down {
    fn model(&self) -> &str {
        "down"
    }
    fn embed<'a>(
        &'a self,
        _texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async { Err(EmbedderError::new("embedder", "down")) })
    }
}

#[test]
fn a_failing_embedder_does_not_fail_routing() {
    let router = AnyRouter::new(
        HybridRouter::new(LexicalRouter::default()).with_embedding(EmbeddingRouter::new(Down)),
    );
    let d = block_on(router.route_or_fallback(&request("run a shell command", &builtins())));
    assert_eq!(d.tool_names()[0], "shell_exec");
    assert!(d.reason.contains("embedding failed"), "{}", d.reason);
}

#[test]
fn earlier_turns_count_less_than_the_latest_one() {
    let toolset = eval_catalog();
    let req = toolbelt_router::RouteRequest::new("what's the weather in Paris tomorrow", toolset)
        .with_recent(vec!["send an email to Bob about the launch".to_owned()]);
    let names = |router: &HybridRouter| -> Vec<String> {
        block_on(router.rank_request(&req, 10))
            .tools
            .into_iter()
            .map(|t| t.name)
            .collect()
    };
    let with = names(&HybridRouter::default());
    assert!(with[0].starts_with("weather_"), "{with:?}");
    let email = with
        .iter()
        .position(|n| n.contains("email") || n.contains("mail_send"));
    assert!(
        email.is_some(),
        "the earlier turn's tool is still ranked: {with:?}"
    );
    assert!(email > Some(0));
    let without = names(
        &HybridRouter::default().with_config(HybridConfig::default().with_context_weight(0.0)),
    );
    assert!(
        !without
            .iter()
            .any(|n| n.contains("email") || n.contains("mail_send")),
        "{without:?}"
    );
}

#[test]
fn low_confidence_on_a_large_toolset_sends_a_bounded_set_with_search_tools() {
    use toolbelt_router::{RouteRequest, SearchTools};
    let catalog = eval_catalog();
    let search = SearchTools::new(LexicalRouter::default(), catalog.clone())
        .into_handle()
        .unwrap();
    let toolset = catalog.with_tools([search]);
    assert!(toolset.len() > 64);
    let router = HybridRouter::default();
    let unsure = RouteRequest::new("zzqx blorp", toolset.clone());
    let d = block_on(router.decide(&unsure));
    assert!(!d.fallback, "{}", d.reason);
    let bounded = d.bounded_fallback.expect("a bounded fallback");
    assert_eq!(
        (bounded.toolset_size, bounded.limit, bounded.search_tools),
        (toolset.len(), 64, true)
    );
    assert!(bounded.sent <= 20);
    assert!(d.tool_names().contains(&SearchTools::NAME.to_owned()));
    assert!(d.tools.len() <= 21, "{}", d.tools.len());
    assert!(
        d.reason.contains("above the fallback limit of 64"),
        "{}",
        d.reason
    );
    // Raising the limit above the toolset's size restores sending every tool when unsure.
    let all = HybridRouter::default()
        .with_config(HybridConfig::default().with_bounded_fallback(10_000, 20));
    let d = block_on(all.decide(&unsure));
    assert!(d.fallback && d.bounded_fallback.is_none());
    assert_eq!(d.tools.len(), toolset.len());
    // A small toolset still gets every tool.
    let d = block_on(router.decide(&RouteRequest::new("zzqx blorp", builtins())));
    assert!(d.fallback && d.bounded_fallback.is_none());
}

/// Records every batch of texts it embeds (as counts of a few marker words).
#[derive(Clone, Default)]
struct Recorder(std::sync::Arc<std::sync::Mutex<Vec<Vec<String>>>>);

impl Recorder {
    fn take(&self) -> Vec<Vec<String>> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl Embedder for Recorder {
    fn model(&self) -> &str {
        "recorder-v1"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        self.0.lock().unwrap().push(texts.to_vec());
        let v = texts
            .iter()
            .map(|t| {
                ["deploy", "weather", "mail"]
                    .iter()
                    .map(|w| t.to_lowercase().matches(w).count() as f32 + 0.01)
                    .collect()
            })
            .collect();
        Box::pin(async move { Ok(v) })
    }
}

#[test]
fn an_elliptical_turn_is_embedded_with_the_previous_one_and_batches_embed_it_ahead() {
    let toolset = eval_catalog();
    let recorder = Recorder::default();
    let router = HybridRouter::default().with_embedding(EmbeddingRouter::new(recorder.clone()));
    block_on(router.prepare(&toolset)).unwrap();
    recorder.take();
    let previous = "Deploy the payments service to production.";
    let follow_up =
        toolbelt_router::RouteRequest::new("Now do the same for staging.", toolset.clone())
            .with_recent(vec![previous.to_owned()]);
    let single =
        toolbelt_router::RouteRequest::new("what's the weather in Paris tomorrow", toolset);
    let joined = format!("{previous}\nNow do the same for staging.");

    // Ranked on its own, the follow-up is embedded joined to the previous turn.
    let ranking = block_on(router.rank_request(&follow_up, 5));
    assert!(
        ranking.reason.contains("elliptical turn: joined"),
        "{}",
        ranking.reason
    );
    assert_eq!(recorder.take(), vec![vec![joined.clone()]]);

    // A batch embeds each request's text (the joined one for the follow-up) in one
    // call, and ranking then embeds nothing and ranks as before.
    block_on(router.embed_requests(&[follow_up.clone(), single.clone()])).unwrap();
    assert_eq!(
        recorder.take(),
        vec![vec![
            joined,
            "what's the weather in Paris tomorrow".to_owned()
        ]]
    );
    let again = block_on(router.rank_request(&follow_up, 5));
    block_on(router.rank_request(&single, 5));
    assert_eq!(
        recorder.take(),
        Vec::<Vec<String>>::new(),
        "nothing embedded while ranking"
    );
    assert_eq!(
        again.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
        ranking.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
}

#[test]
fn a_batch_embeds_with_the_multilingual_encoder_only_the_inputs_it_ranks() {
    let toolset = eval_catalog();
    let (english, multilingual) = (Recorder::default(), Recorder::default());
    let router = HybridRouter::default()
        .with_embedding(EmbeddingRouter::new(english.clone()))
        .with_multilingual_embedding(EmbeddingRouter::new(multilingual.clone()));
    block_on(router.prepare(&toolset)).unwrap();
    english.take();
    multilingual.take();
    let en = toolbelt_router::RouteRequest::new("deploy the payments service", toolset.clone());
    let zh = toolbelt_router::RouteRequest::new("明天巴黎的天气怎么样", toolset);
    block_on(router.embed_requests(&[en.clone(), zh.clone()])).unwrap();
    // Beside MiniLM, USE ranks CJK input only: it embeds the Chinese request alone.
    assert_eq!(
        english.take(),
        vec![vec![en.input.clone(), zh.input.clone()]]
    );
    assert_eq!(multilingual.take(), vec![vec![zh.input.clone()]]);
    // Ranking then embeds nothing: each encoder found what it ranks.
    block_on(router.rank_request(&en, 5));
    block_on(router.rank_request(&zh, 5));
    assert!(english.take().is_empty());
    assert!(multilingual.take().is_empty());
}

/// A catalog tool with these parameters, all required.
fn with_params(
    name: &str,
    description: &str,
    params: serde_json::Value,
) -> toolbelt_core::ToolHandle {
    let required: Vec<String> = params
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let spec = toolbelt_core::ToolSpec::builder(name)
        .description(description)
        .parameters(
            serde_json::json!({"type": "object", "properties": params, "required": required}),
        )
        .build()
        .unwrap();
    toolbelt_core::ToolHandle::new(toolbelt_router::CatalogTool::new(spec)).unwrap()
}

#[test]
fn a_tool_needing_numbers_the_request_lacks_ranks_below_its_near_duplicate() {
    let coordinates = with_params(
        "weather_by_coordinates",
        "Current weather for a place",
        serde_json::json!({"latitude": {"type": "number"}, "longitude": {"type": "number"}}),
    );
    let city = with_params(
        "weather_by_city",
        "Current weather for a place",
        serde_json::json!({"city": {"type": "string"}}),
    );
    let tools = toolbelt_core::Toolset::from_tools([coordinates, city]);
    let rank = |weight: f32, input: &str| {
        let router =
            HybridRouter::default().with_config(HybridConfig::default().with_value_weight(weight));
        block_on(router.rank(&tools, input, 2)).tools[0]
            .name
            .clone()
    };
    // The words favour the coordinates tool; the request has no numbers for it.
    let input = "current weather by coordinates for the place Lyon";
    assert_eq!(rank(0.0, input), "weather_by_coordinates");
    assert_eq!(rank(1.0, input), "weather_by_city");
}

/// The router `toolbelt run` builds for a small model (ADR 0046): no tools when unsure, two
/// shared words for lexical confidence, the encoder never sure on its own, the workspace rule.
fn small_model_router() -> AnyRouter {
    AnyRouter::new(
        HybridRouter::standard().with_config(
            HybridConfig::default()
                .with_k_range(1, 4)
                .with_low_confidence(LowConfidence::NoTools)
                .with_min_lexical_words(2)
                .with_embedding_confidence(false)
                .with_workspace_tools(["file_search", "list_dir", "file_read"]),
        ),
    )
}

#[test]
fn explicit_workspace_questions_get_the_file_tools_even_for_small_models() {
    let router = small_model_router();
    let tools = builtins();
    let file_tools = [
        "file_read",
        "file_search",
        "list_dir",
        "file_write",
        "file_edit",
    ];
    let mut wrong = Vec::new();
    for input in [
        "Which file in this folder mentions the word invoice?",
        "How many rows does data.csv have?",
        "List the markdown files in docs",
        "Count the lines of main.py",
        "Search the project for TODO comments",
        "Find where the function parse_config is defined",
        "What's in the notes folder?",
        "Which files are in the src directory?",
        "这个文件夹里哪个文件提到了发票？",
        "统计一下 data.csv 有多少行",
        "列出 docs 目录下的文件",
    ] {
        let d = block_on(router.route_or_fallback(&request(input, &tools)));
        // Within the small model's few tools (`max_k` 4).
        if d.outcome != RouteOutcome::Tools
            || !d
                .tool_names()
                .iter()
                .any(|t| file_tools.contains(&t.as_str()))
            || d.tools.len() > 4
        {
            wrong.push(format!("{input}: {:?} ({})", d.tool_names(), d.reason));
        }
    }
    for input in [
        "What is the capital of France? Answer in one word.",
        "Tell me a joke about cats",
        "写一首关于秋天的诗",
    ] {
        let d = block_on(router.route_or_fallback(&request(input, &tools)));
        if d.outcome != RouteOutcome::Direct {
            wrong.push(format!("{input}: {:?} ({})", d.tool_names(), d.reason));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An embedder that sees every text the same: a MiniLM that adds no signal.
struct Flat;

impl Embedder for Flat {
    fn model(&self) -> &str {
        "flat"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        let v = vec![vec![1.0, 0.0]; texts.len()];
        Box::pin(async move { Ok(v) })
    }
}

/// With MiniLM beside it, BM25 reads a request's English words without the lexicon's
/// synonyms (MiniLM has its own); Chinese words keep their concepts, and without MiniLM the
/// lexical router's own factor holds.
#[test]
fn with_minilm_bm25_reads_english_requests_without_lexicon_synonyms() {
    let tools = toolbelt_core::Toolset::from_tools([
        crate::tool("file_delete", "Delete a file from the disk", "file"),
        crate::tool("http_get", "Fetch a web page", "web"),
    ]);
    let reason = |router: &HybridRouter, q: &str| block_on(router.rank(&tools, q, 2)).reason;
    let minilm =
        || HybridRouter::new(LexicalRouter::default()).with_embedding(EmbeddingRouter::new(Flat));
    let erase = reason(&minilm(), "erase the old logs");
    assert!(erase.contains("bm25 no match"), "{erase}");
    let chinese = reason(&minilm(), "删除文件");
    assert!(chinese.contains("bm25 best file_delete"), "{chinese}");
    let with_synonyms =
        minilm().with_config(HybridConfig::default().with_minilm_english_concept_factor(1.0));
    let erase = reason(&with_synonyms, "erase the old logs");
    assert!(erase.contains("bm25 best file_delete"), "{erase}");
    let lexical_only = reason(
        &HybridRouter::new(LexicalRouter::default()),
        "erase the old logs",
    );
    assert!(
        lexical_only.contains("bm25 best file_delete"),
        "{lexical_only}"
    );
}
