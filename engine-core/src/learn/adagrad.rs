//! Sparse AdaGrad. For each touched weight only: G += g², w −= η·g/√(G + ε), with a
//! separate η for the side-to-move (turn) part and an optional exponential schedule.
//! The cost is proportional to the number of touched weights, never to the table size.
//!
//! After each weight changes, its rounded and clamped value is written into the quantized
//! tables (`Quantized`) the searcher uses, so the eval that search sees during training is
//! exactly the exported one (`quantize_*` are shared with the exporter).

pub use super::config::AdaGradConfig;
use super::weights::{Feature, KKP_BASE, KPP_BASE, KPP_TRI, PATTERN_BASE, Record, decode_index, untri};
use crate::eval::bona_piece::FE_END;
use crate::eval::kppt::KpptTables;
use crate::eval::patterns::PatternSet;

/// `w.round()` (halves away from zero), without the library call `f32::round` is on
/// baseline x86-64: every merge and weight sync quantizes millions of values.
#[inline]
pub fn round_half_away(w: f32) -> f32 {
    // From 2^23 on every f32 is an integer (and NaN and the infinities pass through).
    if w.abs() >= 8_388_608.0 || w.is_nan() {
        return w;
    }
    // Truncation toward zero is exact here, and so is the difference: w and its integer part
    // are multiples of w's ulp, less than 1 apart.
    let t = w as i32 as f32;
    let frac = w - t;
    if frac >= 0.5 {
        t + 1.0
    } else if frac <= -0.5 {
        t - 1.0
    } else {
        t
    }
}

#[inline]
pub fn quantize_i32(w: f32) -> (i32, bool) {
    let r = round_half_away(w);
    if r > i32::MAX as f32 {
        (i32::MAX, true)
    } else if r < i32::MIN as f32 {
        (i32::MIN, true)
    } else {
        (r as i32, false)
    }
}

#[inline]
pub fn quantize_i16(w: f32) -> (i16, bool) {
    let r = round_half_away(w);
    if r > i16::MAX as f32 {
        (i16::MAX, true)
    } else if r < -(i16::MAX as f32) {
        // Symmetric range, so negating a weight never overflows.
        (-i16::MAX, true)
    } else {
        (r as i16, false)
    }
}

/// The quantized evaluation the searcher uses.
pub struct Quantized<'a> {
    pub kppt: &'a mut KpptTables,
    pub patterns: Option<&'a mut PatternSet>,
}

#[inline]
pub(crate) fn quantize_pair32(r: &Record) -> [i32; 2] {
    [quantize_i32(r[0]).0, quantize_i32(r[1]).0]
}

/// Writes a KPP pair into one king's `FE_END × FE_END` block, at [a][b] and [b][a].
#[inline]
pub(crate) fn store_kpp(block: &mut [[i16; 2]], tri_index: usize, r: &Record) {
    let (a, b) = untri(tri_index);
    store_kpp_pair(block, a, b, r);
}

/// [`store_kpp`] for a caller that already knows the pair.
#[inline]
pub(crate) fn store_kpp_pair(block: &mut [[i16; 2]], a: usize, b: usize, r: &Record) {
    let v = [quantize_i16(r[0]).0, quantize_i16(r[1]).0];
    block[a * FE_END + b] = v;
    block[b * FE_END + a] = v;
}

impl Quantized<'_> {
    /// Writes the quantized value of feature `index` from its record.
    pub fn store(&mut self, index: usize, r: &Record) {
        if index < KKP_BASE {
            self.kppt.kk.make_mut()[index] = quantize_pair32(r);
        } else if index < KPP_BASE {
            self.kppt.kkp.make_mut()[index - KKP_BASE] = quantize_pair32(r);
        } else if index < PATTERN_BASE {
            let j = index - KPP_BASE;
            let k = j / KPP_TRI;
            let block = &mut self.kppt.kpp.make_mut()[k * FE_END * FE_END..(k + 1) * FE_END * FE_END];
            store_kpp(block, j % KPP_TRI, r);
        } else if let Some(p) = self.patterns.as_deref_mut()
            && let Feature::Pattern(i) = decode_index(index)
        {
            p.set_weight(i, quantize_i32(r[0]).0);
        }
    }
}

