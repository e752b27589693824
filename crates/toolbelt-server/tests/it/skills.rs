//! Stored skills through the API (`GET /skills`, `GET /skills/{name}`), and a run of a
//! stored-server agent that gets a matching skill's instructions; SQLite and Postgres.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolbelt_store::SkillDraft;

use crate::support::{FakeModel, READER, RUNNER, TestServer, json_of, on_both, problem_of, text};

#[tokio::test]
async fn stored_skills_are_listed_shown_and_given_to_runs() {
    on_both(|db| async move {
        let store = db.open().await;
        let pdf = SkillDraft::new("pdf-forms", "Fill in PDF forms", "PDF-FORM-STEPS")
            .with_files(vec!["fields.py".into()]);
        store.put_skill(&pdf).await.unwrap();
        let csv = SkillDraft::new("csv-report", "Summarise CSV spreadsheets", "CSV-STEPS");
        store.put_skill(&csv).await.unwrap();
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
