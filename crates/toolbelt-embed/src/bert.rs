//! [`BertEncoder`]: a BERT sentence model (all-MiniLM-L6-v2 and its kin) with mean pooling.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;
use safetensors::Dtype;
use safetensors::tensor::{Metadata, TensorInfo};

use crate::cache::{fingerprint, write_atomically};
use crate::error::{EmbedError, model_file};
use crate::int8::PackedI8;
use crate::kernel::{Packed, PackedHalf, Threads, matmul_into};
use crate::ops::{add, add_norm, bias_gelu, softmax_numerators, token_groups};

/// Tokens run through the matrix products at once.
const TOKEN_BUDGET: usize = 1024;
/// Rows taken through a layer's feed-forward half (after attention) at once: its
/// activations (a tile's 1,536 intermediate values per row are 384 KiB) stay in the
/// core's L2 cache between the steps, instead of going out to memory and back for a
/// group of a thousand tokens.
const TILE_ROWS: usize = 64;

/// The shape of a BERT model, from its `config.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    hidden: usize,
    heads: usize,
    layers: usize,
    intermediate: usize,
    vocab: usize,
    positions: usize,
}

/// How the weight matrices are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Precision {
    /// As in the file (f32): the vectors of the reference implementation.
    #[default]
    F32,
    /// Rounded to bfloat16: half the memory, so a short query waits less on it; vectors
    /// within a cosine of 0.99999 of the f32 ones on the reference test.
    Bf16,
    /// Quantised to 8 bits (weights per column, each product's input per row) and summed
    /// in integers with AVX-512 VNNI or AVX2, on CPUs that have either; f32 on the others
    /// ([`Precision::on_this_cpu`]).
    Int8,
}

impl Precision {
    /// The precision an encoder asked for `self` runs in on this CPU: `Int8` is `F32`
    /// where 8-bit products have no SIMD path (neither AVX-512 VNNI nor AVX2).
    #[must_use]
    pub fn on_this_cpu(self) -> Self {
        match self {
            Self::Int8 if !crate::int8::fast() => Self::F32,
            other => other,
        }
    }
}

/// A weight matrix in the chosen [`Precision`].
enum Matrix {
    F32(Packed),
    Bf16(PackedHalf),
    Int8(PackedI8),
}

impl Matrix {
    /// The `k × cols` matrix whose columns are the rows of `columns` (`cols × k`, as a
    /// PyTorch linear layer stores its weights: one row per output). int8 packs it where it
    /// lies; the f32 and bf16 panels are packed from its transpose.
    fn from_columns(columns: &[f32], k: usize, cols: usize, precision: Precision) -> Self {
        let transposed = || {
            let mut t = vec![0f32; columns.len()];
            for (o, column) in columns.chunks_exact(k).enumerate() {
                for (i, &v) in column.iter().enumerate() {
                    t[i * cols + o] = v;
                }
            }
            t
        };
        match precision.on_this_cpu() {
            Precision::Int8 => Self::Int8(PackedI8::from_columns(columns, k, cols)),
            Precision::F32 => Self::F32(Packed::new(&transposed(), k, cols)),
            Precision::Bf16 => Self::Bf16(PackedHalf::new(&transposed(), k, cols)),
        }
    }

    /// `a` (`rows × k`) times this matrix into `out` (`rows × cols`, all overwritten).
    fn matmul(&self, arch: Arch, a: &[f32], rows: usize, threads: Threads, out: &mut [f32]) {
        match self {
            Self::F32(m) => matmul_into(m, arch, a, rows, threads, out),
            Self::Bf16(m) => matmul_into(m, arch, a, rows, threads, out),
            Self::Int8(m) => m.matmul_into(a, rows, threads, out),
        }
    }
}

/// One transformer layer: self-attention, then the feed-forward network, each followed
/// by a residual sum and a layer norm.
struct Layer {
    /// Query, key and value side by side (`hidden × 3·hidden`).
    qkv: Matrix,
    qkv_b: Vec<f32>,
    attn_out: Matrix,
    attn_out_b: Vec<f32>,
    ln1_g: Vec<f32>,
    ln1_b: Vec<f32>,
    up: Matrix,
    up_b: Vec<f32>,
    down: Matrix,
    down_b: Vec<f32>,
    ln2_g: Vec<f32>,
    ln2_b: Vec<f32>,
}

/// The word embedding table (`vocab × hidden`). On Unix it stays in `model.safetensors` and
/// a text reads one row per token from there (MiniLM's table is 47 MB, which the process then
/// neither reads at start-up nor holds); elsewhere it is read into memory.
enum WordTable {
    #[cfg_attr(unix, allow(dead_code))]
    Memory(Vec<f32>),
    #[cfg(unix)]
    File {
        file: File,
        path: PathBuf,
        /// Where the table's first value lies in the file.
        at: u64,
        /// How its values are stored (f32, bf16 or f16).
        dtype: Dtype,
    },
}

