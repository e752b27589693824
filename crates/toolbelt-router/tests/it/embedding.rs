//! The embedding router: ranking by cosine and a cache recomputed only on change.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{BoxFuture, ToolHandle, ToolSpec, Toolset};
use toolbelt_router::{
    AnyRouter, CatalogTool, Embedder, EmbedderError, EmbeddingRouter, RECENT_QUERIES, ToolView,
};

use crate::{block_on, request, tool};

/// Embeds a text as counts of three marker words; counts texts embedded.
#[derive(Clone, Default)]
struct Markers(Arc<AtomicUsize>);

impl Embedder for Markers {
    fn model(&self) -> &str {
        "markers-v1"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        self.0.fetch_add(texts.len(), Ordering::SeqCst);
        let v = texts
            .iter()
            .map(|t| {
                ["sky", "money", "code"]
                    .iter()
                    .map(|w| t.matches(w).count() as f32 + 0.01)
                    .collect()
            })
            .collect();
        Box::pin(async move { Ok(v) })
    }
}

#[test]
fn ranks_by_similarity_and_caches_tool_vectors() {
    let counter = Markers::default();
    let router = EmbeddingRouter::new(counter.clone());
    let tools = Toolset::from_tools([tool("weather", "sky sky", "w"), tool("bank", "money", "m")]);
    let any = AnyRouter::new(router.clone());
    let d = block_on(any.route_or_fallback(&request("is the sky blue", &tools)));
    assert_eq!(d.tool_names()[0], "weather");
    block_on(any.route_or_fallback(&request("money please", &tools)));
    assert_eq!(
        (router.computed(), counter.0.load(Ordering::SeqCst)),
        (2, 4)
    );
    let changed =
        Toolset::from_tools([tool("weather", "sky code", "w"), tool("bank", "money", "m")]);
    block_on(any.route_or_fallback(&request("code", &changed)));
    assert_eq!(
        router.computed(),
        3,
        "only the changed tool is embedded again"
    );
}

/// Returns one vector too few.
struct Short;

impl Embedder for Short {
    fn model(&self) -> &str {
        "short"
    }
    fn embed<'a>(
        &'a self,
        _texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

#[test]
fn a_bad_embedder_answer_becomes_a_fallback() {
    let tools = Toolset::from_tools([tool("weather", "sky", "w")]);
    let d = block_on(
        AnyRouter::new(EmbeddingRouter::new(Short)).route_or_fallback(&request("sky", &tools)),
    );
    assert!(d.fallback);
    assert_eq!(
        d.reason,
        "router failed: embedder failed: model short returned 0 vectors for 1 texts"
    );
}

/// Cannot read any text: answers an empty vector for each.
struct Abstains;

impl Embedder for Abstains {
    fn model(&self) -> &str {
        "abstains"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        let v = vec![Vec::new(); texts.len()];
        Box::pin(async move { Ok(v) })
    }
}

#[test]
fn an_empty_query_vector_matches_no_tool() {
    let tools = Toolset::from_tools([tool("weather", "sky", "w")]);
    let d = block_on(
        AnyRouter::new(EmbeddingRouter::new(Abstains)).route_or_fallback(&request("天空", &tools)),
    );
    assert!(d.fallback);
    assert_eq!(d.reason, "embedding: no tool reaches similarity 0.00");
}

#[test]
fn a_disk_cache_means_a_restart_embeds_nothing_again() {
    let dir = tempfile::tempdir().unwrap();
    let tools = Toolset::from_tools([tool("weather", "sky sky", "w"), tool("bank", "money", "m")]);
    let progress = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&progress);
    let first = EmbeddingRouter::new(Markers::default())
        .with_disk_cache(dir.path())
        .with_batch_size(1)
        .with_progress(move |done, total| seen.lock().unwrap().push((done, total)));
    block_on(first.prepare(&tools)).unwrap();
    assert_eq!(first.computed(), 2);
    assert_eq!(*progress.lock().unwrap(), [(0, 2), (1, 2), (2, 2)]);
    assert!(dir.path().join("markers-v1.vectors").is_file());

    // A new process (a new router) reads the vectors back and embeds no tool.
    let counter = Markers::default();
    let second = EmbeddingRouter::new(counter.clone()).with_disk_cache(dir.path());
    let hits = block_on(second.rank(&tools, "sky", 2)).unwrap();
    assert_eq!(hits[0].name, "weather");
    assert_eq!(
        (second.computed(), counter.0.load(Ordering::SeqCst)),
        (0, 1),
        "only the query is embedded"
    );

