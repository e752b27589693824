//! Runs, API tokens, MCP servers, the change feed and the run log.

use std::time::Duration;
use toolbelt_store::Revision;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_store::{LogEntry, LogFilter, RunLogConfig, RunStatus, RunUpdate, StoreError, redact};

use crate::support::{each_engine, http_def};

#[tokio::test]
async fn a_run_moves_through_its_statuses() {
    each_engine(|store| async move {
        let run = store
            .runs()
            .create("helper", &json!({"message": "hi"}), Some("me"))
            .await
            .unwrap();
        assert_eq!((run.status, run.revision), (RunStatus::Queued, 1));
        let waiting = store
            .runs()
            .update(
                &run.id,
                &RunUpdate::status(RunStatus::Waiting).with_transcript(json!([{"role": "user"}])),
                Revision::Exactly(1),
            )
            .await
            .unwrap();
        assert_eq!(waiting.status, RunStatus::Waiting);
        assert_eq!(waiting.transcript, json!([{"role": "user"}]));
        let err = store
            .runs()
            .update(
                &run.id,
                &RunUpdate::status(RunStatus::Running),
                Revision::Exactly(1),
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
        let other = store
            .runs()
            .create("helper", &json!({}), None)
            .await
            .unwrap();
        assert_eq!(store.runs().interrupt_unfinished().await.unwrap(), 2);
        let done = store
            .runs()
            .update(
                &other.id,
                &RunUpdate::status(RunStatus::Completed).with_output(json!("bye")),
                Revision::Any,
            )
            .await
            .unwrap();
        assert!(done.finished_at.is_some());
        let interrupted = store
            .runs()
            .list(Some("helper"), Some(RunStatus::Interrupted), 10)
            .await
            .unwrap();
        assert_eq!(
            interrupted
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>(),
            [run.id.as_str()]
        );
        assert_eq!(store.runs().list(None, None, 10).await.unwrap().len(), 2);
    })
    .await;
}

#[tokio::test]
async fn waiting_runs_are_found_by_a_string_of_their_transcript_with_wildcards_taken_literally() {
    each_engine(|store| async move {
        let pending =
            |id: &str| json!({"pending": {"approvals": [{"id": id, "tool": "shell_exec"}]}});
        let mut ids = Vec::new();
        // `_` and `%` are LIKE's wildcards: "appr_1" must not match "apprX1" or "appr%1".
        for approval in ["appr_1", "apprX1", "appr%1", "appr_10"] {
            let run = store
                .runs()
                .create("helper", &json!({}), None)
                .await
                .unwrap();
            store
                .runs()
                .update(
                    &run.id,
                    &RunUpdate::status(RunStatus::Waiting).with_transcript(pending(approval)),
                    Revision::Any,
                )
                .await
                .unwrap();
            ids.push(run.id);
        }
        let done = store
            .runs()
            .create("helper", &json!({}), None)
            .await
            .unwrap();
        store
            .runs()
            .update(
                &done.id,
                &RunUpdate::status(RunStatus::Completed).with_transcript(pending("appr_1")),
                Revision::Any,
            )
            .await
            .unwrap();
        let found = |text: &'static str| {
            let store = store.clone();
            async move {
                store
                    .runs()
                    .mentioning(RunStatus::Waiting, text, 10)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|r| r.id)
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(found("appr_1").await, [ids[0].clone()]);
        assert_eq!(found("appr%1").await, [ids[2].clone()]);
        assert_eq!(found("appr_10").await, [ids[3].clone()]);
        assert_eq!(
            found("appr").await,
            Vec::<String>::new(),
            "whole strings only"
        );
        assert_eq!(
            found("a\\\"b").await,
            Vec::<String>::new(),
            "quotes and backslashes are no error"
        );
    })
    .await;
}

#[tokio::test]
async fn tokens_store_only_a_hash_and_can_be_revoked() {
    each_engine(|store| async move {
        let (token, secret) = store
            .tokens()
            .create("ci", &["tools:read".to_owned()])
            .await
            .unwrap();
        assert!(secret.starts_with("tb_") && secret.len() == 67, "{secret}");
        let stored: Vec<String> = sqlx::query_scalar("SELECT token_hash FROM api_tokens")
            .fetch_all(store.pool())
            .await
            .unwrap();
        assert_eq!(stored, vec![toolbelt_store::token_hash(&secret)]);
        let found = store.tokens().verify(&secret).await.unwrap().unwrap();
        assert_eq!(
            (found.name.as_str(), found.has_scope("tools:read")),
            ("ci", true)
        );
        assert!(store.tokens().verify("tb_wrong").await.unwrap().is_none());
        assert!(matches!(
            store.tokens().create("ci", &[]).await,
            Err(StoreError::AlreadyExists { .. })
        ));
        store.tokens().revoke(&token.name).await.unwrap();
        assert!(store.tokens().verify(&secret).await.unwrap().is_none());
    })
    .await;
}

#[tokio::test]
async fn a_token_limited_to_agents_keeps_its_list_and_an_unlimited_one_has_none() {
    each_engine(|store| async move {
        let agents = ["writer".to_owned(), "reviewer".to_owned()];
        let (_, secret) = store
            .tokens()
            .create_for("team", &["run".to_owned()], Some(&agents))
            .await
            .unwrap();
        let found = store.tokens().verify(&secret).await.unwrap().unwrap();
        assert_eq!(found.agents.as_deref(), Some(&agents[..]));
        let (_, open) = store
            .tokens()
            .create("ops", &["read".to_owned()])
            .await
            .unwrap();
        assert_eq!(
            store.tokens().verify(&open).await.unwrap().unwrap().agents,
            None
        );
        let listed: Vec<Option<Vec<String>>> = store
            .tokens()
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.agents)
            .collect();
        assert_eq!(listed, vec![None, Some(agents.to_vec())], "ops, then team");
        let Err(StoreError::Invalid { field, .. }) = store
            .tokens()
            .create_for("bad", &["run".to_owned()], Some(&[" ".to_owned()]))
            .await
        else {
            panic!("an empty agent name was stored");
        };
        assert_eq!(field, "agents[0]");
        assert!(
            store.tokens().get("bad").await.is_err(),
            "nothing half-written"
        );
    })
    .await;
}

