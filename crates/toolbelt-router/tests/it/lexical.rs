//! The lexical router keeps its index in step with the toolset it is given.

use pretty_assertions::assert_eq;
use toolbelt_core::Toolset;
use toolbelt_router::LexicalRouter;

use crate::tool;

#[test]
fn index_follows_added_removed_and_changed_tools() {
    let router = LexicalRouter::default();
    let a = tool(
        "convert_currency",
        "Convert money between currencies",
        "finance",
    );
    let b = tool("send_email", "Send an email with attachments", "email");
    let first = Toolset::from_tools([a.clone(), b.clone()]);
    assert_eq!(router.search(&first, "email", 3)[0].name, "send_email");
    let changed = tool("send_email", "Post a letter by snail mail", "post");
    let second = Toolset::from_tools([a, changed]);
    assert!(router.search(&second, "attachments", 3).is_empty());
    assert_eq!(router.search(&second, "letter", 3)[0].name, "send_email");
    let third = Toolset::from_tools([b]);
    assert!(router.search(&third, "currency", 3).is_empty());
    assert_eq!(router.with_index(&third, |i| i.len()), 1);
}

#[test]
fn names_split_at_case_and_underscores() {
    let router = LexicalRouter::default();
    let tools = Toolset::from_tools([
        tool("getUserProfile", "Fetch data", "users"),
        tool("http_request", "Call a URL", "web"),
    ]);
    assert_eq!(
        router.search(&tools, "user profile", 1)[0].name,
        "getUserProfile"
    );
    assert_eq!(router.search(&tools, "HTTP", 1)[0].name, "http_request");
}

/// Two toolsets with the same tool names but different texts, routed from
/// many tasks at once through one router: each search must see its own index.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_toolsets_never_share_an_index() {
    use toolbelt_router::{RouteRequest, Router};
    let router = LexicalRouter::default();
    let mut sets = Vec::new();
    for (i, topic) in ["weather forecast rain", "invoice payment refund"]
        .iter()
        .enumerate()
    {
        let mut tools = vec![tool(&format!("only_in_set_{i}"), topic, "x")];
        for j in 0..200 {
            tools.push(tool(
                &format!("shared_{j}"),
                &format!(
                    "filler {i} tool number {j} {}",
                    if i == 0 { "alpha" } else { "beta" }
                ),
                "x",
            ));
        }
        sets.push(Toolset::from_tools(tools));
    }
    let mut tasks = Vec::new();
    for n in 0..400usize {
        let router = router.clone();
        let set = sets[n % 2].clone();
        tasks.push(tokio::spawn(async move {
            let query = if n % 2 == 0 {
                "will it rain"
            } else {
                "refund the invoice"
            };
            let d = router
                .route(&RouteRequest::new(query, set.clone()))
                .await
                .unwrap();
            let word = if n % 2 == 0 { "alpha" } else { "beta" };
            let hits = router.search(&set, word, 5);
            (n % 2, d.tool_names(), hits)
        }));
    }
    for task in tasks {
        let (i, names, hits) = task.await.unwrap();
        assert_eq!(names[0], format!("only_in_set_{i}"), "{names:?}");
        assert!(
            !names.contains(&format!("only_in_set_{}", 1 - i)),
            "{names:?}"
        );
        // The filler words exist only in their own toolset's texts.
        assert_eq!(hits.len(), 5, "set {i} searched another set's index");
    }
    // Both indexes are kept side by side.
    assert!(router.is_prepared(&sets[0]) && router.is_prepared(&sets[1]));
}

/// A registry's view finds its index without a walk over its tools; a view of the same
/// tools made another way finds it by walking them; a view taken after the registry
/// changed a tool is not that index, and searching it sees the new text.
#[test]
fn an_index_is_found_by_its_view_and_a_changed_registry_is_indexed_again() {
    let registry = toolbelt_core::Registry::new();
    registry
        .add_tools([
            tool("send_email", "Send an email with attachments", "email"),
            tool("convert_currency", "Convert money", "finance"),
        ])
        .unwrap();
    let router = LexicalRouter::default();
    let view = registry.all();
    router.prepare(&view);
    assert!(router.is_prepared(&registry.all()));
    assert!(router.is_prepared(&Toolset::from_tools(view.iter().cloned())));
    assert!(!router.is_prepared(&registry.select("email").unwrap()));

    registry
        .replace(tool("send_email", "Post a letter by snail mail", "post"))
        .unwrap();
    let changed = registry.all();
    assert!(!router.is_prepared(&changed));
    assert!(router.search(&changed, "attachments", 3).is_empty());
    assert_eq!(router.search(&changed, "letter", 3)[0].name, "send_email");
    // The old view still has its own index.
    assert_eq!(router.search(&view, "attachments", 3)[0].name, "send_email");
}

/// The English factor weighs a request's English synonyms only: with it at 0, "erase" no longer
/// finds a tool that says "delete", while a Chinese request still meets the English text.
#[test]
fn the_english_concept_factor_scales_request_synonyms_and_keeps_chinese_links() {
    let tools = Toolset::from_tools([
        tool("file_delete", "Delete a file from the disk", "file"),
        tool("http_get", "Fetch a web page", "web"),
    ]);
    let with = LexicalRouter::new(
        toolbelt_router::LexicalConfig::default().with_english_concept_factor(1.0),
    );
    let without = LexicalRouter::new(
        toolbelt_router::LexicalConfig::default().with_english_concept_factor(0.0),
    );
    assert_eq!(
        with.search(&tools, "erase the old logs", 2)[0].name,
        "file_delete"
    );
    assert!(without.search(&tools, "erase the old logs", 2).is_empty());
    assert_eq!(without.search(&tools, "删除文件", 2)[0].name, "file_delete");
}
