//! Property tests (proptest) of the text tool-call parser, the lenient JSON
//! repair and schema normalisation, plus the `$ref` budget.
//!
//! Case counts follow `PROPTEST_CASES` (default 256, what CI runs);
//! `scripts/fuzz.sh` runs these with many more cases for a set time.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use toolbelt_llm::{
    MAX_INLINED_NODES, MAX_SCHEMA_DEPTH, SchemaDialect, SchemaError, normalize_schema,
    parse_tool_calls, repair_json, try_normalize_schema,
};

const DIALECTS: [SchemaDialect; 4] = [
    SchemaDialect::OpenAi,
    SchemaDialect::OpenAiStrict,
    SchemaDialect::Anthropic,
    SchemaDialect::Conservative,
];

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Text built from the fragments the parser reacts to, so it reaches deep states.
fn call_like_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<tool_call>".to_owned()),
        Just("</tool_call>".to_owned()),
        Just("<tool_call name=\"x\">".to_owned()),
        Just("<parameters>".to_owned()),
        Just("</parameters>".to_owned()),
        Just("<parameter name=\"a\">".to_owned()),
        Just("</parameter>".to_owned()),
        Just("{\"name\": \"calc\", \"arguments\": ".to_owned()),
        Just("{\"tool_calls\": [".to_owned()),
        Just("{'function': {'name': 'f', 'arguments': '".to_owned()),
        Just("[TOOL_CALLS] [".to_owned()),
        Just("```json\n".to_owned()),
        Just("```".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\\".to_owned()),
        Just("True".to_owned()),
        Just("None".to_owned()),
        Just("// c\n".to_owned()),
        Just("é漢🙂".to_owned()),
        "[a-z0-9 ]{0,6}",
    ];
    prop::collection::vec(piece, 0..40).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn parse_tool_calls_never_panics_on_any_text(text in any::<String>()) {
        let _ = parse_tool_calls(&text);
    }

    #[test]
    fn parse_tool_calls_never_panics_on_call_like_text(text in call_like_text()) {
        let parsed = parse_tool_calls(&text);
        for call in &parsed.tool_calls {
            prop_assert!(!call.id.is_empty());
        }
    }

    #[test]
    fn a_tagged_call_is_found_with_its_name_and_arguments(
        before in "[a-zA-Z .]{0,20}",
        name in "[a-z][a-z0-9_]{0,15}",
        args in prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..4),
    ) {
        let args = Value::Object(args.into_iter().collect());
        let call = json!({"name": name, "arguments": args});
        let text = format!("{before}<tool_call>{call}</tool_call>");
        let parsed = parse_tool_calls(&text);
        prop_assert_eq!(parsed.tool_calls.len(), 1);
        prop_assert_eq!(&parsed.tool_calls[0].name, &name);
        prop_assert_eq!(&parsed.tool_calls[0].arguments, &args);
        prop_assert_eq!(parsed.text, before.trim());
    }

    #[test]
    fn repair_json_never_panics(text in any::<String>()) {
        let _ = repair_json(&text);
    }

    #[test]
    fn repair_json_never_panics_on_json_like_text(text in call_like_text()) {
        let _ = repair_json(&text);
    }

    #[test]
    fn repair_json_reads_valid_json_unchanged(value in json_value()) {
        prop_assert_eq!(repair_json(&value.to_string()), Some(value.clone()));
        let pretty = serde_json::to_string_pretty(&value).unwrap();
        prop_assert_eq!(repair_json(&pretty), Some(value));
    }

    #[test]
    fn normalize_never_panics_and_gives_an_object_root(schema in json_value()) {
        for dialect in DIALECTS {
            let out = normalize_schema(&schema, dialect);
            prop_assert!(out.is_object(), "{dialect:?}: {out}");
        }
    }

    #[test]
    fn normalize_never_panics_on_schema_like_values(
        props in prop::collection::btree_map("[a-z]{1,5}", schema_node(), 0..5),
        defs in prop::collection::btree_map("[A-D]", schema_node(), 0..4),
    ) {
        let schema = json!({
            "type": "object",
            "properties": Value::Object(props.into_iter().collect()),
            "$defs": Value::Object(defs.into_iter().collect()),
        });
        for dialect in DIALECTS {
            let out = normalize_schema(&schema, dialect);
            prop_assert_eq!(&out["type"], &json!("object"));
        }
    }
}

