//! Setting up a run's weights: a new weight file (material only, from KPPT files, or a copy
//! of another run's), the pattern features trained with it, and the quantized evaluator
//! that training searches with (and export writes).

use super::config::InitConfig;
use super::export::{patterns_with_weights, quantize_tables_factored};
use super::factors::Factorization;
use super::files::WEIGHTS_FILE;
use super::weights::{KKP_BASE, KPP_BASE, KPP_TRI, PATTERN_BASE, WeightFile, kk_index};
use crate::eval::Evaluator;
use crate::eval::bona_piece::FE_END;
use crate::eval::kppt::KpptTables;
use crate::eval::patterns::PatternSet;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// FNV-1a 64 of the pattern definitions (weights excluded).
pub fn pattern_hash(set: &PatternSet) -> u64 {
    let zero = PatternSet::new(set.patterns().to_vec(), vec![0; set.len()]);
    crate::eval::patterns::file::fnv1a64(&crate::eval::patterns::file::to_bytes(&zero))
}

/// Creates a weight file: material-only (all zero), or from KPPT tables, with the pattern
/// weights of `patterns` and the dimension reduction `factors`.
pub fn init_weights(
    path: &Path,
    kppt: Option<&KpptTables>,
    patterns: Option<&PatternSet>,
    factors: Factorization,
) -> Result<WeightFile, String> {
    let n = patterns.map_or(0, |p| p.len() as u64);
    let mut w = WeightFile::create_factored(path, n, patterns.map_or(0, pattern_hash), factors)
        .map_err(|e| e.to_string())?;
    if kppt.is_some() {
        // Filling the tables writes most pages: a small disk is an error here, not SIGBUS.
        w.check_disk_space().map_err(|e| e.to_string())?;
    }
    let recs = w.records_mut();
    if let Some(t) = kppt {
        for (i, v) in t.kk.as_slice().iter().enumerate() {
            recs[kk_index(0, 0) + i][..2].copy_from_slice(&[v[0] as f32, v[1] as f32]);
        }
        for (i, v) in t.kkp.as_slice().iter().enumerate() {
            if i % FE_END != 0 && *v != [0, 0] {
                recs[KKP_BASE + i][..2].copy_from_slice(&[v[0] as f32, v[1] as f32]);
            }
        }
        let kpp = t.kpp.as_slice();
        recs[KPP_BASE..KPP_BASE + 81 * KPP_TRI].par_chunks_mut(KPP_TRI).enumerate().for_each(|(k, rk)| {
            let mut i = 0;
            for a in 2..FE_END {
                for b in 1..a {
                    let v = kpp[(k * FE_END + a) * FE_END + b];
                    if v != [0, 0] {
                        rk[i][0] = v[0] as f32;
                        rk[i][1] = v[1] as f32;
                    }
                    i += 1;
                }
            }
        });
    }
    if kppt.is_some() && factors.mirror {
        // One parameter per mirror pair: the mean of the two table entries.
        crate::learn::factors::share_mirror_pairs(recs);
    }
    if let Some(p) = patterns {
        for (i, &v) in p.weights().iter().enumerate() {
            recs[PATTERN_BASE + i][0] = v as f32;
        }
    }
    w.flush().map_err(|e| e.to_string())?;
    Ok(w)
}

/// The weight file a new run starts from, written to `path`: a copy of `init.weights`
/// (counters reset, its factors kept), or the KPPT files `init.kppt`, or material only;
/// with the pattern weights of `patterns` (read from `init.patterns`, see
/// [`load_patterns`]) and the factors `init.factors`.
pub fn start_weights(
    path: &Path,
    init: &InitConfig,
    patterns: Option<&PatternSet>,
) -> Result<WeightFile, String> {
    if let Some(src) = &init.weights {
        let mut w = WeightFile::open(src, true).map_err(|e| e.to_string())?;
        w.copy_sparse(path).map_err(|e| e.to_string())?;
        let mut w = WeightFile::open(path, false).map_err(|e| e.to_string())?;
        w.header.updates = 0;
        w.header.examples = 0;
        w.write_header();
        return Ok(w);
    }
    let kppt = match &init.kppt {
        Some(dir) => Some(crate::eval::kppt_file::load_kppt_dir(dir).map_err(|e| e.to_string())?),
        None => None,
    };
    init_weights(path, kppt.as_ref(), patterns, init.factors)
}

/// The quantized evaluator of a weight file (what training searches with and export writes).
pub fn evaluator_from_weights(w: &WeightFile, patterns: Option<&PatternSet>) -> Result<Evaluator, String> {
    let (tables, _) = quantize_tables_factored(&w.header.param_layout(), w.records());
    let patterns = match patterns {
        Some(set) => {
            if set.len() as u64 != w.header.patterns {
                return Err(format!(
                    "the pattern file has {} patterns but the weight file has {}",
                    set.len(),
                    w.header.patterns
                ));
            }
            if w.header.pattern_hash != 0 && pattern_hash(set) != w.header.pattern_hash {
                return Err(
                    "the pattern file's definitions differ from those the weights were made with".into()
                );
            }
            let mut c = 0;
            Some(Arc::new(patterns_with_weights(set, w.records(), &mut c)))
        }
        None if w.header.patterns > 0 => {
            return Err(format!(
                "the weight file has {} pattern weights: give the pattern file",
                w.header.patterns
            ));
        }
        None => None,
    };
    Ok(Evaluator { use_material: true, kppt: Some(Arc::new(tables)), patterns })
}

/// Where a new run in `run_dir` (created if need be) puts its weight file. A directory
/// that already holds one is refused: `resume` is the command that continues it, `dir_key`
/// the config key that chooses another directory.
pub fn new_run_weights_path(run_dir: &Path, resume: &str, dir_key: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(run_dir).map_err(|e| format!("{}: {e}", run_dir.display()))?;
    let path = run_dir.join(WEIGHTS_FILE);
    if path.exists() {
        return Err(format!(
            "{} exists: continue with `{resume} {}` or choose another {dir_key}",
            path.display(),
            run_dir.display()
        ));
    }
    Ok(path)
}

/// The pattern set of `init.patterns`, if any.
pub fn load_patterns(init: &InitConfig) -> Result<Option<PatternSet>, String> {
    init.patterns
        .as_ref()
        .map(|p| crate::eval::patterns::file::load(p).map_err(|e| e.to_string()))
        .transpose()
}
