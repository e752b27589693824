//! `toolbelt run` against what real small models send (Qwen2.5-Coder 0.5B and 1.5B through llama.cpp): each test
//! replays a response of Qwen2.5-Coder on llama.cpp's server (fixtures in
//! `tests/fixtures/`, see its README) through a fake server on 127.0.0.1.
// Fixture helpers outside #[test] fns unwrap too; `allow-unwrap-in-tests` does not reach them.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::cli_run::{fake_openai, sse, toolbelt_run};

const QWEN: &str = "qwen2.5-coder-1.5b-instruct";

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn env(url: &str) -> [(&str, &str); 2] {
    [("OPENAI_BASE_URL", url), ("TOOLBELT_MODEL", QWEN)]
}

/// A plain-text streamed answer in llama.cpp's shape.
fn text(answer: &str, finish: &str) -> String {
    sse(&[json!({"role": "assistant", "content": answer})], finish)
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("hello.txt"),
        "Hello from toolbelt: the basket holds 42 apples.\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("notes.md"),
        "The secret word is marmalade.\n",
    )
    .unwrap();
    dir
}

fn last_message(body: &Value) -> Value {
    body["messages"].as_array().unwrap().last().unwrap().clone()
}

#[test]
fn calls_written_in_one_fence_run_and_never_reach_stdout() {
    let dir = workspace();
    let replies = vec![
        fixture("qwen1.5b-text-two-calls-one-fence.sse"),
        text(
            "hello.txt says the basket holds 42 apples; notes.md: marmalade.",
            "stop",
        ),
    ];
    let (url, server) = fake_openai(replies);
    let args = [
        "--no-router",
        "--groups",
        "file_read",
        "Read hello.txt and notes.md",
    ];
    let out = toolbelt_run(dir.path(), &env(&url), &args, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout,
        "hello.txt says the basket holds 42 apples; notes.md: marmalade.\n"
    );
    assert_eq!(stderr.matches("→ file_read").count(), 2, "{stderr}");
    let bodies = server.join().unwrap();
    let sent = serde_json::to_string(&bodies[1]["messages"]).unwrap();
    assert!(
        sent.contains("42 apples") && sent.contains("marmalade"),
        "{sent}"
    );
}

#[test]
fn a_text_call_of_a_tool_not_offered_is_not_run() {
    let dir = workspace();
    let replies = vec![
        fixture("qwen1.5b-text-call-not-offered.sse"),
        text("I can only read files here.", "stop"),
    ];
    let (url, server) = fake_openai(replies);
    let args = ["--no-router", "--groups", "file_read", "Delete hello.txt"];
    let out = toolbelt_run(dir.path(), &env(&url), &args, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "I can only read files here.\n"
    );
    assert!(!stderr.contains("→ "), "nothing ran: {stderr}");
    let bodies = server.join().unwrap();
    let told = last_message(&bodies[1]);
    assert!(
        told["content"]
            .as_str()
            .unwrap()
            .contains("not among the tools you may call now"),
        "{told}"
    );
}

#[test]
fn an_empty_answer_gets_a_corrective_turn_then_fails() {
    let dir = workspace();
    let empty = fixture("qwen1.5b-empty-answer.sse");
    let (url, server) = fake_openai(vec![empty.clone(), empty]);
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["--no-router", "--groups", "file_read", "hi"],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert!(
        stderr.contains("the model gave no usable answer: your answer was empty"),
        "{stderr}"
    );
    assert!(
        stderr.contains("(2 model calls and 0 tool calls before it stopped)"),
        "{stderr}"
    );
    let bodies = server.join().unwrap();
    let told = last_message(&bodies[1]);
    assert!(
        told["content"]
            .as_str()
            .unwrap()
            .starts_with("(runtime) your answer was empty"),
        "{told}"
    );
}

#[test]
fn max_tokens_is_sent_and_a_cut_answer_says_so() {
    let dir = workspace();
    let (url, server) = fake_openai(vec![
        text("ok", "stop"),
        fixture("qwen1.5b-runaway-cut-at-max-tokens.sse"),
    ]);
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["--no-router", "--groups", "file_read", "hi"],
        "",
    );
    assert!(out.status.success());
    let cut = toolbelt_run(
        dir.path(),
        &env(&url),
        &[
            "--no-router",
            "--groups",
            "file_read",
            "--max-tokens",
            "64",
            "count",
        ],
        "",
    );
    let stderr = String::from_utf8_lossy(&cut.stderr);
    assert_eq!(cut.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the answer was cut at the output limit"),
        "{stderr}"
    );
    let bodies = server.join().unwrap();
    // The 1.5B profile's default, then the flag.
    assert_eq!(
        (
            bodies[0]["max_tokens"].clone(),
            bodies[1]["max_tokens"].clone()
        ),
        (json!(1024), json!(64))
    );
}

