//! Dimension reduction ("factorized training") for KPPT, as the established KPPT learners
//! do it: fewer free parameters, so little data generalises further, while the exported
//! tables keep the standard format and the engine's cost is unchanged.
//!
//! The trainer's parameters are the weight file's records. With factorization on, the
//! *effective* value of a raw KPPT feature (what the searcher and the export use) is a
//! sum of parameters:
//! - **mirror**: a feature and its left-right mirror image (every square's file
//!   reflected, kings and pieces alike; hands unchanged) share one parameter, stored at the
//!   smaller of the two indices (`canonical_raw`);
//! - **kp**: a KP factor `KP[k][p]` (a king and one piece, from that king's side) is added
//!   to every KKP entry that contains the pair: `KKP[bk][wk][p]` gets `KP[bk][p]` (Black's
//!   king) and, with the board part negated as for White's KPP half,
//!   `KP[80 − wk][flip(p)]` (White's king, seen from White). Both kings share the table,
//!   so a KP value learnt from Black's side also serves White's. The KP parameters follow
//!   the patterns in the weight file;
//! - **pp** (PP relative to the king): a factor `PP[ra][rb]` over pairs of pieces placed
//!   relative to the king (`relative_piece`: a board piece's file and rank offsets from the
//!   king, hands as they are) is added to every KPP entry `KPP[k][a][b]` whose pieces sit
//!   at those offsets from `k`. KPP is already seen from its king's side for both colours,
//!   so the factor adds with the same sign to both halves. It shares what a shape of pieces
//!   around the king is worth among all king squares where the shape fits; the PP
//!   parameters follow the KP ones.
//!
//! Workers need not know: they report gradients w.r.t. the raw features, and the chain
//! rule turns those into gradients w.r.t. the parameters (`param_gradient`: a
//! parameter's gradient is the sum over the raw features it feeds, with the fold's sign).
//! After an update, the raw features whose effective value depends on a changed parameter
//! (`dependents`) are recomputed (`effective`) and written into the quantized tables.

use super::adagrad::{AdaGradConfig, Quantized, apply_parallel, quantize_pair32, store_kpp_pair};
use super::gradient::sort_and_sum;
use super::quantized;
pub use super::weights::{Factorization, KP_PARAMS, PP_PARAMS, ParamLayout, REL_END, REL_PLACES};
use super::weights::{
    Feature, KKP_BASE, KPP_BASE, KPP_TRI, PATTERN_BASE, Record, decode_index, kk_index, kkp_index, kpp_index,
    pair_index, tri, untri, untri_ascending,
};
use crate::eval::bona_piece::{FE_END, FE_HAND_END, flip};
use crate::prefetch::prefetch;
use rayon::prelude::*;

impl ParamLayout {
    #[inline]
    fn kp_param(&self, k: usize, p: usize) -> usize {
        self.raw_features() + k * FE_END + p
    }

    /// The parameter of `KP[k][p]` (the smaller of it and its mirror image's).
    #[inline]
    pub fn kp_index(&self, k: usize, p: usize) -> usize {
        let i = self.kp_param(k, p);
        if self.factors.mirror { i.min(self.kp_param(mirror_square(k), mirror_piece(p))) } else { i }
    }

    /// The first PP parameter (after the KP ones, if any).
    #[inline]
    fn pp_base(&self) -> usize {
        self.raw_features() + if self.factors.kp { KP_PARAMS } else { 0 }
    }

    #[inline]
    fn pp_param(&self, ra: usize, rb: usize) -> usize {
        debug_assert!(ra.max(rb) < REL_END);
        self.pp_base() + pair_index(ra, rb)
    }

    /// The parameter of `PP[ra][rb]` (relative pieces, distinct; the smaller of it and its
    /// mirror image's).
    #[inline]
    pub fn pp_index(&self, ra: usize, rb: usize) -> usize {
        let i = self.pp_param(ra, rb);
        if self.factors.mirror { i.min(self.pp_param(mirror_relative(ra), mirror_relative(rb))) } else { i }
    }

    /// The PP parameter folded into `KPP[k][a][b]`.
    #[inline]
    pub fn pp_of_kpp(&self, k: usize, a: usize, b: usize) -> usize {
        self.pp_index(relative_piece(k, a), relative_piece(k, b))
    }
}

// Board squares are `file * 9 + rank`; relative places `(df + 8) * 17 + (dr + 8)`.

