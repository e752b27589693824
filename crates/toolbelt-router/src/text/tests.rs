use std::sync::Arc;

use pretty_assertions::assert_eq;

use super::*;

fn terms(mode: ChineseMode, text: &str) -> Vec<String> {
    let analyzer = Analyzer::new(mode, Arc::new(Lexicon::builtin()), 1.0);
    let mut out = Vec::new();
    analyzer.analyze(text, 1.0, &mut AnalyzeBuf::default(), &mut |t, _| {
        out.push(t.to_owned())
    });
    out
}

#[test]
fn identifiers_split_into_words() {
    let t = terms(ChineseMode::Ngrams, "getHTTPStatus file_read a.b");
    for w in ["get", "http", "status", "gethttpstatus", "fil", "read", "b"] {
        assert!(t.contains(&w.to_owned()), "{w} missing from {t:?}");
    }
}

#[test]
fn chinese_gets_ngrams_and_concepts() {
    let t = terms(ChineseMode::Ngrams, "删除文件");
    for w in ["删", "除", "删除", "除文", "文件", "~delete", "~file"] {
        assert!(t.contains(&w.to_owned()), "{w} missing from {t:?}");
    }
    let b = terms(ChineseMode::Bigrams, "删除文件");
    assert!(!b.contains(&"删".to_owned()));
}

#[test]
fn english_words_share_concepts_with_chinese() {
    let en = terms(ChineseMode::Ngrams, "Remove the files");
    assert!(en.contains(&"~delete".to_owned()) && en.contains(&"~file".to_owned()));
    assert!(!en.contains(&"the".to_owned()));
}

#[test]
fn builtin_lexicon_parses() {
    let lexicon = Lexicon::parse(include_str!("../../lexicon/concepts.txt")).unwrap();
    assert!(lexicon.len() > 150);
    let err = Lexicon::parse("ok: a\nbroken line")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "invalid router configuration: lexicon line 2: expected `concept: word word ...`, found \"broken line\""
    );
}

#[test]
fn the_english_factor_scales_english_concepts_and_leaves_chinese_ones() {
    let weighted = |factor: f32, text: &str| {
        let analyzer = Analyzer::new(ChineseMode::Ngrams, Arc::new(Lexicon::builtin()), 1.0);
        let mut out = Vec::new();
        let mut sink = |t: &str, w: f32| out.push((t.to_owned(), w));
        analyzer.analyze_scaled(text, 2.0, factor, &mut AnalyzeBuf::default(), &mut sink);
        out
    };
    let half = weighted(0.5, "Remove the files");
    assert!(half.contains(&("~delete".to_owned(), 1.0)), "{half:?}");
    // The words themselves keep their weight.
    assert!(
        half.iter()
            .filter(|(t, _)| !t.starts_with('~'))
            .all(|(_, w)| *w == 2.0),
        "{half:?}"
    );
    let none = weighted(0.0, "Remove the files");
    assert!(none.iter().all(|(t, _)| !t.starts_with('~')), "{none:?}");
    let zh = weighted(0.0, "删除文件");
    assert!(zh.contains(&("~delete".to_owned(), 2.0)), "{zh:?}");
}
