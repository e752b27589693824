//! The encoder's matrix products: `a` (`rows × k`, row-major) times a weight matrix
//! (`k × cols`) packed once when the model loads.
//!
//! candle's `gemm` is built for large products; for a query of a few pieces most of its
//! time went elsewhere (thread hand-offs, and candle asking the kernel for the CPU count
//! on every product): 2.8–3.7 ms per short query against 0.4–0.6 ms here. This kernel
//! keeps eight or sixteen sums in SIMD registers while it reads a panel of the weights
//! front to back, with AVX-512 or AVX2/FMA when the CPU has them (detected at run time
//! by `pulp`), so the binary stays on the baseline target and needs no `unsafe`. Large
//! products go a tile of rows at a time, each panel read from memory once per tile.
//! Every column's sum runs over `k` in the same order on every path and for every
//! number of rows, so a vector does not depend on the batch it was computed in. On
//! one core it matches candle's `gemm` on two for a batch of 64 queries; large products
//! are split by rows over rayon's threads unless the caller runs several at once.

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// Rows handled per pass over the weights: four rows of 16 columns (two AVX2 vectors)
/// is eight accumulators, which with the loaded weights and a broadcast fits AVX2's
/// sixteen registers (six rows measured twice as slow: the row slices and sums spill).
const ROWS: usize = 4;
/// Rows per pass when one vector holds a whole panel row (AVX-512): sixteen rows of one
/// vector each, in AVX-512's 32 registers (eight rows measured 7% slower on a whole
/// `toolbelt route --queries` run).
const WIDE_ROWS: usize = 16;
/// Rows multiplied by one panel of the weights before the next panel: the tile's rows
/// (interleaved) and the panel stay in the core's cache (a 1,280-deep panel is 80 KiB;
/// 64 such rows 320 KiB). It bounds the interleaved copy; on the batches of
/// `toolbelt route --queries` it measured neither faster nor slower than one tile.
const TILE_ROWS: usize = 64;
/// Columns per panel.
const PANEL: usize = 16;
/// Products with more rows than this use every rayon thread (a query of a few pieces
/// stays on its own core: a hand-off costs more than it saves).
const PARALLEL_ROWS: usize = 16;

/// A weight matrix (`k × cols`) stored as panels of 16 columns, each panel's `k` rows
/// one after the other, so that a product reads it front to back (the last panel is
/// padded with zeros).
#[derive(Debug, Clone)]
pub(crate) struct Packed {
    k: usize,
    cols: usize,
    panels: Vec<f32>,
}

impl Packed {
    /// Packs the row-major `w` (`k × cols`).
    ///
    /// # Panics
    /// When `w` does not hold `k × cols` values (a bug of the caller).
    pub(crate) fn new(w: &[f32], k: usize, cols: usize) -> Self {
        assert_eq!(w.len(), k * cols, "weights of {k} × {cols}");
        let n = cols.div_ceil(PANEL);
        let mut panels = vec![0f32; n * k * PANEL];
        // (`max(1)`: a matrix with k = 0 has no panel rows, and no chunk to visit.)
        for (p, panel) in panels.chunks_exact_mut((k * PANEL).max(1)).enumerate() {
            let c0 = p * PANEL;
            let width = PANEL.min(cols - c0);
            for (kk, dst) in panel.chunks_exact_mut(PANEL).enumerate() {
                dst[..width].copy_from_slice(&w[kk * cols + c0..kk * cols + c0 + width]);
            }
        }
        Self { k, cols, panels }
    }

    /// The packed form: `k`, `cols` and the panels (for the weights cache).
    pub(crate) fn parts(&self) -> (usize, usize, &[f32]) {
        (self.k, self.cols, &self.panels)
    }

    /// A matrix from [`Packed::parts`]; `None` when `panels` does not fit `k × cols`.
    pub(crate) fn from_parts(k: usize, cols: usize, panels: Vec<f32>) -> Option<Self> {
        (panels.len() == cols.div_ceil(PANEL) * k * PANEL).then_some(Self { k, cols, panels })
    }

