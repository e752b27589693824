//! Router benchmarks: lexical routing at 1,000 and 10,000 tools, index build, hybrid routing.
//!
//! Run: `CARGO_TARGET_DIR=/work/target-router cargo bench -p toolbelt-router --bench route`.

#![allow(clippy::unwrap_used, clippy::expect_used)]
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolbelt_core::{BoxFuture, ToolSpec, Toolset};
use toolbelt_router::{
    Embedder, EmbedderError, EmbeddingRouter, HybridRouter, LexicalConfig, LexicalIndex,
    LexicalRouter, RouteRequest, ToolView, catalog_toolset,
};

const VERBS: &[&str] = &[
    "get", "list", "create", "update", "delete", "search", "send", "export", "import", "sync",
    "archive", "restore", "schedule", "cancel", "approve", "analyze", "convert", "upload",
];
const NOUNS: &[&str] = &[
    "file",
    "email",
    "invoice",
    "customer",
    "ticket",
    "deployment",
    "calendar_event",
    "message",
    "payment",
    "report",
    "contact",
    "order",
    "shipment",
    "container",
    "database_table",
    "note",
    "image",
    "video",
    "forecast",
    "route",
    "task",
    "branch",
    "commit",
    "dashboard",
    "subscription",
    "refund",
    "product",
    "user",
    "team",
    "webhook",
    "secret",
    "bucket",
    "cluster",
    "metric",
];
const SYSTEMS: &[&str] = &[
    "github",
    "gitlab",
    "jira",
    "slack",
    "stripe",
    "salesforce",
    "hubspot",
    "aws",
    "gcp",
    "notion",
    "zendesk",
    "shopify",
    "google",
    "outlook",
    "postgres",
    "redis",
    "figma",
    "linear",
    "asana",
];
const WORDS: &[&str] = &[
    "quickly",
    "with",
    "filters",
    "by",
    "date",
    "owner",
    "status",
    "and",
    "returns",
    "the",
    "id",
    "in",
    "a",
    "workspace",
    "account",
    "project",
    "optional",
    "limit",
    "page",
    "cursor",
    "region",
];

/// A deterministic catalog of `n` distinct tools.
fn catalog(n: usize) -> Vec<ToolSpec> {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |m: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m as u64) as usize
    };
    (0..n)
        .map(|i| {
            let (v, o, s) = (
                VERBS[next(VERBS.len())],
                NOUNS[next(NOUNS.len())],
                SYSTEMS[next(SYSTEMS.len())],
            );
            let filler: Vec<&str> = (0..12).map(|_| WORDS[next(WORDS.len())]).collect();
            ToolSpec::builder(format!("{s}_{v}_{o}_{i}"))
                .description(format!(
                    "{v} a {} in {s} {}",
                    o.replace('_', " "),
                    filler.join(" ")
                ))
                .parameters(json!({"type": "object", "properties": {
                    "id": {"type": "string", "description": format!("The {o} id")},
                    "limit": {"type": "integer", "description": "Most results"}}}))
                .tag(s)
                .build()
                .unwrap()
        })
        .collect()
}

const QUERIES: &[&str] = &[
    "send an email to the customer about the refund",
    "list open jira tickets assigned to me",
    "删除这个 slack 消息",
    "deploy the container to the aws cluster",
    "导出上个月的发票报表",
    "what's the weather forecast tomorrow",
];

fn lexical(c: &mut Criterion) {
    let mut group = c.benchmark_group("lexical_route");
    for n in [1_000, 10_000] {
        let toolset = catalog_toolset(catalog(n));
        let router = LexicalRouter::default().with_top_k(10);
        router.prepare(&toolset);
        group.bench_with_input(BenchmarkId::from_parameter(n), &toolset, |b, toolset| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % QUERIES.len();
                black_box(router.search(toolset, QUERIES[i], 10))
            });
        });
    }
    group.finish();
}

fn build(c: &mut Criterion) {
    let specs = catalog(10_000);
    c.bench_function("index_build/10000", |b| {
        b.iter(|| black_box(LexicalIndex::from_specs(LexicalConfig::default(), &specs)))
    });
}

fn hybrid(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("hybrid_route");
    for n in [1_000, 10_000] {
        let toolset: Toolset = catalog_toolset(catalog(n));
        let router = HybridRouter::default();
        router.lexical().prepare(&toolset);
        let requests: Vec<RouteRequest> = QUERIES
            .iter()
            .map(|q| RouteRequest::new(*q, toolset.clone()))
            .collect();
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % requests.len();
                black_box(runtime.block_on(router.decide(&requests[i])))
            });
        });
    }
    group.finish();
}

/// 384 values per text from hashed words (MiniLM's width): enough to give every tool a
/// vector of its own without a model.
struct HashedWords;

impl Embedder for HashedWords {
    fn model(&self) -> &str {
        "hashed-words-384"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        let vectors = texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 384];
                for word in t.split_whitespace() {
                    let h = word.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
                        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                    });
                    v[(h % 384) as usize] += 1.0;
                    v[((h >> 20) % 384) as usize] -= 0.5;
                }
                v
            })
            .collect();
        Box::pin(async move { Ok(vectors) })
    }
}

/// The hybrid router with an embedding of two views per tool (as MiniLM's default), over
/// 2,000 tools, each input's vector kept after its first request: what a request costs
/// beside the encoder (the cosine scores of both views, and the fusion).
fn hybrid_embedded(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let toolset: Toolset = catalog_toolset(catalog(2_000));
    let embedding =
        EmbeddingRouter::new(HashedWords).with_views([ToolView::Joined, ToolView::NameDescription]);
    let router = HybridRouter::default().with_embedding(embedding);
    router.lexical().prepare(&toolset);
    let requests: Vec<RouteRequest> = QUERIES
        .iter()
        .map(|q| RouteRequest::new(*q, toolset.clone()))
        .collect();
    for r in &requests {
        runtime.block_on(router.decide(r));
    }
    c.bench_function("hybrid_route_embedded/2000", |b| {
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % requests.len();
            black_box(runtime.block_on(router.decide(&requests[i])))
        });
    });
}

criterion_group!(benches, lexical, build, hybrid, hybrid_embedded);
criterion_main!(benches);
