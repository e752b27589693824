//! Tools: create, versions, conflicts, rollback, enable, delete, invalid input.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_store::{Availability, Entity, Revision, StoreError, ToolDef, ToolSource};

use crate::support::{each_engine, http_def, spec};

#[tokio::test]
async fn create_then_update_keeps_every_version() {
    each_engine(|store| async move {
        let v1 = store
            .tools()
            .create(&http_def("search", "first"), "tester", None)
            .await
            .unwrap();
        assert_eq!(
            (v1.current_version, v1.latest_version, v1.revision),
            (1, 1, 1)
        );
        let v2 = store
            .tools()
            .update(
                &http_def("search", "second"),
                Revision::Exactly(v1.revision),
                "tester",
                None,
            )
            .await
            .unwrap();
        assert_eq!((v2.current_version, v2.revision), (2, 2));
        assert_eq!(v2.spec.description, "second");
        assert_eq!(v2.source, ToolSource::Declarative);
        let versions = store.tools().versions("search").await.unwrap();
        let descriptions: Vec<_> = versions
            .iter()
            .map(|v| v.spec.description.as_str())
            .collect();
        assert_eq!(descriptions, ["first", "second"]);
        assert_eq!(versions[0].changed_by, "tester");
    })
    .await;
}

#[tokio::test]
async fn an_identical_update_writes_nothing() {
    each_engine(|store| async move {
        let v1 = store
            .tools()
            .create(&http_def("search", "same"), "tester", None)
            .await
            .unwrap();
        let again = store
            .tools()
            .update(
                &http_def("search", "same"),
                Revision::from(1),
                "tester",
                None,
            )
            .await
            .unwrap();
        assert_eq!(again, v1);
    })
    .await;
}

#[tokio::test]
async fn a_stale_revision_is_a_conflict() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        store
            .tools()
            .update(&http_def("search", "b"), Revision::from(1), "tester", None)
            .await
            .unwrap();
        let err = store
            .tools()
            .update(&http_def("search", "c"), Revision::from(1), "tester", None)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                StoreError::Conflict {
                    expected: 1,
                    found: 2,
                    ..
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            store.tools().get("search").await.unwrap().spec.description,
            "b"
        );
    })
    .await;
}

#[tokio::test]
async fn concurrent_updates_from_one_revision_let_exactly_one_win() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..8 {
            let store = store.clone();
            tasks.spawn(async move {
                store
                    .tools()
                    .update(
                        &http_def("search", &format!("v{i}")),
                        Revision::from(1),
                        "tester",
                        None,
                    )
                    .await
            });
        }
        let results = tasks.join_all().await;
        let wins = results.iter().filter(|r| r.is_ok()).count();
        let conflicts = results
            .iter()
            .filter(|r| matches!(r, Err(StoreError::Conflict { .. })))
            .count();
        assert_eq!((wins, conflicts), (1, 7), "{results:?}");
        assert_eq!(store.tools().versions("search").await.unwrap().len(), 2);
    })
    .await;
}

#[tokio::test]
async fn a_taken_name_is_refused() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        let err = store
            .tools()
            .create(&http_def("search", "b"), "tester", None)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "tool `search` already exists; update it instead or pick another name"
        );
    })
    .await;
}

#[tokio::test]
async fn an_invalid_schema_is_refused_and_nothing_is_written() {
    each_engine(|store| async move {
        let mut def = http_def("bad", "x");
        def.spec.parameters = json!({"type": "object", "properties": {"q": {"type": "strin"}}});
        let err = store
            .tools()
            .create(&def, "tester", None)
            .await
            .unwrap_err();
        let StoreError::Invalid { field, reason } = &err else {
            panic!("{err:?}")
        };
        assert_eq!(field, "parameters");
        assert!(reason.starts_with("not a valid JSON Schema"), "{reason}");
        assert!(matches!(
            store.tools().get("bad").await,
            Err(StoreError::NotFound { .. })
        ));
        let mut def = http_def("bad", "x");
        def.definition = None;
        let err = store
            .tools()
            .create(&def, "tester", None)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid definition: a declarative tool needs a definition"
        );
    })
    .await;
}

#[tokio::test]
async fn rollback_makes_an_old_version_current_and_numbering_continues() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "one"), "tester", None)
            .await
            .unwrap();
        store
            .tools()
            .update(
                &http_def("search", "two"),
                Revision::from(1),
                "tester",
                None,
            )
            .await
            .unwrap();
        let back = store
            .tools()
            .rollback("search", 1, Revision::Exactly(2), "ops")
            .await
            .unwrap();
        assert_eq!((back.current_version, back.latest_version), (1, 2));
        assert_eq!(back.spec.description, "one");
        let next = store
            .tools()
            .update(
                &http_def("search", "three"),
                Revision::Exactly(back.revision),
                "tester",
                None,
            )
            .await
            .unwrap();
        assert_eq!(next.current_version, 3);
        let err = store
            .tools()
            .rollback("search", 9, Revision::Any, "ops")
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), "tool version `search@9` not found");
    })
    .await;
}

