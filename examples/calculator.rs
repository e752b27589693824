//! Seed 004's first example: a calculator tool and `agent.run("What is 15 * 23?")`.
//! Needs a model: OPENAI_API_KEY, or OPENAI_BASE_URL + TOOLBELT_MODEL for any OpenAI-compatible server (OpenRouter, Ollama, vLLM).
//! Run: `OPENAI_BASE_URL=http://localhost:11434/v1 TOOLBELT_MODEL=qwen2.5 cargo run --example calculator`

use std::process::ExitCode;

use serde::Deserialize;
use serde_json::Value;
use toolbelt::agent::Agent;
use toolbelt::llm::{Provider, ProviderError, ToolChoice, provider_from_env};
use toolbelt::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec, parse_args};

/// What the calculator takes.
#[derive(Deserialize, schemars::JsonSchema)]
struct Args {
    /// The left operand.
    a: f64,
    /// The right operand.
    b: f64,
    /// What to do with them.
    operation: Operation,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Operation {
    Add,
    Sub,
    Mul,
    Div,
}

/// A hand-written tool, as in the seed: a spec and an async call.
struct Calculator;

impl Tool for Calculator {
    fn spec(&self) -> ToolSpec {
        ToolSpec::builder("calculator")
            .description("Perform arithmetic operations: add, sub, mul or div of a and b")
            .parameters_from::<Args>()
            .build_unchecked()
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Args { a, b, operation } = parse_args(args)?;
        let result = match operation {
            Operation::Add => a + b,
            Operation::Sub => a - b,
            Operation::Mul => a * b,
            Operation::Div if b == 0.0 => return Err(ToolError::failed("division by zero")),
            Operation::Div => a / b,
        };
        Ok(ToolOutput::text(result.to_string()))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let Some(provider) = provider_or_explain()? else {
        return Ok(ExitCode::from(2));
    };
    let agent = Agent::builder(provider)
        .system_prompt("You are a helpful assistant with access to tools.")
        .tool_choice(ToolChoice::Auto)
        .tool(Calculator)
        .build()?;
    let out = agent.run("What is 15 * 23?").await?;
    for result in out.transcript.tool_results() {
        eprintln!(
            "[{} {} → {}]",
            result.call.name,
            result.call.arguments,
            result.to_model_text()
        );
    }
    println!("{}", out.answer);
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
