//! [`UseEncoder`]: USE-multilingual v3 (DAN + CNN over SentencePiece pieces).

use std::path::{Path, PathBuf};

use candle_core::{DType, Tensor};
use pulp::Arch;
use rayon::prelude::*;

use crate::cache::{fingerprint, write_atomically};
use crate::kernel::{Packed, Threads};
use crate::ops::{add, add_rows, layer_norm, token_groups};

use crate::error::{EmbedError, model_file};
use crate::sentencepiece::SentencePiece;

/// Dimensions of a piece embedding and of the output vector.
const EMB: usize = 512;
/// Width of each CNN branch.
const CNN: usize = 256;
/// Width of the hidden layers of the output network.
const HIDDEN: usize = 320;
/// The embedding table is stored as this many interleaved blocks: piece `i` is row
/// `i / BLOCKS` of block `i % BLOCKS`, dequantised with that block's scale and offset.
const BLOCKS: usize = 17;
/// Rows per block.
const BLOCK_ROWS: usize = 7530;
/// (n-gram order, left context) of the three CNN branches.
const ORDERS: [(usize, usize); 3] = [(2, 0), (3, 1), (5, 2)];
/// Features per token: the piece embedding and the three branches.
const FEATS: usize = EMB + ORDERS.len() * CNN;
/// Pieces per text kept by default (the closing `</s>` stays).
const DEFAULT_MAX_TOKENS: usize = 256;
/// Tokens run through the matrix products at once.
const TOKEN_BUDGET: usize = 1024;
/// Texts from which tokenising is split over rayon's threads.
const PARALLEL_TEXTS: usize = 16;

/// One CNN branch: two n-gram convolutions with residual connections.
struct Branch {
    order: usize,
    left: usize,
    w1: Packed,
    b1: Vec<f32>,
    w2: Packed,
    b2: Vec<f32>,
}

/// Universal Sentence Encoder multilingual v3, in-process on the CPU.
///
/// Each text becomes SentencePiece pieces between `<s>` and `</s>`; each piece
/// an embedding (dequantised from 8 bits); a projection and layer norm feed
/// three residual CNN branches over bigrams, trigrams and 5-grams; the piece
/// embeddings and branch outputs are layer-normalised, summed over the text,
/// projected, scaled by 1/√length, and a small tanh network gives the
/// L2-normalised 512-dimensional vector. Texts are independent: batching does
/// not change a vector.
pub struct UseEncoder {
    sp: SentencePiece,
    id: String,
    /// The quantised embedding blocks, `BLOCK_ROWS × EMB` each.
    table: Table,
    scale: Vec<f32>,
    lo: Vec<f32>,
    proj_w: Packed,
    proj_b: Vec<f32>,
    proj_ln_g: Vec<f32>,
    proj_ln_b: Vec<f32>,
    branches: Vec<Branch>,
    ln_g: Vec<f32>,
    ln_b: Vec<f32>,
    cnn_w: Packed,
    cnn_b: Vec<f32>,
    d0: Packed,
    d1: Packed,
    d2: Packed,
    d3: Packed,
    p1: Packed,
    p3: Packed,
    eps: f32,
    max_tokens: usize,
    /// The SIMD instructions this CPU has.
    arch: Arch,
}

impl std::fmt::Debug for UseEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UseEncoder")
            .field("model", &self.id)
            .field("max_tokens", &self.max_tokens)
            .finish_non_exhaustive()
    }
}

/// The quantised embedding table: in memory, or read a row at a time from the weights
/// cache (65 MB the process then does not hold; a query reads one row per piece).
enum Table {
    Memory(Vec<Vec<u8>>),
    #[cfg(unix)]
    File {
        file: std::fs::File,
        at: u64,
    },
}

