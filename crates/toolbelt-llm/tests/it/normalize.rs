//! Schema normalisation per dialect: snapshots of each output, plus checks
//! that the outputs keep accepting the arguments the originals accept.

use std::collections::HashMap;

use serde_json::{Value, json};
use toolbelt_llm::{SchemaDialect, is_strict_compatible, normalize_schema};

const DIALECTS: [SchemaDialect; 4] = [
    SchemaDialect::OpenAi,
    SchemaDialect::OpenAiStrict,
    SchemaDialect::Anthropic,
    SchemaDialect::Conservative,
];

/// Arguments of a search tool.
#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
struct Search {
    /// Query text.
    query: String,
    /// Most results.
    limit: Option<u32>,
    filters: Vec<Filter>,
    mode: Mode,
    nested: Option<Nested>,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
struct Filter {
    field: String,
    value: String,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
enum Mode {
    Fast,
    Deep,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
struct Nested {
    depth: u8,
}

fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        ("derived", schemars::schema_for!(Search).to_value()),
        (
            "recursive",
            json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {"name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}, "required": ["name"]}}}),
        ),
        (
            "tagged_union_root",
            json!({"oneOf": [
            {"type": "object", "description": "add", "properties": {"op": {"const": "add"}, "a": {"type": "number"}, "b": {"type": "number"}}, "required": ["op", "a", "b"]},
            {"type": "object", "description": "negate", "properties": {"op": {"const": "neg"}, "a": {"type": "number"}}, "required": ["op", "a"]}]}),
        ),
        (
            "scalar_root",
            json!({"type": "string", "description": "A path"}),
        ),
        (
            "unions_and_keywords",
            json!({"type": "object", "required": ["a"], "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"type": ["string", "integer"]},
            "c": {"anyOf": [{"type": "string", "format": "uri"}, {"type": "null"}]},
            "d": {"allOf": [{"type": "object", "properties": {"x": {"type": "integer", "format": "int64", "default": 1}}},
                           {"properties": {"y": {"type": "boolean"}}}]},
            "e": {"type": "string", "maxLength": 10, "format": "date-time"},
            "f": {"type": "string", "enum": ["x", "y"]}}}),
        ),
        (
            "free_form",
            json!({"type": "object", "properties": {
            "meta": {"type": "object", "additionalProperties": {"type": "string"}}, "payload": true}}),
        ),
    ]
}

fn dialect_name(dialect: SchemaDialect) -> String {
    format!("{dialect:?}").to_lowercase()
}

#[test]
fn each_dialect_output_matches_its_snapshot() {
    let mut settings = insta::Settings::clone_current();
    settings.set_sort_maps(true);
    settings.bind(|| {
        for (name, schema) in schemas() {
            for dialect in DIALECTS {
                let output = normalize_schema(&schema, dialect);
                insta::assert_json_snapshot!(format!("{name}__{}", dialect_name(dialect)), output);
            }
        }
    });
}

/// Every object node of a strict schema closes its properties and requires them all.
fn assert_strict_shape(node: &Value, at: &str) {
    if let Some(obj) = node.as_object() {
        if obj.get("type").is_some_and(|t| {
            t == "object" || t.as_array().is_some_and(|a| a.contains(&json!("object")))
        }) {
            assert_eq!(obj.get("additionalProperties"), Some(&json!(false)), "{at}");
            let mut names: Vec<&String> = obj["properties"].as_object().unwrap().keys().collect();
            names.sort();
            let required: Vec<&str> = obj["required"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert_eq!(names, required, "{at}");
        }
        obj.iter()
            .for_each(|(k, v)| assert_strict_shape(v, &format!("{at}/{k}")));
    } else if let Some(list) = node.as_array() {
        list.iter()
            .enumerate()
            .for_each(|(i, v)| assert_strict_shape(v, &format!("{at}/{i}")));
    }
}

#[test]
fn strict_outputs_close_and_require_every_object() {
    for (name, schema) in schemas() {
        assert_strict_shape(
            &normalize_schema(&schema, SchemaDialect::OpenAiStrict),
            name,
        );
    }
}

#[test]
fn strict_compatibility_is_judged_per_schema() {
    let verdicts: HashMap<&str, bool> = schemas()
        .iter()
        .map(|(n, s)| (*n, is_strict_compatible(s)))
        .collect();
    let want: HashMap<&str, bool> = [
        ("derived", true),
        ("recursive", true),
        ("tagged_union_root", true),
        ("scalar_root", true),
        ("unions_and_keywords", true),
        ("free_form", false),
    ]
    .into();
    assert_eq!(verdicts, want);
}

fn accepts(schema: &Value, instance: &Value) -> bool {
    jsonschema::validator_for(schema)
        .unwrap()
        .is_valid(instance)
}

#[test]
fn normalised_schemas_accept_what_the_originals_accept() {
    let original = schemars::schema_for!(Search).to_value();
    let args = json!({"query": "rust", "limit": 5, "filters": [{"field": "lang", "value": "en"}], "mode": "Deep"});
    assert!(accepts(&original, &args));
    for dialect in [
        SchemaDialect::OpenAi,
        SchemaDialect::Anthropic,
        SchemaDialect::Conservative,
    ] {
        assert!(
            accepts(&normalize_schema(&original, dialect), &args),
            "{dialect:?}"
        );
    }
    let strict_args =
        json!({"query": "rust", "limit": null, "filters": [], "mode": "Fast", "nested": null});
    assert!(accepts(
        &normalize_schema(&original, SchemaDialect::OpenAiStrict),
        &strict_args
    ));
}

#[test]
fn recursive_references_stay_resolvable() {
    let (_, recursive) = schemas().swap_remove(1);
    let tree = json!({"root": {"name": "a", "children": [{"name": "b", "children": []}]}});
    for dialect in [
        SchemaDialect::OpenAi,
        SchemaDialect::OpenAiStrict,
        SchemaDialect::Anthropic,
    ] {
        let schema = normalize_schema(&recursive, dialect);
        assert_eq!(
            schema["properties"]["root"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"}),
            "{dialect:?}"
        );
        let tree = if dialect == SchemaDialect::OpenAiStrict {
            json!({"root": {"name": "a", "children": [{"name": "b", "children": null}]}})
        } else {
            tree.clone()
        };
        assert!(accepts(&schema, &tree), "{dialect:?}");
    }
}
