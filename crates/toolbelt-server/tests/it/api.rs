//! Tools, groups, routing, health, metrics, OpenAPI and every 4xx the API promises.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{ADMIN, READER, RUNNER, TestServer, json_of, problem_of};

#[tokio::test]
async fn a_tool_call_returns_the_output() {
    let s = TestServer::start(None).await;
    let body = json_of(
        s.post("/api/v1/tools/echo/call", RUNNER)
            .json(&json!({"arguments": {"text": "hi"}}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (body["ok"].clone(), body["text"].clone()),
        (json!(true), json!("hi"))
    );
}

#[tokio::test]
async fn bad_arguments_name_the_pointer_under_arguments() {
    let s = TestServer::start(None).await;
    let r = s
        .post("/api/v1/tools/echo/call", RUNNER)
        .json(&json!({"arguments": {"text": 5}}))
        .send()
        .await
        .unwrap();
    let p = problem_of(r, 422, "invalid_arguments").await;
    assert_eq!(p["pointer"], "/arguments/text");
}

/// A configured agent reads in the shape of a stored one, and `/agents/validate` takes that
/// shape and runs creation's checks and then a run's.
#[tokio::test]
async fn a_configured_agent_reads_as_a_stored_one_and_validate_takes_that_shape() {
    let s = TestServer::start(None).await;
    let agent = json_of(
        s.get("/api/v1/agents/helper", READER).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (
            &agent["name"],
            &agent["selection"],
            &agent["provider"],
            &agent["model"],
            &agent["options"]["max_iterations"],
            &agent["revision"],
            &agent["changed_by"],
        ),
        (
            &json!("helper"),
            &json!("util,danger"),
            &json!("openai"),
            &json!("scripted"),
            &json!(10),
            &json!(0),
            &json!("configuration"),
        )
    );
    let listed = json_of(s.get("/api/v1/agents", READER).send().await.unwrap(), 200).await;
    assert_eq!(listed, json!([agent]));

    let validate = |body: Value| s.post("/api/v1/agents/validate", ADMIN).json(&body).send();
    let ok =
        validate(json!({"name": "writer", "selection": "util", "options": {"max_iterations": 3}}))
            .await
            .unwrap();
    assert_eq!(ok.status().as_u16(), 204);
    // What is wrong is named: the unknown group, the field, and a field of the configuration
    // file's old shape.
    for (body, code, key, needle) in [
        (
            json!({"name": "writer", "selection": "utill"}),
            "invalid_selection",
            "detail",
            "utill",
        ),
        (
            json!({"name": "writer", "options": {"max_iterations": 0}}),
            "invalid_field",
            "pointer",
            "max_iterations",
        ),
        (
            json!({"id": "writer", "tools": "util"}),
            "invalid_field",
            "detail",
            "id",
        ),
    ] {
        let problem = problem_of(validate(body).await.unwrap(), 422, code).await;
        assert!(problem[key].as_str().unwrap().contains(needle), "{problem}");
    }
}

#[tokio::test]
async fn an_unknown_tool_is_404_with_the_nearest_names() {
    let s = TestServer::start(None).await;
    let r = s
        .post("/api/v1/tools/ecko/call", RUNNER)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let p = problem_of(r, 404, "tool_not_found").await;
    assert_eq!(p["nearest"][0], "echo");
}

#[tokio::test]
async fn malformed_bodies_get_problem_documents() {
    let s = TestServer::start_with(None, |c| c.body_limit_bytes = 1000).await;
    let url = "/api/v1/tools/echo/call";
    let raw = |body: &'static str| {
        s.post(url, RUNNER)
            .header("content-type", "application/json")
            .body(body)
    };
    problem_of(
        raw("{\"arguments\": ").send().await.unwrap(),
        400,
        "invalid_json",
    )
    .await;
    let p = problem_of(
        raw("{\"arguments\": {}, \"extra\": 1}")
            .send()
            .await
            .unwrap(),
        422,
        "invalid_field",
    )
    .await;
    assert_eq!(p["pointer"], "/extra");
    let p = problem_of(
        raw("{\"arguments\": 7}").send().await.unwrap(),
        422,
        "invalid_arguments",
    )
    .await;
    assert_eq!(p["pointer"], "/arguments");
    let big = format!("{{\"arguments\": {{\"text\": \"{}\"}}}}", "x".repeat(2000));
    let r = s
        .post(url, RUNNER)
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .unwrap();
    problem_of(r, 413, "body_too_large").await;
    let r = s.post(url, RUNNER).body("text=hi").send().await.unwrap();
    problem_of(r, 415, "unsupported_media_type").await;
}

#[tokio::test]
async fn tokens_and_scopes_are_checked() {
    let s = TestServer::start(None).await;
    let call = |token: &str| {
        s.post("/api/v1/tools/noop/call", token)
            .json(&json!({}))
            .send()
    };
    problem_of(call("nope").await.unwrap(), 401, "invalid_token").await;
    let r = s
        .http
        .get(format!("{}/api/v1/tools", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    problem_of(r, 401, "missing_token").await;
    let p = problem_of(call(READER).await.unwrap(), 403, "missing_scope").await;
    assert!(p["detail"].as_str().unwrap().contains("`run`"), "{p}");
    json_of(call(ADMIN).await.unwrap(), 200).await;
    json_of(s.get("/api/v1/tools", READER).send().await.unwrap(), 200).await;
    // whoami names the token and its scopes (the console's login check).
    let me = json_of(s.get("/api/v1/whoami", READER).send().await.unwrap(), 200).await;
    assert_eq!(me["scopes"], json!(["read"]), "{me}");
    assert!(me["name"].is_string(), "{me}");
    problem_of(
        s.get("/api/v1/whoami", "nope").send().await.unwrap(),
        401,
        "invalid_token",
    )
    .await;
}

#[tokio::test]
async fn tools_are_listed_filtered_and_paged() {
    let s = TestServer::start(None).await;
    let names = |v: &Value| {
        v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let all = json_of(s.get("/api/v1/tools", READER).send().await.unwrap(), 200).await;
    assert_eq!(names(&all), ["delete_file", "echo", "noop"]);
    let util = json_of(
        s.get("/api/v1/tools?tag=util", READER)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(names(&util), ["echo", "noop"]);
    let page = json_of(
        s.get("/api/v1/tools?limit=2", READER).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (names(&page), page["next_cursor"].clone()),
        (
            vec!["delete_file".to_owned(), "echo".to_owned()],
            json!("echo")
        )
    );
    let rest = json_of(
        s.get("/api/v1/tools?limit=2&cursor=echo", READER)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        (names(&rest), rest["next_cursor"].clone()),
        (vec!["noop".to_owned()], Value::Null)
    );
    let found = json_of(
        s.get("/api/v1/tools?q=ECHO", READER).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(names(&found), ["echo"]);
    problem_of(
        s.get("/api/v1/tools?limit=0", READER).send().await.unwrap(),
        400,
        "invalid_query",
    )
    .await;
    let p = problem_of(
        s.get("/api/v1/tools?limit=x", READER).send().await.unwrap(),
        400,
        "invalid_query",
    )
    .await;
    assert_eq!(p["pointer"], "limit");
    let one = json_of(
        s.get("/api/v1/tools/echo", READER).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(one["parameters"]["required"], json!(["text"]));
}

#[tokio::test]
async fn groups_list_their_tools() {
    let s = TestServer::start(None).await;
    let groups = json_of(s.get("/api/v1/groups", READER).send().await.unwrap(), 200).await;
    assert_eq!(
        groups,
        json!([{"name": "danger", "tools": ["delete_file"]}, {"name": "util", "tools": ["echo", "noop"]}])
    );
}

#[tokio::test]
async fn route_previews_tools_scores_and_tokens() {
    let s = TestServer::start(None).await;
    let body = json_of(
        s.post("/api/v1/route", RUNNER)
            .json(&json!({"input": "echo this text back", "agent": "helper"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(body["toolset_size"], 3);
    assert_eq!(body["decision"]["tools"][0]["name"], "echo", "{body}");
    let tokens = &body["tokens"];
    assert_eq!(
        tokens["saved"].as_u64().unwrap(),
        tokens["all"].as_u64().unwrap() - tokens["sent"].as_u64().unwrap()
    );
    let p = problem_of(
        s.post("/api/v1/route", RUNNER)
            .json(&json!({"input": "x", "agent": "ghost"}))
            .send()
            .await
            .unwrap(),
        404,
        "agent_not_found",
    )
    .await;
    assert_eq!(p["nearest"], json!(["helper"]));
    let p = problem_of(
        s.post("/api/v1/route", RUNNER)
            .json(&json!({"input": "x", "tools": "util,"}))
            .send()
            .await
            .unwrap(),
        422,
        "invalid_selection",
    )
    .await;
    assert_eq!(p["pointer"], "/tools");
}

#[tokio::test]
async fn health_metrics_and_openapi_are_served() {
    let s = TestServer::start(None).await;
    let h = json_of(
        s.http
            .get(format!("{}/healthz", s.url))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let instance = h["instance"].as_str().unwrap_or_default();
    assert_eq!(instance.len(), 32, "{h}");
    assert_eq!(h, json!({"status": "ok", "tools": 3, "instance": instance}));
    json_of(
        s.http
            .get(format!("{}/readyz", s.url))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    s.post("/api/v1/tools/noop/call", RUNNER)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let metrics = s
        .get("/metrics", READER)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("toolbelt_tool_calls_total{tool=\"noop\",outcome=\"ok\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("toolbelt_tool_call_duration_seconds_bucket{tool=\"noop\""),
        "{metrics}"
    );
    let doc = json_of(
        s.http
            .get(format!("{}/api/v1/openapi.json", s.url))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/v1/tools/{name}/call"]["post"].is_object());
    let docs = s
        .http
        .get(format!("{}/api/v1/docs/", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(docs.status(), 200);
    assert!(docs.text().await.unwrap().contains("swagger"));
    // The docs page reads the same served document.
    let init = s
        .http
        .get(format!("{}/api/v1/docs/swagger-initializer.js", s.url))
        .send()
        .await
        .unwrap();
    assert_eq!(init.status(), 200);
    assert!(
        init.text().await.unwrap().contains("/api/v1/openapi.json"),
        "the docs page does not point at /api/v1/openapi.json"
    );
}

/// The `$ref` a JSON body of `op`'s `status` response (or request, with `status` "request")
/// points to.
fn body_ref(doc: &Value, path: &str, method: &str, status: &str) -> String {
    let op = &doc["paths"][path][method];
    let body = if status == "request" {
        &op["requestBody"]
    } else {
        &op["responses"][status]
    };
    body["content"]["application/json"]["schema"]["$ref"]
        .as_str()
        .unwrap_or_else(|| panic!("{method} {path} {status}: {body}"))
        .trim_start_matches("#/components/schemas/")
        .to_owned()
}

#[tokio::test]
async fn the_openapi_document_types_agents_tools_runs_and_approvals() {
    let s = TestServer::start(None).await;
    let url = format!("{}/api/v1/openapi.json", s.url);
    let doc = json_of(s.http.get(url).send().await.unwrap(), 200).await;
    let refs: Vec<String> = [
        ("/api/v1/agents", "post", "request"),
        ("/api/v1/agents", "post", "201"),
        ("/api/v1/agents/{id}/tools/{tool}", "post", "200"),
        ("/api/v1/agents/{id}/stored", "get", "200"),
        ("/api/v1/tools", "post", "request"),
        ("/api/v1/tools/{name}", "get", "200"),
        ("/api/v1/runs/{id}", "get", "200"),
        ("/api/v1/approvals/{id}", "post", "request"),
    ]
    .iter()
    .map(|(path, method, status)| body_ref(&doc, path, method, status))
    .collect();
    let expected = ["AgentDraft", "StoredAgent", "StoredAgent", "StoredAgent"];
    let expected = [
        &expected[..],
        &["ToolBody", "ToolSpec", "RunDetail", "ApprovalBody"],
    ]
    .concat();
    assert_eq!(refs, expected);
    let schemas = &doc["components"]["schemas"];
    assert_eq!(
        schemas["StoredTool"]["properties"]["spec"]["$ref"],
        "#/components/schemas/ToolSpec"
    );
    // Optional: `oneOf` null and the policy.
    let approval = schemas["AgentSettings"]["properties"]["approval"].to_string();
    assert!(
        approval.contains("\"#/components/schemas/ApprovalPolicy\""),
        "{approval}"
    );
    // A run event's data: one schema per kind, each a component of its own.
    assert_eq!(
        schemas["RunEvent"]["properties"]["data"]["$ref"],
        "#/components/schemas/RunEventData"
    );
    let kinds: Vec<&str> = schemas["RunEventData"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["$ref"].as_str()?.strip_prefix("#/components/schemas/"))
        .collect();
    assert_eq!(kinds.len(), 15, "{kinds:?}");
    // Every reference in the document names a component that exists.
    let text = doc.to_string();
    for reference in text.split("\"#/components/schemas/").skip(1) {
        let name = reference.split('"').next().unwrap();
        assert!(schemas.get(name).is_some(), "no component `{name}`");
    }
    // OpenAPI requires a description on every response; generators drop the ones without.
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            for (status, response) in op["responses"].as_object().into_iter().flatten() {
                let described = response["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty());
                assert!(described, "{method} {path} {status}");
            }
        }
    }
}

#[tokio::test]
async fn unknown_routes_and_methods_are_problems() {
    let s = TestServer::start(None).await;
    problem_of(
        s.get("/api/v1/nothing", READER).send().await.unwrap(),
        404,
        "no_such_route",
    )
    .await;
    problem_of(
        s.http
            .delete(format!("{}/healthz", s.url))
            .send()
            .await
            .unwrap(),
        405,
        "method_not_allowed",
    )
    .await;
}

#[tokio::test]
async fn the_rate_limit_answers_429_per_token() {
    let s = TestServer::start_with(None, |c| {
        c.rate_limit_per_second = 1;
        c.rate_limit_burst = 2;
    })
    .await;
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(
            s.get("/api/v1/groups", READER)
                .send()
                .await
                .unwrap()
                .status()
                .as_u16(),
        );
    }
    assert_eq!(statuses, [200, 200, 429]);
    problem_of(
        s.get("/api/v1/groups", READER).send().await.unwrap(),
        429,
        "rate_limited",
    )
    .await;
    // Another token has its own budget.
    json_of(s.get("/api/v1/groups", RUNNER).send().await.unwrap(), 200).await;
}

#[tokio::test]
async fn cors_is_off_by_default_and_on_when_configured() {
    let s = TestServer::start(None).await;
    let r = s
        .get("/api/v1/groups", READER)
        .header("origin", "http://x.test")
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let s =
        TestServer::start_with(None, |c| c.cors_origins = vec!["http://x.test".to_owned()]).await;
    let r = s
        .get("/api/v1/groups", READER)
        .header("origin", "http://x.test")
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["access-control-allow-origin"], "http://x.test");
}

#[tokio::test]
async fn dev_mode_needs_no_token() {
    let s = TestServer::start_with(None, |c| c.dev = true).await;
    json_of(
        s.http
            .get(format!("{}/api/v1/tools", s.url))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    s.stop().await;
}

#[test]
fn exposure_rules_refuse_unsafe_addresses() {
    let mut c = toolbelt_server::ServerConfig::default();
    c.addr = "0.0.0.0:7878".parse().unwrap();
    assert!(
        c.check_exposure(false)
            .unwrap_err()
            .to_string()
            .contains("without authentication")
    );
    assert!(c.check_exposure(true).is_ok());
    c.dev = true;
    assert!(
        c.check_exposure(true)
            .unwrap_err()
            .to_string()
            .contains("loopback")
    );
    c.addr = "127.0.0.1:7878".parse().unwrap();
    assert!(c.check_exposure(false).is_ok());
}

/// Without a database every route that needs one answers the same way: one code for one
/// condition.
#[tokio::test]
async fn without_a_database_every_stored_thing_is_503_no_database() {
    let s = TestServer::start(None).await;
    for path in ["/api/v1/routines", "/api/v1/skills", "/api/v1/mcp-servers"] {
        problem_of(
            s.get(path, READER).send().await.unwrap(),
            503,
            "no_database",
        )
        .await;
    }
    for (path, body) in [
        (
            "/api/v1/tools",
            json!({"name": "t", "description": "d", "command": {"argv": ["true"]}}),
        ),
        ("/api/v1/agents", json!({"name": "a", "selection": "util"})),
    ] {
        let r = s.post(path, ADMIN).json(&body).send().await.unwrap();
        problem_of(r, 503, "no_database").await;
    }
}
