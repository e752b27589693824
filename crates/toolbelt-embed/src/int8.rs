//! 8-bit matrix products with AVX-512 VNNI or AVX2: the one module of the workspace with
//! `unsafe` (ADR 0072, ADR 0074).
//!
//! The weights (`k × cols`) are quantised once per column (symmetric, 127 levels); each
//! product quantises its input per row the same way and sums the byte products in 32-bit
//! integers. With AVX-512 VNNI, `vpdpbusd` does 64 multiply-adds per instruction, four
//! times AVX-512's f32 fused multiply-adds, on a quarter of their memory. With AVX2 alone
//! (most AMD EPYCs before Zen 4), `vpmaddubsw` and `vpmaddwd` do 32 per pair, about what
//! f32 FMAs do, on a quarter of the memory: a short query, which reads every weight once
//! or twice, waits on memory, not on arithmetic. `pulp`, which the rest of the kernels
//! use, wraps neither, so this module calls them through `std::arch` behind a run-time
//! check of the CPU; the `unsafe` is those calls and the unaligned loads and stores beside
//! them, each with the reason it holds. Other CPUs take the portable integer path, which
//! computes the same integers (the encoder keeps f32 there: [`fast`]).
//!
//! The sums are exact integers, so every path gives the same bits; the error against an
//! f32 product is the quantisation's (docs/ROUTING.md has its effect on rankings).
#![allow(unsafe_code)]

use rayon::prelude::*;

use crate::kernel::Threads;

/// Columns per panel: one 512-bit vector of 32-bit sums.
const PANEL: usize = 16;
/// Rows per pass: twelve, times two panels, is 24 sums in flight (of AVX-512's 32
/// registers), each weight vector loaded serving twelve rows.
const PASS_ROWS: usize = 12;
/// Rows multiplied by one panel before the next (the panel stays in the core's cache):
/// whole passes.
const TILE_ROWS: usize = 5 * PASS_ROWS;
/// Products with more rows than this use every rayon thread. Handing a product to another
/// thread costs tens of microseconds (waking it), about what half the product of a few
/// dozen rows takes: on two busy cores, a MiniLM query of 32 tokens measured 1.2–1.5 ms on
/// one thread against 1.45–1.5 ms on two, one of 64 tokens 2.35–2.8 ms on two against
/// 2.6–3.0 ms on one.
const PARALLEL_ROWS: usize = 32;

/// A weight matrix quantised to 8 bits per column, in panels of 16 columns; each panel
/// holds, for every four consecutive rows `4q .. 4q + 3`, the 16 columns' four bytes side
/// by side (what `vpdpbusd` multiplies with one 32-bit group of the input).
#[derive(Debug, Clone)]
pub(crate) struct PackedI8 {
    k: usize,
    cols: usize,
    /// `k` rounded up to a multiple of four (the extra rows are zero).
    k4: usize,
    panels: Vec<i8>,
    /// Per column: the weight of one step.
    scale: Vec<f32>,
    /// Per column (padded to whole panels): the sum of its quantised weights, to take
    /// off the +128 the input bytes carry.
    sums: Vec<i32>,
}

/// Rows per pass on the AVX2 path: four, times two halves of a panel, is 8 sums in
/// flight, beside the panel's two vectors and each row's two broadcast words (of AVX2's 16
/// registers).
const AVX2_ROWS: usize = 4;

/// The ways [`PackedI8`] multiplies; each gives the same integers, so the same bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    /// AVX-512 with VNNI (`vpdpbusd`).
    Vnni,
    /// AVX2 (`vpmaddubsw`, then `vpmaddwd`).
    Avx2,
    /// Plain Rust, for tests and CPUs with neither.
    Portable,
}

/// The fastest path this CPU runs.
pub(crate) fn path() -> Path {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
        {
            return Path::Vnni;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Path::Avx2;
        }
    }
    Path::Portable
}

/// Whether 8-bit products run in SIMD on this CPU: where they do not, the portable path is
/// slower than f32, and the encoder keeps f32.
pub(crate) fn fast() -> bool {
    path() != Path::Portable
}

impl PackedI8 {
    /// Quantises the row-major `w` (`k × cols`).
    ///
    /// # Panics
    /// When `w` does not hold `k × cols` values (a bug of the caller).
    #[cfg(test)]
    pub(crate) fn new(w: &[f32], k: usize, cols: usize) -> Self {
        assert_eq!(w.len(), k * cols, "weights of {k} × {cols}");
        Self::pack(k, cols, |col, r| w[r * cols + col])
    }