#[tokio::test]
async fn disable_enable_and_delete() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "a"), "tester", None)
            .await
            .unwrap();
        let off = store
            .tools()
            .set_enabled("search", false, Revision::Any, "ops")
            .await
            .unwrap();
        assert!(!off.enabled);
        let on = store
            .tools()
            .set_enabled("search", true, Revision::Exactly(off.revision), "ops")
            .await
            .unwrap();
        assert!(on.enabled);
        store
            .tools()
            .delete("search", Revision::Exactly(on.revision))
            .await
            .unwrap();
        assert!(matches!(
            store.tools().get("search").await,
            Err(StoreError::NotFound { .. })
        ));
        assert!(matches!(
            store.tools().versions("search").await,
            Err(StoreError::NotFound { .. })
        ));
    })
    .await;
}

#[tokio::test]
async fn tool_names_of_adr_0007_round_trip() {
    each_engine(|store| async move {
        for name in ["github.issues/list", "my tool", "日本語"] {
            let mut def = http_def("x", "d");
            def.spec = spec(name, "d");
            store.tools().create(&def, "tester", None).await.unwrap();
            assert_eq!(store.tools().get(name).await.unwrap().name(), name);
        }
        assert_eq!(store.tools().list().await.unwrap().len(), 3);
    })
    .await;
}

#[tokio::test]
async fn an_update_returns_what_a_read_gives_and_refuses_what_it_cannot_write() {
    each_engine(|store| async move {
        let v1 = store
            .tools()
            .create(&http_def("search", "first"), "tester", None)
            .await
            .unwrap();
        let mut availability = Availability::default();
        availability.agent_kinds = vec!["researcher".to_owned()];
        // An update writes a version and leaves the tool's rules as they were.
        let def = http_def("search", "second").with_availability(availability.clone());
        let updated = store
            .tools()
            .update(
                &def,
                Revision::Exactly(v1.revision),
                "tester",
                Some("faster"),
            )
            .await
            .unwrap();
        assert_eq!(updated, store.tools().get("search").await.unwrap());
        assert_eq!(updated.availability, Availability::default());
        assert_eq!(
            store.tools().versions("search").await.unwrap()[1]
                .note
                .as_deref(),
            Some("faster")
        );
        // New rules on the same version: the revision moves, no version is written.
        let again = store
            .tools()
            .set_availability(
                "search",
                &availability,
                Revision::Exactly(updated.revision),
                "tester",
            )
            .await
            .unwrap();
        assert_eq!(
            (again.current_version, again.revision),
            (2, updated.revision + 1)
        );
        assert_eq!(again.availability, availability);
        assert_eq!(again, store.tools().get("search").await.unwrap());
        // A tool of another source is not replaced, and nothing is written.
        let compiled = ToolDef::new(spec("search", "third"), ToolSource::Compiled);
        let err = store
            .tools()
            .update(&compiled, Revision::Any, "tester", None)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, StoreError::Invalid { field, .. } if field == "source"),
            "{err:?}"
        );
        assert!(err.to_string().contains("is a declarative tool"), "{err}");
        assert_eq!(store.tools().get("search").await.unwrap(), again);
        assert!(matches!(
            store
                .tools()
                .update(&http_def("nobody", "x"), Revision::Any, "tester", None)
                .await,
            Err(StoreError::NotFound { .. })
        ));
    })
    .await;
}

#[tokio::test]
async fn any_revision_writes_and_a_stale_one_names_the_entity_and_its_code() {
    each_engine(|store| async move {
        let tools = store.tools();
        tools
            .create(&http_def("search", "first"), "tester", None)
            .await
            .unwrap();
        let any = tools
            .set_enabled("search", false, Revision::Any, "tester")
            .await
            .unwrap();
        assert_eq!((any.enabled, any.revision), (false, 2));
        let err = tools
            .set_enabled("search", true, Revision::Exactly(1), "tester")
            .await
            .unwrap_err();
        assert_eq!(
            (err.entity(), err.code()),
            (Some(Entity::Tool), "revision_mismatch")
        );
        let StoreError::Conflict {
            expected, found, ..
        } = err
        else {
            panic!("not a conflict: {err:?}");
        };
        assert_eq!((expected, found), (1, 2));
        let missing = tools.delete("nobody", Revision::Any).await.unwrap_err();
        assert_eq!(missing.code(), "tool_not_found");
        let version = tools.version("search", 9).await.unwrap_err();
        assert_eq!(version.code(), "tool_version_not_found");
    })
    .await;
}
