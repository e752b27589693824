//! Property tests (proptest) of selection expressions: parsing and resolving
//! never panic, and well-formed expressions select what they name.
//!
//! Case counts follow `PROPTEST_CASES` (default 256); `scripts/fuzz.sh` runs more.

use proptest::prelude::*;
use serde_json::Value;
use toolbelt_core::{FnTool, Registry, Selection, ToolHandle};

const TOOLS: &[(&str, &[&str])] = &[
    ("read", &["file"]),
    ("write", &["file", "danger"]),
    ("run", &["shell", "danger"]),
    ("fetch", &["web"]),
    ("web/search v2", &["web"]),
];

fn tool(name: &str, tags: &[&str]) -> ToolHandle {
    let mut builder = FnTool::builder(name).description("a tool");
    for tag in tags {
        builder = builder.tag(*tag);
    }
    builder
        .handler(|_a: Value, _c| async { "ok".to_owned() })
        .unwrap()
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .add_tools(TOOLS.iter().map(|(n, t)| tool(n, t)))
        .unwrap();
    registry
}

/// Items from the grammar: names, groups, prefixes, exclusions, `*`, spaces.
fn item() -> impl Strategy<Value = String> {
    let target = prop_oneof![
        Just("read".to_owned()),
        Just("write".to_owned()),
        Just("run".to_owned()),
        Just("web/search v2".to_owned()),
        Just("file".to_owned()),
        Just("danger".to_owned()),
        Just("web".to_owned()),
        Just("tag:shell".to_owned()),
        Just("tool:fetch".to_owned()),
        Just("*".to_owned()),
    ];
    (
        prop_oneof![Just(""), Just("-"), Just("+")],
        target,
        " {0,2}",
    )
        .prop_map(|(sign, target, pad)| format!("{pad}{sign}{target}{pad}"))
}

proptest! {
    #[test]
    fn parsing_any_text_never_panics(expr in any::<String>()) {
        let _ = Selection::parse(&expr);
    }

    #[test]
    fn selecting_any_text_never_panics(expr in "[-+a-z:*, /]{0,40}") {
        let _ = registry().select(&expr);
    }

    #[test]
    fn well_formed_expressions_parse_and_resolve(items in prop::collection::vec(item(), 1..6)) {
        let expr = items.join(",");
        prop_assert!(Selection::parse(&expr).is_ok(), "{expr}");
        let selected = registry().select(&expr);
        prop_assert!(selected.is_ok(), "{expr}: {:?}", selected.err());
        let selected = selected.unwrap();
        // Excluding a tool always removes it, whatever else is included.
        for item in &items {
            let item = item.trim();
            if let Some(name) = item.strip_prefix("-tool:").or_else(|| item.strip_prefix("-"))
                && TOOLS.iter().any(|(n, _)| *n == name)
            {
                prop_assert!(selected.get(name).is_none(), "{expr} kept {name}");
            }
        }
    }

    #[test]
    fn empty_items_are_reported_with_their_position(
        items in prop::collection::vec(item(), 0..4),
        at in 0usize..4,
    ) {
        let mut items = items;
        let at = at.min(items.len());
        items.insert(at, " ".to_owned());
        let expr = items.join(",");
        if expr.trim().is_empty() {
            prop_assert!(Selection::parse(&expr).unwrap().is_empty());
        } else {
            let err = Selection::parse(&expr).unwrap_err().to_string();
            prop_assert!(err.contains("empty item"), "{expr}: {err}");
        }
    }
}