impl Table {
    /// Row `r` of `block` into `out` (`EMB` bytes).
    fn row(&self, block: usize, r: usize, out: &mut [u8]) -> Result<(), String> {
        match self {
            Self::Memory(blocks) => {
                let src = blocks[block]
                    .get(r * EMB..(r + 1) * EMB)
                    .ok_or_else(|| format!("row {r} of block {block} is out of range"))?;
                out.copy_from_slice(src);
                Ok(())
            }
            #[cfg(unix)]
            Self::File { file, at } => {
                use std::os::unix::fs::FileExt;
                if r >= BLOCK_ROWS {
                    return Err(format!("row {r} of block {block} is out of range"));
                }
                let offset = *at + ((block * BLOCK_ROWS + r) * EMB) as u64;
                file.read_exact_at(out, offset)
                    .map_err(|e| format!("reading the weights cache: {e}"))
            }
        }
    }
}

/// The weights cache's first bytes (the format's version is the last digit).
const CACHE_MAGIC: &[u8; 8] = b"TBUSEv1\n";

/// Reads the little-endian pieces of the cache's head.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn u64(&mut self) -> Option<u64> {
        let (head, rest) = self.bytes.split_first_chunk::<8>()?;
        self.bytes = rest;
        Some(u64::from_le_bytes(*head))
    }

    fn floats(&mut self) -> Option<Vec<f32>> {
        let n = usize::try_from(self.u64()?).ok()?;
        let len = n.checked_mul(4)?;
        if self.bytes.len() < len {
            return None;
        }
        let (data, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Some(
            data.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }

    fn vector(&mut self, len: usize) -> Option<Vec<f32>> {
        self.floats().filter(|v| v.len() == len)
    }

    fn matrix(&mut self, k: usize, cols: usize) -> Option<Packed> {
        let (kk, cc) = (self.u64()?, self.u64()?);
        if kk != k as u64 || cc != cols as u64 {
            return None;
        }
        Packed::from_parts(k, cols, self.floats()?)
    }
}

fn put_floats(out: &mut Vec<u8>, v: &[f32]) {
    out.extend_from_slice(&(v.len() as u64).to_le_bytes());
    for x in v {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn put_matrix(out: &mut Vec<u8>, m: &Packed) {
    let (k, cols, panels) = m.parts();
    out.extend_from_slice(&(k as u64).to_le_bytes());
    out.extend_from_slice(&(cols as u64).to_le_bytes());
    put_floats(out, panels);
}

/// The arrays of `weights.npz`, by name.
struct Arrays {
    path: PathBuf,
    named: Vec<(String, Tensor)>,
}

impl Arrays {
    fn take(&mut self, name: &str, shape: &[usize]) -> Result<Tensor, EmbedError> {
        let at = self
            .named
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| EmbedError::Shape {
                name: name.to_owned(),
                expected: shape.to_vec(),
                found: Vec::new(),
            })?;
        let tensor = self.named.swap_remove(at).1;
        if tensor.dims() != shape {
            return Err(EmbedError::Shape {
                name: name.to_owned(),
                expected: shape.to_vec(),
                found: tensor.dims().to_vec(),
            });
        }
        Ok(tensor)
    }

    fn tensor(&mut self, name: &str, rows: usize, cols: usize) -> Result<Tensor, EmbedError> {
        let t = self.take(name, &[rows, cols])?;
        t.to_dtype(DType::F32)
            .map_err(|source| self.weights(source))
    }

    fn matrix(&mut self, name: &str, rows: usize, cols: usize) -> Result<Packed, EmbedError> {
        let t = self.tensor(name, rows, cols)?;
        packed(&t).map_err(|source| self.weights(source))
    }

    fn vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>, EmbedError> {
        let t = self.take(name, &[len])?;
        t.to_dtype(DType::F32)
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|source| self.weights(source))
    }

    fn weights(&self, source: candle_core::Error) -> EmbedError {
        EmbedError::Weights {
            path: self.path.clone(),
            source,
        }
    }
}

impl UseEncoder {
    /// Loads the model in `dir` through a weights cache in `cache_dir`: the first load
    /// inflates `weights.npz` (about a second) and writes the weights there unpacked
    /// (about 80 MB); later loads read them back in a few tens of milliseconds, and the
    /// 65 MB embedding table is then read a row at a time from that file instead of being
    /// held in memory. A cache that cannot be written or read is passed over: the model
    /// then loads from `weights.npz` as [`UseEncoder::from_dir`] does.
    ///
    /// # Errors
    /// As [`UseEncoder::from_dir`].
    pub fn from_dir_cached(
        dir: impl AsRef<Path>,
        cache_dir: impl AsRef<Path>,
    ) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let weights = dir.join("weights.npz");
        let Some(print) = fingerprint(&weights) else {
            return Self::from_dir(dir);
        };
        let folder = dir
            .file_name()
            .map_or_else(|| "model".to_owned(), |n| n.to_string_lossy().into_owned());
        let path = cache_dir
            .as_ref()
            .join(format!("use-m3-{folder}-{print:016x}.weights"));
        if let Some(encoder) = Self::read_cache(dir, &path, print)? {
            return Ok(encoder);
        }
        let encoder = Self::from_dir(dir)?;
        if encoder.write_cache(&path, print).is_err() {
            return Ok(encoder);
        }
        // Read back, so the table is served from the file and its memory given back.
        Ok(Self::read_cache(dir, &path, print)?.unwrap_or(encoder))
    }

    /// The model from the cache at `path`, or `None` when there is none for these weights.
    fn read_cache(dir: &Path, path: &Path, print: u64) -> Result<Option<Self>, EmbedError> {
        use std::io::Read;
        let Ok(mut file) = std::fs::File::open(path) else {
            return Ok(None);
        };
        let mut head = [0u8; 24];
        if file.read_exact(&mut head).is_err()
            || &head[..8] != CACHE_MAGIC
            || head[8..16] != print.to_le_bytes()
        {
            return Ok(None);
        }
        let table_at = u64::from_le_bytes(head[16..24].try_into().unwrap_or([0; 8]));
        let table_len = (BLOCKS * BLOCK_ROWS * EMB) as u64;
        let file_len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let Some(body_len) = table_at
            .checked_sub(24)
            .filter(|_| file_len == table_at + table_len)
            .and_then(|n| usize::try_from(n).ok())
        else {
            return Ok(None);
        };
        let mut body = vec![0u8; body_len];
        if file.read_exact(&mut body).is_err() {
            return Ok(None);
        }
        let sp = SentencePiece::from_file(&dir.join("sp.model"))?;
        let mut r = Reader { bytes: &body };
        let parsed = (|| {
            let eps = f32::from_bits(u32::try_from(r.u64()?).ok()?);
            let scale = r.vector(BLOCKS)?;
            let lo = r.vector(BLOCKS)?;
            let proj_w = r.matrix(EMB, ORDERS.len() * CNN)?;
            let proj_b = r.vector(ORDERS.len() * CNN)?;
            let proj_ln_g = r.vector(ORDERS.len() * CNN)?;
            let proj_ln_b = r.vector(ORDERS.len() * CNN)?;
            let mut branches = Vec::new();
            for (order, left) in ORDERS {
                branches.push(Branch {
                    order,
                    left,
                    w1: r.matrix(order * CNN, CNN)?,
                    b1: r.vector(CNN)?,
                    w2: r.matrix(order * CNN, CNN)?,
                    b2: r.vector(CNN)?,
                });
            }
            let encoder = Self {
                sp,
                id: model_id(dir),
                scale,
                lo,
                proj_w,
                proj_b,
                proj_ln_g,
                proj_ln_b,
                branches,
                ln_g: r.vector(FEATS)?,
                ln_b: r.vector(FEATS)?,
                cnn_w: r.matrix(FEATS, EMB)?,
                cnn_b: r.vector(EMB)?,
                d0: r.matrix(EMB, HIDDEN)?,
                d1: r.matrix(HIDDEN, HIDDEN)?,
                d2: r.matrix(HIDDEN, EMB)?,
                d3: r.matrix(EMB, EMB)?,
                p1: r.matrix(EMB, HIDDEN)?,
                p3: r.matrix(HIDDEN, EMB)?,
                eps,
                max_tokens: DEFAULT_MAX_TOKENS,
                arch: Arch::new(),
                table: Table::Memory(Vec::new()),
            };
            r.bytes.is_empty().then_some(encoder)
        })();
        let Some(mut encoder) = parsed else {
            return Ok(None);
        };
        encoder.table = file_table(file, table_at, table_len)?;
        Ok(Some(encoder))
    }

    /// Writes the weights to `path` (through a temporary file renamed into place).
    fn write_cache(&self, path: &Path, print: u64) -> std::io::Result<()> {
        use std::io::Write;
        let Table::Memory(blocks) = &self.table else {
            return Ok(());
        };
        let mut body = Vec::new();
        body.extend_from_slice(&u64::from(self.eps.to_bits()).to_le_bytes());
        put_floats(&mut body, &self.scale);
        put_floats(&mut body, &self.lo);
        put_matrix(&mut body, &self.proj_w);
        put_floats(&mut body, &self.proj_b);
        put_floats(&mut body, &self.proj_ln_g);
        put_floats(&mut body, &self.proj_ln_b);
        for b in &self.branches {
            put_matrix(&mut body, &b.w1);
            put_floats(&mut body, &b.b1);
            put_matrix(&mut body, &b.w2);
            put_floats(&mut body, &b.b2);
        }
        put_floats(&mut body, &self.ln_g);
        put_floats(&mut body, &self.ln_b);
        put_matrix(&mut body, &self.cnn_w);
        put_floats(&mut body, &self.cnn_b);
        for m in [&self.d0, &self.d1, &self.d2, &self.d3, &self.p1, &self.p3] {
            put_matrix(&mut body, m);
        }
        write_atomically(path, |out| {
            out.write_all(CACHE_MAGIC)?;
            out.write_all(&print.to_le_bytes())?;
            out.write_all(&(24 + body.len() as u64).to_le_bytes())?;
            out.write_all(&body)?;
            for block in blocks {
                out.write_all(block)?;
            }
            Ok(())
        })
    }

    /// Loads `weights.npz` and `sp.model` from `dir` (about a second: the weights are
    /// inflated; see [`UseEncoder::from_dir_cached`]).
    ///
    /// # Errors
    /// [`EmbedError::MissingFile`] naming the first missing file, or the error of the file
    /// that could not be read or does not fit the architecture.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let file = |name: &str| model_file(dir, name);
        let (weights, sp_path) = (file("weights.npz")?, file("sp.model")?);
        let sp = SentencePiece::from_file(&sp_path)?;
        let mut names: Vec<String> = (1..=BLOCKS).map(|i| format!("q{i}")).collect();
        for n in [2, 3, 5] {
            for p in ["proj", "proj_b", "ln_g", "ln_b", "w1_", "b1_", "w2_", "b2_"] {
                names.push(format!("{p}{n}"));
            }
        }
        for n in [
            "scale", "lo", "ln_g", "ln_b", "cnn_W", "cnn_b", "d0", "d1", "d2", "d3", "p1", "p3",
            "eps",
        ] {
            names.push(n.to_owned());
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let tensors =
            Tensor::read_npz_by_name(&weights, &refs).map_err(|source| EmbedError::Weights {
                path: weights.clone(),
                source,
            })?;
        let mut arrays = Arrays {
            path: weights.clone(),
            named: names.into_iter().zip(tensors).collect(),
        };
        let mut table = Vec::with_capacity(BLOCKS);
        for i in 1..=BLOCKS {
            let block = arrays.take(&format!("q{i}"), &[BLOCK_ROWS, EMB])?;
            let bytes = block
                .flatten_all()
                .and_then(|t| t.to_vec1::<u8>())
                .map_err(|source| arrays.weights(source))?;
            table.push(bytes);
        }
        let table = Table::Memory(table);
        let mut proj = Vec::new();
        let (mut proj_b, mut proj_ln_g, mut proj_ln_b) = (Vec::new(), Vec::new(), Vec::new());
        let mut branches = Vec::new();
        for (order, left) in ORDERS {
            proj.push(arrays.tensor(&format!("proj{}", order), EMB, CNN)?);
            proj_b.extend(arrays.vector(&format!("proj_b{order}"), CNN)?);
            proj_ln_g.extend(arrays.vector(&format!("ln_g{order}"), CNN)?);
            proj_ln_b.extend(arrays.vector(&format!("ln_b{order}"), CNN)?);
            branches.push(Branch {
                order,
                left,
                w1: arrays.matrix(&format!("w1_{order}"), order * CNN, CNN)?,
                b1: arrays.vector(&format!("b1_{order}"), CNN)?,
                w2: arrays.matrix(&format!("w2_{order}"), order * CNN, CNN)?,
                b2: arrays.vector(&format!("b2_{order}"), CNN)?,
            });
        }
        let proj_w = Tensor::cat(&proj, 1)
            .and_then(|t| packed(&t))
            .map_err(|source| arrays.weights(source))?;
        let eps = arrays
            .take("eps", &[])?
            .to_dtype(DType::F32)
            .and_then(|t| t.to_scalar::<f32>())
            .map_err(|source| arrays.weights(source))?;
        let id = model_id(dir);
        Ok(Self {
            sp,
            id,
            scale: arrays.vector("scale", BLOCKS)?,
            lo: arrays.vector("lo", BLOCKS)?,
            table,
            proj_w,
            proj_b,
            proj_ln_g,
            proj_ln_b,
            branches,
            ln_g: arrays.vector("ln_g", FEATS)?,
            ln_b: arrays.vector("ln_b", FEATS)?,
            cnn_w: arrays.matrix("cnn_W", FEATS, EMB)?,
            cnn_b: arrays.vector("cnn_b", EMB)?,
            d0: arrays.matrix("d0", EMB, HIDDEN)?,
            d1: arrays.matrix("d1", HIDDEN, HIDDEN)?,
            d2: arrays.matrix("d2", HIDDEN, EMB)?,
            d3: arrays.matrix("d3", EMB, EMB)?,
            p1: arrays.matrix("p1", EMB, HIDDEN)?,
            p3: arrays.matrix("p3", HIDDEN, EMB)?,
            eps,
            max_tokens: DEFAULT_MAX_TOKENS,
            arch: Arch::new(),
        })
    }

    /// Keeps at most `n` pieces per text, `<s>` and `</s>` included (default 256).
    #[must_use]
    pub fn with_max_tokens(mut self, n: usize) -> Self {
        self.max_tokens = n.max(3);
        self
    }

    /// The model id (`use-m3:<folder name>`), for cache keys.
    pub fn model_id(&self) -> &str {
        &self.id
    }

    /// Dimensions of each vector (512).
    pub fn dims(&self) -> usize {
        EMB
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &SentencePiece {
        &self.sp
    }

    /// One L2-normalised vector per text, in order.
    ///
    /// # Errors
    /// [`EmbedError::Tokenizer`] or [`EmbedError::Model`] when a step fails.
    pub fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let threads = rayon::current_num_threads();
        let ids: Vec<Vec<u32>> = if threads > 1 && texts.len() >= PARALLEL_TEXTS {
            texts
                .par_iter()
                .map(|t| self.pieces(t))
                .collect::<Result<_, _>>()?
        } else {
            texts
                .iter()
                .map(|t| self.pieces(t))
                .collect::<Result<_, _>>()?
        };
        // Groups of texts of at most TOKEN_BUDGET pieces; with several threads, small
        // enough that each thread gets one, and each group runs on one thread (every
        // step of a group in parallel, not only its matrix products).
        let lengths: Vec<usize> = ids.iter().map(Vec::len).collect();
        let groups = token_groups(&lengths, TOKEN_BUDGET, threads);
        let model = |source| EmbedError::Model {
            model: self.id.clone(),
            source,
        };
        if groups.len() > 1 && threads > 1 {
            let vectors: Vec<Vec<Vec<f32>>> = groups
                .into_par_iter()
                .map(|g| self.forward(&ids[g], Threads::This))
                .collect::<Result<_, _>>()
                .map_err(model)?;
            return Ok(vectors.into_iter().flatten().collect());
        }
        let mut out = Vec::with_capacity(texts.len());
        for g in groups {
            out.extend(self.forward(&ids[g], Threads::All).map_err(model)?);
        }
        Ok(out)
    }

    /// The pieces of `text`, cut to `max_tokens` (the closing `</s>` kept).
    fn pieces(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let mut pieces = self
            .sp
            .encode(text)
            .map_err(|message| EmbedError::Tokenizer {
                path: PathBuf::from("sp.model"),
                message,
            })?;
        if pieces.len() > self.max_tokens {
            let last = pieces[pieces.len() - 1];
            pieces.truncate(self.max_tokens - 1);
            pieces.push(last);
        }
        Ok(pieces)
    }

    /// The vectors of a group of texts, their pieces concatenated so each weight
    /// matrix is read once per group; n-gram windows stop at each text's bounds.
    fn forward(&self, texts: &[Vec<u32>], threads: Threads) -> candle_core::Result<Vec<Vec<f32>>> {
        let n: usize = texts.iter().map(Vec::len).sum();
        // Bounds of the text each token belongs to.
        let mut bounds = Vec::with_capacity(n);
        let mut at = 0;
        for t in texts {
            bounds.extend(std::iter::repeat_n((at, at + t.len()), t.len()));
            at += t.len();
        }
        let mut feats = vec![0f32; n * FEATS];
        let mut emb = vec![0f32; n * EMB];
        let mut src = [0u8; EMB];
        for (row, &id) in texts.iter().flatten().enumerate() {
            let id = id as usize;
            let (block, r) = (id % BLOCKS, id / BLOCKS);
            let (scale, lo) = (self.scale[block], self.lo[block]);
            self.table
                .row(block, r, &mut src)
                .map_err(|e| candle_core::Error::Msg(format!("piece id {id}: {e}")))?;
            let dst = &mut emb[row * EMB..(row + 1) * EMB];
            for (d, &q) in dst.iter_mut().zip(&src) {
                *d = f32::from(q) * scale + lo;
            }
            feats[row * FEATS..row * FEATS + EMB].copy_from_slice(dst);
        }
        let width = ORDERS.len() * CNN;
        let mut x = self.proj_w.matmul(self.arch, &emb, n, threads);
        add_rows(&mut x, &self.proj_b);
        layer_norm(&mut x, width, &self.proj_ln_g, &self.proj_ln_b, self.eps);
        let mut xs = vec![0f32; n * CNN];
        for (i, branch) in self.branches.iter().enumerate() {
            for row in 0..n {
                xs[row * CNN..(row + 1) * CNN]
                    .copy_from_slice(&x[row * width + i * CNN..row * width + (i + 1) * CNN]);
            }
            let mut h = branch
                .w1
                .matmul(self.arch, &windows(&xs, &bounds, branch), n, threads);
            add_rows(&mut h, &branch.b1);
            relu(&mut h);
            add(&mut h, &xs);
            let mut c = branch
                .w2
                .matmul(self.arch, &windows(&h, &bounds, branch), n, threads);
            add_rows(&mut c, &branch.b2);
            relu(&mut c);
            add(&mut c, &h);
            let off = EMB + i * CNN;
            for row in 0..n {
                feats[row * FEATS + off..row * FEATS + off + CNN]
                    .copy_from_slice(&c[row * CNN..(row + 1) * CNN]);
            }
        }
        layer_norm(&mut feats, FEATS, &self.ln_g, &self.ln_b, self.eps);
        // Sum over each text, then project (the projection is linear, so this is the
        // projection of the sum), add length × bias and scale by 1/√length.
        let m = texts.len();
        let mut sums = vec![0f32; m * FEATS];
        let mut row = 0;
        for (s, t) in texts.iter().enumerate() {
            let sum = &mut sums[s * FEATS..(s + 1) * FEATS];
            for _ in 0..t.len() {
                for (a, &b) in sum.iter_mut().zip(&feats[row * FEATS..(row + 1) * FEATS]) {
                    *a += b;
                }
                row += 1;
            }
        }
        let mut mean = self.cnn_w.matmul(self.arch, &sums, m, threads);
        for (s, t) in texts.iter().enumerate() {
            let len = t.len() as f32;
            let inv = 1.0 / len.sqrt();
            for (v, &b) in mean[s * EMB..(s + 1) * EMB].iter_mut().zip(&self.cnn_b) {
                *v = (*v + len * b) * inv;
            }
        }
        let mut y0 = self.d0.matmul(self.arch, &mean, m, threads);
        relu(&mut y0);
        let mut y1 = self.p1.matmul(self.arch, &mean, m, threads);
        add(&mut y1, &self.d1.matmul(self.arch, &y0, m, threads));
        relu(&mut y1);
        let mut y2 = self.d2.matmul(self.arch, &y1, m, threads);
        relu(&mut y2);
        let mut z = self.p3.matmul(self.arch, &y1, m, threads);
        add(&mut z, &self.d3.matmul(self.arch, &y2, m, threads));
        Ok(z.chunks_exact(EMB)
            .map(|row| {
                let mut v: Vec<f32> = row.iter().map(|x| x.tanh()).collect();
                let norm = v.iter().map(|x| x * x).sum::<f32>().max(self.eps).sqrt();
                for x in &mut v {
                    *x /= norm;
                }
                v
            })
            .collect())
    }
}

