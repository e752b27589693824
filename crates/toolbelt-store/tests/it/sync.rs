//! Start-up sync of compiled tools: idempotent, versions on change, missing on vanish.

use pretty_assertions::assert_eq;
use toolbelt_store::ToolSource;

use crate::support::{each_engine, http_def, spec};

#[tokio::test]
async fn sync_is_idempotent_versions_changes_and_marks_vanished_tools() {
    each_engine(|store| async move {
        let specs: Vec<_> = (0..250).map(|i| spec(&format!("t{i:03}"), "v1")).collect();
        let first = store.tools().sync_compiled(&specs, "sync").await.unwrap();
        assert_eq!(first.created.len(), 250);
        let again = store.tools().sync_compiled(&specs, "sync").await.unwrap();
        assert!(again.is_noop());
        assert_eq!(again.unchanged, 250);

        let mut changed = specs[..249].to_vec();
        changed[0] = spec("t000", "v2");
        let report = store.tools().sync_compiled(&changed, "sync").await.unwrap();
        assert_eq!(
            (report.updated.clone(), report.missing.clone()),
            (vec!["t000".to_owned()], vec!["t249".to_owned()])
        );
        let t0 = store.tools().get("t000").await.unwrap();
        assert_eq!((t0.current_version, t0.source), (2, ToolSource::Compiled));
        assert!(store.tools().get("t249").await.unwrap().missing);

        let back = store
            .tools()
            .sync_compiled(&specs[..], "sync")
            .await
            .unwrap();
        assert_eq!(
            (back.updated, back.restored),
            (vec!["t000".to_owned()], vec!["t249".to_owned()])
        );
        assert!(!store.tools().get("t249").await.unwrap().missing);
        assert_eq!(store.tools().get("t000").await.unwrap().current_version, 3);
    })
    .await;
}

#[tokio::test]
async fn sync_leaves_a_declarative_tool_of_the_same_name_alone() {
    each_engine(|store| async move {
        store
            .tools()
            .create(&http_def("search", "mine"), "tester", None)
            .await
            .unwrap();
        let report = store
            .tools()
            .sync_compiled(&[spec("search", "compiled")], "sync")
            .await
            .unwrap();
        assert_eq!(report.clashes, vec!["search".to_owned()]);
        assert_eq!(
            store.tools().get("search").await.unwrap().spec.description,
            "mine"
        );
    })
    .await;
}
