use toolbelt_macros::tool;

/// Misspelt key.
#[tool(nmae = "ping")]
async fn ping() -> &'static str {
    "pong"
}

fn main() {}
