//! A large real document: GitHub's REST API description (OpenAPI 3.0.3, about 1,200
//! operations), fetched by `scripts/fetch-openapi-samples.sh` into `target/openapi-samples/`.

use std::time::Instant;

use toolbelt_openapi::{ImportOptions, apply, convert};

#[tokio::test]
async fn githubs_rest_api_description_imports_into_a_store() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/openapi-samples/api.github.com.json");
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "skipped: {} is absent (run scripts/fetch-openapi-samples.sh)",
            path.display()
        );
        return;
    };
    let started = Instant::now();
    let imported = convert(&text, &ImportOptions::default().with_prefix("gh_")).unwrap();
    println!(
        "{} tools, {} skipped in {:?}",
        imported.tools.len(),
        imported.skipped.len(),
        started.elapsed()
    );
    for s in &imported.skipped {
        println!("skipped {} at {}: {}", s.operation, s.pointer, s.reason);
    }
    assert!(imported.tools.len() > 1000, "{}", imported.tools.len());
    let get = imported
        .tools
        .iter()
        .find(|t| t.spec.name.as_str() == "gh_repos_get")
        .unwrap();
    assert_eq!(
        get.definition["http"]["url"],
        "https://api.github.com/repos/{{owner}}/{{repo}}"
    );
    assert_eq!(get.spec.tags, ["repos"]);
    // The store checks each parameter schema against the JSON Schema meta-schema.
    let store = toolbelt_store::Store::open("sqlite::memory:")
        .await
        .unwrap();
    store.migrate().await.unwrap();
    let started = Instant::now();
    let report = apply(&store, &imported, "test", false).await.unwrap();
    println!("stored in {:?}", started.elapsed());
    assert_eq!(report.skipped, []);
    assert_eq!(report.created.len(), imported.tools.len());
}
