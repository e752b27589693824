//! Registry and executor benchmarks: `cargo bench -p toolbelt-core --bench core`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolbelt_core::{Executor, FnTool, Registry, ToolCall, ToolContext, ToolHandle};

const SIZES: [usize; 3] = [10, 1_000, 10_000];

/// A no-op tool `t{i}` in group `g{i % 100}` with a one-integer schema.
fn tool(i: usize) -> ToolHandle {
    FnTool::builder(format!("t{i}"))
        .description("no-op")
        .tag(format!("g{}", i % 100))
        .tag(if i.is_multiple_of(2) { "even" } else { "odd" })
        .parameters(
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
        )
        .handler(|_args, _ctx| async { "" })
        .unwrap()
}

fn registry(n: usize) -> Registry {
    let r = Registry::new();
    r.add_tools((0..n).map(tool)).unwrap();
    r
}

fn lookup(c: &mut Criterion) {
    let mut g = c.benchmark_group("registry/get");
    for n in SIZES {
        let r = registry(n);
        let name = format!("t{}", n / 2);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| r.get(black_box(&name)))
        });
    }
}

fn select(c: &mut Criterion) {
    let mut g = c.benchmark_group("registry/select");
    for n in SIZES {
        let r = registry(n);
        // Two of 100 groups: 2% of the tools.
        g.bench_with_input(BenchmarkId::new("two_small_groups", n), &n, |b, _| {
            b.iter(|| r.select(black_box("g1,g2")).unwrap())
        });
        // Two groups covering every tool, minus one: the worst case for a selection.
        g.bench_with_input(
            BenchmarkId::new("two_half_groups_minus_one", n),
            &n,
            |b, _| b.iter(|| r.select(black_box("even,odd,-t3")).unwrap()),
        );
    }
}

fn register(c: &mut Criterion) {
    let mut g = c.benchmark_group("registry/register_unregister");
    for n in SIZES {
        let r = registry(n);
        let extra = tool(n + 1);
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                r.add_tool(extra.clone()).unwrap();
                r.remove(extra.name().as_str()).unwrap();
            })
        });
    }
}

fn execute(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("executor/validated_noop_call");
    for n in SIZES {
        let tools = registry(n).all();
        let exec = Executor::new();
        let ctx = ToolContext::new();
        let call = ToolCall::new("1", format!("t{}", n / 2), json!({"x": 1}));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| rt.block_on(exec.execute(&tools, call.clone(), &ctx)))
        });
    }
    g.finish();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let tools = registry(1_000).all();
    let exec = Executor::builder().concurrency(100).build();
    let ctx = ToolContext::new();
    let calls: Vec<ToolCall> = (0..100)
        .map(|i| ToolCall::new(i.to_string(), format!("t{i}"), json!({"x": i})))
        .collect();
    c.bench_function("executor/batch_100_noop_calls", |b| {
        b.iter(|| rt.block_on(exec.execute_batch(&tools, calls.clone(), &ctx)))
    });
}

criterion_group!(benches, lookup, select, register, execute);
criterion_main!(benches);
