//! The quantized evaluation addressed by global feature index (the weight file's order):
//! read one value, write one value, and list every non-zero value in index order. This is
//! what a remote copy of the weights needs to follow the trainer's tables exactly (a full
//! copy, then only the entries whose quantized value changed).

use super::weights::{Feature, KKP_BASE, KPP_BASE, KPP_TRI, PATTERN_BASE, SortedKppDecoder, decode_index};
use crate::eval::Evaluator;
use crate::eval::bona_piece::FE_END;
use crate::eval::kppt::KpptTables;
use crate::eval::patterns::PatternSet;
use rayon::prelude::*;

/// A quantized value: `[board, turn]` (patterns use only `board`).
pub type Value = [i32; 2];

/// The quantized value of feature `index`.
pub fn get(tables: &KpptTables, patterns: Option<&PatternSet>, index: usize) -> Value {
    match decode_index(index) {
        Feature::Kk { bk, wk } => tables.kk.as_slice()[bk * 81 + wk],
        Feature::Kkp { .. } => tables.kkp.as_slice()[index - KKP_BASE],
        Feature::Kpp { k, a, b } => {
            let v = tables.kpp.as_slice()[(k * FE_END + a) * FE_END + b];
            [v[0] as i32, v[1] as i32]
        }
        Feature::Pattern(i) => [patterns.and_then(|p| p.weights().get(i).copied()).unwrap_or(0), 0],
    }
}

/// [`get`] of many indices in increasing order (a weight sync's entries), each KPP index
/// decoded by stepping through its king's triangle (`untri_ascending`).
pub fn get_sorted(tables: &KpptTables, patterns: Option<&PatternSet>, indices: &[u32]) -> Vec<Value> {
    debug_assert!(indices.windows(2).all(|w| w[0] < w[1]));
    let kpp = tables.kpp.as_slice();
    let mut out = Vec::with_capacity(indices.len());
    let mut decoder = SortedKppDecoder::default();
    for &i in indices {
        let i = i as usize;
        if !(KPP_BASE..PATTERN_BASE).contains(&i) {
            out.push(get(tables, patterns, i));
            continue;
        }
        let (k, a, b) = decoder.decode(i);
        let v = kpp[(k * FE_END + a) * FE_END + b];
        out.push([v[0] as i32, v[1] as i32]);
    }
    out
}

/// Writes feature `index` (both symmetric KPP cells). Values that the feature's table
/// cannot hold, an index past the layout, or a non-zero turn part of a pattern are errors.
pub fn set(
    tables: &mut KpptTables,
    patterns: Option<&mut PatternSet>,
    index: usize,
    v: Value,
) -> Result<(), String> {
    match decode_index(index) {
        Feature::Kk { bk, wk } => tables.kk.make_mut()[bk * 81 + wk] = v,
        Feature::Kkp { p, .. } => {
            if p == 0 && v != [0, 0] {
                return Err(format!("feature {index}: KKP of BonaPiece 0 must stay 0"));
            }
            tables.kkp.make_mut()[index - KKP_BASE] = v;
        }
        Feature::Kpp { k, a, b } => {
            let lim = i16::MAX as i32;
            if v[0].abs() > lim || v[1].abs() > lim {
                return Err(format!("feature {index}: KPP value {v:?} outside ±{lim}"));
            }
            let q = [v[0] as i16, v[1] as i16];
            let kpp = tables.kpp.make_mut();
            kpp[(k * FE_END + a) * FE_END + b] = q;
            kpp[(k * FE_END + b) * FE_END + a] = q;
        }
        Feature::Pattern(i) => {
            let Some(p) = patterns.filter(|p| i < p.len()) else {
                return Err(format!("feature {index}: pattern {i} does not exist in this layout"));
            };
            if v[1] != 0 {
                return Err(format!("feature {index}: a pattern has no turn part"));
            }
            p.set_weight(i, v[0]);
        }
    }
    Ok(())
}

