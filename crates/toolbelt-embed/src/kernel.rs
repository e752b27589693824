//! The encoder's matrix products: `a` (`rows × k`, row-major) times a weight matrix
//! (`k × cols`) packed once when the model loads.
//!
//! candle's `gemm` is built for large products; for a query of a few pieces most of its
//! time went elsewhere (thread hand-offs, and candle asking the kernel for the CPU count
//! on every product): 2.8–3.7 ms per short query against 0.4–0.6 ms here. This kernel
//! reads the weights front to back, once per four rows, and keeps the sums in SIMD
//! registers, with AVX2/FMA when the CPU has them (detected at run time by `pulp`), so
//! the binary stays on the baseline target and needs no `unsafe`. On one core it matches
//! candle's `gemm` on two for a batch of 64 queries; large products are split by rows
//! over rayon's threads.

use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// Rows handled per pass over the weights: four rows of 16 columns (two AVX2 vectors)
/// is eight accumulators, which with the loaded weights and a broadcast fits AVX2's
/// sixteen registers (six rows measured twice as slow: the row slices and sums spill).
const ROWS: usize = 4;
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
        for (p, panel) in panels.chunks_exact_mut(k * PANEL).enumerate() {
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
    ///
    /// # Panics
    /// When `a` does not hold `rows × k` values (a bug of the caller).
    /// Products of more than [`PARALLEL_ROWS`] rows are split by rows over rayon's threads.
    ///
    /// # Panics
    /// When `a` does not hold `rows × k` values (a bug of the caller).
    pub(crate) fn matmul(&self, arch: Arch, a: &[f32], rows: usize) -> Vec<f32> {
        assert_eq!(a.len(), rows * self.k, "input of {rows} × {}", self.k);
        let mut out = vec![0f32; rows * self.cols];
        let threads = rayon::current_num_threads();
        if rows <= PARALLEL_ROWS || threads < 2 || self.k == 0 || self.cols == 0 {
            arch.dispatch(Product {
                w: self,
                a,
                rows,
                out: &mut out,
            });
            return out;
        }
        let per = rows.div_ceil(threads).next_multiple_of(ROWS);
        out.par_chunks_mut(per * self.cols)
            .zip(a.par_chunks(per * self.k))
            .for_each(|(out, a)| {
                arch.dispatch(Product {
                    w: self,
                    a,
                    rows: a.len() / self.k,
                    out,
                });
            });
        out
    }
}

struct Product<'a> {
    w: &'a Packed,
    a: &'a [f32],
    rows: usize,
    out: &'a mut [f32],
}

impl WithSimd for Product<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self { w, a, rows, out } = self;
        let (k, cols) = (w.k, w.cols);
        let mut r0 = 0;
        while r0 < rows {
            let n = (rows - r0).min(ROWS);
            let a = &a[r0 * k..(r0 + n) * k];
            let out = &mut out[r0 * cols..(r0 + n) * cols];
            match n {
                1 => block::<S, 1>(simd, a, w, out),
                2 => block::<S, 2>(simd, a, w, out),
                3 => block::<S, 3>(simd, a, w, out),
                _ => block::<S, ROWS>(simd, a, w, out),
            }
            r0 += n;
        }
    }
}

/// `R` rows of the product, one panel at a time, each column's sum over all of `k`
/// kept in registers.
#[inline(always)]
fn block<S: Simd, const R: usize>(simd: S, a: &[f32], w: &Packed, out: &mut [f32]) {
    let (k, cols) = (w.k, w.cols);
    if PANEL > 4 * S::F32_LANES {
        // Fewer than four lanes (the portable path): more vectors per panel row than the
        // accumulators below hold; sum column by column instead.
        return block_plain(a, w, out);
    }
    let rows: [&[f32]; R] = std::array::from_fn(|r| &a[r * k..(r + 1) * k]);
    for (p, panel) in w.panels.chunks_exact(k * PANEL).enumerate() {
        // PANEL / lanes vectors per panel row: 2 with AVX2, 4 with SSE.
        let mut acc = [[simd.splat_f32s(0.0); 4]; R];
        for (kk, row) in panel.chunks_exact(PANEL).enumerate() {
            let (vectors, _) = S::as_simd_f32s(row);
            for (acc, a) in acc.iter_mut().zip(&rows) {
                let s = simd.splat_f32s(a[kk]);
                for (sum, &v) in acc.iter_mut().zip(vectors) {
                    *sum = simd.mul_add_e_f32s(s, v, *sum);
                }
            }
        }
        let c0 = p * PANEL;
        let width = PANEL.min(cols - c0);
        for (r, acc) in acc.iter().enumerate() {
            let mut sums = [0f32; PANEL];
            let (dst, _) = S::as_mut_simd_f32s(&mut sums);
            for (d, &sum) in dst.iter_mut().zip(acc) {
                *d = sum;
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
        let mut x = 0x2545_f491_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x % 2001) as f32 / 1000.0 - 1.0
        };
        for (rows, k, cols) in [
            (1, 7, 5),
            (2, 64, 48),
            (3, 33, 70),
            (4, 16, 32),
            (9, 40, 257),
            (37, 24, 40),
        ] {
            let a: Vec<f32> = (0..rows * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * cols).map(|_| next()).collect();
            let packed = Packed::new(&w, k, cols);
            // This CPU's path, and the portable one every CPU can take.
            let fast = packed.matmul(Arch::new(), &a, rows);
            let mut portable = vec![0f32; rows * cols];
            pulp::Scalar::new().vectorize(Product {
                w: &packed,
                a: &a,
                rows,
                out: &mut portable,
            });
            let want = reference(&a, rows, &w, cols);
            for got in [fast, portable] {
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
