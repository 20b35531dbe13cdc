//! Learner end to end: sparse AdaGrad touches only what the gradient touched, the loss
//! falls on a small shard, checkpoint + resume is bit-exact, export round-trips, and bad
//! weight files are rejected clearly.

mod learn_util;

use engine_core::eval::bona_piece::FE_END;
use engine_core::eval::kppt_file::load_kppt_dir;
use engine_core::eval::{Evaluator, KpptTables};
use engine_core::learn::adagrad::{self, AdaGradConfig, Quantized};
use engine_core::learn::checkpoint::{self, CheckpointError};
use engine_core::learn::config::{LearnSettings, LossConfig, ValidationConfig};
use engine_core::learn::export::export_kppt;
use engine_core::learn::trainer::LearnCheckpoint;
use engine_core::learn::weights::{self, WeightFile, WeightsError, kpp_index};
use engine_core::learn::{LearnConfig, Trainer};
use learn_util::{game_records, tmp_dir, to_records, write_shard};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

fn config(dir: &Path, train: &Path, val: &Path) -> LearnConfig {
    LearnConfig {
        shards: vec![train.to_string_lossy().into_owned()],
        out_dir: dir.join("run"),
        batch_size: 100,
        learn: LearnSettings {
            validation: ValidationConfig { shard: Some(val.to_path_buf()), max_records: 200, depth: 1 },
            adagrad: AdaGradConfig { eta: 16.0, eta_turn: 4.0, ..AdaGradConfig::default() },
            loss: LossConfig { lambda: 0.5, eval_limit: 3000, ..LossConfig::default() },
            ..LearnSettings::default()
        },
        epochs: 1,
        shuffle_buffer: 500,
        eval_every: 4,
        checkpoint_every: 0,
        keep_checkpoints: 2,
        seed: 3,
        threads: 2,
        ..LearnConfig::default()
    }
}

fn data(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let train = dir.join("train.shard");
    let val = dir.join("val.shard");
    write_shard(&train, &game_records(20, 60, 1));
    write_shard(&val, &game_records(4, 60, 2));
    (train, val)
}

#[test]
fn adagrad_updates_only_touched_weights_at_a_cost_independent_of_table_size() {
    let tmp = tmp_dir("adagrad");
    let dir = tmp.path();
    let mut w = WeightFile::create(&dir.join("w.kw"), 0, 0).unwrap();
    let mut t = KpptTables::zeros();
    let cfg = AdaGradConfig { eta: 10.0, eta_turn: 2.0, epsilon: 1e-8, eta_decay: 1.0, eta_factors: 1.0 };
    let k = 40;
    let (a, b) = (500usize, 90usize);
    let grads = vec![
        (weights::kk_index(4, 76) as u32, [0.5f32, 0.0]),
        (weights::kkp_index(4, 76, 100) as u32, [-0.25, 0.5]),
        (kpp_index(k, a, b) as u32, [1.0, -1.0]),
    ];
    {
        let mut q = Quantized { kppt: &mut t, patterns: None };
        assert_eq!(adagrad::apply(&cfg, 0, w.records_mut(), &grads, Some(&mut q)), 3);
    }
    let r = w.records();
    // First AdaGrad step: w = -eta * g / |g|.
    assert_eq!(r[weights::kk_index(4, 76)], [-10.0, 0.0, 0.25, 0.0]);
    assert_eq!(r[weights::kkp_index(4, 76, 100)], [10.0, -2.0, 0.0625, 0.25]);
    assert_eq!(r[kpp_index(k, a, b)], [-10.0, 2.0, 1.0, 1.0]);
    // Write-through: both KPP orders, i16 rounding.
    let kpp = t.kpp.as_slice();
    assert_eq!(kpp[(k * FE_END + a) * FE_END + b], [-10, 2]);
    assert_eq!(kpp[(k * FE_END + b) * FE_END + a], [-10, 2]);
    assert_eq!(t.kk.as_slice()[4 * 81 + 76], [-10, 0]);
    assert!(t.kpp_invariant_violation().is_none());
    // Neighbours untouched.
    for i in
        [kpp_index(k, a, b) - 1, kpp_index(k, a, b) + 1, weights::kk_index(4, 75), weights::kk_index(4, 77)]
    {
        assert_eq!(r[i], [0.0; 4]);
    }
    // Only the given weights change (speed is `keima bench learn`'s business, not a test's).
    let n_total = r.len();
    let mut small: Vec<(u32, [f32; 2])> = (0..10_000)
        .map(|i| ((weights::KPP_BASE + i * 997 % (n_total - weights::KPP_BASE - 1)) as u32, [0.1, 0.1]))
        .collect();
    small.sort_by_key(|e| e.0);
    small.dedup_by_key(|e| e.0);
    let before: Vec<[f32; 4]> = small.iter().map(|&(i, _)| w.records()[i as usize]).collect();
    let mut q = Quantized { kppt: &mut t, patterns: None };
    let touched = adagrad::apply(&cfg, 1, w.records_mut(), &small, Some(&mut q));
    assert_eq!(touched, small.len());
    for (&(i, _), b) in small.iter().zip(&before) {
        assert_ne!(w.records()[i as usize], *b, "weight {i} was not updated");
    }
}