/// The AdaGrad step of one record; true if a weight changed. The single definition of the
/// update, shared by `apply` and `apply_parallel`.
#[inline]
pub(crate) fn update_record(r: &mut Record, g: [f32; 2], parts: usize, eta: [f32; 2], eps: f32) -> bool {
    let mut changed = false;
    for p in 0..parts {
        if g[p] == 0.0 {
            continue;
        }
        r[2 + p] += g[p] * g[p];
        r[p] -= eta[p] * g[p] / (r[2 + p] + eps).sqrt();
        changed = true;
    }
    changed
}

pub(crate) fn step_sizes(cfg: &AdaGradConfig, update_no: u64) -> ([f32; 2], f32) {
    let decay = cfg.eta_decay.powf(update_no as f64);
    ([(cfg.eta * decay) as f32, (cfg.eta_turn * decay) as f32], cfg.epsilon as f32)
}

/// Applies one update. `grads` holds (feature index, [board, turn] gradient) with distinct
/// indices. Returns the number of weights changed.
pub fn apply(
    cfg: &AdaGradConfig,
    update_no: u64,
    records: &mut [Record],
    grads: &[(u32, [f32; 2])],
    mut quant: Option<&mut Quantized>,
) -> usize {
    let (eta, eps) = step_sizes(cfg, update_no);
    let mut touched = 0;
    for &(i, g) in grads {
        let i = i as usize;
        let r = &mut records[i];
        let parts = if i >= PATTERN_BASE { 1 } else { 2 };
        if update_record(r, g, parts, eta, eps) {
            touched += 1;
            if let Some(q) = quant.as_deref_mut() {
                q.store(i, r);
            }
        }
    }
    touched
}

