//! file_read, file_write, file_edit, list_dir and file_search: normal use and refusals.

use std::os::unix::fs::{PermissionsExt, symlink};

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_tools::{BuiltinConfig, Workspace};

use crate::{Fx, exists, is_denied, outside_dir};

#[tokio::test]
async fn reads_whole_files_and_line_ranges() {
    let fx = Fx::new();
    fx.write("a.txt", "one\ntwo\nthree\nfour\n");
    assert_eq!(
        fx.ok("file_read", json!({"path": "a.txt"})).await,
        "[a.txt: 4 lines]\none\ntwo\nthree\nfour\n"
    );
    // A settings file is shown without its line count, which is not one of its facts
    // (json-theme: the 1.5B model answered "5 lines" for the theme a JSON file sets).
    fx.write("s.json", "{\n  \"theme\": \"dark\"\n}\n");
    assert_eq!(
        fx.ok("file_read", json!({"path": "s.json"})).await,
        "{\n  \"theme\": \"dark\"\n}\n"
    );
    let range = fx
        .ok(
            "file_read",
            json!({"path": "a.txt", "start_line": 2, "end_line": 3}),
        )
        .await;
    assert_eq!(
        range,
        "[a.txt: lines 2-3 (2 lines), more follow]\ntwo\nthree\n"
    );
    let tail = fx
        .ok("file_read", json!({"path": "a.txt", "start_line": 4}))
        .await;
    assert_eq!(tail, "[a.txt: lines 4-4 (1 line, end of file)]\nfour\n");
    let err = fx
        .err("file_read", json!({"path": "a.txt", "start_line": 9}))
        .await;
    assert_eq!(
        err.to_string(),
        "invalid arguments: at /start_line: a.txt has only 4 lines"
    );
    // What the 0.5B model asked for (a real 0.5B model): one line, said in the singular.
    fx.write("b.txt", "one\n");
    let err = fx
        .err(
            "file_read",
            json!({"path": "b.txt", "start_line": 1_000_000}),
        )
        .await;
    assert_eq!(
        err.to_string(),
        "invalid arguments: at /start_line: b.txt has only 1 line"
    );
}

#[tokio::test]
async fn refuses_binary_and_oversized_whole_reads() {
    let fx = Fx::with(|cfg| {
        let ws = cfg.workspace().clone().with_max_read_bytes(10);
        BuiltinConfig::new(ws)
    });
    std::fs::write(fx.dir.path().join("bin"), b"ab\0cd").unwrap();
    let err = fx.err("file_read", json!({"path": "bin"})).await;
    assert!(err.to_string().contains("looks binary"), "{err}");
    fx.write("big.txt", "0123456789\nabc\n");
    let err = fx.err("file_read", json!({"path": "big.txt"})).await;
    assert!(err.to_string().contains("read it in parts"), "{err}");
    let part = fx
        .ok("file_read", json!({"path": "big.txt", "start_line": 2}))
        .await;
    assert_eq!(part, "[big.txt: lines 2-2 (1 line, end of file)]\nabc\n");
}

#[tokio::test]
async fn every_file_tool_refuses_traversal_and_absolute_escapes() {
    let fx = Fx::new();
    let (_keep, outside) = outside_dir();
    let secret = outside.join("secret.txt").display().to_string();
    for path in ["../../../etc/passwd", secret.as_str()] {
        for (tool, args) in [
            ("file_read", json!({"path": path})),
            ("file_write", json!({"path": path, "content": "x"})),
            (
                "file_edit",
                json!({"path": path, "old_text": "s3cret", "new_text": "x"}),
            ),
            ("list_dir", json!({"path": path})),
            ("file_search", json!({"path": path, "glob": "*"})),
        ] {
            let err = fx.err(tool, args).await;
            assert!(is_denied(&err), "{tool} {path}: {err}");
        }
    }
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "s3cret"
    );
}

