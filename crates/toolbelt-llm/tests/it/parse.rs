//! Tool calls written as text: each supported form, damaged JSON, and
//! property tests (no panic on any input; generated calls survive a round trip).

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};
use toolbelt_core::ToolCall;
use toolbelt_llm::{parse_tool_calls, repair_json, unparsed_arguments};

fn calls(text: &str) -> Vec<ToolCall> {
    parse_tool_calls(text).tool_calls
}

fn calc(id: &str, a: i64, b: i64) -> ToolCall {
    ToolCall::new(
        id,
        "calculator",
        json!({"a": a, "b": b, "operation": "add"}),
    )
}

#[test]
fn json_format_from_the_seed() {
    let text = r#"I'll compute that.
{"tool_calls": [{"id": "call_1", "name": "calculator", "parameters": {"a": 10, "b": 5, "operation": "add"}},
                {"name": "calculator", "arguments": "{\"a\": 1, \"b\": 2, \"operation\": \"add\"}"}]}
Done."#;
    let parsed = parse_tool_calls(text);
    assert_eq!(
        parsed.tool_calls,
        [calc("call_1", 10, 5), calc("call_1_1", 1, 2)]
    );
    assert_eq!(parsed.text, "I'll compute that.\nDone.");
}

#[test]
fn xml_format_from_the_seed() {
    let text = r#"<tool_call id="call_1" name="calculator">
  <parameters>
    <a>10</a>
    <b>5</b>
    <operation>add</operation>
  </parameters>
</tool_call>"#;
    let parsed = parse_tool_calls(text);
    assert_eq!(parsed.tool_calls, [calc("call_1", 10, 5)]);
    assert_eq!(parsed.text, "");
}

#[test]
fn tagged_json_as_open_models_emit_it() {
    let text = "<think>need two sums</think>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"a\": 1, \"b\": 2, \"operation\": \"add\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"a\": 3, \"b\": 4, \"operation\": \"add\"}}\n</tool_call>";
    let parsed = parse_tool_calls(text);
    assert_eq!(
        parsed.tool_calls,
        [calc("call_0", 1, 2), calc("call_1", 3, 4)]
    );
    assert_eq!(parsed.text, "<think>need two sums</think>");
}

#[test]
fn fenced_json_blocks_and_mistral_markers() {
    let fenced = "Calling:\n```json\n{\"name\": \"calculator\", \"arguments\": {\"a\": 1, \"b\": 2, \"operation\": \"add\"}}\n```\nok";
    assert_eq!(parse_tool_calls(fenced).tool_calls, [calc("call_0", 1, 2)]);
    assert_eq!(parse_tool_calls(fenced).text, "Calling:\nok");
    let mistral = "[TOOL_CALLS] [{\"name\": \"calculator\", \"arguments\": {\"a\": 5, \"b\": 6, \"operation\": \"add\"}}]";
    assert_eq!(calls(mistral), [calc("call_0", 5, 6)]);
}

#[test]
fn a_fenced_block_with_several_call_objects_holds_several_calls() {
    // Qwen2.5-Coder-1.5B (llama.cpp, its own template) puts a turn's calls in one block.
    let text = "```json\n{\"name\": \"calculator\", \"arguments\": {\"a\": 1, \"b\": 2, \"operation\": \"add\"}}\n{\"name\": \"calculator\", \"arguments\": {\"a\": 3, \"b\": 4, \"operation\": \"add\"}}\n```";
    let parsed = parse_tool_calls(text);
    assert_eq!(
        parsed.tool_calls,
        [calc("call_0", 1, 2), calc("call_1", 3, 4)]
    );
    assert_eq!(parsed.text, "");
    // One value in the block that is not a call keeps the whole block as text.
    let mixed = "```json\n{\"name\": \"calculator\", \"arguments\": {}}\n{\"version\": 2}\n```";
    assert_eq!(calls(mixed), []);
}

#[test]
fn xml_arguments_are_never_read_as_the_call() {
    // The body of a named tag is its arguments, even when it looks like a call.
    let text = r#"<tool_call name="calculator">{"name": "shell_exec", "arguments": {"command": "rm -rf ~"}}</tool_call>"#;
    assert_eq!(
        calls(text),
        [ToolCall::new(
            "call_0",
            "calculator",
            json!({"name": "shell_exec", "arguments": {"command": "rm -rf ~"}})
        )]
    );
    let listed = r#"<tool_call name="calculator">{"tool_calls": [{"name": "shell_exec", "arguments": {}}]}</tool_call>"#;
    assert_eq!(calls(listed)[0].name, "calculator");
}

#[test]
fn example_json_that_is_not_a_call_stays_in_the_text() {
    let text = "Here is a config:\n```json\n{\"name\": \"demo\", \"version\": 2}\n```\nand {\"a\": 1} inline.";
    let parsed = parse_tool_calls(text);
    assert_eq!(parsed.tool_calls, []);
    assert_eq!(parsed.text, text);
}

#[test]
fn damaged_json_is_repaired() {
    let cases = [
        "<tool_call>{'name': 'calculator', 'arguments': {'a': 1, 'b': 2, 'operation': 'add',},}</tool_call>",
        "<tool_call>{name: \"calculator\", arguments: {a: 1, b: 2, operation: \"add\"}}</tool_call>",
        "<tool_call>{\"name\": \"calculator\", \"arguments\": {\"a\": 1, \"b\": 2, \"operation\": \"add\"</tool_call>",
        "{\"tool_calls\": [{\"name\": \"calculator\", \"arguments\": {\"a\": 1, \"b\": 2, \"operation\": \"add\"}}",
    ];
    for text in cases {
        assert_eq!(calls(text), [calc("call_0", 1, 2)], "{text}");
    }
}

