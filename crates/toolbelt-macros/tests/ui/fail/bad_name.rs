use toolbelt_macros::tool;

/// Dots are not allowed in tool names.
#[tool(name = "file.read")]
async fn file_read() -> &'static str {
    ""
}

fn main() {}