/// BonaPiece `p` seen from king square `k`: a hand index as it is, a board piece as its
/// kind at its file and rank offsets from the king (`< REL_END`).
#[inline]
pub fn relative_piece(k: usize, p: usize) -> usize {
    let hand_end = FE_HAND_END as usize;
    if p < hand_end {
        return p;
    }
    let (slot, sq) = ((p - hand_end) / 81, (p - hand_end) % 81);
    let df = sq / 9 + 8 - k / 9;
    let dr = sq % 9 + 8 - k % 9;
    hand_end + slot * REL_PLACES + df * 17 + dr
}

/// The BonaPiece at relative piece `r` from king square `k`, if that place is on the board.
#[inline]
pub fn absolute_piece(k: usize, r: usize) -> Option<usize> {
    let hand_end = FE_HAND_END as usize;
    if r < hand_end {
        return Some(r);
    }
    let (slot, place) = ((r - hand_end) / REL_PLACES, (r - hand_end) % REL_PLACES);
    let file = (k / 9 + place / 17).checked_sub(8).filter(|&f| f < 9)?;
    let rank = (k % 9 + place % 17).checked_sub(8).filter(|&r| r < 9)?;
    Some(hand_end + slot * 81 + file * 9 + rank)
}

/// A relative piece with its file offset reflected (what `mirror_piece` and
/// `mirror_square` do to a piece and its king).
#[inline]
pub fn mirror_relative(r: usize) -> usize {
    let hand_end = FE_HAND_END as usize;
    if r < hand_end {
        return r;
    }
    let (slot, place) = ((r - hand_end) / REL_PLACES, (r - hand_end) % REL_PLACES);
    hand_end + slot * REL_PLACES + (16 - place / 17) * 17 + place % 17
}

/// The square with its file reflected (USI file 1 ↔ 9).
#[inline]
pub fn mirror_square(sq: usize) -> usize {
    (8 - sq / 9) * 9 + sq % 9
}

/// The BonaPiece with its square's file reflected; hand pieces and 0 are unchanged.
#[inline]
pub fn mirror_piece(p: usize) -> usize {
    let hand_end = FE_HAND_END as usize;
    if p < hand_end {
        return p;
    }
    let slot = (p - hand_end) / 81;
    hand_end + slot * 81 + mirror_square((p - hand_end) % 81)
}

/// The mirror image of a raw KPPT feature (patterns map to themselves).
pub fn mirror_raw(i: usize) -> usize {
    match decode_index(i) {
        Feature::Kk { bk, wk } => kk_index(mirror_square(bk), mirror_square(wk)),
        Feature::Kkp { bk, wk, p } => kkp_index(mirror_square(bk), mirror_square(wk), mirror_piece(p)),
        Feature::Kpp { k, a, b } => kpp_index(mirror_square(k), mirror_piece(a), mirror_piece(b)),
        Feature::Pattern(_) => i,
    }
}

/// The parameter that holds raw feature `i`'s own part.
#[inline]
pub fn canonical_raw(layout: &ParamLayout, i: usize) -> usize {
    if layout.factors.mirror && i < PATTERN_BASE { i.min(mirror_raw(i)) } else { i }
}

/// The KP parameters folded into KKP feature `(bk, wk, p)`: Black's king's (added) and
/// White's king's (board part subtracted, turn part added).
#[inline]
fn kkp_factors(layout: &ParamLayout, bk: usize, wk: usize, p: usize) -> (usize, usize) {
    (layout.kp_index(bk, p), layout.kp_index(80 - wk, flip(p as u16) as usize))
}

/// Gradient w.r.t. the parameters from the gradient w.r.t. the raw features (`raw`:
/// distinct indices; the result is sorted with distinct indices). Each parameter's
/// gradient is the sum, in input order, of the gradients of the raw features it feeds.
pub fn param_gradient(layout: &ParamLayout, raw: &[(u32, [f32; 2])], parallel: bool) -> Vec<(u32, [f32; 2])> {
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 16);
    for &(i, g) in raw {
        let i = i as usize;
        out.push((canonical_raw(layout, i) as u32, g));
        if !(layout.factors.kp || layout.factors.pp) || i >= PATTERN_BASE {
            continue;
        }
        match decode_index(i) {
            Feature::Kkp { bk, wk, p } if layout.factors.kp && p != 0 => {
                let (black, white) = kkp_factors(layout, bk, wk, p);
                out.push((black as u32, g));
                out.push((white as u32, [-g[0], g[1]]));
            }
            Feature::Kpp { k, a, b } if layout.factors.pp => out.push((layout.pp_of_kpp(k, a, b) as u32, g)),
            _ => {}
        }
    }
    sort_and_sum(&mut out, parallel);
    out
}

