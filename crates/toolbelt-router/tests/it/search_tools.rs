//! The `search_tools` meta-tool.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{ToolContext, ToolKind};
use toolbelt_router::{LexicalRouter, SearchTools};

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