#[test]
fn unterminated_tag_at_the_end_still_counts() {
    let text = "Sure.\n<tool_call>{\"name\": \"calculator\", \"arguments\": {\"a\": 1, \"b\": 2, \"operation\": \"add\"}}";
    assert_eq!(calls(text), [calc("call_0", 1, 2)]);
}

#[test]
fn string_arguments_that_are_not_json_are_kept_raw() {
    let text = r#"{"tool_calls": [{"name": "shell", "arguments": "ls -la"}]}"#;
    let found = calls(text);
    assert_eq!(unparsed_arguments(&found[0]), Some("ls -la"));
}

#[test]
fn xml_parameters_may_hold_json_or_named_parameter_elements() {
    let json_inside = "<tool_call name=\"calculator\"><parameters>{\"a\": 1, \"b\": 2, \"operation\": \"add\"}</parameters></tool_call>";
    let named = "<tool_call name=\"calculator\"><parameter name=\"a\">1</parameter><parameter name=\"b\">2</parameter><parameter name=\"operation\">add</parameter></tool_call>";
    assert_eq!(calls(json_inside), [calc("call_0", 1, 2)]);
    assert_eq!(calls(named), [calc("call_0", 1, 2)]);
}

#[test]
fn repair_json_reads_what_models_write() {
    assert_eq!(
        repair_json("{'a': [1, 2,], b: None}"),
        Some(json!({"a": [1, 2], "b": null}))
    );
    assert_eq!(repair_json("not json"), None);
}

#[test]
fn deep_nesting_is_refused_without_overflowing_the_stack() {
    let deep_json = format!(
        "<tool_call>{{\"name\": \"t\", \"arguments\": {}</tool_call>",
        "[".repeat(100_000)
    );
    assert_eq!(calls(&deep_json), []);
    let deep_xml = format!(
        "<tool_call name=\"t\"><parameters>{}</parameters></tool_call>",
        "<a>".repeat(50_000)
    );
    let _ = parse_tool_calls(&deep_xml);
    let balanced = format!(
        "<tool_call name=\"t\"><parameters>{}{}</parameters></tool_call>",
        "<a>".repeat(20_000),
        "</a>".repeat(20_000)
    );
    assert_eq!(calls(&balanced).len(), 1);
    assert_eq!(repair_json(&"{\"a\":".repeat(100_000)), None);
}

/// Fragments that steer random text into the parser's interesting paths.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<tool_call>".to_owned()),
        Just("</tool_call>".to_owned()),
        Just("<tool_call name=\"x\">".to_owned()),
        Just("<parameters>".to_owned()),
        Just("</parameters>".to_owned()),
        Just("```json\n".to_owned()),
        Just("```".to_owned()),
        Just("{\"tool_calls\": [".to_owned()),
        Just("{\"name\": \"t\", ".to_owned()),
        Just("\"arguments\": ".to_owned()),
        Just("[TOOL_CALLS]".to_owned()),
        Just("\\u12".to_owned()),
        "[{}\\[\\]\"':,<>/a-z0-9 \\n\\\\]{0,12}",
        any::<String>(),
    ]
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_]{0,15}"
}

fn arguments() -> impl Strategy<Value = Value> {
    let scalar = prop_oneof![
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        "[a-zA-Z0-9 ,.:'\"{}<>/\\\\é世]{0,20}".prop_map(Value::from),
        Just(Value::Null),
    ];
    prop::collection::btree_map("[a-z_]{1,8}", scalar, 0..5)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Prose that contains none of the characters that open a call.
fn prose() -> impl Strategy<Value = String> {
    "[A-Za-z0-9 .,!?éü世界\\n]{0,40}"
}

/// One call written in one of the supported forms.
fn render(form: u8, name: &str, args: &Value) -> String {
    match form % 4 {
        0 => json!({"tool_calls": [{"name": name, "parameters": args}]}).to_string(),
        1 => format!(
            "<tool_call>{}</tool_call>",
            json!({"name": name, "arguments": args})
        ),
        2 => format!("```json\n{}\n```", json!({"name": name, "arguments": args})),
        _ => format!("<tool_call name=\"{name}\"><parameters>{args}</parameters></tool_call>"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_random_text(parts in prop::collection::vec(fragment(), 0..12)) {
        let text = parts.concat();
        let parsed = parse_tool_calls(&text);
        prop_assert!(parsed.text.len() <= text.len());
        let _ = repair_json(&text);
    }

    #[test]
    fn generated_calls_embedded_in_prose_come_back(
        items in prop::collection::vec((prose(), any::<u8>(), name(), arguments()), 1..4),
        tail in prose(),
    ) {
        let mut text = String::new();
        for (before, form, name, args) in &items {
            text.push_str(&format!("{before}\n{}\n", render(*form, name, args)));
        }
        text.push_str(&tail);
        let parsed = parse_tool_calls(&text);
        let want: Vec<ToolCall> = items.iter().enumerate()
            .map(|(i, (_, _, name, args))| ToolCall::new(format!("call_{i}"), name.clone(), args.clone()))
            .collect();
        prop_assert_eq!(parsed.tool_calls, want);
        let prose: Vec<&str> = items.iter().map(|(p, ..)| p.trim()).chain([tail.trim()])
            .filter(|p| !p.is_empty()).collect();
        prop_assert_eq!(parsed.text, prose.join("\n"));
    }
}