    /// Quantises the matrix (`k × cols`) whose columns are the rows of `columns`
    /// (`cols × k`, the layout a PyTorch linear layer stores: one row per output), reading
    /// each column where it lies (the tests check it packs what `new` packs of its transpose).
    ///
    /// # Panics
    /// When `columns` does not hold `cols × k` values (a bug of the caller).
    pub(crate) fn from_columns(columns: &[f32], k: usize, cols: usize) -> Self {
        assert_eq!(columns.len(), k * cols, "weights of {cols} columns of {k}");
        Self::pack(k, cols, |col, r| columns[col * k + r])
    }

    /// Writes the packed matrix: `k` and `cols` (u64), then its bytes, scales and sums, all
    /// little-endian ([`PackedI8::read_from`] reads it back).
    pub(crate) fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        out.write_all(&(self.k as u64).to_le_bytes())?;
        out.write_all(&(self.cols as u64).to_le_bytes())?;
        out.write_all(bytemuck::cast_slice(&self.panels))?;
        for s in &self.scale {
            out.write_all(&s.to_le_bytes())?;
        }
        for s in &self.sums {
            out.write_all(&s.to_le_bytes())?;
        }
        Ok(())
    }

    /// Reads a matrix [`PackedI8::write_to`] wrote; `None` when it is not `k × cols` or
    /// a read fails (a cache cut short or made for another model).
    pub(crate) fn read_from(input: &mut impl std::io::Read, k: usize, cols: usize) -> Option<Self> {
        let mut word = [0u8; 8];
        let mut size = || {
            input.read_exact(&mut word).ok()?;
            usize::try_from(u64::from_le_bytes(word)).ok()
        };
        if size()? != k || size()? != cols {
            return None;
        }
        let k4 = k.next_multiple_of(4);
        let n = cols.div_ceil(PANEL);
        let mut panels = vec![0i8; n * k4 * PANEL];
        let mut scale = vec![0f32; cols];
        let mut sums = vec![0i32; n * PANEL];
        input
            .read_exact(bytemuck::cast_slice_mut(&mut panels))
            .ok()?;
        input
            .read_exact(bytemuck::cast_slice_mut(&mut scale))
            .ok()?;
        input.read_exact(bytemuck::cast_slice_mut(&mut sums)).ok()?;
        if cfg!(target_endian = "big") {
            scale
                .iter_mut()
                .for_each(|s| *s = f32::from_bits(u32::from_le(s.to_bits())));
            sums.iter_mut().for_each(|s| *s = i32::from_le(*s));
        }
        Some(Self {
            k,
            cols,
            k4,
            panels,
            scale,
            sums,
        })
    }

    /// Quantises the `k × cols` matrix whose value at row `r`, column `col` is `at(col, r)`.
    fn pack(k: usize, cols: usize, at: impl Fn(usize, usize) -> f32) -> Self {
        let k4 = k.next_multiple_of(4);
        let n = cols.div_ceil(PANEL);
        let mut scale = vec![1f32; cols];
        for (c, s) in scale.iter_mut().enumerate() {
            let max = (0..k).map(|r| at(c, r).abs()).fold(0f32, f32::max);
            if max > 0.0 {
                *s = max / 127.0;
            }
        }
        let mut panels = vec![0i8; n * k4 * PANEL];
        let mut sums = vec![0i32; n * PANEL];
        for (p, panel) in panels.chunks_exact_mut((k4 * PANEL).max(1)).enumerate() {
            for (q, group) in panel.chunks_exact_mut(4 * PANEL).enumerate() {
                for c in 0..PANEL.min(cols - p * PANEL) {
                    let col = p * PANEL + c;
                    for b in 0..4 {
                        let r = 4 * q + b;
                        if r < k {
                            let v = round_weight(at(col, r) / scale[col]);
                            group[4 * c + b] = v as i8;
                            sums[col] += v;
                        }
                    }
                }
            }
        }
        Self {
            k,
            cols,
            k4,
            panels,
            scale,
            sums,
        }
    }

    /// `a` (`rows × k`, row-major) times this matrix into `out` (`rows × cols`), every
    /// value of which it writes. Threads as [`crate::kernel::Packed::matmul`]; on the
    /// fastest [`Path`] of this CPU.
    ///
    /// # Panics
    /// When `a` does not hold `rows × k` values or `out` `rows × cols` (a bug of the
    /// caller).
    pub(crate) fn matmul_into(&self, a: &[f32], rows: usize, threads: Threads, out: &mut [f32]) {
        self.matmul_on(a, rows, threads, path(), out);
    }

    /// [`PackedI8::matmul_into`] on the given path (one this CPU runs).
    fn matmul_on(&self, a: &[f32], rows: usize, threads: Threads, path: Path, out: &mut [f32]) {
        assert_eq!(a.len(), rows * self.k, "input of {rows} × {}", self.k);
        assert_eq!(
            out.len(),
            rows * self.cols,
            "output of {rows} × {}",
            self.cols
        );
        if self.k == 0 || self.cols == 0 || rows == 0 {
            out.fill(0.0);
            return;
        }
        let threads = match threads {
            Threads::All => rayon::current_num_threads(),
            Threads::This => 1,
        };
        if rows <= PARALLEL_ROWS || threads < 2 {
            self.product(a, out, path);
            return;
        }
        // (Any split gives the same bits: the sums are exact.)
        let per = rows.div_ceil(threads);
        out.par_chunks_mut(per * self.cols)
            .zip(a.par_chunks(per * self.k))
            .for_each(|(out, a)| self.product(a, out, path));
    }

    /// The product of the rows of `a` into `out`, a tile of rows at a time.
    fn product(&self, a: &[f32], out: &mut [f32], path: Path) {
        match path {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `path` is `Vnni` only when `path()` found AVX-512F, AVX-512BW and
            // AVX-512 VNNI on this CPU, the features `product_vnni` is compiled for.
            Path::Vnni => unsafe { product_vnni(self, a, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `path` is `Avx2` only where AVX2 was found on this CPU (by `path()`,
            // or by the tests), the feature `product_avx2` is compiled for.
            Path::Avx2 => unsafe { product_avx2(self, a, out) },
            _ => self.product_portable(a, out),
        }
    }

    /// [`PackedI8::product`] without SIMD: the same integers, so the same bits.
    fn product_portable(&self, a: &[f32], out: &mut [f32]) {
        let (k, k4, cols) = (self.k, self.k4, self.cols);
        let rows = a.len() / k;
        let groups = k4 / 4;
        // Per row: its step, and its bytes (+128, so unsigned) four to a 32-bit group,
        // interleaved by pass: group `q` of the pass's rows side by side.
        let mut steps = vec![0f32; rows];
        let mut packed = vec![0u32; rows.next_multiple_of(PASS_ROWS) * groups];
        for (pass, chunk) in a.chunks(PASS_ROWS * k).enumerate() {
            let n = chunk.len() / k;
            let dst = &mut packed[pass * PASS_ROWS * groups..][..n * groups];
            for (r, row) in chunk.chunks_exact(k).enumerate() {
                let max = row.iter().fold(0f32, |m, v| m.max(v.abs()));
                let step = if max > 0.0 { max / 127.0 } else { 1.0 };
                steps[pass * PASS_ROWS + r] = step;
                let inv = 1.0 / step;
                for q in 0..groups {
                    let mut word = 0u32;
                    for b in 0..4 {
                        let byte = row.get(4 * q + b).map_or(128, |&v| quantise(v, inv));
                        let byte = u32::from(byte);
                        word |= byte << (8 * b);
                    }
                    dst[q * n + r] = word;
                }
            }
        }
        let mut sums = [[0i32; PANEL]; PASS_ROWS];
        for t0 in (0..rows).step_by(TILE_ROWS) {
            let t1 = (t0 + TILE_ROWS).min(rows);
            for (p, panel) in self.panels.chunks_exact(k4 * PANEL).enumerate() {
                let c0 = p * PANEL;
                let width = PANEL.min(cols - c0);
                for r0 in (t0..t1).step_by(PASS_ROWS) {
                    let n = (t1 - r0).min(PASS_ROWS);
                    let input = &packed[r0 * groups..][..n * groups];
                    block(input, n, panel, &mut sums);
                    for (r, row) in sums[..n].iter().enumerate() {
                        let step = steps[r0 + r];
                        let dst = &mut out[(r0 + r) * cols + c0..][..width];
                        for (c, d) in dst.iter_mut().enumerate() {
                            let exact = row[c] - 128 * self.sums[c0 + c];
                            *d = exact as f32 * (self.scale[c0 + c] * step);
                        }
                    }
                }
            }
        }
    }
}

/// The 32-bit sums of `n` rows (`input`: each group's `n` words side by side) against one
/// panel, into `sums[..n]`.
fn block(input: &[u32], n: usize, panel: &[i8], sums: &mut [[i32; PANEL]; PASS_ROWS]) {
    for (r, sum) in sums[..n].iter_mut().enumerate() {
        *sum = [0; PANEL];
        for (q, group) in panel.chunks_exact(4 * PANEL).enumerate() {
            let word = input[q * n + r];
            for (c, s) in sum.iter_mut().enumerate() {
                for b in 0..4 {
                    let x = ((word >> (8 * b)) & 0xff) as i32;
                    *s += x * i32::from(group[4 * c + b]);
                }
            }
        }
    }
}

/// [`PackedI8::product`] with AVX-512: each row quantised in vectors, the sums of a pass
/// of rows kept in registers over one, two or four panels, and turned back into f32 there.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn product_vnni(m: &PackedI8, a: &[f32], out: &mut [f32]) {
    let (k, k4, cols) = (m.k, m.k4, m.cols);
    let rows = a.len() / k;
    // Each pass's rows quantised (+128, so unsigned) and their 32-bit groups interleaved
    // (group `q` of the pass's `n` rows side by side), so the inner loop reads them from
    // one advancing address; a row's padding bytes meet zero weights.
    let groups = k4 / 4;
    let mut words = vec![0u32; rows.next_multiple_of(PASS_ROWS) * groups];
    let mut steps = vec![0f32; rows];
    let mut bytes = vec![128u8; k4];
    for (pass, chunk) in a.chunks(PASS_ROWS * k).enumerate() {
        let n = chunk.len() / k;
        let dst = &mut words[pass * PASS_ROWS * groups..][..n * groups];
        let steps = &mut steps[pass * PASS_ROWS..][..n];
        for ((r, row), step) in chunk.chunks_exact(k).enumerate().zip(steps) {
            *step = quantise_row(row, &mut bytes[..k]);
            for (q, b) in bytes.as_chunks::<4>().0.iter().enumerate() {
                dst[q * n + r] = u32::from_le_bytes(*b);
            }
        }
    }
    // `P` panels side by side against a pass of `R` rows: `P·R` sums in flight, so a pass
    // of few rows still keeps the multiply-adds overlapping (sixteen or more sums for
    // eight rows or fewer), and with more rows each broadcast input word serves two
    // panels.
    let panels = m.panels.len() / (k4 * PANEL).max(1);
    let wide = if rows <= 4 { 4 } else { 2 };
    let mut p0 = 0;
    while p0 < panels {
        let width = if panels - p0 >= wide {
            wide
        } else if panels - p0 >= 2 {
            2
        } else {
            1
        };
        let mut r0 = 0;
        while r0 < rows {
            let n = (rows - r0).min(PASS_ROWS);
            let input = &words[r0 * groups..][..n * groups];
            let out = &mut out[r0 * cols..];
            let steps = &steps[r0..r0 + n];
            macro_rules! run {
                ($p:literal; $($r:literal)*) => {
                    match n {
                        $($r => pass::<$r, $p>(m, p0, input, steps, out),)*
                        _ => unreachable!("a pass of {n} rows against {} panels", $p),
                    }
                };
            }
            match width {
                4 => run!(4; 1 2 3 4),
                2 => run!(2; 1 2 3 4 5 6 7 8 9 10 11 12),
                _ => run!(1; 1 2 3 4 5 6 7 8 9 10 11 12),
            }
            r0 += n;
        }
        p0 += width;
    }
}

/// Panels `p0 .. p0 + P` of `m` against `R` rows (`input`: each group's `R` words side by
/// side; `steps`: the rows' steps), written into the rows of `out` (`cols` apart).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn pass<const R: usize, const P: usize>(
    m: &PackedI8,
    p0: usize,
    input: &[u32],
    steps: &[f32],
    out: &mut [f32],
) {
    use std::arch::x86_64::{
        __m512i, _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_loadu_ps, _mm512_loadu_si512,
        _mm512_mask_storeu_ps, _mm512_mul_ps, _mm512_set1_epi32, _mm512_set1_ps,
        _mm512_setzero_si512, _mm512_storeu_ps, _mm512_sub_epi32,
    };
    let (k4, cols) = (m.k4, m.cols);
    let size = k4 * PANEL;
    let (words, _) = input.as_chunks::<R>();
    // Each panel's groups of 64 bytes, as many as the input has (so no check in the loop).
    let panels: [&[[i8; 4 * PANEL]]; P] = std::array::from_fn(|p| {
        let panel = &m.panels[(p0 + p) * size..][..size];
        &panel.as_chunks::<{ 4 * PANEL }>().0[..words.len()]
    });
    let mut sums = [[_mm512_setzero_si512(); R]; P];
    for (q, words) in words.iter().enumerate() {
        let w: [__m512i; P] = std::array::from_fn(|p| {
            let group = &panels[p][q];
            // SAFETY: `group` is 64 bytes, the width of the unaligned load.
            unsafe { _mm512_loadu_si512(group.as_ptr().cast::<__m512i>()) }
        });
        for (r, &word) in words.iter().enumerate() {
            let x = _mm512_set1_epi32(word as i32);
            for (sums, &w) in sums.iter_mut().zip(&w) {
                sums[r] = _mm512_dpbusd_epi32(sums[r], x, w);
            }
        }
    }
    for (p, sums) in sums.iter().enumerate() {
        let c0 = (p0 + p) * PANEL;
        let width = PANEL.min(cols - c0);
        // 128 × each column's weight sum (the input bytes' offset), and each column's step.
        let (mut comp, mut scale) = ([0i32; PANEL], [0f32; PANEL]);
        for c in 0..width {
            comp[c] = 128 * m.sums[c0 + c];
            scale[c] = m.scale[c0 + c];
        }
        // SAFETY: `comp` and `scale` are 16 values, 64 bytes, the width of the loads.
        let (comp, scale) = unsafe {
            (
                _mm512_loadu_si512(comp.as_ptr().cast::<__m512i>()),
                _mm512_loadu_ps(scale.as_ptr()),
            )
        };
        for (r, (&sum, &step)) in sums.iter().zip(steps).enumerate() {
            let v = _mm512_mul_ps(
                _mm512_cvtepi32_ps(_mm512_sub_epi32(sum, comp)),
                _mm512_mul_ps(scale, _mm512_set1_ps(step)),
            );
            let dst = &mut out[r * cols + c0..][..width];
            if width == PANEL {
                // SAFETY: `dst` is 16 f32s, 64 bytes, the width of the store.
                unsafe { _mm512_storeu_ps(dst.as_mut_ptr(), v) };
            } else {
                // SAFETY: the mask keeps the store to `dst`'s `width` values.
                unsafe { _mm512_mask_storeu_ps(dst.as_mut_ptr(), (1u16 << width) - 1, v) };
            }
        }
    }
}

