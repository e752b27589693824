//! JSONL catalogs: good lines load, bad lines are named.

use pretty_assertions::assert_eq;
use toolbelt_router::read_catalog;

fn load(text: &str) -> Result<usize, String> {
    read_catalog(text.as_bytes())
        .map(|s| s.len())
        .map_err(|e| e.to_string())
}

const OK: &str = r#"{"name": "a", "description": "A tool", "parameters": {"type": "object"}}"#;

#[test]
fn loads_tools_and_skips_blank_lines() {
    let text = format!(
        "{OK}\n\n{}\n",
        r#"{"name": "b", "description": "B", "parameters": {"type": "object"}, "tags": ["x"]}"#
    );
    assert_eq!(load(&text), Ok(2));
}

#[test]
fn duplicate_names_are_rejected_with_both_lines() {
    assert_eq!(
        load(&format!("{OK}\n{OK}\n")),
        Err("catalog line 2: duplicate tool name `a` (first defined on line 1)".to_owned())
    );
}

#[test]
fn bad_lines_are_named() {
    let err = load(&format!("{OK}\nnot json\n")).unwrap_err();
    assert!(err.starts_with("catalog line 2: expected ident"), "{err}");
    let err = load(r#"{"name": "bad name", "description": "d"}"#).unwrap_err();
    assert!(
        err.starts_with("catalog line 1: invalid tool name \"bad name\""),
        "{err}"
    );
    let err = load(r#"{"name": "x"}"#).unwrap_err();
    assert!(err.contains("line 1: missing field `description`"), "{err}");
}
