//! `StoreRunLog`: the store's run log teaches the router only successful calls of stored
//! runs within the decay window.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_host::StoreRunLog;
use toolbelt_router::{LearnConfig, LearnedUsage};
use toolbelt_store::LogEntry;

use crate::support::{drop_schema, stores};

const DAY_MS: i64 = 24 * 3600 * 1000;

/// A call of `tool` in run `run`, `days` days before `now_ms`, failed when `error` is given.
fn call(tool: &str, run: &str, now_ms: i64, days: i64, error: Option<&str>) -> LogEntry {
    let mut entry = LogEntry::tool_call(tool, 5).with_run(run);
    if let Some(error) = error {
        entry = entry.failed(error);
    }
    entry.at = now_ms - days * DAY_MS;
    entry
}

#[tokio::test]
async fn failed_calls_and_calls_older_than_the_window_teach_nothing() {
    for (store, _dir) in stores("learning").await {
        let now_ms = 400 * DAY_MS;
        let input = |text: &str| json!({"input": text, "conversation_id": "c"});
        let pay = store
            .runs()
            .create("helper", &input("square up with the vendor"), None)
            .await
            .unwrap();
        let old = store
            .runs()
            .create("helper", &input("an ancient errand"), None)
            .await
            .unwrap();
        let (pay, old) = (format!("run_{}", pay.id), format!("run_{}", old.id));
        let entries = [
            call("pay_invoice", &pay, now_ms, 1, None),
            call("send_email", &pay, now_ms, 1, Some("smtp refused")),
            // 100 days: past three half-lives of 30 days, outside what is read.
            call("archive", &old, now_ms, 100, None),
        ];
        store.run_log().append(&entries).await.unwrap();
        let log = StoreRunLog::new(store.clone());
        let now = u64::try_from(now_ms / 1000).unwrap();
        let usage = LearnedUsage::from_run_log(&log, now, &LearnConfig::default())
            .await
            .unwrap();
        let examples = |tool: &str| usage.examples(tool).to_vec();
        assert_eq!(
            (
                examples("pay_invoice"),
                examples("send_email"),
                examples("archive")
            ),
            (vec!["square up with the vendor".to_owned()], vec![], vec![])
        );
        assert_eq!((usage.len(), usage.tools()), (1, 1));
        drop_schema(&store).await;
    }
}
