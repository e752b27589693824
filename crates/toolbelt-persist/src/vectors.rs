//! Memory vectors for hybrid recall (ADR 0041), made by an [`Embedder`](toolbelt_core::Embedder)
//! (core's seam, shared with the router): entries' unit vectors quantised to int8
//! ([`QuantizedVector`], 4 + dims bytes each), and a set of them by
//! index slot that finds the nearest to a query: every vector's sign bits are compared first
//! (Hamming distance, 8 words for 512 dimensions), and only the closest few hundred are scored
//! from their int8 codes.

/// A unit vector as int8 codes and one scale: component `i` is about `codes[i] * scale`.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedVector {
    scale: f32,
    codes: Vec<i8>,
}

impl QuantizedVector {
    /// Normalises `v` to unit length and quantises it; `None` for an empty, zero or
    /// non-finite vector (such a text matches nothing by meaning).
    pub fn quantize(v: &[f32]) -> Option<Self> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if v.is_empty() || !norm.is_finite() || norm == 0.0 {
            return None;
        }
        let max = v.iter().fold(0.0_f32, |m, x| m.max((x / norm).abs()));
        let scale = max / 127.0;
        let codes = v
            .iter()
            // In [-127, 127] by construction of `scale`.
            .map(|x| (x / norm / scale).round().clamp(-127.0, 127.0) as i8)
            .collect();
        Some(Self { scale, codes })
    }

    /// The stored form: the scale as 4 little-endian bytes, then one byte per dimension.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(4 + self.codes.len());
        out.extend_from_slice(&self.scale.to_le_bytes());
        out.extend(self.codes.iter().map(|c| c.to_le_bytes()[0]));
        out
    }

    /// Reads [`QuantizedVector::to_bytes`]; `None` when the bytes are not such a vector.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let (head, rest) = bytes.split_first_chunk::<4>()?;
        let scale = f32::from_le_bytes(*head);
        if rest.is_empty() || !scale.is_finite() || scale <= 0.0 {
            return None;
        }
        Some(Self {
            scale,
            codes: rest.iter().map(|b| i8::from_le_bytes([*b])).collect(),
        })
    }

    /// Number of dimensions.
    pub fn dims(&self) -> usize {
        self.codes.len()
    }

    /// Cosine similarity with `other` (same dimensions), in int8 × int8 arithmetic.
    pub fn cosine(&self, other: &QuantizedVector) -> f32 {
        dot(&self.codes, &other.codes) as f32 * self.scale * other.scale
    }
}

/// Integer dot product of two code rows (vectorises well).
fn dot(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

/// Below this many vectors every one is scored exactly (no sign-bit pass).
const EXACT_BELOW: usize = 4096;

/// Vectors by slot, in flat arrays: codes, scales (0 where a slot has none) and sign bits.
#[derive(Debug, Default)]
pub(crate) struct VectorSet {
    dims: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
    bits: Vec<u64>,
    count: usize,
}

impl VectorSet {
    fn words(&self) -> usize {
        self.dims.div_ceil(64)
    }

    /// Appends the next slot's vector (or none). The first vector fixes the dimensions; a
    /// vector of other dimensions is kept as none.
    pub(crate) fn push(&mut self, vector: Option<&QuantizedVector>) {
        if self.dims == 0
            && let Some(v) = vector
        {
            // Slots before the first vector had none: give them zeroed rows.
            let slots = self.scales.len();
            self.dims = v.dims();
            self.codes = vec![0; slots * self.dims];
            self.bits = vec![0; slots * self.words()];
        }
        let vector = vector.filter(|v| v.dims() == self.dims);
        self.scales.push(vector.map_or(0.0, |v| v.scale));
        if self.dims == 0 {
            return;
        }
        match vector {
            Some(v) => {
                self.codes.extend_from_slice(&v.codes);
                self.bits.extend(sign_bits(v.codes.iter().map(|c| *c > 0)));
                self.count += 1;
            }
            None => {
                self.codes.extend(std::iter::repeat_n(0, self.dims));
                self.bits.extend(std::iter::repeat_n(0, self.words()));
            }
        }
    }

    /// Drops `slot`'s vector.
    pub(crate) fn clear(&mut self, slot: u32) {
        if let Some(scale) = self.scales.get_mut(slot as usize)
            && *scale > 0.0
        {
            *scale = 0.0;
            self.count -= 1;
        }
    }

    /// How many slots have a vector.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Cosine of `slot`'s vector with `q`, if it has one of `q`'s dimensions.
    pub(crate) fn cosine(&self, slot: u32, q: &QuantizedVector) -> Option<f32> {
        let scale = *self.scales.get(slot as usize)?;
        if scale == 0.0 || q.dims() != self.dims {
            return None;
        }
        let at = slot as usize * self.dims;
        Some(dot(&self.codes[at..at + self.dims], &q.codes) as f32 * scale * q.scale)
    }

    /// Hamming distance of every slot's sign bits to `qbits`, by slot, in one pass over the
    /// flat array.
    ///
    /// Runs under `pulp`'s run-time CPU dispatch, so that `count_ones` becomes the `popcnt`
    /// instruction where the CPU has it (the baseline x86-64 target has none, and its
    /// software count made this pass most of a recall's time).
    fn hamming(&self, qbits: &[u64]) -> Vec<u32> {
        struct Hamming<'a> {
            bits: &'a [u64],
            words: usize,
            q: &'a [u64],
        }
        impl pulp::WithSimd for Hamming<'_> {
            type Output = Vec<u32>;

            #[inline(always)]
            fn with_simd<S: pulp::Simd>(self, _simd: S) -> Vec<u32> {
                // Plain loops: a closure would be compiled apart from this function and
                // without its CPU features.
                let mut out = Vec::with_capacity(self.bits.len() / self.words.max(1));
                for row in self.bits.chunks_exact(self.words) {
                    let mut distance = 0;
                    for (a, b) in row.iter().zip(self.q) {
                        distance += (a ^ b).count_ones();
                    }
                    out.push(distance);
                }
                out
            }
        }
        pulp::Arch::new().dispatch(Hamming {
            bits: &self.bits,
            words: self.words(),
            q: qbits,
        })
    }

    /// The `k` slots most similar to `q` among those `keep` admits, best first, with their
    /// cosine. Above a few thousand vectors, candidates are first narrowed to the `prefilter`
    /// closest by sign bits.
    pub(crate) fn nearest(
        &self,
        q: &QuantizedVector,
        k: usize,
        prefilter: usize,
        keep: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        if self.count == 0 || q.dims() != self.dims || k == 0 {
            return Vec::new();
        }
        let slots = u32::try_from(self.scales.len()).unwrap_or(u32::MAX);
        let with_vector = (0..slots).filter(|s| self.scales[*s as usize] > 0.0);
        let candidates: Vec<u32> = if self.count < EXACT_BELOW {
            with_vector.collect()
        } else {
            let qbits: Vec<u64> = sign_bits(q.codes.iter().map(|c| *c > 0)).collect();
            let distances = self.hamming(&qbits);
            // Counting select: distances are at most 64 × words, so a histogram finds the
            // cut-off distance of the closest `prefilter` in one pass.
            let mut histogram = vec![0_usize; self.words() * 64 + 1];
            for (slot, d) in distances.iter().enumerate() {
                if self.scales[slot] > 0.0 {
                    histogram[*d as usize] += 1;
                }
            }
            let want = prefilter.max(k);
            let mut seen = 0;
            let cutoff = histogram
                .iter()
                .position(|n| {
                    seen += n;
                    seen >= want
                })
                .unwrap_or(histogram.len());
            distances
                .iter()
                .zip(0..slots)
                .filter(|(d, s)| (**d as usize) <= cutoff && self.scales[*s as usize] > 0.0)
                .map(|(_, s)| s)
                .collect()
        };
        let mut scored: Vec<(u32, f32)> = candidates
            .into_iter()
            .filter(|s| keep(*s))
            .filter_map(|s| Some((s, self.cosine(s, q)?)))
            .collect();
        let best = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if k < scored.len() {
            scored.select_nth_unstable_by(k - 1, best);
            scored.truncate(k);
        }
        scored.sort_by(best);
        scored
    }
}

