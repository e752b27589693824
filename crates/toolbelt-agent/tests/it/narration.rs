//! A final answer that narrates a tool call instead of making it is not a
//! success: the model gets one corrective turn, then the run fails.

use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Agent, AgentBuilder, AgentError, AgentEvent};
use toolbelt_core::{FnTool, ToolHandle};
use toolbelt_llm::{Message, ToolChoice};

/// `file_read(path)`: answers `hello` for any path.
fn file_read() -> ToolHandle {
    FnTool::builder("file_read")
        .description("Read a text file")
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}))
        .handler(|_args, _ctx| async move { "hello".to_owned() })
        .unwrap()
}

fn reader(script: &ScriptedProvider) -> AgentBuilder {
    Agent::builder(script.provider()).tool(file_read())
}

/// What the agent told the model in the corrective turn.
const TOLD: &str = "(runtime) you described calling `file_read` but did not call it; describing \
    a call does not run it, and the user sees no result. The `file_read` tool is offered with \
    this message: call it now. Its arguments: path (required). Then answer from its result.";

fn last_user_text(messages: &[Message]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m {
        Message::User { content } => Some(content.as_str()),
        _ => None,
    })
}

#[tokio::test]
async fn a_narrated_call_gets_one_corrective_turn_that_offers_the_tool() {
    // The answer the 1.5B model gave instead of a call.
    let script = ScriptedProvider::new()
        .then_text("I will use `file_read` to read hello.txt.")
        .then_call("file_read", json!({"path": "hello.txt"}))
        .then_text("hello.txt says hello");
    let out = reader(&script)
        .build()
        .unwrap()
        .run("What does hello.txt say?")
        .await
        .unwrap();
    assert_eq!(out.answer, "hello.txt says hello");
    let second = &script.requests()[1];
    assert_eq!(last_user_text(&second.messages), Some(TOLD));
    let offered: Vec<&str> = second.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["file_read"]);
    // The corrective turn requires one call; the turn after the call is the model's again.
    assert_eq!(second.tool_choice, ToolChoice::Required);
    assert_eq!(second.parallel_tool_calls, Some(false));
    assert_eq!(script.requests()[2].tool_choice, ToolChoice::Auto);
}

#[tokio::test]
async fn a_second_narration_ends_the_run_with_a_typed_error() {
    let script = ScriptedProvider::new()
        .then_text("Let me call file_read on hello.txt")
        .then_text("我将使用 `file_read` 读取 hello.txt 文件。");
    let err = reader(&script)
        .build()
        .unwrap()
        .run("hello.txt?")
        .await
        .unwrap_err();
    let AgentError::NarratedCall { tool, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(tool, "file_read");
    assert_eq!(
        err.to_string(),
        "agent `agent`: the model described a `file_read` call instead of making it, also after \
         being told to call it"
    );
    assert_eq!(script.requests().len(), 2);
}

#[tokio::test]
async fn an_answer_that_only_mentions_a_tool_is_a_success() {
    let script = ScriptedProvider::new()
        .then_text("hello.txt says hello. You can use file_read to read other files.");
    let out = reader(&script)
        .build()
        .unwrap()
        .run("hello.txt?")
        .await
        .unwrap();
    assert_eq!(
        out.answer,
        "hello.txt says hello. You can use file_read to read other files."
    );
    assert_eq!(script.requests().len(), 1);
}

#[tokio::test]
async fn a_streamed_narration_never_reaches_the_text_events() {
    let script = ScriptedProvider::new()
        .then_text("Sure. I'll use file_read to read it.")
        .then_call("file_read", json!({"path": "hello.txt"}))
        .then_text("It says hello");
    let agent = reader(&script).build().unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("hello.txt?").collect().await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Sure. It says hello");
}

#[tokio::test]
async fn prose_beside_a_native_call_is_still_streamed() {
    let mut call = toolbelt_llm::ChatResponse::tool_calls(vec![toolbelt_core::ToolCall::new(
        "c1",
        "file_read",
        json!({"path": "hello.txt"}),
    )]);
    call.content = Some("Let me use file_read.".to_owned());
    let script = ScriptedProvider::new()
        .then(call)
        .then_text(" It says hello");
    let agent = reader(&script).build().unwrap();
    let events: Vec<AgentEvent> = agent.run_stream("hello.txt?").collect().await;
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me use file_read. It says hello");
}

/// `file_write(path, content)`: a tool that writes; answers `wrote <path>`.
fn file_write() -> ToolHandle {
    FnTool::builder("file_write")
        .description("Create or replace a text file")
        .spec(|s| s.mutating())
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}))
        .handler(|args, _ctx| async move { format!("wrote {}", args["path"].as_str().unwrap_or("?")) })
        .unwrap()
}