/// [`set`] of many entries in increasing index order (a weight sync's): the KPP table is
/// borrowed once, each KPP index is decoded by stepping through its king's triangle, and
/// the cells of a group of entries are prefetched before any is written, so that the
/// writes' cache misses (both symmetric cells, far apart) overlap. Stops at the first
/// entry [`set`] would refuse, with the same error; entries before it stay written.
pub fn set_sorted(
    tables: &mut KpptTables,
    mut patterns: Option<&mut PatternSet>,
    entries: &[(u32, Value)],
) -> Result<(), String> {
    if !entries.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err("weight entries out of order: indices must increase".to_string());
    }
    let kpp_lo = entries.partition_point(|e| (e.0 as usize) < KPP_BASE);
    let kpp_hi = entries.partition_point(|e| (e.0 as usize) < PATTERN_BASE);
    for &(i, v) in &entries[..kpp_lo] {
        set(tables, patterns.as_deref_mut(), i as usize, v)?;
    }
    let kpp = tables.kpp.make_mut();
    let lim = i16::MAX as i32;
    let mut decoder = SortedKppDecoder::default();
    const GROUP: usize = 16;
    let mut cells = [(0usize, 0usize); GROUP];
    for run in entries[kpp_lo..kpp_hi].chunks(GROUP) {
        for (cell, &(i, _)) in cells.iter_mut().zip(run) {
            let (k, a, b) = decoder.decode(i as usize);
            *cell = ((k * FE_END + a) * FE_END + b, (k * FE_END + b) * FE_END + a);
            crate::prefetch::prefetch(&kpp[cell.0]);
            crate::prefetch::prefetch(&kpp[cell.1]);
        }
        for (&(ab, ba), &(i, v)) in cells.iter().zip(run) {
            if v[0].abs() > lim || v[1].abs() > lim {
                return Err(format!("feature {i}: KPP value {v:?} outside ±{lim}"));
            }
            let q = [v[0] as i16, v[1] as i16];
            kpp[ab] = q;
            kpp[ba] = q;
        }
    }
    for &(i, v) in &entries[kpp_hi..] {
        set(tables, patterns.as_deref_mut(), i as usize, v)?;
    }
    Ok(())
}

/// Every non-zero quantized value, sorted by feature index.
pub fn nonzero_entries(tables: &KpptTables, patterns: Option<&PatternSet>) -> Vec<(u32, Value)> {
    let mut out: Vec<(u32, Value)> = Vec::new();
    for (i, &v) in tables.kk.as_slice().iter().enumerate() {
        if v != [0, 0] {
            out.push((i as u32, v));
        }
    }
    for (i, &v) in tables.kkp.as_slice().iter().enumerate() {
        if v != [0, 0] {
            out.push(((KKP_BASE + i) as u32, v));
        }
    }
    let kpp = tables.kpp.as_slice();
    let per_king: Vec<Vec<(u32, Value)>> = (0..81)
        .into_par_iter()
        .map(|k| {
            let mut part = Vec::new();
            let base = KPP_BASE + k * KPP_TRI;
            let mut t = 0usize;
            for a in 2..FE_END {
                let row = &kpp[(k * FE_END + a) * FE_END..(k * FE_END + a) * FE_END + a];
                for &v in &row[1..] {
                    // tri(a, b) runs 0, 1, 2, ... in this loop order (a ascending, b < a).
                    if v != [0, 0] {
                        part.push(((base + t) as u32, [v[0] as i32, v[1] as i32]));
                    }
                    t += 1;
                }
            }
            part
        })
        .collect();
    for part in per_king {
        out.extend(part);
    }
    if let Some(p) = patterns {
        for (i, &w) in p.weights().iter().enumerate() {
            if w != 0 {
                out.push(((PATTERN_BASE + i) as u32, [w, 0]));
            }
        }
    }
    out
}

