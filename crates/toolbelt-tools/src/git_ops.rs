//! Group `git_ops`: `git` (read-only) and `git_write` (changes, needs approval).
//!
//! Both run the `git` CLI in the workspace with a cleared environment, no
//! pager, no prompts, and `GIT_CEILING_DIRECTORIES` set so that git never
//! finds a repository above the workspace root. Arguments are structured (no
//! free-form flags), values that could be read as options are refused, and
//! every path is checked against the workspace before it reaches git.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use toolbelt_core::{ToolContext, ToolError, ToolOutput};
use toolbelt_macros::tool;

use crate::process::{self, Limits, RunError};
use crate::sandbox::{Sandbox, SandboxMode, SandboxPolicy};
use crate::shell::{ShellConfig, error_chain};
use crate::workspace::{Workspace, WorkspaceError};

/// What `git` may run; none of these changes the repository.
// Variant doc comments would make schemars emit `oneOf` with descriptions, which
// validates with a vaguer error than a plain `enum`; the tool docs describe them.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GitQuery {
    Status, // Short status with the current branch.
    Diff,   // Unstaged changes (or staged ones with `staged`, or against `rev`).
    Log,    // Recent commits, newest first.
    Branch, // Local branches, the current one marked with `*`.
}

/// What `git_write` may run.
// Variant doc comments would make schemars emit `oneOf` with descriptions, which
// validates with a vaguer error than a plain `enum`; the tool docs describe them.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GitChange {
    Add,      // Stage `paths`.
    Commit,   // Commit what is staged, with `message`.
    Branch,   // Create the branch `name` (without switching to it).
    Checkout, // Switch to the branch or commit `name` (`create` makes a new branch).
}

/// Inspect the workspace's git repository (read-only): `status`, `diff`, `log` or the list of branches (`branch`).
#[tool(tags("git_ops", "file_ops"), read_only, timeout = "2m")]
pub async fn git(
    ctx: &ToolContext,
    /// `status` (short status and branch), `diff` (unstaged changes, or staged ones, or against `rev`), `log` (recent commits) or `branch` (list branches).
    command: GitQuery,
    /// status, diff, log: only these paths (relative to the workspace root).
    paths: Option<Vec<String>>,
    /// diff: compare against this revision or range (`HEAD~1`, `main..topic`); log: start from this revision.
    rev: Option<String>,
    /// diff: show staged changes instead of unstaged ones.
    staged: Option<bool>,
    /// log: most commits to show (default 20, at most 200).
    max_count: Option<u32>,
    /// Directory of the repository relative to the workspace root (default: the root).
    repo: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let (git, note) = Git::open_or_root(ctx, repo.as_deref())?;
    let mut args: Vec<OsString> = Vec::new();
    match command {
        GitQuery::Status => args.extend(os([
            "status",
            "--short",
            "--branch",
            "--ignore-submodules=all",
        ])),
        GitQuery::Diff => {
            args.extend(os([
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--ignore-submodules=all",
            ]));
            if staged.unwrap_or(false) {
                args.push("--cached".into());
            }
            if let Some(rev) = &rev {
                args.push(checked_value("/rev", rev)?.into());
            }
        }
        GitQuery::Log => {
            let n = max_count.unwrap_or(20).clamp(1, 200);
            args.extend(os([
                "log".to_owned(),
                format!("--max-count={n}"),
                "--date=short".to_owned(),
                "--pretty=format:%h %ad %an: %s".to_owned(),
                // Checking a signature runs `gpg.program`, which the repository's config names.
                "--no-show-signature".to_owned(),
            ]));
            if let Some(rev) = &rev {
                args.push(checked_value("/rev", rev)?.into());
            }
        }
        GitQuery::Branch => args.extend(os(["branch", "--list", "--no-color"])),
    }
    if command != GitQuery::Branch {
        args.push("--".into());
        args.extend(git.paths(paths.as_deref().unwrap_or_default())?);
    }
    let out = git.run(args, true).await?;
    let out = if command == GitQuery::Log && !out.trim().is_empty() {
        let shown = out.lines().filter(|l| !l.trim().is_empty()).count();
        let limit = max_count.unwrap_or(20).clamp(1, 200) as usize;
        let heading = if shown < limit {
            format!(
                "{}, newest first:",
                crate::file_ops::plural(shown as u64, "commit")
            )
        } else {
            // As many as asked for: count them all, so "how many commits" needs no guess.
            match git.commit_count(rev.as_deref(), paths.as_deref()).await {
                Some(total) if total > shown => {
                    format!("the {shown} newest of {total} commits (set max_count to see more):")
                }
                _ => format!(
                    "{}, newest first:",
                    crate::file_ops::plural(shown as u64, "commit")
                ),
            }
        };
        format!("{heading}\n{out}")
    } else {
        out
    };
    let out = if out.trim().is_empty() {
        match command {
            GitQuery::Diff => "no changes".to_owned(),
            GitQuery::Log => "no commits".to_owned(),
            _ => "(no output)".to_owned(),
        }
    } else {
        out
    };
    Ok(ToolOutput::text(match note {
        Some(note) => format!("{note}\n{out}"),
        None => out,
    }))
}

