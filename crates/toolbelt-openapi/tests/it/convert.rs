//! The petstore samples (3.0 and 3.1) as tools: specs, definitions, selection, errors, a call.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::ToolContext;
use toolbelt_openapi::{ImportOptions, convert};
use toolbelt_tools::HttpConfig;
use toolbelt_tools::declarative::{Definition, Secrets};
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::data;

fn petstore(version: &str, options: &ImportOptions) -> toolbelt_openapi::Imported {
    convert(&data(&format!("petstore-{version}.json")), options).unwrap()
}

#[test]
fn both_petstores_give_the_same_tools() {
    for version in ["3.0", "3.1"] {
        let imported = petstore(version, &ImportOptions::default().with_prefix("petstore_"));
        let names: Vec<&str> = imported
            .tools
            .iter()
            .map(|t| t.spec.name.as_str())
            .collect();
        assert_eq!(names.len(), 20, "{version}: {names:?}");
        assert!(names.contains(&"petstore_getPetById"), "{version}");
        // The form and multipart bodies are optional: those operations come without a body.
        assert_eq!(imported.skipped, [], "{version}");
        let upload = imported
            .tools
            .iter()
            .find(|t| t.spec.name.as_str() == "petstore_uploadFile");
        assert_eq!(upload.unwrap().definition["http"].get("body"), None);
        assert_eq!(
            imported.secrets,
            ["PETSTORE_API_KEY", "PETSTORE_PETSTORE_AUTH"]
        );
    }
}

#[test]
fn an_operation_becomes_a_spec_and_an_http_definition() {
    let imported = petstore("3.0", &ImportOptions::default().with_prefix("petstore_"));
    let find = |name: &str| {
        imported
            .tools
            .iter()
            .find(|t| t.spec.name.as_str() == name)
            .unwrap()
    };
    let get = find("petstore_getPetById");
    assert_eq!(
        get.spec.description,
        "Find pet by ID\n\nReturns a single pet"
    );
    assert_eq!(get.spec.tags, ["pet"]);
    assert!(get.spec.policy.is_read_only());
    assert_eq!(
        get.spec.parameters,
        json!({"type": "object", "additionalProperties": false, "required": ["petId"],
               "properties": {"petId": {"type": "integer", "format": "int64", "description": "ID of pet to return"}}})
    );
    assert_eq!(
        get.definition,
        json!({"http": {"method": "GET", "url": "http://petstore.swagger.io/v2/pet/{{petId}}",
               "headers": {"api_key": "{{secret.PETSTORE_API_KEY}}"}}})
    );
    let add = find("petstore_addPet");
    assert!(!add.spec.policy.is_read_only());
    assert_eq!(add.definition["http"]["body"], "{{body}}");
    assert_eq!(
        add.definition["http"]["headers"],
        json!({"Authorization": "Bearer {{secret.PETSTORE_PETSTORE_AUTH}}"})
    );
    let body = &add.spec.parameters["properties"]["body"];
    assert_eq!(body["required"], json!(["name", "photoUrls"]));
    assert_eq!(
        body["properties"]["category"]["properties"]["name"],
        json!({"type": "string"})
    );
    let login = find("petstore_loginUser");
    assert_eq!(
        login.definition["http"]["query"],
        json!({"username": "{{username}}", "password": "{{password}}"})
    );
}