/// The effective (f32) value of raw feature `i`: what the tables hold after rounding.
#[inline]
pub fn effective(layout: &ParamLayout, records: &[Record], i: usize) -> [f32; 2] {
    if (KPP_BASE..PATTERN_BASE).contains(&i)
        && (layout.factors.mirror || layout.factors.pp)
        && let Feature::Kpp { k, a, b } = decode_index(i)
    {
        return effective_kpp(layout, records, i, k, a, b);
    }
    let r = &records[canonical_raw(layout, i)];
    let mut v = [r[0], r[1]];
    if layout.factors.kp
        && (KKP_BASE..KPP_BASE).contains(&i)
        && let Feature::Kkp { bk, wk, p } = decode_index(i)
        && p != 0
    {
        let (black, white) = kkp_factors(layout, bk, wk, p);
        let (b, w) = (&records[black], &records[white]);
        v[0] += b[0] - w[0];
        v[1] += b[1] + w[1];
    }
    v
}

/// [`effective`] of KPP feature `i` = `KPP[k][a][b]`, without decoding the index (the
/// whole-table passes know `k`, `a` and `b`).
#[inline]
pub fn effective_kpp(
    layout: &ParamLayout,
    records: &[Record],
    i: usize,
    k: usize,
    a: usize,
    b: usize,
) -> [f32; 2] {
    let (own, pp) = kpp_sources(layout, i, k, a, b);
    kpp_value(records, own, pp)
}

/// The records `KPP[k][a][b]` (feature `i`) reads: its own parameter (the smaller index of
/// it and its mirror image's, with the mirror factor) and its PP parameter, if any.
#[inline]
fn kpp_sources(layout: &ParamLayout, i: usize, k: usize, a: usize, b: usize) -> (usize, Option<usize>) {
    let own = if layout.factors.mirror {
        i.min(kpp_index(mirror_square(k), mirror_piece(a), mirror_piece(b)))
    } else {
        i
    };
    (own, layout.factors.pp.then(|| layout.pp_of_kpp(k, a, b)))
}

#[inline]
fn kpp_value(records: &[Record], own: usize, pp: Option<usize>) -> [f32; 2] {
    let r = &records[own];
    let mut v = [r[0], r[1]];
    if let Some(pp) = pp {
        let pp = &records[pp];
        v[0] += pp[0];
        v[1] += pp[1];
    }
    v
}

