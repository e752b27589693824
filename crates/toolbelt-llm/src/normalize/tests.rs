//! Unit tests for schema normalisation helpers; whole-schema outputs are
//! snapshot-tested in `tests/it/normalize.rs`.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;

#[test]
fn nullable_covers_types_enums_unions_and_refs() {
    let cases = [
        (
            json!({"type": "string"}),
            json!({"type": ["string", "null"]}),
        ),
        (
            json!({"type": "string", "enum": ["a"]}),
            json!({"type": ["string", "null"], "enum": ["a", null]}),
        ),
        (
            json!({"anyOf": [{"type": "integer"}]}),
            json!({"anyOf": [{"type": "integer"}, {"type": "null"}]}),
        ),
        (
            json!({"$ref": "#/$defs/Node", "description": "d"}),
            json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}], "description": "d"}),
        ),
        (json!({"type": "null"}), json!({"type": "null"})),
    ];
    for (mut schema, want) in cases {
        make_nullable(&mut schema);
        assert_eq!(schema, want);
    }
}

#[test]
fn strict_compatibility_rejects_free_form_objects() {
    let plain = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let map = json!({"type": "object", "properties": {
        "m": {"type": "object", "additionalProperties": {"type": "string"}}}});
    let any = json!({"type": "object", "properties": {"v": true}});
    assert!(is_strict_compatible(&plain));
    assert!(!is_strict_compatible(&map));
    assert!(!is_strict_compatible(&any));
}

#[test]
fn non_object_input_becomes_an_empty_object() {
    for dialect in [SchemaDialect::OpenAi, SchemaDialect::Anthropic] {
        assert_eq!(
            normalize_schema(&json!(null), dialect),
            json!({"type": "object", "properties": {}})
        );
    }
    assert_eq!(
        normalize_schema(&json!(true), SchemaDialect::Conservative),
        json!({"type": "object"})
    );
}
