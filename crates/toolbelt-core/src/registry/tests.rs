//! Registry: name and tag indexes, selections, atomic batches, removal.

use pretty_assertions::assert_eq;

use super::*;
use crate::FnTool;

fn tool(name: &str, tags: &[&str]) -> ToolHandle {
    FnTool::builder(name)
        .description(format!("the {name} tool"))
        .spec(|s| s.tags(tags.iter().copied()))
        .handler(|_args, _ctx| async { "ok" })
        .unwrap()
}

fn sample() -> Registry {
    let r = Registry::new();
    r.add_tools([
        tool("file_read", &["file"]),
        tool("file_write", &["file"]),
        tool("shell_exec", &["shell"]),
        tool("git", &["git", "shell"]),
        tool("http_request", &["web"]),
    ])
    .unwrap();
    r
}

#[test]
fn selects_groups_tools_and_exclusions() {
    let r = sample();
    assert_eq!(
        r.select("file,shell").unwrap().names(),
        ["file_read", "file_write", "git", "shell_exec"]
    );
    assert_eq!(
        r.select("file,shell,-shell_exec").unwrap().names(),
        ["file_read", "file_write", "git"]
    );
    assert_eq!(
        r.select("web,file_read").unwrap().names(),
        ["file_read", "http_request"]
    );
    assert_eq!(
        r.select("-shell").unwrap().names(),
        ["file_read", "file_write", "http_request"]
    );
    assert_eq!(r.select("*,-tool:git").unwrap().len(), 4);
    assert!(r.select("").unwrap().is_empty());
}

#[test]
fn unknown_group_lists_known_ones_and_nearest() {
    let err = sample().select("file,shel").unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown group or tool `shel` in selection; known groups: file, git, shell, web; did you mean one of `shell`, `shell_exec`?"
    );
    let err = sample().select("tag:files").unwrap_err();
    assert!(err.to_string().ends_with("; did you mean `file`?"));
}

#[test]
fn batch_add_is_all_or_nothing() {
    let r = sample();
    let err = r
        .add_tools([tool("new_one", &[]), tool("git", &[])])
        .unwrap_err();
    assert!(matches!(err, RegistryError::Duplicate { ref name, .. } if name == "git"));
    assert!(!r.contains("new_one"));
    assert_eq!(r.len(), 5);
}

#[test]
fn remove_updates_both_indexes_and_reuses_slots() {
    let r = sample();
    let before = r.snapshot().generation();
    r.remove("http_request").unwrap();
    assert!(r.get("http_request").is_none());
    assert!(r.tools_by_tag("web").is_empty());
    assert!(r.tags().iter().all(|(t, _)| t != "web"));
    assert!(r.snapshot().generation() > before);
    r.add_tool(tool("fetch", &["web"])).unwrap();
    assert_eq!(r.snapshot().capacity(), 5, "the freed slot is reused");
    let err = r.remove("gti").unwrap_err();
    assert_eq!(err.to_string(), "no tool named `gti`; did you mean `git`?");
}

#[test]
fn replace_swaps_versions_and_reindexes_tags() {
    let r = sample();
    let v2 = FnTool::builder("git")
        .spec(|s| s.description("git v2").version("2.0.0").tag("vcs"))
        .handler(|_a, _c| async { "v2" })
        .unwrap();
    let old = r.replace(v2).unwrap().unwrap();
    assert_eq!(old.spec().version, "1.0.0");
    assert_eq!(r.get("git").unwrap().spec().version, "2.0.0");
    assert_eq!(r.tools_by_tag("shell").len(), 1);
    assert_eq!(r.tools_by_tag("vcs").len(), 1);
}

#[test]
fn toolsets_are_stable_snapshots() {
    let r = sample();
    let view = r.select("file").unwrap();
    r.remove("file_read").unwrap();
    assert_eq!(view.names(), ["file_read", "file_write"]);
    assert!(view.get("shell_exec").is_none(), "outside the view");
    assert_eq!(
        view.require("file_reed").unwrap_err().to_string(),
        "unknown tool `file_reed`; did you mean one of `file_read`, `file_write`?"
    );
}

#[test]
fn module_adds_its_tools() {
    struct Math;
    impl ToolModule for Math {
        fn tools(&self) -> Result<Vec<ToolHandle>, SpecError> {
            Ok(vec![tool("add", &["math"]), tool("mul", &["math"])])
        }
    }
    let r = Registry::new();
    r.add_module(&Math).unwrap();
    assert_eq!(r.tools_by_tag("math").len(), 2);
}

#[test]
fn concurrent_readers_see_whole_writes() {
    let r = std::sync::Arc::new(Registry::new());
    std::thread::scope(|s| {
        let writer = std::sync::Arc::clone(&r);
        s.spawn(move || {
            for i in 0..300 {
                // Each write adds a pair in one batch; readers must never see half.
                writer
                    .add_tools([
                        tool(&format!("a{i}"), &["pair"]),
                        tool(&format!("b{i}"), &["pair"]),
                    ])
                    .unwrap();
                if i % 3 == 0 {
                    writer
                        .remove_tools([format!("a{i}"), format!("b{i}")])
                        .unwrap();
                }
            }
        });
        for _ in 0..2 {
            let reader = std::sync::Arc::clone(&r);
            s.spawn(move || {
                for _ in 0..2000 {
                    let snap = reader.snapshot();
                    assert_eq!(snap.len() % 2, 0, "a reader saw half a batch");
                    // The group vanishes whenever the registry is empty, so an error is fine here.
                    if let Ok(view) = reader.select("pair") {
                        assert_eq!(view.len() % 2, 0, "a selection saw half a batch");
                    }
                }
            });
        }
    });
    assert_eq!(r.len(), 400);
}