/// The raw features whose effective value depends on the given parameters (`params`
/// sorted and distinct; the result is sorted and distinct).
///
/// A PP parameter feeds up to 81 KPP entries per variant, so an update of a few thousand
/// positions has ~16 M dependents. They are deduplicated and ordered by one bitmap per king
/// square (KPP, the kings in parallel) and one over KK and KKP, instead of by a sort of the
/// whole list.
pub fn dependents(layout: &ParamLayout, params: &[u32]) -> Vec<u32> {
    let raw_end = layout.raw_features();
    let split = |bound: usize| params.partition_point(|&j| (j as usize) < bound);
    let (kpp_lo, kpp_hi, kp_lo) = (split(KPP_BASE), split(PATTERN_BASE), split(raw_end));
    let pp_lo = if layout.factors.pp { split(layout.pp_base()) } else { params.len() };
    let mirror = layout.factors.mirror;

    // KK and KKP: the raw features themselves (and mirrors) and the KKP entries of KP.
    let mut below_kpp = Bitmap::new(KPP_BASE);
    for &j in &params[..kpp_lo] {
        below_kpp.set(j as usize);
        if mirror {
            below_kpp.set(mirror_raw(j as usize));
        }
    }
    for &j in &params[kp_lo..pp_lo] {
        let kp = j as usize - raw_end;
        let (k, p) = (kp / FE_END, kp % FE_END);
        let variants = [(k, p), (mirror_square(k), mirror_piece(p))];
        for &(k, p) in &variants[..if mirror { 2 } else { 1 }] {
            let white_view = flip(p as u16) as usize;
            for other in 0..81 {
                below_kpp.set(kkp_index(k, other, p));
                below_kpp.set(kkp_index(other, 80 - k, white_view));
            }
        }
    }
    let mut out: Vec<u32> = Vec::with_capacity(params.len() * 2);
    below_kpp.append_set(0, &mut out);

    // KPP, one king square at a time: its raw entries, the mirror images of the mirrored
    // king's, and every PP shape that fits around it.
    let raw_by_king = per_block(&params[kpp_lo..kpp_hi], |&j| j as usize, KPP_BASE, KPP_TRI);
    let shapes = pp_shapes(layout, &params[pp_lo..]);
    let per_king: Vec<Vec<u32>> = (0..81usize)
        .into_par_iter()
        .map(|k| {
            let base = KPP_BASE + k * KPP_TRI;
            let mut bits = Bitmap::new(KPP_TRI);
            for &j in raw_by_king[k] {
                bits.set(j as usize - base);
            }
            if mirror {
                for &j in raw_by_king[mirror_square(k)] {
                    bits.set(mirror_raw(j as usize) - base);
                }
            }
            let (file, rank) = ((k / 9) as u8, (k % 9) as u8);
            for s in &shapes {
                if s.files.contains(&file) && s.ranks.contains(&rank) {
                    let a = absolute_piece(k, s.ra as usize).expect("inside the shape's king range");
                    let b = absolute_piece(k, s.rb as usize).expect("inside the shape's king range");
                    bits.set(tri(a, b));
                }
            }
            let mut v = Vec::new();
            bits.append_set(base, &mut v);
            v
        })
        .collect();
    for v in per_king {
        out.extend_from_slice(&v);
    }
    // Patterns: themselves (already sorted).
    out.extend_from_slice(&params[kpp_hi..kp_lo]);
    out
}

/// One variant of a PP parameter: two relative pieces and the king squares (files and
/// ranks) where both land on the board.
struct PpShape {
    ra: u16,
    rb: u16,
    files: std::ops::RangeInclusive<u8>,
    ranks: std::ops::RangeInclusive<u8>,
}

/// The shapes of the PP parameters `pp` (a parameter and, with the mirror, its mirror image).
fn pp_shapes(layout: &ParamLayout, pp: &[u32]) -> Vec<PpShape> {
    let base = if pp.is_empty() { 0 } else { layout.pp_base() };
    let n = if layout.factors.mirror { 2 } else { 1 };
    pp.par_iter()
        .flat_map_iter(|&j| {
            let (ra, rb) = untri(j as usize - base);
            let variants = [(ra, rb), (mirror_relative(ra), mirror_relative(rb))];
            variants.into_iter().take(n).enumerate().filter_map(move |(v, (ra, rb))| {
                // A symmetric shape is its own mirror image: once is enough.
                if v == 1 && (ra, rb) == variants[0] {
                    return None;
                }
                let (files_a, ranks_a) = king_range(ra);
                let (files_b, ranks_b) = king_range(rb);
                Some(PpShape {
                    ra: ra as u16,
                    rb: rb as u16,
                    files: *files_a.start().max(files_b.start())..=*files_a.end().min(files_b.end()),
                    ranks: *ranks_a.start().max(ranks_b.start())..=*ranks_a.end().min(ranks_b.end()),
                })
            })
        })
        .collect()
}

/// King files and ranks from which relative piece `r` lands on the board (all for a hand
/// piece).
fn king_range(r: usize) -> (std::ops::RangeInclusive<u8>, std::ops::RangeInclusive<u8>) {
    let hand_end = FE_HAND_END as usize;
    if r < hand_end {
        return (0..=8, 0..=8);
    }
    let place = (r - hand_end) % REL_PLACES;
    let (df, dr) = ((place / 17) as u8, (place % 17) as u8);
    // The piece's file is the king's + df − 8, which must be in 0..=8.
    (8u8.saturating_sub(df)..=(16 - df).min(8), 8u8.saturating_sub(dr)..=(16 - dr).min(8))
}

/// A fixed-size set of indices, read back in increasing order.
struct Bitmap(Vec<u64>);

impl Bitmap {
    fn new(len: usize) -> Bitmap {
        Bitmap(vec![0; len.div_ceil(64)])
    }

