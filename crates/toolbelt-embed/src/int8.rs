//! 8-bit matrix products with AVX-512 VNNI: the one module of the workspace with `unsafe`
//! (ADR 0072).
//!
//! The weights (`k × cols`) are quantised once per column (symmetric, 127 levels); each
//! product quantises its input per row the same way and sums `u8 × i8` products in 32-bit
//! integers with `vpdpbusd` (64 multiply-adds per instruction, four times AVX-512's f32
//! fused multiply-adds, and a quarter of their memory). `pulp`, which the rest of the
//! kernels use, has no wrapper for that instruction, so this module calls it through
//! `std::arch` behind a run-time check of the CPU; the `unsafe` is that call and the
//! unaligned loads and stores beside it, each with the reason it holds. CPUs without VNNI
//! take the portable integer path, which computes the same integers.
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

/// Whether this CPU runs [`PackedI8`]'s VNNI path.
pub(crate) fn vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
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
                            let v = (at(col, r) / scale[col]).round().clamp(-127.0, 127.0);
                            group[4 * c + b] = v as i8;
                            sums[col] += v as i32;
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
    /// value of which it writes. Threads as [`crate::kernel::Packed::matmul`]; on the VNNI
    /// path when the CPU has it.
    ///
    /// # Panics
    /// When `a` does not hold `rows × k` values or `out` `rows × cols` (a bug of the
    /// caller).
    pub(crate) fn matmul_into(&self, a: &[f32], rows: usize, threads: Threads, out: &mut [f32]) {
        self.matmul_on(a, rows, threads, vnni(), out);
    }

    /// [`PackedI8::matmul_into`] on the VNNI path or the portable one.
    fn matmul_on(&self, a: &[f32], rows: usize, threads: Threads, vnni: bool, out: &mut [f32]) {
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
            self.product(a, out, vnni);
            return;
        }
        // (Any split gives the same bits: the sums are exact.)
        let per = rows.div_ceil(threads);
        out.par_chunks_mut(per * self.cols)
            .zip(a.par_chunks(per * self.k))
            .for_each(|(out, a)| self.product(a, out, vnni));
    }

    /// The product of the rows of `a` into `out`, a tile of rows at a time.
    fn product(&self, a: &[f32], out: &mut [f32], vnni: bool) {
        #[cfg(target_arch = "x86_64")]
        if vnni {
            // SAFETY: `vnni` is true only when `vnni()` found AVX-512F, AVX-512BW and
            // AVX-512 VNNI on this CPU, the features `product_vnni` is compiled for.
            unsafe { product_vnni(self, a, out) };
            return;
        }
        // (Other architectures have no VNNI path.)
        let _ = vnni;
        self.product_portable(a, out);
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

/// One value's byte: `x / step` rounded half to even, within ±127, plus 128.
fn quantise(x: f32, inv: f32) -> u8 {
    ((x * inv).round_ties_even().clamp(-127.0, 127.0) as i32 + 128) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let on = |threads, vnni| {
                // (NaN first: every value must be written.)
                let mut out = vec![f32::NAN; rows * cols];
                m.matmul_on(&a, rows, threads, vnni, &mut out);
                out
            };
            let portable = on(Threads::This, false);
            assert_eq!(on(Threads::All, false), portable);
            if vnni() {
                assert_eq!(on(Threads::This, true), portable);
                assert_eq!(on(Threads::All, true), portable);
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