/// The answer Qwen2.5-Coder-1.5B gave to "Write a short README.md for this folder that
/// mentions the word toolbelt.": the README, printed, and no call.
const PRINTED: &str = "Sure! Here is a short README.md for your folder:\n\n# My Project\n\n\
    This folder uses toolbelt.";

fn writer(script: &ScriptedProvider, model: &str) -> AgentBuilder {
    writer_with(script, model, file_write())
}

/// [`writer`] with `save` as the tool that writes.
fn writer_with(script: &ScriptedProvider, model: &str, save: ToolHandle) -> AgentBuilder {
    Agent::builder(script.provider())
        .tool(file_read())
        .tool(save)
        .profile(toolbelt_llm::ModelProfiles::builtin().find(model))
        .executor(
            toolbelt_core::Executor::builder()
                .policy(toolbelt_core::ApprovalPolicy::allow_all())
                .build(),
        )
}

#[tokio::test]
async fn a_small_model_that_shows_a_files_content_is_told_to_save_it() {
    let script = ScriptedProvider::new()
        .then_text(PRINTED)
        .then_call(
            "file_write",
            json!({"path": "README.md", "content": "# My Project\n\ntoolbelt"}),
        )
        .then_text("I saved README.md.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run("Write a short README.md for this folder that mentions the word toolbelt.")
        .await
        .unwrap();
    assert_eq!(out.answer, "I saved README.md.");
    let ran: Vec<String> = out
        .transcript
        .tool_results()
        .map(|r| r.to_model_text())
        .collect();
    assert_eq!(ran, ["wrote README.md"]);
    let second = &script.requests()[1];
    assert_eq!(
        last_user_text(&second.messages),
        Some(
            "(runtime) nothing was saved: no tool wrote README.md. Call `file_write` with \
             `path` \"README.md\" and `content` the text to save."
        )
    );
    // `file_write` alone, one call of it required (llama.cpp takes no named tool_choice).
    let offered: Vec<&str> = second.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["file_write"]);
    assert_eq!(second.tool_choice, ToolChoice::Required);
    assert_eq!(script.requests()[2].tools.len(), 2);
}

/// A writer without `path` and `content` parameters is named without arguments.
#[tokio::test]
async fn a_writer_of_other_parameters_is_named_without_arguments() {
    let save = FnTool::builder("save_note")
        .description("Save a note")
        .spec(|s| s.mutating())
        .parameters(json!({"type": "object", "properties": {"file": {"type": "string"}, "text": {"type": "string"}}, "required": ["file", "text"]}))
        .handler(|args, _ctx| async move { format!("saved {}", args["file"].as_str().unwrap_or("?")) })
        .unwrap();
    let script = ScriptedProvider::new()
        .then_text(PRINTED)
        .then_call(
            "save_note",
            json!({"file": "README.md", "text": "toolbelt"}),
        )
        .then_text("I saved README.md.");
    writer_with(&script, "qwen2.5-coder-1.5b-instruct", save)
        .build()
        .unwrap()
        .run("Write a short README.md for this folder that mentions the word toolbelt.")
        .await
        .unwrap();
    assert_eq!(
        last_user_text(&script.requests()[1].messages),
        Some(
            "(runtime) nothing was saved: no tool wrote README.md. Call `save_note` now to \
             write README.md as my request asks, then say in one sentence what you saved."
        )
    );
}