#[test]
fn no_stream_asks_for_whole_answers() {
    let dir = workspace();
    let (url, server) = fake_openai(vec![
        fixture("qwen1.5b-native-call.json"),
        fixture("qwen1.5b-answer.json"),
    ]);
    let args = [
        "--no-stream",
        "--no-router",
        "--groups",
        "file_read",
        "Read hello.txt",
    ];
    let out = toolbelt_run(dir.path(), &env(&url), &args, "");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("→ file_read"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("42 apples"));
    for body in server.join().unwrap() {
        assert_eq!(body.get("stream"), None, "{body}");
    }
}

#[test]
fn a_stream_closed_after_200_is_asked_again_whole() {
    let dir = workspace();
    // llama-cpp-python's answer to a streamed forced tool choice: 200, then nothing.
    let (url, server) = fake_openai(vec![String::new(), fixture("qwen1.5b-answer.json")]);
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["--no-router", "--groups", "file_read", "hi"],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("42 apples"));
    let bodies = server.join().unwrap();
    assert_eq!(
        (bodies[0]["stream"].clone(), bodies[1].get("stream")),
        (json!(true), None)
    );
}

#[test]
fn a_stream_closed_after_200_is_not_called_unreachable() {
    let dir = workspace();
    let (url, server) = fake_openai(vec![String::new(), String::new()]);
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["--no-router", "--groups", "file_read", "hi"],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("could not reach"), "{stderr}");
    server.join().unwrap();
}

#[test]
fn the_same_call_repeated_is_refused_then_the_run_stops() {
    let dir = workspace();
    let call = fixture("qwen1.5b-native-call.sse");
    let (url, server) = fake_openai(vec![
        call.clone(),
        call.clone(),
        call.clone(),
        call.clone(),
        call,
    ]);
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["--no-router", "--groups", "file_read", "Read hello.txt"],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("→ file_read").count(), 2, "{stderr}");
    assert!(
        stderr.contains("stopped a loop: the model asked for the same `file_read` call"),
        "{stderr}"
    );
    let bodies = server.join().unwrap();
    // The request for an answer holds no tool message (the refusal is in the transcript).
    let refusal = bodies[3]["messages"].as_array().unwrap().iter().any(|m| {
        m["role"] == "tool"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.contains("was already made 2 times"))
    });
    assert!(
        !refusal,
        "the answer request holds no call or result message: {}",
        bodies[3]
    );
    // Asked for its answer, the model gets the results as text and the request, no tools
    // and none of its calls; asked again, the result quoted once more; then the run stops.
    let asked = last_message(&bodies[3]);
    let asked = asked["content"].as_str().unwrap();
    assert!(
        asked.contains("`file_read` {\"path\":\"hello.txt\"} gave:\n")
            && asked.contains("42 apples")
            && asked.ends_with("My request: Read hello.txt"),
        "{asked}"
    );
    assert_eq!(bodies[3].get("tools"), None, "{}", bodies[3]);
    assert_eq!(bodies.len(), 5);
}

#[test]
fn a_real_call_cut_mid_stream_leaves_only_the_prose_on_stdout() {
    // Recorded from Qwen2.5-Coder-1.5B on llama-server (its own template):
    // prose, then a fenced call, then the connection ended mid-call.
    let dir = workspace();
    let (url, server) = fake_openai(vec![fixture("qwen1.5b-real-text-call-cut.sse")]);
    let args = [
        "--no-router",
        "--groups",
        "file_read",
        "Read hello.txt and notes.md",
    ];
    let out = toolbelt_run(dir.path(), &env(&url), &args, "");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stdout,
        "Here are the results of reading the files and displaying their contents:\n\n"
    );
    assert!(
        stderr.contains("answered 200 but the stream ended"),
        "{stderr}"
    );
    server.join().unwrap();
}

