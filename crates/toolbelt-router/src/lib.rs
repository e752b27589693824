#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod catalog;
mod decision;
mod embedding;
mod error;
mod fit;
mod hybrid;
mod index;
mod keyword;
mod learn;
mod lexical;
mod llm;
mod rerank;
mod router;
mod search_tools;
mod skills;
mod text;
mod tokens;
mod tool_text;

pub use catalog::{
    Catalog, CatalogError, CatalogNote, CatalogOptions, CatalogReport, CatalogTool,
    catalog_toolset, load_catalog, load_catalog_file, read_catalog,
};
pub use decision::{BoundedFallback, RouteDecision, RouteOutcome, RouteRequest, ScoredTool};
#[cfg(feature = "openai-embeddings")]
pub use embedding::OpenAiEmbedder;
#[cfg(feature = "multilingual-embed")]
pub use embedding::UseEmbedder;
#[cfg(feature = "local-embed")]
pub use embedding::{EmbedPrecision, LocalEmbedError, LocalEmbedder};
pub use embedding::{Embedder, EmbedderError, EmbeddingRouter, RECENT_QUERIES, ToolView};
pub use error::RouteError;
pub use hybrid::{EmbeddingSlot, Fusion, HybridConfig, HybridRouter, LowConfidence, Ranking};
pub use index::{Coverage, LexicalConfig, LexicalIndex};
pub use keyword::{KeywordGroup, KeywordRouter};
pub use learn::{CallOutcome, LearnConfig, LearnedUsage, RunLog, UseRecord};
pub use lexical::LexicalRouter;
pub use llm::{Completer, LlmAnswer, LlmRouter};
pub use rerank::{LlmReranker, RerankRouter, Reranked};
pub use router::{AnyRouter, Router};
pub use search_tools::SearchTools;
pub use skills::{MAX_SKILL_DESCRIPTION, MAX_SKILL_NAME, Skill, SkillError, SkillSet};
pub use text::{ChineseMode, Lexicon, MAX_QUERY_BYTES};
pub use tokens::{TokenSavings, schema_tokens};
pub use tool_text::ToolText;
#[cfg(feature = "multilingual-embed")]
pub use toolbelt_embed::{EmbedError, UseEncoder};

const _: () = {
    const fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<AnyRouter>();
    assert_send_sync::<HybridRouter>();
    assert_send_sync::<LexicalRouter>();
    assert_send_sync::<LexicalIndex>();
    assert_send_sync::<EmbeddingRouter>();
    assert_send_sync::<LlmRouter>();
    assert_send_sync::<RerankRouter>();
    assert_send_sync::<SearchTools>();
    assert_send_sync::<SkillSet>();
    #[cfg(feature = "local-embed")]
    assert_send_sync::<LocalEmbedder>();
    #[cfg(feature = "multilingual-embed")]
    assert_send_sync::<UseEmbedder>();
};
