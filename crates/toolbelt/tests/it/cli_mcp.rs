//! `toolbelt mcp serve` with the official Python MCP SDK as the client, over
//! stdio and streamable HTTP, and `toolbelt serve`'s `/mcp/{agent}` endpoint;
//! `toolbelt mcp tools` against the filesystem server.

// Helpers outside `#[test]` functions fail loudly too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run_with_stdin;

fn peers() -> PathBuf {
    std::env::var_os("TOOLBELT_MCP_PEERS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/mcp-peers"),
        PathBuf::from,
    )
}

fn python() -> Option<PathBuf> {
    let python = peers().join("venv/bin/python");
    if python.exists() {
        Some(python)
    } else {
        println!("skipped: the Python mcp SDK is not installed (run scripts/setup-mcp-peers.sh)");
        None
    }
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../toolbelt-mcp/tests/peers/py_client.py")
}

/// Runs the Python client with `calls` and returns its JSON report.
fn py_client(
    python: &PathBuf,
    mode: &str,
    elicit: &str,
    target: &[&str],
    calls: Value,
    dir: &std::path::Path,
) -> Value {
    let mut command = Command::new(python);
    command
        .arg(script())
        .args([mode, elicit])
        .args(target)
        .current_dir(dir);
    let output = run_with_stdin(&mut command, &calls.to_string());
    assert!(
        output.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A loopback address with a port nobody listens on.
fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Waits (at most 30 s) until a server listens at `addr`.
fn wait_listening(addr: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(addr).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "server did not listen at {addr}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The names of the tools a client listed, sorted.
fn sorted_names(report: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    names
}

fn texts(report: &Value) -> Vec<(String, bool)> {
    report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["content"][0]["text"].as_str().unwrap().to_owned(),
                r["isError"] == json!(true),
            )
        })
        .collect()
}

#[test]
fn python_client_over_stdio_lists_calls_and_gets_validation_errors_as_tool_errors() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let target = [
        "stdio",
        bin,
        "mcp",
        "serve",
        "--groups",
        "file_read,file_write",
    ];
    let calls = json!([["file_read", {"path": "a.txt"}], ["file_read", {"path": 5}], ["file_write", {"path": "b.txt", "content": "x"}]]);
    let report = py_client(&python, "legacy", "none", &target, calls, dir.path());
    let names: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["file_read", "file_write"]);
    let read = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "file_read")
        .unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], json!(true));
    let results = texts(&report);
    assert_eq!(results[0], ("hello\n".to_owned(), false));
    assert!(
        results[1].1 && results[1].0.contains("at /path"),
        "{:?}",
        results[1]
    );
    assert!(
        results[2].1 && results[2].0.contains("does not support elicitation"),
        "{:?}",
        results[2]
    );
    assert!(!dir.path().join("b.txt").exists());
}

#[test]
fn python_client_sees_search_tools_first_then_what_it_found_with_routed() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let target = [
        "stdio",
        bin,
        "mcp",
        "serve",
        "--routed",
        "--search-limit",
        "3",
    ];
    // `file_read` is callable by name once a search described it.
    let calls = json!([["search_tools", {"query": "read the contents of a text file"}], ["file_read", {"path": "a.txt"}]]);
    let report = py_client(&python, "legacy", "none", &target, calls, dir.path());
    let listed: Vec<&str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["search_tools"]);
    let found: Vec<&str> = report["results"][0]["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        found.len() <= 3 && found.contains(&"file_read"),
        "{found:?}"
    );
    assert_eq!(texts(&report)[1], ("hello\n".to_owned(), false));
    let after: Vec<&str> = report["tools_after"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(after[0], "search_tools");
    assert_eq!(&after[1..], &found[..], "{report}");
}

