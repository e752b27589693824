//! Updating a stored tool from input that may omit its availability rules.

use pretty_assertions::assert_eq;
use toolbelt_host::tool_file::update_tool;
use toolbelt_store::{Availability, Condition, Revision, StoreError};

use crate::support::{drop_schema, only_kinds, printer, stores};

#[tokio::test]
async fn an_update_without_rules_keeps_the_stored_ones_and_new_rules_replace_them() {
    for (store, _dir) in stores("update_tool").await {
        let reviewers = only_kinds(&["reviewer"]);
        let v1 = printer("greet", "Greet", "v1").with_availability(reviewers.clone());
        let created = store.tools().create(&v1, "test", None).await.unwrap();
        // No rules given: a new version, the stored rules stay.
        let v2 = printer("greet", "Greet", "v2");
        let kept = update_tool(&store, &v2, None, Revision::Exactly(1), "ann", Some("v2"))
            .await
            .unwrap();
        assert_eq!(
            (kept.current_version, kept.revision, &kept.availability),
            (2, created.revision + 1, &reviewers)
        );
        // The same rules given: nothing more is written.
        let v3 = printer("greet", "Greet", "v3");
        let same = update_tool(
            &store,
            &v3,
            Some(&reviewers),
            Revision::Exactly(2),
            "ann",
            None,
        )
        .await
        .unwrap();
        assert_eq!((same.current_version, same.revision), (3, 3));
        // Other rules: the version and the rules in one write.
        let anyone = Availability::default();
        let v4 = printer("greet", "Greet", "v4");
        let opened = update_tool(&store, &v4, Some(&anyone), Revision::Exactly(3), "bo", None)
            .await
            .unwrap();
        assert_eq!(
            (
                opened.current_version,
                opened.revision,
                &opened.availability
            ),
            (4, 4, &anyone)
        );
        assert_eq!(opened, store.tools().get("greet").await.unwrap());
        // The same def with other rules: only the rules, no new version.
        let closed = update_tool(
            &store,
            &v4,
            Some(&reviewers),
            Revision::Exactly(4),
            "cy",
            None,
        )
        .await
        .unwrap();
        assert_eq!(
            (
                closed.current_version,
                closed.revision,
                &closed.availability,
                closed.changed_by.as_str()
            ),
            (4, 5, &reviewers, "cy")
        );
        assert_eq!(store.tools().versions("greet").await.unwrap().len(), 4);
        // A stale revision writes neither the version nor the rules.
        let stale = update_tool(&store, &v2, Some(&anyone), Revision::Exactly(4), "bo", None)
            .await
            .unwrap_err();
        assert!(matches!(stale, StoreError::Conflict { .. }), "{stale:?}");
        assert_eq!(store.tools().get("greet").await.unwrap(), closed);
        let opened = closed;
        // Bad rules are refused before the version is written.
        let mut bad = Availability::default();
        bad.conditions = vec![Condition::TimeWindow {
            from: "25:00".into(),
            to: "26:00".into(),
        }];
        let v5 = printer("greet", "Greet", "v5");
        let err = update_tool(&store, &v5, Some(&bad), Revision::Exactly(5), "bo", None)
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Invalid { .. }), "{err:?}");
        assert_eq!(store.tools().get("greet").await.unwrap(), opened);
        drop_schema(&store).await;
    }
}

/// Writers racing: two updates with new rules on one revision, and a third writer that takes
/// any revision (enabling the tool) between them. Whatever the order, the stored version and
/// rules come from one writer: never one writer's version with other rules, and never a version
/// written without its rules (a first cut wrote them as two transactions, and a write in between
/// left the version written and the rules refused).
#[tokio::test]
async fn racing_updates_with_rules_leave_one_writer_whole() {
    for (store, _dir) in stores("update_tool_race").await {
        store
            .tools()
            .create(&printer("greet", "Greet", "v1"), "test", None)
            .await
            .unwrap();
        let mut wins = 0;
        for round in 0..12 {
            let before = store.tools().get("greet").await.unwrap();
            let revision = Revision::Exactly(before.revision);
            let a_rules = only_kinds(&[&format!("a{round}")]);
            let b_rules = only_kinds(&[&format!("b{round}")]);
            let a_def = printer("greet", "Greet", &format!("a{round}"));
            let b_def = printer("greet", "Greet", &format!("b{round}"));
            let (a, b, _) = tokio::join!(
                update_tool(&store, &a_def, Some(&a_rules), revision, "a", None),
                update_tool(&store, &b_def, Some(&b_rules), revision, "b", None),
                async {
                    tokio::task::yield_now().await;
                    store
                        .tools()
                        .set_enabled("greet", true, Revision::Any, "c")
                        .await
                        .unwrap()
                },
            );
            let stored = store.tools().get("greet").await.unwrap();
            let won = [(a, a_def, a_rules), (b, b_def, b_rules)]
                .into_iter()
                .filter_map(|(result, def, rules)| match result {
                    Ok(_) => Some((def, rules)),
                    Err(StoreError::Conflict { .. }) => None,
                    Err(other) => panic!("round {round}: {other:?}"),
                })
                .collect::<Vec<_>>();
            match won.as_slice() {
                [] => {
                    // The enabling came first: both updates were stale and wrote nothing.
                    assert_eq!(stored.current_version, before.current_version);
                    assert_eq!(stored.availability, before.availability);
                }
                [(def, rules)] => {
                    wins += 1;
                    assert_eq!(stored.current_version, before.current_version + 1);
                    assert_eq!(stored.spec_hash, def.hash());
                    assert_eq!(&stored.availability, rules);
                }
                _ => panic!("round {round}: two updates on one revision both won"),
            }
        }
        assert!(wins > 0, "no update ever won");
        drop_schema(&store).await;
    }
}