/// The tables of a training evaluator (material + KPPT + optional patterns), mutable.
/// `None` when a searcher still holds a reference.
pub fn tables_mut(ev: &mut Evaluator) -> Option<(&mut KpptTables, Option<&mut PatternSet>)> {
    let kppt = std::sync::Arc::get_mut(ev.kppt.as_mut()?)?;
    let patterns = match ev.patterns.as_mut() {
        Some(p) => Some(std::sync::Arc::get_mut(p)?),
        None => None,
    };
    Some((kppt, patterns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learn::weights::{kk_index, kkp_index, kpp_index, pattern_index};

    #[test]
    fn set_get_and_list_agree() {
        let mut t = KpptTables::zeros();
        let mut p = PatternSet::new(Vec::new(), Vec::new());
        let idx = [
            (kk_index(3, 5), [7, -2]),
            (kkp_index(80, 1, 1547), [-100, 3]),
            (kpp_index(40, 1500, 100), [32767, -32767]),
            (kpp_index(0, 2, 1), [1, 0]),
        ];
        for &(i, v) in &idx {
            set(&mut t, Some(&mut p), i, v).unwrap();
            assert_eq!(get(&t, Some(&p), i), v);
        }
        assert_eq!(t.kpp(crate::rules::Square::from_index(40), 100, 1500), [32767, -32767]);
        let mut want: Vec<(u32, Value)> = idx.iter().map(|&(i, v)| (i as u32, v)).collect();
        want.sort();
        assert_eq!(nonzero_entries(&t, Some(&p)), want);
        assert!(set(&mut t, None, kpp_index(1, 3, 2), [40000, 0]).is_err());
        assert!(set(&mut t, None, kkp_index(1, 1, 0), [1, 0]).is_err());
        assert!(set(&mut t, Some(&mut p), pattern_index(0), [1, 0]).is_err(), "no pattern 0");
    }

    /// KPP indices on every king: the triangle's first and last pairs, and `random` pairs
    /// drawn with `next` (not sorted, possibly repeated).
    fn kpp_indices_on_every_king(random: usize, next: &mut impl FnMut() -> u64) -> Vec<usize> {
        let mut idx = Vec::new();
        for k in 0..81 {
            idx.push(kpp_index(k, 2, 1));
            idx.push(kpp_index(k, FE_END - 1, FE_END - 2));
            for _ in 0..random {
                let a = 1 + (next() % (FE_END as u64 - 1)) as usize;
                let b = 1 + (next() % (FE_END as u64 - 1)) as usize;
                if a != b {
                    idx.push(kpp_index(k, a, b));
                }
            }
        }
        idx
    }

    #[test]
    fn get_sorted_equals_get() {
        let mut t = KpptTables::zeros();
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Values on every king, first and last pairs included, and a KK and a KKP entry.
        let mut idx = vec![kk_index(3, 5), kkp_index(80, 1, 1547)];
        idx.extend(kpp_indices_on_every_king(200, &mut next));
        idx.sort_unstable();
        idx.dedup();
        for &i in &idx {
            let v = (next() % 2000) as i32 - 1000;
            set(&mut t, None, i, [v, -v / 2]).unwrap();
        }
        let sorted: Vec<u32> = idx.iter().map(|&i| i as u32).collect();
        let want: Vec<Value> = idx.iter().map(|&i| get(&t, None, i)).collect();
        assert!(want.iter().filter(|v| **v != [0, 0]).count() > 10_000);
        assert_eq!(get_sorted(&t, None, &sorted), want);
        // A subset (sparse kings, gaps) too.
        let some: Vec<u32> = sorted.iter().copied().step_by(37).collect();
        let want: Vec<Value> = some.iter().map(|&i| get(&t, None, i as usize)).collect();
        assert_eq!(get_sorted(&t, None, &some), want);
    }

    #[test]
    fn set_sorted_writes_what_set_writes() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Entries of every KPPT table: KK, KKP, KPP on every king (first and last pairs of
        // the triangle included), with random values, in increasing order. (Patterns go
        // through `set` itself.)
        let mut idx = vec![kk_index(0, 0), kk_index(80, 80), kkp_index(0, 0, 1), kkp_index(80, 80, 1547)];
        idx.extend(kpp_indices_on_every_king(100, &mut next));
        idx.sort_unstable();
        idx.dedup();
        let entries: Vec<(u32, Value)> = idx
            .iter()
            .map(|&i| {
                let v = (next() % 60001) as i32 - 30000;
                (i as u32, [v, -v / 3])
            })
            .collect();
        let mut one = KpptTables::zeros();
        for &(i, v) in &entries {
            set(&mut one, None, i as usize, v).unwrap();
        }
        let mut many = KpptTables::zeros();
        set_sorted(&mut many, None, &entries).unwrap();
        assert!(one.kk.as_slice() == many.kk.as_slice());
        assert!(one.kkp.as_slice() == many.kkp.as_slice());
        assert!(one.kpp.as_slice() == many.kpp.as_slice(), "KPP cells differ");
        assert_eq!(
            nonzero_entries(&many, None),
            entries.iter().copied().filter(|e| e.1 != [0, 0]).collect::<Vec<_>>()
        );
        // What `set` refuses, `set_sorted` refuses; and entries must increase.
        let bad = [(kpp_index(3, 5, 4) as u32, [40000, 0])];
        assert!(set_sorted(&mut many, None, &bad).is_err());
        let unsorted = [entries[5], entries[4]];
        assert!(set_sorted(&mut many, None, &unsorted).is_err());
    }
}
