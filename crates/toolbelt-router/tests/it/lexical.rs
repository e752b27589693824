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