    #[inline]
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Appends `offset + i` for every member `i`, in increasing order.
    fn append_set(&self, offset: usize, out: &mut Vec<u32>) {
        for (w, &word) in self.0.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                out.push((offset + w * 64 + bits.trailing_zeros() as usize) as u32);
                bits &= bits - 1;
            }
        }
    }
}

/// What one factored update touches: the parameter gradients of a raw-feature gradient
/// (see [`param_gradient`]) and the raw features that depend on those parameters (see
/// [`dependents`]). The coordinator reads the dependents' quantized values before the
/// [`step`](FactoredUpdate::step) to learn which ones changed.
pub struct FactoredUpdate {
    pub params: Vec<(u32, [f32; 2])>,
    pub dependents: Vec<u32>,
}

impl FactoredUpdate {
    pub fn plan(layout: &ParamLayout, raw: &[(u32, [f32; 2])]) -> FactoredUpdate {
        let params = param_gradient(layout, raw, true);
        let indices: Vec<u32> = params.iter().map(|g| g.0).collect();
        let dependents = dependents(layout, &indices);
        FactoredUpdate { params, dependents }
    }

    /// The AdaGrad step on every touched parameter, then the effective value of every
    /// dependent raw feature written into `quant`. Returns the number of parameters changed
    /// and the raw features whose quantized value changed (sorted; empty without `quant`).
    pub fn step(
        &self,
        cfg: &AdaGradConfig,
        update_no: u64,
        layout: &ParamLayout,
        records: &mut [Record],
        quant: Option<&mut Quantized>,
    ) -> (usize, Vec<u32>) {
        let touched = apply_params(cfg, update_no, layout, records, &self.params);
        let changed = match quant {
            Some(q) => refresh(layout, records, &self.dependents, q),
            None => Vec::new(),
        };
        (touched, changed)
    }
}

/// One factored AdaGrad update ([`FactoredUpdate::plan`] then its step). Returns the number
/// of parameters changed and the raw features whose quantized value changed.
pub fn apply_factored(
    cfg: &AdaGradConfig,
    update_no: u64,
    layout: &ParamLayout,
    records: &mut [Record],
    raw: &[(u32, [f32; 2])],
    quant: Option<&mut Quantized>,
) -> (usize, Vec<u32>) {
    FactoredUpdate::plan(layout, raw).step(cfg, update_no, layout, records, quant)
}

/// The AdaGrad step on the parameters (`params` sorted and distinct): the raw part as
/// `apply_parallel` does it, the factor parameters (both parts) in parallel.
pub fn apply_params(
    cfg: &AdaGradConfig,
    update_no: u64,
    layout: &ParamLayout,
    records: &mut [Record],
    params: &[(u32, [f32; 2])],
) -> usize {
    let raw_end = layout.raw_features();
    let cut = params.partition_point(|g| (g.0 as usize) < raw_end);
    let (raw_records, factor_records) = records.split_at_mut(raw_end);
    let mut touched = apply_parallel(cfg, update_no, raw_records, &params[..cut], None);
    let (eta, eps) = super::adagrad::step_sizes(cfg, update_no);
    let scale = cfg.eta_factors as f32;
    let eta = [eta[0] * scale, eta[1] * scale];
    let factor_grads = &params[cut..];
    // Factor records in disjoint chunks of the index space, one rayon task each.
    const CHUNK: usize = 1 << 14;
    let mut tasks: Vec<FactorTask> = Vec::new();
    let mut rest = factor_records;
    let mut grest = factor_grads;
    let mut base = raw_end;
    while !grest.is_empty() {
        let len = CHUNK.min(rest.len());
        let (chunk, tail) = rest.split_at_mut(len);
        let n = grest.partition_point(|g| (g.0 as usize) < base + len);
        let (g, gtail) = grest.split_at(n);
        if !g.is_empty() {
            tasks.push((chunk, g, base));
        }
        assert!(len > 0 || gtail.is_empty(), "factor gradient index beyond the weight file");
        rest = tail;
        grest = gtail;
        base += len;
    }
    touched += tasks
        .into_par_iter()
        .map(|(chunk, grads, base)| {
            grads
                .iter()
                .filter(|&&(i, g)| {
                    super::adagrad::update_record(&mut chunk[i as usize - base], g, 2, eta, eps)
                })
                .count()
        })
        .sum::<usize>();
    touched
}

