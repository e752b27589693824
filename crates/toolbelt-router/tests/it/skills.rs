//! Skills: SKILL.md parsing, loading a folder of skills, routing them beside tools.

use pretty_assertions::assert_eq;
use toolbelt_router::{HybridRouter, RouteRequest, Skill, SkillSet};

use crate::{block_on, eval_catalog};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/skills");

#[test]
fn a_folder_of_skills_loads_with_front_matter_and_files() {
    let skills = SkillSet::load_dir(FIXTURES).unwrap();
    let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["brand-voice", "pdf-forms", "release-notes"]);
    let pdf = skills.get("pdf-forms").unwrap();
    assert!(pdf.description.starts_with("Fill in PDF forms"));
    assert!(pdf.instructions.starts_with("# Filling PDF forms"));
    assert_eq!(
        pdf.metadata.get("license").map(String::as_str),
        Some("Apache-2.0")
    );
    assert!(
        !pdf.metadata.contains_key("metadata"),
        "nested maps are skipped"
    );
    assert_eq!(pdf.files, [std::path::PathBuf::from("fields.py")]);
    let notes = skills.get("release-notes").unwrap();
    assert_eq!(
        notes.description,
        "Write release notes and a changelog entry from the merged pull requests of a release."
    );
    assert_eq!(
        notes.files,
        [std::path::PathBuf::from("templates/notes.md")]
    );
    assert_eq!(
        skills.get("brand-voice").unwrap().description,
        "Write marketing copy in the company's brand voice: tone, words to avoid, taglines."
    );
    // One skill folder loads as a set of one.
    let one = SkillSet::load_dir(format!("{FIXTURES}/pdf-forms")).unwrap();
    assert_eq!(one.len(), 1);
}

#[test]
fn bad_skill_files_are_named() {
    let err = |text: &str| Skill::parse(text, "/x/s").unwrap_err().to_string();
    assert_eq!(
        err("# no front matter"),
        "/x/s/SKILL.md: does not start with `---` front matter"
    );
    assert_eq!(
        err("---\nname: a\n"),
        "/x/s/SKILL.md: front matter is not closed by a `---` line"
    );
    assert_eq!(
        err("---\nname: a\n---\nbody"),
        "/x/s/SKILL.md: front matter has no `description`"
    );
    assert!(
        err("---\nname: Bad Name\ndescription: d\n---\n")
            .contains("lowercase letters, digits or hyphens"),
        "{}",
        err("---\nname: Bad Name\ndescription: d\n---\n")
    );
    let long = format!("---\nname: a\ndescription: {}\n---\n", "x".repeat(1025));
    assert!(err(&long).contains("1025 characters; at most 1024"));
    let dir = tempfile::tempdir().unwrap();
    for sub in ["one", "two"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
        std::fs::write(
            dir.path().join(sub).join("SKILL.md"),
            "---\nname: same\ndescription: d\n---\n",
        )
        .unwrap();
    }
    let e = SkillSet::load_dir(dir.path()).unwrap_err().to_string();
    assert!(e.starts_with("skill `same` is defined twice"), "{e}");
}

#[test]
fn a_skill_from_parts_is_checked_like_a_skill_file() {
    let skill = Skill::from_parts("csv-report", " Summarise CSV tables ", "\nSteps.\n").unwrap();
    assert_eq!(
        (skill.description.as_str(), skill.instructions.as_str()),
        ("Summarise CSV tables", "Steps.")
    );
    assert!(skill.dir.as_os_str().is_empty() && skill.files.is_empty());
    let err = |name: &str, description: &str| {
        Skill::from_parts(name, description, "")
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err("Bad", "d"),
        "Bad/SKILL.md: `name` \"Bad\" must be 1-64 lowercase letters, digits or hyphens"
    );
    assert_eq!(err("ok", " "), "ok/SKILL.md: `description` is empty");
    assert!(err("ok", &"x".repeat(1025)).ends_with("1025 characters; at most 1024"));
}

#[test]
fn the_hybrid_router_lists_matching_skills_beside_tools() {
    let skills = SkillSet::load_dir(FIXTURES).unwrap();
    let router = HybridRouter::default().with_skills(skills);
    let tools = eval_catalog();
    let d = block_on(router.decide(&RouteRequest::new(
        "please fill in this PDF form for me",
        tools.clone(),
    )));
    let chosen: Vec<&str> = d.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(chosen, ["pdf-forms"], "{}", d.reason);
    assert!(!d.tools.is_empty());
    let d = block_on(router.decide(&RouteRequest::new("what's the weather in Paris", tools)));
    assert!(d.skills.is_empty(), "{:?}", d.skills);
    let json = serde_json::to_value(&d).unwrap();
    assert!(json.get("skills").is_none(), "no skills, no field: {json}");
}
