//! `toolbelt skills add|ls|show|rm` against a database, and `toolbelt run` adding a chosen
//! skill's instructions to the model's requests (from the database, or from the folder).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::cli_db::{Db, databases, schema};
use crate::cli_run::{fake_openai, sse, toolbelt_run};
use crate::{err as stderr, ok as stdout};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../toolbelt-router/tests/fixtures/skills"
);

fn toolbelt(db: &Db, dir: &Path, args: &[&str]) -> Output {
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .current_dir(dir)
            .env("TOOLBELT_DATABASE_URL", &db.url)
            .env_remove("TOOLBELT_SKILLS_DIR")
            .args(args),
        "",
    )
}

#[tokio::test]
async fn skills_are_added_listed_shown_and_removed_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    for db in databases(dir.path(), "cli_skills") {
        schema(&db, true).await;
        let run = |args: &[&str]| toolbelt(&db, dir.path(), args);
        let added = stdout(&run(&["skills", "add", FIXTURES]));
        assert_eq!(
            added,
            "created brand-voice\ncreated pdf-forms\ncreated release-notes\n"
        );
        let one = format!("{FIXTURES}/pdf-forms");
        assert_eq!(
            stdout(&run(&["skills", "add", &one])),
            "unchanged pdf-forms\n"
        );
        // No folder named `skills` here: `ls` reads the database (TOOLBELT_DATABASE_URL).
        let names: Vec<String> = stdout(&run(&["skills", "ls"]))
            .lines()
            .map(|l| l.split_whitespace().next().unwrap().to_owned())
            .collect();
        assert_eq!(names, ["brand-voice", "pdf-forms", "release-notes"]);
        let shown = stdout(&run(&["skills", "show", "pdf-forms"]));
        assert!(shown.contains("license: Apache-2.0"), "{shown}");
        assert!(
            shown.contains("files:       fields.py\n\n# Filling PDF forms"),
            "{shown}"
        );
        assert!(!shown.contains("folder:"), "{shown}");
        assert_eq!(
            stdout(&run(&["skills", "rm", "pdf-forms"])),
            "removed pdf-forms\n"
        );
        let err = stderr(&run(&["skills", "rm", "pdf-forms"]));
        assert!(err.contains("skill `pdf-forms` not found"), "{err}");
        let err = stderr(&run(&["skills", "show", "pdf-forms"]));
        assert!(
            err.contains(
                "no skill named `pdf-forms` in the database; known: brand-voice, release-notes"
            ),
            "{err}"
        );
        let err = stderr(&run(&["skills", "add", dir.path().to_str().unwrap()]));
        assert!(err.contains("expected a folder with a SKILL.md"), "{err}");
        schema(&db, false).await;
    }
}

/// The system message of a request body the fake model received.
fn system(body: &Value) -> String {
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    body["messages"][0]["content"].as_str().unwrap().to_owned()
}

fn answer(text: &str) -> String {
    sse(&[json!({"content": text})], "stop")
}

#[test]
fn toolbelt_run_sends_the_chosen_stored_skill_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("s.db").display());
    let add = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["skills", "add", FIXTURES, "--database-url", &db])
        .output()
        .unwrap();
    stdout(&add);
    let (url, model) = fake_openai(vec![answer("Done."), answer("42")]);
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("TOOLBELT_MODEL", "m"),
        ("TOOLBELT_DATABASE_URL", db.as_str()),
    ];
    let out = toolbelt_run(dir.path(), &env, &["fill in the PDF form tax.pdf"], "");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && err.contains("· skills: pdf-forms"),
        "{err}"
    );
    let out = toolbelt_run(dir.path(), &env, &["what is six times seven"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bodies = model.join().unwrap();
    let chosen = system(&bodies[0]);
    assert_eq!(chosen.matches("# Filling PDF forms").count(), 1, "{chosen}");
    assert!(
        !chosen.contains("brand voice") && !chosen.contains("release notes"),
        "{chosen}"
    );
    assert!(!system(&bodies[1]).contains("<skill"), "{}", bodies[1]);
}

#[test]
fn toolbelt_run_reads_the_skills_folder_without_a_database() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("skills/csv-report");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: csv-report\ndescription: Summarise CSV spreadsheets into a short report\n---\nCSV-REPORT-STEPS\n",
    )
    .unwrap();
    let (url, model) = fake_openai(vec![answer("Done.")]);
    let env = [("OPENAI_BASE_URL", url.as_str()), ("TOOLBELT_MODEL", "m")];
    let out = toolbelt_run(
        dir.path(),
        &env,
        &["--no-store", "summarise the CSV spreadsheet sales.csv"],
        "",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let system = system(&model.join().unwrap()[0]);
    assert!(system.contains("<skill name=\"csv-report\">"), "{system}");
    assert!(system.contains("CSV-REPORT-STEPS"), "{system}");
}

#[test]
fn the_example_skills_in_the_repository_load_and_route() {
    let skills = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../skills");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["skills", "ls", "--skills"])
        .arg(&skills)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("release-notes") && text.contains("code-review"),
        "{text}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["route", "--skills"])
        .arg(&skills)
        .arg("写一下这个版本的发布说明")
        .env("TOOLBELT_NO_EMBEDDER", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("skills:   release-notes"), "{text}");
}