/// Change the workspace's git repository: stage paths (`add`), `commit`, create a branch (`branch`) or switch to one (`checkout`).
// One argument per schema property: a struct would hide them from `#[tool]`.
// Not in `file_ops`: a commit writes `.git`, which the file tools refuse, so
// approving `file_ops` must not approve it (ADR 0019).
#[allow(clippy::too_many_arguments)]
#[tool(tags("git_ops"), mutating, timeout = "2m")]
pub async fn git_write(
    ctx: &ToolContext,
    /// `add` (stage `paths`), `commit` (with `message`), `branch` (create branch `name`) or `checkout` (switch to `name`).
    command: GitChange,
    /// add: the paths to stage, relative to the workspace root (`["."]` for everything).
    paths: Option<Vec<String>>,
    /// commit: the commit message.
    message: Option<String>,
    /// commit: stage every modified tracked file first (`git commit -a`).
    all: Option<bool>,
    /// branch: the branch to create; checkout: the branch or commit to switch to.
    name: Option<String>,
    /// checkout: create the branch `name` and switch to it.
    create: Option<bool>,
    /// Directory of the repository relative to the workspace root (default: the root).
    repo: Option<String>,
) -> Result<ToolOutput, ToolError> {
    let git = Git::open(ctx, repo.as_deref())?;
    let required = |value: Option<String>, pointer: &str, what: &str| {
        value.ok_or_else(|| {
            ToolError::invalid_argument(pointer, format!("`{what}` needs `{}`", &pointer[1..]))
        })
    };
    let mut args: Vec<OsString> = Vec::new();
    match command {
        GitChange::Add => {
            let paths = paths.unwrap_or_default();
            if paths.is_empty() {
                return Err(ToolError::invalid_argument(
                    "/paths",
                    "`add` needs at least one path (use [\".\"] for everything)",
                ));
            }
            args.extend(os(["add", "--"]));
            args.extend(git.paths(&paths)?);
        }
        GitChange::Commit => {
            let message = required(message, "/message", "commit")?;
            if message.trim().is_empty() {
                return Err(ToolError::invalid_argument(
                    "/message",
                    "the commit message is empty",
                ));
            }
            args.push("commit".into());
            if all.unwrap_or(false) {
                args.push("--all".into());
            }
            args.push("--message".into());
            args.push(message.into());
        }
        GitChange::Branch => {
            let name = required(name, "/name", "branch")?;
            args.extend(os(["branch", "--"]));
            args.push(checked_value("/name", &name)?.into());
        }
        GitChange::Checkout => {
            let name = required(name, "/name", "checkout")?;
            let name = checked_value("/name", &name)?;
            args.push("checkout".into());
            if create.unwrap_or(false) {
                args.push("-b".into());
            }
            args.push(name.into());
            // `--` makes git read `name` as a branch or commit, never as a path.
            args.push("--".into());
        }
    }
    let out = git.run(args, false).await?;
    Ok(ToolOutput::text(if out.trim().is_empty() {
        "done".to_owned()
    } else {
        out
    }))
}