#[tokio::test]
async fn shown_content_is_the_answer_for_large_models_and_after_one_reminder() {
    // A model of the default profile may be asked for content to read: no reminder.
    let script = ScriptedProvider::new().then_text(PRINTED);
    let out = writer(&script, "gpt-4o")
        .build()
        .unwrap()
        .run("Write a short README.md for this folder.")
        .await
        .unwrap();
    assert_eq!(out.answer, PRINTED);
    // A small model is reminded once; content shown again is its answer.
    let script = ScriptedProvider::new()
        .then_text(PRINTED)
        .then_text(PRINTED);
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run("Write a short README.md for this folder.")
        .await
        .unwrap();
    assert_eq!(out.answer, PRINTED);
    assert_eq!(script.requests().len(), 2);
}

#[tokio::test]
async fn a_small_models_answer_that_uses_no_result_gets_one_reminder() {
    // After `list_dir` the 1.5B model answered "Thank you for confirming the results."
    let script = ScriptedProvider::new()
        .then_call("file_read", json!({"path": "hello.txt"}))
        .then_text("Thank you for confirming the results.")
        .then_text("hello.txt says hello");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run("What does hello.txt say?")
        .await
        .unwrap();
    assert_eq!(out.answer, "hello.txt says hello");
    assert_eq!(
        last_user_text(&script.requests()[2].messages),
        Some(
            "(runtime) your answer talks about the tool calls instead of answering. Answer my \
             request with the facts from the tool results (names, numbers, lines). My request: \
             What does hello.txt say?"
        )
    );
    // Large models' answers are theirs.
    let script = ScriptedProvider::new()
        .then_call("file_read", json!({"path": "hello.txt"}))
        .then_text("Thank you for confirming the results.");
    let out = writer(&script, "gpt-4o")
        .build()
        .unwrap()
        .run("What does hello.txt say?")
        .await
        .unwrap();
    assert_eq!(out.answer, "Thank you for confirming the results.");
}