impl WordTable {
    /// Row `id` (of `out.len()` values) into `out`.
    fn row_into(&self, id: usize, out: &mut [f32], raw: &mut Vec<u8>) -> Result<(), EmbedError> {
        match self {
            Self::Memory(table) => {
                let h = out.len();
                out.copy_from_slice(&table[id * h..(id + 1) * h]);
                Ok(())
            }
            #[cfg(unix)]
            Self::File {
                file,
                path,
                at,
                dtype,
            } => {
                use std::os::unix::fs::FileExt;
                let io = |source| EmbedError::Io {
                    path: path.clone(),
                    source,
                };
                let width = if *dtype == Dtype::F32 { 4 } else { 2 };
                let offset = at + (id * out.len() * width) as u64;
                if *dtype == Dtype::F32 {
                    file.read_exact_at(bytemuck::cast_slice_mut(out), offset)
                        .map_err(io)?;
                    from_le(out);
                    return Ok(());
                }
                raw.resize(out.len() * 2, 0);
                file.read_exact_at(raw, offset).map_err(io)?;
                halves_into(*dtype, raw, out);
                Ok(())
            }
        }
    }
}

/// f32 values read as little-endian bytes, in this CPU's order.
fn from_le(values: &mut [f32]) {
    if cfg!(target_endian = "big") {
        for v in values.iter_mut() {
            *v = f32::from_bits(u32::from_le(v.to_bits()));
        }
    }
}

/// bf16 or f16 values (little-endian, two bytes each) into f32.
fn halves_into(dtype: Dtype, raw: &[u8], out: &mut [f32]) {
    for (v, b) in out.iter_mut().zip(raw.as_chunks::<2>().0) {
        *v = if dtype == Dtype::BF16 {
            f32::from_bits(u32::from(u16::from_le_bytes(*b)) << 16)
        } else {
            half::f16::from_le_bytes(*b).to_f32()
        };
    }
}

/// A BERT encoder (`model_type: bert`, GELU) whose sentence vector is the mean of the
/// last hidden states over the text's tokens, L2-normalised: what sentence-transformers
/// computes for all-MiniLM-L6-v2.
///
/// It takes token ids (the caller tokenizes: `[CLS] … [SEP]`, WordPiece) and reads its
/// weights from `model.safetensors` and its shape from `config.json`. The forward pass
/// is our own Rust over the SIMD kernel the USE encoder uses. A group of texts runs as
/// one sequence of rows with attention kept within each text, so no padding is computed
/// and a text's vector does not depend on the batch it ran in.
pub struct BertEncoder {
    id: String,
    shape: Shape,
    eps: f32,
    /// `vocab × hidden`.
    word: WordTable,
    /// `positions × hidden`, with the first token-type row added (every token is type 0).
    position: Vec<f32>,
    emb_ln_g: Vec<f32>,
    emb_ln_b: Vec<f32>,
    layers: Vec<Layer>,
    arch: Arch,
}

impl std::fmt::Debug for BertEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BertEncoder")
            .field("model", &self.id)
            .field("hidden", &self.shape.hidden)
            .field("layers", &self.shape.layers)
            .finish_non_exhaustive()
    }
}

/// `model.safetensors`: its header, and each tensor read from where it lies in the file
/// straight into the buffer that takes it (no copy of the whole file in memory).
struct Weights<'a> {
    path: &'a Path,
    file: File,
    metadata: Metadata,
    /// Where the tensors' bytes start: after the header's length and the header.
    start: u64,
    /// `bert.` when the names carry it.
    prefix: &'static str,
}

/// The largest header read (safetensors' own limit).
const MAX_HEADER: u64 = 100_000_000;

impl<'a> Weights<'a> {
    fn open(path: &'a Path) -> Result<Self, EmbedError> {
        let io = |source| EmbedError::Io {
            path: path.to_path_buf(),
            source,
        };
        let weights = |source: candle_core::Error| EmbedError::Weights {
            path: path.to_path_buf(),
            source,
        };
        let mut file = File::open(path).map_err(io)?;
        let mut len = [0u8; 8];
        file.read_exact(&mut len).map_err(io)?;
        let len = u64::from_le_bytes(len);
        if len > MAX_HEADER {
            return Err(weights(candle_core::Error::Msg(format!(
                "a header of {len} bytes (more than {MAX_HEADER})"
            ))));
        }
        let mut header = vec![0u8; len as usize];
        file.read_exact(&mut header).map_err(io)?;
        let metadata: Metadata = serde_json::from_slice(&header).map_err(|e| {
            weights(safetensors::SafeTensorError::InvalidHeaderDeserialization(e).into())
        })?;
        let prefix = if metadata
            .info("bert.embeddings.word_embeddings.weight")
            .is_some()
        {
            "bert."
        } else {
            ""
        };
        Ok(Self {
            path,
            file,
            metadata,
            start: 8 + len,
            prefix,
        })
    }

    fn fail(&self, message: String) -> EmbedError {
        EmbedError::Weights {
            path: self.path.to_path_buf(),
            source: candle_core::Error::Msg(message),
        }
    }

