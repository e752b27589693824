//! `--server URL --token T`: `toolbelt tools|agents|runs` through a running `toolbelt serve`,
//! printing what they print against the database; on SQLite and, when `TOOLBELT_TEST_PG_URL`
//! is set, Postgres.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use pretty_assertions::assert_eq;

use crate::cli_db::{Db, databases, schema};
use crate::cli_serve::{free_port, serve_on};
use crate::{err, ok};

/// Where a command goes: the database, or the server with a token.
enum To<'a> {
    Database,
    Server(u16, Option<&'a str>),
}

fn toolbelt(db: &Db, dir: &Path, to: &To<'_>, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_toolbelt"));
    command
        .current_dir(dir)
        .env("TOOLBELT_DATABASE_URL", &db.url)
        .env_remove("TOOLBELT_SERVER")
        .env_remove("TOOLBELT_TOKEN")
        .args(args);
    if let To::Server(port, token) = to {
        command.env("TOOLBELT_SERVER", format!("http://127.0.0.1:{port}"));
        if let Some(token) = token {
            command.env("TOOLBELT_TOKEN", token);
        }
    }
    crate::run_with_stdin(&mut command, "")
}

const SHOUT: &str = r#"
name: shout
description: Echo a text back
tags: [text]
parameters:
  type: object
  properties:
    text: {type: string}
  required: [text]
command:
  argv: ["echo", "{{text}}"]
availability:
  agent_kinds: [assistant]
"#;

const STAMP: &str = r#"
name: stamp
description: Stamp a text
tags: [text]
parameters:
  type: object
  properties:
    text: {type: string}
  required: [text]
  additionalProperties: false
effect: read_only
command:
  argv: ["echo", "stamped", "{{text}}"]
"#;

