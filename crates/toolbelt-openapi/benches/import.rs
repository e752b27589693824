//! Importing a 300-operation document (generated here: 100 paths × get/put/delete, shared
//! schemas behind `$ref`s, one recursive): converting it, and converting and writing it to an
//! empty SQLite store, then re-importing it unchanged. `cargo bench -p toolbelt-openapi`.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolbelt_openapi::{ImportOptions, apply, convert};
use toolbelt_store::Store;

fn document(paths: usize) -> String {
    let mut items = serde_json::Map::new();
    for i in 0..paths {
        let param = json!([{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}},
                           {"name": "expand", "in": "query", "schema": {"type": "boolean"}}]);
        items.insert(
            format!("/things{i}/{{id}}"),
            json!({
                "get": {"operationId": format!("getThing{i}"), "tags": ["things"], "summary": "Read a thing",
                        "parameters": param, "responses": {"200": {"description": "ok",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}}}},
                "put": {"operationId": format!("putThing{i}"), "tags": ["things"], "summary": "Replace a thing",
                        "parameters": param, "requestBody": {"required": true, "content": {"application/json":
                        {"schema": {"$ref": "#/components/schemas/Thing"}}}}},
                "delete": {"operationId": format!("deleteThing{i}"), "summary": "Delete a thing", "parameters": param}
            }),
        );
    }
    let doc: Value = json!({
        "openapi": "3.1.0", "info": {"title": "Things", "version": "1"},
        "servers": [{"url": "https://things.example/v1"}],
        "security": [{"token": []}],
        "components": {
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer"}},
            "schemas": {
                "Thing": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "owner": {"$ref": "#/components/schemas/Owner"},
                    "parts": {"type": "array", "items": {"$ref": "#/components/schemas/Thing"}}}},
                "Owner": {"type": "object", "properties": {"login": {"type": "string"}, "id": {"type": "integer"}}}
            }
        },
        "paths": items
    });
    doc.to_string()
}

async fn store() -> Store {
    let store = Store::open("sqlite::memory:").await.unwrap();
    store.migrate().await.unwrap();
    store
}

fn bench(c: &mut Criterion) {
    let text = document(100);
    let options = ImportOptions::default().with_prefix("things_");
    assert_eq!(convert(&text, &options).unwrap().tools.len(), 300);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("openapi_import_300");
    group.sample_size(20);
    group.bench_function("convert", |b| {
        b.iter(|| convert(&text, &options).map(|i| i.tools.len()))
    });
    // The store is made and migrated outside the timed part.
    group.bench_function("convert_and_store_new", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let (text, options) = (&text, &options);
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let store = store().await;
                    let started = Instant::now();
                    let imported = convert(text, options).unwrap();
                    let report = apply(&store, &imported, "bench", false).await.unwrap();
                    total += started.elapsed();
                    assert_eq!(report.created.len(), 300);
                }
                total
            }
        });
    });
    let stored = runtime.block_on(async {
        let store = store().await;
        apply(&store, &convert(&text, &options).unwrap(), "bench", false)
            .await
            .unwrap();
        store
    });
    group.bench_function("reimport_unchanged", |b| {
        b.to_async(&runtime).iter(|| async {
            let imported = convert(&text, &options).unwrap();
            let report = apply(&stored, &imported, "bench", false).await.unwrap();
            assert_eq!(report.unchanged.len(), 300);
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
