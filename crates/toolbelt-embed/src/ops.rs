//! Row-wise steps the encoders share.

use std::ops::Range;

/// Consecutive groups of texts (by index) of at most `budget` tokens each (a longer text is
/// a group of its own); with several threads and texts, small enough that each thread gets
/// one. `lengths` are the texts' token counts.
pub(crate) fn token_groups(lengths: &[usize], budget: usize, threads: usize) -> Vec<Range<usize>> {
    let total: usize = lengths.iter().sum();
    let budget = if threads > 1 && lengths.len() > 1 {
        budget.min(total.div_ceil(threads))
    } else {
        budget
    };
    let mut groups = Vec::new();
    let mut start = 0;
    while start < lengths.len() {
        let mut end = start + 1;
        let mut tokens = lengths[start];
        while end < lengths.len() && tokens + lengths[end] <= budget {
            tokens += lengths[end];
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    groups
}

/// Normalises each row of `width` values to mean 0 and variance 1, then scales by `gamma`
/// and shifts by `beta`.
pub(crate) fn layer_norm(x: &mut [f32], width: usize, gamma: &[f32], beta: &[f32], eps: f32) {
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

/// Each row of `x` (rows of `gamma.len()` values) plus `bias` and the same row of
/// `residual` (when given), normalised to mean 0 and variance 1, then scaled by `gamma` and
/// shifted by `beta`: a linear layer's bias, the residual sum and the layer norm after it
/// in one pass over the activations, in SIMD lanes as `pulp` finds them. The mean and the
/// variance are two passes over the row (as [`layer_norm`]), each summed in lanes.
pub(crate) fn add_norm(
    x: &mut [f32],
    bias: Option<&[f32]>,
    residual: Option<&[f32]>,
    gamma: &[f32],
    beta: &[f32],
    eps: f32,
) {
    pulp::Arch::new().dispatch(AddNorm {
        x,
        bias,
        residual,
        gamma,
        beta,
        eps,
    });
}

struct AddNorm<'a> {
    x: &'a mut [f32],
    bias: Option<&'a [f32]>,
    residual: Option<&'a [f32]>,
    gamma: &'a [f32],
    beta: &'a [f32],
    eps: f32,
}

impl pulp::WithSimd for AddNorm<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let width = self.gamma.len();
        if width == 0 {
            return;
        }
        let inv_width = 1.0 / width as f32;
        let (bias, bias_tail) = self.bias.map_or((&[][..], &[][..]), S::as_simd_f32s);
        let (gamma, gamma_tail) = S::as_simd_f32s(self.gamma);
        let (beta, beta_tail) = S::as_simd_f32s(self.beta);
        for (r, row) in self.x.chunks_exact_mut(width).enumerate() {
            let (residual, residual_tail) = self.residual.map_or((&[][..], &[][..]), |y| {
                S::as_simd_f32s(&y[r * width..(r + 1) * width])
            });
            let (head, tail) = S::as_mut_simd_f32s(row);
            // The row takes its bias and residual; their sum.
            let mut sum = simd.splat_f32s(0.0);
            for (i, v) in head.iter_mut().enumerate() {
                if let Some(&b) = bias.get(i) {
                    *v = simd.add_f32s(*v, b);
                }
                if let Some(&y) = residual.get(i) {
                    *v = simd.add_f32s(*v, y);
                }
                sum = simd.add_f32s(sum, *v);
            }
            let mut tail_sum = 0f32;
            for (i, v) in tail.iter_mut().enumerate() {
                *v += bias_tail.get(i).copied().unwrap_or(0.0);
                *v += residual_tail.get(i).copied().unwrap_or(0.0);
                tail_sum += *v;
            }
            let mean = (simd.reduce_sum_f32s(sum) + tail_sum) * inv_width;
            let lanes_mean = simd.splat_f32s(mean);
            let mut squares = simd.splat_f32s(0.0);
            for &v in head.iter() {
                let dev = simd.sub_f32s(v, lanes_mean);
                squares = simd.mul_add_e_f32s(dev, dev, squares);
            }
            let tail_squares: f32 = tail.iter().map(|v| (v - mean) * (v - mean)).sum();
            let var = (simd.reduce_sum_f32s(squares) + tail_squares) * inv_width;
            let inv = 1.0 / (var + self.eps).sqrt();
            let lanes_inv = simd.splat_f32s(inv);
            for ((v, &g), &b) in head.iter_mut().zip(gamma).zip(beta) {
                let scaled = simd.mul_f32s(simd.sub_f32s(*v, lanes_mean), lanes_inv);
                *v = simd.mul_add_e_f32s(scaled, g, b);
            }
            for ((v, g), b) in tail.iter_mut().zip(gamma_tail).zip(beta_tail) {
                *v = ((*v - mean) * inv).mul_add(*g, *b);
            }
        }
    }
}