#[test]
fn training_lowers_the_loss_and_export_round_trips() {
    let tmp = tmp_dir("train");
    let dir = tmp.path();
    let (train, val) = data(dir);
    let mut cfg = config(dir, &train, &val);
    // Fit the training shard itself: 1,200 positions cannot generalise to other games.
    cfg.learn.validation.shard = Some(train.clone());
    cfg.learn.validation.max_records = 400;
    cfg.learn.adagrad.eta = 4.0;
    cfg.learn.adagrad.eta_turn = 1.0;
    cfg.epochs = 3;
    let mut t = Trainer::new(cfg.clone()).unwrap();
    let before = t.validate();
    let mut train_losses = Vec::new();
    let after = t.run(&mut |p| train_losses.push(p.batch_loss)).unwrap();
    eprintln!("test loss {:.4} -> {:.4}; train {:?}", before.test_loss, after.test_loss, train_losses);
    assert!(after.test_loss < before.test_loss, "{before:?} -> {after:?}");
    let n = train_losses.len();
    let first: f64 = train_losses[..n / 3].iter().sum::<f64>() / (n / 3) as f64;
    let last: f64 = train_losses[n - n / 3..].iter().sum::<f64>() / (n / 3) as f64;
    assert!(last < first, "train loss {first} -> {last}");
    // Metrics lines.
    let metrics = std::fs::read_to_string(cfg.out_dir.join("metrics.jsonl")).unwrap();
    assert!(metrics.lines().count() >= 2);
    for l in metrics.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert!(v["test_loss"].as_f64().unwrap().is_finite());
    }
    // Export → load → same eval as the training evaluator.
    let out = dir.join("export");
    let w = WeightFile::open(&cfg.out_dir.join("weights.kw"), false).unwrap();
    let clamped = export_kppt(&w, &out, None).unwrap();
    assert_eq!(clamped.total(), 0);
    let loaded = load_kppt_dir(&out).unwrap();
    assert!(loaded.kpp_invariant_violation().is_none());
    let exported = Evaluator::with_kppt(Arc::new(loaded));
    let mut nonzero = 0;
    for rec in to_records(&game_records(3, 60, 9)) {
        let a = t.evaluator().evaluate_full(&rec.pos);
        let b = exported.evaluate_full(&rec.pos);
        assert_eq!(a, b, "{}", rec.pos.to_sfen());
        nonzero += (a.kppt != 0) as u32;
    }
    assert!(nonzero > 0, "training changed nothing");
    // A second run in the same process works.
    let mut cfg2 = cfg.clone();
    cfg2.out_dir = dir.join("run2");
    cfg2.epochs = 1;
    Trainer::new(cfg2).unwrap().run(&mut |_| {}).unwrap();
}