    /// `a` (`rows × k`, row-major) times this matrix: `rows × cols` values, row-major.
    /// With [`Threads::All`], products of more than [`PARALLEL_ROWS`] rows are split by
    /// rows over rayon's threads; with [`Threads::This`] the product stays on the calling
    /// thread (the caller runs several products at once).
    ///
    /// # Panics
    /// When `a` does not hold `rows × k` values (a bug of the caller).
    pub(crate) fn matmul(&self, arch: Arch, a: &[f32], rows: usize, threads: Threads) -> Vec<f32> {
        let mut out = vec![0f32; rows * self.cols];
        matmul_into(self, arch, a, rows, threads, &mut out);
        out
    }
}

/// What a product needs of a packed matrix ([`Packed`], [`PackedHalf`]): its shape, its
/// panels, and how to multiply one panel by a pass of interleaved rows.
pub(crate) trait Panels: Sync {
    /// Rows of the matrix each panel row holds (1; 2 for bfloat16 pairs).
    const STEP: usize;
    /// What a panel is made of.
    type Word: Copy + Sync;
    /// `k` and `cols`.
    fn shape(&self) -> (usize, usize);
    /// The panels, `k.next_multiple_of(STEP) / STEP × PANEL` words each.
    fn panels(&self) -> &[Self::Word];
    /// `R` rows (interleaved in `inter`, `k` padded to a multiple of `STEP`) times one
    /// panel; writes the first `width` columns of each row of `out` (rows `cols` apart).
    fn block<S: Simd, const R: usize>(
        simd: S,
        inter: &[f32],
        panel: &[Self::Word],
        cols: usize,
        width: usize,
        out: &mut [f32],
    );
    /// The product without SIMD vectors (fewer than four lanes).
    fn plain(&self, a: &[f32], out: &mut [f32]);
}

/// `a` (`rows × k`, row-major) times `w` into `out`: `rows × cols` values, row-major, every
/// one of which it writes. With
/// [`Threads::All`], products of more than [`PARALLEL_ROWS`] rows are split by rows over
/// rayon's threads; with [`Threads::This`] the product stays on the calling thread.
///
/// # Panics
/// When `a` does not hold `rows × k` values or `out` `rows × cols` (a bug of the caller).
pub(crate) fn matmul_into<W: Panels>(
    w: &W,
    arch: Arch,
    a: &[f32],
    rows: usize,
    threads: Threads,
    out: &mut [f32],
) {
    let (k, cols) = w.shape();
    assert_eq!(a.len(), rows * k, "input of {rows} × {k}");
    assert_eq!(out.len(), rows * cols, "output of {rows} × {cols}");
    if k == 0 {
        // Nothing to sum.
        out.fill(0.0);
        return;
    }
    let threads = match threads {
        Threads::All => rayon::current_num_threads(),
        Threads::This => 1,
    };
    if rows <= PARALLEL_ROWS || threads < 2 || k == 0 || cols == 0 {
        arch.dispatch(Product { w, a, rows, out });
        return;
    }
    let per = rows.div_ceil(threads).next_multiple_of(WIDE_ROWS);
    out.par_chunks_mut(per * cols)
        .zip(a.par_chunks(per * k))
        .for_each(|(out, a)| {
            arch.dispatch(Product {
                w,
                a,
                rows: a.len() / k,
                out,
            });
        });
}

/// Where a product runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// Large products split over rayon's threads.
    All,
    /// On the calling thread.
    This,
}

struct Product<'a, W> {
    w: &'a W,
    a: &'a [f32],
    rows: usize,
    out: &'a mut [f32],
}

