//! Seed 003's agent as tool: a `researcher` agent registered as a tool that a `writer` agent calls.
//! Needs a model: OPENAI_API_KEY, or OPENAI_BASE_URL + TOOLBELT_MODEL for any OpenAI-compatible server (OpenRouter, Ollama, vLLM).
//! Run: `OPENAI_API_KEY=... cargo run --example agent_as_tool`

use std::process::ExitCode;

use toolbelt::agent::Agent;
use toolbelt::llm::{Provider, ProviderError, provider_from_env};
use toolbelt::{Registry, ToolError, ToolKind, tool};

/// Look up facts about a planet of the solar system.
#[tool(tags("facts"))]
async fn planet_facts(
    /// The planet's English name, e.g. "Mars".
    name: String,
) -> Result<String, ToolError> {
    let facts = match name.to_lowercase().as_str() {
        "mercury" => "Mercury: 0.39 AU from the Sun, no moons, a day lasts 176 Earth days.",
        "venus" => "Venus: 0.72 AU, no moons, hottest surface (about 465 °C).",
        "earth" => "Earth: 1 AU, one moon, the only known life.",
        "mars" => {
            "Mars: 1.52 AU, two moons (Phobos, Deimos), Olympus Mons is the tallest volcano known."
        }
        "jupiter" => "Jupiter: 5.2 AU, 95 known moons, the largest planet.",
        "saturn" => "Saturn: 9.5 AU, 146 known moons, the most visible ring system.",
        "uranus" => "Uranus: 19.2 AU, 28 known moons, rotates on its side.",
        "neptune" => "Neptune: 30.1 AU, 16 known moons, the strongest winds measured.",
        other => {
            return Err(ToolError::invalid_argument(
                "/name",
                format!("`{other}` is not a planet of the solar system"),
            ));
        }
    };
    Ok(facts.to_owned())
}

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let Some(provider) = provider_or_explain()? else {
        return Ok(ExitCode::from(2));
    };
    let researcher = Agent::builder(provider.clone())
        .name("researcher")
        .description("Finds facts about planets; give it one precise question")
        .system_prompt("Answer with facts from your tools only, in one or two sentences.")
        .tool(PlanetFactsTool)
        .build()?;
    // The researcher joins the registry like any tool: kind `agent`, arguments {input, context?}.
    let registry = Registry::new();
    registry.add_tool(researcher.as_tool().with_max_depth(2))?;
    let agents = registry.select("agents")?;
    let spec = agents.get("researcher").map(|t| t.spec().kind);
    eprintln!("registered: {:?} ({spec:?})", agents.names());
    assert_eq!(spec, Some(ToolKind::Agent));

    let writer = Agent::builder(provider)
        .name("writer")
        .system_prompt(
            "You write short, friendly paragraphs. Ask the researcher for every fact you use.",
        )
        .tools(agents)
        .build()?;
    let out = writer
        .run("Write three sentences comparing Mars and Jupiter for a ten-year-old.")
        .await?;
    for result in out.transcript.tool_results() {
        eprintln!(
            "[{} asked {} → {}]",
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