#[tokio::test]
async fn symlinks_cannot_lead_reads_or_writes_outside() {
    let fx = Fx::new();
    let (_keep, outside) = outside_dir();
    symlink(outside.join("secret.txt"), fx.root().join("link.txt")).unwrap();
    symlink(&outside, fx.root().join("out")).unwrap();
    assert!(is_denied(
        &fx.err("file_read", json!({"path": "link.txt"})).await
    ));
    assert!(is_denied(
        &fx.err("file_write", json!({"path": "link.txt", "content": "x"}))
            .await
    ));
    assert!(is_denied(
        &fx.err("file_write", json!({"path": "out/new.txt", "content": "x"}))
            .await
    ));
    assert!(!exists(&outside.join("new.txt")));
    assert_eq!(
        std::fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "s3cret"
    );
}

#[tokio::test]
async fn writes_atomically_creating_directories_and_keeping_the_mode() {
    let fx = Fx::new();
    let out = fx
        .ok(
            "file_write",
            json!({"path": "deep/dir/new.txt", "content": "hello"}),
        )
        .await;
    assert_eq!(out, "created deep/dir/new.txt (5 bytes)");
    let script = fx.write("run.sh", "echo old");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = fx
        .ok(
            "file_write",
            json!({"path": "run.sh", "content": "echo new"}),
        )
        .await;
    assert_eq!(out, "replaced run.sh (8 bytes)");
    assert_eq!(fx.read("run.sh"), "echo new");
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
    let names: Vec<_> = std::fs::read_dir(fx.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "temporary files left behind: {names:?}");
}

#[tokio::test]
async fn edits_a_unique_match_and_refuses_absent_or_ambiguous_text() {
    let fx = Fx::new();
    fx.write("m.rs", "let a = 1;\nlet b = 1;\nlet c = 2;\n");
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "m.rs", "old_text": "c = 2", "new_text": "c = 3"}),
        )
        .await;
    assert_eq!(out, "replaced 1 occurrence in m.rs (first at line 3)");
    let err = fx
        .err(
            "file_edit",
            json!({"path": "m.rs", "old_text": "= 1;", "new_text": "= 9;"}),
        )
        .await;
    assert!(
        err.to_string()
            .starts_with("old_text occurs 2 times in m.rs (at lines 1, 2); nothing was changed"),
        "{err}"
    );
    let err = fx
        .err(
            "file_edit",
            json!({"path": "m.rs", "old_text": "let z", "new_text": "x"}),
        )
        .await;
    assert!(
        err.to_string()
            .starts_with("old_text was not found in m.rs"),
        "{err}"
    );
    assert_eq!(fx.read("m.rs"), "let a = 1;\nlet b = 1;\nlet c = 3;\n");
    // What a small model wrote for `let c = 3;`: one place matches when
    // whitespace is ignored, so it is edited and the result says so.
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "m.rs", "old_text": "let c=3;", "new_text": "let c = 4;"}),
        )
        .await;
    assert_eq!(
        out,
        "replaced 1 occurrence in m.rs (at line 3); old_text matched only when whitespace is \
         ignored: `let c = 3;` was replaced"
    );
    assert_eq!(fx.read("m.rs"), "let a = 1;\nlet b = 1;\nlet c = 4;\n");
    // Two places match that way: nothing changes, and the lines are shown.
    fx.write("m.rs", "let a = 1;\nlet a = 1;\nlet c = 3;\n");
    let err = fx
        .err(
            "file_edit",
            json!({"path": "m.rs", "old_text": "let a=1;", "new_text": "let a=2;"}),
        )
        .await;
    assert!(
        err.to_string().contains(
            "These lines differ from it only in whitespace:\n1: let a = 1;\n2: let a = 1;\nCopy the text exactly"
        ),
        "{err}"
    );
    assert_eq!(fx.read("m.rs"), "let a = 1;\nlet a = 1;\nlet c = 3;\n");
    fx.write("m.rs", "let a = 1;\nlet b = 1;\nlet c = 3;\n");
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "m.rs", "old_text": "= 1;", "new_text": "= 9;", "replace_all": true}),
        )
        .await;
    assert_eq!(out, "replaced 2 occurrences in m.rs (first at line 1)");
    assert_eq!(fx.read("m.rs"), "let a = 9;\nlet b = 9;\nlet c = 3;\n");
}