#[test]
fn tags_and_operations_select_and_unknown_ones_are_named() {
    let by_tag = petstore("3.1", &ImportOptions::default().with_tags(["store"]));
    let names: Vec<&str> = by_tag.tools.iter().map(|t| t.spec.name.as_str()).collect();
    assert_eq!(
        names,
        ["getInventory", "placeOrder", "getOrderById", "deleteOrder"]
    );
    let by_op = petstore(
        "3.1",
        &ImportOptions::default().with_operations([
            "getPetById",
            "GET /pet/{petId}",
            "DELETE /user/{username}",
        ]),
    );
    let names: Vec<&str> = by_op.tools.iter().map(|t| t.spec.name.as_str()).collect();
    assert_eq!(names, ["getPetById", "deleteUser"]);
    let text = data("petstore-3.1.json");
    let err = convert(&text, &ImportOptions::default().with_tags(["cats"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid tags: `cats` is no operation's tag; the document's tags: pet, store, user"
    );
    let err = convert(&text, &ImportOptions::default().with_operations(["nope"])).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid operations: `nope` names no"),
        "{err}"
    );
    let err = convert(&text, &ImportOptions::default().with_prefix("a b")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid prefix: ' ' is not allowed"),
        "{err}"
    );
}

#[test]
fn a_broken_operation_is_skipped_naming_its_pointer_and_a_broken_document_fails() {
    let doc = json!({"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
        "servers": [{"url": "/v1"}],
        "paths": {"/a": {"get": {"operationId": "a", "parameters": [{"name": "x", "in": "body"}]},
                         "put": {"operationId": "b", "parameters": [{"$ref": "#/components/parameters/none"}]}},
                  "/b/{id}": {"get": {"operationId": "c"}},
                  "/c": {"post": {"operationId": "d", "requestBody": {"required": true,
                         "content": {"multipart/form-data": {}}}}}}});
    let options = ImportOptions::default().with_source_url("https://api.example/openapi.json");
    let imported = convert(&doc.to_string(), &options).unwrap();
    let skipped: Vec<(&str, &str)> = imported
        .skipped
        .iter()
        .map(|s| (s.pointer.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(skipped[0].0, "/paths/~1a/get/parameters/0/in");
    assert_eq!(
        skipped[1],
        (
            "/paths/~1a/put/parameters/0/$ref",
            "`#/components/parameters/none` points at nothing"
        )
    );
    assert_eq!(
        skipped[2],
        (
            "/paths/~1b~1{id}/get",
            "`/b/{id}` uses `{id}`, which no path parameter declares"
        )
    );
    assert_eq!(
        skipped[3],
        (
            "/paths/~1c/post/requestBody/content",
            "only JSON request bodies can be sent; this one is multipart/form-data"
        )
    );
    let err = convert(&doc.to_string(), &ImportOptions::default()).unwrap_err();
    assert_eq!(err.pointer(), Some("/servers/0/url"), "{err}");
    let err = convert(
        "openapi: 3.1.0\ninfo: {title: t}\n",
        &ImportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.pointer(), Some("/info"), "{err}");
}

#[tokio::test]
async fn an_imported_tool_calls_the_api_with_its_secret() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/pet/findByStatus"))
        .and(query_param("status", "sold"))
        .and(header("authorization", "Bearer t0ken"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!([{"id": 7, "name": "Rex"}])))
        .mount(&server)
        .await;
    let options = ImportOptions::default()
        .with_prefix("petstore_")
        .with_base_url(server.uri());
    let imported = petstore("3.1", &options);
    let tool = imported
        .tools
        .iter()
        .find(|t| t.spec.name.as_str() == "petstore_findPetsByStatus")
        .unwrap();
    let handle = Definition::from_value(&tool.definition)
        .unwrap()
        .build(
            tool.spec.clone(),
            Secrets::from_pairs([("PETSTORE_PETSTORE_AUTH", "t0ken")]),
        )
        .unwrap();
    let ctx = ToolContext::new().with(HttpConfig::new().allow_net("127.0.0.1/32").unwrap());
    let out = handle.call(json!({"status": ["sold"]}), ctx).await.unwrap();
    assert_eq!(out.json, Some(json!([{"id": 7, "name": "Rex"}])));
}

#[test]
fn a_yaml_document_gives_the_same_tools_as_its_json() {
    let text = data("petstore-3.0.json");
    let yaml = serde_norway::to_string(&serde_json::from_str::<serde_json::Value>(&text).unwrap())
        .unwrap();
    assert!(!yaml.trim_start().starts_with('{'));
    let options = ImportOptions::default().with_prefix("p_");
    assert_eq!(
        convert(&yaml, &options).unwrap(),
        convert(&text, &options).unwrap()
    );
}