#[test]
fn approval_is_asked_through_elicitation_on_2025_11_25_and_input_required_on_2026_07_28() {
    let Some(python) = python() else { return };
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let target = ["stdio", bin, "mcp", "serve", "--groups", "file_write"];
    let write = json!([["file_write", {"path": "b.txt", "content": "yes"}]]);
    for (mode, protocol) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let dir = tempfile::tempdir().unwrap();
        let declined = py_client(&python, mode, "decline", &target, write.clone(), dir.path());
        assert_eq!(declined["protocol"], json!(protocol));
        assert!(texts(&declined)[0].0.contains("Decline"), "{declined}");
        assert!(!dir.path().join("b.txt").exists());
        let accepted = py_client(&python, mode, "accept", &target, write.clone(), dir.path());
        assert_eq!(
            texts(&accepted)[0],
            ("created b.txt (3 bytes)".to_owned(), false),
            "{mode}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
            "yes"
        );
    }
}

#[test]
fn over_http_the_calling_client_approves_its_own_call_only_with_client_approves() {
    let Some(python) = python() else { return };
    let write = json!([["file_write", {"path": "b.txt", "content": "yes"}]]);
    for allowed in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let addr = free_addr();
        let mut args = vec!["mcp", "serve", "--groups", "file_write", "--http", &addr];
        if allowed {
            args.push("--client-approves");
        }
        let mut server = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(&args)
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_listening(&addr);
        let url = format!("http://{addr}/mcp");
        let report = py_client(
            &python,
            "legacy",
            "accept",
            &[url.as_str()],
            write.clone(),
            dir.path(),
        );
        server.kill().unwrap();
        let _ = server.wait();
        let (text, is_error) = texts(&report)[0].clone();
        if allowed {
            assert_eq!(
                (text.as_str(), is_error),
                ("created b.txt (3 bytes)", false)
            );
            assert!(dir.path().join("b.txt").exists());
        } else {
            assert!(is_error && text.contains("--client-approves"), "{text}");
            assert!(
                !dir.path().join("b.txt").exists(),
                "the client approved its own call"
            );
        }
    }
}

#[test]
fn python_client_over_streamable_http() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "over http\n").unwrap();
    let addr = free_addr();
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["mcp", "serve", "--groups", "file_read", "--http", &addr])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(&addr);
    let url = format!("http://{addr}/mcp");
    let calls = json!([["file_read", {"path": "a.txt"}], ["file_read", {}]]);
    for mode in ["legacy", "auto"] {
        let report = py_client(
            &python,
            mode,
            "none",
            &[url.as_str()],
            calls.clone(),
            dir.path(),
        );
        let results = texts(&report);
        assert_eq!(results[0], ("over http\n".to_owned(), false), "mode {mode}");
        assert!(
            results[1].1 && results[1].0.contains("path"),
            "mode {mode}: {:?}",
            results[1]
        );
    }
    server.kill().unwrap();
    let _ = server.wait();
}