/// Quantises `row` into `dst` (+128) with AVX-512; returns the step. Rounds half to even,
/// as [`quantise`] does.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn quantise_row(row: &[f32], dst: &mut [u8]) -> f32 {
    use std::arch::x86_64::{
        __m128i, _mm_storeu_si128, _mm512_abs_ps, _mm512_add_epi32, _mm512_cvtepi32_epi8,
        _mm512_cvtps_epi32, _mm512_loadu_ps, _mm512_max_epi32, _mm512_max_ps, _mm512_min_epi32,
        _mm512_mul_ps, _mm512_reduce_max_ps, _mm512_set1_epi32, _mm512_set1_ps, _mm512_setzero_ps,
    };
    let (chunks, tail) = row.as_chunks::<16>();
    let mut max = _mm512_setzero_ps();
    for chunk in chunks {
        // SAFETY: `chunk` is 16 f32s, the width of the unaligned load.
        max = _mm512_max_ps(
            max,
            _mm512_abs_ps(unsafe { _mm512_loadu_ps(chunk.as_ptr()) }),
        );
    }
    let max = tail
        .iter()
        .fold(_mm512_reduce_max_ps(max), |m, v| m.max(v.abs()));
    let step = if max > 0.0 { max / 127.0 } else { 1.0 };
    let inv = 1.0 / step;
    let (lo, hi, bias, vinv) = (
        _mm512_set1_epi32(-127),
        _mm512_set1_epi32(127),
        _mm512_set1_epi32(128),
        _mm512_set1_ps(inv),
    );
    let (out, out_tail) = dst.as_chunks_mut::<16>();
    for (chunk, out) in chunks.iter().zip(out) {
        // SAFETY: `chunk` is 16 f32s, the width of the unaligned load.
        let x = unsafe { _mm512_loadu_ps(chunk.as_ptr()) };
        // Rounds to nearest even (the default rounding mode).
        let q = _mm512_cvtps_epi32(_mm512_mul_ps(x, vinv));
        let q = _mm512_add_epi32(_mm512_min_epi32(_mm512_max_epi32(q, lo), hi), bias);
        // SAFETY: `out` is 16 bytes, the width of the unaligned store.
        unsafe { _mm_storeu_si128(out.as_mut_ptr().cast::<__m128i>(), _mm512_cvtepi32_epi8(q)) };
    }
    for (x, d) in tail.iter().zip(out_tail) {
        *d = quantise(*x, inv);
    }
    step
}