/// Packs booleans into 64-bit words, first in the lowest bit.
fn sign_bits(signs: impl Iterator<Item = bool>) -> impl Iterator<Item = u64> {
    let mut words = Vec::new();
    for (i, positive) in signs.enumerate() {
        if i % 64 == 0 {
            words.push(0_u64);
        }
        if positive && let Some(w) = words.last_mut() {
            *w |= 1 << (i % 64);
        }
    }
    words.into_iter()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(seed: u64, dims: usize) -> Vec<f32> {
        // A small deterministic generator (xorshift) for test vectors.
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..dims)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn quantised_vectors_round_trip_and_keep_cosines() {
        let a = v(1, 512);
        let q = QuantizedVector::quantize(&a).unwrap();
        let back = QuantizedVector::from_bytes(&q.to_bytes()).unwrap();
        assert_eq!(back, q);
        assert!((q.cosine(&q) - 1.0).abs() < 0.01, "{}", q.cosine(&q));
        let b = v(2, 512);
        let norm = |x: &[f32]| x.iter().map(|y| y * y).sum::<f32>().sqrt();
        let exact = a.iter().zip(&b).map(|(x, y)| x * y).sum::<f32>() / (norm(&a) * norm(&b));
        let qb = QuantizedVector::quantize(&b).unwrap();
        assert!(
            (q.cosine(&qb) - exact).abs() < 0.01,
            "{} vs {exact}",
            q.cosine(&qb)
        );
        assert!(QuantizedVector::quantize(&[0.0; 4]).is_none());
        assert!(QuantizedVector::quantize(&[]).is_none());
        assert!(QuantizedVector::from_bytes(&[0, 0, 0]).is_none());
    }

    #[test]
    fn nearest_finds_the_same_best_with_and_without_the_sign_bit_pass() {
        let mut set = VectorSet::default();
        set.push(None); // a slot before the first vector
        for i in 0..5000 {
            set.push(QuantizedVector::quantize(&v(i + 10, 64)).as_ref());
        }
        assert_eq!(set.len(), 5000);
        let q = QuantizedVector::quantize(&v(10 + 1234, 64)).unwrap();
        let top = set.nearest(&q, 5, 300, |_| true);
        assert_eq!(top[0].0, 1235, "{top:?}"); // slot 0 has no vector
        assert!(top[0].1 > 0.99);
        // Scored over all, without the sign-bit pass: the same best.
        let mut all: Vec<(u32, f32)> = (0..5001)
            .filter_map(|s| Some((s, set.cosine(s, &q)?)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(top[0].0, all[0].0);
        set.clear(1235);
        assert_ne!(set.nearest(&q, 1, 300, |_| true)[0].0, 1235);
        assert!(
            set.nearest(&q, 3, 300, |s| s % 2 == 0)
                .iter()
                .all(|(s, _)| s % 2 == 0)
        );
    }
}
