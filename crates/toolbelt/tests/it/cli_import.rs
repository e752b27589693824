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

/// The README's walk-through: a service's OpenAPI document (here the server's own API) is
/// imported through the server, its internal host allow-listed with `--outbound-net`, the new
/// tools listed with `tools ls --server` and one called with `tools call --server`.
#[test]
fn the_servers_own_api_is_imported_listed_and_called_through_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("cli.db").display());
    let admin = ok(&toolbelt(
        &db,
        &["tokens", "create", "importer", "--scope", "admin"],
    ));
    let admin = admin.trim();
    let (mut server, port) = crate::cli_serve::serve_env(
        dir.path(),
        &db,
        &["--outbound-net", "127.0.0.1/32"],
        &[
            ("TOOLBELT_NO_EMBEDDER", "1"),
            ("TOOLBELT_SECRET_TB_BEARER", admin),
        ],
    );
    let base = format!("http://127.0.0.1:{port}");
    let remote = |args: &[&str]| {
        crate::run_with_stdin(
            Command::new(env!("CARGO_BIN_EXE_toolbelt"))
                .env("TOOLBELT_SERVER", &base)
                .env("TOOLBELT_TOKEN", admin)
                .env_remove("TOOLBELT_DATABASE_URL")
                .args(args),
            "",
        )
    };
    let document = format!("{base}/api/v1/openapi.json");
    let imported = ok(&remote(&[
        "tools",
        "import",
        "openapi",
        &document,
        "--prefix",
        "tb_",
        "--base-url",
        &base,
    ]));
    assert!(imported.contains(" created"), "{imported}");
    let listed = ok(&remote(&[
        "tools",
        "ls",
        "--source",
        "http",
        "-q",
        "tb_list_tools",
    ]));
    let line = listed
        .lines()
        .find(|l| l.starts_with("  tb_list_tools "))
        .unwrap_or_default();
    assert!(line.contains(" http  read-only  auto  "), "{listed}");
    let called = ok(&remote(&[
        "tools",
        "call",
        "tb_list_tools",
        r#"{"q": "file_read", "source": "compiled"}"#,
    ]));
    let page: Value = serde_json::from_str(&called).unwrap();
    let names: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["file_read"], "{called}");
    server.kill().unwrap();
    let _ = server.wait();
}
