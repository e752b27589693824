use toolbelt_macros::tool;

/// Commas separate selections, so they are not allowed in tool names.
#[tool(name = "file,read")]
async fn file_read() -> &'static str {
    ""
}

fn main() {}
