//! Conversations that continue across runs.

use pretty_assertions::assert_eq;
use serde_json::json;
use toolbelt_agent::testing::ScriptedProvider;
use toolbelt_agent::{Conversation, Session};
use toolbelt_llm::Message;

use crate::support::math_agent;

#[tokio::test]
async fn a_second_run_sees_the_first() {
    let script = ScriptedProvider::new()
        .then_text("Hello Ada.")
        .then_text("You are Ada.");
    let agent = math_agent(&script).build().unwrap();
    let mut chat = agent.session();
    chat.run("I am Ada.").await.unwrap();
    let out = chat.run("Who am I?").await.unwrap();
    let expected = [
        Message::system("Use the tools for arithmetic."),
        Message::user("I am Ada."),
        Message::assistant_tool_calls(Some("Hello Ada.".into()), vec![]),
        Message::user("Who am I?"),
    ];
    assert_eq!(script.requests()[1].messages, expected);
    assert_eq!(out.transcript.history_len, 2);
    assert_eq!(out.transcript.new_messages().len(), 2);
    assert_eq!(chat.conversation().messages.len(), 4);
}

#[tokio::test]
async fn a_stored_conversation_resumes() {
    let script = ScriptedProvider::new()
        .then_call("add", json!({"a": 1, "b": 2}))
        .then_text("3");
    let agent = math_agent(&script).build().unwrap();
    let mut chat = agent.session();
    chat.run("1+2").await.unwrap();
    let stored: Conversation =
        serde_json::from_str(&serde_json::to_string(chat.conversation()).unwrap()).unwrap();
    assert_eq!(&stored, chat.conversation());
    let script2 = ScriptedProvider::new().then_text("yes");
    let mut resumed = Session::resume(math_agent(&script2).build().unwrap(), stored);
    resumed.run("sure?").await.unwrap();
    assert_eq!(script2.requests()[0].messages.len(), 1 + 4 + 1);
}

#[tokio::test]
async fn a_failed_run_still_leaves_a_valid_conversation() {
    let script = ScriptedProvider::new().then_call("add", json!({"a": 1, "b": 2}));
    let agent = math_agent(&script).max_iterations(1).build().unwrap();
    let mut chat = agent.session();
    chat.run("1+2").await.unwrap_err();
    let last = chat.conversation().messages.last().unwrap().clone();
    assert!(
        matches!(last, Message::Tool { is_error: true, .. }),
        "{last:?}"
    );
}
