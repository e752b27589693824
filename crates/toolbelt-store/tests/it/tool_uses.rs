//! `RunLog::tool_uses`: tool calls of stored runs with their request, what learning reads.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_store::{LogEntry, Store};

use crate::support::each_engine;

/// A logged call of `tool` at `at` ms in run `run`, failed when `error` is given.
fn call(tool: &str, run: Option<&str>, at: i64, error: Option<&str>) -> LogEntry {
    let mut entry = LogEntry::tool_call(tool, 5);
    if let Some(run) = run {
        entry = entry.with_run(run);
    }
    if let Some(error) = error {
        entry = entry.failed(error);
    }
    entry.at = at;
    entry
}

/// (at, tool, request, ok, error) of each use read since `since` (at most `limit`).
async fn read(store: &Store, since: i64, limit: i64) -> Vec<(i64, String, String, bool, bool)> {
    let uses = store.run_log().tool_uses(since, limit).await.unwrap();
    uses.into_iter()
        .map(|u| (u.at, u.tool, u.request, u.ok, u.error.is_some()))
        .collect()
}

#[tokio::test]
async fn tool_calls_come_with_their_runs_request_oldest_first_bounded_and_since() {
    each_engine(|store| async move {
        let input =
            json!({"input": "wire the quarterly numbers to finance", "conversation_id": "c1"});
        let a = store.runs().create("helper", &input, None).await.unwrap();
        let b = store
            .runs()
            .create(
                "helper",
                &json!({"input": "what does the README say"}),
                None,
            )
            .await
            .unwrap();
        let api_a = format!("run_{}", a.id);
        let mut run_entry = LogEntry::agent_run("helper", 9).with_run(api_a.clone());
        run_entry.at = 1_500;
        let entries = [
            call("send_email", Some(&api_a), 500, None),
            call("send_email", Some(&api_a), 1_000, None),
            call("send_email", Some(&api_a), 2_000, Some("smtp refused")),
            // A direct call belongs to no run, and a run id the store does not hold joins nothing.
            call("send_email", None, 2_500, None),
            call("send_email", Some("run_gone"), 2_600, None),
            // The store's own id (no `run_` prefix) joins too.
            call("file_read", Some(&b.id), 3_000, None),
            run_entry,
        ];
        store.run_log().append(&entries).await.unwrap();
        let wire = "wire the quarterly numbers to finance".to_owned();
        let readme = "what does the README say".to_owned();
        let email = "send_email".to_owned();
        assert_eq!(
            read(&store, 1_000, 100).await,
            [
                (1_000, email.clone(), wire.clone(), true, false),
                (2_000, email.clone(), wire.clone(), false, true),
                (3_000, "file_read".to_owned(), readme.clone(), true, false),
            ],
            "since 1000: the call at 500 is left out; the failed call is there, marked"
        );
        assert_eq!(
            read(&store, 0, 2).await,
            [
                (2_000, email.clone(), wire.clone(), false, true),
                (3_000, "file_read".to_owned(), readme, true, false),
            ],
            "the limit keeps the newest, still oldest first"
        );
        assert_eq!(read(&store, 3_001, 100).await, []);
    })
    .await;
}