    /// The full name of `name` in the file (also tried with `gamma`/`beta` for a layer
    /// norm's `weight`/`bias`, as older checkpoints name them) and its entry, checked
    /// against `shape`.
    fn info(&self, name: &str, shape: &[usize]) -> Result<(String, &TensorInfo), EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let old = full
            .strip_suffix("LayerNorm.weight")
            .map(|s| format!("{s}LayerNorm.gamma"))
            .or_else(|| {
                full.strip_suffix("LayerNorm.bias")
                    .map(|s| format!("{s}LayerNorm.beta"))
            });
        let found = match self.metadata.info(&full) {
            Some(info) => Some((full.clone(), info)),
            None => old.and_then(|old| self.metadata.info(&old).map(|info| (old, info))),
        };
        let (found, info) = found.ok_or_else(|| EmbedError::Shape {
            name: full.clone(),
            expected: shape.to_vec(),
            found: Vec::new(),
        })?;
        if info.shape != shape {
            return Err(EmbedError::Shape {
                name: found,
                expected: shape.to_vec(),
                found: info.shape.clone(),
            });
        }
        Ok((found, info))
    }

    /// Where the values of `name` (f32, bf16 or f16 in the file, checked against `shape`)
    /// start in the file, and their type.
    fn locate(&self, name: &str, shape: &[usize]) -> Result<(u64, Dtype), EmbedError> {
        let (full, info) = self.info(name, shape)?;
        let width = match info.dtype {
            Dtype::F32 => 4,
            Dtype::BF16 | Dtype::F16 => 2,
            other => {
                return Err(self.fail(format!(
                    "weight `{full}` is {other:?}; f32, bf16 or f16 expected"
                )));
            }
        };
        let (begin, end) = info.data_offsets;
        let values: usize = shape.iter().product();
        if end.checked_sub(begin) != Some(values * width) {
            return Err(self.fail(format!(
                "weight `{full}` spans bytes {begin}..{end} for {values} values of {width} bytes"
            )));
        }
        Ok((self.start + begin as u64, info.dtype))
    }

    fn io(&self, source: std::io::Error) -> EmbedError {
        EmbedError::Io {
            path: self.path.to_path_buf(),
            source,
        }
    }

    /// Reads the values of `name` (f32, bf16 or f16 in the file), checked against `shape`,
    /// into `dst` (as many values).
    fn read_into(&self, name: &str, shape: &[usize], dst: &mut [f32]) -> Result<(), EmbedError> {
        let (at, dtype) = self.locate(name, shape)?;
        let mut file = &self.file;
        file.seek(SeekFrom::Start(at)).map_err(|e| self.io(e))?;
        if dtype == Dtype::F32 {
            file.read_exact(bytemuck::cast_slice_mut(dst))
                .map_err(|e| self.io(e))?;
            from_le(dst);
            return Ok(());
        }
        let mut raw = vec![0u8; dst.len() * 2];
        file.read_exact(&mut raw).map_err(|e| self.io(e))?;
        halves_into(dtype, &raw, dst);
        Ok(())
    }

    /// The word embedding table `name` (`shape`: `vocab × hidden`): left in the file, where
    /// the system reads at an offset, after checking the file holds all of it.
    #[cfg(unix)]
    fn table(&self, name: &str, shape: &[usize]) -> Result<WordTable, EmbedError> {
        let (at, dtype) = self.locate(name, shape)?;
        let width = if dtype == Dtype::F32 { 4 } else { 2 };
        let end = at + (shape.iter().product::<usize>() * width) as u64;
        let len = self.file.metadata().map_err(|e| self.io(e))?.len();
        if len < end {
            return Err(self.io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("the file ends at byte {len}, inside `{name}` (which ends at {end})"),
            )));
        }
        Ok(WordTable::File {
            file: self.file.try_clone().map_err(|e| self.io(e))?,
            path: self.path.to_path_buf(),
            at,
            dtype,
        })
    }

    #[cfg(not(unix))]
    fn table(&self, name: &str, shape: &[usize]) -> Result<WordTable, EmbedError> {
        self.take(name, shape).map(WordTable::Memory)
    }

    /// The values of `name`, checked against `shape`.
    fn take(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, EmbedError> {
        let mut values = vec![0f32; shape.iter().product()];
        self.read_into(name, shape, &mut values)?;
        Ok(values)
    }

    /// A `rows × width` matrix whose row count the file decides.
    fn take_rows(&self, name: &str, width: usize) -> Result<Vec<f32>, EmbedError> {
        let full = format!("{}{name}", self.prefix);
        let rows = self
            .metadata
            .info(&full)
            .and_then(|t| t.shape.first().copied())
            .unwrap_or(0)
            .max(1);
        self.take(name, &[rows, width])
    }
}

/// A weight matrix to read and pack: the linear layers whose weights make its columns, in
/// order (each `outputs × k` in the file, one row per column), `k` and the column count.
struct Planned {
    parts: Vec<String>,
    k: usize,
    cols: usize,
}

