//! [`UseEncoder`]: USE-multilingual v3 (DAN + CNN over SentencePiece pieces).

use std::path::{Path, PathBuf};

use candle_core::{DType, Tensor};
use pulp::Arch;

use crate::kernel::Packed;

use crate::error::EmbedError;
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
    table: Vec<Vec<u8>>,
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
    /// Loads `weights.npz` and `sp.model` from `dir` (about 0.3 s).
    ///
    /// # Errors
    /// [`EmbedError::MissingFile`] naming the first missing file, or the error of the file
    /// that could not be read or does not fit the architecture.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let file = |name: &str| {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                Err(EmbedError::MissingFile { path })
            }
        };
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
        let id = format!(
            "use-m3:{}",
            dir.file_name()
                .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into())
        );
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
        let mut ids = Vec::with_capacity(texts.len());
        for text in texts {
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
            ids.push(pieces);
        }
        let mut out = Vec::with_capacity(texts.len());
        let mut start = 0;
        while start < ids.len() {
            let mut end = start + 1;
            let mut tokens = ids[start].len();
            while end < ids.len() && tokens + ids[end].len() <= TOKEN_BUDGET {
                tokens += ids[end].len();
                end += 1;
            }
            let vectors = self
                .forward(&ids[start..end])
                .map_err(|source| EmbedError::Model {
                    model: self.id.clone(),
                    source,
                })?;
            out.extend(vectors);
            start = end;
        }
        Ok(out)
    }

    /// The vectors of a group of texts, their pieces concatenated so each weight
    /// matrix is read once per group; n-gram windows stop at each text's bounds.
    fn forward(&self, texts: &[Vec<u32>]) -> candle_core::Result<Vec<Vec<f32>>> {
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
        for (row, &id) in texts.iter().flatten().enumerate() {
            let id = id as usize;
            let (block, r) = (id % BLOCKS, id / BLOCKS);
            let (scale, lo) = (self.scale[block], self.lo[block]);
            let src = self.table[block]
                .get(r * EMB..(r + 1) * EMB)
                .ok_or_else(|| candle_core::Error::Msg(format!("piece id {id} is out of range")))?;
            let dst = &mut emb[row * EMB..(row + 1) * EMB];
            for (d, &q) in dst.iter_mut().zip(src) {
                *d = f32::from(q) * scale + lo;
            }
            feats[row * FEATS..row * FEATS + EMB].copy_from_slice(dst);
        }
        let width = ORDERS.len() * CNN;
        let mut x = self.proj_w.matmul(self.arch, &emb, n);
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
                .matmul(self.arch, &windows(&xs, &bounds, branch), n);
            add_rows(&mut h, &branch.b1);
            relu(&mut h);
            add(&mut h, &xs);
            let mut c = branch
                .w2
                .matmul(self.arch, &windows(&h, &bounds, branch), n);
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
        let mut mean = self.cnn_w.matmul(self.arch, &sums, m);
        for (s, t) in texts.iter().enumerate() {
            let len = t.len() as f32;
            let inv = 1.0 / len.sqrt();
            for (v, &b) in mean[s * EMB..(s + 1) * EMB].iter_mut().zip(&self.cnn_b) {
                *v = (*v + len * b) * inv;
            }
        }
        let mut y0 = self.d0.matmul(self.arch, &mean, m);
        relu(&mut y0);
        let mut y1 = self.p1.matmul(self.arch, &mean, m);
        add(&mut y1, &self.d1.matmul(self.arch, &y0, m));
        relu(&mut y1);
        let mut y2 = self.d2.matmul(self.arch, &y1, m);
        relu(&mut y2);
        let mut z = self.p3.matmul(self.arch, &y1, m);
        add(&mut z, &self.d3.matmul(self.arch, &y2, m));
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

fn layer_norm(x: &mut [f32], width: usize, gamma: &[f32], beta: &[f32], eps: f32) {
    for row in x.chunks_exact_mut(width) {
        let mean = row.iter().sum::<f32>() / width as f32;
        for v in row.iter_mut() {
            *v -= mean;
        }
        let var = row.iter().map(|v| v * v).sum::<f32>() / width as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *v = *v * inv * g + b;
        }
    }
}

fn add_rows(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

fn relu(x: &mut [f32]) {
    for v in x {
        *v = v.max(0.0);
    }
}