#[tokio::test]
async fn content_shown_after_a_refused_repeat_gets_the_tools_back_to_save_it() {
    // create-readme: the 1.5B model listed the folder three times, was asked for its
    // answer without tools, and printed the README.
    let read = ("file_read", json!({"path": "notes.md"}));
    let script = ScriptedProvider::new()
        .then_calls([read.clone()])
        .then_calls([read.clone()])
        .then_calls([read])
        .then_text(PRINTED)
        .then_call(
            "file_write",
            json!({"path": "README.md", "content": "# My Project\n\ntoolbelt"}),
        )
        .then_text("I saved README.md.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run("Write a short README.md for this folder that mentions the word toolbelt.")
        .await
        .unwrap();
    assert_eq!(out.answer, "I saved README.md.");
    let requests = script.requests();
    assert!(
        requests[3].tools.is_empty(),
        "the answer was asked for without tools"
    );
    assert!(
        requests[4].tools.iter().any(|t| t.name == "file_write"),
        "the tools are back to save the file"
    );
}

#[tokio::test]
async fn a_small_models_answer_about_its_call_gets_the_same_reminder() {
    // list-folders: "To get the directories …, I used the `list_dir` function … The result
    // was the list of files and directories …" (long, and sharing a word with the result).
    let script = ScriptedProvider::new()
        .then_call("file_read", json!({"path": "hello.txt"}))
        .then_text(
            "To see what hello.txt says, I used the `file_read` function with the path \
             hello.txt. The result was the text of the file hello, which is a greeting that \
             files like this one often hold in a workspace.",
        )
        .then_text("hello.txt says hello");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run("What does hello.txt say?")
        .await
        .unwrap();
    assert_eq!(out.answer, "hello.txt says hello");
    assert!(
        last_user_text(&script.requests()[2].messages)
            .is_some_and(|t| t.starts_with("(runtime) your answer talks about the tool calls")),
    );
}

#[tokio::test]
async fn a_file_the_run_read_gets_no_reminder_to_write_it() {
    // "Write" and a file name, but the file exists (it was read): a reminder to write it
    // could replace it whole.
    let script = ScriptedProvider::new()
        .then_call("file_read", json!({"path": "notes.md"}))
        .then_text("# Notes\n\nnotes.md holds hello.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run("Write down what notes.md holds.")
        .await
        .unwrap();
    assert_eq!(out.answer, "# Notes\n\nnotes.md holds hello.");
    assert_eq!(script.requests().len(), 2);
}

/// `list_dir(path)`: a listing that names notes.md.
fn list_dir() -> ToolHandle {
    FnTool::builder("list_dir")
        .description("List a folder")
        .parameters(json!({"type": "object", "properties": {"path": {"type": "string"}}}))
        .handler(
            |_args, _ctx| async move { ". holds 1 .md file:\nnotes.md  (40 bytes)".to_owned() },
        )
        .unwrap()
}

#[tokio::test]
async fn a_small_models_answer_about_a_file_no_call_read_gets_one_reminder_to_read_it() {
    // list-read: the 1.5B model listed the folder, then made up the secret word.
    let request = "List the files in this directory, then read notes.md and tell me the secret \
        word it contains.";
    let script = ScriptedProvider::new()
        .then_call("list_dir", json!({"path": "."}))
        .then_text("The files are notes.md. The secret word is banana.")
        .then_call("file_read", json!({"path": "notes.md"}))
        .then_text("The secret word is hello.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .tool(list_dir())
        .build()
        .unwrap()
        .run(request)
        .await
        .unwrap();
    assert_eq!(out.answer, "The secret word is hello.");
    let third = &script.requests()[2];
    assert_eq!(
        last_user_text(&third.messages),
        Some(
            "(runtime) my request names notes.md, and no tool read it in this run, so your \
             answer cannot come from it. Call `file_read` with the path notes.md now, then \
             answer from what it returns."
        )
    );
    let offered: Vec<&str> = third.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["file_read"]);
    assert_eq!(third.tool_choice, ToolChoice::Required);
    assert_eq!(script.requests()[3].tool_choice, ToolChoice::Auto);

    // Told once: the same answer again is the answer; a large model is never told.
    for (model, requests) in [("qwen2.5-coder-1.5b-instruct", 3), ("gpt-4o", 2)] {
        let script = ScriptedProvider::new()
            .then_call("list_dir", json!({"path": "."}))
            .then_text("The secret word is banana.")
            .then_text("The secret word is banana.");
        let out = writer(&script, model)
            .tool(list_dir())
            .build()
            .unwrap()
            .run(request)
            .await
            .unwrap();
        assert_eq!(out.answer, "The secret word is banana.", "{model}");
        assert_eq!(script.requests().len(), requests, "{model}");
    }
}

#[tokio::test]
async fn a_small_model_runs_one_change_per_answer() {
    // create-readme: the 1.5B model printed a README, then wrote seventeen made-up files in
    // one answer. Its profile asks the server for one call per answer, and of an answer
    // with more runs the reads and the first change.
    let writes = [
        (
            "file_write",
            json!({"path": "README.md", "content": "toolbelt"}),
        ),
        (
            "file_write",
            json!({"path": "example.txt", "content": "Hello"}),
        ),
        (
            "file_write",
            json!({"path": "sub/new.txt", "content": "Hi"}),
        ),
    ];
    for (model, ran, parallel) in [
        ("qwen2.5-coder-1.5b-instruct", 2, false),
        ("gpt-4o", 4, true),
    ] {
        let mut calls = writes.to_vec();
        calls.insert(1, ("file_read", json!({"path": "notes.md"})));
        let script = ScriptedProvider::new()
            .then_calls(calls)
            .then_text("I saved README.md.");
        let out = writer(&script, model)
            .build()
            .unwrap()
            .run("Write a short README.md that mentions toolbelt.")
            .await
            .unwrap();
        assert_eq!(out.transcript.tool_results().count(), ran, "{model}");
        let requests = script.requests();
        assert_eq!(requests[0].parallel_tool_calls, Some(parallel), "{model}");
        // The conversation holds the calls that ran, each answered.
        let answered = requests[1]
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool { .. }))
            .count();
        assert_eq!(answered, ran, "{model}");
    }
}