impl BertEncoder {
    /// Loads `config.json` and `model.safetensors` from `dir`.
    ///
    /// # Errors
    /// [`EmbedError::MissingFile`] naming the first missing file, [`EmbedError::Config`]
    /// when the configuration is not a BERT model this encoder runs (naming the field),
    /// or the error of a weight that cannot be read or does not fit the configuration.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        Self::from_dir_with(dir, Precision::F32)
    }

    /// [`BertEncoder::from_dir`] with the weight matrices stored in `precision`.
    ///
    /// # Errors
    /// As [`BertEncoder::from_dir`].
    pub fn from_dir_with(dir: impl AsRef<Path>, precision: Precision) -> Result<Self, EmbedError> {
        Self::load(dir.as_ref(), precision, None)
    }

    /// [`BertEncoder::from_dir_with`] through a cache of packed weights in `cache_dir`, for
    /// [`Precision::Int8`] where this CPU runs it: the first load quantises the matrices
    /// as `from_dir_with` does and writes them there (11 MB for MiniLM, named by the
    /// model folder and a fingerprint of `model.safetensors`: its length and modification
    /// time); later loads read them back instead of reading 43 MB of f32 and quantising.
    /// The vectors are the same bits either way. A cache that cannot be written, or is cut
    /// short or made for another model, is passed over (and rewritten when it can be);
    /// other precisions load as `from_dir_with` does.
    ///
    /// # Errors
    /// As [`BertEncoder::from_dir`].
    pub fn from_dir_cached(
        dir: impl AsRef<Path>,
        precision: Precision,
        cache_dir: impl AsRef<Path>,
    ) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        if precision.on_this_cpu() != Precision::Int8 {
            return Self::load(dir, precision, None);
        }
        let Some(print) = fingerprint(&model_file(dir, "model.safetensors")?) else {
            return Self::load(dir, precision, None);
        };
        let path = cache_dir.as_ref().join(format!(
            "bert-{}-int8-{print:016x}.weights",
            folder_name(dir)
        ));
        Self::load(dir, precision, Some(PackedCache { path, print }))
    }

    fn load(
        dir: &Path,
        precision: Precision,
        cache: Option<PackedCache>,
    ) -> Result<Self, EmbedError> {
        let file = |name: &str| model_file(dir, name);
        let (config, weights) = (file("config.json")?, file("model.safetensors")?);
        let (shape, eps) = read_config(&config)?;
        let w = Weights::open(&weights)?;
        let Shape {
            hidden: h,
            intermediate: inter,
            ..
        } = shape;
        let word = w.table("embeddings.word_embeddings.weight", &[shape.vocab, h])?;
        let mut position = w.take(
            "embeddings.position_embeddings.weight",
            &[shape.positions, h],
        )?;
        let types = w.take_rows("embeddings.token_type_embeddings.weight", h)?;
        for row in position.chunks_exact_mut(h) {
            add(row, &types[..h]);
        }
        let vector = |name: &str, len: usize| w.take(name, &[len]);
        let emb_ln_g = vector("embeddings.LayerNorm.weight", h)?;
        let emb_ln_b = vector("embeddings.LayerNorm.bias", h)?;
        // Every layer's four matrices (queries, keys and values as one product, their
        // columns side by side): from the packed cache, or read from the file and packed.
        let matrices = match cache.as_ref().and_then(|c| c.read(&shape)) {
            Some(matrices) => matrices,
            None => {
                let plan: Vec<[Planned; 4]> = (0..shape.layers)
                    .map(|i| {
                        let p = format!("encoder.layer.{i}.");
                        let one = |name: &str| vec![format!("{p}{name}.weight")];
                        let qkv = ["query", "key", "value"]
                            .map(|part| format!("{p}attention.self.{part}.weight"))
                            .into();
                        let [q, o, u, d] = layer_shapes(&shape);
                        let planned = |parts, (k, cols)| Planned { parts, k, cols };
                        [
                            planned(qkv, q),
                            planned(one("attention.output.dense"), o),
                            planned(one("intermediate.dense"), u),
                            planned(one("output.dense"), d),
                        ]
                    })
                    .collect();
                let matrices = read_and_pack(&w, &plan, precision)?;
                if let Some(c) = &cache {
                    // A cache that cannot be written is passed over: the next load packs again.
                    c.write(&shape, &matrices).ok();
                }
                matrices
            }
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for (i, [qkv, attn_out, up, down]) in matrices.into_iter().enumerate() {
            let p = format!("encoder.layer.{i}.");
            let mut qkv_b = Vec::with_capacity(3 * h);
            for part in ["query", "key", "value"] {
                qkv_b.extend(vector(&format!("{p}attention.self.{part}.bias"), h)?);
            }
            layers.push(Layer {
                qkv,
                qkv_b,
                attn_out,
                attn_out_b: vector(&format!("{p}attention.output.dense.bias"), h)?,
                ln1_g: vector(&format!("{p}attention.output.LayerNorm.weight"), h)?,
                ln1_b: vector(&format!("{p}attention.output.LayerNorm.bias"), h)?,
                up,
                up_b: vector(&format!("{p}intermediate.dense.bias"), inter)?,
                down,
                down_b: vector(&format!("{p}output.dense.bias"), h)?,
                ln2_g: vector(&format!("{p}output.LayerNorm.weight"), h)?,
                ln2_b: vector(&format!("{p}output.LayerNorm.bias"), h)?,
            });
        }
        Ok(Self {
            id: format!("bert:{}", folder_name(dir)),
            shape,
            eps,
            word,
            position,
            emb_ln_g,
            emb_ln_b,
            layers,
            arch: Arch::new(),
        })
    }

    /// The model id (`bert:<folder name>`).
    pub fn model_id(&self) -> &str {
        &self.id
    }

    /// Dimensions of each vector (the hidden size: 384 for MiniLM-L6).
    pub fn dims(&self) -> usize {
        self.shape.hidden
    }

    /// Tokens per text the model can read (its position embeddings: 512 for MiniLM).
    pub fn max_positions(&self) -> usize {
        self.shape.positions
    }

    /// One L2-normalised vector per text of token ids (each `[CLS] … [SEP]`, at most
    /// [`BertEncoder::max_positions`] long); an empty text gets an empty vector.
    ///
    /// Texts are grouped up to about a thousand tokens; with several groups and several
    /// rayon threads, the groups run in parallel, each on one thread.
    ///
    /// # Errors
    /// [`EmbedError::Input`] naming the text and the token id outside the vocabulary, or
    /// the text longer than the model reads; [`EmbedError::Io`] naming `model.safetensors`
    /// when a row of the word table cannot be read from it (on Unix the table stays in the
    /// file: one removed or cut short since the load).
    pub fn embed_ids(&self, texts: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        for (i, ids) in texts.iter().enumerate() {
            if ids.len() > self.shape.positions {
                return Err(EmbedError::Input(format!(
                    "text {i} has {} tokens; the model reads at most {}",
                    ids.len(),
                    self.shape.positions
                )));
            }
            if let Some(&id) = ids.iter().find(|&&id| id as usize >= self.shape.vocab) {
                return Err(EmbedError::Input(format!(
                    "text {i}: token id {id} is outside the vocabulary of {}",
                    self.shape.vocab
                )));
            }
        }
        let threads = rayon::current_num_threads();
        let lengths: Vec<usize> = texts.iter().map(Vec::len).collect();
        let groups = token_groups(&lengths, TOKEN_BUDGET, threads);
        if groups.len() > 1 && threads > 1 {
            let vectors: Vec<Vec<Vec<f32>>> = groups
                .into_par_iter()
                .map(|g| self.forward(&texts[g], Threads::This))
                .collect::<Result<_, _>>()?;
            return Ok(vectors.into_iter().flatten().collect());
        }
        let mut out = Vec::with_capacity(texts.len());
        for g in groups {
            out.extend(self.forward(&texts[g], Threads::All)?);
        }
        Ok(out)
    }

    /// The vectors of a group of texts (ids checked by the caller), their tokens one
    /// sequence of rows so each weight matrix is read once per group.
    fn forward(&self, texts: &[Vec<u32>], threads: Threads) -> Result<Vec<Vec<f32>>, EmbedError> {
        let h = self.shape.hidden;
        let n: usize = texts.iter().map(Vec::len).sum();
        if n == 0 {
            return Ok(vec![Vec::new(); texts.len()]);
        }
        let mut x = vec![0f32; n * h];
        let mut rows = x.chunks_exact_mut(h);
        let mut raw = Vec::new();
        for ids in texts {
            for (pos, &id) in ids.iter().enumerate() {
                let Some(row) = rows.next() else { break };
                self.word.row_into(id as usize, row, &mut raw)?;
                add(row, &self.position[pos * h..(pos + 1) * h]);
            }
        }
        add_norm(&mut x, None, None, &self.emb_ln_g, &self.emb_ln_b, self.eps);
        // One buffer per activation for all the layers (each product overwrites its
        // output): the hidden states `x`, the queries, keys and values, the attention's
        // context; and for a tile of rows, the hidden states after attention `a` and the
        // feed-forward layer's.
        let tile = n.min(TILE_ROWS);
        let mut qkv = vec![0f32; n * 3 * h];
        let mut ctx = vec![0f32; n * h];
        let mut a = vec![0f32; tile * h];
        let mut up = vec![0f32; tile * self.shape.intermediate];
        let mut scratch = Scratch::default();
        let (arch, eps) = (self.arch, self.eps);
        for layer in &self.layers {
            layer.qkv.matmul(arch, &x, n, threads, &mut qkv);
            self.attention(&qkv, &layer.qkv_b, texts, &mut ctx, &mut scratch);
            // The rest of the layer works row by row: a tile at a time, so its activations
            // stay in the core's cache from one step to the next.
            for (x, ctx) in x.chunks_mut(tile * h).zip(ctx.chunks(tile * h)) {
                let rows = x.len() / h;
                let (a, up) = (
                    &mut a[..rows * h],
                    &mut up[..rows * self.shape.intermediate],
                );
                layer.attn_out.matmul(arch, ctx, rows, threads, a);
                let (g, b) = (&layer.ln1_g, &layer.ln1_b);
                add_norm(a, Some(&layer.attn_out_b), Some(x), g, b, eps);
                layer.up.matmul(arch, a, rows, threads, up);
                bias_gelu(up, &layer.up_b);
                layer.down.matmul(arch, up, rows, threads, x);
                let (g, b) = (&layer.ln2_g, &layer.ln2_b);
                add_norm(x, Some(&layer.down_b), Some(a), g, b, eps);
            }
        }
        let mut out = Vec::with_capacity(texts.len());
        let mut rows = x.chunks_exact(h);
        for ids in texts {
            let mut mean = vec![0f32; if ids.is_empty() { 0 } else { h }];
            for row in rows.by_ref().take(ids.len()) {
                add(&mut mean, row);
            }
            let norm = mean.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            for v in &mut mean {
                *v /= norm;
            }
            out.push(mean);
        }
        Ok(out)
    }

    /// Multi-head self-attention within each text: `qkv` holds each token's query, key
    /// and value side by side (`n × 3·hidden`), to which `bias` (`3·hidden`) is added as
    /// they are read; writes each token's context into `ctx` (`n × hidden`). `scratch`
    /// holds the keys and scores between calls.
    fn attention(
        &self,
        qkv: &[f32],
        bias: &[f32],
        texts: &[Vec<u32>],
        ctx: &mut [f32],
        scratch: &mut Scratch,
    ) {
        self.arch.dispatch(Attention {
            qkv,
            bias,
            texts,
            ctx,
            hidden: self.shape.hidden,
            heads: self.shape.heads,
            scratch,
        });
    }
}