/// Schema-shaped nodes, with `$ref`s to definitions `A`-`D` (which may recurse).
fn schema_node() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": ["integer", "null"]})),
        Just(json!({"$ref": "#/$defs/A"})),
        Just(json!({"$ref": "#/$defs/B"})),
        Just(json!({"$ref": "#/definitions/C"})),
        Just(json!({"$ref": "#/$defs/D", "description": "d"})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!(true)),
        Just(json!({"enum": [1, "a", null]})),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({"anyOf": v})),
            prop::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({"oneOf": v})),
            prop::collection::vec(inner.clone(), 1..3).prop_map(|v| json!({"allOf": v})),
            inner
                .clone()
                .prop_map(|i| json!({"type": "array", "items": i})),
            prop::collection::btree_map("[a-z]{1,4}", inner, 1..4).prop_map(|m| json!({
                "type": "object",
                "properties": Value::Object(m.into_iter().collect()),
                "required": [],
            })),
        ]
    })
}

/// `D0 = {a: D1, b: D1}`, `D1 = {a: D2, b: D2}`, ...: 2^levels nodes once inlined.
fn ref_bomb(levels: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..levels {
        let next = if i + 1 == levels {
            json!({"type": "string"})
        } else {
            json!({"$ref": format!("#/$defs/D{}", i + 1)})
        };
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": {"a": next.clone(), "b": next}}),
        );
    }
    json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/D0"}}, "$defs": defs})
}

#[test]
fn a_ref_bomb_is_refused_with_a_clear_error_and_cut_by_the_lenient_path() {
    let bomb = ref_bomb(25);
    for dialect in DIALECTS {
        let err = try_normalize_schema(&bomb, dialect).unwrap_err();
        assert!(matches!(err, SchemaError::TooLarge { limit, .. } if limit == MAX_INLINED_NODES));
        let msg = err.to_string();
        assert!(
            msg.contains("$ref bomb") && msg.contains("D0 -> D1"),
            "{msg}"
        );
        // The lenient path stays small instead of expanding 2^40 nodes.
        let cut = normalize_schema(&bomb, dialect);
        assert!(cut.to_string().len() < 4_000_000, "{dialect:?}");
    }
    // A small one is inlined as before.
    let fine = try_normalize_schema(&ref_bomb(4), SchemaDialect::OpenAi).unwrap();
    assert_eq!(
        fine["properties"]["x"]["properties"]["a"]["properties"]["b"]["type"],
        "object"
    );
}

#[test]
fn a_long_ref_chain_is_refused_as_too_deep() {
    let mut defs = Map::new();
    for i in 0..200 {
        defs.insert(
            format!("L{i}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/L{}", i + 1)}}}),
        );
    }
    defs.insert("L200".to_owned(), json!({"type": "string"}));
    let chain =
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/L0"}}, "$defs": defs});
    let err = try_normalize_schema(&chain, SchemaDialect::Anthropic).unwrap_err();
    assert!(matches!(err, SchemaError::TooDeep { limit, .. } if limit == MAX_SCHEMA_DEPTH));
    assert!(err.to_string().contains("deeper than 64 levels"), "{err}");
}

#[test]
fn literal_deep_nesting_is_cut_without_overflowing_the_stack() {
    let mut schema = json!({"type": "string"});
    for _ in 0..1_000 {
        schema = json!({"type": "array", "items": schema});
    }
    let root = json!({"type": "object", "properties": {"deep": schema}});
    let err = try_normalize_schema(&root, SchemaDialect::OpenAi).unwrap_err();
    assert!(matches!(err, SchemaError::TooDeep { .. }), "{err}");
    let cut = normalize_schema(&root, SchemaDialect::OpenAi);
    assert_eq!(cut["type"], "object");
}