/// Adds `bias` to each row.
pub(crate) fn add_rows(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

/// Adds `y` to `x`, element by element.
pub(crate) fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// The error function on `[0, 4]` as a polynomial in `t = x/2 − 1` (highest power last):
/// a degree-16 Chebyshev fit of `erf` (numpy's `chebfit` over 200,001 points, converted to
/// powers), within 6·10⁻⁷ of it in f32; past 4, `erf` is 1 within 1.6·10⁻⁸.
const ERF: [f32; 17] = [
    9.953223e-01,
    4.1335065e-02,
    -1.6534042e-01,
    3.8572842e-01,
    -5.509889e-01,
    4.19661e-01,
    2.7940342e-02,
    -4.3777993e-01,
    4.1545004e-01,
    -7.6309773e-03,
    -2.9512838e-01,
    1.7852093e-01,
    7.1481116e-02,
    -9.926171e-02,
    5.8571445e-03,
    1.9427517e-02,
    -4.593368e-03,
];

/// `t` for `|x|`: `erf(|x|/√2)` is the polynomial at `min(|x|/(2√2), 2) − 1`.
const T_SCALE: f32 = std::f32::consts::FRAC_1_SQRT_2 / 2.0;

/// GELU as BERT defines it, `x·Φ(x) = ½·(x + |x|·erf(|x|/√2))`, of each row of `x` plus
/// `bias` (a linear layer's bias and its activation in one pass), in place, within
/// 10⁻⁶·(1 + |x|) of the exact function (SIMD lanes as `pulp` finds them).
pub(crate) fn bias_gelu(x: &mut [f32], bias: &[f32]) {
    pulp::Arch::new().dispatch(BiasGelu { x, bias });
}

struct BiasGelu<'a> {
    x: &'a mut [f32],
    bias: &'a [f32],
}

impl pulp::WithSimd for BiasGelu<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) {
        let width = self.bias.len();
        if width == 0 {
            return;
        }
        let (bias, bias_tail) = S::as_simd_f32s(self.bias);
        let (bias4, bias_rest) = bias.as_chunks::<4>();
        for row in self.x.chunks_exact_mut(width) {
            let (head, tail) = S::as_mut_simd_f32s(row);
            // Four vectors at a time: their polynomials' chains of dependent multiply-adds
            // interleaved (one alone waits on each step's latency).
            let (head4, rest) = head.as_chunks_mut::<4>();
            for (v, b) in head4.iter_mut().zip(bias4) {
                *v = gelu_lanes(simd, std::array::from_fn(|i| simd.add_f32s(v[i], b[i])));
            }
            for (v, &b) in rest.iter_mut().zip(bias_rest) {
                *v = gelu_lanes(simd, [simd.add_f32s(*v, b)])[0];
            }
            for (v, &b) in tail.iter_mut().zip(bias_tail) {
                *v = gelu_one(*v + b);
            }
        }
    }
}

/// [`bias_gelu`]'s function of `N` vectors, computed side by side.
#[inline(always)]
fn gelu_lanes<S: pulp::Simd, const N: usize>(simd: S, v: [S::f32s; N]) -> [S::f32s; N] {
    let (half, one, two) = (
        simd.splat_f32s(0.5),
        simd.splat_f32s(1.0),
        simd.splat_f32s(2.0),
    );
    let scale = simd.splat_f32s(T_SCALE);
    let a = v.map(|v| simd.abs_f32s(v));
    let t = a.map(|a| simd.sub_f32s(simd.min_f32s(simd.mul_f32s(a, scale), two), one));
    let mut e = [simd.splat_f32s(ERF[16]); N];
    for &c in ERF[..16].iter().rev() {
        let c = simd.splat_f32s(c);
        for (e, &t) in e.iter_mut().zip(&t) {
            *e = simd.mul_add_e_f32s(*e, t, c);
        }
    }
    std::array::from_fn(|i| simd.mul_f32s(half, simd.mul_add_e_f32s(a[i], e[i], v[i])))
}

