//! `toolbelt tools import openapi`: the petstore from a file, then changed and from a URL.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::{err, ok};

fn toolbelt(db: &str, args: &[&str]) -> Output {
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .env("TOOLBELT_DATABASE_URL", db)
            .env_remove("TOOLBELT_SERVER")
            .args(args),
        "",
    )
}

/// Serves `text` at `/openapi.json` on 127.0.0.1 until the test ends.
async fn serve(text: String) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/openapi.json", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/openapi.json",
        axum::routing::get(move || async move { text }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

// Two workers: the document is served while the test thread waits for the CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_is_imported_then_a_changed_one_versions_only_its_change() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../toolbelt-openapi/tests/data/petstore-3.1.json");
    let file = file.to_str().unwrap();
    ok(&toolbelt(&db, &["db", "migrate"]));
    let dry = ok(&toolbelt(
        &db,
        &[
            "tools",
            "import",
            "openapi",
            file,
            "--prefix",
            "pets_",
            "--dry-run",
        ],
    ));
    assert_eq!(
        dry.lines().next(),
        Some("dry run (nothing written): 20 created, 0 updated, 0 unchanged, 0 skipped")
    );
    let done = ok(&toolbelt(
        &db,
        &["tools", "import", "openapi", file, "--prefix", "pets_"],
    ));
    assert_eq!(
        done.lines().next(),
        Some("20 created, 0 updated, 0 unchanged, 0 skipped")
    );
    assert_eq!(
        done.lines().last(),
        Some(
            "the tools send secrets: declare TOOLBELT_SECRET_PETS_API_KEY, TOOLBELT_SECRET_PETS_PETSTORE_AUTH"
        )
    );

    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    doc["paths"]["/store/inventory"]["get"]["description"] = "Counts of pets by status".into();
    let url = serve(doc.to_string()).await;
    let again = ok(&toolbelt(
        &db,
        &[
            "tools", "import", "openapi", &url, "--prefix", "pets_", "--tags", "store",
        ],
    ));
    assert_eq!(
        again,
        "0 created, 1 updated, 3 unchanged, 0 skipped\n  updated   pets_getInventory (version 2: description)\n\
         the tools send secrets: declare TOOLBELT_SECRET_PETS_API_KEY\n"
    );
    let bad = err(&toolbelt(
        &db,
        &["tools", "import", "openapi", &url, "--tags", "cats"],
    ));
    assert!(
        bad.contains("invalid tags: `cats` is no operation's tag"),
        "{bad}"
    );
}
