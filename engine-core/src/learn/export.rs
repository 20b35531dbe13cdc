//! Rounding and clamping the f32 training weights into KPPT tables (and pattern weights):
//! the same quantization the trainer writes into its searcher's tables after each update.
//! KPP comes out symmetric with a zero diagonal and zero BonaPiece-0 rows; KKP[..][0] is 0.

use super::adagrad::{quantize_i16, quantize_i32};
use super::factors::{self, ParamLayout};
use super::weights::{KK_BASE, KKP_BASE, KPP_BASE, KPP_TRI, PATTERN_BASE, Record, WeightFile};
use crate::eval::bona_piece::FE_END;
use crate::eval::kppt::{KK_LEN, KKP_LEN, KpptTables};
use crate::eval::kppt_file::{EvalFileError, save_kppt_dir};
use crate::eval::patterns::PatternSet;
use rayon::prelude::*;
use std::path::Path;

/// How many weights were clamped per table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ClampCounts {
    pub kk: u64,
    pub kkp: u64,
    pub kpp: u64,
    pub patterns: u64,
}

impl ClampCounts {
    pub fn total(&self) -> u64 {
        self.kk + self.kkp + self.kpp + self.patterns
    }
}

fn q32(r: [f32; 2], clamped: &mut u64) -> [i32; 2] {
    let (a, ca) = quantize_i32(r[0]);
    let (b, cb) = quantize_i32(r[1]);
    *clamped += ca as u64 + cb as u64;
    [a, b]
}

/// Quantizes all KPPT weights (`records` as in a weight file without factors).
pub fn quantize_tables(records: &[Record]) -> (KpptTables, ClampCounts) {
    let value = |i: usize| [records[i][0], records[i][1]];
    quantize_with(value, |i, _, _, _| value(i))
}

/// Quantizes the effective KPPT weights of a weight file with the parameter layout
/// `layout` (factors folded in; the same as `quantize_tables` without factors).
pub fn quantize_tables_factored(layout: &ParamLayout, records: &[Record]) -> (KpptTables, ClampCounts) {
    if layout.factors.is_none() {
        quantize_tables(records)
    } else {
        quantize_with(
            |i| factors::effective(layout, records, i),
            |i, k, a, b| factors::effective_kpp(layout, records, i, k, a, b),
        )
    }
}

/// Quantizes the KPPT tables from `value(global feature index)` (KK, KKP) and
/// `kpp_value(index, k, a, b)` (KPP, whose loops know the decoded index).
fn quantize_with(
    value: impl Fn(usize) -> [f32; 2] + Sync,
    kpp_value: impl Fn(usize, usize, usize, usize) -> [f32; 2] + Sync,
) -> (KpptTables, ClampCounts) {
    let mut t = KpptTables::zeros();
    let mut c = ClampCounts::default();
    for (i, v) in t.kk.make_mut().iter_mut().enumerate().take(KK_LEN) {
        *v = q32(value(KK_BASE + i), &mut c.kk);
    }
    for (i, v) in t.kkp.make_mut().iter_mut().enumerate().take(KKP_LEN) {
        if i % FE_END != 0 {
            *v = q32(value(KKP_BASE + i), &mut c.kkp);
        }
    }
    c.kpp = t
        .kpp
        .make_mut()
        .par_chunks_mut(FE_END * FE_END)
        .enumerate()
        .map(|(k, table)| {
            let base = KPP_BASE + k * KPP_TRI;
            let mut clamped = 0u64;
            let mut t = 0usize;
            for a in 2..FE_END {
                for b in 1..a {
                    let r = kpp_value(base + t, k, a, b);
                    t += 1;
                    if r[0] == 0.0 && r[1] == 0.0 {
                        continue;
                    }
                    let (x, cx) = quantize_i16(r[0]);
                    let (y, cy) = quantize_i16(r[1]);
                    clamped += cx as u64 + cy as u64;
                    table[a * FE_END + b] = [x, y];
                    table[b * FE_END + a] = [x, y];
                }
            }
            clamped
        })
        .sum();
    (t, c)
}

/// Quantized pattern weights (`count` patterns).
pub fn quantize_patterns(records: &[Record], count: usize, clamped: &mut u64) -> Vec<i32> {
    (0..count)
        .map(|i| {
            let (v, c) = quantize_i32(records[PATTERN_BASE + i][0]);
            *clamped += c as u64;
            v
        })
        .collect()
}

/// A copy of `set` with the weights of the file.
pub fn patterns_with_weights(set: &PatternSet, records: &[Record], clamped: &mut u64) -> PatternSet {
    PatternSet::new(set.patterns().to_vec(), quantize_patterns(records, set.len(), clamped))
}

/// Writes KPPT files to `dir` (and, given the pattern set the weights were trained with,
/// the pattern file to `patterns_out`). Returns the clamp counts.
pub fn export_kppt(
    weights: &WeightFile,
    dir: &Path,
    patterns: Option<(&PatternSet, &Path)>,
) -> Result<ClampCounts, String> {
    let records = weights.records();
    let (tables, mut c) = quantize_tables_factored(&weights.header.param_layout(), records);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    save_kppt_dir(&tables, dir).map_err(|e: EvalFileError| e.to_string())?;
    if let Some((set, out)) = patterns {
        if set.len() as u64 != weights.header.patterns {
            return Err(format!(
                "the pattern file has {} patterns but the weights have {}",
                set.len(),
                weights.header.patterns
            ));
        }
        let p = patterns_with_weights(set, records, &mut c.patterns);
        crate::eval::patterns::file::save(&p, out).map_err(|e| e.to_string())?;
    }
    Ok(c)
}
