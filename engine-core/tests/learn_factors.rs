//! Dimension reduction (`learn::factors`): the chain rule through the fold checked by
//! finite differences, incremental table refresh == full recomputation, mirror symmetry
//! of the export, the header field, and a factored `keima learn` run whose exported
//! tables evaluate exactly like its trainer.

mod learn_util;

use engine_core::eval::bona_piece::{FE_END, flip};
use engine_core::eval::kppt_file::load_kppt_dir;
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::learn::adagrad::{AdaGradConfig, Quantized};
use engine_core::learn::export::{export_kppt, quantize_tables_factored};
use engine_core::learn::factors::{self, Factorization, ParamLayout, mirror_piece, mirror_square};
use engine_core::learn::features::active_features;
use engine_core::learn::gradient::sort_and_sum;
use engine_core::learn::quantized;
use engine_core::learn::weights::{
    KKP_BASE, KPP_BASE, PATTERN_BASE, Record, WeightFile, WeightsError, kkp_index, kpp_index, pair_index,
    untri,
};
use engine_core::learn::{LearnConfig, Trainer};
use engine_core::rules::Color;
use learn_util::{Rng, game_records, tmp_dir, to_records, write_shard};
use std::sync::Arc;

const ALL: Factorization = Factorization::ALL;

/// The evaluation's board and turn sums over `active` raw features, from effective values.
fn fold_sum(layout: &ParamLayout, records: &[Record], active: &[(u32, [f32; 2])]) -> [f64; 2] {
    let mut s = [0f64; 2];
    for &(i, sign) in active {
        let v = factors::effective(layout, records, i as usize);
        s[0] += sign[0] as f64 * v[0] as f64;
        s[1] += sign[1] as f64 * v[1] as f64;
    }
    s
}

/// d(sum)/d(parameter) by central differences equals `param_gradient` of the raw signs,
/// for every parameter the position touches (the sum is linear, so they agree to rounding).
#[test]
fn parameter_gradient_matches_finite_differences_through_the_fold() {
    let tmp = tmp_dir("factors-fd");
    for factors in [
        Factorization { mirror: true, kp: false, pp: false },
        Factorization { mirror: false, kp: true, pp: false },
        Factorization { mirror: false, kp: false, pp: true },
        ALL,
    ] {
        let mut w =
            WeightFile::create_factored(&tmp.path().join(format!("w{}.kw", factors.bits())), 0, 0, factors)
                .unwrap();
        let layout = w.header.param_layout();
        assert_eq!(w.records().len(), layout.params());
        let recs = to_records(&game_records(2, 70, 11));
        let mut rng = Rng(5);
        let mut checked = 0;
        for rec in recs.iter().step_by(17) {
            let mut active = Vec::new();
            active_features(&rec.pos, Color::Black, None, &mut Vec::new(), &mut active);
            let mut raw: Vec<(u32, [f32; 2])> = active.iter().map(|a| (a.index, a.sign)).collect();
            sort_and_sum(&mut raw, false);
            let grads = factors::param_gradient(&layout, &raw, false);
            let records = w.records_mut();
            // Random values on every parameter involved, so the fold is not trivially zero.
            for &(j, _) in &grads {
                records[j as usize] =
                    [(rng.below(200) as f32) - 100.0, (rng.below(200) as f32) - 100.0, 0.0, 0.0];
            }
            for &(j, g) in grads.iter().step_by(7) {
                for part in 0..2 {
                    let h = 4.0f32;
                    let old = records[j as usize][part];
                    records[j as usize][part] = old + h;
                    let up = fold_sum(&layout, records, &raw)[part];
                    records[j as usize][part] = old - h;
                    let down = fold_sum(&layout, records, &raw)[part];
                    records[j as usize][part] = old;
                    let numeric = (up - down) / (2.0 * h as f64);
                    assert!(
                        (numeric - g[part] as f64).abs() < 1e-3,
                        "{factors:?} parameter {j} part {part}: numeric {numeric}, analytic {}",
                        g[part]
                    );
                    checked += 1;
                }
            }
            // A parameter outside the gradient does not move the sum.
            let unused = grads.last().unwrap().0 as usize + 1;
            if unused < layout.params() {
                let before = fold_sum(&layout, records, &raw);
                records[unused][0] += 50.0;
                assert_eq!(fold_sum(&layout, records, &raw), before, "{factors:?}: parameter {unused}");
                records[unused][0] -= 50.0;
            }
        }
        assert!(checked > 200, "{checked}");
    }
}

