//! Call overhead of a `#[tool]` against `FnTool::typed` and a hand-written `Tool`.
//!
//! Run: `cargo bench -p toolbelt-macros --bench call`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolbelt_core::{
    FnTool, Tool, ToolContext, ToolError, ToolHandle, ToolOutput, ToolSpec, parse_args, schema_for,
};
use toolbelt_macros::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// Adds two integers.
#[tool(discover = false)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

struct HandWritten;

impl Tool for HandWritten {
    fn spec(&self) -> ToolSpec {
        ToolSpec::builder("add")
            .description("Adds two integers.")
            .parameters(schema_for::<AddArgs>())
            .build_unchecked()
    }

    async fn call(&self, args: Value, _ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let args: AddArgs = parse_args(args)?;
        Ok(ToolOutput::json(json!(args.a + args.b)))
    }
}

fn bench_calls(c: &mut Criterion) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    let handles = [
        ("macro", ToolHandle::new(AddTool)),
        ("hand_written", ToolHandle::new(HandWritten)),
        (
            "fn_tool_typed",
            FnTool::builder("add")
                .description("Adds two integers.")
                .typed(|x: AddArgs, _ctx| async move { x.a + x.b }),
        ),
    ];
    let mut group = c.benchmark_group("call");
    for (label, handle) in handles {
        let Ok(handle) = handle else { continue };
        group.bench_function(label, |b| {
            b.iter(|| {
                let out =
                    runtime.block_on(handle.call(json!({"a": 2, "b": 3}), ToolContext::new()));
                black_box(out)
            });
        });
    }
    group.finish();
    c.bench_function("spec/macro", |b| b.iter(|| black_box(AddTool.spec())));
}

criterion_group!(benches, bench_calls);
criterion_main!(benches);