/// Buffers of [`Attention`], kept across heads, texts and layers.
#[derive(Default)]
struct Scratch {
    /// One head's keys of one text, transposed: `d × padded length`.
    keys: Vec<f32>,
    /// The scores of a block of queries: `QUERIES × padded length`.
    scores: Vec<f32>,
}

/// The widest attention head [`Attention`] takes (MiniLM's are 32 wide; BERT-base's 64).
const MAX_HEAD: usize = 128;

/// Queries whose scores and context are computed together: each key or value read from
/// memory serves all of them (and their sums are independent, so the FMAs overlap).
const QUERIES: usize = 4;

/// Self-attention in SIMD lanes, per text and head, straight from the rows of `qkv`: the
/// head's keys are copied once with their bias, transposed (`d × len`, padded with zero
/// keys to whole vectors), so a block of [`QUERIES`] queries gets its scores a vector of
/// keys at a time (a fused multiply-add per key vector, query and dimension); then each
/// query's softmax numerators, and its context summed over the value rows in place (a
/// multiply-add per value vector, query and key), divided by the numerators' sum at the
/// end, plus the value bias. Every sum runs over the text's own tokens in the same order
/// wherever the text sits in the group.
struct Attention<'a> {
    qkv: &'a [f32],
    /// The queries', keys' and values' biases.
    bias: &'a [f32],
    texts: &'a [Vec<u32>],
    ctx: &'a mut [f32],
    hidden: usize,
    heads: usize,
    scratch: &'a mut Scratch,
}

