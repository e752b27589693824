//! Stored skills through the API (`GET /skills`, `GET /skills/{name}`), and a run of a
//! stored-server agent that gets a matching skill's instructions; SQLite and Postgres.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_store::SkillSpec;

use crate::support::{
    ADMIN, FakeModel, READER, RUNNER, TestServer, json_of, on_both, problem_of, text,
};

#[tokio::test]
async fn stored_skills_are_listed_shown_and_given_to_runs() {
    on_both(|db| async move {
        let store = db.open().await;
        let pdf = SkillSpec::new("pdf-forms", "Fill in PDF forms", "PDF-FORM-STEPS")
            .with_files(vec!["fields.py".into()]);
        store.skills().put(&pdf, "test").await.unwrap();
        let csv = SkillSpec::new("csv-report", "Summarise CSV spreadsheets", "CSV-STEPS");
        store.skills().put(&csv, "test").await.unwrap();
        store.close().await;
        let model = FakeModel::start(vec![text(&["Done."])]).await;
        let s = TestServer::start_stored(&db, Some(&model.url)).await;
        let list = json_of(s.get("/api/v1/skills", READER).send().await.unwrap(), 200).await;
        let names: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["csv-report", "pdf-forms"], "{}", db.engine);
        assert!(list[0].get("instructions").is_none(), "{list}");
        let one = json_of(
            s.get("/api/v1/skills/pdf-forms", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(
            (&one["instructions"], &one["files"]),
            (&json!("PDF-FORM-STEPS"), &json!(["fields.py"]))
        );
        let missing = s.get("/api/v1/skills/nope", READER).send().await.unwrap();
        problem_of(missing, 404, "skill_not_found").await;
        let run = s
            .post("/api/v1/agents/helper/runs", RUNNER)
            .json(&json!({"input": "fill in the PDF form"}));
        let run = json_of(run.send().await.unwrap(), 200).await;
        assert_eq!(run["answer"], "Done.", "{run}");
        let bodies: Vec<Value> = model.requests.lock().await.clone();
        let system = bodies[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            system.contains("PDF-FORM-STEPS") && !system.contains("CSV-STEPS"),
            "{system}"
        );
        let detail = json_of(
            s.get(
                &format!("/api/v1/runs/{}", run["id"].as_str().unwrap()),
                READER,
            )
            .send()
            .await
            .unwrap(),
            200,
        )
        .await;
        let added: Vec<&Value> = detail["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "skills_added")
            .collect();
        assert_eq!(added.len(), 1, "{detail}");
        assert_eq!(
            added[0]["data"]["skills"],
            json!(["pdf-forms"]),
            "{}",
            added[0]
        );
        s.stop().await;
        db
    })
    .await;
}

#[tokio::test]
async fn skills_are_written_and_deleted_through_the_api_by_admins_only() {
    on_both(|db| async move {
        let s = TestServer::start_stored(&db, None).await;
        let url = format!("{}/api/v1/skills/pdf-forms", s.url);
        let body = json!({"description": "Fill in PDF forms", "instructions": "STEPS"});
        let put = |token: &str, body: Value| s.http.put(&url).bearer_auth(token).json(&body).send();
        let denied = put(READER, body.clone()).await.unwrap();
        assert_eq!(denied.status(), 403, "{}", db.engine);
        let created = json_of(put(ADMIN, body.clone()).await.unwrap(), 201).await;
        assert_eq!(created["instructions"], "STEPS");
        // The same content again changes nothing; other content replaces it.
        let same = json_of(put(ADMIN, body.clone()).await.unwrap(), 200).await;
        assert_eq!(same["content_hash"], created["content_hash"]);
        let changed = json!({"description": "Fill in PDF forms", "instructions": "NEW STEPS"});
        json_of(put(ADMIN, changed).await.unwrap(), 200).await;
        let shown = json_of(
            s.get("/api/v1/skills/pdf-forms", READER)
                .send()
                .await
                .unwrap(),
            200,
        )
        .await;
        assert_eq!(shown["instructions"], "NEW STEPS");
        // Bad input names what is wrong.
        let bad_name = s
            .http
            .put(format!("{}/api/v1/skills/Not_A_Name", s.url))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
            .await
            .unwrap();
        problem_of(bad_name, 422, "invalid_field").await;
        let empty = put(ADMIN, json!({"description": "", "instructions": "x"}))
            .await
            .unwrap();
        problem_of(empty, 422, "invalid_field").await;
        let unknown = put(
            ADMIN,
            json!({"description": "d", "instructions": "x", "extra": 1}),
        )
        .await
        .unwrap();
        assert_eq!(unknown.status(), 422);
        // Deleting: 204, then 404.
        let gone = s.http.delete(&url).bearer_auth(ADMIN).send().await.unwrap();
        assert_eq!(gone.status(), 204);
        let again = s.http.delete(&url).bearer_auth(ADMIN).send().await.unwrap();
        problem_of(again, 404, "skill_not_found").await;
        s.stop().await;
        db
    })
    .await;
}