#[tokio::test]
async fn mcp_servers_and_the_change_feed() {
    each_engine(|store| async move {
        let before = store.changes().latest().await.unwrap();
        let server = store
            .mcp_servers()
            .create("fs", &json!({"command": "npx"}))
            .await
            .unwrap();
        let updated = store
            .mcp_servers()
            .update(
                "fs",
                &json!({"command": "node"}),
                Revision::Exactly(server.revision),
            )
            .await
            .unwrap();
        assert_eq!(updated.config, json!({"command": "node"}));
        let off = store
            .mcp_servers()
            .set_enabled("fs", false, Revision::Any)
            .await
            .unwrap();
        assert!(!off.enabled);
        assert!(matches!(
            store.mcp_servers().create("fs", &json!("x")).await,
            Err(StoreError::Invalid { .. })
        ));
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        store
            .mcp_servers()
            .delete("fs", Revision::Any)
            .await
            .unwrap();
        assert!(store.mcp_servers().list().await.unwrap().is_empty());
        let changes = store.changes().since(before, 100).await.unwrap();
        let seen: Vec<_> = changes
            .iter()
            .map(|c| (c.entity.as_str(), c.name.as_str(), c.op.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("mcp_server", "fs", "upsert"),
                ("mcp_server", "fs", "upsert"),
                ("mcp_server", "fs", "upsert"),
                ("tool", "search", "upsert"),
                ("mcp_server", "fs", "delete"),
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn the_batched_run_log_writes_everything_on_flush() {
    each_engine(|store| async move {
        let (writer, task) = store
            .run_log()
            .writer(RunLogConfig::default().with_max_batch(64));
        for i in 0..300 {
            let args = redact(
                &json!({"q": format!("k{i}"), "api_key": "s3cret", "note": "uses s3cret"}),
                &["s3cret"],
            );
            let entry = LogEntry::tool_call("search", i)
                .with_run("r1")
                .with_agent("a")
                .with_arguments(args);
            writer
                .log(if i % 100 == 0 {
                    entry.failed("boom")
                } else {
                    entry
                })
                .await
                .unwrap();
        }
        writer
            .log(
                LogEntry::agent_run("a", 5)
                    .with_run("r2")
                    .with_tokens(10, 3),
            )
            .await
            .unwrap();
        writer.flush().await.unwrap();
        let filter = LogFilter::default().with_run("r1");
        let rows = store.run_log().read(&filter, 1_000).await.unwrap();
        assert_eq!(rows.len(), 300);
        assert_eq!(rows.iter().filter(|r| !r.entry.ok).count(), 3);
        assert_eq!(
            rows[7].entry.arguments,
            Some(json!({"q": "k7", "api_key": "[redacted]", "note": "[redacted]"}))
        );
        let runs = store
            .run_log()
            .read(&LogFilter::default().with_run("r2"), 10)
            .await
            .unwrap();
        assert_eq!(
            (runs[0].entry.tokens_in, runs[0].entry.tool.clone()),
            (Some(10), None)
        );
        drop(writer);
        tokio::time::timeout(Duration::from_secs(5), task.shutdown())
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_large_run_log_batch_is_written_whole_and_in_order() {
    // ~150 KiB of rows: one statement on SQLite, a dozen in one transaction on Postgres.
    each_engine(|store| async move {
        let entries: Vec<LogEntry> = (0..1_500)
            .map(|i| {
                LogEntry::tool_call("search", i)
                    .with_run("big")
                    .with_arguments(json!({"q": format!("query number {i}")}))
            })
            .collect();
        store.run_log().append(&entries).await.unwrap();
        let rows = store
            .run_log()
            .read(&LogFilter::default().with_run("big"), 2_000)
            .await
            .unwrap();
        let durations: Vec<i64> = rows.iter().map(|r| r.entry.duration_ms).collect();
        assert_eq!(durations, (0..1_500).collect::<Vec<i64>>());
        assert_eq!(
            rows[1_499].entry.arguments,
            Some(json!({"q": "query number 1499"}))
        );
    })
    .await;
}

#[tokio::test]
async fn the_run_log_flushes_by_time_without_being_asked() {
    each_engine(|store| async move {
        let config = RunLogConfig::default().with_flush_interval(Duration::from_millis(20));
        let (writer, _task) = store.run_log().writer(config);
        writer.log(LogEntry::tool_call("search", 1)).await.unwrap();
        let mut found = 0;
        for _ in 0..100 {
            found = store
                .run_log()
                .read(&LogFilter::default(), 10)
                .await
                .unwrap()
                .len();
            if found == 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(found, 1);
    })
    .await;
}

#[tokio::test]
async fn run_log_stats_group_calls_by_tool_and_bucket_and_tokens_by_agent() {
    each_engine(|store| async move {
        let mut entries = Vec::new();
        for (at, tool, ms, ok) in [
            (1_000, "a", 10, true),
            (1_500, "a", 30, false),
            (1_900, "b", 5, true),
            (2_100, "a", 7, true),
            (500, "a", 99, true), // before `since`
        ] {
            let mut e = LogEntry::tool_call(tool, ms);
            e.at = at;
            entries.push(if ok { e } else { e.failed("boom") });
        }
        for (agent, tin, tout) in [("x", 10, 2), ("x", 5, 1), ("y", 7, 0)] {
            let mut e = LogEntry::agent_run(agent, 3).with_tokens(tin, tout);
            e.at = 1_200;
            entries.push(e);
        }
        store.run_log().append(&entries).await.unwrap();
        let top1 = store
            .run_log()
            .tool_call_stats(1_000, 1_000, 1)
            .await
            .unwrap();
        assert!(top1.iter().all(|b| b.tool == "a"), "{top1:?}");
        let totals = store.run_log().tool_call_totals(1_000, 10).await.unwrap();
        let got: Vec<_> = totals
            .iter()
            .map(|b| (b.tool.as_str(), b.calls, b.errors, b.max_ms))
            .collect();
        assert_eq!(got, vec![("a", 3, 1, 30), ("b", 1, 0, 5)]);
        let stats = store
            .run_log()
            .tool_call_stats(1_000, 1_000, 10)
            .await
            .unwrap();
        let got: Vec<_> = stats
            .iter()
            .map(|b| {
                (
                    b.tool.as_str(),
                    b.bucket_start,
                    b.calls,
                    b.errors,
                    b.total_ms,
                    b.max_ms,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", 1_000, 2, 1, 40, 30),
                ("b", 1_000, 1, 0, 5, 5),
                ("a", 2_000, 1, 0, 7, 7)
            ]
        );
        let tokens = store.run_log().agent_token_stats(0).await.unwrap();
        let got: Vec<_> = tokens
            .iter()
            .map(|t| (t.agent.as_str(), t.runs, t.tokens_in, t.tokens_out))
            .collect();
        assert_eq!(got, vec![("x", 2, 15, 3), ("y", 1, 7, 0)]);
    })
    .await;
}