/// A git invocation bound to one repository directory inside the workspace.
struct Git<'a> {
    workspace: &'a Workspace,
    dir: PathBuf,
    shell: ShellConfig,
    cancel: &'a toolbelt_core::CancellationToken,
}

impl<'a> Git<'a> {
    fn open(ctx: &'a ToolContext, repo: Option<&str>) -> Result<Self, ToolError> {
        let workspace = Workspace::from_context(ctx)?;
        let dir = workspace.resolve(repo.unwrap_or("."))?;
        if !dir.is_dir() {
            return Err(ToolError::invalid_argument(
                "/repo",
                format!("{} is not a directory", workspace.display_path(&dir)),
            ));
        }
        Ok(Self {
            workspace,
            dir,
            shell: ShellConfig::from_context(ctx),
            cancel: ctx.cancellation(),
        })
    }

    /// [`Git::open`] for the read-only `git` tool, forgiving a `repo` that names no folder
    /// of the workspace (small models wrote `root` and `path/to/repo`): the workspace root
    /// is used instead, with a note saying so. A `repo` outside the workspace is still refused.
    fn open_or_root(
        ctx: &'a ToolContext,
        repo: Option<&str>,
    ) -> Result<(Self, Option<String>), ToolError> {
        let workspace = Workspace::from_context(ctx)?;
        let missing = match repo {
            Some(r) => match workspace.resolve(r) {
                Ok(dir) => !dir.is_dir(),
                Err(WorkspaceError::NotFound { .. }) => true,
                Err(e) => return Err(e.into()),
            },
            None => false,
        };
        if missing {
            let note = format!(
                "[repo {:?} is not a folder of the workspace; used the workspace root]",
                repo.unwrap_or_default()
            );
            return Ok((Self::open(ctx, None)?, Some(note)));
        }
        Ok((Self::open(ctx, repo)?, None))
    }

    /// Checks each path against the workspace and hands git an absolute path
    /// (git resolves it within the repository or refuses it).
    fn paths(&self, paths: &[String]) -> Result<Vec<OsString>, ToolError> {
        paths
            .iter()
            .map(|p| {
                // Deleted files can be staged, so existence is not required.
                self.workspace.resolve_for_write(p)?;
                Ok(self.workspace.root().join(p).into_os_string())
            })
            .collect()
    }