/// A chunk of factor records, its gradients, and the global index of its first record.
type FactorTask<'a> = (&'a mut [Record], &'a [(u32, [f32; 2])], usize);

/// Writes the effective value of each raw feature in `deps` (sorted, distinct) into the
/// quantized tables, and returns those whose quantized value changed (sorted). KKP and KPP
/// are written one king's block at a time, in parallel.
///
/// The changed list is what a remote copy of the tables needs (the coordinator's delta
/// syncs). It is found while writing, from the value each cell held, rather than by reading
/// the up to ~16 M dependents before and after (two more passes over scattered memory,
/// each decoding every index).
pub fn refresh(layout: &ParamLayout, records: &[Record], deps: &[u32], quant: &mut Quantized) -> Vec<u32> {
    let split = |bound: usize| deps.partition_point(|&i| (i as usize) < bound);
    let (kkp_lo, kpp_lo, kpp_hi) = (split(KKP_BASE), split(KPP_BASE), split(PATTERN_BASE));
    let mut kk_changed = Vec::new();
    let mut pattern_changed = Vec::new();
    for &i in deps[..kkp_lo].iter().chain(&deps[kpp_hi..]) {
        let before = quantized::get(quant.kppt, quant.patterns.as_deref(), i as usize);
        let v = effective(layout, records, i as usize);
        quant.store(i as usize, &[v[0], v[1], 0.0, 0.0]);
        if quantized::get(quant.kppt, quant.patterns.as_deref(), i as usize) != before {
            if (i as usize) < KKP_BASE { kk_changed.push(i) } else { pattern_changed.push(i) }
        }
    }
    let kkp_block = 81 * FE_END;
    let kkp_deps = per_block(&deps[kkp_lo..kpp_lo], |&i| i as usize, KKP_BASE, kkp_block);
    let kkp_changed: Vec<Vec<u32>> = quant
        .kppt
        .kkp
        .make_mut()
        .par_chunks_mut(kkp_block)
        .zip(kkp_deps)
        .map(|(block, deps)| {
            let mut changed = Vec::new();
            for &i in deps {
                let v = effective(layout, records, i as usize);
                let q = quantize_pair32(&[v[0], v[1], 0.0, 0.0]);
                let cell = &mut block[(i as usize - KKP_BASE) % kkp_block];
                if *cell != q {
                    *cell = q;
                    changed.push(i);
                }
            }
            changed
        })
        .collect();
    let kpp_deps = per_block(&deps[kpp_lo..kpp_hi], |&i| i as usize, KPP_BASE, KPP_TRI);
    let kpp_changed: Vec<Vec<u32>> = quant
        .kppt
        .kpp
        .make_mut()
        .par_chunks_mut(FE_END * FE_END)
        .zip(kpp_deps)
        .enumerate()
        .map(|(k, (block, deps))| {
            let mut changed = Vec::new();
            // Sorted triangle indices: the first piece only grows (`untri_ascending`).
            let mut first = 2;
            // The records read are scattered over the file: their addresses are computed for
            // a group first and prefetched, so the cache misses overlap.
            let mut group = [(0usize, 0usize, 0usize, None::<usize>); 32];
            for run in deps.chunks(group.len()) {
                for (slot, &i) in group.iter_mut().zip(run) {
                    let i = i as usize;
                    let (a, b) = untri_ascending(&mut first, i - KPP_BASE - k * KPP_TRI);
                    let (own, pp) = kpp_sources(layout, i, k, a, b);
                    prefetch(&records[own]);
                    if let Some(pp) = pp {
                        prefetch(&records[pp]);
                    }
                    *slot = (a, b, own, pp);
                }
                for (&(a, b, own, pp), &i) in group[..run.len()].iter().zip(run) {
                    let v = kpp_value(records, own, pp);
                    // The cell `quantized::get` reads (a > b); `store_kpp_pair` writes both.
                    let before = block[a * FE_END + b];
                    store_kpp_pair(block, a, b, &[v[0], v[1], 0.0, 0.0]);
                    if block[a * FE_END + b] != before {
                        changed.push(i);
                    }
                }
            }
            changed
        })
        .collect();
    let mut changed = kk_changed;
    changed.extend(kkp_changed.into_iter().flatten());
    changed.extend(kpp_changed.into_iter().flatten());
    changed.extend(pattern_changed);
    changed
}