/// Whether two weight files hold the same records, byte for byte (the header is skipped:
/// its data-checksum field is set only in sealed files). Reads only where either file has
/// data: elsewhere both are holes, which read as zeros.
fn same_records(a: &Path, b: &Path) -> bool {
    let (fa, fb) = (std::fs::File::open(a).unwrap(), std::fs::File::open(b).unwrap());
    let len = fa.metadata().unwrap().len();
    if fb.metadata().unwrap().len() != len {
        return false;
    }
    let mut ranges = weights::file_extents(&fa, len);
    ranges.extend(weights::file_extents(&fb, len));
    let (mut x, mut y) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    for (start, end) in ranges {
        let mut pos = start.max(weights::HEADER_LEN as u64);
        while pos < end {
            let n = ((end - pos) as usize).min(x.len());
            fa.read_exact_at(&mut x[..n], pos).unwrap();
            fb.read_exact_at(&mut y[..n], pos).unwrap();
            if x[..n] != y[..n] {
                return false;
            }
            pos += n as u64;
        }
    }
    true
}

/// XORs one byte of a file in place.
fn flip_byte(path: &Path, at: u64, mask: u8) {
    let f = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut b = [0u8];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ mask], at).unwrap();
}

#[test]
fn resume_from_a_checkpoint_is_bit_exact() {
    let tmp = tmp_dir("resume");
    let dir = tmp.path();
    let (train, val) = data(dir);
    let mut cfg = config(dir, &train, &val);
    cfg.deterministic = true;
    cfg.max_updates = 8;
    cfg.checkpoint_every = 4;
    cfg.keep_checkpoints = 0;
    cfg.shuffle_buffer = 300;
    cfg.epochs = 2;
    cfg.batch_size = 150; // epochs of 1200 records: 8 updates, so the cursor crosses... within epoch 0
    let mut straight = Trainer::new(cfg.clone()).unwrap();
    straight.run(&mut |_| {}).unwrap();
    let ckpts = checkpoint::list(&cfg.out_dir);
    assert_eq!(ckpts.len(), 2, "{ckpts:?}");
    let (mut resumed, warnings) = Trainer::resume(&ckpts[0], Some(dir.join("resumed")), None).unwrap();
    assert!(warnings.is_empty());
    assert_eq!(resumed.state.updates, 4);
    resumed.run(&mut |_| {}).unwrap();
    assert_eq!(resumed.state, straight.state);
    let a = cfg.out_dir.join("weights.kw");
    assert!(same_records(&a, &dir.join("resumed").join("weights.kw")), "resumed weights differ");
    // The comparison can fail: a one-bit change is seen.
    flip_byte(&dir.join("resumed").join("weights.kw"), weights::HEADER_LEN as u64 + 4096 * 1000 + 5, 1);
    assert!(!same_records(&a, &dir.join("resumed").join("weights.kw")));
    // The multi-threaded run gives the same bytes too.
    let mut cfg_mt = cfg.clone();
    cfg_mt.deterministic = false;
    cfg_mt.out_dir = dir.join("mt");
    Trainer::new(cfg_mt).unwrap().run(&mut |_| {}).unwrap();
    assert!(same_records(&a, &dir.join("mt").join("weights.kw")), "thread count changed the result");
    // A corrupted newest checkpoint is rejected; the run directory falls back to the previous one.
    let newest = checkpoint::list(&cfg.out_dir).pop().unwrap();
    let wk = newest.join("weights.kw");
    let len = std::fs::metadata(&wk).unwrap().len();
    flip_byte(&wk, len - 1000, 0x55);
    let err = checkpoint::load::<LearnCheckpoint>(&newest).err().unwrap();
    assert!(
        matches!(
            err,
            CheckpointError::Weights {
                source: WeightsError::BadDataChecksum { .. } | WeightsError::BadChecksum { .. },
                ..
            }
        ),
        "{err}"
    );
    let found = checkpoint::find::<LearnCheckpoint>(&cfg.out_dir).unwrap();
    assert_eq!(found.dir, ckpts[0]);
    assert_eq!(found.skipped.len(), 1);
    // A truncated one too.
    let f = std::fs::OpenOptions::new().write(true).open(&wk).unwrap();
    f.set_len(len - 16).unwrap();
    let err = checkpoint::load::<LearnCheckpoint>(&newest).err().unwrap();
    assert!(matches!(err, CheckpointError::Weights { source: WeightsError::Truncated { .. }, .. }), "{err}");
}

