//! git and git_write: status, diff, log, add, commit, branch, checkout, and what they refuse.

use std::path::Path;
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_core::ToolError;
use toolbelt_tools::{BuiltinConfig, Workspace};

use crate::{Fx, is_denied};

fn sh_git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// A fixture whose workspace is a fresh repository on branch `main`.
fn repo() -> Fx {
    let fx = Fx::new();
    sh_git(fx.dir.path(), &["init", "-q", "-b", "main"]);
    sh_git(fx.dir.path(), &["config", "user.name", "Test"]);
    sh_git(fx.dir.path(), &["config", "user.email", "test@example.com"]);
    fx
}

#[tokio::test]
async fn status_add_commit_and_log() {
    let fx = repo();
    fx.write("a.txt", "one\n");
    assert_eq!(
        fx.ok("git", json!({"command": "status"})).await,
        "## No commits yet on main\n?? a.txt\n"
    );
    assert_eq!(
        fx.ok("git_write", json!({"command": "add", "paths": ["a.txt"]}))
            .await,
        "done"
    );
    let out = fx
        .ok(
            "git_write",
            json!({"command": "commit", "message": "first"}),
        )
        .await;
    assert!(
        out.contains("first") && out.contains("1 file changed"),
        "{out}"
    );
    let log = fx.ok("git", json!({"command": "log"})).await;
    assert!(log.ends_with(" Test: first"), "{log}");
    assert_eq!(
        fx.ok("git", json!({"command": "status"})).await,
        "## main\n"
    );
}

#[tokio::test]
async fn diff_unstaged_staged_and_by_path() {
    let fx = repo();
    fx.write("a.txt", "one\n");
    fx.write("b.txt", "b\n");
    fx.ok("git_write", json!({"command": "add", "paths": ["."]}))
        .await;
    fx.ok("git_write", json!({"command": "commit", "message": "init"}))
        .await;
    fx.write("a.txt", "two\n");
    fx.write("b.txt", "bb\n");
    let diff = fx
        .ok("git", json!({"command": "diff", "paths": ["a.txt"]}))
        .await;
    assert!(
        diff.contains("-one\n+two") && !diff.contains("b.txt"),
        "{diff}"
    );
    assert_eq!(
        fx.ok("git", json!({"command": "diff", "staged": true}))
            .await,
        "no changes"
    );
}

#[tokio::test]
async fn branch_and_checkout() {
    let fx = repo();
    fx.write("a.txt", "one\n");
    fx.ok("git_write", json!({"command": "add", "paths": ["."]}))
        .await;
    fx.ok("git_write", json!({"command": "commit", "message": "init"}))
        .await;
    fx.ok("git_write", json!({"command": "branch", "name": "topic"}))
        .await;
    assert_eq!(
        fx.ok("git", json!({"command": "branch"})).await,
        "* main\n  topic\n"
    );
    fx.ok("git_write", json!({"command": "checkout", "name": "topic"}))
        .await;
    fx.ok(
        "git_write",
        json!({"command": "checkout", "name": "new", "create": true}),
    )
    .await;
    assert_eq!(
        fx.ok("git", json!({"command": "branch"})).await,
        "  main\n* new\n  topic\n"
    );
}

/// Asked how many commits a repository has (30-task set, git-zh: "这个仓库一共有几次提交？"),
/// the 1.5B model miscounted the lines of a log. The log says how many commits it shows
/// and, when it shows only the newest, how many there are.
#[tokio::test]
async fn a_log_says_how_many_commits_it_shows_and_how_many_there_are() {
    let fx = repo();
    for (file, message) in [("a.txt", "first"), ("b.txt", "second"), ("c.txt", "third")] {
        fx.write(file, "x\n");
        sh_git(fx.dir.path(), &["add", file]);
        sh_git(fx.dir.path(), &["commit", "-q", "-m", message]);
    }
    let log = fx.ok("git", json!({"command": "log"})).await;
    assert!(log.starts_with("3 commits, newest first:\n"), "{log}");
    assert_eq!(log.lines().count(), 4, "{log}");
    let newest = fx
        .ok("git", json!({"command": "log", "max_count": 2}))
        .await;
    assert!(
        newest.starts_with("the 2 newest of 3 commits (set max_count to see more):\n")
            && newest.ends_with(" Test: second"),
        "{newest}"
    );
    // Counted for the paths asked about, too.
    let one = fx
        .ok(
            "git",
            json!({"command": "log", "max_count": 1, "paths": ["b.txt"]}),
        )
        .await;
    assert!(one.starts_with("1 commit, newest first:\n"), "{one}");
}

