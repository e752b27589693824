//! Integration tests of toolbelt-router.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod catalog;
mod embedding;
mod hybrid;
mod input;
mod learn;
mod lexical;
mod llm;
#[cfg(feature = "local-embed")]
mod local_embed;
#[cfg(feature = "multilingual-embed")]
mod multilingual;
mod near_duplicates;
#[cfg(feature = "openai-embeddings")]
mod openai;
mod rerank;
mod search_tools;
mod seed;
mod skills;

use serde_json::json;
use toolbelt_core::{ToolHandle, Toolset};
use toolbelt_router::{CatalogTool, RouteRequest, read_catalog};

/// A catalog tool with one string parameter.
pub(crate) fn tool(name: &str, description: &str, tag: &str) -> ToolHandle {
    let spec = toolbelt_core::ToolSpec::builder(name)
        .description(description)
        .parameters(json!({"type": "object", "properties": {"input": {"type": "string"}}}))
        .tag(tag)
        .build()
        .unwrap();
    ToolHandle::new(CatalogTool::new(spec)).unwrap()
}

/// Toolbelt's built-in tools as the routing examples list them, with realistic descriptions.
pub(crate) fn builtins() -> Toolset {
    Toolset::from_tools([
        tool(
            "file_read",
            "Read a text file from the workspace",
            "file_ops",
        ),
        tool("file_write", "Create or overwrite a file", "file_ops"),
        tool(
            "file_edit",
            "Edit a file by replacing a snippet of text",
            "file_ops",
        ),
        tool("list_dir", "List the entries of a directory", "file_ops"),
        tool(
            "file_search",
            "Search file contents with a regular expression",
            "file_ops",
        ),
        tool(
            "shell_exec",
            "Run a shell command in the workspace",
            "shell",
        ),
        tool(
            "git",
            "Run a git subcommand: status, diff, log, commit, push",
            "git_ops",
        ),
        tool(
            "http_request",
            "Send an HTTP request to a URL and return the response",
            "web",
        ),
        tool("memory_store", "Save a fact to long-term memory", "memory"),
        tool(
            "memory_recall",
            "Search long-term memory for saved facts",
            "memory",
        ),
        tool("memory_forget", "Delete a saved memory", "memory"),
        tool("todo_add", "Add an item to the todo list", "todo"),
        tool("todo_list", "Show the todo list", "todo"),
        tool(
            "ask_human",
            "Ask the user a question and wait for the answer",
            "human",
        ),
        tool("config", "Read or change the agent's settings", "config"),
        tool(
            "self_info",
            "Describe the agent: version, model, tools",
            "config",
        ),
        tool(
            "routine",
            "Create, list or delete scheduled routines run on a cron schedule",
            "routine",
        ),
    ])
}

/// The evaluation catalog under `eval/` (322 tools).
pub(crate) fn eval_catalog() -> Toolset {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval/catalog.jsonl");
    let file = std::io::BufReader::new(std::fs::File::open(path).unwrap());
    toolbelt_router::catalog_toolset(read_catalog(file).unwrap())
}

pub(crate) fn request(input: &str, toolset: &Toolset) -> RouteRequest {
    RouteRequest::new(input, toolset.clone())
}

/// Runs a future to completion on a fresh current-thread runtime.
/// 48 calls of one text each, at once on a multi-threaded runtime (calls arriving while a pass
/// runs join the next), get the vectors each text gets alone outside a runtime (an empty one
/// for a text the model does not read).
#[cfg(any(feature = "local-embed", feature = "multilingual-embed"))]
pub(crate) fn concurrent_calls_get_their_own_vectors<E>(model: &E, texts: &[String])
where
    E: toolbelt_router::Embedder + Clone,
{
    // One at a time, outside a runtime: the encoder in this thread.
    let alone: Vec<Vec<f32>> = texts
        .iter()
        .map(|t| {
            block_on(model.embed(std::slice::from_ref(t)))
                .unwrap()
                .remove(0)
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    let together: Vec<Vec<f32>> = rt.block_on(async {
        let tasks: Vec<_> = (0..48)
            .map(|i| {
                let (model, text) = (model.clone(), texts[i % texts.len()].clone());
                tokio::spawn(async move { model.embed(&[text]).await.unwrap().remove(0) })
            })
            .collect();
        let mut out = Vec::new();
        for task in tasks {
            out.push(task.await.unwrap());
        }
        out
    });
    for (i, v) in together.iter().enumerate() {
        let expected = &alone[i % texts.len()];
        if expected.is_empty() {
            // A text the model does not read keeps its empty vector among the others.
            assert!(v.is_empty(), "call {i} got a vector for an unread text");
            continue;
        }
        let cosine: f32 = v.iter().zip(expected).map(|(a, b)| a * b).sum();
        assert!(
            cosine > 0.9999,
            "call {i} ({}) got another text's vector: {cosine}",
            texts[i % texts.len()]
        );
    }
}

pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