/// Rewriting a checkpoint of the same number never deletes the complete one first: a
/// crash between moving it aside and putting the new one in place (simulated by leaving
/// the directories as that moment would) is repaired at resume, which finds the complete
/// checkpoint, and leftover `.tmp`/`.old` directories are removed.
#[test]
fn a_crash_while_rewriting_a_checkpoint_keeps_it() {
    let tmp = tmp_dir("rewrite");
    let dir = tmp.path();
    let (train, val) = data(dir);
    let mut cfg = config(dir, &train, &val);
    cfg.deterministic = true;
    cfg.max_updates = 4;
    cfg.checkpoint_every = 4;
    cfg.keep_checkpoints = 0;
    cfg.batch_size = 150;
    let mut trainer = Trainer::new(cfg.clone()).unwrap();
    trainer.run(&mut |_| {}).unwrap();
    let ckpt = checkpoint::list(&cfg.out_dir).pop().unwrap();
    let root = ckpt.parent().unwrap().to_path_buf();
    let name = ckpt.file_name().unwrap().to_str().unwrap().to_string();
    // The moment between the two renames: the complete checkpoint aside, the new one as .tmp.
    let aside = root.join(format!("{name}.old"));
    std::fs::rename(&ckpt, &aside).unwrap();
    std::fs::create_dir(root.join(format!("{name}.tmp"))).unwrap();
    assert!(checkpoint::list(&cfg.out_dir).is_empty(), "neither .old nor .tmp counts as a checkpoint");
    let found = checkpoint::find::<LearnCheckpoint>(&cfg.out_dir).unwrap();
    assert_eq!((found.dir.clone(), found.skipped.len()), (ckpt.clone(), 0));
    checkpoint::load::<LearnCheckpoint>(&found.dir).unwrap();
    let left: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![name.clone()], "only the complete checkpoint is left");
    // The moment after the second rename: both complete; the .old one is dropped.
    copy_dir(&ckpt, &aside);
    let found = checkpoint::find::<LearnCheckpoint>(&cfg.out_dir).unwrap();
    assert_eq!(found.dir, ckpt);
    assert!(!aside.exists());
    // A real rewrite of the same number replaces it and leaves nothing else.
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(&ckpt).unwrap().ino();
    let (mut resumed, _) = Trainer::resume(&ckpt, None, None).unwrap();
    assert_eq!(resumed.checkpoint().unwrap(), ckpt);
    assert_ne!(std::fs::metadata(&ckpt).unwrap().ino(), inode, "checkpoint {name} was rewritten");
    let left: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec![name], "{left:?}");
    checkpoint::load::<LearnCheckpoint>(&ckpt).unwrap();
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

#[test]
fn weight_file_header_errors() {
    let tmp = tmp_dir("header");
    let dir = tmp.path();
    // Each case starts from a fresh (sparse, so cheap) file and patches it in place.
    let fresh = |name: &str| {
        let p = dir.join(name);
        WeightFile::create(&p, 3, 0).unwrap();
        p
    };
    let p = fresh("good.kw");
    assert_eq!(WeightFile::open(&p, true).unwrap().header.patterns, 3);
    let len = std::fs::metadata(&p).unwrap().len();
    let set_len =
        |p: &Path, n: u64| std::fs::OpenOptions::new().write(true).open(p).unwrap().set_len(n).unwrap();
    // Truncated.
    let p = fresh("short.kw");
    set_len(&p, len - 16);
    assert!(matches!(WeightFile::open(&p, true), Err(WeightsError::Truncated { .. })));
    set_len(&p, 100);
    assert!(matches!(WeightFile::open(&p, true), Err(WeightsError::Truncated { .. })));
    // Bad checksum.
    let p = fresh("checksum.kw");
    flip_byte(&p, 64, 1);
    let e = WeightFile::open(&p, true).err().unwrap();
    assert!(matches!(e, WeightsError::BadChecksum { .. }), "{e}");
    // Bad magic.
    let p = fresh("magic.kw");
    flip_byte(&p, 0, b'K' ^ b'X');
    assert!(matches!(WeightFile::open(&p, true), Err(WeightsError::BadMagic { .. })));
    // Another layout (with a valid checksum).
    let p = fresh("layout.kw");
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&p).unwrap();
    let mut b = vec![0u8; weights::HEADER_LEN];
    f.read_exact_at(&mut b, 0).unwrap();
    b[12] = 2;
    let c = {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for &x in &b[..weights::HEADER_LEN - 8] {
            h ^= x as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h
    };
    b[weights::HEADER_LEN - 8..weights::HEADER_LEN].copy_from_slice(&c.to_le_bytes());
    f.write_all_at(&b, 0).unwrap();
    let e = WeightFile::open(&p, true).err().unwrap();
    assert!(matches!(e, WeightsError::Layout { what: "layout id", .. }), "{e}");
    eprintln!("{e}");
}

