//! Importing the server's own OpenAPI document into itself, and calling the imported
//! `list_tools` over real HTTP.
//!
//! Here the call goes through the library with loopback allowed; the same round trip through a
//! running `toolbelt serve --outbound-net 127.0.0.1/32` (the secret from its environment, the
//! call through `POST /api/v1/tools/{name}/call`) is the CLI's test
//! `cli_import::the_servers_own_api_is_imported_listed_and_called_through_the_server`.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_core::ToolContext;
use toolbelt_tools::HttpConfig;
use toolbelt_tools::declarative::{Definition, Secrets};

use crate::support::{ADMIN, READER, TestDb, TestServer, json_of, on_both, problem_of};

async fn own_document(s: &TestServer) -> Value {
    let url = format!("{}/api/v1/openapi.json", s.url);
    json_of(s.http.get(url).send().await.unwrap(), 200).await
}

async fn import(s: &TestServer, body: Value) -> Value {
    let response = s
        .post("/api/v1/tools/import/openapi", ADMIN)
        .json(&body)
        .send()
        .await
        .unwrap();
    json_of(response, 200).await
}

#[tokio::test]
async fn the_servers_own_document_round_trips_through_an_import() {
    on_both(|db: TestDb| async move {
        let s = TestServer::start_stored(&db, None).await;
        let body = json!({"document": own_document(&s).await, "prefix": "tb_", "base_url": s.url});
        let report = import(&s, body.clone()).await;
        let created: Vec<&str> = report["created"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(created.contains(&"tb_list_tools"), "{report}");
        assert_eq!(report["skipped"], json!([]), "{report}");
        assert_eq!(report["secrets"], json!(["TB_BEARER"]));
        let again = import(&s, body).await;
        assert_eq!(again["created"], json!([]));
        assert_eq!(again["unchanged"].as_array().unwrap().len(), created.len());

        let stored = json_of(
            s.get("/api/v1/tools/tb_list_tools/stored", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        let spec = serde_json::from_value(stored["spec"].clone()).unwrap();
        let tool = Definition::from_value(&stored["definition"])
            .unwrap()
            .build(spec, Secrets::from_pairs([("TB_BEARER", ADMIN)]))
            .unwrap();
        let ctx = ToolContext::new().with(HttpConfig::new().allow_net("127.0.0.1/32").unwrap());
        let out = tool
            .call(json!({"tag": "util", "limit": 50}), ctx)
            .await
            .unwrap();
        let names: Vec<&str> = out.json.as_ref().unwrap()["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert_eq!(names, ["echo", "noop"], "{}", db.engine);
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn a_document_that_cannot_be_imported_is_a_problem_naming_its_pointer() {
    let db = TestDb::sqlite();
    let s = TestServer::start_stored(&db, None).await;
    let body = json!({"document": {"openapi": "2.0", "info": {"title": "t", "version": "1"}}});
    let response = s
        .post("/api/v1/tools/import/openapi", ADMIN)
        .json(&body)
        .send()
        .await
        .unwrap();
    let problem = problem_of(response, 422, "invalid_openapi").await;
    assert_eq!(problem["errors"][0]["pointer"], "/document/openapi");
    let reader = s
        .post("/api/v1/tools/import/openapi", READER)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(reader.status(), 403);
    s.stop().await;
    db.cleanup().await;
}

#[tokio::test]
async fn imported_tools_are_routed_like_hand_written_ones() {
    // The router sends a few ranked tools out of the 20; the one asked for is among them.
    let db = TestDb::sqlite();
    let s = TestServer::start_stored(&db, None).await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../toolbelt-openapi/tests/data/petstore-3.1.json");
    let document = std::fs::read_to_string(path).unwrap();
    let report = import(&s, json!({"document": document, "prefix": "pets_"})).await;
    assert_eq!(report["created"].as_array().unwrap().len(), 20, "{report}");
    for (input, expected) in [
        ("find a pet by its id", "pets_getPetById"),
        ("log the user out of the system", "pets_logoutUser"),
        ("place an order for a pet", "pets_placeOrder"),
    ] {
        let body = json!({"input": input, "tools": "pet,store,user"});
        let routed = json_of(
            s.post("/api/v1/route", crate::support::RUNNER)
                .json(&body)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(routed["toolset_size"], 20);
        let sent: Vec<&str> = routed["decision"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            sent.len() <= 5 && sent.contains(&expected),
            "{input}: {routed}"
        );
    }
    s.stop().await;
    db.cleanup().await;
}
