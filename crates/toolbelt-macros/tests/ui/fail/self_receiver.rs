use toolbelt_macros::tool;

struct Counter;

impl Counter {
    /// Has a receiver.
    #[tool]
    async fn count(&self) -> u32 {
        1
    }
}

fn main() {}