/// `apply_parallel` (disjoint weight ranges on a pool) leaves the same bytes as `apply`:
/// weights, accumulators and quantized tables, over two updates with gradients in every
/// range (KK, KKP rows, KPP kings at both ends, patterns), including range boundaries.
#[test]
fn parallel_adagrad_is_bit_identical_to_sequential() {
    use engine_core::learn::weights::{KKP_BASE, KPP_BASE, PATTERN_BASE};
    let tmp = tmp_dir("adagrad_par");
    let dir = tmp.path();
    let cfg = AdaGradConfig { eta: 7.0, eta_turn: 1.5, epsilon: 1e-8, eta_decay: 0.99, eta_factors: 1.0 };
    let mut rng = learn_util::Rng(17);
    let patterns = 50usize;
    let n = PATTERN_BASE + patterns;
    let mut picks: Vec<usize> =
        vec![0, KKP_BASE - 1, KKP_BASE, KPP_BASE - 1, KPP_BASE, PATTERN_BASE - 1, PATTERN_BASE, n - 1];
    picks.extend((0..3000).map(|_| rng.below(KPP_BASE)));
    picks.extend((0..20_000).map(|_| KPP_BASE + rng.below(PATTERN_BASE - KPP_BASE)));
    picks.extend((0..30).map(|_| PATTERN_BASE + rng.below(patterns)));
    picks.sort_unstable();
    picks.dedup();
    let grad = |rng: &mut learn_util::Rng| {
        let mut g = || (rng.below(2001) as f32 - 1000.0) / 250.0;
        [g(), g()]
    };
    let updates: Vec<Vec<(u32, [f32; 2])>> =
        (0..2).map(|_| picks.iter().map(|&i| (i as u32, grad(&mut rng))).collect()).collect();
    let mut wa = WeightFile::create(&dir.join("a.kw"), patterns as u64, 0).unwrap();
    let mut wb = WeightFile::create(&dir.join("b.kw"), patterns as u64, 0).unwrap();
    let (mut ta, mut tb) = (KpptTables::zeros(), KpptTables::zeros());
    let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
    for (u, g) in updates.iter().enumerate() {
        let mut qa = Quantized { kppt: &mut ta, patterns: None };
        let na = adagrad::apply(&cfg, u as u64, wa.records_mut(), g, Some(&mut qa));
        let mut qb = Quantized { kppt: &mut tb, patterns: None };
        let rb = wb.records_mut();
        let nb = pool.install(|| adagrad::apply_parallel(&cfg, u as u64, rb, g, Some(&mut qb)));
        assert_eq!(na, nb);
        assert!(na > 20_000);
    }
    let bits = |w: &WeightFile| -> Vec<u32> {
        picks.iter().flat_map(|&i| w.records()[i].map(f32::to_bits)).collect::<Vec<_>>()
    };
    assert_eq!(bits(&wa), bits(&wb));
    assert_ne!(wa.records()[n - 1][0], 0.0);
    assert!(ta.kk.as_slice() == tb.kk.as_slice());
    assert!(ta.kkp.as_slice() == tb.kkp.as_slice());
    assert!(ta.kpp.as_slice() == tb.kpp.as_slice());
    assert!(tb.kpp_invariant_violation().is_none());
    // Without quantized tables too.
    let g = &updates[0];
    let n0 = adagrad::apply(&cfg, 5, wa.records_mut(), g, None);
    let rb = wb.records_mut();
    let n1 = pool.install(|| adagrad::apply_parallel(&cfg, 5, rb, g, None));
    assert_eq!(n0, n1);
    assert_eq!(bits(&wa), bits(&wb));
}