#[tokio::test]
async fn tools_agents_and_runs_through_a_server_print_what_they_print_locally() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    std::fs::write(dir.join("shout.yaml"), SHOUT).unwrap();
    std::fs::write(dir.join("stamp.yaml"), STAMP).unwrap();
    std::fs::write(
        dir.join("shout2.yaml"),
        SHOUT.replace("Echo a text back", "Echo a text back, louder"),
    )
    .unwrap();
    for db in databases(dir, "client") {
        schema(&db, true).await;
        let local = |args: &[&str]| toolbelt(&db, dir, &To::Database, args);
        ok(&local(&["db", "migrate"]));
        let admin = ok(&local(&["tokens", "create", "cli", "--scope", "admin"]));
        let reader = ok(&local(&["tokens", "create", "viewer", "--scope", "read"]));
        let (mut server, port) = serve_on(dir, &db.url, &[]);
        let remote =
            |args: &[&str]| toolbelt(&db, dir, &To::Server(port, Some(admin.trim())), args);
        let both = |args: &[&str]| {
            let (here, there) = (ok(&local(args)), ok(&remote(args)));
            assert_eq!(here, there, "`toolbelt {}` differs", args.join(" "));
            here
        };

        // Tools: written through the server, read both ways.
        assert_eq!(
            ok(&remote(&[
                "tools",
                "add",
                "-f",
                "shout.yaml",
                "--by",
                "ann"
            ])),
            "created shout (version 1 of 1, revision 1, declarative)\n"
        );
        let show = both(&["tools", "show", "shout"]);
        assert!(
            show.contains("Echo a text back") && show.contains("agent_kinds"),
            "{show}"
        );
        both(&["tools", "show", "shout", "--json"]);
        assert_eq!(
            ok(&remote(&["tools", "update", "-f", "shout2.yaml"])),
            "updated shout (version 2 of 2, revision 2, declarative)\n"
        );
        let versions = both(&["tools", "versions", "shout"]);
        assert_eq!(versions.lines().count(), 2, "{versions}");
        assert!(
            versions.lines().nth(1).unwrap().starts_with("*   2"),
            "{versions}"
        );
        assert_eq!(
            ok(&remote(&["tools", "rollback", "shout", "1"])),
            "rolled back shout (version 1 of 2, revision 3, declarative)\n"
        );
        assert!(ok(&remote(&["tools", "disable", "shout"])).contains("disabled"));
        assert!(ok(&remote(&["tools", "enable", "shout"])).starts_with("enabled shout"));
        let stale = err(&remote(&[
            "tools",
            "update",
            "-f",
            "shout2.yaml",
            "--revision",
            "1",
        ]));
        assert!(
            stale.contains("code `revision_mismatch`") && stale.contains("HTTP 412"),
            "{stale}"
        );

        // One view of the tools: listed and called the same way from the database and the server.
        ok(&remote(&["tools", "add", "-f", "stamp.yaml"]));
        assert_eq!(
            both(&["tools", "ls", "--source", "command"]),
            "text (2)\n  \
               shout  command  mutating   asks  Echo a text back\n  \
               stamp  command  read-only  auto  Stamp a text\n\n\
             `asks`: the call needs approval by default (`toolbelt tools call --yes` allows it)\n"
        );
        let listed = both(&["tools", "ls"]);
        assert!(
            listed.contains("\n  file_read ") && listed.contains(" compiled "),
            "{listed}"
        );
        both(&["tools", "ls", "-q", "stamp", "--json"]);
        assert_eq!(
            both(&["tools", "call", "stamp", r#"{"text": "here"}"#]),
            "stamped here\n"
        );
        let bad = |to: &To<'_>| {
            let out = toolbelt(&db, dir, to, &["tools", "call", "stamp", r#"{"txt": 1}"#]);
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).into_owned(),
            )
        };
        let (here, there) = (
            bad(&To::Database),
            bad(&To::Server(port, Some(admin.trim()))),
        );
        assert_eq!((here.0, there.0), (Some(2), Some(2)), "{here:?} {there:?}");
        for (_, stderr) in [&here, &there] {
            assert!(
                stderr.starts_with("error: invalid arguments for `stamp`")
                    && stderr.contains("txt"),
                "{stderr}"
            );
        }

        // Agents.
        assert_eq!(
            ok(&remote(&["agents", "create", "helper"])),
            "created agent helper (revision 1, 0 bound tool(s))\n"
        );
        assert_eq!(
            ok(&remote(&["agents", "bind", "helper", "shout@1"])),
            "bound shout@1 to helper (revision 2)\n"
        );
        let show = both(&["agents", "show", "helper"]);
        assert!(show.contains("bound: shout@1"), "{show}");
        assert!(show.contains("  shout @1 (declarative)"), "{show}");
        both(&["agents", "ls"]);
        assert_eq!(
            both(&["tools", "why", "shout", "--agent", "helper"]),
            "shout is available to helper (version 1)\n"
        );
        assert_eq!(
            ok(&remote(&["agents", "unbind", "helper", "shout"])),
            "unbound shout from helper (revision 3)\n"
        );

        // Runs: listed both ways; approvals need the server.
        both(&["runs", "ls"]);
        assert_eq!(
            ok(&remote(&["runs", "approvals"])),
            "nothing is waiting for a person\n"
        );
        let local_only = err(&local(&["runs", "approve", "apr_1"]));
        assert!(local_only.contains("needs --server"), "{local_only}");
        let unknown = err(&remote(&["runs", "approve", "apr_1"]));
        assert!(unknown.contains("HTTP 404"), "{unknown}");
        let bad_args = err(&remote(&["runs", "approve", "apr_1", "--args", "[1]"]));
        assert!(bad_args.contains("must be a JSON object"), "{bad_args}");

        // Refusals name what was wrong.
        let read_only = toolbelt(
            &db,
            dir,
            &To::Server(port, Some(reader.trim())),
            &["tools", "rm", "shout"],
        );
        let read_only = err(&read_only);
        assert!(read_only.contains("HTTP 403"), "{read_only}");
        let anonymous = err(&toolbelt(
            &db,
            dir,
            &To::Server(port, None),
            &["agents", "ls"],
        ));
        assert!(anonymous.contains("HTTP 401"), "{anonymous}");
        let missing = err(&remote(&["tools", "show", "nope"]));
        assert!(missing.contains("HTTP 404"), "{missing}");

        assert_eq!(
            ok(&remote(&["agents", "rm", "helper"])),
            "deleted agent helper\n"
        );
        assert_eq!(ok(&remote(&["tools", "rm", "shout"])), "deleted shout\n");
        assert!(err(&local(&["tools", "show", "shout"])).contains("not found"));
        server.kill().unwrap();
        server.wait().unwrap();

        // No server there.
        let down = err(&toolbelt(
            &db,
            dir,
            &To::Server(free_port(), Some("tb_x")),
            &["agents", "ls"],
        ));
        assert!(
            down.contains("could not reach the server at http://127.0.0.1:"),
            "{down}"
        );
        schema(&db, false).await;
    }
}

#[test]
fn a_server_address_that_is_not_http_is_refused_before_anything_is_sent() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["agents", "ls", "--server", "ftp://127.0.0.1:1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("the scheme must be http or https, not `ftp`"),
        "{stderr}"
    );
}
