//! `toolbelt db|tools|agents` against a database: the README walk-through on SQLite and, when
//! `TOOLBELT_TEST_PG_URL` is set, on Postgres (a schema of its own, via the URL's `options`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Output};

use pretty_assertions::assert_eq;

use crate::cli_db::{Db, databases, schema};
use crate::{err, ok};

fn toolbelt(db: &Db, dir: &Path, args: &[&str]) -> Output {
    crate::run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .current_dir(dir)
            .env("TOOLBELT_DATABASE_URL", &db.url)
            .env_remove("WTTR_TOKEN")
            .args(args),
        "",
    )
}

const WEATHER: &str = r#"
name: weather
description: Current temperature in a city
tags: [web]
parameters:
  type: object
  properties:
    city: {type: string}
  required: [city]
http:
  url: "https://wttr.in/{{city}}?format=j1"
  extract: "$.current_condition[0].temp_C"
availability:
  conditions:
    - secret: WTTR_TOKEN
"#;

#[tokio::test]
async fn create_bind_show_version_and_explain_a_tool_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "name: x\ndescription: d\nhttp: {url: \"http://x/{{y}}\"}\n",
    )
    .unwrap();
    for db in databases(dir.path(), "cli") {
        schema(&db, true).await;
        std::fs::write(dir.path().join("weather.yaml"), WEATHER).unwrap();
        let run = |args: &[&str]| toolbelt(&db, dir.path(), args);
        assert!(ok(&run(&["db", "migrate"])).contains("compiled tools: 21 new"));
        assert!(ok(&run(&["db", "migrate"])).contains("0 new, 0 updated, 21 unchanged"));
        assert_eq!(
            ok(&run(&["tools", "add", "-f", "weather.yaml", "--by", "ann"])),
            "created weather (version 1 of 1, revision 1, declarative)\n"
        );
        assert_eq!(
            err(&run(&["tools", "add", "-f", "bad.yaml"])),
            "error: invalid http.url: `{{y}}` names no argument; the parameters declare: none\n"
        );
        ok(&run(&["agents", "create", "helper", "--selection", "web"]));
        ok(&run(&["agents", "bind", "helper", "weather@1"]));
        let show = ok(&run(&["agents", "show", "helper"]));
        assert!(show.contains("  bound: weather@1\n"), "{show}");
        assert!(
            show.contains(
                "  weather @1 (declarative) NOT AVAILABLE: the secret `WTTR_TOKEN` is not set\n"
            ),
            "{show}"
        );
        assert!(show.contains("  http_get @1 (compiled)\n"), "{show}");
        let why = run(&["tools", "why", "weather", "--agent", "helper"]);
        assert_eq!(why.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&why.stdout),
            "weather is not available to helper:\n  - the secret `WTTR_TOKEN` is not set\n"
        );
        std::fs::write(
            dir.path().join("weather.yaml"),
            WEATHER.replace("Current", "The current"),
        )
        .unwrap();
        ok(&run(&["tools", "update", "-f", "weather.yaml"]));
        let versions = ok(&run(&["tools", "versions", "weather"]));
        assert_eq!(versions.lines().count(), 2);
        assert!(
            versions.lines().nth(1).unwrap().starts_with("*   2"),
            "{versions}"
        );
        assert_eq!(
            ok(&run(&["tools", "rollback", "weather", "1"])),
            "rolled back weather (version 1 of 2, revision 3, declarative)\n"
        );
        assert_eq!(
            err(&run(&["tools", "rm", "weather"])),
            "error: tool `weather` is bound to agent(s) helper; unbind it first\n"
        );
        ok(&run(&["agents", "unbind", "helper", "weather"]));
        ok(&run(&["tools", "disable", "weather"]));
        ok(&run(&["tools", "rm", "weather"]));
        assert_eq!(
            err(&run(&["tools", "show", "weather"])),
            "error: tool `weather` not found\n"
        );
        assert!(ok(&run(&["agents", "ls"])).starts_with("helper "));
        schema(&db, false).await;
    }
}