/// `train_kpp = false` trains KK and KKP only: after an update every KPP weight the batch's
/// gradient touched is still zero (with its accumulator), and the KK/KKP ones moved.
#[test]
fn train_kpp_false_leaves_kpp_weights_untouched() {
    use engine_core::learn::gradient;
    use engine_core::learn::weights::{KPP_BASE, PATTERN_BASE};
    let tmp = tmp_dir("no_kpp");
    let dir = tmp.path();
    let (train, val) = data(dir);
    let cfg = LearnConfig { train_kpp: false, ..config(dir, &train, &val) };
    let mut t = Trainer::new(cfg.clone()).unwrap();
    let (recs, _) = engine_core::teacher::ShardReader::read_all(&train).unwrap();
    let batch = &recs[..100];
    let g = {
        let ev = t.evaluator().clone();
        gradient::batch_gradient(&ev, batch, &cfg.learn.loss, false)
    };
    t.train_batch(batch);
    let r = t.weights().records();
    let (mut kpp, mut other) = (0, 0);
    for &(i, gi) in &g.entries {
        let i = i as usize;
        if gi == [0.0; 2] {
            continue;
        }
        if (KPP_BASE..PATTERN_BASE).contains(&i) {
            assert_eq!(r[i], [0.0; 4], "KPP feature {i} changed");
            kpp += 1;
        } else {
            assert_ne!(r[i], [0.0; 4], "feature {i} did not change");
            other += 1;
        }
    }
    assert!(kpp > 1000 && other > 100, "{kpp} KPP, {other} KK/KKP gradients");
}

/// The shipped single-process configs parse (every key known) and hold what they document.
#[test]
fn shipped_learn_configs_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
    for name in ["learn-demo.toml", "learn-full.toml"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let c = LearnConfig::from_toml(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(c.train_kpp && !c.deterministic, "{name}");
        // Every key is written out (documented) in the file.
        for key in ["batch_size", "eta", "eta_turn", "lambda", "eval_limit", "shuffle_buffer", "train_kpp"] {
            assert!(text.lines().any(|l| l.starts_with(&format!("{key} ="))), "{name}: {key}");
        }
    }
}

/// A small deterministic bagging config over `train`, writing to `out`.
fn bagging_config(
    train: &std::path::Path,
    out: std::path::PathBuf,
    seed: u64,
    bagging: engine_core::learn::config::BaggingConfig,
) -> LearnConfig {
    let mut cfg = LearnConfig {
        shards: vec![train.to_string_lossy().into_owned()],
        out_dir: out,
        batch_size: 64,
        shuffle_buffer: 128,
        eval_every: 0,
        checkpoint_every: 0,
        deterministic: true,
        threads: 1,
        seed,
        bagging,
        ..LearnConfig::default()
    };
    cfg.learn.check_disk_space = false;
    cfg
}

