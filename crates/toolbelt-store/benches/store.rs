//! Store benchmarks, SQLite and Postgres side by side (Postgres when `TOOLBELT_TEST_PG_URL` is
//! set): start-up sync of 1,000 compiled tools (empty database / nothing changed), tool updates,
//! batched run-log writes, and the time until a change is visible in a second instance.
//!
//! `cargo bench -p toolbelt-store --bench store -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::time::{Duration, Instant};
use toolbelt_store::Revision;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;
use toolbelt_core::{FnTool, ToolHandle, ToolSpec};
use toolbelt_store::{
    LiveRegistry, LogEntry, RunLogConfig, Store, StoreOptions, ToolDef, ToolSource,
};

fn spec(i: usize, description: &str) -> ToolSpec {
    ToolSpec::builder(format!("tool_{i:04}"))
        .description(format!("{description} {i}"))
        .parameters(
            json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        )
        .tag(format!("group_{}", i % 20))
        .build()
        .unwrap()
}

/// A fresh store: a new SQLite file or a new Postgres schema.
struct Fresh {
    engine: &'static str,
    url: String,
    options: StoreOptions,
    _dir: Option<tempfile::TempDir>,
}

fn engines() -> Vec<&'static str> {
    let mut engines = vec!["sqlite"];
    if std::env::var("TOOLBELT_TEST_PG_URL").is_ok() {
        engines.push("postgres");
    }
    engines
}

impl Fresh {
    fn new(engine: &'static str) -> Self {
        match engine {
            "sqlite" => {
                let dir = tempfile::tempdir().unwrap();
                Self {
                    engine,
                    url: format!("sqlite://{}", dir.path().join("b.db").display()),
                    options: StoreOptions::default(),
                    _dir: Some(dir),
                }
            }
            _ => Self {
                engine,
                url: std::env::var("TOOLBELT_TEST_PG_URL").unwrap(),
                options: StoreOptions::default()
                    .with_pg_schema(format!("bench_{}", uuid::Uuid::now_v7().simple())),
                _dir: None,
            },
        }
    }

    async fn open(&self) -> Store {
        Store::open_with(&self.url, self.options.clone())
            .await
            .unwrap()
    }

    async fn drop_schema(&self, store: &Store) {
        if let Some(schema) = &self.options.pg_schema {
            let sql = format!("DROP SCHEMA \"{schema}\" CASCADE");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(store.pool())
                .await
                .unwrap();
        }
        let _ = self.engine;
    }
}

fn sync(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let specs: Vec<ToolSpec> = (0..1000).map(|i| spec(i, "v1")).collect();
    let mut group = c.benchmark_group("sync_1000_tools");
    group.sample_size(10);
    for engine in engines() {
        group.bench_function(BenchmarkId::new("empty_db", engine), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let specs = specs.clone();
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let fresh = Fresh::new(engine);
                        let store = fresh.open().await;
                        let start = Instant::now();
                        store.tools().sync_compiled(&specs, "bench").await.unwrap();
                        total += start.elapsed();
                        fresh.drop_schema(&store).await;
                        store.close().await;
                    }
                    total
                }
            });
        });
        let fresh = Fresh::new(engine);
        let store = rt.block_on(fresh.open());
        rt.block_on(store.tools().sync_compiled(&specs, "bench"))
            .unwrap();
        group.bench_function(BenchmarkId::new("unchanged", engine), |b| {
            b.to_async(&rt)
                .iter(|| async { store.tools().sync_compiled(&specs, "bench").await.unwrap() });
        });
        rt.block_on(fresh.drop_schema(&store));
    }
    group.finish();
}

