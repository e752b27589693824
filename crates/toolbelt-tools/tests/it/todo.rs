//! todo_add, todo_update and todo_list: one list per conversation, updated across calls.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::{ToolCall, ToolContext};

use crate::Fx;

#[tokio::test]
async fn a_list_is_updated_by_successive_calls() {
    let fx = Fx::new();
    let ctx = fx.ctx.clone().with_conversation_id("conv-1");
    fx.call_in(
        &ctx,
        "todo_add",
        json!({"items": ["write tests", " fix bug "]}),
    )
    .await
    .unwrap();
    fx.call_in(&ctx, "todo_update", json!({"id": 1, "status": "done"}))
        .await
        .unwrap();
    fx.call_in(
        &ctx,
        "todo_update",
        json!({"id": 2, "status": "in_progress"}),
    )
    .await
    .unwrap();
    let list = fx.call_in(&ctx, "todo_list", json!({})).await.unwrap();
    assert_eq!(list.text, "1/2 done\n[x] 1. write tests\n[~] 2. fix bug");
    assert_eq!(
        list.json.unwrap()["items"][1],
        json!({"id": 2, "title": "fix bug", "status": "in_progress"})
    );
}

#[tokio::test]
async fn conversations_have_separate_lists() {
    let fx = Fx::new();
    let a = fx.ctx.clone().with_conversation_id("a");
    fx.call_in(&a, "todo_add", json!({"items": ["only in a"]}))
        .await
        .unwrap();
    let b = fx.ctx.clone().with_conversation_id("b");
    assert_eq!(
        fx.call_in(&b, "todo_list", json!({})).await.unwrap().text,
        "the task list is empty"
    );
}

#[tokio::test]
async fn two_adds_in_one_batch_both_land_in_order() {
    let fx = Fx::new();
    let calls = vec![
        ToolCall::new("1", "todo_add", json!({"items": ["a", "b"]})),
        ToolCall::new("2", "todo_add", json!({"items": ["c"]})),
        ToolCall::new("3", "todo_list", json!({})),
    ];
    let results = fx.exec.execute_batch(&fx.tools, calls, &fx.ctx).await;
    assert_eq!(
        results[2].to_model_text(),
        "0/3 done\n[ ] 1. a\n[ ] 2. b\n[ ] 3. c"
    );
}

#[tokio::test]
async fn bad_ids_and_empty_items_are_named() {
    let fx = Fx::new();
    let err = fx
        .err("todo_update", json!({"id": 7, "status": "done"}))
        .await;
    assert_eq!(
        err.to_string(),
        "no task 7 in this conversation's list; call todo_list to see the ids"
    );
    let err = fx.err("todo_add", json!({"items": ["ok", "  "]})).await;
    assert_eq!(
        err.to_string(),
        "invalid arguments: at /items/1: the task is empty"
    );
    let err = fx
        .err("todo_update", json!({"id": 1, "status": "finished"}))
        .await;
    assert!(err.to_string().contains("/status"), "{err}");
    let err = fx
        .call_in(&ToolContext::new(), "todo_list", json!({}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the task list is not configured"),
        "{err}"
    );
}