/// Where one segment of the feature space writes its quantized values.
enum SegmentTable<'a> {
    None,
    /// KK or KKP entries, one per feature, starting at the segment's first feature.
    Pairs32(&'a mut [[i32; 2]]),
    /// One king's KPP block (`FE_END × FE_END`); the segment is that king's triangle.
    KppBlock(&'a mut [[i16; 2]]),
    Patterns(&'a mut PatternSet),
}

/// A disjoint range of features: its records, its gradients and its quantized table.
struct Segment<'a> {
    base: usize,
    records: &'a mut [Record],
    grads: &'a [(u32, [f32; 2])],
    table: SegmentTable<'a>,
}

fn apply_segment(seg: Segment, eta: [f32; 2], eps: f32) -> usize {
    let Segment { base, records, grads, mut table } = seg;
    let mut touched = 0;
    for &(i, g) in grads {
        let l = i as usize - base;
        let r = &mut records[l];
        let parts = if i as usize >= PATTERN_BASE { 1 } else { 2 };
        if update_record(r, g, parts, eta, eps) {
            touched += 1;
            match &mut table {
                SegmentTable::None => {}
                SegmentTable::Pairs32(t) => t[l] = quantize_pair32(r),
                SegmentTable::KppBlock(block) => store_kpp(block, l, r),
                SegmentTable::Patterns(p) => p.set_weight(l, quantize_i32(r[0]).0),
            }
        }
    }
    touched
}

/// `apply` on the current rayon pool: the feature space is cut into disjoint ranges (KK;
/// KKP per Black king square; KPP per king square, whose quantized block holds both [a][b]
/// and [b][a]; patterns) and the ranges are updated in parallel. Each weight's update
/// depends only on its own record and gradient, so the result is bit-identical to `apply`
/// for any number of threads. Same arguments and result as `apply`; `grads` must be sorted
/// by index (as `gradient::batch_gradient` returns it).
pub fn apply_parallel(
    cfg: &AdaGradConfig,
    update_no: u64,
    records: &mut [Record],
    grads: &[(u32, [f32; 2])],
    quant: Option<&mut Quantized>,
) -> usize {
    use rayon::prelude::*;
    debug_assert!(grads.windows(2).all(|w| w[0].0 < w[1].0), "apply_parallel needs sorted, distinct indices");
    let (eta, eps) = step_sizes(cfg, update_no);
    let n = records.len();
    // Segment bounds (global feature indices) and their tables.
    let mut bounds: Vec<usize> = vec![0, KKP_BASE];
    bounds.extend((1..=81).map(|bk| KKP_BASE + bk * 81 * FE_END));
    bounds.extend((1..=81).map(|k| KPP_BASE + k * KPP_TRI));
    debug_assert_eq!(*bounds.last().unwrap(), PATTERN_BASE);
    if n > PATTERN_BASE {
        bounds.push(n);
    }
    let mut tables: Vec<SegmentTable> = Vec::with_capacity(bounds.len());
    match quant {
        Some(q) => {
            let Quantized { kppt, patterns } = q;
            let kk = kppt.kk.make_mut();
            tables.push(SegmentTable::Pairs32(kk));
            let kkp = kppt.kkp.make_mut();
            tables.extend(kkp.chunks_mut(81 * FE_END).map(SegmentTable::Pairs32));
            let kpp = kppt.kpp.make_mut();
            tables.extend(kpp.chunks_mut(FE_END * FE_END).map(SegmentTable::KppBlock));
            if n > PATTERN_BASE {
                tables.push(match patterns.as_deref_mut() {
                    Some(p) => SegmentTable::Patterns(p),
                    None => SegmentTable::None,
                });
            }
        }
        None => tables.extend((1..bounds.len()).map(|_| SegmentTable::None)),
    }
    let mut segments = Vec::with_capacity(tables.len());
    let mut rest = records;
    let mut grest = grads;
    for (w, table) in bounds.windows(2).zip(tables) {
        let (lo, hi) = (w[0], w[1].min(n));
        let (seg, tail) = rest.split_at_mut(hi.saturating_sub(lo).min(rest.len()));
        rest = tail;
        let cut = grest.partition_point(|g| (g.0 as usize) < hi);
        let (gseg, gtail) = grest.split_at(cut);
        grest = gtail;
        if !gseg.is_empty() {
            segments.push(Segment { base: lo, records: seg, grads: gseg, table });
        }
    }
    assert!(grest.is_empty(), "gradient index beyond the weight file ({} features)", n);
    segments.into_par_iter().map(|s| apply_segment(s, eta, eps)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_half_away_equals_f32_round_on_every_kind_of_value() {
        let same = |w: f32| {
            let (a, b) = (round_half_away(w), w.round());
            // Equal as numbers: -0.0 for +0.0 makes no difference once cast to an integer.
            assert!(a == b || (a.is_nan() && b.is_nan()), "{w:e} ({:#x}): {a} against {b}", w.to_bits());
        };
        for w in [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.5,
            -1.5,
            2.5,
            -2.5,
            0.499_999_97,
            -0.499_999_97,
            8_388_607.5,
            -8_388_607.5,
            8_388_608.0,
            16_777_217.0,
            3e9,
            -3e9,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            32_767.5,
            -32_767.5,
        ] {
            same(w);
        }
        // 4 M pseudo-random bit patterns: every exponent, subnormals and NaNs included.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..4_000_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            same(f32::from_bits(x as u32));
        }
        // Dense where weights live: every half up to ±40,000 and its two neighbours.
        for k in -80_000i32..80_000 {
            let h = k as f32 * 0.5;
            for w in [h, f32::from_bits(h.to_bits() + 1), f32::from_bits(h.to_bits().wrapping_sub(1))] {
                same(w);
            }
        }
    }
}