/// Qwen2.5-Coder-1.5B asked for the last commit with `"repo": "path/to/repo"` and
/// `"repo": "root"` (30-task set, git-last and git-zh), got "does not exist" and gave up.
/// The read-only tool uses the workspace root for a `repo` that names no folder, and says
/// so; one outside the workspace is still refused.
#[tokio::test]
async fn a_repo_that_names_no_folder_reads_the_workspace_root() {
    let fx = repo();
    fx.write("a.txt", "one\n");
    sh_git(fx.dir.path(), &["add", "a.txt"]);
    sh_git(fx.dir.path(), &["commit", "-q", "-m", "fix the off-by-one"]);
    for repo in ["path/to/repo", "root", "a.txt"] {
        let log = fx
            .ok(
                "git",
                json!({"command": "log", "max_count": 1, "repo": repo}),
            )
            .await;
        assert!(
            log.starts_with(&format!(
                "[repo {repo:?} is not a folder of the workspace; used the workspace root]\n"
            )) && log.ends_with(" Test: fix the off-by-one"),
            "{log}"
        );
    }
    assert!(is_denied(
        &fx.err("git", json!({"command": "log", "repo": "../elsewhere"}))
            .await
    ));
    // git_write changes things: it keeps refusing a repo that is not there.
    let err = fx
        .err(
            "git_write",
            json!({"command": "add", "paths": ["a.txt"], "repo": "root"}),
        )
        .await;
    assert!(err.to_string().contains("does not exist"), "{err}");
}

#[tokio::test]
async fn refuses_option_injection_missing_arguments_and_outside_paths() {
    let fx = repo();
    let err = fx
        .err(
            "git",
            json!({"command": "diff", "rev": "--output=/tmp/pwned"}),
        )
        .await;
    let ToolError::InvalidArguments { violations } = err else {
        panic!("{err}")
    };
    assert_eq!(violations[0].pointer, "/rev");
    let err = fx.err("git_write", json!({"command": "commit"})).await;
    assert_eq!(
        err.to_string(),
        "invalid arguments: at /message: `commit` needs `message`"
    );
    assert!(is_denied(
        &fx.err("git_write", json!({"command": "add", "paths": ["../x"]}))
            .await
    ));
    assert!(is_denied(
        &fx.err("git", json!({"command": "status", "repo": "/"}))
            .await
    ));
}

#[tokio::test]
async fn never_uses_a_repository_above_the_workspace() {
    let fx = repo();
    fx.write("sub/a.txt", "x");
    let inner = BuiltinConfig::new(Workspace::new(fx.dir.path().join("sub")).unwrap());
    let err = fx
        .call_in(&inner.context(), "git", json!({"command": "status"}))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("git status failed with exit code 128: fatal: not a git repository"),
        "{msg}"
    );
    assert!(
        msg.contains("must be inside a git repository that is itself inside the workspace"),
        "{msg}"
    );
}

/// A stand-in for gpg that signs anything and, when asked to verify, says so.
const FAKE_GPG: &str = "#!/bin/sh
case \"$*\" in
  *-bsau*) cat >/dev/null
    printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nZmFrZQ==\\n-----END PGP SIGNATURE-----\\n'
    echo '[GNUPG:] SIG_CREATED D 1 8 00 0 0' >&2 ;;
  *) echo FAKE-GPG-RAN; echo FAKE-GPG-RAN >&2; touch \"$(dirname \"$0\")/fake-gpg-ran\" ;;
esac
";

#[tokio::test]
async fn log_runs_no_signature_program_named_by_the_repository() {
    let fx = repo();
    let gpg = fx.dir.path().join(".git/fake-gpg");
    std::fs::write(&gpg, FAKE_GPG).unwrap();
    std::fs::set_permissions(&gpg, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let gpg = gpg.to_str().unwrap().to_owned();
    fx.write("a.txt", "one\n");
    sh_git(fx.dir.path(), &["add", "a.txt"]);
    sh_git(
        fx.dir.path(),
        &[
            "-c",
            &format!("gpg.program={gpg}"),
            "commit",
            "-S",
            "-qm",
            "signed",
        ],
    );
    // The planted config: show signatures on every log, verified by the script.
    sh_git(fx.dir.path(), &["config", "log.showSignature", "true"]);
    sh_git(fx.dir.path(), &["config", "gpg.program", &gpg]);
    let log = fx.ok("git", json!({"command": "log"})).await;
    assert!(
        log.ends_with(" Test: signed") && !log.contains("FAKE-GPG"),
        "{log}"
    );
    assert!(!fx.dir.path().join(".git/fake-gpg-ran").exists());
    // Control: plain git runs the script, so the test would catch a regression.
    let plain = Command::new("git")
        .args(["log"])
        .current_dir(fx.dir.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&plain.stdout).contains("FAKE-GPG-RAN"));
    assert!(fx.dir.path().join(".git/fake-gpg-ran").exists());
}