/// Qwen2.5-Coder-1.5B asked to create `todo.txt` called `file_edit` with an empty
/// `old_text` (30-task set, create-todo); it was refused as invalid and gave up.
#[tokio::test]
async fn an_empty_old_text_creates_a_missing_file_and_never_overwrites() {
    let fx = Fx::new();
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "notes/todo.txt", "old_text": "", "new_text": "buy milk\n"}),
        )
        .await;
    assert_eq!(
        out,
        "created notes/todo.txt (9 bytes): it did not exist and old_text was empty"
    );
    assert_eq!(fx.read("notes/todo.txt"), "buy milk\n");
    let err = fx
        .err(
            "file_edit",
            json!({"path": "notes/todo.txt", "old_text": "", "new_text": "eggs\n"}),
        )
        .await;
    assert_eq!(
        err.to_string(),
        "invalid arguments: at /old_text: must not be empty: notes/todo.txt exists. Give the \
         exact text to replace (read the file first), or use file_write to replace the whole file"
    );
    assert_eq!(fx.read("notes/todo.txt"), "buy milk\n");
    // A non-empty old_text in a file that is not there names the way to create it.
    let err = fx
        .err(
            "file_edit",
            json!({"path": "todo.txt", "old_text": "milk", "new_text": "eggs"}),
        )
        .await;
    assert_eq!(
        err.to_string(),
        "\"todo.txt\" does not exist in the workspace, so there is no text to replace; to \
         create it, call file_write (or file_edit with an empty old_text)"
    );
    assert!(!exists(&fx.root().join("todo.txt")));
}

/// "In data/settings.json, set retries to 10": an edit or a write that would leave a JSON
/// file that was valid unreadable is refused, nothing changed, and the error says where.
#[tokio::test]
async fn a_json_file_that_was_valid_stays_valid() {
    let fx = Fx::new();
    let settings = "{\n  \"theme\": \"dark\",\n  \"retries\": 5\n}\n";
    fx.write("data/settings.json", settings);
    let err = fx
        .err(
            "file_edit",
            json!({"path": "data/settings.json", "old_text": "\"retries\": 5", "new_text": "retries: 10"}),
        )
        .await
        .to_string();
    assert!(
        err.starts_with("nothing was changed: data/settings.json would not be valid JSON (")
            && err.contains("that line would read `retries: 10`"),
        "{err}"
    );
    let err = fx
        .err(
            "file_write",
            json!({"path": "data/settings.json", "content": "{\"retries\": 10,}"}),
        )
        .await;
    assert!(err.to_string().contains("would not be valid JSON"), "{err}");
    assert_eq!(fx.read("data/settings.json"), settings);
    // Edits that keep it JSON go through, and so do writes to other files.
    fx.ok(
        "file_edit",
        json!({"path": "data/settings.json", "old_text": "\"retries\": 5", "new_text": "\"retries\": 10"}),
    )
    .await;
    assert!(fx.read("data/settings.json").contains("\"retries\": 10"));
    fx.ok(
        "file_write",
        json!({"path": "notes.txt", "content": "{not json"}),
    )
    .await;
    // A new JSON file must be JSON; one that was not JSON before is not guarded.
    let err = fx
        .err(
            "file_write",
            json!({"path": "new.json", "content": "{oops"}),
        )
        .await;
    assert!(err.to_string().contains("would not be valid JSON"), "{err}");
    assert!(!exists(&fx.root().join("new.json")));
    fx.write("broken.json", "{half");
    fx.ok(
        "file_write",
        json!({"path": "broken.json", "content": "{still half"}),
    )
    .await;
}