/// [`PackedI8::product`] with AVX2. `vpmaddubsw` multiplies unsigned bytes by signed ones
/// and adds pairs in 16 bits, with saturation: with the +128 input bytes of the VNNI path
/// a pair could reach 2 · 255 · 127 and saturate. So here each input byte is the signed
/// step count `x` (within ±127), and a pair multiplies `|x|` by the weight with `x`'s sign
/// (`vpsignb`): at most 2 · 127 · 127, exact. `vpmaddwd` by ones then adds pairs of pairs
/// into 32 bits. The sums are the VNNI path's less its 128 × the column's weight sum: the
/// same integers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn product_avx2(m: &PackedI8, a: &[f32], out: &mut [f32]) {
    let (k, k4) = (m.k, m.k4);
    let rows = a.len() / k;
    // Each pass's rows quantised (signed, and their absolute values), four bytes to a
    // word, the words of group `q` of the pass's rows side by side; a row's padding bytes
    // are zero.
    let groups = k4 / 4;
    let size = rows.next_multiple_of(AVX2_ROWS) * groups;
    let (mut signed, mut abs) = (vec![0u32; size], vec![0u32; size]);
    let mut steps = vec![0f32; rows];
    let mut bytes = vec![0i8; k4];
    for (pass, chunk) in a.chunks(AVX2_ROWS * k).enumerate() {
        let n = chunk.len() / k;
        let at = pass * AVX2_ROWS * groups;
        let (signed, abs) = (
            &mut signed[at..][..n * groups],
            &mut abs[at..][..n * groups],
        );
        let steps = &mut steps[pass * AVX2_ROWS..][..n];
        for ((r, row), step) in chunk.chunks_exact(k).enumerate().zip(steps) {
            *step = quantise_row_avx2(row, &mut bytes[..k]);
            for (q, b) in bytes.as_chunks::<4>().0.iter().enumerate() {
                signed[q * n + r] = u32::from_le_bytes(b.map(|v| v as u8));
                abs[q * n + r] = u32::from_le_bytes(b.map(i8::unsigned_abs));
            }
        }
    }
    let panels = m.panels.len() / (k4 * PANEL).max(1);
    for p in 0..panels {
        let mut r0 = 0;
        while r0 < rows {
            let n = (rows - r0).min(AVX2_ROWS);
            let words = r0 * groups..(r0 + n) * groups;
            let (signed, abs) = (&signed[words.clone()], &abs[words]);
            let out = &mut out[r0 * m.cols..];
            let steps = &steps[r0..r0 + n];
            match n {
                1 => pass_avx2::<1>(m, p, signed, abs, steps, out),
                2 => pass_avx2::<2>(m, p, signed, abs, steps, out),
                3 => pass_avx2::<3>(m, p, signed, abs, steps, out),
                _ => pass_avx2::<4>(m, p, signed, abs, steps, out),
            }
            r0 += n;
        }
    }
}