    /// A git command with the hardened options and environment, before `args`.
    ///
    /// Nothing the repository's own config names is run: hooks go to
    /// `/dev/null`; fsmonitor, pager, external diff, signing and signature
    /// checks are off; every program-naming key git reads is set to `false`
    /// or emptied (see [`HARDENED_CONFIG`]); and every filter driver the
    /// config defines gets empty `clean`/`smudge`/`process` commands (see
    /// [`Git::filter_overrides`]).
    fn command(&self, overrides: &[String]) -> tokio::process::Command {
        let mut cmd = self.shell.command("git");
        cmd.args(["--no-pager"]);
        for setting in HARDENED_CONFIG
            .iter()
            .copied()
            .map(str::to_owned)
            .chain(overrides.iter().cloned())
        {
            cmd.arg("-c").arg(setting);
        }
        cmd.current_dir(&self.dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_EDITOR", ":")
            .env("GIT_PAGER", "cat")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CEILING_DIRECTORIES", ceiling(self.workspace.root()));
        cmd
    }

    /// `-c filter.<name>.clean=` (and smudge, process, required=false) for every
    /// filter driver the repository's config defines, so none of them runs.
    async fn filter_overrides(&self, limits: Limits) -> Result<Vec<String>, ToolError> {
        let mut cmd = self.command(&[]);
        cmd.args([
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            r"^filter\.",
        ]);
        cmd.env("GIT_OPTIONAL_LOCKS", "0");
        let done = process::run(cmd, None, limits, self.cancel)
            .await
            .map_err(|e| ToolError::failed(format!("git config: {}", error_chain(&e))))?;
        let names = filter_names(&done.stdout.text);
        if let Some(bad) = names.iter().find(|n| n.contains('=')) {
            return Err(ToolError::Denied {
                reason: format!(
                    "the repository config defines a filter driver {bad:?} whose name contains \
                     `=`, which cannot be disabled on the command line; git is not run"
                ),
            });
        }
        Ok(names
            .into_iter()
            .flat_map(|name| {
                [
                    format!("filter.{name}.clean="),
                    format!("filter.{name}.smudge="),
                    format!("filter.{name}.process="),
                    format!("filter.{name}.required=false"),
                ]
            })
            .collect())
    }

    /// How many commits `git log` would list from `rev` (default `HEAD`) for `paths`;
    /// `None` when git cannot say.
    async fn commit_count(&self, rev: Option<&str>, paths: Option<&[String]>) -> Option<usize> {
        let mut args: Vec<OsString> = os(["rev-list", "--count"]).collect();
        args.push(checked_value("/rev", rev.unwrap_or("HEAD")).ok()?.into());
        args.push("--".into());
        args.extend(self.paths(paths.unwrap_or_default()).ok()?);
        self.run(args, true).await.ok()?.trim().parse().ok()
    }

    async fn run(&self, args: Vec<OsString>, read_only: bool) -> Result<String, ToolError> {
        let limits = Limits {
            timeout: self.shell.default_timeout,
            max_output_bytes: self.shell.max_output_bytes,
        };
        let overrides = self.filter_overrides(limits).await?;
        let mut cmd = self.command(&overrides);
        cmd.args(&args);
        if read_only {
            // Keeps `status` from refreshing the index, so reads never write.
            cmd.env("GIT_OPTIONAL_LOCKS", "0");
        }
        // Defence in depth: where Landlock works, git also runs in the sandbox
        // (reads: read-only; writes: the workspace only; never the network), so
        // a config key the list above misses still cannot reach outside.
        let sandbox = crate::sandbox::probe().landlock().then(|| {
            let mode = if read_only {
                SandboxMode::ReadOnly
            } else {
                SandboxMode::WorkspaceWrite
            };
            let mut policy = SandboxPolicy::new().with_mode(mode);
            if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
                policy = policy
                    .with_read_path(home.join(".gitconfig"))
                    .with_read_path(home.join(".config/git"));
            }
            Sandbox::new(self.workspace.root(), policy)
        });
        let sub = args
            .first()
            .map(|a| a.to_string_lossy().into_owned())
            .unwrap_or_default();
        match process::run(cmd, sandbox.as_ref(), limits, self.cancel).await {
            Ok(done) if done.exit_code == Some(0) => Ok(done.stdout.text),
            Ok(done) => {
                let detail = if done.stderr.text.trim().is_empty() {
                    done.stdout.text
                } else {
                    done.stderr.text
                };
                let hint = if detail.contains("not a git repository") {
                    " (the workspace root, or `repo`, must be inside a git repository \
                     that is itself inside the workspace)"
                } else {
                    ""
                };
                Err(ToolError::failed(format!(
                    "git {sub} failed with exit code {}: {}{hint}",
                    done.exit_code.unwrap_or(-1),
                    detail.trim_end()
                )))
            }
            Err(RunError::Cancelled) => Err(ToolError::Cancelled),
            Err(err) => Err(ToolError::failed(format!(
                "git {sub}: {}",
                error_chain(&err)
            ))),
        }
    }
}

