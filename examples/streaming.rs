//! Seed 004's streaming example: `run_stream` prints the answer as it arrives and shows each tool call.
//! Needs a model: OPENAI_API_KEY, or OPENAI_BASE_URL + TOOLBELT_MODEL for any OpenAI-compatible server (OpenRouter, Ollama, vLLM).
//! Run: `OPENAI_API_KEY=... cargo run --example streaming`

use std::io::Write;
use std::process::ExitCode;

use toolbelt::agent::{Agent, AgentEvent};
use toolbelt::llm::{Provider, ProviderError, provider_from_env};
use toolbelt::{ToolError, tool};

/// Add two numbers.
#[tool]
async fn add(
    /// The first number.
    a: f64,
    /// The second number.
    b: f64,
) -> Result<f64, ToolError> {
    Ok(a + b)
}

/// Divide a by b.
#[tool]
async fn divide(
    /// The dividend.
    a: f64,
    /// The divisor (not zero).
    b: f64,
) -> Result<f64, ToolError> {
    if b == 0.0 {
        return Err(ToolError::invalid_argument(
            "/b",
            "the divisor must not be zero",
        ));
    }
    Ok(a / b)
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let Some(provider) = provider_or_explain()? else {
        return Ok(ExitCode::from(2));
    };
    let agent = Agent::builder(provider)
        .system_prompt("Use the tools for every arithmetic step.")
        .tool(AddTool)
        .tool(DivideTool)
        .build()?;
    let mut stream = agent.run_stream("Calculate 100 / 4 and then add 25");
    let mut stdout = std::io::stdout();
    while let Some(event) = stream.next_event().await {
        match event {
            AgentEvent::TextDelta(text) => {
                print!("{text}");
                stdout.flush()?;
            }
            AgentEvent::ToolCallStarted(call) => {
                eprintln!("\n[calling {} {}]", call.name, call.arguments)
            }
            AgentEvent::ToolCallFinished(result) => {
                eprintln!("[{} → {}]", result.call.name, result.to_model_text())
            }
            AgentEvent::Finished(out) => println!("\n({} tokens)", out.usage().total()),
            AgentEvent::Failed(error) => {
                eprintln!("\nerror: {error}");
                return Ok(ExitCode::FAILURE);
            }
            _ => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The provider the environment describes, or `None` after saying what to set.
fn provider_or_explain() -> anyhow::Result<Option<Provider>> {
    match provider_from_env() {
        Ok(provider) => Ok(Some(provider)),
        Err(ProviderError::Config(what)) => {
            eprintln!("This example needs a model provider: {what}.");
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}