impl WithSimd for Attention<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self {
            qkv,
            bias,
            texts,
            ctx,
            hidden: h,
            heads,
            scratch,
        } = self;
        let lanes = S::F32_LANES;
        let d = h / heads;
        let scale = 1.0 / (d as f32).sqrt();
        let mut start = 0;
        for ids in texts {
            let len = ids.len();
            if len == 0 {
                continue;
            }
            let padded = len.next_multiple_of(lanes);
            let rows = &qkv[start * 3 * h..(start + len) * 3 * h];
            let ctx = &mut ctx[start * h..(start + len) * h];
            scratch.keys.clear();
            scratch.keys.resize(d * padded, 0.0);
            scratch.scores.resize(QUERIES * padded, 0.0);
            for head in 0..heads {
                let (q0, k0, v0) = (head * d, h + head * d, 2 * h + head * d);
                let keys = &mut scratch.keys;
                let key_bias = &bias[k0..k0 + d];
                for (j, row) in rows.chunks_exact(3 * h).enumerate() {
                    for (dd, (&y, &b)) in row[k0..k0 + d].iter().zip(key_bias).enumerate() {
                        keys[dd * padded + j] = y + b;
                    }
                }
                let head = Head {
                    rows,
                    query_bias: &bias[q0..q0 + d],
                    value_bias: &bias[v0..v0 + d],
                    stride: 3 * h,
                    q0,
                    v0,
                    d,
                    len,
                    padded,
                    scale,
                    keys,
                };
                for i0 in (0..len).step_by(QUERIES) {
                    let scores = &mut scratch.scores;
                    let out = &mut ctx[i0 * h + q0..];
                    match len - i0 {
                        1 => head.queries::<S, 1>(simd, i0, scores, out, h),
                        2 => head.queries::<S, 2>(simd, i0, scores, out, h),
                        3 => head.queries::<S, 3>(simd, i0, scores, out, h),
                        _ => head.queries::<S, QUERIES>(simd, i0, scores, out, h),
                    }
                }
            }
            start += len;
        }
    }
}

/// One head of one text, for [`Attention`].
struct Head<'a> {
    /// The text's rows of `qkv`, `stride` apart.
    rows: &'a [f32],
    /// The head's query and value biases (added as the rows are read).
    query_bias: &'a [f32],
    value_bias: &'a [f32],
    stride: usize,
    /// Where the head's query and value start in a row.
    q0: usize,
    v0: usize,
    /// The head's width.
    d: usize,
    len: usize,
    /// `len` rounded up to whole vectors.
    padded: usize,
    /// `1/√d`.
    scale: f32,
    /// The keys, transposed (`d × padded`).
    keys: &'a [f32],
}

