//! Skills: upsert says what it did and bumps the revision, reads return what was put, bad skills
//! name the field.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use toolbelt_store::{Entity, SkillChange, SkillSpec, StoreError};

use crate::support::each_engine;

fn pdf() -> SkillSpec {
    SkillSpec::new("pdf-forms", "Fill in PDF forms", "Use pdftk.")
        .with_metadata(BTreeMap::from([("license".to_owned(), "MIT".to_owned())]))
        .with_files(vec!["scripts/fill.py".to_owned()])
}

#[tokio::test]
async fn put_creates_then_updates_only_changed_content() {
    each_engine(|store| async move {
        let (created, change) = store.skills().put(&pdf(), "tester").await.unwrap();
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
        assert_eq!(created.content_hash().len(), 64);
        assert_eq!(
            (created.revision, created.changed_by.as_str()),
            (1, "tester")
        );
        let (same, change) = store.skills().put(&pdf(), "someone else").await.unwrap();
        assert_eq!((change, &same), (SkillChange::Unchanged, &created));
        let mut edited = pdf();
        edited.instructions = "Use qpdf.".to_owned();
        let (updated, change) = store.skills().put(&edited, "editor").await.unwrap();
        assert_eq!(change, SkillChange::Updated);
        assert_ne!(updated.content_hash(), created.content_hash());
        assert_eq!(updated.created_at, created.created_at);
        assert_eq!(
            (updated.revision, updated.changed_by.as_str()),
            (2, "editor")
        );
        assert_eq!(updated.value, edited);
        assert_eq!(store.skills().get("pdf-forms").await.unwrap(), updated);
    })
    .await;
}

#[tokio::test]
async fn list_is_by_name_and_delete_removes() {
    each_engine(|store| async move {
        let before = store.changes().latest().await.unwrap();
        store.skills().put(&pdf(), "tester").await.unwrap();
        store
            .skills()
            .put(
                &SkillSpec::new("csv-report", "Summarise CSV tables", ""),
                "tester",
            )
            .await
            .unwrap();
        let names: Vec<String> = store
            .skills()
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.into_value().name)
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
async fn bad_skills_name_the_field_and_write_nothing() {
    each_engine(|store| async move {
        let long = "x".repeat(SkillSpec::MAX_DESCRIPTION + 1);
        let cases = [
            (SkillSpec::new("PDF", "d", ""), "name"),
            (
                SkillSpec::new("a".repeat(SkillSpec::MAX_NAME + 1), "d", ""),
                "name",
            ),
            (SkillSpec::new("", "d", ""), "name"),
            (SkillSpec::new("ok", " ", ""), "description"),
            (SkillSpec::new("ok", long, ""), "description"),
            (
                SkillSpec::new("ok", "d", "").with_files(vec!["../x".into()]),
                "files[0]",
            ),
            (
                SkillSpec::new("ok", "d", "").with_files(vec!["a".into(), "/etc/passwd".into()]),
                "files[1]",
            ),
        ];
        for (spec, field) in cases {
            match store.skills().put(&spec, "tester").await {
                Err(StoreError::Invalid { field: f, .. }) => assert_eq!(f, field, "{spec:?}"),
                other => panic!("{spec:?}: expected invalid {field}, got {other:?}"),
            }
        }
        let err = store
            .skills()
            .put(&SkillSpec::new("PDF", "d", ""), "tester")
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid name: \"PDF\" must be 1-64 lowercase letters, digits or hyphens"
        );
        assert!(store.skills().list().await.unwrap().is_empty());
        // The longest name and description are accepted.
        let longest = SkillSpec::new("a".repeat(64), "é".repeat(1024), "");
        assert_eq!(
            store.skills().put(&longest, "tester").await.unwrap().1,
            SkillChange::Created
        );
    })
    .await;
}

#[tokio::test]
async fn a_skill_stored_before_revisions_reads_as_revision_one_by_unknown() {
    each_engine(|store| async move {
        // A row as the columns before migration 106 held it: the new columns take their defaults.
        let spec = SkillSpec::new("old-skill", "From before", "Steps.");
        sqlx::query(
            "INSERT INTO skills (name, description, instructions, metadata, files, content_hash, created_at, updated_at) VALUES ($1, $2, $3, '{}', '[]', $4, 5, 5)",
        )
        .bind(&spec.name)
        .bind(&spec.description)
        .bind(&spec.instructions)
        .bind(spec.content_hash())
        .execute(store.pool())
        .await
        .unwrap();
        let old = store.skills().get("old-skill").await.unwrap();
        assert_eq!(
            (old.revision, old.changed_by.as_str(), &old.value),
            (1, "unknown", &spec)
        );
        let (same, change) = store.skills().put(&spec, "tester").await.unwrap();
        assert_eq!((change, same), (SkillChange::Unchanged, old));
    })
    .await;
}
