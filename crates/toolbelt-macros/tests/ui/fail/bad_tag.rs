use toolbelt_macros::tool;

/// Spaces are not allowed in tags.
#[tool(tags("file", "disk io"))]
async fn file_read() -> &'static str {
    ""
}

fn main() {}
