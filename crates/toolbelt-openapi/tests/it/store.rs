//! Importing into a store: created, then unchanged, then new versions of the changed
//! operations only; a dry run writes nothing; a name held by another source is skipped.

use pretty_assertions::assert_eq;
use serde_json::Value;
use toolbelt_openapi::{ImportOptions, apply, convert};
use toolbelt_store::Store;

use crate::data;

async fn store() -> Store {
    let store = Store::open("sqlite::memory:").await.unwrap();
    store.migrate().await.unwrap();
    store
}

fn import(text: &str) -> toolbelt_openapi::Imported {
    convert(text, &ImportOptions::default().with_prefix("pets_")).unwrap()
}

#[tokio::test]
async fn re_importing_a_changed_document_versions_only_the_changed_operations() {
    let store = store().await;
    let text = data("petstore-3.1.json");
    let first = apply(&store, &import(&text), "test", false).await.unwrap();
    assert_eq!((first.created.len(), first.updated.len()), (20, 0));
    let again = apply(&store, &import(&text), "test", false).await.unwrap();
    assert_eq!((again.created.len(), again.unchanged.len()), (0, 20));

    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["paths"]["/pet/{petId}"]["get"]["summary"] = "Find one pet by its id".into();
    doc["paths"]["/user/login"]["get"]["parameters"][1]["required"] = false.into();
    let changed = import(&doc.to_string());
    let dry = apply(&store, &changed, "test", true).await.unwrap();
    assert!(dry.dry_run);
    assert_eq!(
        store
            .tools()
            .get("pets_getPetById")
            .await
            .unwrap()
            .current_version,
        1
    );
    let report = apply(&store, &changed, "test", false).await.unwrap();
    assert_eq!(dry.updated, report.updated);
    let updated: Vec<(&str, i64, Vec<&str>)> = report
        .updated
        .iter()
        .map(|u| {
            (
                u.name.as_str(),
                u.version,
                u.changed.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        updated,
        [
            ("pets_getPetById", 2, vec!["description"]),
            ("pets_loginUser", 2, vec!["parameters"]),
        ]
    );
    assert_eq!(report.unchanged.len(), 18);
    let versions = store.tools().versions("pets_getPetById").await.unwrap();
    assert_eq!(versions.len(), 2);
}

#[tokio::test]
async fn a_name_taken_by_another_source_is_skipped_and_the_rest_imported() {
    let store = store().await;
    let spec = toolbelt_core::ToolSpec::builder("pets_getInventory")
        .description("Compiled in")
        .build()
        .unwrap();
    let def = toolbelt_store::ToolDef::new(spec, toolbelt_store::ToolSource::Compiled);
    store.tools().create(&def, "test", None).await.unwrap();
    let report = apply(&store, &import(&data("petstore-3.0.json")), "test", false)
        .await
        .unwrap();
    assert_eq!(report.created.len(), 19);
    let last = report.skipped.last().unwrap();
    assert_eq!(
        (last.operation.as_str(), last.reason.as_str()),
        (
            "GET /store/inventory",
            "a compiled tool named `pets_getInventory` exists; choose another prefix"
        )
    );
}