impl<W: Panels> WithSimd for Product<'_, W> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self { w, a, rows, out } = self;
        let (k, cols) = w.shape();
        if k == 0 || cols == 0 {
            // Nothing to sum: `out` holds its zeros.
            return;
        }
        // One vector per panel row (AVX-512's 16 lanes): sixteen rows per pass, sixteen
        // sums in flight in its 32 registers (AVX2: four rows of two vectors, eight sums
        // in its sixteen).
        let wide = S::F32_LANES >= PANEL;
        let per_pass = if wide { WIDE_ROWS } else { ROWS };
        if PANEL > 4 * S::F32_LANES {
            // Fewer than four lanes (the portable path): more vectors per panel row than
            // the accumulators of `block` hold; sum column by column instead.
            return w.plain(a, out);
        }
        // A tile of rows at a time, each pass of `per_pass` rows interleaved (`kp` groups
        // of one value per row; `k` padded with zero rows to whole panel rows) so the inner
        // loop reads them from one advancing address; then each panel of the weights
        // against every pass of the tile, so the panel is read from memory once per tile
        // and from cache after.
        let kp = k.next_multiple_of(W::STEP);
        let tile = TILE_ROWS.min(rows.next_multiple_of(per_pass));
        let mut inter = vec![0f32; kp * tile];
        let panels = w.panels().chunks_exact(kp / W::STEP * PANEL);
        for t0 in (0..rows).step_by(tile) {
            let t1 = (t0 + tile).min(rows);
            for (pass, rows) in a[t0 * k..t1 * k].chunks(per_pass * k).enumerate() {
                let n = rows.len() / k;
                let inter = &mut inter[pass * per_pass * kp..][..n * kp];
                for (r, row) in rows.chunks_exact(k).enumerate() {
                    for (kk, &x) in row.iter().enumerate() {
                        inter[kk * n + r] = x;
                    }
                    for kk in k..kp {
                        inter[kk * n + r] = 0.0;
                    }
                }
            }
            for (p, panel) in panels.clone().enumerate() {
                let c0 = p * PANEL;
                let width = PANEL.min(cols - c0);
                let mut r0 = t0;
                while r0 < t1 {
                    let n = (t1 - r0).min(per_pass);
                    let inter = &inter[(r0 - t0) * kp..][..n * kp];
                    let out = &mut out[r0 * cols + c0..];
                    macro_rules! rows {
                        ($($r:literal)*) => {
                            match n {
                                $($r => W::block::<S, $r>(simd, inter, panel, cols, width, out),)*
                                _ => W::block::<S, WIDE_ROWS>(simd, inter, panel, cols, width, out),
                            }
                        };
                    }
                    rows!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
                    r0 += n;
                }
            }
        }
    }
}

impl Panels for Packed {
    const STEP: usize = 1;
    type Word = f32;

    fn shape(&self) -> (usize, usize) {
        (self.k, self.cols)
    }

    fn panels(&self) -> &[f32] {
        &self.panels
    }

    #[inline(always)]
    fn block<S: Simd, const R: usize>(
        simd: S,
        inter: &[f32],
        panel: &[f32],
        cols: usize,
        width: usize,
        out: &mut [f32],
    ) {
        block::<S, R>(simd, inter, panel, cols, width, out);
    }

    fn plain(&self, a: &[f32], out: &mut [f32]) {
        block_plain(a, self, out);
    }
}

impl Panels for PackedHalf {
    const STEP: usize = 2;
    type Word = u32;

    fn shape(&self) -> (usize, usize) {
        (self.k, self.cols)
    }

    fn panels(&self) -> &[u32] {
        &self.panels
    }

    #[inline(always)]
    fn block<S: Simd, const R: usize>(
        simd: S,
        inter: &[f32],
        panel: &[u32],
        cols: usize,
        width: usize,
        out: &mut [f32],
    ) {
        block_half::<S, R>(simd, inter, panel, cols, width, out);
    }

    fn plain(&self, a: &[f32], out: &mut [f32]) {
        half_plain(a, self, out);
    }
}