/// Settings passed with `-c` to every git run (they override the repository's
/// config): nothing named by the repository's config may run a program.
/// Keys naming a program point at `false` (`/bin/false`), lists of helpers are
/// emptied, and the switches that would call them are off. Diff drivers
/// (`diff.<driver>.command`, `.textconv`) are kept off by `diff`'s
/// `--no-ext-diff --no-textconv`, and filter drivers by [`Git::filter_overrides`].
const HARDENED_CONFIG: &[&str] = &[
    "color.ui=never",
    "core.quotepath=off",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.editor=:",
    "sequence.editor=:",
    "core.sshCommand=false",
    "core.gitProxy=false",
    "core.askPass=",
    "core.attributesFile=/dev/null",
    "core.alternateRefsCommand=false",
    "credential.helper=",
    "diff.external=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "push.gpgSign=false",
    "log.showSignature=false",
    "merge.verifySignatures=false",
    "gpg.program=false",
    "gpg.openpgp.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "gpg.ssh.defaultKeyCommand=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "protocol.allow=never",
    "submodule.recurse=false",
];

/// Filter driver names from `git config --null --name-only --get-regexp '^filter\.'`
/// (`filter.<name>.<key>`; the name may itself contain dots).
fn filter_names(listing: &str) -> Vec<String> {
    let mut names: Vec<String> = listing
        .split('\0')
        .filter_map(|key| {
            let rest = key.strip_prefix("filter.")?;
            let (name, _) = rest.rsplit_once('.')?;
            Some(name.to_owned())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The directory git must not climb into: the parent of the workspace root.
fn ceiling(root: &Path) -> OsString {
    root.parent().unwrap_or(root).as_os_str().to_owned()
}

/// Refuses values git could read as an option.
fn checked_value<'v>(pointer: &str, value: &'v str) -> Result<&'v str, ToolError> {
    if value.is_empty() {
        return Err(ToolError::invalid_argument(pointer, "must not be empty"));
    }
    if value.starts_with('-') {
        return Err(ToolError::invalid_argument(
            pointer,
            format!("{value:?} starts with `-`; options cannot be passed here"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(ToolError::invalid_argument(
            pointer,
            "must not contain control characters",
        ));
    }
    Ok(value)
}

fn os<I, S>(items: I) -> impl Iterator<Item = OsString>
where
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    items.into_iter().map(Into::into)
}

#[cfg(test)]
mod hardening_tests {
    #![allow(clippy::unwrap_used)]
    use super::HARDENED_CONFIG;
    use std::process::Command;

    /// A repository may plant any of these keys; with our `-c` settings git reads our value,
    /// never the planted program (each key is checked on its own, so one missing override
    /// fails even where another layer would also have stopped the program).
    #[test]
    fn every_program_key_a_repository_could_plant_reads_as_our_override() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let mut command = Command::new("git");
            command.current_dir(dir.path()).args(args);
            command.output().unwrap()
        };
        assert!(git(&["init", "-q"]).status.success());
        let planted = "/tmp/planted-program";
        for key in [
            "gpg.program",
            "gpg.openpgp.program",
            "gpg.ssh.program",
            "gpg.x509.program",
            "gpg.ssh.defaultKeyCommand",
            "core.fsmonitor",
            "core.sshCommand",
            "core.gitProxy",
            "core.askPass",
            "core.pager",
            "core.editor",
            "core.hooksPath",
            "core.alternateRefsCommand",
            "sequence.editor",
            "diff.external",
            "credential.helper",
        ] {
            assert!(git(&["config", key, planted]).status.success(), "{key}");
            let mut args: Vec<&str> = Vec::new();
            for setting in HARDENED_CONFIG {
                args.extend(["-c", setting]);
            }
            args.extend(["config", "--get", key]);
            let read = git(&args);
            let value = String::from_utf8_lossy(&read.stdout).trim().to_owned();
            assert_ne!(value, planted, "git reads the repository's {key}");
        }
        // Control: the planted value is what git reads without our settings.
        let plain = git(&["config", "--get", "gpg.ssh.program"]);
        assert_eq!(String::from_utf8_lossy(&plain.stdout).trim(), planted);
    }
}
