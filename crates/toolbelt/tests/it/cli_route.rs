//! `toolbelt route` from the command line: batch mode and clear errors.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use pretty_assertions::assert_eq;

const CATALOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval/catalog.jsonl");

fn route(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .arg("route")
        .args(args)
        .env_remove("TOOLBELT_EMBED_MODEL_DIR")
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn batch_mode_prints_one_line_per_query_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let queries = write(
        &dir,
        "q.jsonl",
        "{\"id\": 7, \"query\": \"明天上海会下雨吗\", \"x\": 1}\n{\"id\": \"b\", \"query\": \"send an email to Bob\"}\n",
    );
    let (ok, out, err) = route(&[
        "--catalog",
        CATALOG,
        "--queries",
        &queries,
        "--top-k",
        "3",
        "--format",
        "jsonl",
    ]);
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        (lines.len(), lines[0]["id"].clone(), lines[1]["id"].clone()),
        (2, 7.into(), "b".into())
    );
    assert!(
        lines[0]["tools"]
            .as_array()
            .unwrap()
            .contains(&"weather_forecast".into()),
        "{}",
        lines[0]
    );
    assert!(
        lines
            .iter()
            .all(|l| l["tools"].as_array().unwrap().len() <= 3)
    );
}

#[test]
fn duplicate_catalog_names_and_bad_query_lines_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let line = r#"{"name": "a", "description": "A", "parameters": {"type": "object"}}"#;
    let catalog = write(&dir, "c.jsonl", &format!("{line}\n{line}\n"));
    let (ok, _, err) = route(&["--catalog", &catalog, "x"]);
    assert!(
        !ok && err.contains("catalog line 2: duplicate tool name `a` (first defined on line 1)"),
        "{err}"
    );
    let queries = write(
        &dir,
        "q.jsonl",
        "{\"id\": 1, \"query\": \"x\"}\n{\"id\": 2}\n",
    );
    let (ok, _, err) = route(&[
        "--catalog",
        CATALOG,
        "--queries",
        &queries,
        "--format",
        "jsonl",
    ]);
    assert!(
        !ok && err.contains("q.jsonl line 2: expected {\"id\", \"query\"}"),
        "{err}"
    );
}

#[test]
fn single_mode_shows_tools_and_tokens_saved() {
    let (ok, out, err) = route(&["--catalog", CATALOG, "refund the customer's payment"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("stripe_refund") && out.contains("schema tokens sent"),
        "{out}"
    );
    let (_, out, _) = route(&["--catalog", CATALOG, "你好"]);
    assert!(out.contains("all tools (fallback)"), "{out}");
}

#[test]
fn the_embedding_router_names_what_it_lacks() {
    let (ok, _, err) = route(&["--catalog", CATALOG, "--router", "embedding", "x"]);
    assert!(
        !ok && err.contains("--router embedding needs --embedder-dir DIR"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().to_string_lossy().into_owned();
    let (ok, _, err) = route(&["--catalog", CATALOG, "--embedder-dir", &model, "x"]);
    let expected = if cfg!(feature = "local-embed") {
        format!("model file {model}/config.json is missing (run scripts/fetch-model.sh)")
    } else {
        format!("--embedder-dir {model} needs a toolbelt built with the `local-embed` feature")
    };
    assert!(!ok && err.contains(&expected), "{err}");
}
