//! Unit tests for OpenAI stream assembly.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::http::Assembler as _;

fn feed(assembler: &mut Assembler, chunks: &[Value]) -> Vec<StreamEvent> {
    let mut out = VecDeque::new();
    for chunk in chunks {
        let event = Event {
            data: chunk.to_string(),
            ..Event::default()
        };
        assembler.on_event(&event, &mut out).unwrap();
    }
    out.into_iter().collect()
}

fn call_delta(index: usize, id: Option<&str>, name: Option<&str>, args: &str) -> Value {
    json!({"choices": [{"index": 0, "delta": {"tool_calls": [
        {"index": index, "id": id, "function": {"name": name, "arguments": args}}]}}]})
}

#[test]
fn index_zero_with_fresh_ids_starts_new_calls() {
    let mut a = Assembler::default();
    feed(
        &mut a,
        &[
            call_delta(0, Some("a"), Some("one"), "{}"),
            call_delta(0, Some("b"), Some("two"), "{\"x\":1}"),
        ],
    );
    let done = a.finish(true).unwrap();
    let names: Vec<_> = done.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["one", "two"]);
    assert_eq!(done.tool_calls[1].arguments, json!({"x": 1}));
}

#[test]
fn arguments_before_the_name_are_held_back() {
    let mut a = Assembler::default();
    let events = feed(
        &mut a,
        &[
            call_delta(0, None, None, "{\"a\""),
            call_delta(0, None, Some("f"), ":1}"),
        ],
    );
    assert_eq!(
        events,
        [
            StreamEvent::ToolCallStarted {
                index: 0,
                id: "call_0".to_owned(),
                name: "f".to_owned()
            },
            StreamEvent::ToolCallDelta {
                index: 0,
                arguments: "{\"a\":1}".to_owned()
            },
        ]
    );
}

/// An SSE body with multi-byte text and two interleaved calls.
fn sample_body() -> String {
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"content": "Grüße 🌍 "}}]}),
        call_delta(0, Some("a"), Some("one"), "{\"x\": \"é"),
        call_delta(1, Some("b"), Some("two"), "{}"),
        call_delta(0, None, None, "\"}"),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ];
    let mut body: String = chunks
        .iter()
        .map(|c| format!("data: {c}\r\n\r\n"))
        .collect();
    body.push_str("data: [DONE]\r\n\r\n");
    body
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]

    #[test]
    fn any_split_of_the_byte_stream_assembles_the_same_answer(
        cuts in proptest::collection::vec(proptest::prelude::any::<proptest::sample::Index>(), 0..16)
    ) {
        use eventsource_stream::Eventsource;
        use futures::StreamExt;

        let body = sample_body().into_bytes();
        let mut points: Vec<usize> = cuts.iter().map(|i| i.index(body.len())).collect();
        points.extend([0, body.len()]);
        points.sort_unstable();
        points.dedup();
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
            points.windows(2).map(|w| Ok(body[w[0]..w[1]].to_vec())).collect();
        let events = futures::executor::block_on(
            futures::stream::iter(pieces).eventsource().collect::<Vec<_>>(),
        );
        let mut assembler = Assembler::default();
        let mut out = VecDeque::new();
        for event in events {
            if assembler.on_event(&event.unwrap(), &mut out).unwrap() {
                break;
            }
        }
        let answer = assembler.finish(true).unwrap();
        proptest::prop_assert_eq!(answer.content.as_deref(), Some("Grüße 🌍 "));
        proptest::prop_assert_eq!(&answer.tool_calls, &[
            ToolCall::new("a", "one", json!({"x": "é"})),
            ToolCall::new("b", "two", json!({})),
        ]);
    }
}