impl Head<'_> {
    /// The context of the `Q` queries from `i0`, into `out` (rows `h` apart, from the
    /// first query's head); `scores` is scratch of `Q × padded`.
    #[inline(always)]
    fn queries<S: Simd, const Q: usize>(
        &self,
        simd: S,
        i0: usize,
        scores: &mut [f32],
        out: &mut [f32],
        h: usize,
    ) {
        let (lanes, d, padded) = (S::F32_LANES, self.d, self.padded);
        let mut queries = [[0f32; MAX_HEAD]; Q];
        for (q, query) in queries.iter_mut().enumerate() {
            let row = &self.rows[(i0 + q) * self.stride + self.q0..][..d];
            for ((x, &y), &b) in query.iter_mut().zip(row).zip(self.query_bias) {
                *x = y + b;
            }
        }
        // Scores, two key vectors at a time.
        let vectors = padded / lanes;
        let mut jv = 0;
        while jv < vectors {
            if vectors - jv >= 2 {
                self.scores::<S, Q, 2>(simd, &queries, jv, scores);
                jv += 2;
            } else {
                self.scores::<S, Q, 1>(simd, &queries, jv, scores);
                jv += 1;
            }
        }
        // Softmax numerators, and one over their sums; the padding keys' scores are set to
        // -∞ first, so whole vectors serve (their numerators, exp(-87), vanish in the sum
        // and meet no value).
        let mut inv = [0f32; Q];
        for (q, inv) in inv.iter_mut().enumerate() {
            let row = &mut scores[q * padded..][..padded];
            row[self.len..].fill(f32::NEG_INFINITY);
            *inv = 1.0 / softmax_numerators(simd, row);
        }
        // The weighted values, two vectors of the head at a time; the rest (a head
        // narrower than whole vectors) one value at a time.
        let whole = d - d % lanes;
        let mut c0 = 0;
        while c0 < whole {
            if whole - c0 >= 2 * lanes {
                self.values::<S, Q, 2>(simd, c0, scores, &inv, out, h);
                c0 += 2 * lanes;
            } else {
                self.values::<S, Q, 1>(simd, c0, scores, &inv, out, h);
                c0 += lanes;
            }
        }
        for c in whole..d {
            for (q, inv) in inv.iter().enumerate() {
                let sum = (0..self.len).fold(0f32, |sum, j| {
                    scores[q * padded + j].mul_add(self.rows[j * self.stride + self.v0 + c], sum)
                });
                out[q * h + c] = sum.mul_add(*inv, self.value_bias[c]);
            }
        }
    }

    /// The scaled scores of `Q` queries against the `V` key vectors from vector `jv`.
    #[inline(always)]
    fn scores<S: Simd, const Q: usize, const V: usize>(
        &self,
        simd: S,
        queries: &[[f32; MAX_HEAD]; Q],
        jv: usize,
        scores: &mut [f32],
    ) {
        let (lanes, padded) = (S::F32_LANES, self.padded);
        let mut acc = [[simd.splat_f32s(0.0); V]; Q];
        for (dd, keys) in self.keys.chunks_exact(padded).enumerate() {
            let (keys, _) = S::as_simd_f32s(&keys[jv * lanes..(jv + V) * lanes]);
            for (acc, query) in acc.iter_mut().zip(queries) {
                let x = simd.splat_f32s(query[dd]);
                for (sum, &k) in acc.iter_mut().zip(keys) {
                    *sum = simd.mul_add_e_f32s(x, k, *sum);
                }
            }
        }
        let scale = simd.splat_f32s(self.scale);
        for (q, acc) in acc.iter().enumerate() {
            let dst = &mut scores[q * padded + jv * lanes..][..V * lanes];
            let (dst, _) = S::as_mut_simd_f32s(dst);
            for (d, &sum) in dst.iter_mut().zip(acc) {
                *d = simd.mul_f32s(sum, scale);
            }
        }
    }

    /// Columns `c0 .. c0 + V·lanes` of the head's context for `Q` queries: their values
    /// weighted by the softmax numerators in `scores`, times `inv`.
    #[inline(always)]
    fn values<S: Simd, const Q: usize, const V: usize>(
        &self,
        simd: S,
        c0: usize,
        scores: &[f32],
        inv: &[f32; Q],
        out: &mut [f32],
        h: usize,
    ) {
        let (lanes, padded) = (S::F32_LANES, self.padded);
        let mut acc = [[simd.splat_f32s(0.0); V]; Q];
        for (j, row) in self.rows.chunks_exact(self.stride).enumerate() {
            let (values, _) = S::as_simd_f32s(&row[self.v0 + c0..][..V * lanes]);
            for (q, acc) in acc.iter_mut().enumerate() {
                let p = simd.splat_f32s(scores[q * padded + j]);
                for (sum, &v) in acc.iter_mut().zip(values) {
                    *sum = simd.mul_add_e_f32s(p, v, *sum);
                }
            }
        }
        // (The softmax weights sum to one, so the value bias adds as it is.)
        let (bias, _) = S::as_simd_f32s(&self.value_bias[c0..][..V * lanes]);
        for (q, acc) in acc.iter().enumerate() {
            let scale = simd.splat_f32s(inv[q]);
            let dst = &mut out[q * h + c0..][..V * lanes];
            let (dst, _) = S::as_mut_simd_f32s(dst);
            for ((d, &sum), &b) in dst.iter_mut().zip(acc).zip(bias) {
                *d = simd.mul_add_e_f32s(sum, scale, b);
            }
        }
    }
}

/// Every layer's four matrices read one after another into one buffer, then packed a
/// layer per task on every core. (One buffer of 43 MB for MiniLM, which the allocator
/// returns to the system whole when it is dropped, not two dozen it would keep.)
fn read_and_pack(
    w: &Weights<'_>,
    plan: &[[Planned; 4]],
    precision: Precision,
) -> Result<Vec<[Matrix; 4]>, EmbedError> {
    let mut all = vec![0f32; plan.iter().flatten().map(|m| m.k * m.cols).sum()];
    // Where each matrix lies in `all`, four per layer.
    let mut ranges = Vec::with_capacity(4 * plan.len());
    let mut at = 0;
    for m in plan.iter().flatten() {
        let part = m.k * m.cols / m.parts.len();
        for name in &m.parts {
            w.read_into(name, &[part / m.k, m.k], &mut all[at..at + part])?;
            at += part;
        }
        ranges.push(at - m.k * m.cols..at);
    }
    let matrices: Vec<[Matrix; 4]> = plan
        .par_iter()
        .zip(ranges.par_chunks_exact(4))
        .map(|(layer, ranges)| {
            std::array::from_fn(|j| {
                let m = &layer[j];
                Matrix::from_columns(&all[ranges[j].clone()], m.k, m.cols, precision)
            })
        })
        .collect();
    drop(all);
    Ok(matrices)
}