/// Tables kept up to date by `apply_factored` after each update equal the tables
/// recomputed from scratch from the parameters.
#[test]
fn incremental_refresh_equals_full_recomputation() {
    let tmp = tmp_dir("factors-refresh");
    let mut w = WeightFile::create_factored(&tmp.path().join("w.kw"), 0, 0, ALL).unwrap();
    let layout = w.header.param_layout();
    let cfg = AdaGradConfig { eta: 30.0, eta_turn: 8.0, epsilon: 1e-8, eta_decay: 1.0, eta_factors: 1.0 };
    let mut tables = KpptTables::zeros();
    let recs = to_records(&game_records(3, 80, 21));
    let mut rng = Rng(9);
    let mut changed_total = 0;
    for (u, batch) in recs.chunks(40).enumerate() {
        let mut raw = Vec::new();
        for rec in batch {
            let mut active = Vec::new();
            active_features(&rec.pos, rec.pos.side_to_move(), None, &mut Vec::new(), &mut active);
            let g = (rng.below(100) as f32 - 50.0) / 50.0;
            raw.extend(active.iter().map(|a| (a.index, [g * a.sign[0], g * a.sign[1]])));
        }
        sort_and_sum(&mut raw, false);
        // The changed list the update returns is exactly the dependents whose value moved.
        let update = factors::FactoredUpdate::plan(&layout, &raw);
        let before: Vec<[i32; 2]> =
            update.dependents.iter().map(|&i| quantized::get(&tables, None, i as usize)).collect();
        let mut q = Quantized { kppt: &mut tables, patterns: None };
        let (touched, changed) = update.step(&cfg, u as u64, &layout, w.records_mut(), Some(&mut q));
        let moved: Vec<u32> = update
            .dependents
            .iter()
            .zip(&before)
            .filter(|&(&i, b)| quantized::get(&tables, None, i as usize) != *b)
            .map(|(&i, _)| i)
            .collect();
        assert!(touched > 0 && !changed.is_empty());
        assert_eq!(changed, moved, "update {u}");
        changed_total += changed.len();
    }
    assert!(changed_total > 1000, "{changed_total}");
    let (full, _) = quantize_tables_factored(&layout, w.records());
    assert!(tables.kkp.as_slice().iter().filter(|v| **v != [0, 0]).count() > 1000);
    assert!(tables.kk.as_slice() == full.kk.as_slice(), "KK differs");
    assert!(tables.kkp.as_slice() == full.kkp.as_slice(), "KKP differs");
    assert!(tables.kpp.as_slice() == full.kpp.as_slice(), "KPP differs");
    // The comparison can fail: a KP parameter changed behind the tables' back is seen.
    let j = layout.kp_index(40, 100);
    w.records_mut()[j][0] += 10.0;
    let (changed, _) = quantize_tables_factored(&layout, w.records());
    assert!(tables.kkp.as_slice() != changed.kkp.as_slice());
    w.records_mut()[j][0] -= 10.0;
    // So is a PP parameter, in every king's KPP block where its shape fits.
    let (k, a, b) = (40usize, 90 + 2 * 81 + 31, 90 + 5 * 81 + 49);
    let j = layout.pp_of_kpp(k, a, b);
    w.records_mut()[j][0] += 64.0;
    let (changed, _) = quantize_tables_factored(&layout, w.records());
    let at = |t: &KpptTables, k: usize, a: usize, b: usize| t.kpp.as_slice()[(k * 1548 + a) * 1548 + b];
    for (k, a, b) in [(k, a, b), (k + 1, a + 1, b + 1), (k - 9, a - 9, b - 9)] {
        assert_ne!(at(&full, k, a, b), at(&changed, k, a, b), "KPP[{k}][{a}][{b}]");
        assert_eq!(at(&changed, k, a, b), at(&changed, k, b, a));
    }
    assert_eq!(at(&full, k, a, b + 1), at(&changed, k, a, b + 1), "another shape");
    w.records_mut()[j][0] -= 64.0;
    // With the mirror factor every KPP entry equals its mirror image's.
    for (k, a, b) in [(40usize, 100usize, 200usize), (0, 95, 1500), (13, 1, 700), (76, 300, 301)] {
        let at = |k: usize, a: usize, b: usize| full.kpp.as_slice()[(k * 1548 + a) * 1548 + b];
        assert_eq!(at(k, a, b), at(mirror_square(k), mirror_piece(a), mirror_piece(b)), "{k} {a} {b}");
    }
}

