use toolbelt_macros::tool;

#[tool(tags("net"))]
async fn ping() -> &'static str {
    "pong"
}

fn main() {}
