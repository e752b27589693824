use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::ToolSpec;

use super::*;

fn spec(name: &str, description: &str) -> ToolSpec {
    ToolSpec::builder(name)
        .description(description)
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string", "description": "Path of the file"}}}))
        .build()
        .unwrap()
}

fn names(index: &LexicalIndex, q: &str) -> Vec<String> {
    index.search(q, 3).into_iter().map(|t| t.name).collect()
}

#[test]
fn ranks_the_matching_tool_first() {
    let specs = [
        spec("file_read", "Read a text file"),
        spec("send_email", "Send an email message"),
    ];
    let index = LexicalIndex::from_specs(LexicalConfig::default(), &specs);
    assert_eq!(names(&index, "email my boss")[0], "send_email");
    assert_eq!(names(&index, "读取文件")[0], "file_read");
    assert!(index.search("zzz", 3).is_empty());
}

#[test]
fn updates_incrementally() {
    let mut index = LexicalIndex::default();
    assert!(index.upsert(&spec("a_tool", "Convert currencies")));
    assert!(!index.upsert(&spec("a_tool", "Convert currencies")));
    assert_eq!(names(&index, "currency"), ["a_tool"]);
    assert!(index.upsert(&spec("a_tool", "Translate text")));
    assert!(index.search("currency", 3).is_empty());
    assert!(index.remove("a_tool"));
    assert!(index.is_empty() && index.search("translate", 3).is_empty());
    index.upsert(&spec("b_tool", "Translate text"));
    assert_eq!(names(&index, "translate"), ["b_tool"]);
}

#[test]
fn top_k_keeps_the_best_in_order() {
    let mut hits = vec![(0, 1.0), (1, 3.0), (2, 2.0), (3, 3.0)];
    top_k(&mut hits, 3);
    assert_eq!(hits, [(1, 3.0), (3, 3.0), (2, 2.0)]);
}

#[test]
fn top_k_head_orders_the_head_as_a_full_sort_does_and_keeps_the_rest() {
    // Scores with ties, in a scrambled order.
    let all: Vec<(u32, f32)> = (0..200u32)
        .map(|i| (i, ((i * 37) % 23) as f32 / 4.0))
        .collect();
    let mut sorted = all.clone();
    top_k(&mut sorted, 150);
    let mut headed = all;
    top_k_head(&mut headed, 150, 20);
    assert_eq!(headed[..20], sorted[..20]);
    let mut rest: Vec<u32> = headed[20..].iter().map(|h| h.0).collect();
    let mut expected: Vec<u32> = sorted[20..].iter().map(|h| h.0).collect();
    rest.sort_unstable();
    expected.sort_unstable();
    assert_eq!(rest, expected, "the same tools follow the head");
}

#[test]
fn truncate_respects_char_boundaries() {
    assert_eq!(truncate("文件", 4), "文");
    assert_eq!(truncate("abc", 10), "abc");
}