/// The model's id: `use-m3:<folder>`.
fn model_id(dir: &Path) -> String {
    format!(
        "use-m3:{}",
        dir.file_name()
            .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into())
    )
}

/// The embedding table of the weights cache `file`, `len` bytes at `at`: read a row at a
/// time on Unix, into memory elsewhere.
fn file_table(file: std::fs::File, at: u64, len: u64) -> Result<Table, EmbedError> {
    #[cfg(unix)]
    {
        let _ = len;
        Ok(Table::File { file, at })
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek};
        let mut file = file;
        let mut bytes = vec![0u8; len as usize];
        file.seek(std::io::SeekFrom::Start(at))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(|source| EmbedError::Io {
                path: PathBuf::from("weights cache"),
                source,
            })?;
        Ok(Table::Memory(
            bytes.chunks(BLOCK_ROWS * EMB).map(<[u8]>::to_vec).collect(),
        ))
    }
}

/// A weight matrix packed for [`crate::kernel`].
fn packed(t: &Tensor) -> candle_core::Result<Packed> {
    let (k, cols) = t.dims2()?;
    Ok(Packed::new(&t.flatten_all()?.to_vec1::<f32>()?, k, cols))
}

/// Each token's n-gram window over `x` (`n × CNN`): rows `t - left ..= t - left + order - 1`,
/// zeros outside the token's text.
fn windows(x: &[f32], bounds: &[(usize, usize)], branch: &Branch) -> Vec<f32> {
    let wide = branch.order * CNN;
    let mut out = vec![0f32; bounds.len() * wide];
    for (t, &(start, end)) in bounds.iter().enumerate() {
        for j in 0..branch.order {
            let Some(pos) = (t + j).checked_sub(branch.left) else {
                continue;
            };
            if pos < start || pos >= end {
                continue;
            }
            out[t * wide + j * CNN..t * wide + (j + 1) * CNN]
                .copy_from_slice(&x[pos * CNN..(pos + 1) * CNN]);
        }
    }
    out
}

fn relu(x: &mut [f32]) {
    for v in x {
        *v = v.max(0.0);
    }
}