/// "In config.txt, change the port from 8080 to 9090": the 1.5B model gave `port:8080` for
/// `port = 8080` and gave up when it was not found. A key and value written another way,
/// on one line only, is that line: its value is replaced and the line keeps its form.
#[tokio::test]
async fn a_key_and_value_written_another_way_edits_that_line() {
    let fx = Fx::new();
    fx.write("config.txt", "host = \"localhost\"\nport = 8080\n");
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "config.txt", "old_text": "port:8080", "new_text": "port:9090"}),
        )
        .await;
    assert_eq!(
        out,
        "replaced 1 occurrence in config.txt (at line 2); old_text matched as a key and its \
         value written another way: the line now reads `port = 9090`"
    );
    assert_eq!(fx.read("config.txt"), "host = \"localhost\"\nport = 9090\n");
    // In JSON, quotes and the comma stay; a value alone as new_text is the new value.
    fx.write("s.json", "{\n  \"retries\": 5,\n  \"theme\": \"dark\"\n}\n");
    fx.ok(
        "file_edit",
        json!({"path": "s.json", "old_text": "retries: 5", "new_text": "10"}),
    )
    .await;
    fx.ok(
        "file_edit",
        json!({"path": "s.json", "old_text": "theme = dark", "new_text": "theme: light"}),
    )
    .await;
    assert_eq!(
        fx.read("s.json"),
        "{\n  \"retries\": 10,\n  \"theme\": \"light\"\n}\n"
    );
    // Two lines with that key and value, another key in new_text, or no such line: not found.
    fx.write("twice.ini", "[a]\nport = 1\n[b]\nport = 1\n");
    for (path, old, new) in [
        ("twice.ini", "port: 1", "port: 2"),
        ("config.txt", "port: 9090", "host: 2"),
        ("config.txt", "port: 1234", "port: 2"),
    ] {
        let err = fx
            .err(
                "file_edit",
                json!({"path": path, "old_text": old, "new_text": new}),
            )
            .await;
        assert!(
            err.to_string().starts_with("old_text was not found"),
            "{err}"
        );
    }
    assert_eq!(fx.read("twice.ini"), "[a]\nport = 1\n[b]\nport = 1\n");
}

/// "In data/settings.json, set retries to 10": `"old_text": "retries", "new_text": "10"`
/// would rename the key (`"10": 5` is still JSON); refused, the 1.5B model sent the same call
/// again. A key alone given a number, `true`, `false` or `null` sets that key's value.
#[tokio::test]
async fn a_json_key_given_a_value_sets_that_value() {
    let fx = Fx::new();
    fx.write(
        "data/settings.json",
        "{\n  \"retries\": 5,\n  \"theme\": \"dark\",\n  \"owner\": {\"name\": \"Lin\"}\n}\n",
    );
    let out = fx
        .ok(
            "file_edit",
            json!({"path": "data/settings.json", "old_text": "retries", "new_text": "10"}),
        )
        .await;
    assert_eq!(
        out,
        "`retries` is a key of data/settings.json, so its value was set (at line 2): the line \
         now reads `\"retries\": 10,`. To rename a key instead, give old_text and new_text as \
         quoted names"
    );
    fx.ok(
        "file_edit",
        json!({"path": "data/settings.json", "old_text": "\"theme\"", "new_text": "null"}),
    )
    .await;
    assert_eq!(
        fx.read("data/settings.json"),
        "{\n  \"retries\": 10,\n  \"theme\": null,\n  \"owner\": {\"name\": \"Lin\"}\n}\n"
    );
    // Renaming a key to another name is an edit like any other.
    fx.ok(
        "file_edit",
        json!({"path": "data/settings.json", "old_text": "\"theme\"", "new_text": "\"colour\""}),
    )
    .await;
    assert!(fx.read("data/settings.json").contains("\"colour\": null"));
    // A key on several lines, or with an object for its value: refused, nothing changed.
    let nested = "{\"a\": {\"n\": 1},\n \"b\": {\"n\": 2}}\n";
    fx.write("nested.json", nested);
    let err = fx
        .err(
            "file_edit",
            json!({"path": "nested.json", "old_text": "n", "new_text": "3"}),
        )
        .await;
    assert!(
        err.to_string()
            .starts_with("nothing was changed: `n` is a key on 2 lines of nested.json"),
        "{err}"
    );
    let err = fx
        .err(
            "file_edit",
            json!({"path": "nested.json", "old_text": "a", "new_text": "3"}),
        )
        .await;
    assert!(err.to_string().contains("not a plain value"), "{err}");
    assert_eq!(fx.read("nested.json"), nested);
}

#[tokio::test]
async fn lists_directories_with_kinds_and_sizes() {
    let fx = Fx::new();
    fx.write("src/lib.rs", "abc");
    fx.write(".hidden", "");
    symlink("src/lib.rs", fx.root().join("l")).unwrap();
    let out = fx.ok("list_dir", json!({})).await;
    assert_eq!(
        out,
        ". holds 1 file without an extension, 1 folder and 1 link (3 entries in all):\nsrc/\n\
         .hidden  (0 bytes)\nl -> src/lib.rs"
    );
    assert_eq!(
        fx.ok("list_dir", json!({"path": "src"})).await,
        "src holds 1 .rs file:\nlib.rs  (3 bytes)"
    );
}