/// Where [`BertEncoder::from_dir_cached`] keeps the packed 8-bit matrices, and the
/// fingerprint of the weights they were made from.
struct PackedCache {
    path: PathBuf,
    print: u64,
}

/// The packed cache's first bytes (the format's version is the last digit).
const PACKED_MAGIC: &[u8; 8] = b"TBBERT1\n";

impl PackedCache {
    /// The shape's words in the cache's head: a cache of another shape is not read.
    fn head(&self, shape: &Shape) -> [u64; 4] {
        [
            self.print,
            shape.layers as u64,
            shape.hidden as u64,
            shape.intermediate as u64,
        ]
    }

    /// The matrices of the cache, when it holds all of them for these weights and nothing
    /// else.
    fn read(&self, shape: &Shape) -> Option<Vec<[Matrix; 4]>> {
        let mut r = std::io::BufReader::with_capacity(1 << 16, File::open(&self.path).ok()?);
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic).ok()?;
        if &magic != PACKED_MAGIC {
            return None;
        }
        for expected in self.head(shape) {
            let mut word = [0u8; 8];
            r.read_exact(&mut word).ok()?;
            if u64::from_le_bytes(word) != expected {
                return None;
            }
        }
        let mut layers = Vec::with_capacity(shape.layers);
        for _ in 0..shape.layers {
            let mut layer = Vec::with_capacity(4);
            for (k, cols) in layer_shapes(shape) {
                layer.push(Matrix::Int8(PackedI8::read_from(&mut r, k, cols)?));
            }
            layers.push(layer.try_into().ok()?);
        }
        // Nothing may follow.
        matches!(r.read(&mut [0u8; 1]), Ok(0)).then_some(layers)
    }

    /// Writes `layers` (8-bit matrices) to the cache.
    fn write(&self, shape: &Shape, layers: &[[Matrix; 4]]) -> std::io::Result<()> {
        use std::io::Write;
        write_atomically(&self.path, |out| {
            out.write_all(PACKED_MAGIC)?;
            for word in self.head(shape) {
                out.write_all(&word.to_le_bytes())?;
            }
            for m in layers.iter().flatten() {
                let Matrix::Int8(m) = m else {
                    return Err(std::io::Error::other("only 8-bit matrices are cached"));
                };
                m.write_to(out)?;
            }
            Ok(())
        })
    }
}

/// A layer's four matrices, `(k, cols)`: queries, keys and values side by side, the
/// attention's output, the feed-forward network's up and down projections.
fn layer_shapes(shape: &Shape) -> [(usize, usize); 4] {
    let (h, inter) = (shape.hidden, shape.intermediate);
    [(h, 3 * h), (h, h), (h, inter), (inter, h)]
}

/// The model folder's name (for ids and cache names).
fn folder_name(dir: &Path) -> String {
    dir.file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into())
}

/// The model's shape and layer-norm epsilon from `config.json`.
fn read_config(path: &Path) -> Result<(Shape, f32), EmbedError> {
    let fail = |message: String| EmbedError::Config {
        path: path.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|source| EmbedError::Io {
        path: path.to_owned(),
        source,
    })?;
    let config: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| fail(format!("not JSON: {e}")))?;
    let size = |field: &str| {
        config
            .get(field)
            .and_then(serde_json::Value::as_u64)
            .filter(|&n| n > 0)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| fail(format!("`{field}` must be a positive integer")))
    };
    if let Some(kind) = config.get("model_type").and_then(|v| v.as_str())
        && kind != "bert"
    {
        return Err(fail(format!(
            "`model_type` is {kind:?}; this encoder runs \"bert\""
        )));
    }
    let act = config
        .get("hidden_act")
        .and_then(|v| v.as_str())
        .unwrap_or("gelu");
    if act != "gelu" {
        return Err(fail(format!(
            "`hidden_act` is {act:?}; this encoder runs \"gelu\""
        )));
    }
    let shape = Shape {
        hidden: size("hidden_size")?,
        heads: size("num_attention_heads")?,
        layers: size("num_hidden_layers")?,
        intermediate: size("intermediate_size")?,
        vocab: size("vocab_size")?,
        positions: size("max_position_embeddings")?,
    };
    if !shape.hidden.is_multiple_of(shape.heads) {
        return Err(fail(format!(
            "`hidden_size` {} is not a multiple of `num_attention_heads` {}",
            shape.hidden, shape.heads
        )));
    }
    if shape.hidden / shape.heads > MAX_HEAD {
        return Err(fail(format!(
            "attention heads of {} values (`hidden_size` / `num_attention_heads`); this \
             encoder takes at most {MAX_HEAD}",
            shape.hidden / shape.heads
        )));
    }
    let eps = config
        .get("layer_norm_eps")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(1e-12) as f32;
    Ok((shape, eps))
}