/// [`bias_gelu`]'s function of one value.
fn gelu_one(x: f32) -> f32 {
    let a = x.abs();
    let t = (a * T_SCALE).min(2.0) - 1.0;
    let e = ERF[..16]
        .iter()
        .rev()
        .fold(ERF[16], |e, &c| e.mul_add(t, c));
    0.5 * a.mul_add(e, x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gelu_is_within_a_millionth_of_the_exact_function_per_unit_of_x() {
        let mut xs: Vec<f32> = (-12_000..=12_000).map(|i| i as f32 / 1000.0).collect();
        xs.extend([0.0, -0.0, 1e-30, -1e-30, 50.0, -50.0, 3e5, -3e5]);
        let mut got = xs.clone();
        bias_gelu(&mut got, &vec![0.0; xs.len()]);
        for (&x, &g) in xs.iter().zip(&got) {
            let x64 = f64::from(x);
            let want = 0.5 * x64 * (1.0 + libm::erf(x64 / std::f64::consts::SQRT_2));
            let bound = 1e-6 * (1.0 + x64.abs());
            assert!(
                (f64::from(g) - want).abs() <= bound,
                "gelu({x}) = {g}, want {want}"
            );
            assert!(
                (gelu_one(x) - g).abs() <= 1e-6 * (1.0 + g.abs()),
                "one value vs lanes at {x}"
            );
        }
    }
}

/// Adding this to a float below 2²² in size rounds it to an integer (to nearest even), held
/// in the low bits of the sum's mantissa: 1.5·2²³.
const ROUNDER: f32 = 12_582_912.0;
/// The bits of `ROUNDER`.
const ROUNDER_BITS: u32 = 0x4b40_0000;
/// ln 2 in two parts, the first exact in few bits, so `n·ln 2` subtracts without rounding.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// `exp(x)` below this is taken at this (`exp(-87)` ≈ 1.6·10⁻³⁸, the smallest normal scale).
const EXP_FLOOR: f32 = -87.0;

/// A softmax row's numerators in place, `exp(x − max x)` for each value of `x`, within
/// 2·10⁻⁷ relative; returns their sum. In `simd`'s lanes (the caller has dispatched):
/// the largest value and the sum in vectors, and four vectors' exponentials side by side
/// (one alone waits on each step's latency). `x − max = n·ln 2 + r` with `n` an integer
/// and `|r| ≤ ln 2 / 2`, `exp(r)` a degree-6 Taylor polynomial, `2ⁿ` written into the
/// exponent bits; below `exp(-87)` the value is `exp(-87)`. The values past the last
/// whole vector go one at a time, by the same steps.
#[inline(always)]
pub(crate) fn softmax_numerators<S: pulp::Simd>(simd: S, x: &mut [f32]) -> f32 {
    let (head, tail) = S::as_mut_simd_f32s(x);
    let mut lanes_max = simd.splat_f32s(f32::NEG_INFINITY);
    for &v in head.iter() {
        lanes_max = simd.max_f32s(lanes_max, v);
    }
    let max = tail
        .iter()
        .fold(simd.reduce_max_f32s(lanes_max), |m, &v| m.max(v));
    let shift = simd.splat_f32s(max);
    let mut sums = [simd.splat_f32s(0.0); 4];
    let (head4, rest) = head.as_chunks_mut::<4>();
    for v in head4 {
        *v = exp_lanes(simd, v.map(|v| simd.sub_f32s(v, shift)));
        for (sum, &v) in sums.iter_mut().zip(v.iter()) {
            *sum = simd.add_f32s(*sum, v);
        }
    }
    for v in rest {
        *v = exp_lanes(simd, [simd.sub_f32s(*v, shift)])[0];
        sums[0] = simd.add_f32s(sums[0], *v);
    }
    let sum = simd.add_f32s(
        simd.add_f32s(sums[0], sums[1]),
        simd.add_f32s(sums[2], sums[3]),
    );
    let mut tail_sum = 0f32;
    for v in tail {
        *v = exp_one(*v - max);
        tail_sum += *v;
    }
    simd.reduce_sum_f32s(sum) + tail_sum
}

/// exp(r) for |r| ≤ ln 2 / 2: 1/k! from k = 6 down to 0.
const EXP_TAYLOR: [f32; 7] = [
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
    1.0,
    1.0,
];

/// `exp` of `N` vectors of values ≤ 0, side by side ([`softmax_numerators`]' steps).
#[inline(always)]
fn exp_lanes<S: pulp::Simd, const N: usize>(simd: S, x: [S::f32s; N]) -> [S::f32s; N] {
    let (floor, log2e) = (
        simd.splat_f32s(EXP_FLOOR),
        simd.splat_f32s(std::f32::consts::LOG2_E),
    );
    let (rounder, hi, lo) = (
        simd.splat_f32s(ROUNDER),
        simd.splat_f32s(LN2_HI),
        simd.splat_f32s(LN2_LO),
    );
    let (bias, shift23) = (
        simd.splat_u32s(127u32.wrapping_sub(ROUNDER_BITS)),
        simd.splat_u32s(23),
    );
    let x = x.map(|x| simd.max_f32s(x, floor));
    let m = x.map(|x| simd.mul_add_e_f32s(x, log2e, rounder));
    let r: [S::f32s; N] = std::array::from_fn(|i| {
        let n = simd.sub_f32s(m[i], rounder);
        let r = simd.negate_mul_add_e_f32s(n, hi, x[i]);
        simd.negate_mul_add_e_f32s(n, lo, r)
    });
    let mut p = [simd.splat_f32s(EXP_TAYLOR[0]); N];
    for &c in &EXP_TAYLOR[1..] {
        let c = simd.splat_f32s(c);
        for (p, &r) in p.iter_mut().zip(&r) {
            *p = simd.mul_add_e_f32s(*p, r, c);
        }
    }
    std::array::from_fn(|i| {
        let bits = simd.add_u32s(simd.transmute_u32s_f32s(m[i]), bias);
        let scale = simd.transmute_f32s_u32s(simd.wrapping_dyn_shl_u32s(bits, shift23));
        simd.mul_f32s(p[i], scale)
    })
}

/// [`softmax_numerators`]' exponential of one value (already shifted), the same steps.
fn exp_one(x: f32) -> f32 {
    let x = x.max(EXP_FLOOR);
    let m = x.mul_add(std::f32::consts::LOG2_E, ROUNDER);
    let n = m - ROUNDER;
    let r = (-n).mul_add(LN2_HI, x);
    let r = (-n).mul_add(LN2_LO, r);
    let p = EXP_TAYLOR[1..]
        .iter()
        .fold(EXP_TAYLOR[0], |p, &c| p.mul_add(r, c));
    let bits = m.to_bits().wrapping_add(127u32.wrapping_sub(ROUNDER_BITS));
    p * f32::from_bits(bits.wrapping_shl(23))
}

#[cfg(test)]
mod exp_tests {
    use super::*;

    struct Numerators<'a>(&'a mut [f32]);

    impl pulp::WithSimd for Numerators<'_> {
        type Output = f32;

        #[inline(always)]
        fn with_simd<S: pulp::Simd>(self, simd: S) -> f32 {
            softmax_numerators(simd, self.0)
        }
    }

    #[test]
    fn exp_is_within_a_few_ulps_of_the_exact_function() {
        let mut xs: Vec<f32> = (0..=90_000).map(|i| -(i as f32) / 1000.0).collect();
        xs.extend([0.0, -0.0, -1e-30, -86.9, -87.0, -100.0, -1e30]);
        // (The largest value is 2.5, the shift.)
        let mut got: Vec<f32> = xs.iter().map(|x| x + 2.5).collect();
        let sum = pulp::Arch::new().dispatch(Numerators(&mut got));
        let want_sum: f64 = got.iter().map(|&g| f64::from(g)).sum();
        assert!(
            (f64::from(sum) - want_sum).abs() <= 1e-6 * want_sum,
            "{sum} vs {want_sum}"
        );
        for (&x, &g) in xs.iter().zip(&got) {
            // The shift itself rounds: compare with exp of what was computed.
            let shifted = f64::from((x + 2.5) - 2.5).max(-87.0);
            let want = shifted.exp();
            assert!(
                (f64::from(g) - want).abs() <= 4e-7 * want,
                "exp({x}) = {g}, want {want}"
            );
            assert_eq!(exp_one((x + 2.5) - 2.5), g, "one value vs lanes at {x}");
        }
    }
}