/// Routed (no `--no-router`), the 1.5B profile offers at most 3 tools, and
/// none when the router is unsure: given `ask_human` for a question it could
/// answer, the real model asked the user instead.
#[test]
fn a_small_model_gets_few_tools_and_none_for_a_question_it_can_answer() {
    let dir = workspace();
    // "ok" for the edit, with no call: told once that no call read config.txt, it says
    // "ok" again, which is then its answer.
    let (url, server) = fake_openai(vec![
        text("Paris", "stop"),
        text("ok", "stop"),
        text("ok", "stop"),
    ]);
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["What is the capital of France? Answer in one word."],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("router: no tools needed"), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "Paris");
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["In config.txt, change the port from 8080 to 9090."],
        "",
    );
    assert!(out.status.success());
    let bodies = server.join().unwrap();
    assert_eq!(bodies[0].get("tools"), None, "{}", bodies[0]);
    let offered: Vec<&str> = bodies[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.len() <= 3 && offered.contains(&"file_edit") && !offered.contains(&"config"),
        "{offered:?}"
    );
    let reminder = serde_json::to_string(&last_message(&bodies[2])).unwrap();
    assert!(
        reminder.contains("my request names config.txt, and no tool read it"),
        "{reminder}"
    );
}

/// Qwen2.5-Coder-1.5B on llama-server wrote a call whose arguments stopped mid-string
/// (count-zh, json-zh in the 30-task set). The history sent back held them raw, and
/// llama-server refused every later request (`500 Failed to parse tool call arguments as
/// JSON`), so the run died. Now the history carries `{}` for them and the tool result
/// quotes what the model wrote and why it could not be read.
#[test]
fn arguments_that_do_not_parse_go_back_as_an_object_with_the_reason_beside_them() {
    let dir = workspace();
    let broken = json!({"index": 0, "id": "call_1", "type": "function",
        "function": {"name": "file_read", "arguments": "{\"path\": \"hello.t"}});
    let (url, server) = fake_openai(vec![
        sse(
            &[json!({"role": "assistant", "tool_calls": [broken]})],
            "tool_calls",
        ),
        fixture("qwen1.5b-native-call.sse"),
        text("hello.txt says the basket holds 42 apples.", "stop"),
    ]);
    let out = toolbelt_run(
        dir.path(),
        &env(&url),
        &["--no-router", "--groups", "file_read", "Read hello.txt"],
        "",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let bodies = server.join().unwrap();
    for body in &bodies[1..] {
        for message in body["messages"].as_array().unwrap() {
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                let arguments = call["function"]["arguments"].as_str().unwrap();
                let parsed: Value = serde_json::from_str(arguments)
                    .unwrap_or_else(|e| panic!("{arguments:?} does not parse: {e}"));
                assert!(parsed.is_object(), "{arguments}");
            }
        }
    }
    let messages = bodies[1]["messages"].as_array().unwrap();
    let result = messages.iter().rfind(|m| m["role"] == "tool").unwrap();
    let content = result["content"].as_str().unwrap();
    assert!(
        content.contains("the arguments `{\"path\": \"hello.t` could not be read")
            && content.contains("{\"path\": …}"),
        "{content}"
    );
}

/// `toolbelt run --transcript FILE INPUT` against a model answering `replies`.
fn run_with_transcript(
    dir: &Path,
    replies: Vec<String>,
    file: &str,
    input: &str,
) -> std::process::Output {
    let (url, server) = fake_openai(replies);
    let args = [
        "--no-router",
        "--groups",
        "file_read",
        "--transcript",
        file,
        input,
    ];
    let out = toolbelt_run(dir, &env(&url), &args, "");
    server.join().unwrap();
    out
}

fn transcript_in(dir: &Path, file: &str) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join(file)).unwrap()).unwrap()
}

#[test]
fn the_transcript_is_written_where_asked_also_when_the_run_fails() {
    let dir = workspace();
    let replies = vec![
        fixture("qwen1.5b-native-call.sse"),
        text("It says the basket holds 42 apples.", "stop"),
    ];
    let out = run_with_transcript(dir.path(), replies, "t.json", "Read hello.txt");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let transcript = transcript_in(dir.path(), "t.json");
    let roles: Vec<&str> = transcript["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    assert!(
        transcript["messages"][2]["content"]
            .as_str()
            .unwrap()
            .contains("42 apples"),
        "{transcript}"
    );
    // A failed run writes its transcript too.
    let empty = fixture("qwen1.5b-empty-answer.sse");
    let out = run_with_transcript(dir.path(), vec![empty.clone(), empty], "failed.json", "hi");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        transcript_in(dir.path(), "failed.json")["messages"][0]["content"],
        "hi"
    );
    // A file that cannot be written fails the command and says why.
    let out = run_with_transcript(
        dir.path(),
        vec![text("hello", "stop")],
        "no/such/dir/t.json",
        "hi",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: --transcript no/such/dir/t.json: could not write the transcript"),
        "{stderr}"
    );
}
