use toolbelt_macros::tool;

/// Unknown overflow mode.
#[tool(max_output = 1024, overflow = "drop")]
async fn big() {}

fn main() {}