    // A changed tool is embedded and appended; a torn last record is ignored.
    let changed =
        Toolset::from_tools([tool("weather", "sky code", "w"), tool("bank", "money", "m")]);
    block_on(second.prepare(&changed)).unwrap();
    assert_eq!(second.computed(), 1);
    let path = dir.path().join("markers-v1.vectors");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[1, 2, 3]);
    std::fs::write(&path, bytes).unwrap();
    let third = EmbeddingRouter::new(Markers::default()).with_disk_cache(dir.path());
    block_on(third.prepare(&changed)).unwrap();
    assert_eq!(third.computed(), 0);
}

/// Counts calls as well as texts.
#[derive(Clone, Default)]
struct Calls {
    calls: Arc<AtomicUsize>,
    texts: Markers,
}

impl Embedder for Calls {
    fn model(&self) -> &str {
        "markers-v1"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.embed(texts)
    }
}

#[test]
fn queries_embedded_ahead_are_ranked_without_embedding_again() {
    let counter = Calls::default();
    let router = EmbeddingRouter::new(counter.clone());
    let tools = Toolset::from_tools([tool("weather", "sky sky", "w"), tool("bank", "money", "m")]);
    block_on(router.prepare(&tools)).unwrap();
    let before = (
        counter.calls.load(Ordering::SeqCst),
        counter.texts.0.load(Ordering::SeqCst),
    );
    let queries: Vec<String> = ["is the sky blue", "money please", "is the sky blue", "  "]
        .map(String::from)
        .into();
    let made = block_on(router.embed_queries(&queries)).unwrap();
    assert_eq!(
        made, 2,
        "repeats and blank inputs are embedded once or not at all"
    );
    assert_eq!(
        (
            counter.calls.load(Ordering::SeqCst) - before.0,
            counter.texts.0.load(Ordering::SeqCst) - before.1
        ),
        (1, 2),
        "one call for the batch"
    );
    let sky = block_on(router.rank(&tools, "is the sky blue", 1)).unwrap();
    let money = block_on(router.rank(&tools, "money please", 1)).unwrap();
    assert_eq!(
        (sky[0].name.as_str(), money[0].name.as_str()),
        ("weather", "bank")
    );
    assert_eq!(
        counter.texts.0.load(Ordering::SeqCst) - before.1,
        2,
        "the kept vectors were used"
    );
    block_on(router.rank(&tools, "code", 1)).unwrap();
    assert_eq!(
        counter.texts.0.load(Ordering::SeqCst) - before.1,
        3,
        "an input not among them is embedded when ranked"
    );
}

#[test]
fn an_input_ranked_lately_is_not_embedded_again_and_the_oldest_leaves_first() {
    let tools = Toolset::from_tools([tool("weather", "sky sky", "w"), tool("bank", "money", "m")]);
    // (router, inputs ranked in turn, query texts embedded)
    let cases = [
        (RECENT_QUERIES, vec!["is the sky blue"; 3], 1),
        (0, vec!["is the sky blue"; 3], 3),
        // Room for two: "code" pushes out the least recently ranked ("money", which is
        // embedded again at the end), not "sky", ranked again since.
        (2, vec!["sky", "money", "sky", "code", "sky", "money"], 4),
    ];
    for (room, inputs, embedded) in cases {
        let counter = Markers::default();
        let router = EmbeddingRouter::new(counter.clone()).with_recent_queries(room);
        block_on(router.prepare(&tools)).unwrap();
        let before = counter.0.load(Ordering::SeqCst);
        let clone = router.clone();
        let mut firsts = Vec::new();
        for (i, input) in inputs.iter().enumerate() {
            // Clones share the kept vectors.
            let router = if i % 2 == 0 { &router } else { &clone };
            let hits = block_on(router.rank(&tools, input, 1)).unwrap();
            firsts.push(hits[0].name.clone());
        }
        assert_eq!(
            counter.0.load(Ordering::SeqCst) - before,
            embedded,
            "room for {room}: {inputs:?}"
        );
        // A kept vector ranks as a fresh one.
        let fresh = EmbeddingRouter::new(Markers::default()).with_recent_queries(0);
        for (input, first) in inputs.iter().zip(&firsts) {
            assert_eq!(
                &block_on(fresh.rank(&tools, input, 1)).unwrap()[0].name,
                first
            );
        }
    }
}

