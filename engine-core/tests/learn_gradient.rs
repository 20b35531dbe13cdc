//! Learner gradient: the features and signs reproduce the evaluation exactly, finite
//! differences of the loss match the analytic gradient, and a step along −g lowers the
//! loss.

mod learn_util;

use engine_core::eval::bona_piece::FE_END;
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::learn::features::active_features;
use engine_core::learn::gradient::{self, LOSS_SCALE, LossConfig, Scratch, cross_entropy, win_prob};
use engine_core::learn::weights::{Feature, decode_index};
use engine_core::rules::{Color, Position};
use engine_core::search::{Searcher, TranspositionTable};
use learn_util::{Rng, game_records, to_records};
use std::sync::Arc;

/// Random tables whose entries are multiples of 32, so the eval is an exact integer.
fn tables(seed: u64) -> KpptTables {
    let mut t = KpptTables::random(seed, 300);
    for v in t.kk.make_mut() {
        *v = [v[0] * 32, v[1] * 32];
    }
    for v in t.kkp.make_mut() {
        *v = [v[0] * 32, v[1] * 32];
    }
    for v in t.kpp.make_mut() {
        *v = [v[0] / 8 * 32, v[1] / 8 * 32];
    }
    t
}

fn weight(t: &KpptTables, f: Feature, part: usize) -> i64 {
    match f {
        Feature::Kk { bk, wk } => t.kk.as_slice()[bk * 81 + wk][part] as i64,
        Feature::Kkp { bk, wk, p } => t.kkp.as_slice()[(bk * 81 + wk) * FE_END + p][part] as i64,
        Feature::Kpp { k, a, b } => t.kpp.as_slice()[(k * FE_END + a) * FE_END + b][part] as i64,
        Feature::Pattern(_) => unreachable!(),
    }
}

fn perturb(t: &mut KpptTables, f: Feature, part: usize, d: i32) {
    match f {
        Feature::Kk { bk, wk } => t.kk.make_mut()[bk * 81 + wk][part] += d,
        Feature::Kkp { bk, wk, p } => t.kkp.make_mut()[(bk * 81 + wk) * FE_END + p][part] += d,
        Feature::Kpp { k, a, b } => {
            let kpp = t.kpp.make_mut();
            kpp[(k * FE_END + a) * FE_END + b][part] += d as i16;
            kpp[(k * FE_END + b) * FE_END + a][part] += d as i16;
        }
        Feature::Pattern(_) => unreachable!(),
    }
}

fn positions(n: usize) -> Vec<Position> {
    let recs = game_records(n / 20 + 1, 40, 7);
    let mut rng = Rng(99);
    (0..n).map(|_| recs[rng.below(recs.len())].validate().unwrap().0).collect()
}

#[test]
fn active_features_reproduce_the_eval_from_either_side() {
    let t = Arc::new(tables(3));
    let ev = Evaluator { use_material: false, kppt: Some(t.clone()), patterns: None };
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for pos in positions(60) {
        for root in [Color::Black, Color::White] {
            out.clear();
            active_features(&pos, root, None, &mut buf, &mut out);
            let mut raw = 0i64;
            for a in &out {
                let f = decode_index(a.index as usize);
                raw += a.sign[0] as i64 * weight(&t, f, 0) + a.sign[1] as i64 * weight(&t, f, 1);
            }
            let e = ev.evaluate_full(&pos).eval as i64;
            let e_root = if pos.side_to_move() == root { e } else { -e };
            assert_eq!(raw, e_root * 32, "{}", pos.to_sfen());
        }
    }
}