/// Bagging: a common phase, then one phase per player from the common weights; each phase
/// learns exactly the records' draw counts (Poisson, fixed per record), the players end
/// different from each other and from the common weights, and running the config again
/// after the run, or with a phase's `done` mark lost, changes nothing.
#[test]
fn bagging_runs_a_common_phase_then_one_per_player() {
    use engine_core::learn::bag_sample::draw_count;
    use engine_core::learn::bagging;
    use engine_core::learn::config::{BagPhase, BaggingConfig};
    let tmp = tmp_dir("bagging");
    let dir = tmp.path();
    let train = dir.join("train.shard");
    let recs = game_records(12, 50, 5);
    write_shard(&train, &recs);
    let mut cfg = bagging_config(
        &train,
        dir.join("bag"),
        9,
        BaggingConfig { players: 3, draws: 1.6, common: 1.0, ..BaggingConfig::default() },
    );
    cfg.learn.loss.eval_limit = 32_000;
    let (dirs, _) = bagging::run(&cfg, &mut |_, _| {}).unwrap();
    let names: Vec<String> =
        dirs.iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["common", "player-01", "player-02", "player-03"]);

    let records = to_records(&recs);
    let weights = |name: &str| std::fs::read(dir.join("bag").join(name).join("weights.kw")).unwrap();
    let mut seen = Vec::new();
    for (phase, name) in
        [(BagPhase::Common, "common"), (BagPhase::Player(1), "player-01"), (BagPhase::Player(2), "player-02")]
    {
        let drawn: u64 = records.iter().map(|r| draw_count(&cfg.bagging, cfg.seed, phase, r) as u64).sum();
        let w = engine_core::learn::WeightFile::open(&dir.join("bag").join(name).join("weights.kw"), true)
            .unwrap();
        // Every draw is a training example (no record is skipped at this eval limit); a
        // player's counter restarts from the common weights.
        assert_eq!(w.header.examples, drawn, "{name}");
        seen.push(drawn);
    }
    let n = records.len() as f64;
    assert!((seen[0] as f64 - n).abs() < 0.2 * n, "common draws {} of {n} records at rate 1.0", seen[0]);
    assert!(seen[1] > 0 && (seen[1] as f64) < 0.4 * n, "a player's draws {} at rate 0.2", seen[1]);
    let (common, p1, p2, p3) =
        (weights("common"), weights("player-01"), weights("player-02"), weights("player-03"));
    assert_ne!(p1, common);
    assert_ne!(p1, p2);
    assert_ne!(p2, p3);

    // Again: every phase is done, nothing changes.
    bagging::run(&cfg, &mut |_, _| panic!("a finished phase trained again")).unwrap();
    // A lost `done` mark: the phase resumes from its last checkpoint and ends the same.
    std::fs::remove_file(dir.join("bag/player-02/done")).unwrap();
    bagging::run(&cfg, &mut |_, _| {}).unwrap();
    assert_eq!(weights("player-02"), p2);
}

/// MNCL: with λ > 0, player 2 learns its own sample while pushed away from player 1, so it
/// ends farther from player 1 (over the weights it touched) than plain bagging's player 2;
/// player 1 has no earlier player and ends identical.
#[test]
fn mncl_pushes_a_later_player_away_from_the_earlier_ones() {
    use engine_core::learn::WeightFile;
    use engine_core::learn::bagging;
    use engine_core::learn::config::BaggingConfig;
    let tmp = tmp_dir("mncl");
    let dir = tmp.path();
    let train = dir.join("train.shard");
    write_shard(&train, &game_records(12, 50, 6));
    let run = |name: &str, ncl_lambda: f64| {
        let cfg = bagging_config(
            &train,
            dir.join(name),
            4,
            BaggingConfig { players: 2, draws: 2.0, common: 0.5, ncl_lambda, ..BaggingConfig::default() },
        );
        bagging::run(&cfg, &mut |_, _| {}).unwrap();
        let open = |p: &str| WeightFile::open(&dir.join(name).join(p).join("weights.kw"), false).unwrap();
        (open("player-01"), open("player-02"))
    };
    let (plain1, plain2) = run("plain", 0.0);
    let (ncl1, ncl2) = run("ncl", 0.05);
    assert_eq!(plain1.records(), ncl1.records(), "player 1 has no earlier player to differ from");
    let distance = |a: &WeightFile, b: &WeightFile| -> f64 {
        a.records()
            .iter()
            .zip(b.records())
            .map(|(x, y)| ((x[0] - y[0]) as f64).powi(2) + ((x[1] - y[1]) as f64).powi(2))
            .sum()
    };
    let (d_plain, d_ncl) = (distance(&plain1, &plain2), distance(&ncl1, &ncl2));
    assert!(d_plain > 0.0);
    assert!(d_ncl > d_plain, "MNCL distance {d_ncl} <= plain {d_plain}");
}

#[test]
fn a_run_that_cannot_start_leaves_no_weight_file() {
    let tmp = tmp_dir("nostart");
    let dir = tmp.path();
    let (train, val) = data(dir);
    let mut cfg = config(dir, &train, &val);
    cfg.shards = vec![dir.join("missing-*.shard").to_string_lossy().into_owned()];
    let err = Trainer::new(cfg.clone()).err().expect("a pattern matching no file is refused");
    assert!(err.contains("missing-*.shard"), "{err}");
    assert!(!cfg.out_dir.join("weights.kw").exists(), "a refused run left its weight file");
    // The corrected config then starts a fresh run instead of asking for --resume.
    cfg.shards = vec![train.to_string_lossy().into_owned()];
    Trainer::new(cfg).expect("the corrected run starts");
}
