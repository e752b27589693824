//! Skills: upsert says what it did, reads return what was put, bad drafts name the field.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use toolbelt_store::{Entity, SkillChange, SkillDraft, StoreError};

use crate::support::each_engine;

fn pdf() -> SkillDraft {
    SkillDraft::new("pdf-forms", "Fill in PDF forms", "Use pdftk.")
        .with_metadata(BTreeMap::from([("license".to_owned(), "MIT".to_owned())]))
        .with_files(vec!["scripts/fill.py".to_owned()])
}

#[tokio::test]
async fn put_creates_then_updates_only_changed_content() {
    each_engine(|store| async move {
        let (created, change) = store.skills().put(&pdf()).await.unwrap();
        assert_eq!(change, SkillChange::Created);
        assert_eq!(
            (
                created.name.as_str(),
                created.instructions.as_str(),
                created.files.clone()
            ),
            (
                "pdf-forms",
                "Use pdftk.",
                vec!["scripts/fill.py".to_owned()]
            )
        );
        assert_eq!(created.metadata["license"], "MIT");
        assert_eq!(created.content_hash.len(), 64);
        let (same, change) = store.skills().put(&pdf()).await.unwrap();
        assert_eq!((change, &same), (SkillChange::Unchanged, &created));
        let mut edited = pdf();
        edited.instructions = "Use qpdf.".to_owned();
        let (updated, change) = store.skills().put(&edited).await.unwrap();
        assert_eq!(change, SkillChange::Updated);
        assert_ne!(updated.content_hash, created.content_hash);
        assert_eq!(updated.created_at, created.created_at);
        assert_eq!(store.skills().get("pdf-forms").await.unwrap(), updated);
    })
    .await;
}

#[tokio::test]
async fn list_is_by_name_and_delete_removes() {
    each_engine(|store| async move {
        let before = store.changes().latest().await.unwrap();
        store.skills().put(&pdf()).await.unwrap();
        store
            .skills()
            .put(&SkillDraft::new("csv-report", "Summarise CSV tables", ""))
            .await
            .unwrap();
        let names: Vec<String> = store
            .skills()
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["csv-report", "pdf-forms"]);
        store.skills().delete("pdf-forms").await.unwrap();
        assert!(matches!(
            store.skills().get("pdf-forms").await,
            Err(StoreError::NotFound {
                entity: Entity::Skill,
                ..
            })
        ));
        let err = store.skills().delete("pdf-forms").await.unwrap_err();
        assert_eq!(err.to_string(), "skill `pdf-forms` not found");
        let changes = store.changes().since(before, 100).await.unwrap();
        let seen: Vec<_> = changes
            .iter()
            .map(|c| (c.entity.as_str(), c.op.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("skill", "upsert"),
                ("skill", "upsert"),
                ("skill", "delete")
            ]
        );
    })
    .await;
}

#[tokio::test]
async fn bad_drafts_name_the_field_and_write_nothing() {
    each_engine(|store| async move {
        let long = "x".repeat(SkillDraft::MAX_DESCRIPTION + 1);
        let cases = [
            (SkillDraft::new("PDF", "d", ""), "name"),
            (
                SkillDraft::new("a".repeat(SkillDraft::MAX_NAME + 1), "d", ""),
                "name",
            ),
            (SkillDraft::new("", "d", ""), "name"),
            (SkillDraft::new("ok", " ", ""), "description"),
            (SkillDraft::new("ok", long, ""), "description"),
            (
                SkillDraft::new("ok", "d", "").with_files(vec!["../x".into()]),
                "files[0]",
            ),
            (
                SkillDraft::new("ok", "d", "").with_files(vec!["a".into(), "/etc/passwd".into()]),
                "files[1]",
            ),
        ];
        for (draft, field) in cases {
            match store.skills().put(&draft).await {
                Err(StoreError::Invalid { field: f, .. }) => assert_eq!(f, field, "{draft:?}"),
                other => panic!("{draft:?}: expected invalid {field}, got {other:?}"),
            }
        }
        let err = store
            .skills()
            .put(&SkillDraft::new("PDF", "d", ""))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid name: \"PDF\" must be 1-64 lowercase letters, digits or hyphens"
        );
        assert!(store.skills().list().await.unwrap().is_empty());
        // The longest name and description are accepted.
        let longest = SkillDraft::new("a".repeat(64), "é".repeat(1024), "");
        assert_eq!(
            store.skills().put(&longest).await.unwrap().1,
            SkillChange::Created
        );
    })
    .await;
}