/// Panel `p` of `m` against `R` rows (`signed`, `abs`: each group's `R` words side by
/// side; `steps`: the rows' steps), written into the rows of `out` (`cols` apart).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn pass_avx2<const R: usize>(
    m: &PackedI8,
    p: usize,
    signed: &[u32],
    abs: &[u32],
    steps: &[f32],
    out: &mut [f32],
) {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_cvtepi32_ps, _mm256_loadu_ps, _mm256_loadu_si256,
        _mm256_madd_epi16, _mm256_maddubs_epi16, _mm256_mul_ps, _mm256_set1_epi16,
        _mm256_set1_epi32, _mm256_set1_ps, _mm256_setzero_si256, _mm256_sign_epi8,
        _mm256_storeu_ps,
    };
    let (k4, cols) = (m.k4, m.cols);
    let size = k4 * PANEL;
    let (signed, _) = signed.as_chunks::<R>();
    let (abs, _) = abs.as_chunks::<R>();
    // The panel's groups of 64 bytes, as many as the input has (so no check in the loop).
    let panel = &m.panels[p * size..][..size];
    let panel = &panel.as_chunks::<{ 4 * PANEL }>().0[..signed.len()];
    let ones = _mm256_set1_epi16(1);
    let mut sums = [[_mm256_setzero_si256(); 2]; R];
    for ((group, signed), abs) in panel.iter().zip(signed).zip(abs) {
        // SAFETY: `group` is 64 bytes, two 32-byte unaligned loads.
        let w = unsafe {
            let at = group.as_ptr().cast::<__m256i>();
            [_mm256_loadu_si256(at), _mm256_loadu_si256(at.add(1))]
        };
        for ((sums, &s), &a) in sums.iter_mut().zip(signed).zip(abs) {
            let (s, a) = (_mm256_set1_epi32(s as i32), _mm256_set1_epi32(a as i32));
            for (sum, &w) in sums.iter_mut().zip(&w) {
                let pairs = _mm256_maddubs_epi16(a, _mm256_sign_epi8(w, s));
                *sum = _mm256_add_epi32(*sum, _mm256_madd_epi16(pairs, ones));
            }
        }
    }
    let c0 = p * PANEL;
    let width = PANEL.min(cols - c0);
    let mut scale = [0f32; PANEL];
    scale[..width].copy_from_slice(&m.scale[c0..c0 + width]);
    // SAFETY: `scale` is 16 f32s, two 32-byte unaligned loads.
    let scale = unsafe {
        [
            _mm256_loadu_ps(scale.as_ptr()),
            _mm256_loadu_ps(scale.as_ptr().add(8)),
        ]
    };
    for (r, (sums, &step)) in sums.iter().zip(steps).enumerate() {
        let mut values = [0f32; PANEL];
        for (h, (&sum, &scale)) in sums.iter().zip(&scale).enumerate() {
            let v = _mm256_mul_ps(
                _mm256_cvtepi32_ps(sum),
                _mm256_mul_ps(scale, _mm256_set1_ps(step)),
            );
            // SAFETY: `values[8 * h ..]` holds 8 f32s, the width of the unaligned store.
            unsafe { _mm256_storeu_ps(values.as_mut_ptr().add(8 * h), v) };
        }
        out[r * cols + c0..][..width].copy_from_slice(&values[..width]);
    }
}

