//! `toolbelt route` from the command line: batch mode and clear errors.
#![allow(clippy::unwrap_used)]

use std::process::Command;

use pretty_assertions::assert_eq;

const CATALOG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval/catalog.jsonl");

fn route(args: &[&str]) -> (bool, String, String) {
    route_with(&[], args)
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
fn a_batch_larger_than_a_ranking_window_keeps_its_order_and_rankings() {
    // More queries than one window of parallel ranking (1,024), and not a multiple of
    // the task count: every line comes back in input order, and a text ranks the
    // same wherever it falls.
    let dir = tempfile::tempdir().unwrap();
    let texts = [
        "send an email to Bob",
        "明天上海会下雨吗",
        "read the file notes.txt",
    ];
    let body: String = (0..1_101)
        .map(|i| {
            let text = texts[i % texts.len()];
            let turns = if i % 5 == 0 {
                format!("[{{\"role\": \"user\", \"content\": \"look at my calendar\"}}, {{\"role\": \"user\", \"content\": \"{text}\"}}]")
            } else {
                format!("\"{text}\"")
            };
            format!("{{\"id\": {i}, \"query\": {turns}}}\n")
        })
        .collect();
    let queries = write(&dir, "q.jsonl", &body);
    let (ok, out, err) = route(&[
        "--catalog",
        CATALOG,
        "--queries",
        &queries,
        "--top-k",
        "5",
        "--format",
        "jsonl",
    ]);
    assert!(ok, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1_101);
    let mut first: std::collections::HashMap<(usize, bool), &serde_json::Value> =
        std::collections::HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        assert_eq!(line["id"], i, "line {i}");
        let tools = &line["tools"];
        assert!(!tools.as_array().unwrap().is_empty(), "{line}");
        let seen = first.entry((i % texts.len(), i % 5 == 0)).or_insert(tools);
        assert_eq!(*seen, tools, "query {i} ranks as the first of its kind");
    }
}

#[test]
fn duplicate_catalog_names_warn_or_fail_under_strict_and_bad_query_lines_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let line = r#"{"name": "a", "description": "A", "parameters": {"type": "object"}}"#;
    let catalog = write(&dir, "c.jsonl", &format!("{line}\n{line}\n"));
    let (ok, _, err) = route(&["--catalog", &catalog, "--strict", "x"]);
    assert!(
        !ok && err.contains("catalog line 2: duplicate tool name `a` (first defined at line 1)"),
        "{err}"
    );
    let (ok, out, err) = route(&["--catalog", &catalog, "--format", "json", "a"]);
    assert!(ok, "{err}");
    assert!(
        err.contains("catalog: 1 tools loaded from JSON Lines (1 bare)")
            && err.contains(
                "duplicate names (first kept): 1 — `a` (line 2: repeats the definition at line 1)"
            ),
        "{err}"
    );
    assert!(out.contains("\"decision\""), "{out}");
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
        !ok && err.contains("q.jsonl line 2: no request: expected one of the fields query,"),
        "{err}"
    );
}

