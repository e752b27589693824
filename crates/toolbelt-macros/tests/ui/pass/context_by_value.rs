use toolbelt_core::ToolContext;
use toolbelt_macros::tool;

/// Reports the nesting depth; the context comes last and by value.
#[tool]
async fn depth(label: String, ctx: ToolContext) -> String {
    format!("{label}: {}", ctx.depth())
}

/// Takes the context through a full path.
#[tool]
async fn depth_by_path(ctx: &toolbelt_core::ToolContext) -> u32 {
    ctx.depth()
}

fn main() {
    let _ = (DepthTool, DepthByPathTool);
}