fn updates(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("tool_update");
    group.throughput(Throughput::Elements(1));
    for engine in engines() {
        let fresh = Fresh::new(engine);
        let store = rt.block_on(fresh.open());
        let def = |n: u64| {
            ToolDef::new(spec(1, &format!("v{n}")), ToolSource::Declarative)
                .with_definition(json!({"http": {"url": "http://x"}}))
        };
        let mut revision = rt
            .block_on(store.tools().create(&def(0), "bench", None))
            .unwrap()
            .revision;
        let mut n = 0;
        group.bench_function(BenchmarkId::from_parameter(engine), |b| {
            b.to_async(&rt).iter(|| {
                n += 1;
                let d = def(n);
                let store = &store;
                let expected = revision;
                revision += 1;
                async move {
                    store
                        .tools()
                        .update(&d, Revision::from(expected), "bench", None)
                        .await
                        .unwrap()
                }
            });
        });
        // Eight writers at once, each updating its own tool: what a server with several
        // clients sees (Postgres commits them together instead of one WAL flush each).
        const WRITERS: usize = 8;
        let defs = |n: u64| -> Vec<ToolDef> {
            (0..WRITERS)
                .map(|w| {
                    ToolDef::new(spec(100 + w, &format!("v{n}")), ToolSource::Declarative)
                        .with_definition(json!({"http": {"url": "http://x"}}))
                })
                .collect()
        };
        let mut revisions: Vec<i64> = rt.block_on(async {
            let mut out = Vec::new();
            for d in defs(0) {
                out.push(
                    store
                        .tools()
                        .create(&d, "bench", None)
                        .await
                        .unwrap()
                        .revision,
                );
            }
            out
        });
        let mut round = 0;
        group.throughput(Throughput::Elements(WRITERS as u64));
        group.bench_function(BenchmarkId::new("8_writers", engine), |b| {
            b.to_async(&rt).iter(|| {
                round += 1;
                let batch = defs(round);
                let expected = revisions.clone();
                for r in &mut revisions {
                    *r += 1;
                }
                let store = store.clone();
                async move {
                    let tasks: Vec<_> = batch
                        .into_iter()
                        .zip(expected)
                        .map(|(d, rev)| {
                            let store = store.clone();
                            tokio::spawn(async move {
                                store
                                    .tools()
                                    .update(&d, Revision::from(rev), "bench", None)
                                    .await
                                    .unwrap()
                            })
                        })
                        .collect();
                    for t in tasks {
                        t.await.unwrap();
                    }
                }
            });
        });
        group.throughput(Throughput::Elements(1));
        rt.block_on(fresh.drop_schema(&store));
    }
    group.finish();
}

fn run_log(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("run_log_10k_entries");
    group.throughput(Throughput::Elements(10_000));
    group.sample_size(10);
    for engine in engines() {
        let fresh = Fresh::new(engine);
        let store = rt.block_on(fresh.open());
        let (writer, _task) =
            rt.block_on(async { store.run_log().writer(RunLogConfig::default()) });
        group.bench_function(BenchmarkId::from_parameter(engine), |b| {
            b.to_async(&rt).iter(|| async {
                for i in 0..10_000 {
                    let entry = LogEntry::tool_call("search", i)
                        .with_run("r")
                        .with_agent("a")
                        .with_arguments(json!({"q": "rust"}));
                    writer.log(entry).await.unwrap();
                }
                writer.flush().await.unwrap();
            });
        });
        rt.block_on(fresh.drop_schema(&store));
    }
    group.finish();
}

fn second_instance(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("change_visible_in_second_instance");
    group.sample_size(10);
    for engine in engines() {
        let fresh = Fresh::new(engine);
        let (writer, live, _watch) = rt.block_on(async {
            let writer = fresh.open().await;
            let reader = fresh.open().await;
            let live = LiveRegistry::builder(reader)
                .factory(
                    ToolSource::Declarative,
                    |spec: &ToolSpec, _d: Option<&serde_json::Value>| {
                        Ok(
                            ToolHandle::new(FnTool::new(spec.clone(), |_a, _c| async { "ok" }))
                                .unwrap(),
                        )
                    },
                )
                .build()
                .await
                .unwrap();
            let watch = live.watch(Duration::from_millis(20));
            (writer, live, watch)
        });
        let mut n = 0_usize;
        group.bench_function(BenchmarkId::from_parameter(engine), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let start_n = n;
                n += usize::try_from(iters).unwrap();
                let (writer, live) = (&writer, &live);
                async move {
                    let mut total = Duration::ZERO;
                    for i in 0..iters {
                        let name = format!("tool_{:04}", start_n + usize::try_from(i).unwrap());
                        let def = ToolDef::new(
                            spec(start_n + usize::try_from(i).unwrap(), "live"),
                            ToolSource::Declarative,
                        )
                        .with_definition(json!({}));
                        let start = Instant::now();
                        writer.tools().create(&def, "bench", None).await.unwrap();
                        while !live.registry().contains(&name) {
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                        total += start.elapsed();
                    }
                    total
                }
            });
        });
        rt.block_on(fresh.drop_schema(&writer));
    }
    group.finish();
}

criterion_group!(benches, sync, updates, run_log, second_instance);
criterion_main!(benches);
