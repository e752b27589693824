use toolbelt_core::ToolContext;
use toolbelt_macros::tool;

/// Takes the context twice.
#[tool]
async fn twice(a: &ToolContext, b: ToolContext) {
    let _ = (a, b);
}

fn main() {}