#[tokio::test]
async fn an_answer_of_markup_alone_is_corrected_as_empty() {
    // multi-zh: the 1.5B model's whole answer was `<tools></tools>`.
    let script = ScriptedProvider::new()
        .then_text("<tools></tools>")
        .then_text("The meeting is about the budget.");
    let out = reader(&script)
        .build()
        .unwrap()
        .run("先找到提到 Dana 的文件，再告诉我会议讨论的主题。")
        .await
        .unwrap();
    assert_eq!(out.answer, "The meeting is about the budget.");
    assert!(
        last_user_text(&script.requests()[1].messages)
            .is_some_and(|t| t.starts_with("(runtime) your answer was empty")),
    );
}

#[tokio::test]
async fn a_small_model_that_wrote_another_file_is_told_to_write_the_one_asked_for() {
    // create-readme: the 1.5B model wrote `example.txt` ("Hello, world!") and answered
    // that it had; README.md was never written.
    let request = "Write a short README.md for this folder that mentions the word toolbelt.";
    let script = ScriptedProvider::new()
        .then_call(
            "file_write",
            json!({"path": "example.txt", "content": "Hello, world!"}),
        )
        .then_text("You successfully created an example.txt file.")
        .then_call(
            "file_write",
            json!({"path": "README.md", "content": "# toolbelt"}),
        )
        .then_text("I saved README.md.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run(request)
        .await
        .unwrap();
    assert_eq!(out.answer, "I saved README.md.");
    let third = &script.requests()[2];
    assert_eq!(
        last_user_text(&third.messages),
        Some(
            "(runtime) nothing was saved: no tool wrote README.md. Call `file_write` with \
             `path` \"README.md\" and `content` the text to save."
        )
    );
    assert_eq!(third.tool_choice, ToolChoice::Required);
    // README.md written: nothing to tell.
    let script = ScriptedProvider::new()
        .then_call(
            "file_write",
            json!({"path": "./readme.MD", "content": "toolbelt"}),
        )
        .then_text("Done.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run(request)
        .await
        .unwrap();
    assert_eq!(out.answer, "Done.");
    assert_eq!(script.requests().len(), 2);
}

#[tokio::test]
async fn a_small_model_that_read_and_wrote_nothing_is_told_to_write_the_file() {
    // copy-host: the 1.5B model read config.txt and answered "The contents of config.txt
    // have been read."; host.txt was never written.
    let script = ScriptedProvider::new()
        .then_call("file_read", json!({"path": "config.txt"}))
        .then_text("The contents of config.txt have been read.")
        .then_call(
            "file_write",
            json!({"path": "host.txt", "content": "localhost"}),
        )
        .then_text("I wrote localhost to host.txt.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .build()
        .unwrap()
        .run("Read config.txt and write the host name it uses into a new file host.txt.")
        .await
        .unwrap();
    assert_eq!(out.answer, "I wrote localhost to host.txt.");
    let third = &script.requests()[2];
    assert!(
        last_user_text(&third.messages)
            .is_some_and(|t| t.starts_with("(runtime) nothing was saved: no tool wrote host.txt")),
    );
    let offered: Vec<&str> = third.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(offered, ["file_write"]);
}

#[tokio::test]
async fn a_repeat_refused_before_a_reminder_does_not_end_the_run_after_it() {
    // count-rows: a listing refused as a repeat, the answer "3" about a file no call read,
    // the reminder to read it; the model then read it three times.
    let listing = ("list_dir", json!({"path": "data"}));
    let read = ("file_read", json!({"path": "data/users.csv"}));
    let script = ScriptedProvider::new()
        .then_calls([listing.clone()])
        .then_calls([listing.clone()])
        .then_calls([listing])
        .then_text("3")
        .then_calls([read.clone()])
        .then_calls([read.clone()])
        .then_calls([read])
        // The scripted `file_read` answers `hello` for any path.
        .then_text("It says hello.");
    let out = writer(&script, "qwen2.5-coder-1.5b-instruct")
        .tool(list_dir())
        .build()
        .unwrap()
        .run("How many rows of data, not counting the header, are in data/users.csv?")
        .await
        .unwrap();
    assert_eq!(out.answer, "It says hello.");
    let requests = script.requests();
    assert!(
        last_user_text(&requests[4].messages)
            .is_some_and(|t| t.starts_with("(runtime) my request names data/users.csv")),
    );
    // The third read is refused and the answer asked for without tools.
    assert!(requests[7].tools.is_empty());
}