#[test]
fn a_python_typed_catalog_with_dotted_names_routes_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = write(
        &dir,
        "c.json",
        r#"[
  {"name": "math.factorial", "description": "Calculate the factorial of a given number.",
   "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}}, "required": ["number"]}},
  {"type": "function", "function": {"name": "geometry.circle_area", "description": "Calculate the area of a circle given its radius.",
   "parameters": {"type": "dict", "properties": {"radius": {"type": "float"}, "units": {"type": "string"}}}}},
  {"name": "weather/forecast", "description": "Get the weather forecast for a city.",
   "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}},
  {"name": "send_email", "description": "Send an email message to a recipient.",
   "inputSchema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}}}
]"#,
    );
    let queries = write(
        &dir,
        "q.jsonl",
        concat!(
            r#"{"id": "single", "query": "What is the factorial of 5?"}"#,
            "\n",
            r#"{"id": "turns", "question": [[{"role": "user", "content": "I need the area of a circle with radius 3 cm."}], [{"role": "assistant", "content": "Sure."}, {"role": "user", "content": "Also, will it rain in Paris tomorrow?"}]]}"#,
            "\n",
            r#"{"id": "parts", "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "给 Bob 发一封 email"}]}]}"#,
            "\n"
        ),
    );
    let (ok, out, err) = route(&[
        "--catalog",
        &catalog,
        "--queries",
        &queries,
        "--top-k",
        "2",
        "--format",
        "jsonl",
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains("catalog: 4 tools loaded from JSON (1 anthropic, 1 bare, 1 mcp, 1 openai)")
            && err.contains("dict → object ×2")
            && err.contains("float → number ×1"),
        "{err}"
    );
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tools =
        |i: usize| -> Vec<String> { serde_json::from_value(lines[i]["tools"].clone()).unwrap() };
    assert_eq!(lines.len(), 3);
    assert_eq!(tools(0)[0], "math.factorial");
    // The latest turn ranks first; the earlier one still counts.
    assert_eq!(tools(1), ["weather/forecast", "geometry.circle_area"]);
    assert_eq!(tools(2)[0], "send_email");
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
    assert!(
        out.contains("0 of 322 tools (unsure; bounded fallback: best ranked)")
            && out.contains("above the fallback limit of 64"),
        "{out}"
    );
    let (_, out, _) = route(&["--catalog", CATALOG, "--fallback-limit", "400", "你好"]);
    assert!(out.contains("all tools (fallback)"), "{out}");
}

#[test]
fn the_embedding_router_names_what_it_lacks() {
    let (ok, _, err) = route(&["--catalog", CATALOG, "--router", "embedding", "x"]);
    assert!(
        !ok && err.contains("--router embedding needs a model: --embedder-dir DIR"),
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

#[test]
fn skills_are_listed_shown_and_routed() {
    let skills = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../toolbelt-router/tests/fixtures/skills"
    );
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let (ok, out, err) = run(&["skills", "ls", "--skills", skills]);
    assert!(ok, "{err}");
    let names: Vec<&str> = out
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert_eq!(names, ["brand-voice", "pdf-forms", "release-notes"]);
    let (ok, out, _) = run(&["skills", "show", "pdf-forms", "--skills", skills]);
    assert!(
        ok && out.contains("files:       fields.py") && out.contains("# Filling PDF forms"),
        "{out}"
    );
    let (ok, _, err) = run(&["skills", "show", "nope", "--skills", skills]);
    assert!(
        !ok && err.contains("no skill named `nope`")
            && err.contains("known: brand-voice, pdf-forms, release-notes"),
        "{err}"
    );
    let (ok, out, err) = route(&[
        "--catalog",
        CATALOG,
        "--skills",
        skills,
        "fill in the PDF form",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("skills:   pdf-forms ("), "{out}");
}

/// `toolbelt route --router bm25-plain --format json TEXT` plus `extra`: (fallback, the
/// tools ranked), none when every tool is sent unranked.
fn ranked(text: &str, extra: &[&str]) -> (bool, Vec<String>) {
    let mut args = vec!["--router", "bm25-plain", "--format", "json", text];
    args.extend_from_slice(extra);
    let (ok, out, err) = route(&args);
    assert!(ok, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let decision = &doc["decision"];
    let fallback = decision["fallback"] == serde_json::json!(true);
    let tools = decision["tools"].as_array().unwrap().iter();
    let names = tools.map(|t| t["name"].as_str().unwrap().to_owned());
    (
        fallback,
        if fallback {
            Vec::new()
        } else {
            names.collect()
        },
    )
}

#[tokio::test]
async fn learn_from_store_ranks_the_tool_a_stored_run_used_for_a_like_request() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = toolbelt_store::Store::open(&url).await.unwrap();
    let input = serde_json::json!({"input": "frobnicate the zephyr ledger"});
    let run = store.runs().create("helper", &input, None).await.unwrap();
    let call =
        toolbelt_store::LogEntry::tool_call("file_read", 3).with_run(format!("run_{}", run.id));
    let failed = toolbelt_store::LogEntry::tool_call("git", 3)
        .with_run(run.id.clone())
        .failed("no repo");
    store.run_log().append(&[call, failed]).await.unwrap();
    store.close().await;
    let text = "frobnicate the zephyr ledger for april";
    let learned = ranked(text, &["--learn-from-store", "--database-url", &url]);
    assert_eq!(
        (ranked(text, &[]), learned.0, learned.1.first().cloned()),
        ((true, vec![]), false, Some("file_read".to_owned()))
    );
    assert!(
        !learned.1.contains(&"git".to_owned()),
        "a failed call teaches nothing: {learned:?}"
    );
}

/// `toolbelt route` by words only (no encoder), with only `env` of the model variables set.
fn route_with(env: &[(&str, &str)], args: &[&str]) -> (bool, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbelt"));
    command
        .arg("route")
        .args(args)
        .env_remove("TOOLBELT_EMBED_MODEL_DIR")
        .env_remove("TOOLBELT_MULTILINGUAL_MODEL_DIR")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("TOOLBELT_MODEL")
        .env_remove("TOOLBELT_PROVIDER")
        .env("TOOLBELT_NO_EMBEDDER", "1");
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.success(), text(out.stdout), text(out.stderr))
}

/// A chat completion whose answer is `content`.
fn completion(content: &str) -> String {
    serde_json::json!({"id": "c", "model": "m", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]})
    .to_string()
}

#[test]
fn llm_rerank_puts_the_models_pick_first_and_reports_it_per_line() {
    let dir = tempfile::tempdir().unwrap();
    let queries = write(
        &dir,
        "q.jsonl",
        "{\"id\": 1, \"query\": \"send an email to Bob about the meeting\"}\n{\"id\": 2, \"query\": \"what's the weather in Paris tomorrow\"}\n",
    );
    let args = [
        "--catalog",
        CATALOG,
        "--queries",
        &queries,
        "--top-k",
        "5",
        "--format",
        "jsonl",
    ];
    let (ok, plain, err) = route(&args);
    assert!(ok, "{err}");
    // The model answers with a list number: the fifth-ranked tool.
    let (url, bodies, server) =
        crate::cli_run::recording_openai(vec![completion("{\"tools\": [5]}"); 2]);
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "x"),
        ("TOOLBELT_MODEL", "m"),
    ];
    let mut reranked_args = args.to_vec();
    reranked_args.extend(["--llm-rerank", "5"]);
    let (ok, reranked, err) = route_with(&env, &reranked_args);
    assert!(ok, "{err}");
    server.join().unwrap();
    let lines = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    for (before, after) in lines(&plain).iter().zip(lines(&reranked)) {
        let before: Vec<&str> = before["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap())
            .collect();
        assert_eq!(before.len(), 5, "{before:?}");
        let mut want = vec![before[4]];
        want.extend(&before[..4]);
        assert_eq!(after["tools"], serde_json::json!(want), "{after}");
        assert_eq!(after["rerank"]["picked"], 1, "{after}");
        assert!(after["rerank"]["failure"].is_null(), "{after}");
        assert!(after["rerank"]["ms"].is_u64(), "{after}");
    }
    let bodies = bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        assert_eq!(
            (body["max_tokens"].clone(), body["temperature"].clone()),
            (96.into(), 0.0.into())
        );
        assert!(body.get("tools").is_none(), "{body}");
        let user = body["messages"][1]["content"].as_str().unwrap();
        assert!(user.starts_with("Tools:\n1. "), "{user}");
        assert!(user.contains("\n5. "), "{user}");
        assert!(!user.contains("\n6. "), "{user}");
    }
}

#[test]
fn llm_rerank_names_what_it_lacks() {
    let (ok, _, err) = route_with(
        &[],
        &["--catalog", CATALOG, "--llm-rerank", "5", "send an email"],
    );
    assert!(!ok);
    assert!(err.contains("--llm-rerank needs a model provider"), "{err}");
    let env = [
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ("OPENAI_API_KEY", "x"),
        ("TOOLBELT_MODEL", "m"),
    ];
    let (ok, _, err) = route_with(
        &env,
        &[
            "--catalog",
            CATALOG,
            "--router",
            "bm25",
            "--llm-rerank",
            "5",
            "send an email",
        ],
    );
    assert!(!ok);
    assert!(err.contains("leave --router at hybrid"), "{err}");
    let (ok, _, err) = route_with(
        &env,
        &["--catalog", CATALOG, "--llm-rerank", "1", "send an email"],
    );
    assert!(!ok);
    assert!(err.contains("--llm-rerank"), "{err}");
    // A model that cannot be reached keeps the hybrid decision and says why.
    let (ok, out, err) = route_with(
        &env,
        &[
            "--catalog",
            CATALOG,
            "--llm-rerank",
            "5",
            "send an email to Bob",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("llm rerank kept it"), "{out}");
}