#[test]
fn mcp_tools_lists_the_filesystem_servers_tools_from_an_mcp_servers_file() {
    let entry = peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if !entry.exists() {
        println!("skipped: server-filesystem is not installed (run scripts/setup-mcp-peers.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    // Stdio servers run in the command sandbox: the npm tree and the served folder are
    // named readable (ADR 0062).
    let servers = json!({"mcpServers": {"fs": {"command": "node", "args": [entry, dir.path()],
        "sandbox": {"readPaths": [peers(), dir.path().to_path_buf()]}}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args(["mcp", "tools", "--mcp-config"])
        .arg(&config)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.starts_with("fs (up ("), "{stdout}");
    assert!(
        stdout.contains("  fs.read_text_file [read-only]"),
        "{stdout}"
    );
    assert!(stdout.contains("  fs.write_file [mutating"), "{stdout}");
}

#[test]
fn toolbelt_imports_the_builtin_tools_another_toolbelt_serves() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {"tb": {"command": bin,
        "args": ["mcp", "serve", "--groups", "file_read,list_dir", "--root", dir.path()],
        "sandbox": {"readPaths": [dir.path()]}}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let output = Command::new(bin)
        .args(["mcp", "tools", "--json", "--mcp-config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut names: Vec<&str> = report[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["tb.file_read", "tb.list_dir"]);
    assert_eq!(report[0]["tools"][0]["kind"], json!("mcp"));
}

#[test]
fn route_sends_the_filesystem_servers_tools_when_the_request_needs_them() {
    let entry = peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if !entry.exists() {
        println!("skipped: server-filesystem is not installed (run scripts/setup-mcp-peers.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {"fs": {"command": "node", "args": [entry, dir.path()],
        "sandbox": {"readPaths": [peers(), dir.path().to_path_buf()]}}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args([
            "route",
            "get info about the file metadata of notes.txt",
            "--format",
            "json",
            "--mcp-config",
        ])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("\"fs.get_file_info\""), "{stdout}");
    assert!(
        !stdout.contains("\"fs.write_file\""),
        "routing keeps unrelated MCP tools out: {stdout}"
    );
}

#[test]
fn reexported_mcp_tools_keep_images_and_structured_content() {
    let Some(python) = python() else { return };
    let entry = peers().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if !entry.exists() {
        println!("skipped: server-everything is not installed (run scripts/setup-mcp-peers.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {"ev": {"command": "node", "args": [entry, "stdio"],
        "sandbox": {"readPaths": [peers()]}}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.display().to_string();
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let target = [
        "stdio",
        bin,
        "mcp",
        "serve",
        "--groups",
        "mcp:ev",
        "--mcp-config",
        &config,
    ];
    let calls =
        json!([["ev.get-tiny-image", {}], ["ev.get-structured-content", {"location": "Chicago"}]]);
    let report = py_client(&python, "legacy", "none", &target, calls, dir.path());
    let image = &report["results"][0]["content"];
    assert!(
        image
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["type"] == json!("image")),
        "{image}"
    );
    let weather = &report["results"][1]["structuredContent"];
    assert!(weather["temperature"].is_number(), "{weather}");
}

#[test]
fn python_client_uses_an_agents_tools_inside_toolbelt_serve() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let db = format!("sqlite://{}", dir.path().join("t.db").display());
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("a.txt"), "from the server\n").unwrap();
    // `--dev` on loopback: no token (the token checks are the server crate's tests).
    let mut server = Command::new(env!("CARGO_BIN_EXE_toolbelt"))
        .args([
            "serve",
            "--dev",
            "--addr",
            &addr,
            "--database-url",
            &db,
            "--workspace",
        ])
        .arg(&work)
        .current_dir(dir.path())
        .env("TOOLBELT_MEMORY_EMBEDDER", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_listening(&addr);
    let url = format!("http://{addr}/mcp/default");
    // The review's attack on the `routine` tool over /mcp/{agent}: name another agent, and
    // approve the call from the same client. The tool takes no `agent`, and the client's
    // approval is not a person's.
    let calls = json!([
        ["file_read", {"path": "a.txt"}],
        ["file_read", {"path": 5}],
        ["routine", {"action": "create", "name": "x", "agent": "other", "prompt": "p", "every_seconds": 60}],
        ["routine", {"action": "list"}]
    ]);
    for mode in ["legacy", "auto"] {
        let report = py_client(
            &python,
            mode,
            "accept",
            &[url.as_str()],
            calls.clone(),
            dir.path(),
        );
        let names: Vec<&str> = report["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        // The default agent selects every built-in tool, memory and routines included.
        for tool in ["file_read", "memory_store", "routine"] {
            assert!(names.contains(&tool), "mode {mode}: {names:?}");
        }
        let results = texts(&report);
        assert_eq!(
            results[0],
            ("from the server\n".to_owned(), false),
            "mode {mode}"
        );
        assert!(
            results[1].1 && results[1].0.contains("at /path"),
            "mode {mode}: {:?}",
            results[1]
        );
        assert!(
            results[2].1 && results[2].0.contains("agent"),
            "mode {mode}: {:?}",
            results[2]
        );
        assert!(
            results[3].1 && results[3].0.contains("mcp_client_approves"),
            "mode {mode}: {:?}",
            results[3]
        );
    }
    server.kill().unwrap();
    let _ = server.wait();
}

#[test]
fn mcp_serve_offers_no_tool_it_cannot_run_and_refuses_to_be_asked_for_one() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let report = py_client(
        &python,
        "legacy",
        "none",
        &["stdio", bin, "mcp", "serve"],
        json!([]),
        dir.path(),
    );
    let names = sorted_names(&report);
    assert_eq!(
        names,
        [
            "file_edit",
            "file_read",
            "file_search",
            "file_write",
            "git",
            "git_write",
            "http_get",
            "http_request",
            "list_dir",
            "shell_exec",
            "todo_add",
            "todo_list",
            "todo_update"
        ]
    );
    let out = Command::new(bin)
        .args(["mcp", "serve", "--groups", "file_ops,memory"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: `toolbelt mcp serve` cannot serve these tools: `memory_store` needs an agent's memory, `memory_recall` needs an agent's memory, `memory_forget` needs an agent's memory, `memory_list` needs an agent's memory; agents get them from `toolbelt serve` or `toolbelt run` (memory and routines: give --database-url). Leave them out of --groups"
    );
}

#[test]
fn mcp_serve_with_a_database_serves_an_agents_memory() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let db = format!("sqlite://{}", dir.path().join("m.db").display());
    let calls = json!([
        ["memory_store", {"text": "The user prefers short answers"}],
        ["memory_list", {}]
    ]);
    let report = py_client(
        &python,
        "legacy",
        "none",
        &[
            "stdio",
            bin,
            "mcp",
            "serve",
            "--groups",
            "memory,routine",
            "--database-url",
            &db,
        ],
        calls,
        dir.path(),
    );
    let names = sorted_names(&report);
    assert_eq!(
        names,
        [
            "memory_forget",
            "memory_list",
            "memory_recall",
            "memory_store",
            "routine"
        ]
    );
    let results = texts(&report);
    assert!(!results[0].1 && !results[1].1, "{results:?}");
    assert!(
        results[1].0.contains("The user prefers short answers"),
        "{results:?}"
    );
    // The memory is the `default` agent's, in the database: the CLI reads it there.
    let listed = Command::new(bin)
        .args(["memory", "ls", "--agent", "default", "--database-url", &db])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("The user prefers short answers"),
        "{listed}"
    );
}

#[test]
fn tools_ls_and_tools_call_reach_an_mcp_servers_tools_beside_the_stored_ones() {
    let entry = peers().join("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    if !entry.exists() {
        println!("skipped: server-filesystem is not installed (run scripts/setup-mcp-peers.sh)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir_all(&files).unwrap();
    std::fs::write(files.join("hello.txt"), "hello from fs\n").unwrap();
    let config = dir.path().join("mcp.json");
    let servers = json!({"mcpServers": {"fs": {"command": "node", "args": [entry, &files],
        "sandbox": {"readPaths": [peers()]}}}});
    std::fs::write(&config, servers.to_string()).unwrap();
    let db = format!("sqlite://{}", dir.path().join("t.db").display());
    let toolbelt = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(args)
            .arg("--mcp-config")
            .arg(&config)
            .args(["--database-url", &db])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let listed = crate::ok(&toolbelt(&["tools", "ls", "--source", "mcp"]));
    let line = listed
        .lines()
        .find(|l| l.starts_with("  fs.read_text_file "))
        .unwrap_or_default();
    assert!(
        line.contains("  mcp:fs  read-only  auto  Read the complete"),
        "{listed}"
    );
    assert!(!listed.contains(" compiled "), "{listed}");
    let all = crate::ok(&toolbelt(&["tools", "ls"]));
    assert!(
        all.contains(" mcp:fs ") && all.contains(" compiled "),
        "{all}"
    );
    let path = files.join("hello.txt");
    let args = json!({"path": path}).to_string();
    let read = crate::ok(&toolbelt(&["tools", "call", "fs.read_text_file", &args]));
    assert_eq!(read, "hello from fs\n");
}

#[test]
fn mcp_serve_agent_serves_a_stored_agents_pinned_and_available_tools_only() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_toolbelt");
    let db = format!("sqlite://{}", dir.path().join("a.db").display());
    let stamp = |word: &str| {
        format!(
            "name: stamp\ndescription: Stamp a text ({word})\ntags: [text]\neffect: read_only\n\
             parameters:\n  type: object\n  properties:\n    text: {{type: string}}\n  required: [text]\n\
             command:\n  argv: [\"echo\", \"{word}\", \"{{{{text}}}}\"]\n"
        )
    };
    std::fs::write(dir.path().join("stamp1.yaml"), stamp("one")).unwrap();
    std::fs::write(dir.path().join("stamp2.yaml"), stamp("two")).unwrap();
    std::fs::write(
        dir.path().join("guarded.yaml"),
        "name: guarded\ndescription: Only for reviewers\neffect: read_only\n\
         command:\n  argv: [\"echo\", \"guarded\"]\navailability:\n  agent_kinds: [reviewer]\n",
    )
    .unwrap();
    let toolbelt = |args: &[&str]| {
        crate::ok(
            &Command::new(bin)
                .args(args)
                .args(["--database-url", &db])
                .current_dir(dir.path())
                .output()
                .unwrap(),
        )
    };
    toolbelt(&["tools", "add", "-f", "stamp1.yaml"]);
    toolbelt(&["tools", "update", "-f", "stamp2.yaml"]);
    toolbelt(&["tools", "add", "-f", "guarded.yaml"]);
    toolbelt(&[
        "agents",
        "create",
        "helper",
        "--selection",
        "todo_list",
        "--tool",
        "stamp@1",
        "--tool",
        "guarded",
    ]);
    let report = py_client(
        &python,
        "legacy",
        "none",
        &[
            "stdio",
            bin,
            "mcp",
            "serve",
            "--database-url",
            &db,
            "--agent",
            "helper",
        ],
        json!([["stamp", {"text": "x"}], ["guarded", {}]]),
        dir.path(),
    );
    let names = sorted_names(&report);
    // The pinned version runs; the tool kept from the agent's kind is neither listed nor run.
    assert_eq!(names, ["stamp", "todo_list"]);
    let results = texts(&report);
    assert_eq!(results[0], ("one x\n".to_owned(), false), "{results:?}");
    assert!(results[1].1, "{results:?}");
    let out = Command::new(bin)
        .args(["mcp", "serve", "--database-url", &db, "--agent", "nobody"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "error: --agent nobody: no agent of that name in the database (stored: helper)"
    );
}

/// A stdio server of a `--mcp-config` file runs in the command sandbox: the process itself
/// (here another toolbelt serving `file_read` over a folder outside the workspace) cannot read
/// what its entry's `sandbox` does not name, reads it once `readPaths` names it, and a mode
/// that is not one is an error naming the entry and the allowed values.
#[test]
fn a_config_files_stdio_server_reads_only_what_its_sandbox_entry_names() {
    if !toolbelt_tools::sandbox::probe().landlock() {
        assert!(
            std::env::var_os("TOOLBELT_REQUIRE_SANDBOX").is_none(),
            "TOOLBELT_REQUIRE_SANDBOX is set, but there is no Landlock"
        );
        println!("skipped: no Landlock, stdio MCP servers cannot be confined here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "kept out of the workspace\n").unwrap();
    let config = dir.path().join("mcp.json");
    let call = |sandbox: Value| {
        let entry = json!({"command": env!("CARGO_BIN_EXE_toolbelt"),
            "args": ["mcp", "serve", "--groups", "file_read", "--root", &outside],
            "sandbox": sandbox});
        std::fs::write(&config, json!({"mcpServers": {"tb": entry}}).to_string()).unwrap();
        Command::new(env!("CARGO_BIN_EXE_toolbelt"))
            .args(["tools", "call", "tb.file_read", r#"{"path": "secret.txt"}"#])
            .arg("--mcp-config")
            .arg(&config)
            .current_dir(&work)
            .output()
            .unwrap()
    };
    let refused = call(json!({}));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!said.contains("kept out"), "{said}");
    assert!(
        !refused.status.success() && said.contains("ermission denied"),
        "{said}"
    );
    let read = crate::ok(&call(json!({"readPaths": [&outside]})));
    assert!(read.contains("kept out of the workspace"), "{read}");
    let bad = call(json!({"mode": "open"}));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success()
            && err.contains("mcpServers.tb.sandbox.mode: `open` is not a sandbox mode")
            && err.contains("read-only, workspace-write, full-access"),
        "{err}"
    );
}