/// The dependents of a parameter set, listed the plain way: every raw feature each
/// parameter feeds, then sorted and deduplicated.
/// `eta_factors` scales the factor parameters' steps (KP and PP, both parts) and nothing
/// else: the raw features step as before, and every accumulator is the same.
#[test]
fn eta_factors_scales_only_the_factor_steps() {
    let tmp = tmp_dir("factors-eta");
    let recs = to_records(&game_records(2, 60, 33));
    let mut raw = Vec::new();
    for (n, rec) in recs.iter().enumerate() {
        let mut active = Vec::new();
        active_features(&rec.pos, rec.pos.side_to_move(), None, &mut Vec::new(), &mut active);
        let g = if n % 3 == 0 { -0.7 } else { 0.4 };
        raw.extend(active.iter().map(|a| (a.index, [g * a.sign[0], g * a.sign[1]])));
    }
    sort_and_sum(&mut raw, false);
    let base = AdaGradConfig { eta: 3.0, eta_turn: 1.0, epsilon: 1e-8, eta_decay: 1.0, eta_factors: 1.0 };
    let mut files = Vec::new();
    for (n, scale) in [1.0, 3.0].into_iter().enumerate() {
        let mut w = WeightFile::create_factored(&tmp.path().join(format!("w{n}.kw")), 0, 0, ALL).unwrap();
        let layout = w.header.param_layout();
        let cfg = AdaGradConfig { eta_factors: scale, ..base };
        // Two updates, so the second step is scaled on top of a moved weight.
        for u in 0..2 {
            factors::apply_factored(&cfg, u, &layout, w.records_mut(), &raw, None);
        }
        files.push(w);
    }
    let layout = files[0].header.param_layout();
    let raw_end = layout.raw_features();
    let (one, three) = (files[0].records(), files[1].records());
    assert_eq!(one.len(), three.len());
    let (mut raw_moved, mut factors_moved) = (0, 0);
    for (i, (a, b)) in one.iter().zip(three).enumerate() {
        assert_eq!([a[2], a[3]], [b[2], b[3]], "accumulators of parameter {i}");
        if i < raw_end {
            assert_eq!(a, b, "raw feature {i}");
            raw_moved += (a[0] != 0.0) as usize;
        } else {
            for part in 0..2 {
                let want = 3.0 * a[part];
                assert!(
                    (b[part] - want).abs() <= 1e-5 * want.abs().max(1.0),
                    "factor {i} part {part}: {} vs 3 x {}",
                    b[part],
                    a[part]
                );
            }
            factors_moved += (a[0] != 0.0) as usize;
        }
    }
    assert!(
        raw_moved > 1000 && factors_moved > 1000,
        "{raw_moved} raw, {factors_moved} factor parameters moved"
    );
}