#[tokio::test]
async fn searches_by_glob_and_content_respecting_gitignore_and_hidden() {
    let fx = Fx::new();
    fx.write(".gitignore", "target/\n");
    fx.write("src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    fx.write("src/b.txt", "ALPHA in text\n");
    fx.write("target/gen.rs", "fn alpha() {}\n");
    fx.write(".secret/x.rs", "fn alpha() {}\n");
    assert_eq!(
        fx.ok("file_search", json!({"glob": "*.rs"})).await,
        "src/a.rs\n[1 file under . matching glob `*.rs`]"
    );
    let hits = fx
        .ok(
            "file_search",
            json!({"pattern": "alpha", "case_insensitive": true}),
        )
        .await;
    assert_eq!(
        hits,
        "src/a.rs:1: fn alpha() {}\nsrc/b.txt:1: ALPHA in text\n\
         [2 matching lines in 2 files under .]"
    );
    let hidden = fx
        .ok(
            "file_search",
            json!({"glob": "**/x.rs", "include_hidden": true}),
        )
        .await;
    assert_eq!(
        hidden,
        ".secret/x.rs\n[1 file under . matching glob `**/x.rs`]"
    );
    assert_eq!(
        fx.ok("file_search", json!({"pattern": "zzz"})).await,
        "no matches for `zzz` (regular expression, any case): searched 2 files under .; \
         hidden files and files ignored by .gitignore are skipped"
    );
}

#[tokio::test]
async fn search_lists_symlinks_but_does_not_read_through_them() {
    let fx = Fx::new();
    let (_keep, outside) = outside_dir();
    symlink(outside.join("secret.txt"), fx.root().join("s.txt")).unwrap();
    assert_eq!(
        fx.ok("file_search", json!({"pattern": "s3cret"})).await,
        "no matches for `s3cret` (regular expression, any case): searched 0 files under .; \
         hidden files and files ignored by .gitignore are skipped"
    );
    // Without glob or pattern, every file is listed.
    assert_eq!(
        fx.ok("file_search", json!({})).await,
        "s.txt\n[1 file under .]"
    );
}

#[tokio::test]
async fn tools_without_a_workspace_say_what_the_host_must_do() {
    let fx = Fx::new();
    let bare = toolbelt_core::ToolContext::new();
    let err = fx
        .call_in(&bare, "file_read", json!({"path": "a"}))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("the workspace is not configured; the host must add a `Workspace`"),
        "{err}"
    );
    let _ = Workspace::current_dir().unwrap();
}

#[tokio::test]
async fn reserved_paths_are_never_read_written_or_searched() {
    // A host whose data directory ended up inside the workspace keeps the file tools out.
    let fx = Fx::with(|cfg| {
        let root = cfg.workspace().root().to_path_buf();
        BuiltinConfig::new(
            cfg.workspace()
                .clone()
                .with_reserved([root.join(".toolbelt"), root.join("secrets.env")]),
        )
    });
    fx.write(".toolbelt/admin.token", "tb_secret_token\n");
    fx.write("secrets.env", "API=hunter2\n");
    fx.write("notes.txt", "tb_secret_token is not here\n");
    for (tool, args) in [
        ("file_read", json!({"path": ".toolbelt/admin.token"})),
        ("file_read", json!({"path": "secrets.env"})),
        (
            "file_read",
            json!({"path": "./.toolbelt/../.toolbelt/admin.token"}),
        ),
        (
            "file_write",
            json!({"path": ".toolbelt/toolbelt.db", "content": "x"}),
        ),
        ("list_dir", json!({"path": ".toolbelt"})),
    ] {
        let err = fx.err(tool, args.clone()).await.to_string();
        assert!(
            err.contains("holds the server's own data"),
            "{tool} {args}: {err}"
        );
    }
    let found = fx
        .ok(
            "file_search",
            json!({"pattern": "tb_secret_token|hunter2", "include_hidden": true}),
        )
        .await;
    assert!(found.contains("notes.txt"), "{found}");
    assert!(
        !found.contains("admin.token") && !found.contains("hunter2"),
        "{found}"
    );
    assert_eq!(fx.read(".toolbelt/admin.token"), "tb_secret_token\n");
}