#[test]
fn a_slot_filled_later_adds_its_ranking_to_every_clone() {
    use toolbelt_router::{EmbeddingSlot, HybridRouter, LexicalRouter};
    let tools = Toolset::from_tools([
        tool("weather", "forecast for a city, sky", "w"),
        tool("bank", "account balance, money", "m"),
    ]);
    let slot = EmbeddingSlot::new();
    let router = AnyRouter::new(
        HybridRouter::new(LexicalRouter::default()).with_multilingual_slot(slot.clone()),
    );
    let before = block_on(router.route_or_fallback(&request("sky", &tools)));
    assert!(!before.reason.contains("multilingual"), "{}", before.reason);
    assert!(slot.get().is_none());
    slot.fill(EmbeddingRouter::new(Markers::default()))
        .unwrap_or_else(|_| panic!("an empty slot takes a router"));
    assert!(
        slot.fill(EmbeddingRouter::new(Markers::default())).is_err(),
        "the first router stays"
    );
    let after = block_on(router.route_or_fallback(&request("sky", &tools)));
    assert!(
        after.reason.contains("multilingual best weather"),
        "{}",
        after.reason
    );
    assert_eq!(after.tool_names()[0], "weather");
}

#[test]
fn an_embedding_alone_makes_the_router_sure_only_when_allowed() {
    use toolbelt_router::{HybridConfig, HybridRouter, LexicalRouter, LowConfidence, RouteOutcome};
    let tools = Toolset::from_tools([
        tool("weather", "forecast for a city, sky", "w"),
        tool("bank", "account balance, money", "m"),
    ]);
    // No word of the input is in a tool; the embedding still has a nearest tool.
    let input = "what is the capital of France";
    let router = |sure: bool| {
        AnyRouter::new(
            HybridRouter::new(LexicalRouter::default())
                .with_config(
                    HybridConfig::default()
                        .with_low_confidence(LowConfidence::NoTools)
                        .with_embedding_confidence(sure),
                )
                .with_multilingual_embedding(EmbeddingRouter::new(Markers::default())),
        )
    };
    let d = block_on(router(true).route_or_fallback(&request(input, &tools)));
    assert_eq!(d.outcome, RouteOutcome::Tools, "{}", d.reason);
    let d = block_on(router(false).route_or_fallback(&request(input, &tools)));
    assert_eq!(d.outcome, RouteOutcome::Direct, "{}", d.reason);
    assert!(d.reason.contains("multilingual best"), "{}", d.reason);
}

#[test]
fn the_same_view_is_prepared_once_and_another_view_gets_its_own_vectors() {
    let counter = Markers::default();
    let router = EmbeddingRouter::new(counter.clone());
    let tools = Toolset::from_tools([tool("weather", "sky sky", "w"), tool("bank", "money", "m")]);
    let first = block_on(router.prepare(&tools)).unwrap();
    let again = block_on(router.prepare(&tools.clone())).unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "the same view answers from the memo"
    );
    let names = |p: &[(String, Arc<[f32]>)]| p.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&first), ["weather", "bank"]);
    let bank = block_on(router.prepare(&tools.subset(["bank"]))).unwrap();
    assert_eq!(names(&bank), ["bank"]);
    assert_eq!(bank[0].1, first[1].1);
    // A changed tool is a new snapshot: its new text is embedded.
    let changed = Toolset::from_tools([tool("weather", "code", "w"), tool("bank", "money", "m")]);
    let after = block_on(router.prepare(&changed)).unwrap();
    assert_eq!(counter.0.load(Ordering::SeqCst), 3);
    assert_ne!(after[0].1, first[0].1);
}

#[test]
fn views_embed_each_tool_text_once_and_rank_one_list_each() {
    let counter = Markers::default();
    let router = EmbeddingRouter::new(counter.clone())
        .with_views([ToolView::Joined, ToolView::NameDescription]);
    // The parameter names hold "code": only the joined view sees it.
    let spec = ToolSpec::builder("deploy")
        .description("money")
        .parameters(json!({"type": "object", "properties": {"code_ref": {"type": "string"}}}))
        .build()
        .unwrap();
    let deploy = ToolHandle::new(CatalogTool::new(spec)).unwrap();
    let tools = Toolset::from_tools([tool("weather", "sky sky", "w"), deploy]);
    let views = block_on(router.rank_views(&tools, "code", 2)).unwrap();
    assert_eq!(
        counter.0.load(Ordering::SeqCst),
        4 + 1,
        "two texts per tool, one query"
    );
    let best: Vec<&str> = views.iter().map(|v| v[0].name.as_str()).collect();
    assert_eq!(best, ["deploy", "deploy"]);
    assert!(views[0][0].score > views[1][0].score, "{views:?}");
    // `rank` scores a tool by its best view.
    let hits = block_on(router.rank(&tools, "code", 1)).unwrap();
    assert_eq!(hits[0].score, views[0][0].score);
}
