//! Converting a 300-operation document (generated here: 100 paths × get/put/delete, a shared
//! schema behind `$ref`s) into tool drafts. Run with `cargo bench -p toolbelt-openapi`.

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolbelt_openapi::{ImportOptions, convert};

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

fn bench(c: &mut Criterion) {
    let text = document(100);
    let options = ImportOptions::default().with_prefix("things_");
    c.bench_function("convert_300_operations", |b| {
        b.iter(|| convert(&text, &options).map(|i| i.tools.len()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
