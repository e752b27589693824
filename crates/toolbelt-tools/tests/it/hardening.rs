//! File tools without check-then-open races, `.git` writes refused, FIFOs
//! refused, and git runs nothing the repository's config names.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use toolbelt_tools::{BuiltinConfig, Workspace};

use crate::{Fx, exists, is_denied, outside_dir};

/// Keeps swapping `<root>/d` between a real directory and a symlink to `outside`
/// until `stop` is set.
fn swapper(root: &Path, outside: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u32> {
    let root = root.to_path_buf();
    std::fs::create_dir_all(root.join("real")).unwrap();
    std::fs::write(root.join("real/secret.txt"), "inside file").unwrap();
    std::os::unix::fs::symlink(outside, root.join("link")).unwrap();
    std::thread::spawn(move || {
        let mut rounds = 0;
        while !stop.load(Ordering::Relaxed) {
            rounds += 1;
            // Each state lasts a moment, so checks and opens land on either.
            let _ = std::fs::rename(root.join("real"), root.join("d"));
            std::thread::sleep(Duration::from_micros(300));
            let _ = std::fs::rename(root.join("d"), root.join("real"));
            let _ = std::fs::rename(root.join("link"), root.join("d"));
            std::thread::sleep(Duration::from_micros(300));
            let _ = std::fs::rename(root.join("d"), root.join("link"));
        }
        rounds
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_mid_call_never_leads_outside() {
    let fx = Fx::new();
    let (_keep, outside) = outside_dir();
    let stop = Arc::new(AtomicBool::new(false));
    let worker = swapper(&fx.root(), &outside, stop.clone());
    let mut inside_reads = 0;
    for i in 0..400 {
        if let Ok(out) = fx.call("file_read", json!({"path": "d/secret.txt"})).await {
            assert!(!out.text.contains("s3cret"), "read outside: {}", out.text);
            inside_reads += 1;
        }
        let _ = fx
            .call(
                "file_write",
                json!({"path": format!("d/w{i}.txt"), "content": "x"}),
            )
            .await;
        if let Ok(out) = fx.call("list_dir", json!({"path": "d"})).await {
            assert!(!out.text.contains("secret.txt  (6 bytes)"), "{}", out.text);
        }
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = worker.join().unwrap();
    let leaked: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "secret.txt")
        .collect();
    assert!(leaked.is_empty(), "files written outside: {leaked:?}");
    // Not a vacuous pass: the swap really ran during the calls. (Without the
    // beneath-the-root opens this test reads and writes outside within a few
    // hundred calls; how many reads landed inside varies with the load.)
    assert!(rounds > 10, "the swapper ran {rounds} rounds");
    eprintln!("{inside_reads} of 400 reads found the real directory; {rounds} swap rounds");
}

#[tokio::test]
async fn file_write_and_file_edit_refuse_git_directories_unless_allowed() {
    let fx = Fx::new();
    fx.write(".git/config", "[core]\n");
    fx.write("sub/.git/HEAD", "ref\n");
    for (tool, args) in [
        (
            "file_write",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ),
        ("file_write", json!({"path": "sub/.GIT/x", "content": "x"})),
        (
            "file_edit",
            json!({"path": ".git/config", "old_text": "[core]", "new_text": "[x]"}),
        ),
    ] {
        let err = fx.err(tool, args).await;
        assert!(is_denied(&err), "{err}");
        assert!(err.to_string().contains(".git directory"), "{err}");
    }
    assert!(!exists(&fx.root().join(".git/hooks/pre-commit")));
    assert_eq!(fx.read(".git/config"), "[core]\n");
    // A symlink into .git is resolved first and refused the same way.
    std::os::unix::fs::symlink(".git/config", fx.root().join("cfg")).unwrap();
    let err = fx
        .err(
            "file_edit",
            json!({"path": "cfg", "old_text": "[core]", "new_text": "[x]"}),
        )
        .await;
    assert!(is_denied(&err), "{err}");
    // Reading is fine, and a host may allow writes.
    assert_eq!(
        fx.ok("file_read", json!({"path": ".git/config"})).await,
        "[core]\n"
    );
    let open = Fx::with(|_| {
        BuiltinConfig::new(
            Workspace::new(tempfile::tempdir().unwrap().keep())
                .unwrap()
                .with_git_writes(true),
        )
    });
    open.ok(
        "file_write",
        json!({"path": ".git/info/exclude", "content": "target\n"}),
    )
    .await;
}

#[tokio::test]
async fn fifos_are_refused_by_reads_and_skipped_by_search() {
    let fx = Fx::new();
    let status = Command::new("mkfifo")
        .arg(fx.root().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    fx.write("a.txt", "needle\n");
    for args in [
        json!({"path": "pipe"}),
        json!({"path": "pipe", "start_line": 1, "end_line": 2}),
    ] {
        let err = tokio::time::timeout(Duration::from_secs(10), fx.call("file_read", args))
            .await
            .expect("file_read hung on a FIFO")
            .unwrap_err();
        assert!(err.to_string().contains("a FIFO"), "{err}");
    }
    let err = fx
        .err(
            "file_edit",
            json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
        )
        .await;
    assert!(err.to_string().contains("a FIFO"), "{err}");
    let found = tokio::time::timeout(
        Duration::from_secs(10),
        fx.call("file_search", json!({"pattern": "needle"})),
    )
    .await
    .expect("file_search hung on a FIFO")
    .unwrap();
    assert_eq!(
        found.text,
        "a.txt:1: needle\n[1 matching line in 1 file under .]"
    );
}

#[tokio::test]
async fn ranged_reads_skip_long_lines_before_the_range() {
    let fx = Fx::with(|cfg| {
        let ws = cfg.workspace().clone().with_max_read_bytes(100);
        BuiltinConfig::new(ws)
    });
    // Line 1 is far longer than the read cap; a range after it still reads.
    fx.write(
        "long.txt",
        &format!("{}\nsecond\nthird\n", "x".repeat(10_000)),
    );
    let out = fx
        .ok(
            "file_read",
            json!({"path": "long.txt", "start_line": 2, "end_line": 3}),
        )
        .await;
    assert_eq!(
        out,
        "[long.txt: lines 2-3 (2 lines, end of file)]\nsecond\nthird\n"
    );
    let err = fx
        .err("file_read", json!({"path": "long.txt", "start_line": 1}))
        .await;
    assert!(
        err.to_string().contains("longer than the 100-byte"),
        "{err}"
    );
}

fn sh_git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn git_runs_no_filter_textconv_hook_or_external_diff_from_the_repo_config() {
    let fx = Fx::new();
    let dir = fx.root();
    let (_keep, outside) = outside_dir();
    sh_git(&dir, &["init", "-q", "-b", "main"]);
    sh_git(&dir, &["config", "user.name", "Test"]);
    sh_git(&dir, &["config", "user.email", "t@example.com"]);
    fx.write("a.txt", "one\n");
    sh_git(&dir, &["add", "a.txt"]);
    sh_git(&dir, &["commit", "-qm", "init"]);
    // Every way the repository's config could name a program, each leaving a marker.
    let marker = |what: &str| format!("touch {}/{what}; cat", outside.display());
    for (key, value) in [
        ("filter.evil.clean", marker("clean")),
        ("filter.evil.smudge", marker("smudge")),
        ("filter.ev.il.clean", marker("dotted")),
        ("diff.evil.textconv", marker("textconv")),
        ("diff.evil.command", marker("diffcmd")),
        ("diff.external", marker("external")),
        ("core.fsmonitor", marker("fsmonitor")),
        ("core.pager", marker("pager")),
        ("gpg.program", marker("gpg")),
        ("commit.gpgSign", "true".to_owned()),
    ] {
        sh_git(&dir, &["config", key, &value]);
    }
    fx.write(
        ".git/info/attributes",
        "* filter=evil diff=evil\n*.md filter=ev.il\n",
    );
    fx.write(
        ".git/hooks/pre-commit",
        &format!("#!/bin/sh\n{}\n", marker("hook")),
    );
    std::fs::set_permissions(
        dir.join(".git/hooks/pre-commit"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    fx.write("a.txt", "one\ntwo\n");
    fx.write("b.md", "b\n");
    let status = fx.ok("git", json!({"command": "status"})).await;
    assert!(status.contains(" M a.txt"), "{status}");
    let diff = fx.ok("git", json!({"command": "diff"})).await;
    assert!(diff.contains("+two"), "{diff}");
    fx.ok("git_write", json!({"command": "add", "paths": ["."]}))
        .await;
    fx.ok("git", json!({"command": "diff", "staged": true}))
        .await;
    fx.ok("git_write", json!({"command": "commit", "message": "two"}))
        .await;
    fx.ok(
        "git_write",
        json!({"command": "checkout", "name": "HEAD~1"}),
    )
    .await;
    let ran: Vec<_> = std::fs::read_dir(&outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "secret.txt")
        .collect();
    assert!(ran.is_empty(), "the repository config ran: {ran:?}");
    // Control: plain git does run them, so the test would catch a regression.
    fx.write("a.txt", "three\n");
    let _ = Command::new("git")
        .args(["status", "--short"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(exists(&outside.join("clean")) || exists(&outside.join("fsmonitor")));
}

#[test]
fn approving_file_ops_by_tag_does_not_approve_shell_or_git_write() {
    use toolbelt_core::{ApprovalPolicy, Decision};
    let policy = ApprovalPolicy::new().with_tag("file_ops", Decision::Allow);
    let tools = toolbelt_tools::builtin_tools().unwrap();
    let decide = |name: &str| {
        let tool = tools.iter().find(|t| t.name() == name).unwrap();
        policy.decide(tool.spec())
    };
    assert_eq!(decide("file_write"), Decision::Allow);
    assert_eq!(decide("git"), Decision::Allow);
    assert_eq!(decide("shell_exec"), Decision::Ask);
    assert_eq!(decide("git_write"), Decision::Ask);
}

#[tokio::test]
async fn the_memory_todo_store_is_bounded() {
    use toolbelt_tools::{MemoryTodoStore, TodoError, TodoStore};
    let store = MemoryTodoStore::with_limits(2, 3, 10);
    store
        .add("a", vec!["one".into(), "two".into()])
        .await
        .unwrap();
    let full = store
        .add("a", vec!["three".into(), "four".into()])
        .await
        .unwrap_err();
    assert!(matches!(full, TodoError::Full { limit: 3 }), "{full}");
    assert_eq!(
        store.list("a").await.unwrap().len(),
        2,
        "nothing half-added"
    );
    let long = store.add("a", vec!["x".repeat(11)]).await.unwrap_err();
    assert!(long.to_string().contains("11 characters"), "{long}");
    // Listing unknown conversations creates nothing, so it cannot grow the store.
    for i in 0..100 {
        assert!(store.list(&format!("ghost{i}")).await.unwrap().is_empty());
    }
    store.add("b", vec!["b1".into()]).await.unwrap();
    store.list("a").await.unwrap(); // `a` is now the most recently used
    store.add("c", vec!["c1".into()]).await.unwrap(); // evicts `b`
    assert!(store.list("b").await.unwrap().is_empty());
    assert_eq!(store.list("a").await.unwrap().len(), 2);
    assert_eq!(store.list("c").await.unwrap().len(), 1);
}
