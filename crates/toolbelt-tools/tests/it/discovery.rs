//! The tool list: discovery, groups as in the routing design, effects and approval defaults.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{Effect, Executor, Registry, ToolCall, Toolset};
use toolbelt_tools::{BUILTIN_GROUPS, builtin_tools};

use crate::Fx;

fn names(tools: &[toolbelt_core::ToolHandle]) -> Vec<String> {
    let mut names: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
    names.sort();
    names
}

#[test]
fn every_builtin_is_discovered_at_link_time() {
    let discovered = Registry::discovered().unwrap();
    let builtin = builtin_tools().unwrap();
    for name in names(&builtin) {
        assert!(discovered.contains(&name), "{name} is not discovered");
    }
}

#[test]
fn groups_follow_seed_002() {
    let registry = Registry::new();
    registry.add_tools(builtin_tools().unwrap()).unwrap();
    let groups: BTreeMap<String, Vec<String>> = BUILTIN_GROUPS
        .iter()
        .map(|g| (g.to_string(), names(&registry.tools_by_tag(g))))
        .collect();
    let expected = json!({
        "config": ["config", "self_info"],
        "file_ops": ["file_edit", "file_read", "file_search", "file_write", "git", "list_dir"],
        "git_ops": ["git", "git_write"],
        "human": ["ask_human"],
        "memory": ["memory_forget", "memory_list", "memory_recall", "memory_store"],
        "routine": ["routine"],
        "shell": ["shell_exec"],
        "todo": ["todo_add", "todo_list", "todo_update"],
        "web": ["http_get", "http_request"],
    });
    assert_eq!(serde_json::to_value(groups).unwrap(), expected);
}

#[test]
fn dangerous_tools_need_approval_by_default() {
    let mut table: Vec<(String, bool, bool)> = builtin_tools()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t.name().to_string(),
                t.spec().policy.effect == Effect::Mutating,
                t.spec().policy.needs_approval,
            )
        })
        .filter(|(_, mutating, approval)| *mutating || *approval)
        .collect();
    table.sort();
    let expected: Vec<(String, bool, bool)> = [
        ("file_edit", true, true),
        ("file_write", true, true),
        ("git_write", true, true),
        ("http_request", true, true),
        ("memory_forget", true, false),
        ("memory_store", true, false),
        ("routine", true, true),
        ("shell_exec", true, true),
        ("todo_add", true, false),
        ("todo_update", true, false),
    ]
    .into_iter()
    .map(|(n, m, a)| (n.to_owned(), m, a))
    .collect();
    assert_eq!(table, expected);
}

#[tokio::test]
async fn without_an_approver_writes_are_refused_and_reads_run() {
    let fx = Fx::new();
    let exec = Executor::new();
    let tools = Toolset::from_tools(builtin_tools().unwrap());
    let write = ToolCall::new("1", "file_write", json!({"path": "x", "content": "y"}));
    let result = exec.execute(&tools, write, &fx.ctx).await;
    assert_eq!(
        result.to_model_text(),
        "error: denied: `file_write` needs approval and no approver is configured"
    );
    assert!(!fx.dir.path().join("x").exists());
    let read = exec
        .execute(&tools, ToolCall::new("2", "list_dir", json!({})), &fx.ctx)
        .await;
    assert_eq!(read.to_model_text(), ". is empty");
}
