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
fn best_of_keeps_the_head_a_full_sort_gives() {
    // Scores with ties, in a scrambled order, and heads shorter than, equal to and longer
    // than the list.
    let all: Vec<(u32, f32)> = (0..200u32)
        .map(|i| ((i * 91) % 200, ((i * 37) % 23) as f32 / 4.0))
        .collect();
    let mut sorted = all.clone();
    top_k(&mut sorted, all.len());
    // Heads kept in one pass (up to an eighth of the hits) and selected and sorted.
    for head in [0, 1, 20, 24, 25, 199, 200, 500] {
        let best = best_of(all.iter().copied(), head);
        assert_eq!(best, sorted[..head.min(all.len())], "head {head}");
    }
}

#[test]
fn lexical_scores_name_the_search_s_best_and_score_every_tool_it_reaches() {
    let specs: Vec<ToolSpec> = (0..40)
        .map(|i| {
            let what = ["file", "email", "calendar", "weather"][i % 4];
            ToolSpec::builder(format!("tool_{i}"))
                .description(format!("The {what}"))
                .build()
                .unwrap()
        })
        .collect();
    let mut index = LexicalIndex::from_specs(LexicalConfig::default(), &specs);
    index.remove("tool_4");
    let query = "read the file and check the weather";
    let all = index.search(query, usize::MAX);
    let factor = index.config().english_concept_factor;
    let scores = index.scores_scaled(query, 5, factor);
    assert_eq!(scores.head(), &all[..5]);
    assert_eq!(scores.len(), all.len());
    let (sum, squares) = scores.moments();
    let expected: f64 = all.iter().map(|t| f64::from(t.score)).sum();
    let expected_squares: f64 = all.iter().map(|t| f64::from(t.score).powi(2)).sum();
    assert!((sum - expected).abs() < 1e-9 && (squares - expected_squares).abs() < 1e-9);
    for t in &all {
        assert_eq!(scores.score_of(&t.name), t.score, "{}", t.name);
    }
    let unreached: Vec<&str> = specs
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| all.iter().all(|t| t.name != *n))
        .collect();
    assert!(
        unreached.contains(&"tool_4") && unreached.len() > 1,
        "{unreached:?}"
    );
    for name in unreached {
        assert_eq!(scores.score_of(name), 0.0, "{name} is not reached");
    }
    // The scores keep the names they were made with while the index changes.
    index.remove("tool_0");
    assert_eq!(
        scores.score_of("tool_0"),
        all.iter().find(|t| t.name == "tool_0").unwrap().score
    );
    assert!(index.scores_scaled("zzz", 5, factor).head().is_empty());
}

#[test]
fn truncate_respects_char_boundaries() {
    assert_eq!(truncate("文件", 4), "文");
    assert_eq!(truncate("abc", 10), "abc");
}