#[test]
fn finite_differences_match_the_analytic_gradient() {
    let mut t = Arc::new(tables(5));
    let recs = to_records(&game_records(3, 60, 11));
    let cfg = LossConfig { lambda: 0.5, eval_limit: 30000, skip_draws: false };
    let mut rng = Rng(5);
    let mut checked = 0;
    for rec in recs.iter().step_by(7) {
        let ev = Arc::new(Evaluator::with_kppt(t.clone()));
        let mut s = Searcher::new(ev.clone(), Arc::new(TranspositionTable::new(1)));
        let mut out = Vec::new();
        let mut scratch = Scratch::default();
        let Some(sample) = gradient::record_gradient(&mut s, rec, &cfg, &mut scratch, &mut out) else {
            continue;
        };
        let (leaf, _) = gradient::qsearch_leaf(&mut s, &rec.pos).unwrap();
        drop(s);
        drop(ev);
        let root = rec.pos.side_to_move();
        let target = sample.target;
        let loss_with = |t: &mut Arc<KpptTables>, f: Feature, part: usize, d: i32| {
            perturb(Arc::get_mut(t).unwrap(), f, part, d);
            let ev = Evaluator::with_kppt(t.clone());
            let v = ev.evaluate_full(&leaf).eval;
            drop(ev);
            perturb(Arc::get_mut(t).unwrap(), f, part, -d);
            let v = if leaf.side_to_move() == root { v } else { -v };
            cross_entropy(win_prob(v as f64), target)
        };
        // Sum duplicate indices (both halves may share a KPP weight).
        gradient::sort_and_sum(&mut out, false);
        for _ in 0..6 {
            let (idx, g) = out[rng.below(out.len())];
            let f = decode_index(idx as usize);
            for (part, &gp) in g.iter().enumerate() {
                let d = 3200; // 100 in eval units: well above the rounding of /32
                let numeric =
                    (loss_with(&mut t, f, part, d) - loss_with(&mut t, f, part, -d)) / (2.0 * d as f64);
                let analytic = gp as f64 / LOSS_SCALE;
                let tol = 0.08 * analytic.abs() + 2e-7;
                assert!(
                    (numeric - analytic).abs() <= tol,
                    "{f:?} part {part}: numeric {numeric:e} analytic {analytic:e} at {}",
                    rec.pos.to_sfen()
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} checks");
}

#[test]
fn parallel_and_sequential_batch_gradients_are_identical() {
    let recs = to_records(&game_records(4, 50, 21));
    let ev = Arc::new(Evaluator::with_kppt(Arc::new(KpptTables::random(1, 40))));
    let cfg = LossConfig::default();
    let a = gradient::batch_gradient(&ev, &recs, &cfg, false);
    let b = gradient::batch_gradient(&ev, &recs, &cfg, true);
    assert_eq!(a.entries.len(), b.entries.len());
    assert!(a.entries.iter().zip(&b.entries).all(|(x, y)| x.0 == y.0 && x.1 == y.1));
    assert!(a.entries.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(a.stats.used + a.stats.skipped, recs.len() as u64);
}

/// The bucketed merge of `batch_gradient` equals the plain definition — every record's
/// entries in record order, stably sorted and summed (`sort_and_sum`) — bit for bit, on
/// pools of 1 and 3 threads and with more records than one chunk.
#[test]
fn batch_gradient_equals_the_record_order_sum_on_any_pool() {
    let recs = to_records(&game_records(6, 70, 31));
    assert!(recs.len() > 3 * gradient::CHUNK, "{} records", recs.len());
    let ev = Arc::new(Evaluator::with_kppt(Arc::new(KpptTables::random(3, 60))));
    let cfg = LossConfig { lambda: 0.4, eval_limit: 3000, skip_draws: false };
    let mut s = Searcher::new(ev.clone(), Arc::new(TranspositionTable::new(1)));
    let mut scratch = Scratch::default();
    let mut reference = Vec::new();
    let mut used = 0;
    for rec in &recs {
        used += gradient::record_gradient(&mut s, rec, &cfg, &mut scratch, &mut reference).is_some() as u64;
    }
    drop(s);
    let raw = reference.len();
    gradient::sort_and_sum(&mut reference, false);
    assert!(reference.len() < raw, "no duplicate features were summed");
    for threads in [1, 3] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let g = pool.install(|| gradient::batch_gradient(&ev, &recs, &cfg, true));
        assert_eq!(g.stats.used, used);
        assert_eq!(g.entries.len(), reference.len(), "{threads} threads");
        for (a, b) in g.entries.iter().zip(&reference) {
            assert_eq!(a.0, b.0);
            assert_eq!(a.1.map(f32::to_bits), b.1.map(f32::to_bits), "index {} with {threads} threads", a.0);
        }
    }
}
