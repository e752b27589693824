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
        // Other rules: the version, then the rules (two writes).
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
            (4, 5, &anyone)
        );
        assert_eq!(opened, store.tools().get("greet").await.unwrap());
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