/// Quantises `row` into `dst` (signed: `x / step` rounded half to even, as [`quantise`]
/// less 128) with AVX2; returns the step.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn quantise_row_avx2(row: &[f32], dst: &mut [i8]) -> f32 {
    use std::arch::x86_64::{
        __m256i, _mm_cvtss_f32, _mm_max_ps, _mm_movehl_ps, _mm_shuffle_ps, _mm256_and_ps,
        _mm256_castps256_ps128, _mm256_castsi256_ps, _mm256_cvtps_epi32, _mm256_extractf128_ps,
        _mm256_loadu_ps, _mm256_max_epi8, _mm256_max_ps, _mm256_mul_ps, _mm256_packs_epi16,
        _mm256_packs_epi32, _mm256_permutevar8x32_epi32, _mm256_set1_epi8, _mm256_set1_epi32,
        _mm256_set1_ps, _mm256_setr_epi32, _mm256_setzero_ps, _mm256_storeu_si256,
    };
    let magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
    let (eights, tail) = row.as_chunks::<8>();
    let mut max = _mm256_setzero_ps();
    for chunk in eights {
        // SAFETY: `chunk` is 8 f32s, the width of the unaligned load.
        let x = unsafe { _mm256_loadu_ps(chunk.as_ptr()) };
        max = _mm256_max_ps(max, _mm256_and_ps(x, magnitude));
    }
    let half = _mm_max_ps(_mm256_castps256_ps128(max), _mm256_extractf128_ps::<1>(max));
    let quarter = _mm_max_ps(half, _mm_movehl_ps(half, half));
    let one = _mm_max_ps(quarter, _mm_shuffle_ps::<0b01>(quarter, quarter));
    let max = tail.iter().fold(_mm_cvtss_f32(one), |m, v| m.max(v.abs()));
    let step = if max > 0.0 { max / 127.0 } else { 1.0 };
    let inv = 1.0 / step;
    let vinv = _mm256_set1_ps(inv);
    // `vpackssdw` and `vpacksswb` pack within each 128-bit lane: this puts the eight
    // four-byte runs back in order.
    let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    let floor = _mm256_set1_epi8(-127);
    let (chunks, _) = row.as_chunks::<32>();
    let (out, _) = dst.as_chunks_mut::<32>();
    for (chunk, out) in chunks.iter().zip(out.iter_mut()) {
        // Rounds to nearest even (the default rounding mode).
        // SAFETY: `chunk` is 32 f32s, four 8-value unaligned loads.
        let q = unsafe {
            let at = chunk.as_ptr();
            [0, 8, 16, 24]
                .map(|i| _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(at.add(i)), vinv)))
        };
        // Saturating packs keep ±127 (and below, clamped after).
        let bytes = _mm256_packs_epi16(
            _mm256_packs_epi32(q[0], q[1]),
            _mm256_packs_epi32(q[2], q[3]),
        );
        let bytes = _mm256_max_epi8(_mm256_permutevar8x32_epi32(bytes, order), floor);
        // SAFETY: `out` is 32 bytes, the width of the unaligned store.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast::<__m256i>(), bytes) };
    }
    let done = chunks.len() * 32;
    for (x, d) in row[done..].iter().zip(&mut dst[done..]) {
        *d = (i32::from(quantise(*x, inv)) - 128) as i8;
    }
    step
}