/// `R` rows (interleaved in `inter`) times one panel, each column's sum over all of `k`
/// kept in registers; writes the first `width` columns of each row of `out` (rows
/// `cols` apart).
#[inline(always)]
fn block<S: Simd, const R: usize>(
    simd: S,
    inter: &[f32],
    panel: &[f32],
    cols: usize,
    width: usize,
    out: &mut [f32],
) {
    let (xs, _) = inter.as_chunks::<R>();
    // PANEL / lanes vectors per panel row: 1 with AVX-512, 2 with AVX2, 4 with SSE.
    let mut acc = [[simd.splat_f32s(0.0); 4]; R];
    for (row, xs) in panel.chunks_exact(PANEL).zip(xs) {
        let (vectors, _) = S::as_simd_f32s(row);
        for (acc, &x) in acc.iter_mut().zip(xs) {
            let s = simd.splat_f32s(x);
            for (sum, &v) in acc.iter_mut().zip(vectors) {
                *sum = simd.mul_add_e_f32s(s, v, *sum);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let mut sums = [0f32; PANEL];
        let (dst, _) = S::as_mut_simd_f32s(&mut sums);
        for (d, &sum) in dst.iter_mut().zip(acc) {
            *d = sum;
        }
        out[r * cols..r * cols + width].copy_from_slice(&sums[..width]);
    }
}

/// A weight matrix (`k × cols`) stored in bfloat16 (the high half of each f32, rounded to
/// nearest even): half the memory of [`Packed`], so a model that would not fit the CPU's
/// last-level cache in f32 may fit in it, and a short query (few rows per weight read) is
/// not held up by memory. Panels of 16 columns as in [`Packed`]; each `u32` holds two
/// consecutive rows of one column (row `2j` in the low half, `2j + 1` in the high half;
/// an odd `k` gets a zero row).
#[derive(Debug, Clone)]
pub(crate) struct PackedHalf {
    k: usize,
    cols: usize,
    panels: Vec<u32>,
}

/// `x` rounded to bfloat16 (to nearest, ties to even), as the high 16 bits of a `u32`'s low half.
fn bf16(x: f32) -> u32 {
    let bits = x.to_bits();
    (bits + 0x7fff + ((bits >> 16) & 1)) >> 16
}

impl PackedHalf {
    /// Packs the row-major `w` (`k × cols`), rounding each weight to bfloat16.
    ///
    /// # Panics
    /// When `w` does not hold `k × cols` values (a bug of the caller).
    pub(crate) fn new(w: &[f32], k: usize, cols: usize) -> Self {
        assert_eq!(w.len(), k * cols, "weights of {k} × {cols}");
        let pairs = k.div_ceil(2);
        let n = cols.div_ceil(PANEL);
        let mut panels = vec![0u32; n * pairs * PANEL];
        for (p, panel) in panels.chunks_exact_mut((pairs * PANEL).max(1)).enumerate() {
            let c0 = p * PANEL;
            let width = PANEL.min(cols - c0);
            for (j, dst) in panel.chunks_exact_mut(PANEL).enumerate() {
                for (c, d) in dst[..width].iter_mut().enumerate() {
                    let lo = bf16(w[2 * j * cols + c0 + c]);
                    let hi = if 2 * j + 1 < k {
                        bf16(w[(2 * j + 1) * cols + c0 + c])
                    } else {
                        0
                    };
                    *d = lo | (hi << 16);
                }
            }
        }
        Self { k, cols, panels }
    }
}

/// [`block`] for a bfloat16 panel: each `u32` vector gives the panel's two rows as f32
/// (the low halves shifted up, the high halves masked).
#[inline(always)]
fn block_half<S: Simd, const R: usize>(
    simd: S,
    inter: &[f32],
    panel: &[u32],
    cols: usize,
    width: usize,
    out: &mut [f32],
) {
    let (xs, _) = inter.as_chunks::<R>();
    let mut acc = [[simd.splat_f32s(0.0); 4]; R];
    let (shift, mask) = (simd.splat_u32s(16), simd.splat_u32s(0xffff_0000));
    for (words, xs) in panel.chunks_exact(PANEL).zip(xs.chunks_exact(2)) {
        let (vectors, _) = S::as_simd_u32s(words);
        let mut lo = [simd.splat_f32s(0.0); 4];
        let mut hi = [simd.splat_f32s(0.0); 4];
        for ((lo, hi), &v) in lo.iter_mut().zip(hi.iter_mut()).zip(vectors) {
            *lo = simd.transmute_f32s_u32s(simd.wrapping_dyn_shl_u32s(v, shift));
            *hi = simd.transmute_f32s_u32s(simd.and_u32s(v, mask));
        }
        let n = vectors.len();
        for ((acc, &x0), &x1) in acc.iter_mut().zip(&xs[0]).zip(&xs[1]) {
            let (s0, s1) = (simd.splat_f32s(x0), simd.splat_f32s(x1));
            for ((sum, &l), &h) in acc[..n].iter_mut().zip(&lo[..n]).zip(&hi[..n]) {
                *sum = simd.mul_add_e_f32s(s1, h, simd.mul_add_e_f32s(s0, l, *sum));
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let mut sums = [0f32; PANEL];
        let (dst, _) = S::as_mut_simd_f32s(&mut sums);
        for (d, &sum) in dst.iter_mut().zip(acc) {
            *d = sum;
        }
        out[r * cols..r * cols + width].copy_from_slice(&sums[..width]);
    }
}

/// [`block_plain`] for bfloat16 weights.
fn half_plain(a: &[f32], w: &PackedHalf, out: &mut [f32]) {
    let (k, cols) = (w.k, w.cols);
    let rows = a.len().checked_div(k).unwrap_or(0);
    let pairs = k.div_ceil(2);
    for (p, panel) in w.panels.chunks_exact(pairs * PANEL).enumerate() {
        let c0 = p * PANEL;
        let width = PANEL.min(cols - c0);
        for r in 0..rows {
            let row = &a[r * k..(r + 1) * k];
            let mut sums = [0f32; PANEL];
            for (j, words) in panel.chunks_exact(PANEL).enumerate() {
                let x0 = row[2 * j];
                let x1 = row.get(2 * j + 1).copied().unwrap_or(0.0);
                for (sum, &v) in sums.iter_mut().zip(words) {
                    let (lo, hi) = (f32::from_bits(v << 16), f32::from_bits(v & 0xffff_0000));
                    *sum = x1.mul_add(hi, x0.mul_add(lo, *sum));
                }
            }
            out[r * cols + c0..r * cols + c0 + width].copy_from_slice(&sums[..width]);
        }
    }
}

/// The product without SIMD vectors, for CPUs where `pulp` finds fewer than four lanes.
fn block_plain(a: &[f32], w: &Packed, out: &mut [f32]) {
    let (k, cols) = (w.k, w.cols);
    let rows = a.len().checked_div(k).unwrap_or(0);
    for (p, panel) in w.panels.chunks_exact(k * PANEL).enumerate() {
        let c0 = p * PANEL;
        let width = PANEL.min(cols - c0);
        for r in 0..rows {
            let mut sums = [0f32; PANEL];
            for (x, row) in a[r * k..(r + 1) * k].iter().zip(panel.chunks_exact(PANEL)) {
                for (sum, v) in sums.iter_mut().zip(row) {
                    *sum = x.mul_add(*v, *sum);
                }
            }
            out[r * cols + c0..r * cols + c0 + width].copy_from_slice(&sums[..width]);
        }
    }
}

/// Pseudo-random values in [-1, 1] (xorshift from `seed`), for the products' tests.
#[cfg(test)]
pub(crate) fn values(seed: u32) -> impl FnMut() -> f32 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        (x % 2001) as f32 / 1000.0 - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(a: &[f32], rows: usize, w: &[f32], cols: usize) -> Vec<f32> {
        let k = a.len() / rows;
        let mut out = vec![0f32; rows * cols];
        for r in 0..rows {
            for c in 0..cols {
                out[r * cols + c] = (0..k).map(|i| a[r * k + i] * w[i * cols + c]).sum();
            }
        }
        out
    }

    #[test]
    fn matches_the_textbook_product_for_every_row_count_and_ragged_columns() {
        let mut next = values(0x2545_f491);
        for (rows, k, cols) in [
            (1, 7, 5),
            (3, 0, 5),
            (2, 4, 0),
            (2, 64, 48),
            (3, 33, 70),
            (4, 16, 32),
            (9, 40, 257),
            (37, 24, 40),
            (17, 40, 33),
            (130, 48, 20),
        ] {
            let a: Vec<f32> = (0..rows * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * cols).map(|_| next()).collect();
            let packed = Packed::new(&w, k, cols);
            // This CPU's best path (split over threads and not), AVX2 where the CPU has
            // it (the best path is AVX-512 on CPUs that have that too), and the
            // portable one every CPU can take.
            let mut got = vec![
                packed.matmul(Arch::new(), &a, rows, Threads::All),
                packed.matmul(Arch::new(), &a, rows, Threads::This),
            ];
            let product = |simd: &dyn Fn(Product<'_, Packed>)| {
                let mut out = vec![0f32; rows * cols];
                simd(Product {
                    w: &packed,
                    a: &a,
                    rows,
                    out: &mut out,
                });
                out
            };
            #[cfg(target_arch = "x86_64")]
            if let Some(v3) = pulp::x86::V3::try_new() {
                got.push(product(&|p| Simd::vectorize(v3, p)));
            }
            got.push(product(&|p| pulp::Scalar::new().vectorize(p)));
            // Every path sums each column in the same order with fused multiply-adds:
            // the same bits.
            for other in &got[1..] {
                assert_eq!(other, &got[0], "({rows}×{k})·({k}×{cols}): paths differ");
            }
            let want = reference(&a, rows, &w, cols);
            // The bfloat16 matrix: every path the same bits, and the textbook product of
            // the rounded weights.
            let half = PackedHalf::new(&w, k, cols);
            let half_matmul = |threads| {
                // (NaN first: every value must be written.)
                let mut out = vec![f32::NAN; rows * cols];
                matmul_into(&half, Arch::new(), &a, rows, threads, &mut out);
                out
            };
            let mut halves = vec![half_matmul(Threads::All), half_matmul(Threads::This)];
            let half_product = |simd: &dyn Fn(Product<'_, PackedHalf>)| {
                let mut out = vec![0f32; rows * cols];
                simd(Product {
                    w: &half,
                    a: &a,
                    rows,
                    out: &mut out,
                });
                out
            };
            #[cfg(target_arch = "x86_64")]
            if let Some(v3) = pulp::x86::V3::try_new() {
                halves.push(half_product(&|p| Simd::vectorize(v3, p)));
            }
            halves.push(half_product(&|p| pulp::Scalar::new().vectorize(p)));
            for other in &halves[1..] {
                assert_eq!(
                    other, &halves[0],
                    "bf16 ({rows}×{k})·({k}×{cols}): paths differ"
                );
            }
            let rounded: Vec<f32> = w.iter().map(|&x| f32::from_bits(bf16(x) << 16)).collect();
            let want_half = reference(&a, rows, &rounded, cols);
            for (i, (g, e)) in halves[0].iter().zip(&want_half).enumerate() {
                assert!(
                    (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
                    "bf16 ({rows}×{k})·({k}×{cols}) at {i}: {g} vs {e}"
                );
            }
            for got in got {
                assert_eq!(got.len(), want.len());
                for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (g - e).abs() <= 1e-4 * (1.0 + e.abs()),
                        "({rows}×{k})·({k}×{cols}) at {i}: {g} vs {e}"
                    );
                }
            }
        }
    }
}
