//! The `search_tools` meta-tool.

use pretty_assertions::assert_eq;
use serde_json::json;
use std::sync::Arc;
use toolbelt_core::{ToolContext, ToolKind};

use toolbelt_router::{HybridRouter, KeywordRouter, LexicalRouter, SearchTools};

use crate::{block_on, builtins};

#[test]
fn finds_tools_with_their_schemas() {
    let handle = SearchTools::new(LexicalRouter::default(), builtins())
        .into_handle()
        .unwrap();
    assert_eq!(handle.spec().kind, ToolKind::Meta);
    let out = block_on(handle.call(
        json!({"query": "schedule a cron job", "limit": 2}),
        ToolContext::new(),
    ))
    .unwrap();
    assert_eq!(SearchTools::found_tools(&out)[0], "routine");
    let first = &out.json.as_ref().unwrap()["tools"][0];
    assert_eq!(first["parameters"]["type"], "object");
    assert!(SearchTools::found_tools(&out).len() <= 2);
}

#[test]
fn empty_queries_are_refused_with_the_argument_named() {
    let tool = SearchTools::new(LexicalRouter::default(), builtins())
        .into_handle()
        .unwrap();
    let err = block_on(tool.call(json!({"query": " "}), ToolContext::new())).unwrap_err();
    assert!(err.to_string().contains("/query"), "{err}");
}

#[test]
fn the_hybrid_search_ranks_with_keyword_groups_too() {
    let router = HybridRouter::new(LexicalRouter::default()).with_keyword(KeywordRouter::builtin());
    let tool = SearchTools::hybrid(Arc::new(router), builtins())
        .with_default_limit(3)
        .into_handle()
        .unwrap();
    let out =
        block_on(tool.call(json!({"query": "每分钟提醒我喝水"}), ToolContext::new())).unwrap();
    let found = SearchTools::found_tools(&out);
    assert!(found.len() <= 3, "{found:?}");
    assert!(found.iter().any(|n| n == "routine"), "{found:?}");
    let err = block_on(tool.call(json!({"query": ""}), ToolContext::new())).unwrap_err();
    assert!(err.to_string().contains("/query"), "{err}");
}