/// `items` (sorted by `key`) cut into the runs whose keys fall in consecutive blocks of
/// `block` features from `base`, one run per king square (81, empty ones included).
fn per_block<T>(items: &[T], key: impl Fn(&T) -> usize, base: usize, block: usize) -> Vec<&[T]> {
    let mut rest = items;
    (0..81)
        .map(|k| {
            let n = rest.partition_point(|x| key(x) < base + (k + 1) * block);
            let (run, tail) = rest.split_at(n);
            rest = tail;
            run
        })
        .collect()
}

/// For weights initialised from tables: each mirror pair of KK/KKP/KPP features gets one
/// parameter, the mean of the two (at the canonical index; the other is zeroed).
pub fn share_mirror_pairs(records: &mut [Record]) {
    for i in 0..PATTERN_BASE {
        let m = mirror_raw(i);
        if m > i {
            let (lo, hi) = records.split_at_mut(m);
            for (own, mirrored) in lo[i].iter_mut().zip(hi[0].iter_mut()).take(2) {
                *own = 0.5 * (*own + *mirrored);
                *mirrored = 0.0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_is_an_involution_that_keeps_kinds_and_hands() {
        for sq in 0..81 {
            assert_eq!(mirror_square(mirror_square(sq)), sq);
            assert_eq!(mirror_square(sq) % 9, sq % 9, "same rank");
        }
        assert_eq!(mirror_square(0), 72); // 1a ↔ 9a
        assert_eq!(mirror_square(40), 40); // 5e stays
        for p in 0..FE_END {
            let m = mirror_piece(p);
            assert_eq!(mirror_piece(m), p);
            assert!(m < FE_END);
            if p < FE_HAND_END as usize {
                assert_eq!(m, p);
            } else {
                assert_eq!((m - 90) / 81, (p - 90) / 81, "same side and kind");
            }
            // On the board, mirroring and the colour flip commute (both act on squares
            // only). Hands are left out: `flip` maps the unused hand index 87 onto the
            // board (index 90), so the identity cannot hold there.
            if p >= FE_HAND_END as usize {
                assert_eq!(flip(mirror_piece(p) as u16) as usize, mirror_piece(flip(p as u16) as usize));
            }
        }
    }

    #[test]
    fn relative_pieces_round_trip_and_commute_with_the_mirror() {
        let hand_end = FE_HAND_END as usize;
        let mut seen = vec![false; REL_END];
        for k in 0..81 {
            for p in 1..FE_END {
                let r = relative_piece(k, p);
                assert!(r < REL_END);
                assert_eq!(absolute_piece(k, r), Some(p), "king {k} piece {p}");
                assert_eq!(mirror_relative(r), relative_piece(mirror_square(k), mirror_piece(p)));
                assert_eq!(mirror_relative(mirror_relative(r)), r);
                seen[r] = true;
            }
        }
        // Every place within 8 files and ranks of some king is reached.
        assert!(seen[1..].iter().all(|&s| s), "relative pieces never reached");
        // The same shape one file over: a king on 5e with a piece on 4d, and on 6e with 5d.
        let piece_on = |slot: usize, sq: usize| hand_end + slot * 81 + sq;
        let (k1, k2) = (4 * 9 + 4, 5 * 9 + 4);
        assert_eq!(relative_piece(k1, piece_on(3, 3 * 9 + 3)), relative_piece(k2, piece_on(3, 4 * 9 + 3)));
        assert_ne!(relative_piece(k1, piece_on(3, 3 * 9 + 3)), relative_piece(k1, piece_on(3, 4 * 9 + 3)));
        // The offset (−8, −8) from a king on 9i is 1a; from a king on 1a it is off the board.
        let far = relative_piece(80, piece_on(0, 0));
        assert_eq!(absolute_piece(0, far), None);
        assert_eq!(absolute_piece(80, far), Some(piece_on(0, 0)));
    }

    #[test]
    fn bits_round_trip_and_unknown_bits_are_refused() {
        for f in [
            Factorization::NONE,
            Factorization { mirror: true, kp: false, pp: false },
            Factorization { mirror: false, kp: true, pp: false },
            Factorization { mirror: false, kp: false, pp: true },
            Factorization::ALL,
        ] {
            assert_eq!(Factorization::from_bits(f.bits()), Some(f));
        }
        assert_eq!(Factorization::from_bits(8), None);
    }
}
