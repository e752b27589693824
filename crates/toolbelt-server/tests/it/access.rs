//! Tokens limited to agents, on SQLite and Postgres: a stored token that may act on `helper`
//! only reaches that agent and what belongs to it (its tools, runs, approvals, questions and
//! routines), sees nothing else in lists, and is refused on every agent route of another
//! agent and on every route that acts on the whole server.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::support::{
    ADMIN, FakeModel, READER, TestServer, json_of, on_both, problem_of, text, tool_call,
    wait_status,
};

fn names(list: &Value, key: &str) -> Vec<String> {
    let mut out: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v[key].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn a_token_limited_to_an_agent_reaches_only_that_agent_and_what_belongs_to_it() {
    on_both(|db| async move {
        let model = FakeModel::start(vec![
            tool_call("c1", "delete_file", json!({"path": "theirs.txt"})),
            tool_call("c2", "delete_file", json!({"path": "mine.txt"})),
            text(&["done"]),
            text(&["done too"]),
        ])
        .await;
        let s = TestServer::start_stored(&db, Some(&model.url)).await;
        let store = db.open().await;
        let (_, team) = store
            .tokens().create_for("team", &["admin".to_owned()], Some(&["helper".to_owned()]))
            .await
            .unwrap();
        let team = team.as_str();
        // Another agent, `other`, with the same tools as `helper`.
        let other = json!({"name": "other", "selection": "util,danger", "provider": "openai",
            "model": "scripted", "options": {"base_url": model.url, "api_key_env": "TOOLBELT_TEST_NO_KEY"}});
        json_of(s.post("/api/v1/agents", ADMIN).json(&other).send().await.unwrap(), 201).await;
        // A tool no agent of the token is offered.
        let shout = json!({
            "spec": {"name": "shout", "description": "Shout", "tags": ["loud"],
                     "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
            "definition": {"command": {"argv": ["echo", "{{text}}"], "read_only": true}}
        });
        json_of(s.post("/api/v1/tools", ADMIN).json(&shout).send().await.unwrap(), 201).await;

        let me = json_of(s.get("/api/v1/whoami", team).send().await.unwrap(), 200).await;
        assert_eq!(me["agents"], json!(["helper"]));
        let all = json_of(s.get("/api/v1/whoami", ADMIN).send().await.unwrap(), 200).await;
        assert!(all.get("agents").is_none(), "{all}");
        let agents = json_of(s.get("/api/v1/agents", team).send().await.unwrap(), 200).await;
        assert_eq!(names(&agents, "name"), ["helper"]);

        // Every route of another agent is refused before anything is read: the same answer
        // for an agent that exists and one that does not.
        let doc = json_of(s.get("/api/v1/openapi.json", READER).send().await.unwrap(), 200).await;
        let mut refused = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            if !path.starts_with("/api/v1/agents/{id}") {
                continue;
            }
            for method in item.as_object().unwrap().keys() {
                for agent in ["other", "nobody"] {
                    let url = format!("{}{}", s.url, path.replace("{id}", agent).replace("{tool}", "echo"));
                    let request = s
                        .http
                        .request(method.to_uppercase().parse().unwrap(), url)
                        .bearer_auth(team)
                        .header("if-match", "\"1\"");
                    let request = if method == "get" || method == "delete" {
                        request
                    } else {
                        request.json(&json!({}))
                    };
                    let body = problem_of(request.send().await.unwrap(), 403, "agent_not_allowed").await;
                    assert!(body["detail"].as_str().unwrap().contains("helper"), "{body}");
                    refused += 1;
                }
            }
        }
        assert!(refused >= 2 * 8, "only {refused} agent routes were tried");
        let mcp = s
            .http
            .post(format!("{}/mcp/other", s.url))
            .bearer_auth(team)
            .header("accept", "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}}))
            .send()
            .await
            .unwrap();
        problem_of(mcp, 403, "agent_not_allowed").await;

        // What acts on the whole server is refused.
        for (method, path) in [
            ("GET", "/api/v1/mcp-servers"),
            ("GET", "/api/v1/skills"),
            ("GET", "/api/v1/stats"),
            ("GET", "/api/v1/stored-tools"),
            ("GET", "/api/v1/config"),
            ("GET", "/metrics"),
            ("POST", "/api/v1/agents/validate"),
            ("POST", "/api/v1/tools"),
            ("POST", "/api/v1/tools/echo/disable"),
        ] {
            let request = s
                .http
                .request(method.parse().unwrap(), format!("{}{path}", s.url))
                .bearer_auth(team);
            let request = if method == "POST" { request.json(&json!({})) } else { request };
            problem_of(request.send().await.unwrap(), 403, "server_not_allowed").await;
        }
        // A new agent only under a name the token may act on.
        let named = |name: &str| json!({"name": name, "selection": "util"});
        problem_of(
            s.post("/api/v1/agents", team).json(&named("mine")).send().await.unwrap(),
            403,
            "agent_not_allowed",
        )
        .await;

        // Tools: the ones `helper` is offered, the same in the list, the groups and by name.
        let offered = json_of(s.get("/api/v1/agents/helper/tools", team).send().await.unwrap(), 200).await;
        let mut available: Vec<String> = offered
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["available"] == true)
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        available.sort();
        let listed = json_of(s.get("/api/v1/tools?limit=5000", team).send().await.unwrap(), 200).await;
        assert_eq!(names(&listed["items"], "name"), available);
        let everything = json_of(s.get("/api/v1/tools?limit=5000", READER).send().await.unwrap(), 200).await;
        let hidden: Vec<String> = names(&everything["items"], "name")
            .into_iter()
            .filter(|n| !available.contains(n))
            .collect();
        assert_eq!(hidden, ["shout"]);
        let groups = json_of(s.get("/api/v1/groups", team).send().await.unwrap(), 200).await;
        for group in groups.as_array().unwrap() {
            for tool in group["tools"].as_array().unwrap() {
                assert!(available.contains(&tool.as_str().unwrap().to_owned()), "{group}");
            }
        }
        let hidden = &hidden[0];
        problem_of(s.get(&format!("/api/v1/tools/{hidden}"), team).send().await.unwrap(), 403, "tool_not_allowed").await;
        problem_of(
            s.post(&format!("/api/v1/tools/{hidden}/call"), team).json(&json!({"arguments": {}})).send().await.unwrap(),
            403,
            "tool_not_allowed",
        )
        .await;
        let echoed = json_of(
            s.post("/api/v1/tools/echo/call", team).json(&json!({"arguments": {"text": "hi"}})).send().await.unwrap(),
            200,
        )
        .await;
        assert_eq!(echoed["text"], "hi");
        problem_of(s.post("/api/v1/route", team).json(&json!({"input": "echo hi"})).send().await.unwrap(), 403, "agent_required").await;
        problem_of(
            s.post("/api/v1/route", team).json(&json!({"input": "echo hi", "agent": "other"})).send().await.unwrap(),
            403,
            "agent_not_allowed",
        )
        .await;
        json_of(
            s.post("/api/v1/route", team).json(&json!({"input": "echo hi", "agent": "helper"})).send().await.unwrap(),
            200,
        )
        .await;

        // Runs and approvals: the admin's run of `other` waits for an approval, then the
        // team's run of `helper` does.
        let theirs = json_of(
            s.post("/api/v1/agents/other/runs", ADMIN).json(&json!({"input": "delete theirs.txt"})).send().await.unwrap(),
            202,
        )
        .await;
        let theirs_id = theirs["id"].as_str().unwrap().to_owned();
        wait_status(&s, &theirs_id, "waiting").await;
        let mine = json_of(
            s.post("/api/v1/agents/helper/runs", team).json(&json!({"input": "delete mine.txt"})).send().await.unwrap(),
            202,
        )
        .await;
        let mine_id = mine["id"].as_str().unwrap().to_owned();
        wait_status(&s, &mine_id, "waiting").await;
        let runs = json_of(s.get("/api/v1/runs", team).send().await.unwrap(), 200).await;
        assert_eq!(names(&runs["items"], "id"), vec![mine_id.as_str()]);
        for (method, path) in [
            ("GET", format!("/api/v1/runs/{theirs_id}")),
            ("GET", format!("/api/v1/runs/{theirs_id}/events")),
            ("POST", format!("/api/v1/runs/{theirs_id}/cancel")),
            ("POST", format!("/api/v1/runs/{theirs_id}/continue")),
        ] {
            let request = s.http.request(method.parse().unwrap(), format!("{}{path}", s.url)).bearer_auth(team);
            let request = if method == "POST" { request.json(&json!({"input": "go on"})) } else { request };
            problem_of(request.send().await.unwrap(), 404, "run_not_found").await;
        }
        let approvals = json_of(s.get("/api/v1/approvals", team).send().await.unwrap(), 200).await;
        assert_eq!(approvals.as_array().unwrap().len(), 1, "{approvals}");
        assert_eq!(approvals[0]["run_id"], json!(mine_id));
        let every = json_of(s.get("/api/v1/approvals", ADMIN).send().await.unwrap(), 200).await;
        let their_approval = every
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["run_id"] == json!(theirs_id))
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        problem_of(
            s.post(&format!("/api/v1/approvals/{their_approval}"), team).json(&json!({"decision": "approve"})).send().await.unwrap(),
            404,
            "approval_not_found",
        )
        .await;
        let my_approval = approvals[0]["id"].as_str().unwrap();
        json_of(
            s.post(&format!("/api/v1/approvals/{my_approval}"), team).json(&json!({"decision": "approve"})).send().await.unwrap(),
            200,
        )
        .await;
        // Their approval is still waiting for someone who may answer it.
        let still = json_of(s.get(&format!("/api/v1/runs/{theirs_id}"), ADMIN).send().await.unwrap(), 200).await;
        assert_eq!(still["pending_approvals"].as_array().unwrap().len(), 1, "{still}");
        json_of(
            s.post(&format!("/api/v1/approvals/{their_approval}"), ADMIN).json(&json!({"decision": "reject"})).send().await.unwrap(),
            200,
        )
        .await;

        // Routines: another agent's are out of sight; the token makes its agent's own.
        let routine = |name: &str, agent: &str| {
            json!({"name": name, "agent": agent, "prompt": "Check the mail", "every_seconds": 3600})
        };
        json_of(s.post("/api/v1/routines", ADMIN).json(&routine("theirs", "other")).send().await.unwrap(), 201).await;
        let body = problem_of(
            s.post("/api/v1/routines", team).json(&routine("sneaky", "other")).send().await.unwrap(),
            403,
            "agent_not_allowed",
        )
        .await;
        assert_eq!(body["pointer"], "/agent", "{body}");
        json_of(s.post("/api/v1/routines", team).json(&routine("mine", "helper")).send().await.unwrap(), 201).await;
        let listed = json_of(s.get("/api/v1/routines", team).send().await.unwrap(), 200).await;
        assert_eq!(names(&listed, "name"), ["mine"]);
        for (method, path) in [
            ("GET", "/api/v1/routines/theirs"),
            ("POST", "/api/v1/routines/theirs/pause"),
            ("POST", "/api/v1/routines/theirs/resume"),
            ("POST", "/api/v1/routines/theirs/run"),
            ("DELETE", "/api/v1/routines/theirs"),
        ] {
            let request = s
                .http
                .request(method.parse().unwrap(), format!("{}{path}", s.url))
                .bearer_auth(team);
            problem_of(request.send().await.unwrap(), 404, "routine_not_found").await;
        }
        let theirs = json_of(s.get("/api/v1/routines/theirs", ADMIN).send().await.unwrap(), 200).await;
        assert_eq!(theirs["routine"]["paused"], false, "{theirs}");
        s.stop().await;
        db
    })
    .await;
}