fn dependents_by_listing(layout: &ParamLayout, params: &[(u32, [f32; 2])]) -> Vec<u32> {
    let raw_end = layout.raw_features();
    let pp_base = raw_end + if layout.factors.kp { factors::KP_PARAMS } else { 0 };
    let mirror = layout.factors.mirror;
    let mut out = Vec::new();
    for &(j, _) in params {
        let j = j as usize;
        if j < raw_end {
            out.push(j as u32);
            if mirror && j < PATTERN_BASE {
                out.push(factors::mirror_raw(j) as u32);
            }
        } else if j < pp_base {
            let (k, p) = ((j - raw_end) / FE_END, (j - raw_end) % FE_END);
            for (k, p) in [(k, p), (mirror_square(k), mirror_piece(p))].into_iter().take(1 + mirror as usize)
            {
                let white_view = flip(p as u16) as usize;
                for other in 0..81 {
                    out.push(kkp_index(k, other, p) as u32);
                    out.push(kkp_index(other, 80 - k, white_view) as u32);
                }
            }
        } else {
            let (ra, rb) = untri(j - pp_base);
            let variants = [(ra, rb), (factors::mirror_relative(ra), factors::mirror_relative(rb))];
            for (ra, rb) in variants.into_iter().take(1 + mirror as usize) {
                for k in 0..81 {
                    if let (Some(a), Some(b)) =
                        (factors::absolute_piece(k, ra), factors::absolute_piece(k, rb))
                    {
                        out.push(kpp_index(k, a, b) as u32);
                    }
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// `dependents` (bitmaps per king, shapes by king range) lists exactly what the plain
/// listing does, for every factorization, on parameters from every part of the file.
#[test]
fn dependents_equal_the_plain_listing() {
    let mut rng = Rng(17);
    for factors in [
        Factorization { mirror: true, kp: false, pp: false },
        Factorization { mirror: false, kp: true, pp: false },
        Factorization { mirror: false, kp: false, pp: true },
        Factorization { mirror: true, kp: false, pp: true },
        ALL,
    ] {
        let layout = ParamLayout { factors, patterns: 50 };
        let raw_end = layout.raw_features();
        let mut params: Vec<(u32, [f32; 2])> = Vec::new();
        let mut pick = |lo: usize, hi: usize, n: usize, rng: &mut Rng| {
            for _ in 0..n {
                params.push(((lo + rng.below(hi - lo)) as u32, [1.0, 0.0]));
            }
        };
        pick(0, KKP_BASE, 20, &mut rng);
        pick(KKP_BASE, KPP_BASE, 200, &mut rng);
        pick(KPP_BASE, PATTERN_BASE, 3000, &mut rng);
        pick(PATTERN_BASE, raw_end, 10, &mut rng);
        if factors.kp {
            pick(raw_end, raw_end + factors::KP_PARAMS, 100, &mut rng);
        }
        if factors.pp {
            let pp_base = raw_end + if factors.kp { factors::KP_PARAMS } else { 0 };
            pick(pp_base, pp_base + factors::PP_PARAMS, 3000, &mut rng);
            // Shapes with hand pieces, and a symmetric one (its own mirror image).
            let hand = pp_base + pair_index(5, 1);
            let mixed = pp_base + pair_index(factors::relative_piece(40, 90 + 3 * 81 + 31), 7);
            let (a, b) =
                (factors::relative_piece(40, 90 + 81 + 31), factors::relative_piece(40, 90 + 81 + 49));
            let symmetric = pp_base + pair_index(a, b);
            assert_eq!((factors::mirror_relative(a), factors::mirror_relative(b)), (b, a));
            params.extend([hand, mixed, symmetric].map(|j| (j as u32, [1.0, 0.0])));
        }
        params.sort_unstable_by_key(|g| g.0);
        params.dedup_by_key(|g| g.0);
        let indices: Vec<u32> = params.iter().map(|g| g.0).collect();
        let fast = factors::dependents(&layout, &indices);
        let plain = dependents_by_listing(&layout, &params);
        assert!(plain.len() > params.len(), "{factors:?}");
        assert!(fast == plain, "{factors:?}: {} dependents against {}", fast.len(), plain.len());
    }
}

#[test]
fn the_header_keeps_the_factors_and_refuses_unknown_ones() {
    let tmp = tmp_dir("factors-header");
    let path = tmp.path().join("w.kw");
    let w = WeightFile::create_factored(&path, 2, 9, ALL).unwrap();
    let params = w.header.features();
    assert_eq!(params, w.header.param_layout().raw_features() + factors::KP_PARAMS + factors::PP_PARAMS);
    drop(w);
    let w = WeightFile::open(&path, true).unwrap();
    assert_eq!(w.header.factors, ALL);
    assert_eq!(w.records().len(), params);
    drop(w);
    // Bits this build does not know: a layout error naming the field.
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    f.write_all_at(&8u32.to_le_bytes(), 96).unwrap();
    // Keep the header checksum valid so the factor field itself is what is refused.
    let mut head = vec![0u8; 4096];
    f.read_exact_at(&mut head, 0).unwrap();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in &head[..4088] {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    f.write_all_at(&h.to_le_bytes(), 4088).unwrap();
    match WeightFile::open(&path, false) {
        Err(WeightsError::Layout { what, found, .. }) => {
            assert_eq!(what, "factorization bits");
            assert_eq!(found, 8);
        }
        other => panic!("{other:?}"),
    }
}

/// A factored `keima learn` run: the loss falls, and its export evaluates exactly like the
/// trainer's own tables; the same run on one thread gives the same bytes.
#[test]
fn factored_training_exports_what_it_trained() {
    let tmp = tmp_dir("factors-learn");
    let dir = tmp.path();
    let train = dir.join("train.shard");
    write_shard(&train, &game_records(20, 60, 1));
    let mut cfg = LearnConfig {
        shards: vec![train.to_string_lossy().into_owned()],
        out_dir: dir.join("run"),
        batch_size: 100,
        epochs: 2,
        shuffle_buffer: 400,
        eval_every: 0,
        threads: 2,
        seed: 3,
        ..LearnConfig::default()
    };
    cfg.learn.validation.shard = Some(train.clone());
    cfg.learn.validation.max_records = 300;
    cfg.learn.adagrad.eta = 4.0;
    cfg.learn.adagrad.eta_turn = 1.0;
    cfg.learn.loss.lambda = 0.5;
    cfg.learn.init.factors = ALL;
    let mut t = Trainer::new(cfg.clone()).unwrap();
    let before = t.validate();
    let after = t.run(&mut |_| {}).unwrap();
    assert!(after.test_loss < before.test_loss, "{before:?} -> {after:?}");
    let w = WeightFile::open(&cfg.out_dir.join("weights.kw"), false).unwrap();
    assert_eq!(w.header.factors, ALL);
    let out = dir.join("export");
    export_kppt(&w, &out, None).unwrap();
    let exported = Evaluator::with_kppt(Arc::new(load_kppt_dir(&out).unwrap()));
    let mut nonzero = 0;
    for rec in to_records(&game_records(3, 60, 9)) {
        let a = t.evaluator().evaluate_full(&rec.pos);
        assert_eq!(a, exported.evaluate_full(&rec.pos), "{}", rec.pos.to_sfen());
        nonzero += (a.kppt != 0) as u32;
    }
    assert!(nonzero > 0, "training changed nothing");
    let mut one = cfg.clone();
    one.out_dir = dir.join("one");
    one.deterministic = true;
    one.threads = 1;
    Trainer::new(one).unwrap().run(&mut |_| {}).unwrap();
    // The data checksums (over every record byte) of the two files agree.
    let sealed = |p: std::path::PathBuf| {
        let mut w = WeightFile::open(&p, false).unwrap();
        w.seal().unwrap();
        w.header.data_checksum
    };
    let (a, b) = (sealed(cfg.out_dir.join("weights.kw")), sealed(dir.join("one").join("weights.kw")));
    assert_ne!(a, 0);
    assert_eq!(a, b, "thread count changed the factored result");
}

/// Weights started from tables with the mirror factor: each mirror pair becomes one
/// parameter holding the mean, and both features then read that mean.
#[test]
fn mirror_sharing_of_initial_tables_takes_the_mean() {
    use engine_core::learn::weights::{kkp_index, kpp_index};
    let tmp = tmp_dir("factors-share");
    let mut w = WeightFile::create_factored(&tmp.path().join("w.kw"), 0, 0, ALL).unwrap();
    let layout = w.header.param_layout();
    let pairs = [kpp_index(3, 200, 150), kkp_index(10, 70, 500), kpp_index(40, 95, 1000)];
    let records = w.records_mut();
    for (n, &i) in pairs.iter().enumerate() {
        let m = factors::mirror_raw(i);
        assert_ne!(i, m);
        records[i] = [10.0 * (n + 1) as f32, 4.0, 0.0, 0.0];
        records[m] = [-2.0, 8.0, 0.0, 0.0];
    }
    factors::share_mirror_pairs(records);
    for (n, &i) in pairs.iter().enumerate() {
        let m = factors::mirror_raw(i);
        let mean = [(10.0 * (n + 1) as f32 - 2.0) / 2.0, 6.0];
        assert_eq!(factors::effective(&layout, records, i), mean);
        assert_eq!(factors::effective(&layout, records, m), mean);
        let (canonical, other) = (i.min(m), i.max(m));
        assert_eq!(records[other][..2], [0.0, 0.0]);
        assert_eq!(records[canonical][..2], mean);
    }
}