/// A weight in steps: `v.round()` (half away from zero) within ±127, without the call to
/// libm's `roundf` that `f32::round` is on x86-64 (a quarter of packing MiniLM, by perf): `v` is
/// within ±127 steps (a column's step is its largest weight over 127), so its integer part
/// fits an `i32` and its fraction is exact.
fn round_weight(v: f32) -> i32 {
    // (NaN: 0, as `v.round().clamp(..) as i8` gives.)
    let whole = v as i32;
    let fraction = v - whole as f32;
    (whole + i32::from(fraction >= 0.5) - i32::from(fraction <= -0.5)).clamp(-127, 127)
}

/// One value's byte: `x / step` rounded half to even, within ±127, plus 128.
fn quantise(x: f32, inv: f32) -> u8 {
    ((x * inv).round_ties_even().clamp(-127.0, 127.0) as i32 + 128) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SIMD paths this CPU runs.
    fn runs_here() -> Vec<Path> {
        let mut paths = vec![];
        if path() == Path::Vnni {
            paths.push(Path::Vnni);
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            paths.push(Path::Avx2);
        }
        paths
    }

    #[test]
    fn weights_round_as_f32_round_does() {
        let mut values = vec![
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            0.499_999_97,
            -0.499_999_97,
            126.5,
            -126.5,
            127.0,
            127.000_01,
            -127.000_01,
            127.6,
            -127.6,
            f32::NAN,
        ];
        let mut next = crate::kernel::values(0x51ed_270b);
        values.extend((0..100_000).map(|_| next() * 127.5));
        for v in values {
            let expected = v.round().clamp(-127.0, 127.0) as i8;
            assert_eq!(round_weight(v), i32::from(expected), "{v}");
        }
    }

    #[test]
    fn full_scale_bytes_do_not_saturate() {
        // Every input and weight at ±127 steps: each pair of byte products is ±2·127·127,
        // the most AVX2's 16-bit pair sums must hold.
        let (rows, k, cols) = (5, 64, 16);
        let a: Vec<f32> = (0..rows * k)
            .map(|i| if (i / k) % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        let w: Vec<f32> = (0..k * cols)
            .map(|i| if (i % cols) % 3 == 0 { -0.5 } else { 0.5 })
            .collect();
        let m = PackedI8::new(&w, k, cols);
        let on = |path| {
            let mut out = vec![f32::NAN; rows * cols];
            m.matmul_on(&a, rows, Threads::This, path, &mut out);
            out
        };
        let portable = on(Path::Portable);
        for (i, got) in portable.iter().enumerate() {
            let (r, c) = (i / cols, i % cols);
            let sign = if r % 2 == 0 { 1.0 } else { -1.0 } * if c % 3 == 0 { -1.0 } else { 1.0 };
            let exact = sign * 0.5 * k as f32;
            assert!((got - exact).abs() < 1e-4, "at {r},{c}: {got} vs {exact}");
        }
        for path in runs_here() {
            assert_eq!(on(path), portable, "{path:?}");
        }
    }

    #[test]
    fn every_path_gives_the_same_bits_and_stays_near_the_f32_product() {
        let mut next = crate::kernel::values(0x9e37_79b9);
        for (rows, k, cols) in [
            (1, 7, 5),
            (2, 4, 0),
            (3, 33, 70),
            (16, 64, 48),
            (17, 40, 33),
            (37, 384, 40),
            (9, 1536, 24),
            (130, 48, 20),
        ] {
            let a: Vec<f32> = (0..rows * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * cols).map(|_| next()).collect();
            let m = PackedI8::new(&w, k, cols);
            // The same matrix read from its columns (a linear layer's layout) packs the same.
            let mut columns = vec![0f32; k * cols];
            for r in 0..k {
                for c in 0..cols {
                    columns[c * k + r] = w[r * cols + c];
                }
            }
            let from_columns = PackedI8::from_columns(&columns, k, cols);
            assert_eq!(from_columns.panels, m.panels);
            assert_eq!(from_columns.scale, m.scale);
            assert_eq!(from_columns.sums, m.sums);
            let on = |threads, path| {
                // (NaN first: every value must be written.)
                let mut out = vec![f32::NAN; rows * cols];
                m.matmul_on(&a, rows, threads, path, &mut out);
                out
            };
            let portable = on(Threads::This, Path::Portable);
            assert_eq!(on(Threads::All, Path::Portable), portable);
            for path in runs_here() {
                assert_eq!(on(Threads::This, path), portable, "{path:?}");
                assert_eq!(on(Threads::All, path), portable, "{path:?}");
            }
            for r in 0..rows {
                for c in 0..cols {
                    let exact: f32 = (0..k).map(|i| a[r * k + i] * w[i * cols + c]).sum();
                    let got = portable[r * cols + c];
                    // Two 8-bit roundings per term: within 2% of the terms' scale.
                    assert!(
                        (got - exact).abs() <= 0.02 * (k as f32).sqrt() + 1e-3,
                        "({rows}×{k})·({k}×{cols}) at {r},{c}: {got} vs {exact}"
                    );
                }
            }
        }
    }
}
