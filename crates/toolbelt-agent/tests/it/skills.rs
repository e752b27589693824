//! Skills: a chosen skill's instructions join every request of the run, once; others never do.

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentBuilder, AgentEvent, Step};
use toolbelt_llm::{ChatRequest, Message};
use toolbelt_router::{AnyRouter, RouteDecision, ScoredTool, Skill, SkillSet};

use crate::routing::Fixed;
use crate::support::multiply;

const PDF_STEPS: &str = "Open the form with pdftk; FILL-PDF-STEPS.";

fn skill(name: &str, description: &str, instructions: &str) -> Skill {
    let text = format!("---\nname: {name}\ndescription: {description}\n---\n{instructions}\n");
    Skill::parse(&text, "").unwrap()
}

fn skills() -> SkillSet {
    SkillSet::new(vec![
        skill(
            "pdf-forms",
            "Fill in PDF forms and extract fields from PDF files",
            PDF_STEPS,
        ),
        skill(
            "git-release",
            "Tag and publish a release with git",
            "RELEASE-STEPS",
        ),
        skill(
            "csv-report",
            "Summarise spreadsheets and CSV tables",
            "CSV-STEPS",
        ),
    ])
}

fn agent(script: &ScriptedProvider) -> AgentBuilder {
    Agent::builder(script.provider())
        .system_prompt("You are terse.")
        .tool(multiply())
        .skills(skills())
}

/// The system message of a request the model received.
fn system(request: &ChatRequest) -> String {
    match &request.messages[0] {
        Message::System { content } => content.clone(),
        other => panic!("first message is not a system message: {other:?}"),
    }
}

#[tokio::test]
async fn a_matching_request_gets_the_instructions_in_every_request_once() {
    let script = ScriptedProvider::new()
        .then_call("multiply", json!({"a": 2, "b": 3}))
        .then_text("done");
    let out = agent(&script)
        .build()
        .unwrap()
        .run("fill in this PDF form for me")
        .await
        .unwrap();
    let requests = script.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let system = system(request);
        assert!(system.starts_with("You are terse.\n\n"), "{system}");
        assert_eq!(system.matches(PDF_STEPS).count(), 1, "{system}");
        assert!(!system.contains("RELEASE-STEPS") && !system.contains("CSV-STEPS"));
        let systems = request
            .messages
            .iter()
            .filter(|m| matches!(m, Message::System { .. }));
        assert_eq!(systems.count(), 1);
    }
    // The conversation itself stays free of skills (a session's next run starts clean).
    assert!(
        out.transcript
            .messages
            .iter()
            .all(|m| !m.text().unwrap_or("").contains(PDF_STEPS))
    );
    let added: Vec<&Step> = out
        .transcript
        .steps
        .iter()
        .filter(|s| matches!(s, Step::SkillsAdded { .. }))
        .collect();
    assert_eq!(
        added,
        [&Step::SkillsAdded {
            skills: vec!["pdf-forms".into()]
        }]
    );
}

#[tokio::test]
async fn an_unrelated_request_gets_no_instructions() {
    let script = ScriptedProvider::new().then_text("42");
    let out = agent(&script)
        .build()
        .unwrap()
        .run("what is 6 times 7")
        .await
        .unwrap();
    assert_eq!(system(&script.requests()[0]), "You are terse.");
    assert!(
        !out.transcript
            .steps
            .iter()
            .any(|s| matches!(s, Step::SkillsAdded { .. }))
    );
}

#[tokio::test]
async fn the_route_decision_chooses_and_unknown_names_are_ignored() {
    let script = ScriptedProvider::new().then_text("ok");
    let mut decision = RouteDecision::tools("fixed", Vec::new(), "none");
    decision.skills = ["csv-report", "no-such-skill", "csv-report"]
        .map(|name| ScoredTool {
            name: name.into(),
            score: 1.0,
        })
        .into();
    agent(&script)
        .router(AnyRouter::new(Fixed(Some(decision))))
        .build()
        .unwrap()
        .run("fill in this PDF form")
        .await
        .unwrap();
    let system = system(&script.requests()[0]);
    assert_eq!(system.matches("CSV-STEPS").count(), 1, "{system}");
    assert!(!system.contains(PDF_STEPS), "{system}");
}

#[tokio::test]
async fn a_streamed_run_reports_the_added_skills() {
    let script = ScriptedProvider::new().then_text("ok");
    let agent = Agent::builder(script.provider())
        .skills(skills())
        .build()
        .unwrap();
    let events: Vec<AgentEvent> = agent
        .run_stream("extract the fields of a PDF")
        .collect()
        .await;
    let added: Vec<&Vec<String>> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::SkillsAdded { skills } => Some(skills),
            _ => None,
        })
        .collect();
    assert_eq!(added, [&vec!["pdf-forms".to_owned()]]);
    // Without a system prompt, the skills make the system message alone.
    assert!(system(&script.requests()[0]).starts_with("Skills for this request"));
}
